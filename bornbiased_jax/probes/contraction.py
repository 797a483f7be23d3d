"""Contraction probes (paper Sec. 4, Figures 2, 4, 7, 8, 10, Tables 2, 3, Finding 2.2).

Each probe is written for one model and one sequence and returns per-sequence features; the
sweep engine batches it over sequences and seeds, and the reductions here act on its output.

Significance of a mean pairwise cosine ("Avg. Sim" vs 0, Tables 2 and 3). App. B.2 does not
define this test. Pairwise similarities share sequences, so they are dependent and a t-test on
them is invalid. We test H0: E[u] = 0 for the unit vectors u_i (no common direction). Under H0
the N(N-1)/2 pairwise cosines c_ij are *uncorrelated* (Cov(c_ij, c_ik) = E[u_j]^T E[u_i u_i^T]
E[u_k] = 0), so the mean S has variance 2 E[c^2] / (N (N-1)), estimated from the observed c_ij^2
(robust to anisotropy), and z = S / sd is approximately normal when no single direction
dominates the representations' covariance. We report the one-sided log10 p of z, in log space.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig


def last_token_probe(cfg: ModelConfig):
    """probe(params, x) -> {"hidden": (L+1, d) last-token block outputs, "normed": (d,)
    Norm_final of the last token, "top": arg-max next token}."""

    def probe(params, x):
        # Logits at the last position only: the full (T, V) logits are never needed here.
        out = model.forward_input(params, cfg, x, return_hidden=True, last_only=True)
        return {"hidden": out.hidden[:, -1], "normed": out.normed[-1],
                "top": jnp.argmax(out.logits[-1]).astype(jnp.int32)}

    return probe


def intra_sequence_probe(cfg: ModelConfig, include_diagonal: bool = True):
    """probe(params, x) -> (L+1,) mean pairwise cosine between positions of x, per block."""

    def probe(params, x):
        hid = model.forward_input(params, cfg, x, return_hidden=True).hidden  # (L+1, T, d)

        def mean_cos(h_Td):
            u = h_Td / jnp.linalg.norm(h_Td, axis=-1, keepdims=True)
            S = u @ u.T
            T = h_Td.shape[0]
            return S.mean() if include_diagonal else (S.sum() - T) / (T * (T - 1))

        return jax.vmap(mean_cos)(hid)

    return probe


def mlp_preactivation_probe(cfg: ModelConfig, layer: int = 0):
    """Figure 6: the first MLP's pre-activations at the last position, with and without its
    LayerNorm: probe(params, x) -> {"norm": Norm(x) W_up, "nonorm": x W_up}, each (d_ff,),
    where x is the MLP's input in an MLP-only model (the embeddings for ``layer`` 0)."""
    from bornbiased_jax import layers

    if cfg.block != "mlp_only":
        raise ValueError("the pre-activation probe reads an MLP-only model's block inputs")

    def probe(params, x):
        hid = model.forward_input(params, cfg, x, return_hidden=True).hidden
        blk = params[f"layers_{layer}"]
        x_Td = hid[layer]
        w = blk["mlp"]["up_proj"]
        return {"norm": layers.linear(w, layers.norm(blk["mlp_norm"], cfg, x_Td))[-1],
                "nonorm": layers.linear(w, x_Td)[-1]}

    return probe


class Similarity(NamedTuple):
    mean: float  # mean pairwise cosine over i != j
    sd: float  # sd of the pairwise cosines
    z: float
    log10_p: float  # one-sided, H0: no common direction (see module docstring)


def pairwise_similarity(U_Nd: np.ndarray) -> Similarity:
    """Mean, sd and significance of the pairwise cosine similarity of N vectors."""
    U = np.asarray(U_Nd, np.float64)
    N = U.shape[0]
    if N < 2:
        raise ValueError("need at least two vectors")
    U = U / np.linalg.norm(U, axis=1, keepdims=True)
    C = U @ U.T
    off = C[~np.eye(N, dtype=bool)]
    mean = float(off.mean())
    var0 = 2.0 * float((off**2).mean()) / (N * (N - 1))
    if var0 > 0:
        z = mean / math.sqrt(var0)
    else:  # every pair exactly orthogonal
        z = 0.0
    return Similarity(mean, float(off.std()), z, float(stats.norm.logsf(z) / math.log(10)))


