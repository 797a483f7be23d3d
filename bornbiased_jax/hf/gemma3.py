"""Gemma 3's text decoder (``model_type`` gemma3_text, Gemma3ForCausalLM) <-> :class:`ModelConfig`:
the part of :mod:`.configs` that only Gemma needs. Its config names the layer types (every k-th
layer global, the others sliding), the RoPE base of each type, ``query_pre_attn_scalar`` and the
soft-capping it must not have; transformers' ``Gemma3TextConfig`` defaults fill what a config
leaves out, as llama.cpp's gemma3 graph hard-codes them for GGUF files.
"""

from __future__ import annotations

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.hf.config_rules import (_ACT_TO_HF, GEMMA3_LOCAL_THETA, GEMMA3_PATTERN,
                                            _activation, _refuse, _rope_theta)


def layer_pattern(layer_types: list, what: str = "layer_types") -> int | None:
    """k such that ``layer_types`` is k - 1 'sliding_attention' layers then one
    'full_attention', repeated (the last group may be cut short): Gemma 3's k = 6; None when
    every layer is 'full_attention'. A UserError naming ``what`` for any other pattern."""
    types = list(layer_types)
    bad = sorted(set(types) - {"sliding_attention", "full_attention"})
    if bad:
        raise _refuse(what, bad, "layer types other than 'sliding_attention' and "
                      "'full_attention' are not implemented")
    if all(t == "full_attention" for t in types):
        return None
    k = types.index("full_attention") + 1 if "full_attention" in types else len(types) + 1
    want = ["sliding_attention" if (i + 1) % k else "full_attention" for i in range(len(types))]
    if k < 2 or types != want:
        raise _refuse(what, types, "only the pattern of every k-th layer global and the others "
                      "sliding (Gemma 3: k = 6) is implemented")
    return k


def gemma3_fields(d: dict) -> dict:
    """Gemma 3's text decoder (transformers' ``Gemma3TextConfig``; its defaults for the fields
    a config leaves out)."""
    for f in ("final_logit_softcapping", "attn_logit_softcapping"):
        if d.get(f) is not None:
            raise _refuse(f, d[f], "logit soft-capping (Gemma 2's) is not implemented; Gemma 3 "
                          "has none (null)")
    if d.get("use_bidirectional_attention"):
        raise _refuse("use_bidirectional_attention", True, "the decoder here is causal")
    if d.get("attention_bias"):
        raise _refuse("attention_bias", True, "biases on the attention projections but not the "
                      "MLP have no counterpart here; Gemma 3 has none")
    n_layers = d.get("num_hidden_layers", 26)
    types = d.get("layer_types")
    if types is None:
        pattern = d.get("sliding_window_pattern", d.get("_sliding_window_pattern",
                                                        GEMMA3_PATTERN))
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention"
                 for i in range(n_layers)]
    if len(types) != n_layers:
        raise _refuse("layer_types", f"{len(types)} entries", f"one per layer "
                      f"(num_hidden_layers={n_layers})")
    pattern = layer_pattern(types)
    rope = d.get("rope_parameters") or {}
    if not isinstance(rope, dict):
        raise _refuse("rope_parameters", rope, "expected a JSON object")
    if rope and all(isinstance(v, dict) for v in rope.values()):  # transformers 5: per type
        full = _rope_theta({"rope_parameters": rope.get("full_attention") or {},
                            "rope_theta": 1_000_000.0})
        local = _rope_theta({"rope_parameters": rope.get("sliding_attention") or {},
                             "rope_theta": GEMMA3_LOCAL_THETA})
    else:  # older: rope_theta and rope_scaling for global layers, rope_local_base_freq
        full = _rope_theta({**d, "rope_theta": d.get("rope_theta", 1_000_000.0)})
        local = float(d.get("rope_local_base_freq", GEMMA3_LOCAL_THETA))
    head_dim = d.get("head_dim", 256)
    return dict(
        vocab_size=d.get("vocab_size", 262_208), d_model=d.get("hidden_size", 2304),
        n_layers=n_layers, n_heads=d.get("num_attention_heads", 8),
        n_kv_heads=d.get("num_key_value_heads", 4), head_dim=head_dim,
        d_ff=d.get("intermediate_size", 9216),
        max_seq_len=d.get("max_position_embeddings", 131_072),
        activation=_activation(d, "hidden_activation" if "hidden_activation" in d
                               else "hidden_act", "gelu_pytorch_tanh"),
        gated_mlp=True, norm="rmsnorm", norm_eps=float(d.get("rms_norm_eps", 1e-6)),
        position="rope", rope_theta=full, linear_bias=False, qkv_bias=False,
        tie_embeddings=bool(d.get("tie_word_embeddings", True)),
        init_std=float(d.get("initializer_range", 0.02)), scale_residual_init=False,
        qk_norm=True, post_norms=True, norm_unit_offset=True, embed_scale=True,
        query_pre_attn_scalar=float(d.get("query_pre_attn_scalar", 256)),
        sliding_window=None if pattern is None else int(d.get("sliding_window") or 4096),
        sliding_window_pattern=pattern or 1,
        rope_local_theta=None if pattern is None else local)


def gemma3_to_hf(cfg: ModelConfig) -> dict:
    """Gemma3TextConfig's fields for ``cfg``, in both the spellings of transformers 5
    (``rope_parameters`` per layer type) and earlier (``rope_theta``, ``rope_local_base_freq``)."""
    types = ["sliding_attention" if cfg.is_sliding(i) else "full_attention"
             for i in range(cfg.n_layers)]
    local = cfg.layer_rope_theta(0) if cfg.sliding_window is not None else GEMMA3_LOCAL_THETA
    return {"hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layers,
            "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.resolved_n_kv_heads,
            "head_dim": cfg.resolved_head_dim, "intermediate_size": cfg.d_ff,
            "max_position_embeddings": cfg.max_seq_len,
            "hidden_activation": _ACT_TO_HF[cfg.activation].replace("gelu_new",
                                                                     "gelu_pytorch_tanh"),
            "rms_norm_eps": cfg.norm_eps, "query_pre_attn_scalar": _int_if_whole(cfg.attn_scalar),
            "sliding_window": cfg.sliding_window, "layer_types": types,
            "rope_parameters": {
                "full_attention": {"rope_type": "default", "rope_theta": cfg.rope_theta},
                "sliding_attention": {"rope_type": "default", "rope_theta": local}},
            "rope_theta": cfg.rope_theta, "rope_local_base_freq": local,
            "attention_bias": False, "attention_dropout": 0.0,
            "final_logit_softcapping": None, "attn_logit_softcapping": None,
            "use_bidirectional_attention": False}


def _int_if_whole(x: float) -> int | float:
    """transformers' Gemma3TextConfig types query_pre_attn_scalar as an int (and refuses a
    float); a whole number is written as one."""
    return int(x) if float(x).is_integer() else x
