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

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf.config_rules import (_ACT_FROM_HF, _ACT_TO_HF,  # noqa: F401
                                            GEMMA3_LOCAL_THETA, GEMMA3_PATTERN, _activation,
                                            _refuse, _rope_theta)
from bornbiased_jax.hf.gemma3 import gemma3_fields, gemma3_to_hf

ARCHITECTURES = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM",
                 "qwen2": "Qwen2ForCausalLM", "gpt_neox": "GPTNeoXForCausalLM",
                 "gemma3_text": "Gemma3ForCausalLM"}
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
                  else gemma3_fields(d) if model_type == "gemma3_text"
                  else _llama(d, model_type))
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
        return {**head, **gemma3_to_hf(cfg)}
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
