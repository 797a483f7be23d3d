"""HF ``config.json`` <-> :class:`ModelConfig` for GPT-2, LLaMA, Qwen2, GPT-NeoX and Gemma 3.

Five HF architectures map onto the one decoder of this project:

  ============  =================  ========================================================
  model_type    architecture       what it is here
  ============  =================  ========================================================
  gpt2          GPT2LMHeadModel    LayerNorm, learned positions, biases everywhere, GELU
                                   (tanh approximation, ``gelu_new``), tied head by default
  llama         LlamaForCausalLM   RMSNorm, RoPE, SwiGLU, no biases, GQA (n_kv_heads)
  qwen2         Qwen2ForCausalLM   LLaMA with biases on Q, K, V only
  gpt_neox      GPTNeoXForCausalL  LayerNorm, RoPE, biases everywhere, GELU: the paper's
                M                  "GPT-2 with RoPE" (``gpt2-rope-*`` presets), provided
                                   ``use_parallel_residual`` is false and RoPE is full-width
  gemma3_text   Gemma3ForCausalLM  Gemma 3's text decoder: QK-norm, sandwich norms, (1 + w)
                                   gains, embeddings times sqrt(d), GeGLU, sliding-window
                                   layers (``layer_types``: every k-th global) with their own
                                   RoPE base, ``query_pre_attn_scalar``
  ============  =================  ========================================================

Everything a config says that changes the forward pass is either mapped or refused with a
:class:`UserError` naming the field: sliding windows, RoPE scaling, partial rotary, MoE,
quantised weights, cross-attention, GPT-2's attention-scale variants, LLaMA biases on only
some linears, activations the decoder does not have. Fields that only matter for training
(dropouts) or generation (token ids, caches) are ignored.

Imported configs have ``shared_embedding=False``: a checkpoint's embeddings are its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError

ARCHITECTURES = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM",
                 "qwen2": "Qwen2ForCausalLM", "gpt_neox": "GPTNeoXForCausalLM",
                 "gemma3_text": "Gemma3ForCausalLM"}
# Gemma's fixed choices that its configs (and GGUF metadata) may leave out: transformers'
# Gemma3TextConfig defaults, which llama.cpp's gemma3 graph hard-codes too.
GEMMA3_LOCAL_THETA, GEMMA3_PATTERN = 10_000.0, 6

# HF activation names (transformers' ACT2FN) -> ours. gelu_new and gelu_pytorch_tanh are the
# same tanh approximation (one in Python, one in torch); "gelu" is the exact erf form.
_ACT_FROM_HF = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu",
                "relu": "relu", "silu": "silu", "swish": "silu", "tanh": "tanh"}
_ACT_TO_HF = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu", "silu": "silu",
              "tanh": "tanh"}
_MOE_FIELDS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size",
               "num_experts_per_tok")


def read_hf_config(src: str | os.PathLike | dict) -> dict:
    """The ``config.json`` dict of a model folder, of a path to the file itself, or ``src`` if
    it already is a dict."""
    if isinstance(src, dict):
        return src
    path = Path(src)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise UserError(f"{path}: no such file; an HF model folder needs a config.json "
                        f"(as written by save_pretrained)")
    try:
        d = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(d, dict):
        raise UserError(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


def _refuse(field: str, value: Any, why: str) -> UserError:
    return UserError(f"config.json: {field}={value!r} is not supported: {why}")


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


def _activation(d: dict, field: str, default: str) -> str:
    act = d.get(field, default)
    if act not in _ACT_FROM_HF:
        raise _refuse(field, act, f"supported activations: {sorted(_ACT_FROM_HF)}")
    return _ACT_FROM_HF[act]


def _rope_theta(d: dict, theta_keys=("rope_theta",), rotary_keys=("partial_rotary_factor",),
                rotary_default: float = 1.0) -> float:
    """RoPE base of a config, old (``rope_theta`` + ``rope_scaling``; GPT-NeoX's
    ``rotary_emb_base``/``rotary_pct``) or new (``rope_parameters``) style. Refuses every scaled
    variant (linear, dynamic, yarn, llama3, ...), which change the angles at every length, and
    partial rotation (GPT-NeoX rotates 1/4 of each head unless told otherwise)."""
    rope = d.get("rope_parameters") or d.get("rope_scaling") or {}
    if not isinstance(rope, dict):
        raise _refuse("rope_parameters", rope, "expected a JSON object")
    if rope and all(isinstance(v, dict) for v in rope.values()):
        raise _refuse("rope_parameters", rope, "RoPE that differs between layer types")
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind != "default":
        raise _refuse("rope_type", kind, "only unscaled RoPE (rope_type 'default') is "
                      "implemented; scaled variants change the rotation angles")
    rotary = rope.get("partial_rotary_factor")
    rotary = next((d[k] for k in rotary_keys if d.get(k) is not None), rotary_default) \
        if rotary is None else rotary
    if rotary != 1:
        raise _refuse("partial_rotary_factor", rotary, "RoPE rotates every dimension here (1.0)")
    theta = rope.get("rope_theta")
    theta = next((d[k] for k in theta_keys if d.get(k) is not None), 10000.0) \
        if theta is None else theta
    return float(theta)


def _check_common(d: dict, model_type: str) -> None:
    if d.get("quantization_config"):
        q = d["quantization_config"]
        method = q.get("quant_method", "?") if isinstance(q, dict) else q
        raise _refuse("quantization_config", method,
                      "quantised weights; use an unquantised float16/bfloat16/float32 checkpoint")
    for f in _MOE_FIELDS:
        if d.get(f):
            raise _refuse(f, d[f], "mixture-of-experts models are not implemented")
    archs = d.get("architectures") or [ARCHITECTURES[model_type]]
    if list(archs) != [ARCHITECTURES[model_type]]:
        raise _refuse("architectures", archs, f"a {model_type} checkpoint must be "
                      f"[{ARCHITECTURES[model_type]!r}] (a causal LM with its head)")


def _gpt2(d: dict) -> dict:
    for f, ok in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                  ("add_cross_attention", False)):
        if d.get(f, ok) != ok:
            raise _refuse(f, d[f], f"only {f}={ok} (plain GPT-2 attention) is implemented")
    d_model = d.get("n_embd", 768)
    # reorder_and_upcast_attn only changes where float32 upcasts happen (a numerical
    # detail of half precision), not the function: accepted.
    return dict(
        vocab_size=d.get("vocab_size", 50257), d_model=d_model, n_layers=d.get("n_layer", 12),
        n_heads=d.get("n_head", 12), d_ff=d.get("n_inner") or 4 * d_model,
        max_seq_len=d.get("n_positions", 1024),
        activation=_activation(d, "activation_function", "gelu_new"), gated_mlp=False,
        norm="layernorm", norm_eps=float(d.get("layer_norm_epsilon", 1e-5)), position="learned",
        linear_bias=True, qkv_bias=False, tie_embeddings=bool(d.get("tie_word_embeddings", True)),
        init_std=float(d.get("initializer_range", 0.02)), scale_residual_init=True)


def _gpt_neox(d: dict) -> dict:
    if d.get("use_parallel_residual", True):
        raise _refuse("use_parallel_residual", d.get("use_parallel_residual", True),
                      "attention and MLP side by side (Pythia) is not implemented; blocks here "
                      "are sequential (use_parallel_residual=false)")
    if not d.get("attention_bias", True):
        raise _refuse("attention_bias", False, "GPT-NeoX's MLP and LayerNorms always have "
                      "biases; only attention_bias=true matches a model with biases everywhere")
    return dict(
        vocab_size=d.get("vocab_size", 50432), d_model=d.get("hidden_size", 6144),
        n_layers=d.get("num_hidden_layers", 44), n_heads=d.get("num_attention_heads", 64),
        d_ff=d.get("intermediate_size", 24576), max_seq_len=d.get("max_position_embeddings", 2048),
        activation=_activation(d, "hidden_act", "gelu"), gated_mlp=False, norm="layernorm",
        norm_eps=float(d.get("layer_norm_eps", 1e-5)), position="rope",
        rope_theta=_rope_theta(d, ("rotary_emb_base", "rope_theta"),
                               ("rotary_pct", "partial_rotary_factor"), 0.25),
        linear_bias=True, qkv_bias=False, tie_embeddings=bool(d.get("tie_word_embeddings", False)),
        init_std=float(d.get("initializer_range", 0.02)), scale_residual_init=True)


def _llama(d: dict, model_type: str) -> dict:
    if model_type == "qwen2":
        if d.get("use_sliding_window"):
            raise _refuse("use_sliding_window", True, "sliding-window attention is not "
                          "implemented; every layer attends to the whole prefix")
        qkv_bias, linear_bias = True, False
    else:
        attn_b, mlp_b = bool(d.get("attention_bias", False)), bool(d.get("mlp_bias", False))
        if attn_b != mlp_b:
            raise _refuse("attention_bias/mlp_bias", (attn_b, mlp_b), "biases on the "
                          "attention linears but not the MLP (or the reverse) have no "
                          "counterpart; both false (LLaMA) or both true are supported")
        qkv_bias, linear_bias = False, attn_b
    layer_types = d.get("layer_types") or []
    if any(t != "full_attention" for t in layer_types):
        raise _refuse("layer_types", sorted(set(layer_types)), "only 'full_attention' layers")
    if d.get("sliding_window") and model_type != "qwen2":
        raise _refuse("sliding_window", d["sliding_window"], "sliding-window attention")
    n_heads = d.get("num_attention_heads", 32)
    d_model = d.get("hidden_size", 4096)
    return dict(
        vocab_size=d.get("vocab_size", 32000), d_model=d_model,
        n_layers=d.get("num_hidden_layers", 32), n_heads=n_heads,
        n_kv_heads=d.get("num_key_value_heads") or n_heads,
        head_dim=d.get("head_dim"), d_ff=d.get("intermediate_size", 11008),
        max_seq_len=d.get("max_position_embeddings", 2048),
        activation=_activation(d, "hidden_act", "silu"), gated_mlp=True, norm="rmsnorm",
        norm_eps=float(d.get("rms_norm_eps", 1e-6)), position="rope", rope_theta=_rope_theta(d),
        linear_bias=linear_bias, qkv_bias=qkv_bias,
        tie_embeddings=bool(d.get("tie_word_embeddings", False)),
        init_std=float(d.get("initializer_range", 0.02)), scale_residual_init=False)


def _gemma3(d: dict) -> dict:
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


def config_from_hf(hf_config: str | os.PathLike | dict, *, name: str | None = None,
                   source: str | os.PathLike | None = None) -> ModelConfig:
    """The :class:`ModelConfig` of an HF ``config.json`` (a dict, the file, or its folder).

    Raises ``UserError`` for unknown ``model_type``/``architectures`` and for any field whose
    value would change the forward pass in a way this decoder does not implement; the message
    names the file (``source``, or the path given) when there is one.
    """
    d = read_hf_config(hf_config)
    if source is None and not isinstance(hf_config, dict):
        path = Path(hf_config)
        source = path / "config.json" if path.is_dir() else path
    try:
        return _config(d, name)
    except UserError as e:
        if source is None:
            raise
        text = str(e)
        raise UserError(f"{source}: {text.removeprefix('config.json: ')}") from None


def _config(d: dict, name: str | None) -> ModelConfig:
    model_type = d.get("model_type")
    if model_type == "gemma3":
        raise UserError("config.json: model_type='gemma3' (Gemma3ForConditionalGeneration, "
                        "text and vision) is not supported; only the text decoder, model_type "
                        "'gemma3_text' (Gemma3ForCausalLM, as Gemma 3 270M and 1B are saved)")
    if model_type not in ARCHITECTURES:
        raise UserError(f"config.json: model_type={model_type!r} is not supported; supported: "
                        + ", ".join(f"{t} ({a})" for t, a in ARCHITECTURES.items()))
    _check_common(d, model_type)
    try:
        fields = (_gpt2(d) if model_type == "gpt2" else _gpt_neox(d) if model_type == "gpt_neox"
                  else _gemma3(d) if model_type == "gemma3_text" else _llama(d, model_type))
        return ModelConfig(name=name or f"hf-{model_type}", shared_embedding=False, **fields)
    except UserError:
        raise
    except (TypeError, ValueError, ZeroDivisionError) as e:
        raise UserError(f"config.json describes no valid model: {e}") from None


def hf_architecture(cfg: ModelConfig) -> str:
    """The HF ``model_type`` that computes exactly what ``cfg`` computes, or a ``UserError``."""
    why = []
    if cfg.block != "attn_mlp" or cfg.attention != "softmax" or not cfg.residual:
        why.append("HF decoders have softmax attention and MLP in every residual block")
    if cfg.attn_output_transform != "none":
        why.append(f"attn_output_transform={cfg.attn_output_transform!r} has no HF counterpart")
    if cfg.attn_output_gate:
        why.append("the attention output gate (attn_output_gate) has no HF counterpart")
    if cfg.activation not in _ACT_TO_HF:
        why.append(f"activation {cfg.activation!r} has no HF name")
    kind = None
    gemma = {f: getattr(cfg, f) for f in ("qk_norm", "post_norms", "norm_unit_offset",
                                          "embed_scale")}
    if any(gemma.values()) or cfg.sliding_window is not None \
            or cfg.query_pre_attn_scalar is not None:
        if not all(gemma.values()):
            why.append(f"{gemma} is part of Gemma 3's architecture; Gemma3ForCausalLM has all "
                       f"four and no other HF architecture has any")
        if (cfg.position, cfg.norm, cfg.gated_mlp, cfg.linear_bias, cfg.qkv_bias) != (
                "rope", "rmsnorm", True, False, False):
            why.append("Gemma 3 has RoPE, RMSNorm, a gated MLP and no biases")
        kind = "gemma3_text"
    elif (cfg.position, cfg.norm, cfg.gated_mlp) == ("learned", "layernorm", False):
        if not cfg.linear_bias:
            why.append("GPT-2 has biases on every linear (linear_bias=True)")
        if cfg.n_groups != 1 or cfg.resolved_head_dim * cfg.n_heads != cfg.d_model:
            why.append("GPT-2 has n_kv_heads = n_heads and head_dim = d_model / n_heads")
        kind = "gpt2"
    elif (cfg.position, cfg.norm, cfg.gated_mlp) == ("rope", "rmsnorm", True):
        kind = "qwen2" if cfg.qkv_bias and not cfg.linear_bias else "llama"
    elif (cfg.position, cfg.norm, cfg.gated_mlp) == ("rope", "layernorm", False):
        if not cfg.linear_bias:
            why.append("GPT-NeoX has biases on every linear and LayerNorm (linear_bias=True)")
        if cfg.n_groups != 1 or cfg.resolved_head_dim * cfg.n_heads != cfg.d_model:
            why.append("GPT-NeoX has n_kv_heads = n_heads and head_dim = d_model / n_heads")
        kind = "gpt_neox"
    else:
        why.append(f"position={cfg.position!r}, norm={cfg.norm!r}, gated_mlp={cfg.gated_mlp} "
                   f"matches none of GPT-2 (learned, layernorm, False), GPT-NeoX (rope, "
                   f"layernorm, False), LLaMA/Qwen2 (rope, rmsnorm, True)")
    if why:
        raise UserError(f"model {cfg.name!r} cannot be exported to an HF architecture: "
                        + "; ".join(why))
    return kind


def config_to_hf(cfg: ModelConfig, dtype_name: str = "float32") -> dict:
    """The HF ``config.json`` dict of ``cfg`` (see :func:`hf_architecture`); ``dtype_name`` is
    the weights' dtype as torch names it."""
    kind = hf_architecture(cfg)
    head = {"architectures": [ARCHITECTURES[kind]], "model_type": kind,
            "vocab_size": cfg.vocab_size, "tie_word_embeddings": cfg.tie_embeddings,
            "initializer_range": cfg.init_std, "torch_dtype": dtype_name, "dtype": dtype_name,
            # Token ids are not part of ModelConfig: null rather than HF's per-class defaults
            # (GPT-2's 50256 lies outside most vocabularies trained here).
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    if kind == "gpt2":
        return {**head, "n_embd": cfg.d_model, "n_layer": cfg.n_layers, "n_head": cfg.n_heads,
                "n_inner": cfg.d_ff, "n_positions": cfg.max_seq_len,
                "activation_function": _ACT_TO_HF[cfg.activation],
                "layer_norm_epsilon": cfg.norm_eps, "scale_attn_weights": True,
                "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
    rope = {"rope_type": "default", "rope_theta": cfg.rope_theta}
    if kind == "gpt_neox":  # old and new spellings, as below; full-width rotation
        return {**head, "hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layers,
                "num_attention_heads": cfg.n_heads, "intermediate_size": cfg.d_ff,
                "max_position_embeddings": cfg.max_seq_len,
                "hidden_act": _ACT_TO_HF[cfg.activation], "layer_norm_eps": cfg.norm_eps,
                "use_parallel_residual": False, "attention_bias": True,
                "rotary_pct": 1.0, "rotary_emb_base": cfg.rope_theta,
                "rope_parameters": {**rope, "partial_rotary_factor": 1.0},
                "attention_dropout": 0.0, "hidden_dropout": 0.0}
    if kind == "gemma3_text":
        return {**head, **_gemma3_to_hf(cfg)}
    body = {"hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layers,
            "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.resolved_n_kv_heads,
            "head_dim": cfg.resolved_head_dim, "intermediate_size": cfg.d_ff,
            "max_position_embeddings": cfg.max_seq_len, "hidden_act": _ACT_TO_HF[cfg.activation],
            "rms_norm_eps": cfg.norm_eps, "attention_dropout": 0.0,
            # Both spellings: transformers < 5 reads rope_theta, >= 5 rope_parameters.
            "rope_theta": cfg.rope_theta,
            "rope_parameters": rope}
    if kind == "llama":
        body.update(attention_bias=cfg.linear_bias, mlp_bias=cfg.linear_bias)
    else:
        body.update(use_sliding_window=False)
    return {**head, **body}


def _gemma3_to_hf(cfg: ModelConfig) -> dict:
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
