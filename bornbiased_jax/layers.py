"""Sublayers of the decoder as Flax Linen modules, each acting on ONE sequence.

Shapes: T = sequence length, Q = query positions (T, or 1 with ``last_only``), d = d_model,
H = n_heads, K = head_dim, F = d_ff, N = n_kv_heads, G = H / N query heads per key/value head
(query head h = n G + g reads K/V head n, HF's ``repeat_kv`` order).

Modules are used pure-functionally through ``init`` / ``apply``. Linen folds each submodule's
name into its PRNG key, so a parameter's initial value depends on the key and its path
(``layers_3/mlp/down_proj/kernel``) alone, not on the order in which code creates it.
Batching over sequences and seeds is ``jax.vmap`` / ``lax.map`` at the boundary.

The functions at the end (``norm``, ``linear``, ``attention``, ``attention_weights``,
``mlp``) apply one module to a parameter dict, for probes that read a sublayer on its own.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax.config import ModelConfig

Rope = tuple[np.ndarray, np.ndarray] | None  # cos, sin tables (T, K), or no RoPE


# --- initialisers (App. B.1) ------------------------------------------------------------------
def normal_init(std: float) -> Callable[..., jax.Array]:
    """N(0, std^2), drawn in float32 and then cast to the parameter dtype.

    The barrier keeps XLA from folding ``std`` into the sampler's own constant multiply
    (sqrt(2) erfinv(u)) under ``jit``: without it about a quarter of the weights differed by
    one ulp between eager, jitted and vmapped initialisation; with it they agree bitwise."""
    def init(key, shape, dtype=jnp.float32):
        z = jax.lax.optimization_barrier(jax.random.normal(key, shape, jnp.float32))
        return (std * z).astype(dtype)
    return init


def dense(features: int, std: float, use_bias: bool, dtype: Any, name: str) -> nn.Dense:
    """A linear layer x W (+ b): kernel (in, out) ~ N(0, std^2), bias zeros."""
    return nn.Dense(features, use_bias=use_bias, kernel_init=normal_init(std),
                    bias_init=nn.initializers.zeros_init(), param_dtype=dtype, name=name)


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
class Norm(nn.Module):
    """LayerNorm or RMSNorm over the last axis (statistics in float32), or the identity.

    Parameters: ``scale`` (n,) = 1, and ``bias`` (n,) = 0 for LayerNorm with ``linear_bias``;
    n = ``features``, d_model by default (head_dim for the QK-norm). With
    ``cfg.norm_unit_offset`` (Gemma) the gain is 1 + scale and ``scale`` starts at 0."""

    cfg: ModelConfig
    param_dtype: Any = jnp.float32
    features: int | None = None

    @nn.compact
    def __call__(self, x_Td: jax.Array) -> jax.Array:
        cfg = self.cfg
        if cfg.norm == "none":
            return x_Td
        d = cfg.d_model if self.features is None else self.features
        if cfg.norm_unit_offset:  # Gemma: gain (1 + w), w = 0 at init, 1 + w taken in float32
            w_d = self.param("scale", nn.initializers.zeros_init(), (d,), self.param_dtype)
            scale_d = 1.0 + w_d.astype(jnp.float32)
        else:
            scale_d = self.param("scale", nn.initializers.ones_init(), (d,), self.param_dtype)
        x = x_Td.astype(jnp.float32)
        if cfg.norm == "layernorm":
            x = x - x.mean(-1, keepdims=True)
        y = x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + cfg.norm_eps) * scale_d
        if cfg.norm == "layernorm" and cfg.linear_bias:
            y = y + self.param("bias", nn.initializers.zeros_init(), (d,), self.param_dtype)
        return y.astype(x_Td.dtype)


# --- rotary position embedding ----------------------------------------------------------------
def rope_cos_sin(T: int, K: int, theta: float, scaling=None,
                 max_positions: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin tables of shape (T, K) in the HF LLaMA layout (halves, not interleaved), for
    RoPE base ``theta`` and its ``scaling`` (a ``config.RopeScaling`` or None;
    :mod:`bornbiased_jax.rope`).

    Computed on the host in float64 and rounded to float32, so they enter compiled programs as
    constants. (Traced tables were recomputed inside every fusion that reads them: XLA's CPU
    backend fused cos and sin into each RoPE-and-transpose loop, which cost ~2.5 ms per
    attention layer at 1,024 tokens, d = 512, about 15 % of the layer.) float64 angles are also
    more exact than HF's float32 ones, which differ by up to ~1e-4 rad at position 2,048."""
    from bornbiased_jax.rope import cos_sin

    return cos_sin(T, K, theta, scaling, max_positions)


