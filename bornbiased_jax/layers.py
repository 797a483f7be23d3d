"""Sublayers of the decoder, as pure functions of (params, config, x) on ONE sequence.

Shapes: T = sequence length, d = d_model, H = n_heads, K = head_dim, F = d_ff,
N = n_kv_heads, G = H / N query heads per key/value head (query head h = n G + g reads K/V
head n, HF's ``repeat_kv`` order).
Batching over sequences and over seeds is ``jax.vmap`` / ``lax.map`` at the boundary; nothing
here knows about batches. Each ``init_*`` takes an ``init_param(name, shape, std)`` callback so
that every parameter's key is derived from its full path name (see ``model.py``).
"""

from __future__ import annotations

import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax.config import ModelConfig

InitParam = Callable[..., jax.Array]  # init_param(name, shape, std | "zeros" | "ones")


# --- activations ------------------------------------------------------------------------------
def activation_fn(name: str) -> Callable[[jax.Array], jax.Array]:
    """phi by name. 'gelu' is exact x*Phi(x) (paper Sec. 4.2); 'gelu_tanh' is GPT-2's approximation."""
    return {
        "relu": jax.nn.relu,
        "gelu": gelu_exact,
        "gelu_tanh": lambda x: jax.nn.gelu(x, approximate=True),
        "tanh": jnp.tanh,
        "silu": jax.nn.silu,
    }[name]


def gelu_exact(x: jax.Array) -> jax.Array:
    """x * Phi(x) as 0.5 x (1 + erf(x / sqrt 2)).

    ``jax.nn.gelu(approximate=False)`` goes through erfc, which evaluates two branches; this
    form is one rational polynomial and ran 2.4x faster on a CPU. In float32 its absolute error
    against a float64 reference is below 1.1e-6 on [-10, 10] (erfc's: 3.8e-7), and its relative
    error below 1.1e-6 where |GELU| > 0.1; in the negative tail 1 + erf cancels, so the relative
    error grows (2e-5 where |GELU| > 0.01, 3e-4 where > 1e-3) while staying below 1.1e-6
    absolute. ``tests/test_model.py`` checks these bounds."""
    return 0.5 * x * (1.0 + jax.lax.erf(x * (1.0 / math.sqrt(2.0))))


# --- normalisation ----------------------------------------------------------------------------
def init_norm(cfg: ModelConfig, init_param: InitParam, name: str) -> dict:
    if cfg.norm == "none":
        return {}
    p = {"scale": init_param(f"{name}/scale", (cfg.d_model,), "ones")}
    if cfg.norm == "layernorm" and cfg.linear_bias:
        p["bias"] = init_param(f"{name}/bias", (cfg.d_model,), "zeros")
    return p


def norm(p: dict, cfg: ModelConfig, x_Td: jax.Array) -> jax.Array:
    """LayerNorm or RMSNorm over the last axis (statistics in float32), or identity."""
    if cfg.norm == "none":
        return x_Td
    x = x_Td.astype(jnp.float32)
    if cfg.norm == "layernorm":
        x = x - x.mean(-1, keepdims=True)
    y = x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + cfg.norm_eps)
    y = y * p["scale"]
    if "bias" in p:
        y = y + p["bias"]
    return y.astype(x_Td.dtype)


# --- linear -----------------------------------------------------------------------------------
def init_linear(init_param: InitParam, name: str, d_in: int, d_out: int, std: float,
                bias: bool) -> dict:
    p = {"kernel": init_param(f"{name}/kernel", (d_in, d_out), std)}
    if bias:
        p["bias"] = init_param(f"{name}/bias", (d_out,), "zeros")
    return p


def linear(p: dict, x: jax.Array) -> jax.Array:
    y = x @ p["kernel"]
    return y + p["bias"] if "bias" in p else y


