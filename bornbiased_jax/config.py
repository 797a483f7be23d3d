"""Model configuration: one frozen dataclass for every decoder in the zoo, and named presets.

A preset is a family (``gpt2-rope``, ``llama2``, ``qwen2``) crossed with a size (``tiny`` for
tests, ``cpu`` for first runs on a laptop, ``nano`` for the paper's 12L/12H/768d models and
``1.2b`` for the paper's large GPT-2). Ablations are the same config with flags changed via
``dataclasses.replace`` (see :func:`ablate`), so a variant is always a small, named delta.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

Activation = Literal["relu", "gelu", "gelu_tanh", "tanh", "silu"]
Norm = Literal["layernorm", "rmsnorm", "none"]
Block = Literal["attn_mlp", "attn_only", "mlp_only"]
# "softmax" is standard causal self-attention. "attn0_causal" / "attn0_full" are the paper's
# Attn0 (Definition 3): uniform weights and identity W_V, W_O, i.e. the causal running average
# o_i = (1/i) sum_{j<=i} x_j, or the full average over the sequence at every position.
Attention = Literal["softmax", "attn0_causal", "attn0_full"]
Position = Literal["rope", "learned", "none"]
# Per-head transform of the aggregated attention output o_i (before W_O), paper Sec. 6.2.1:
# "sqrt_i" multiplies o_i by sqrt(i) (positional amplification), "sqrt_i_over_T" by sqrt(i/T)
# with T = max_seq_len (positional attenuation), "headwise_rmsnorm" RMS-normalises each head's
# o_i (the companion paper's head-wise RMSNorm, no learned scale).
OutputTransform = Literal["none", "sqrt_i", "sqrt_i_over_T", "headwise_rmsnorm"]


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer, pre-norm, as in paper Sec. 2.1.

    Attributes:
      name: preset name, for reports.
      vocab_size: |V|.
      d_model: hidden size d.
      n_layers: number of blocks L.
      n_heads: attention heads h; must divide d_model.
      d_ff: MLP hidden size d_MLP (for gated MLPs, the width of gate and up projections).
      max_seq_len: largest T accepted by ``forward``; also the T of the sqrt(i/T) transform.
      block: which sublayers a block has (the ablation of Sec. 4.1).
      attention: softmax attention or the paper's Attn0 simplification.
      activation: MLP nonlinearity phi.
      gated_mlp: phi(x W_gate) * (x W_up) then W_down (SwiGLU when activation="silu").
      norm: pre-sublayer and final normalisation; "none" removes all of them.
      residual: whether sublayers add to the residual stream (False gives Y = sublayer(X)).
      position: rotary, learned absolute (GPT-2 import) or none.
      rope_theta: RoPE base.
      linear_bias: biases on every linear layer and LayerNorm shift (GPT-2 style).
      qkv_bias: biases on the Q, K, V projections only (Qwen2 style).
      tie_embeddings: W_U = W_E^T (paper Eq. 1).
      init_std: std of embeddings and linear weights (App. B.1: N(0, 0.02), read as std 0.02).
      scale_residual_init: W_O and W_down get std init_std / sqrt(2L) (App. B.1, GPT-2).
      norm_eps: epsilon of LayerNorm / RMSNorm.
      shared_embedding: embeddings (and LM head, positions) come from a fixed key
        ``embed_seed`` that is the same for every model seed (paper footnote 2, App. B.2);
        False makes every parameter depend on the model seed.
      embed_seed: the seed of the shared embedding key.
      attn_output_transform: per-head transform of the attention output (Sec. 6.2.1).
    """

    name: str
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_seq_len: int
    block: Block = "attn_mlp"
    attention: Attention = "softmax"
    activation: Activation = "gelu"
    gated_mlp: bool = False
    norm: Norm = "layernorm"
    residual: bool = True
    position: Position = "rope"
    rope_theta: float = 10000.0
    linear_bias: bool = True
    qkv_bias: bool = False
    tie_embeddings: bool = True
    init_std: float = 0.02
    scale_residual_init: bool = True
    norm_eps: float = 1e-5
    shared_embedding: bool = True
    embed_seed: int = 0
    attn_output_transform: OutputTransform = "none"

    def __post_init__(self):
        def need(ok: bool, msg: str):
            if not ok:
                raise ValueError(f"invalid ModelConfig {self.name!r}: {msg}")

        for f in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len"):
            need(isinstance(getattr(self, f), int) and getattr(self, f) > 0,
                 f"{f} must be a positive integer, got {getattr(self, f)!r}")
        need(self.d_model % self.n_heads == 0,
             f"n_heads={self.n_heads} does not divide d_model={self.d_model}; "
             f"choose n_heads among the divisors of d_model")
        choices = {
            "block": Block, "attention": Attention, "activation": Activation, "norm": Norm,
            "position": Position, "attn_output_transform": OutputTransform,
        }
        for f, lit in choices.items():
            allowed = lit.__args__
            need(getattr(self, f) in allowed, f"{f}={getattr(self, f)!r}; allowed: {allowed}")
        need(self.position != "rope" or self.head_dim % 2 == 0,
             f"RoPE needs an even head_dim, got {self.head_dim}")
        need(self.init_std > 0, "init_std must be > 0")

    # Derived values -------------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        """d_k = d / h."""
        return self.d_model // self.n_heads

    @property
    def has_attn(self) -> bool:
        return self.block in ("attn_mlp", "attn_only")

    @property
    def has_mlp(self) -> bool:
        return self.block in ("attn_mlp", "mlp_only")

    @property
    def has_attn_params(self) -> bool:
        return self.has_attn and self.attention == "softmax"

    @property
    def residual_std(self) -> float:
        """std of W_O and W_down: 0.02 / sqrt(2L) under GPT-2 scaling (App. B.1)."""
        if self.scale_residual_init:
            return self.init_std / (2 * self.n_layers) ** 0.5
        return self.init_std

    def ablate(self, **changes) -> "ModelConfig":
        """A copy with ``changes`` applied and the name suffixed with them."""
        suffix = ",".join(f"{k}={v}" for k, v in sorted(changes.items()))
        return dataclasses.replace(self, name=f"{self.name}[{suffix}]", **changes)


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------
GPT2_VOCAB = 50_257
LLAMA_VOCAB = 32_000

