"""Attention sinks: the first-token attention mass and the sink rate (paper Sec. 6.2.1).

The metric is Gu et al.'s, as the paper states it. For layer l and head h of a sequence of
length T with causal attention probabilities A (T, T),

    alpha^1_{l,h} = (1/T) sum_{i=1..T} A_{l,h}[i, 1],

including i = 1, where A[1, 1] = 1: every head has alpha^1 >= 1/T (the "1/T floor"), so at
T = 32 a head is never below 0.031. A head is a sink head if alpha^1 > eps (eps = 0.25 in the
paper, 0.3 in Gu et al.), and the sink rate is the share of sink heads among the L H heads.

The paper does not say whether alpha is thresholded per sequence or after averaging over its
100 evaluation sequences; we report both:

  * ``rate``: the sink rate of each sequence, averaged over sequences (with its standard error);
  * ``rate_of_mean_alpha``: the share of heads whose alpha^1, averaged over sequences, is > eps.

We also report ``alpha_LH``, the mean attention mass on the first token per layer and head
(alpha^1 averaged over sequences), and ``alpha_excl_LH``, the same without the query i = 1
((1/(T-1)) sum_{i>=2} A[i, 1]), which has no 1/T floor.

Gu et al.'s reporting (ICLR 2025) defines the metric for every key k (1-based) as the average
attention key k receives from the queries that can see it,

    alpha_k = (1/(T - k + 1)) sum_{i=k..T} A[i, k],

so alpha_1 is alpha^1 above; a head is a sink when alpha_1 > eps = 0.3, thresholded per sample,
layer and head (our ``rate``), at T = 64 on 100 held-out sequences (the command's ``--setting
gu``). ``key_alpha`` gives alpha_k for every k (``all_keys=True``: ``alpha_keys_SLHT``).

Maps come from ``model.forward(..., return_attention=True)``, which returns the probabilities
the layers used (the eager, non-fused softmax), so any model the functional API runs works.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.defaults import SINK_EPS as DEFAULT_EPS
from bornbiased_jax.errors import UserError
from bornbiased_jax.stats import mean_se
from bornbiased_jax.sweep import run_probe


def check_eps(eps: float) -> float:
    """eps must lie in (0, 1): alpha^1 is a mean of probabilities, so it lies in [1/T, 1]."""
    if not (isinstance(eps, (int, float)) and 0.0 < float(eps) < 1.0):
        raise UserError(f"the sink threshold eps must lie in the open interval (0, 1) "
                        f"(the paper uses 0.25, Gu et al. 0.3), got {eps!r}")
    return float(eps)


def first_token_alpha(A_LHTT: jax.Array) -> tuple[jax.Array, jax.Array]:
    """alpha^1 (L, H) of one sequence, and alpha^1 without the query i = 1 (L, H).

    ``A_LHTT`` are causal probabilities with every query row (Q = T); T >= 2 for the second."""
    if A_LHTT.ndim != 4 or A_LHTT.shape[-1] != A_LHTT.shape[-2]:
        raise UserError(f"expected attention maps of shape (L, H, T, T) with every query, "
                        f"got {A_LHTT.shape}")
    col_LHT = A_LHTT[..., :, 0].astype(jnp.float32)
    T = col_LHT.shape[-1]
    alpha_LH = col_LHT.mean(-1)
    excl_LH = col_LHT[..., 1:].mean(-1) if T > 1 else jnp.full_like(alpha_LH, jnp.nan)
    return alpha_LH, excl_LH


def key_alpha(A_LHTT: jax.Array) -> jax.Array:
    """alpha_k (L, H, T) of one sequence for every key k: the column sum of A over the queries
    i >= k divided by their number T - k + 1 (1-based k; alpha_1 is alpha^1)."""
    A = A_LHTT.astype(jnp.float32)
    T = A.shape[-1]
    return A.sum(-2) / (T - jnp.arange(T, dtype=jnp.float32))


@dataclasses.dataclass
class SinkResult:
    """The sink metric of one model at one sequence length T over S sequences."""

    T: int
    n_seqs: int
    eps: float
    alpha_SLH: np.ndarray  # alpha^1 per sequence, layer and head
    alpha_excl_SLH: np.ndarray  # the same without the query i = 1
    alpha_keys_SLHT: np.ndarray | None = None  # alpha_k for every key k (all_keys=True)

    @property
    def alpha_LH(self) -> np.ndarray:
        """Mean attention mass on the first token per layer and head."""
        return self.alpha_SLH.mean(0)

    @property
    def rate_S(self) -> np.ndarray:
        """The sink rate of each sequence: share of heads with alpha^1 > eps."""
        return (self.alpha_SLH > self.eps).mean(axis=(1, 2))

    @property
    def rate(self) -> float:
        return float(self.rate_S.mean())

    @property
    def rate_se(self) -> float:
        """Standard error of ``rate`` over sequences (0 for a single sequence)."""
        return mean_se(self.rate_S)[1] if len(self.rate_S) > 1 else 0.0

    @property
    def rate_of_mean_alpha(self) -> float:
        return float((self.alpha_LH > self.eps).mean())

    @property
    def alpha_keys_LHT(self) -> np.ndarray | None:
        """alpha_k per layer, head and key, averaged over sequences (None unless measured)."""
        return None if self.alpha_keys_SLHT is None else self.alpha_keys_SLHT.mean(0)

    def to_json(self) -> dict:
        out = {"T": self.T, "n_seqs": self.n_seqs, "eps": self.eps, "sink_rate": self.rate,
               "sink_rate_se": self.rate_se, "sink_rate_of_mean_alpha": self.rate_of_mean_alpha,
               "sink_rate_per_seq": self.rate_S.round(6).tolist(),
               "alpha_floor": 1.0 / self.T,
               "alpha_LH": self.alpha_LH.round(6).tolist(),
               "alpha_excl_first_query_LH": self.alpha_excl_SLH.mean(0).round(6).tolist()}
        if self.alpha_keys_SLHT is not None:
            out["alpha_k_LHT"] = self.alpha_keys_LHT.round(6).tolist()
        return out


def sink_result(A_SLHTT: np.ndarray | jax.Array, eps: float = DEFAULT_EPS,
                all_keys: bool = False) -> SinkResult:
    """The sink metric of attention maps (S, L, H, T, T) given directly (e.g. hand-built);
    with ``all_keys`` also alpha_k for every key k."""
    eps = check_eps(eps)
    A = jnp.asarray(A_SLHTT)
    if A.ndim != 5:
        raise UserError(f"expected attention maps of shape (S, L, H, T, T), got {A.shape}")
    alpha, excl = jax.vmap(first_token_alpha)(A)
    keys = np.asarray(jax.vmap(key_alpha)(A), np.float64) if all_keys else None
    return SinkResult(int(A.shape[-1]), int(A.shape[0]), eps, np.asarray(alpha, np.float64),
                      np.asarray(excl, np.float64), keys)


def measure_sinks(params: dict, cfg: ModelConfig, tokens_ST: np.ndarray,
                  eps: float = DEFAULT_EPS, batch: int | None = None,
                  all_keys: bool = False, progress: bool = False) -> SinkResult:
    """The sink metric of a model on S token sequences of one length T (with ``all_keys``,
    alpha_k for every key k too; ``progress``: a progress bar of the chunks done).

    The maps (L, H, T, T) of ``batch`` sequences at a time live in memory (by default about
    64 MiB of them); only alpha leaves the compiled function (``sweep.run_probe``)."""
    eps = check_eps(eps)
    model.check_has_attention(cfg, "there are no attention sinks to measure")
    tokens_ST = np.asarray(tokens_ST)
    if tokens_ST.ndim != 2 or len(tokens_ST) == 0:
        raise UserError(f"expected token ids of shape (S, T) with S >= 1, got {tokens_ST.shape}")
    S, T = tokens_ST.shape
    model.check_seq_len(cfg, T)
    if tokens_ST.min() < 0 or tokens_ST.max() >= cfg.vocab_size:
        raise UserError(f"token ids must lie in [0, {cfg.vocab_size}) for {cfg.name}, got "
                        f"[{tokens_ST.min()}, {tokens_ST.max()}]")
    if batch is None:
        per_seq = 4 * cfg.n_layers * cfg.n_heads * T * T
        batch = int(max(1, min(S, (64 << 20) // per_seq)))
    out = run_probe(alpha_probe(cfg, all_keys), cfg, params, tokens_ST.astype(np.int32),
                    seq_batch=batch, progress=progress, desc=f"sinks T={T}")
    keys = np.asarray(out[2], np.float64) if all_keys else None
    return SinkResult(T, S, eps, out[0].astype(np.float64), out[1].astype(np.float64), keys)


@functools.lru_cache(maxsize=32)
def alpha_probe(cfg: ModelConfig, all_keys: bool = False):
    """probe(params, tokens (T,)) -> (alpha^1 (L, H), alpha^1 without the query i = 1 (L, H)),
    and with ``all_keys`` alpha_k (L, H, T) as a third output."""
    def probe(params, tokens_T):
        A = model.forward(params, cfg, tokens_T, return_attention=True).attention
        return first_token_alpha(A) + ((key_alpha(A),) if all_keys else ())
    return probe


def text_windows(ids: Sequence[int], T: int, n: int, seed: int = 0) -> np.ndarray:
    """``n`` distinct, non-overlapping windows of T consecutive tokens of ``ids`` (n, T), drawn
    at random (numpy seed ``seed``); a ``UserError`` if the text has fewer than n windows."""
    ids = np.asarray(ids, np.int32)
    available = len(ids) // T
    if available < n:
        raise UserError(f"the text has {len(ids)} tokens, {available} windows of length {T}; "
                        f"{n} sequences were asked for: use fewer sequences or more text")
    pick = np.sort(np.random.default_rng(seed).choice(available, size=n, replace=False))
    return ids[: available * T].reshape(available, T)[pick]


def bos_windows(ids: Sequence[int], T: int, n: int, seed: int = 0,
                bos: int | None = None) -> np.ndarray:
    """:func:`text_windows` of length T, or with ``bos`` (a token id) windows of T - 1 text
    tokens with ``bos`` prepended (the windows a ``train --bos`` run learned on)."""
    if bos is None:
        return text_windows(ids, T, n, seed)
    if T < 2:
        raise UserError(f"a window with a BOS token needs T >= 2, got {T}")
    win = text_windows(ids, T - 1, n, seed)
    return np.concatenate([np.full((n, 1), bos, np.int32), win], axis=1)


def sink_rates_over_lengths(params: dict, cfg: ModelConfig, ids: Sequence[int] | None,
                            lengths: Sequence[int], num_seqs: int, eps: float = DEFAULT_EPS,
                            seed: int = 0, on_result=None, bos: int | None = None,
                            windows=None, all_keys: bool = False,
                            progress: bool = False) -> list[SinkResult]:
    """The sink metric at each length T of ``lengths`` (Figure 12's axis), each on ``num_seqs``
    random windows of T consecutive tokens of the text ``ids`` (window seed ``seed + T``;
    with ``bos``, BOS + T - 1 text tokens: :func:`bos_windows`), or on ``windows(T)`` when
    given (e.g. Bigram-Backcopy sequences). ``on_result(result)``, if given, is called after
    each length (e.g. to print it); ``progress``: a progress bar per length."""
    results = []
    for T in lengths:
        win = (windows(T) if windows is not None
               else bos_windows(ids, T, num_seqs, seed=seed + T, bos=bos))
        results.append(measure_sinks(params, cfg, win, eps, all_keys=all_keys,
                                     progress=progress))
        if on_result is not None:
            on_result(results[-1])
    return results