def apply_rope(x_THK: jax.Array, cos_TK: jax.Array, sin_TK: jax.Array) -> jax.Array:
    """Rotate q or k: x*cos + rotate_half(x)*sin, so that <R_s q, R_t k> depends on t - s."""
    half = x_THK.shape[-1] // 2
    rot = jnp.concatenate([-x_THK[..., half:], x_THK[..., :half]], axis=-1)
    return x_THK * cos_TK[:, None, :] + rot * sin_TK[:, None, :]


# --- attention --------------------------------------------------------------------------------
def output_transform(cfg: ModelConfig, o_QHK: jax.Array, offset: int = 0,
                     scale_HK: jax.Array | None = None) -> jax.Array:
    """Per-head transform of the aggregated output o_i = sum_j A_ij v_j (paper Sec. 6.2.1).

    * ``sqrt_i``, Positional Amplification: o~_i = sqrt(i) o_i.
    * ``sqrt_i_over_T``, Positional Attenuation: o~_i = sqrt(i / T) o_i with T = ``max_seq_len``,
      the model's maximum context, also at evaluation on shorter sequences (the paper's T is
      "the maximum context"; it is a constant, not the current length). Attenuation is
      therefore amplification times the constant 1 / sqrt(max_seq_len).
    * ``headwise_rmsnorm``: o~_i = gamma_h * o_i / sqrt(mean_k o_{i,k}^2 + eps) per head h, with
      ``scale_HK`` = gamma (H, K), the learned per-head scale (None: gamma = 1).

    Position i is 1-based as in the paper (row r of ``o_QHK`` is position offset + r + 1), so
    the first token is left unscaled by sqrt(i).
    """
    kind = cfg.attn_output_transform
    if kind == "none":
        return o_QHK
    i_Q = jnp.arange(offset + 1, offset + o_QHK.shape[0] + 1, dtype=jnp.float32)
    # The factors and the product are float32 (then cast back), so that in bfloat16 the factor
    # is not rounded first: sqrt(i) for neighbouring i > ~128 would share one bfloat16 value.
    if kind == "sqrt_i":
        return (o_QHK.astype(jnp.float32) * jnp.sqrt(i_Q)[:, None, None]).astype(o_QHK.dtype)
    if kind == "sqrt_i_over_T":
        return (o_QHK.astype(jnp.float32)
                * jnp.sqrt(i_Q / cfg.max_seq_len)[:, None, None]).astype(o_QHK.dtype)
    if kind == "headwise_rmsnorm":
        o = o_QHK.astype(jnp.float32)
        o = o * jax.lax.rsqrt((o * o).mean(-1, keepdims=True) + cfg.norm_eps)
        if scale_HK is not None:
            o = o * scale_HK.astype(jnp.float32)
        return o.astype(o_QHK.dtype)
    raise AssertionError(kind)


# Queries per block when the attention's output alone is needed. At T = 1,024 on a CPU the
# (H, T, T) scores of a sequence outgrow the caches, and the softmax's passes over them cost
# more than the matrix products; blocks of queries, each over the keys it can see (about half
# the pairs), keep them small (benchmarks/attention_blocks.py; its figures in
# benchmarks/results/attention_blocks_cpu.md).
QUERY_BLOCK = 64


def causal_softmax(q_QNGK: jax.Array, k_TNK: jax.Array, dtype: Any,
                   scalar: float | None = None, window: int | None = None) -> jax.Array:
    """A (H, Q, T) = softmax(q k^T / sqrt(scalar)) over the keys each query sees, in float32
    and then cast to ``dtype`` (the attention input's; the square root is taken in it too);
    the Q queries are the last Q of the T positions. ``scalar``: None means K, the head size
    (``ModelConfig.attn_scalar``). A query sees the keys at or before it, and with ``window``
    W only the last W of them: query i attends to j with i - W < j <= i."""
    Q, N, G, K = q_QNGK.shape
    T = k_TNK.shape[0]
    scores_NGQT = (jnp.einsum("qngk,tnk->ngqt", q_QNGK, k_TNK)
                   / jnp.sqrt(K if scalar is None else scalar).astype(dtype))
    seen_QT = visible(T, window)[T - Q:]
    scores_HQT = jnp.where(seen_QT[None], scores_NGQT.reshape(N * G, Q, T).astype(jnp.float32),
                           -jnp.inf)
    return jax.nn.softmax(scores_HQT, axis=-1).astype(dtype)