_SIZES = {
    # size: (d_model, n_layers, n_heads, max_seq_len).
    # The width matters beyond cost: with the fixed N(0, 0.02^2) init, a post-LayerNorm MLP
    # pre-activation has std 0.02 * sqrt(d) (0.55 at d = 768, the sigma of Finding 4.1), so a
    # narrow model sits in GELU's near-linear regime and shows far less preference. "cpu" keeps
    # d = 512 (sigma ~ 0.45) and trades depth for speed.
    "tiny": (64, 2, 4, 128),
    "cpu": (512, 6, 8, 1024),
    "small": (256, 4, 4, 512),  # trains in minutes on a CPU (SeedPrint's power experiment)
    "nano": (768, 12, 12, 2048),
    "1.2b": (2048, 24, 32, 2048),
}


def _gpt2_rope(size: str) -> ModelConfig:
    d, n_layers, n_heads, max_t = _SIZES[size]
    return ModelConfig(
        name=f"gpt2-rope-{size}", vocab_size=512 if size == "tiny" else GPT2_VOCAB,
        d_model=d, n_layers=n_layers, n_heads=n_heads, d_ff=4 * d, max_seq_len=max_t,
        activation="gelu", gated_mlp=False, norm="layernorm", position="rope",
        linear_bias=True, qkv_bias=False, tie_embeddings=True)


def _llama2(size: str) -> ModelConfig:
    d, n_layers, n_heads, max_t = _SIZES[size]
    # Table 13: d_ffn = 2048 at d = 768, i.e. ~ (8/3) d; the same ratio elsewhere.
    d_ff = {"tiny": 176, "cpu": 1376, "small": 688, "nano": 2048, "1.2b": 5504}[size]
    return ModelConfig(
        name=f"llama2-{size}", vocab_size=512 if size == "tiny" else LLAMA_VOCAB,
        d_model=d, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff, max_seq_len=max_t,
        activation="silu", gated_mlp=True, norm="rmsnorm", position="rope",
        linear_bias=False, qkv_bias=False, tie_embeddings=False, norm_eps=1e-6)


def _qwen2(size: str) -> ModelConfig:
    return dataclasses.replace(_llama2(size), name=f"qwen2-{size}", qkv_bias=True)


_FAMILIES = {"gpt2-rope": _gpt2_rope, "llama2": _llama2, "qwen2": _qwen2}
PRESETS: dict[str, ModelConfig] = {
    f"{fam}-{size}": make(size)
    for fam, make in _FAMILIES.items()
    for size in _SIZES
    if not (size == "1.2b" and fam != "gpt2-rope")
}


def get_preset(name: str) -> ModelConfig:
    """The named preset; a ``ValueError`` listing the valid names otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown preset {name!r}; available presets: {', '.join(sorted(PRESETS))}"
        ) from None
