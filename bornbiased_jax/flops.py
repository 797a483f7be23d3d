"""Model FLOPs of a forward pass (matmuls only, multiply-add = 2 FLOPs), for throughput reports.

Counted like nanoGPT's MFU: every dense matmul of the forward, attention scores and the
weighted sum over the full T x T square (no credit taken for the causal mask), no elementwise
work. With ``last_only`` the last block runs its query, attention, W_O and MLP at one position
and the LM head at one position, as ``model.forward(..., last_only=True)`` does.
"""

from __future__ import annotations

from bornbiased_jax.config import ModelConfig


def forward_flops(cfg: ModelConfig, T: int, last_only: bool = False) -> int:
    d, F, L, V = cfg.d_model, cfg.d_ff, cfg.n_layers, cfg.vocab_size
    K = cfg.resolved_head_dim
    HK, NK = cfg.n_heads * K, cfg.resolved_n_kv_heads * K  # d and d/G under GQA
    mlp = (3 if cfg.gated_mlp else 2) * d * F  # multiply-adds per token
    total = 0
    for layer in range(L):
        q = 1 if (last_only and layer == L - 1) else T  # positions whose outputs are needed
        if cfg.has_attn_params:
            total += 2 * (T * 2 * d * NK + q * 2 * d * HK)  # K, V at every position; Q, O at q
            total += 2 * 2 * q * T * HK  # scores and weighted sum
        if cfg.has_mlp:
            total += 2 * q * mlp
    total += 2 * (1 if last_only else T) * d * V  # LM head
    return total
