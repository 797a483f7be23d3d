"""A lineage test whose null is made of real models: exchangeability with fresh initialisations.

H0: the suspect B does not descend from the base A's initialisation. If A *is* an
initialisation (a seed of a known architecture), then under H0 A is independent of B and
exchangeable with any other random initialisation A_1, ..., A_K of the same architecture. So for
any statistic s, the K + 1 values s(A, B), s(A_1, B), ..., s(A_K, B) are exchangeable, and

    p = (1 + #{k : s(A_k, B) >= s(A, B)}) / (K + 1)

is an exact p-value: P(p <= alpha) <= alpha for every alpha, whatever the models' outputs look
like. In particular it includes what the paper's Gaussian null leaves out: all models see the
same inputs, and unrelated models' outputs co-vary across those inputs. The exact p cannot be
below 1 / (K + 1); a Gaussian-tail extrapolation Phi-bar((s - mean_null) / sd_null) is reported
beside it (an approximation, not exact; it relies on the null statistics being near-normal).

Caveat for Gaussian inputs with per-seed embeddings: the inputs' mean and std are those of A's
embedding matrix (``probes.inputs.probe_inputs``), so the inputs are a function of A and not
of the A_k. The p stays exact when the features do not otherwise depend on A's embedding: Gaussian
inputs bypass the embedding lookup, and every other parameter (blocks, final norm, learned
positions, an untied LM head) is drawn from its own key, independently of the embedding, so
for the 'normed' and 'prenorm' outputs, and for 'logits' with an untied head, the K + 1
statistics are exchangeable given the inputs. With 'logits' and a *tied* head (W_U = W_E^T) the
features of A use the very matrix that set the inputs' scale while the A_k's do not, so the
exchangeability is no longer strict and the p-value is approximate; the link runs through two
numbers (the mean and std of V x d entries, whose relative seed-to-seed spread is about
1/sqrt(V d)), so the departure should be small, but it is not zero. Token inputs, or a shared
embedding (``--shared-embedding``: the same matrix for every seed), remove it.

When A is itself trained, the exchangeability no longer holds: the null then assumes that a
trained model unrelated to B correlates with B no more than a fresh initialisation does. Training
on similar data can make unrelated trained models more alike than fresh inits, so the test can be
anti-conservative there; check it on cross-seed pairs (experiments/seedprint_power.py).

Statistics (``STATISTICS``), chosen by measured power (docs/seedprint.md):
  'spearman_all' - mean over all d_out dimensions of Spearman's rho between A's and B's outputs
                   across the inputs; one matrix product per null model, no selection step;
  'spearman_S'   - the same mean over S = top-m(A) intersect top-m(B) (Algorithm 1's dims);
  'tau_S'        - Algorithm 1's mean Kendall tau over S (scipy, one call per dimension: slow
                   with many null models);
  'spearman_aligned' - mean |Spearman's rho| over the best one-to-one matching of A's
                   dimensions to B's (:func:`aligned_spearman`): unchanged by permuting or
                   rescaling B's residual basis, so a copy renamed that way is still found;
                   exact, like the others, when the base is an initialisation, and unusable
                   with a trained base (trained models align with one another far better
                   than with fresh inits: measured, every unrelated trained pair rejected);
  'residual_all' - mean over all dimensions of the Pearson correlation of A's and B's outputs
                   after subtracting the *common response* M = the mean output of all K + 1
                   initialisations (A and the A_k) on each input. M is a symmetric function of
                   the K + 1 models, so the K + 1 statistics stay exchangeable and the p-value
                   exact; subtracting M removes what every initialisation shares (the input
                   passed through the residual stream), leaving the seed-specific part.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Iterable

import numpy as np
from scipy import special

from bornbiased_jax.defaults import CALIBRATED_STATISTIC as DEFAULT_STATISTIC
from bornbiased_jax.defaults import CALIBRATED_STATISTICS as STATISTICS
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods.result import ALPHA, LineageResult, check_alpha


def statistic(name: str, A: D.RankedFeatures, B: D.RankedFeatures,
              m: int) -> tuple[float, np.ndarray, np.ndarray]:
    """(value, dims, per-dimension correlations) of statistic ``name`` for the pair (A, B)."""
    if name == "spearman_all":
        rho = D.spearman_per_dim(A, B)
        return float(rho.mean()), np.arange(len(rho)), rho
    if name == "spearman_aligned":
        return aligned_spearman(A, B)
    S = np.intersect1d(D.top_m(A.mean_d, m), D.top_m(B.mean_d, m))
    if len(S) == 0:
        return 0.0, S, np.zeros(0)  # no shared dimensions: no evidence of association
    if name == "spearman_S":
        n = A.z_nd.shape[0]
        rho = np.einsum("ns,ns->s", A.z_nd[:, S], B.z_nd[:, S], dtype=np.float64) / n
        return float(rho.mean()), S, rho
    if name == "tau_S":
        tau = D.kendall_per_dim(A.raw_nd, B.raw_nd, S)
        tau = np.nan_to_num(tau)  # a constant column carries no association
        return float(tau.mean()), S, tau
    raise UserError(f"unknown calibrated statistic {name!r}; choose one of {STATISTICS}")


def aligned_spearman(A: D.RankedFeatures, B: D.RankedFeatures
                     ) -> tuple[float, np.ndarray, np.ndarray]:
    """'spearman_aligned': the mean |Spearman rho| over the one-to-one matching of A's output
    dimensions to B's that maximises it (the assignment problem on |rho| of every pair of
    dimensions, scipy's ``linear_sum_assignment``). Returns (value, B's dimension matched to
    each of A's, |rho| of each matched pair).

    It does not change when B's dimensions are permuted, or multiplied by any non-zero
    numbers (a negative one reverses the ranks and flips rho's sign): the edits that keep a
    model's function while renaming its residual basis (``fingerprint.edits.obfuscation``) leave it
    as it is, where the per-dimension statistics compare dimension j with dimension j."""
    from scipy.optimize import linear_sum_assignment

    n = A.z_nd.shape[0]
    rho = np.abs(A.z_nd.T.astype(np.float64) @ B.z_nd.astype(np.float64)) / n  # (d_A, d_B)
    rows, cols = linear_sum_assignment(rho, maximize=True)
    matched = rho[rows, cols]
    return float(matched.mean()), cols, matched


def aligned_from_correlations(C: np.ndarray) -> float:
    """The aligned statistic of a (d_A, d_B) matrix of correlations: the mean |C| over the
    one-to-one matching of rows to columns that maximises it."""
    from scipy.optimize import linear_sum_assignment

    a = np.abs(np.asarray(C))
    rows, cols = linear_sum_assignment(a, maximize=True)
    return float(a[rows, cols].mean())


def residual_stats(F_A: np.ndarray, nulls: list[np.ndarray], F_B: np.ndarray) -> np.ndarray:
    """'residual_all' of (A, B) and of every (A_k, B): K + 1 values, A's first, with the common
    response M = mean of F_A and the F_k (n, d_out)."""
    models = [F_A, *nulls]
    M = sum(np.asarray(F, dtype=np.float64) for F in models) / len(models)
    return residual_corrs(models, M, F_B)


def residual_corrs(models: Iterable[np.ndarray], M_nd: np.ndarray, F_B: np.ndarray) -> np.ndarray:
    """r_j = mean over dimensions of the Pearson correlation over the n inputs of
    (F_j - M, F_B - M), for each F_j (n, d_out) of ``models`` (an iterable: one model in float64
    at a time); a dimension with zero variance counts as r = 0."""
    b = np.asarray(F_B, dtype=np.float64) - M_nd
    b = b - b.mean(0)
    b_norm = np.sqrt((b * b).sum(0))
    out = []
    for F in models:
        a = np.asarray(F, dtype=np.float64) - M_nd
        a = a - a.mean(0)
        den = np.sqrt((a * a).sum(0)) * b_norm
        r = np.divide((a * b).sum(0), den, out=np.zeros(den.shape), where=den > 0)
        out.append(r.mean())
    return np.asarray(out)


def exchangeable_p(s: float, null: np.ndarray) -> tuple[float, float, float]:
    """(exact p, Gaussian-tail p, z) of an observed statistic against K null statistics."""
    null = np.asarray(null, dtype=np.float64)
    K = null.size
    if K == 0:
        raise UserError("the calibrated test needs at least one null model (K >= 1)")
    exact = (1 + int(np.sum(null >= s))) / (K + 1)
    sd = null.std(ddof=1) if K > 1 else 0.0
    if sd > 0:
        z = float((s - null.mean()) / sd)
        gauss = float(np.exp(special.log_ndtr(-z)))
    else:
        z, gauss = np.nan, exact
    return exact, gauss, z


def calibrated_test(F_A: np.ndarray, F_B: np.ndarray,
                    null_features: Iterable[np.ndarray] | None = None, *,
                    null_stats: np.ndarray | None = None, statistic_name: str = DEFAULT_STATISTIC,
                    m: int | None = None, alpha: float = ALPHA) -> LineageResult:
    """Exchangeability test of base ``F_A`` against suspect ``F_B``.

    Args:
      null_features: the features (n, d_out) of K fresh initialisations of A's architecture on
        the same inputs (an iterable, so they can be streamed; each an array or its
        ``dims.RankedFeatures``, prepared once for many pairs), or
      null_stats: their statistics s(A_k, B), already computed.
      statistic_name: one of ``STATISTICS``.
      m: top-m size for the statistics on S (default ``identity_dims.default_size(d_out)``).
    Returns:
      p-values 'exact' (primary) and 'gaussian_tail'.
    """
    if statistic_name not in STATISTICS:
        raise UserError(f"unknown calibrated statistic {statistic_name!r}; choose one of "
                        f"{STATISTICS}")
    n, d_out = D.check_features(F_A, F_B)
    alpha = check_alpha(alpha)
    m = D.check_size("m", D.default_size(d_out) if m is None else m, d_out)
    A, B = D.RankedFeatures.of(F_A), D.RankedFeatures.of(F_B)
    if statistic_name == "residual_all":
        if null_features is None:
            raise UserError("the 'residual_all' statistic needs the null models' features")
        nulls = [_raw(F_k) for F_k in null_features]
        if not nulls:
            raise UserError("the calibrated test needs at least one null model (K >= 1)")
        for F_k in nulls:
            D.check_features(F_k, F_B)
        all_stats = residual_stats(F_A, nulls, F_B)
        s, null_stats = float(all_stats[0]), all_stats[1:]
        dims, corr = np.arange(d_out), np.zeros(0)
    else:
        s, dims, corr = statistic(statistic_name, A, B, m)
    if null_stats is None:
        if null_features is None:
            raise UserError("give null_features or null_stats")
        null_stats = []
        for F_k in null_features:
            D.check_features(_raw(F_k), F_B)
            ranked = F_k if isinstance(F_k, D.RankedFeatures) else D.RankedFeatures.of(F_k)
            null_stats.append(statistic(statistic_name, ranked, B, m)[0])
    null_stats = np.asarray(null_stats, dtype=np.float64)
    exact, gauss, z = exchangeable_p(s, null_stats)
    K = null_stats.size
    note = ""
    if alpha * (K + 1) < 1:
        note = (f"with K = {K} null models the exact p is at least 1/(K+1) = {1 / (K + 1):.3g} "
                f"> alpha = {alpha}: it can never reject; use K >= {math.ceil(1 / alpha) - 1}")
    details = {"K": K, "statistic_name": statistic_name, "m": m, "z": z,
               "null_mean": float(null_stats.mean()),
               "null_sd": float(null_stats.std(ddof=1)) if K > 1 else np.nan,
               "min_exact_p": 1 / (K + 1)}
    kind = {"tau_S": "kendall_tau", "residual_all": "pearson_r_residual",
            "spearman_aligned": "abs_spearman_rho_aligned"}.get(statistic_name, "spearman_rho")
    return LineageResult("calibrated", {"exact": exact, "gaussian_tail": gauss}, alpha, n,
                         d_out, dims, corr, kind, s, null_stats, details, note)


def _raw(F) -> np.ndarray:
    """The features of a null model given as an array or as its ``dims.RankedFeatures``."""
    return F.raw_nd if isinstance(F, D.RankedFeatures) else F


def check_settings(s) -> None:
    """A UserError when the calibrated test cannot run with ``s`` (``compare.Settings``)."""
    if s.statistic == "spearman_aligned" and s.output == "logits":
        raise UserError("the calibrated test's 'spearman_aligned' statistic aligns residual "
                        "coordinates, which a renaming can move; logits are indexed by "
                        "token ids, which it cannot (and a V x V assignment is needlessly "
                        "large): use --feature normed or prenorm with it")


def null_seeds_text(ids) -> str:
    """How a record names the null initialisations' seeds: 'first..last (count)'."""
    return f"{ids[0]}..{ids[-1]} ({len(ids)})"


def from_context(ctx) -> LineageResult:
    """The calibrated test of one pair that ``compare`` prepared (``runner.context.Context``):
    BASE against the null initialisations, with a note where BASE is not one."""
    s = ctx.settings
    r = calibrated_test(ctx.F_A, ctx.F_B, iter(ctx.nulls.F), statistic_name=s.statistic, m=s.m,
                        alpha=s.alpha)
    if not ctx.base.is_init:
        extra = ("the base is not an initialisation, so the null models (fresh inits of "
                 "its architecture) are not exchangeable with it: the p-value assumes "
                 "an unrelated trained model correlates with the suspect no more than "
                 "a fresh init does")
        r = dataclasses.replace(r, note="; ".join(filter(None, [r.note, extra])))
    r.details["null_seeds"] = null_seeds_text(ctx.nulls.seeds)
    return r