def visible(T: int, window: int | None = None) -> np.ndarray:
    """(T, T) bool: key j is visible to query i when j <= i (causal) and, with a window W,
    i - W < j (the last W keys, the query's own included)."""
    seen = np.tril(np.ones((T, T), dtype=bool))
    return seen if window is None else np.triu(seen, k=1 - window)


def blocked_causal_attention(q_TNGK: jax.Array, k_TNK: jax.Array, v_TNK: jax.Array,
                             block: int, dtype: Any, scalar: float | None = None,
                             window: int | None = None) -> jax.Array:
    """o (T, N, G, K) = sum_j A_ij v_j with A = :func:`causal_softmax`, computed ``block``
    queries at a time: queries [s, e) against keys [0, e) (the keys from e on, masked for all
    of them, are left out; those after each query within [0, e) are masked), or with a window
    W against keys [max(0, s - W + 1), e) (those before, outside every query's window, left
    out too; the mask depends on i - j alone, so it is the same in the shifted frame). Every
    row's softmax is over the same unmasked keys as the whole matrix's, so the result equals
    the unblocked one up to float rounding; nothing (H, T, T) is formed."""
    T, N, G, K = q_TNGK.shape
    out = []
    for s in range(0, T, block):
        e = min(T, s + block)
        k0 = 0 if window is None else max(0, s - window + 1)
        A_HQT = causal_softmax(q_TNGK[s:e], k_TNK[k0:e], dtype, scalar, window)
        out.append(jnp.einsum("ngqt,tnk->qngk", A_HQT.reshape(N, G, e - s, e - k0),
                              v_TNK[k0:e]))
    return jnp.concatenate(out, axis=0)