def last_token_sums(out: dict) -> dict:
    """A block's :func:`last_token_probe` outputs ((S, n, ...) arrays) as what Table 1 and
    Figure 2 need of them, a few hundred kB instead of every state: the arg-max tokens ``top``
    (S, n), ``n``, and float64 sums over the block's sequences of the unit last-token states,
    ``unit_blocks`` (S, L+1, d) per block and ``unit_normed`` (S, d) after Norm_final; see
    :func:`mean_similarity_from_sums` and :func:`contraction_direction`."""
    def unit_sum(h):
        h = np.asarray(h, np.float64)
        return (h / np.linalg.norm(h, axis=-1, keepdims=True)).sum(axis=1)

    top = np.asarray(out["top"])
    return {"top": top, "n": np.asarray(top.shape[1], np.int64),
            "unit_blocks": unit_sum(out["hidden"]), "unit_normed": unit_sum(out["normed"])}


def mean_similarity_from_sums(unit_sum: np.ndarray, n: int) -> np.ndarray:
    """The mean pairwise cosine over i != j of n vectors from the sum s of their unit vectors:
    sum_{i != j} u_i . u_j = |s|^2 - n, over n (n - 1) pairs (along the last axis of s)."""
    if n < 2:
        raise ValueError("need at least two vectors")
    s = np.asarray(unit_sum, np.float64)
    return ((s * s).sum(-1) - n) / (n * (n - 1))


def mean_similarity_leave_one_out(unit_sums, ns) -> np.ndarray:
    """The mean pairwise cosine (:func:`mean_similarity_from_sums`) of all the blocks' vectors
    but block b's, for each of the B blocks whose unit-vector sums ``unit_sums`` (B, ..., d)
    and sizes ``ns`` (B,) are given: (B, ...), the values a delete-one-block jackknife
    (``bornbiased_jax.stats.jackknife_se``) turns into a standard error."""
    s = np.asarray(unit_sums, np.float64)
    ns = [int(n) for n in ns]
    if len(ns) != s.shape[0] or len(ns) < 2:
        raise ValueError(f"need one size per block and at least two blocks, got {len(ns)} "
                         f"sizes for {s.shape[0]} blocks")
    total, n = s.sum(0), sum(ns)
    return np.stack([mean_similarity_from_sums(total - s[b], n - ns[b]) for b in range(len(ns))])


def contraction_direction(normed_Nd: np.ndarray) -> np.ndarray:
    """Finding 2.2: the mean of the normalised final last-token representations."""
    U = np.asarray(normed_Nd, np.float64)
    return (U / np.linalg.norm(U, axis=1, keepdims=True)).mean(0)


def direction_top_token(direction_d: np.ndarray, W_U: np.ndarray) -> int:
    """The token whose logit is largest when the contraction direction is the final state."""
    return int(np.argmax(direction_d @ np.asarray(W_U, np.float64)))


def max_dimension_counts(states_Nd: np.ndarray) -> np.ndarray:
    """Figure 10 (bottom): how often each hidden dimension holds the maximum value."""
    return np.bincount(np.argmax(np.asarray(states_Nd), axis=1), minlength=states_Nd.shape[1])


def inter_sequence_profile(cfg: ModelConfig, seeds, inputs, **sweep_kwargs) -> dict:
    """Figures 2, 4, 7 / Table 2: per seed and block, the similarity of last-token states.

    Returns ``blocks`` (S, L+1) and ``final`` (S,) lists of :class:`Similarity` (final = after
    Norm_final), the arg-max tokens ``top`` (S, N) and the Finding 2.2 directions (S, d)."""
    from bornbiased_jax.sweep import sweep

    out = sweep(last_token_probe(cfg), cfg, seeds, inputs, **sweep_kwargs)
    blocks = [[pairwise_similarity(h[:, layer]) for layer in range(h.shape[1])]
              for h in out["hidden"]]
    final = [pairwise_similarity(n) for n in out["normed"]]
    return {"blocks": blocks, "final": final, "top": out["top"],
            "direction": np.stack([contraction_direction(n) for n in out["normed"]]),
            "normed": out["normed"]}