# --- rotary position embedding ----------------------------------------------------------------
def rope_cos_sin(T: int, K: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin tables of shape (T, K) in the HF LLaMA layout (halves, not interleaved).

    Computed on the host in float64 and rounded to float32, so they enter compiled programs as
    constants. (Traced tables were recomputed inside every fusion that reads them: XLA's CPU
    backend fused cos and sin into each RoPE-and-transpose loop, which cost ~2.5 ms per
    attention layer at 1,024 tokens, d = 512, about 15 % of the layer.) float64 angles are also
    more exact than HF's float32 ones, which differ by up to ~1e-4 rad at position 2,048."""
    inv_freq_K2 = 1.0 / theta ** (np.arange(0, K, 2, dtype=np.float64) / K)
    ang_TK2 = np.arange(T, dtype=np.float64)[:, None] * inv_freq_K2[None, :]
    ang_TK = np.concatenate([ang_TK2, ang_TK2], axis=-1)
    return np.cos(ang_TK).astype(np.float32), np.sin(ang_TK).astype(np.float32)


def apply_rope(x_THK: jax.Array, cos_TK: jax.Array, sin_TK: jax.Array) -> jax.Array:
    """Rotate q or k: x*cos + rotate_half(x)*sin, so that <R_s q, R_t k> depends on t - s."""
    half = x_THK.shape[-1] // 2
    rot = jnp.concatenate([-x_THK[..., half:], x_THK[..., :half]], axis=-1)
    return x_THK * cos_TK[:, None, :] + rot * sin_TK[:, None, :]


# --- attention --------------------------------------------------------------------------------
def init_attention(cfg: ModelConfig, init_param: InitParam, name: str) -> dict:
    if not cfg.has_attn_params:
        return {}  # Attn0 has no parameters (identity W_V and W_O)
    d, s = cfg.d_model, cfg.init_std
    HK, NK = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    qkv_bias = cfg.linear_bias or cfg.qkv_bias
    return {
        "q_proj": init_linear(init_param, f"{name}/q_proj", d, HK, s, qkv_bias),
        "k_proj": init_linear(init_param, f"{name}/k_proj", d, NK, s, qkv_bias),
        "v_proj": init_linear(init_param, f"{name}/v_proj", d, NK, s, qkv_bias),
        "o_proj": init_linear(init_param, f"{name}/o_proj", HK, d, cfg.residual_std,
                              cfg.linear_bias),
    }


def output_transform(cfg: ModelConfig, o_THK: jax.Array, offset: int = 0) -> jax.Array:
    """Per-head transform of the aggregated output o_i = sum_j A_ij v_j (paper Sec. 6.2.1).

    Position i is 1-based as in the paper (row r of ``o_THK`` is position offset + r + 1), so
    the first token is left unscaled by sqrt(i).
    """
    kind = cfg.attn_output_transform
    if kind == "none":
        return o_THK
    i_T = jnp.arange(offset + 1, offset + o_THK.shape[0] + 1, dtype=jnp.float32)
    if kind == "sqrt_i":
        return o_THK * jnp.sqrt(i_T)[:, None, None].astype(o_THK.dtype)
    if kind == "sqrt_i_over_T":
        return o_THK * jnp.sqrt(i_T / cfg.max_seq_len)[:, None, None].astype(o_THK.dtype)
    if kind == "headwise_rmsnorm":
        o = o_THK.astype(jnp.float32)
        o = o * jax.lax.rsqrt((o * o).mean(-1, keepdims=True) + cfg.norm_eps)
        return o.astype(o_THK.dtype)
    raise AssertionError(kind)


def attention_weights(p: dict, cfg: ModelConfig, x_Td: jax.Array,
                      rope: tuple[jax.Array, jax.Array] | None,
                      last_only: bool = False) -> tuple[jax.Array, jax.Array]:
    """Causal softmax attention weights A (H, Q, T) and values v (T, N, K).

    Q = T queries, or only the last position's query when ``last_only`` (Q = 1). With GQA the
    queries are grouped as (N, G): query head h = n G + g attends with K/V head n.
    """
    T, H, N, K = x_Td.shape[0], cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    G = H // N
    xq_Qd = x_Td[-1:] if last_only else x_Td
    Q = xq_Qd.shape[0]
    q_QHK = linear(p["q_proj"], xq_Qd).reshape(Q, H, K)
    k_TNK = linear(p["k_proj"], x_Td).reshape(T, N, K)
    v_TNK = linear(p["v_proj"], x_Td).reshape(T, N, K)
    if rope is not None:
        cos_TK, sin_TK = rope
        q_QHK = apply_rope(q_QHK, cos_TK[T - Q:], sin_TK[T - Q:])
        k_TNK = apply_rope(k_TNK, cos_TK, sin_TK)
    q_QNGK = q_QHK.reshape(Q, N, G, K)
    scores_NGQT = jnp.einsum("qngk,tnk->ngqt", q_QNGK, k_TNK) / jnp.sqrt(K).astype(x_Td.dtype)
    causal_QT = jnp.tril(jnp.ones((T, T), dtype=bool))[T - Q:]
    scores_HQT = jnp.where(causal_QT[None], scores_NGQT.reshape(H, Q, T).astype(jnp.float32),
                           -jnp.inf)
    return jax.nn.softmax(scores_HQT, axis=-1).astype(x_Td.dtype), v_TNK


def attention(p: dict, cfg: ModelConfig, x_Td: jax.Array,
              rope: tuple[jax.Array, jax.Array] | None, last_only: bool = False) -> jax.Array:
    """Multi-head causal self-attention (or Attn0) of one sequence: (T, d) -> (Q, d).

    Q = T, or 1 when ``last_only`` (only the last position's output is computed).
    """
    T = x_Td.shape[0]
    if cfg.attention == "attn0_full":  # Definition 3: the average of the whole sequence
        out_Td = jnp.broadcast_to(x_Td.mean(0, keepdims=True), x_Td.shape)
    elif cfg.attention == "attn0_causal":  # running average, o_i = (1/i) sum_{j<=i} x_j
        i_T = jnp.arange(1, T + 1, dtype=x_Td.dtype)
        out_Td = jnp.cumsum(x_Td, axis=0) / i_T[:, None]
    else:
        A_HQT, v_TNK = attention_weights(p, cfg, x_Td, rope, last_only)
        H, Q, _ = A_HQT.shape
        N = v_TNK.shape[1]
        A_NGQT = A_HQT.reshape(N, H // N, Q, T)
        o_QHK = jnp.einsum("ngqt,tnk->qngk", A_NGQT, v_TNK).reshape(Q, H, cfg.head_dim)
        o_QHK = output_transform(cfg, o_QHK, offset=T - Q)  # Sec. 6.2's slot
        return linear(p["o_proj"], o_QHK.reshape(Q, H * cfg.head_dim))
    return out_Td[-1:] if last_only else out_Td


# --- MLP --------------------------------------------------------------------------------------
def init_mlp(cfg: ModelConfig, init_param: InitParam, name: str) -> dict:
    d, F, s, b = cfg.d_model, cfg.d_ff, cfg.init_std, cfg.linear_bias
    p = {"up_proj": init_linear(init_param, f"{name}/up_proj", d, F, s, b),
         "down_proj": init_linear(init_param, f"{name}/down_proj", F, d, cfg.residual_std, b)}
    if cfg.gated_mlp:
        p["gate_proj"] = init_linear(init_param, f"{name}/gate_proj", d, F, s, b)
    return p


def mlp(p: dict, cfg: ModelConfig, x_Td: jax.Array) -> jax.Array:
    """phi(x W_up) W_down, or phi(x W_gate) * (x W_up) W_down when gated (SwiGLU)."""
    phi = activation_fn(cfg.activation)
    if cfg.gated_mlp:
        h_TF = phi(linear(p["gate_proj"], x_Td)) * linear(p["up_proj"], x_Td)
    else:
        h_TF = phi(linear(p["up_proj"], x_Td))
    return linear(p["down_proj"], h_TF)