class Attention(nn.Module):
    """Causal multi-head self-attention with grouped K/V heads, or the paper's Attn0.

    Parameters (softmax only): q_proj (d, H K), k_proj and v_proj (d, N K), o_proj (H K, d);
    kernels ~ N(0, init_std^2), o_proj ~ N(0, residual_std^2) (App. B.1); biases zeros.
    With ``attn_output_transform="headwise_rmsnorm"``: ``head_norm/scale`` gamma (H, K) = 1.
    With ``attn_output_gate`` (not from the paper): ``gate_proj`` W_g (d, H K) ~ N(0, init_std^2)
    and, with ``attn_output_gate_bias``, its bias (H K,) = 0. With ``qk_norm`` (Gemma 3, Qwen3):
    ``q_norm`` and ``k_norm``, RMSNorms over each head's K coordinates (gain (K,), shared by
    the heads), applied to q and k before RoPE; with ``qk_norm_scope="projection"`` (OLMo 2)
    ``q_proj_norm`` (H K,) and ``k_proj_norm`` (N K,), RMSNorms of the whole projections
    before they split into heads. ``window``: the layer's sliding window W
    (None: global), see :func:`causal_softmax`.
    Attn0 (Definition 3) has none: uniform weights and identity W_V, W_O.

    The per-head output slot, in order: o_i = sum_j A_ij v_j, then the Sec. 6.2.1 transform
    (:func:`output_transform`), then the gate o_i <- sigmoid(x_i W_g + b_g) * o_i, where x_i is
    the attention's (normalised) input at position i; then W_O.

    When the ``intermediates`` collection is mutable, ``__call__`` sows the probabilities
    ``attention_probs`` A (H, Q, T) and the per-head outputs ``head_outputs`` o (Q, H, K)
    after the transform and gate, i.e. what enters W_O. Otherwise nothing is stored, and a
    sequence longer than ``QUERY_BLOCK`` is attended ``QUERY_BLOCK`` queries at a time
    (:func:`blocked_causal_attention`: the same o_i up to float rounding, without forming A),
    unless ``last_only`` (one query: the whole row is formed).
    """

    cfg: ModelConfig
    param_dtype: Any = jnp.float32

    def setup(self):
        cfg = self.cfg
        if not cfg.has_attn_params:
            return
        K = cfg.resolved_head_dim
        HK, NK = cfg.n_heads * K, cfg.resolved_n_kv_heads * K
        qkv_bias = cfg.linear_bias or cfg.qkv_bias
        dt, s = self.param_dtype, cfg.init_std
        self.q_proj = dense(HK, s, qkv_bias, dt, "q_proj")
        self.k_proj = dense(NK, s, qkv_bias, dt, "k_proj")
        self.v_proj = dense(NK, s, qkv_bias, dt, "v_proj")
        self.o_proj = dense(cfg.d_model, cfg.residual_std, cfg.linear_bias, dt, "o_proj")
        if cfg.attn_output_transform == "headwise_rmsnorm":
            self.head_norm = HeadScale(cfg.n_heads, K, dt, name="head_norm")
        if cfg.attn_output_gate:
            self.gate_proj = dense(HK, s, cfg.attn_output_gate_bias, dt, "gate_proj")
        if cfg.qk_norm and cfg.qk_norm_scope == "head":  # one gain (K,) shared by the heads
            self.q_norm = Norm(cfg, dt, features=K)
            self.k_norm = Norm(cfg, dt, features=K)
        elif cfg.qk_norm:  # over the whole projection: gains (H K,) and (N K,)
            self.q_proj_norm = Norm(cfg, dt, features=HK)
            self.k_proj_norm = Norm(cfg, dt, features=NK)

    def qkv(self, x_Td: jax.Array, rope: Rope = None,
            last_only: bool = False) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Queries q (Q, N, G, K) grouped by the K/V head they read, keys k and values v
        (T, N, K); the QK-norm (if any), then RoPE, applied to q and k."""
        cfg = self.cfg
        T, H, N, K = x_Td.shape[0], cfg.n_heads, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
        xq_Qd = x_Td[-1:] if last_only else x_Td
        Q = xq_Qd.shape[0]
        q_QHK, k_TNK = self.q_proj(xq_Qd), self.k_proj(x_Td)
        if cfg.qk_norm and cfg.qk_norm_scope == "projection":  # OLMo 2: before the heads split
            q_QHK, k_TNK = self.q_proj_norm(q_QHK), self.k_proj_norm(k_TNK)
        q_QHK, k_TNK = q_QHK.reshape(Q, H, K), k_TNK.reshape(T, N, K)
        v_TNK = self.v_proj(x_Td).reshape(T, N, K)
        if cfg.qk_norm and cfg.qk_norm_scope == "head":  # per head, over its K coordinates
            q_QHK, k_TNK = self.q_norm(q_QHK), self.k_norm(k_TNK)
        if rope is not None:
            cos_TK, sin_TK = rope
            q_QHK = apply_rope(q_QHK, cos_TK[T - Q:], sin_TK[T - Q:])
            k_TNK = apply_rope(k_TNK, cos_TK, sin_TK)
        return q_QHK.reshape(Q, N, H // N, K), k_TNK, v_TNK

    def weights(self, x_Td: jax.Array, rope: Rope = None, last_only: bool = False,
                window: int | None = None) -> tuple[jax.Array, jax.Array]:
        """Softmax attention weights A (H, Q, T) and values v (T, N, K)."""
        q_QNGK, k_TNK, v_TNK = self.qkv(x_Td, rope, last_only)
        return causal_softmax(q_QNGK, k_TNK, x_Td.dtype, self._scalar(), window), v_TNK

    def _scalar(self) -> float | None:
        """None for the head size (the default, as every model before Gemma computed it)."""
        return self.cfg.query_pre_attn_scalar

    def __call__(self, x_Td: jax.Array, rope: Rope = None, last_only: bool = False,
                 window: int | None = None) -> jax.Array:
        """(T, d) -> (Q, d): Q = T, or 1 when ``last_only`` (the last position's output only)."""
        cfg = self.cfg
        T = x_Td.shape[0]
        if cfg.attention == "attn0_full":  # Definition 3: the average of the whole sequence
            out_Td = jnp.broadcast_to(x_Td.mean(0, keepdims=True), x_Td.shape)
            return out_Td[-1:] if last_only else out_Td
        if cfg.attention == "attn0_causal":  # running average, o_i = (1/i) sum_{j<=i} x_j
            i_T = jnp.arange(1, T + 1, dtype=x_Td.dtype)
            out_Td = jnp.cumsum(x_Td, axis=0) / i_T[:, None]
            return out_Td[-1:] if last_only else out_Td
        H, N, K = cfg.n_heads, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
        if last_only or T <= QUERY_BLOCK or self.is_mutable_collection("intermediates"):
            A_HQT, v_TNK = self.weights(x_Td, rope, last_only, window)
            Q = A_HQT.shape[1]
            o_QNGK = jnp.einsum("ngqt,tnk->qngk", A_HQT.reshape(N, H // N, Q, T), v_TNK)
            self.sow("intermediates", "attention_probs", A_HQT)
        else:  # the same sums, QUERY_BLOCK queries at a time over the keys they can see
            Q = T
            o_QNGK = blocked_causal_attention(*self.qkv(x_Td, rope), QUERY_BLOCK, x_Td.dtype,
                                              self._scalar(), window)
        gamma_HK = self.head_norm() if cfg.attn_output_transform == "headwise_rmsnorm" else None
        o_QHK = output_transform(cfg, o_QNGK.reshape(Q, H, K), T - Q, gamma_HK)  # Sec. 6.2.1
        if cfg.attn_output_gate:  # not from the paper: a sigmoid gate per head and channel
            xq_Qd = x_Td[-1:] if last_only else x_Td
            g_QHK = jax.nn.sigmoid(self.gate_proj(xq_Qd).astype(jnp.float32)).reshape(Q, H, K)
            o_QHK = (o_QHK * g_QHK).astype(o_QHK.dtype)
        self.sow("intermediates", "head_outputs", o_QHK)
        return self.o_proj(o_QHK.reshape(Q, H * K))


class HeadScale(nn.Module):
    """The learned per-head scale gamma (H, K) of head-wise RMSNorm, initialised to 1."""

    n_heads: int
    head_dim: int
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self) -> jax.Array:
        return self.param("scale", nn.initializers.ones_init(), (self.n_heads, self.head_dim),
                          self.param_dtype)


# --- MLP --------------------------------------------------------------------------------------
class MLP(nn.Module):
    """phi(x W_up) W_down, or phi(x W_gate) * (x W_up) W_down when gated (SwiGLU).

    up_proj and gate_proj (d, F) ~ N(0, init_std^2), down_proj (F, d) ~ N(0, residual_std^2)."""

    cfg: ModelConfig
    param_dtype: Any = jnp.float32

    def setup(self):
        cfg, dt = self.cfg, self.param_dtype
        self.up_proj = dense(cfg.d_ff, cfg.init_std, cfg.linear_bias, dt, "up_proj")
        if cfg.gated_mlp:
            self.gate_proj = dense(cfg.d_ff, cfg.init_std, cfg.linear_bias, dt, "gate_proj")
        self.down_proj = dense(cfg.d_model, cfg.residual_std, cfg.linear_bias, dt, "down_proj")

    def __call__(self, x_Td: jax.Array) -> jax.Array:
        phi = activation_fn(self.cfg.activation)
        if self.cfg.gated_mlp:
            h_TF = phi(self.gate_proj(x_Td)) * self.up_proj(x_Td)
        else:
            h_TF = phi(self.up_proj(x_Td))
        return self.down_proj(h_TF)


# --- one sublayer applied to a parameter dict -------------------------------------------------
def norm(p: dict, cfg: ModelConfig, x_Td: jax.Array) -> jax.Array:
    return Norm(cfg, features=x_Td.shape[-1]).apply({"params": p}, x_Td)


def linear(p: dict, x: jax.Array) -> jax.Array:
    """x W (+ b) with ``p = {"kernel": (in, out), "bias": (out,)?}``."""
    return nn.Dense(p["kernel"].shape[-1], use_bias="bias" in p).apply({"params": p}, x)


def attention(p: dict, cfg: ModelConfig, x_Td: jax.Array, rope: Rope = None,
              last_only: bool = False, window: int | None = None) -> jax.Array:
    return Attention(cfg).apply({"params": p}, x_Td, rope, last_only, window)


def attention_weights(p: dict, cfg: ModelConfig, x_Td: jax.Array, rope: Rope = None,
                      last_only: bool = False, window: int | None = None
                      ) -> tuple[jax.Array, jax.Array]:
    """A (H, Q, T) and v (T, N, K) of :meth:`Attention.weights`."""
    return Attention(cfg).apply({"params": p}, x_Td, rope, last_only, window,
                                method=Attention.weights)


def mlp(p: dict, cfg: ModelConfig, x_Td: jax.Array) -> jax.Array:
    return MLP(cfg).apply({"params": p}, x_Td)
