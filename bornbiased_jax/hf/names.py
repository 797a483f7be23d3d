"""Tensor names: which HF tensor holds which of our parameters, in which layout, for a model of
a given family (its record in :mod:`bornbiased_jax.architectures` lists them; the layouts and
conversions are :mod:`bornbiased_jax.architectures.tensors`).

Shapes: V vocab, d d_model, H heads, Hkv kv heads, K head_dim, F d_ff, Tmax max positions.
"""

from __future__ import annotations

import re

from bornbiased_jax.architectures.tensors import TensorSpec, to_hf, to_ours  # noqa: F401
from bornbiased_jax.config import ModelConfig

LM_HEAD = "lm_head.weight"
# Non-parameter buffers that older checkpoints contain: GPT-2's causal mask, LLaMA's RoPE
# frequencies. They are recomputed, never read.
_BUFFERS = re.compile(r"(^|\.)(h\.\d+\.attn\.(masked_)?bias|layers\.\d+\.attention\.(masked_)?bias"
                      r"|layers\.\d+\.(self_attn|attention)\.rotary_emb\.inv_freq)$")


def is_buffer(hf_name: str) -> bool:
    return bool(_BUFFERS.search(hf_name))


def tensor_specs(cfg: ModelConfig, family: str) -> list[TensorSpec]:
    """Every tensor of a checkpoint of ``cfg`` in ``family``'s format (a registered family's
    name), in checkpoint order; ``lm_head.weight`` (V, d) only when the head is untied."""
    from bornbiased_jax import architectures

    specs = architectures.get(family).tensor_specs(cfg)
    if not cfg.tie_embeddings:
        specs.append(TensorSpec(LM_HEAD, (cfg.vocab_size, cfg.d_model), ("lm_head/kernel",),
                                "transpose"))
    return specs
