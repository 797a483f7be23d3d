"""Finite-width simulators of the closed forms, built from the model zoo's own blocks and init.

Each simulator draws R independent replicates (a fresh network from ``jax.random.key(seed + r)``
and fresh Gaussian inputs folded from the same key under a separate name), reduces each
replicate to one number per layer inside JAX, and returns the mean over replicates with its
standard error sd / sqrt(R). Replicates are independent, so the SE is valid even though the
pairwise similarities inside one replicate are dependent.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import layers, model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.keys import fold_in_name, seed_keys
from bornbiased_jax.theory.attn0 import running_average_matrix

# The simulators run many networks in one compiled call, so their run time dominates their
# compile time: they ask XLA for its full optimisation (its default level) whatever a session's
# XLA_FLAGS say (the test suite lowers the level for its many small programs, conftest.py).
OPTIMISED = {"xla_backend_optimization_level": 3}


class MC(NamedTuple):
    """A Monte Carlo estimate: mean and standard error (arrays of equal shape), R replicates."""

    mean: np.ndarray
    se: np.ndarray
    reps: int


def _mc(samples_R) -> MC:
    x = np.asarray(samples_R, np.float64)
    return MC(x.mean(0), x.std(0, ddof=1) / np.sqrt(x.shape[0]), x.shape[0])


def block_config(*, d: int, n_layers: int, d_ff: int = 1, block: str = "mlp_only",
                 activation: str = "relu", attention: str = "softmax", norm: str = "none",
                 residual: bool = False, n_heads: int = 1, max_seq_len: int = 4096,
                 init_std: float = 0.02) -> ModelConfig:
    """A zoo config for the simplified blocks: MLP0 (Definition 1) is ``block="mlp_only"``,
    ``norm="none"``, ``residual=False``; Attn0 (Definition 3) is ``attention="attn0_*"``."""
    return ModelConfig(name=f"theory-{block}-{activation}-{attention}", vocab_size=1, d_model=d,
                       n_layers=n_layers, n_heads=n_heads, d_ff=d_ff, max_seq_len=max_seq_len,
                       block=block, attention=attention, activation=activation, norm=norm,
                       residual=residual, position="none", linear_bias=False,
                       init_std=init_std)


def mean_pairwise_cosine(U_Nd: jax.Array, include_diagonal: bool = False) -> jax.Array:
    """Mean cosine similarity over pairs of rows (i != j unless ``include_diagonal``)."""
    n = U_Nd / jnp.linalg.norm(U_Nd, axis=-1, keepdims=True)
    S = n @ n.T
    N = U_Nd.shape[0]
    if include_diagonal:
        return S.mean()
    return (S.sum() - jnp.trace(S)) / (N * (N - 1))


def _replicates(cfg: ModelConfig, reps: int, seed: int, fn):
    """fn(params, key) -> per-layer numbers, mapped over R independent networks (jitted)."""
    keys = seed_keys(range(seed, seed + reps))
    one = lambda k: fn(model.init(cfg, k), fold_in_name(k, "theory/inputs"))  # noqa: E731
    return np.asarray(jax.jit(lambda ks: jax.lax.map(one, ks),
                              compiler_options=OPTIMISED)(keys))


def mlp0_inter_similarity(activation: str, n_layers: int, *, d: int = 1024, d_ff: int = 4096,
                          n_seqs: int = 64, reps: int = 32, input_std: float = 1.0,
                          seed: int = 0) -> MC:
    """Inter-sequence cosine of (last-token) representations after each of L MLP0 layers.

    Returns per-layer estimates for layers 0..L (0 = the Gaussian inputs themselves)."""
    cfg = block_config(d=d, n_layers=n_layers, d_ff=d_ff, activation=activation)

    def fn(params, key):
        x_N1d = input_std * jax.random.normal(key, (n_seqs, 1, d))
        h_NL1d = jax.vmap(lambda x: model.forward(params, cfg, embeds_Td=x,
                                                   return_hidden=True).hidden)(x_N1d)
        return jax.vmap(mean_pairwise_cosine, in_axes=1)(h_NL1d[:, :, -1])

    return _mc(_replicates(cfg, reps, seed, fn))


def prop4_similarities(T: int, *, d: int = 1024, d_ff: int = 4096, n_seqs: int = 48,
                       reps: int = 24, seed: int = 0) -> dict[str, MC]:
    """Table 3: inter-sequence cosine of h = MLP0(x), MLP0(h) and Attn0(h) (full average)."""
    cfg = block_config(d=d, n_layers=2, d_ff=d_ff, activation="relu")
    attn0 = block_config(d=d, n_layers=1, block="attn_only", attention="attn0_full")

    def fn(params, key):
        x_NTd = jax.random.normal(key, (n_seqs, T, d))
        hid_NLTd = jax.vmap(lambda x: model.forward(params, cfg, embeds_Td=x,
                                                    return_hidden=True).hidden)(x_NTd)
        h, y_mlp = hid_NLTd[:, 1], hid_NLTd[:, 2]
        y_attn = jax.vmap(lambda t: layers.attention({}, attn0, t, None))(h)
        return jnp.stack([mean_pairwise_cosine(h[:, -1]), mean_pairwise_cosine(y_mlp[:, -1]),
                          mean_pairwise_cosine(y_attn[:, -1])])

    est = _mc(_replicates(cfg, reps, seed, fn))
    return {name: MC(est.mean[i], est.se[i], est.reps)
            for i, name in enumerate(["h", "mlp0_mlp0", "attn0_mlp0"])}


def attn0_intra_similarity(T: int, n_layers: int, *, d: int = 2048, n_seqs: int = 200,
                           include_diagonal: bool = True, seed: int = 0) -> MC:
    """Mean intra-sequence cosine after each of L causal Attn0 layers on Gaussian sequences.

    Attn0 has no parameters, so replicates are sequences (independent): per-layer (L+1,)."""
    cfg = block_config(d=d, n_layers=n_layers, block="attn_only", attention="attn0_causal",
                       max_seq_len=T)
    params = model.init(cfg, jax.random.key(0))
    x = jax.random.normal(jax.random.key(seed), (n_seqs, T, d))

    @functools.partial(jax.jit, compiler_options=OPTIMISED)
    def run(x_NTd):
        hid = jax.vmap(lambda s: model.forward(params, cfg, embeds_Td=s, return_hidden=True).hidden)(x_NTd)
        f = lambda h: mean_pairwise_cosine(h, include_diagonal)  # noqa: E731
        return jax.vmap(jax.vmap(f))(hid)

    return _mc(run(x))


class PositionVariance(NamedTuple):
    variance: MC  # per-position variance of the aggregated output o_i, (T,)
    value_variance: MC  # variance of the values v (scalar)
    score_std: MC  # std of the attention scores q.k / sqrt(d_k) (scalar)


def attention_output_variance(T: int, *, d: int = 768, n_heads: int = 12, n_seqs: int = 64,
                              reps: int = 16, uniform: bool = False, seed: int = 0) -> PositionVariance:
    """Figure 9: the variance of o_i = sum_j A_ij v_j at each position of a random pre-LayerNorm
    softmax attention block (before W_O), on Gaussian inputs with the embedding's std.

    ``uniform`` replaces the softmax weights by the causal running average (Attn0 weights)."""
    cfg = block_config(d=d, n_layers=1, block="attn_only", norm="layernorm", n_heads=n_heads,
                       max_seq_len=T)

    def one_seq(params, x_Td):
        blk = params["layers_0"]
        xn = layers.norm(blk["attn_norm"], cfg, x_Td)
        A_HTT, v_THK = layers.attention_weights(blk["attn"], cfg, xn, None)
        if uniform:
            A_HTT = jnp.broadcast_to(jnp.asarray(running_average_matrix(T)), A_HTT.shape)
        o_THK = jnp.einsum("hts,shk->thk", A_HTT, v_THK)
        q = layers.linear(blk["attn"]["q_proj"], xn).reshape(T, n_heads, -1)
        k = layers.linear(blk["attn"]["k_proj"], xn).reshape(T, n_heads, -1)
        s = jnp.einsum("thk,shk->hts", q, k) / jnp.sqrt(q.shape[-1])
        return (o_THK**2).mean((1, 2)), (v_THK**2).mean(), (s**2).mean()

    def fn(params, key):
        x = cfg.init_std * jax.random.normal(key, (n_seqs, T, d))
        var_o, var_v, s2 = jax.vmap(lambda s: one_seq(params, s))(x)
        return jnp.concatenate([var_o.mean(0), var_v.mean()[None], jnp.sqrt(s2.mean())[None]])

    r = _replicates(cfg, reps, seed, fn)
    return PositionVariance(_mc(r[:, :T]), _mc(r[:, T]), _mc(r[:, T + 1]))


