"""The small rules every HF config mapping shares (:mod:`.configs`, :mod:`.gemma3`): how a
refused field is worded, the activations by HF name, the RoPE base of a config (refusing scaled
or partial RoPE), and Gemma 3's fixed choices."""

from __future__ import annotations

from typing import Any

from bornbiased_jax.errors import UserError

# Gemma's fixed choices that its configs (and GGUF metadata) may leave out: transformers'
# Gemma3TextConfig defaults, which llama.cpp's gemma3 graph hard-codes too.
GEMMA3_LOCAL_THETA, GEMMA3_PATTERN = 10_000.0, 6

# HF activation names (transformers' ACT2FN) -> ours. gelu_new and gelu_pytorch_tanh are the
# same tanh approximation (one in Python, one in torch); "gelu" is the exact erf form.
_ACT_FROM_HF = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu",
                "relu": "relu", "silu": "silu", "swish": "silu", "tanh": "tanh"}
_ACT_TO_HF = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu", "silu": "silu",
              "tanh": "tanh"}

def _refuse(field: str, value: Any, why: str) -> UserError:
    return UserError(f"config.json: {field}={value!r} is not supported: {why}")


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
