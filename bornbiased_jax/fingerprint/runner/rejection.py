"""Lineage tests over many model pairs: the registered tests on a bank of features, and rejection
rates whose intervals say how much the shared models matter (a false-positive rate over
unrelated pairs, a power over related ones).

Every model's features are computed once on one shared token probe set, and each pair
(base a, suspect b) runs

  * 'paper'       Algorithm 1 (Student t, mean of 10 Gaussian-null draws' p-values; the draws
                  come from one bank shared by every pair, as ``paper_test(null_draws=...)``);
  * 'official'    the released code's 2 Phi-bar(z);
  * 'calibrated'  'spearman_all' against K fresh initialisations of the architecture (their
                  rank-standardised features are computed once: ``NullBank``);
  * 'permutation' the residual-basis permutation test (fingerprint/methods/permutation.py);
  * 'aligned'     'spearman_aligned' against the same K fresh initialisations: the mean |rho|
                  after the best one-to-one alignment of A's dimensions to B's, unchanged by a
                  renamed (permuted, rescaled) basis; exact when the base is an initialisation.

Pairs drawn from one pool of M models share models, so they are not independent trials.
:func:`rate` therefore reports, beside the Clopper-Pearson interval over all pairs (which treats
them as independent and is too narrow), the interval over M // 2 *disjoint* pairs (0, 1),
(2, 3), ... (independent under H0; wide) and a jackknife over models (leave one model out,
recompute the rate over the remaining pairs), whose standard error accounts for the sharing.
Where rows repeat a pair of models (several edits or checkpoints of the same two), it adds the
interval with the pair as the trial (``per_pair``), which a rate of no rejections, where the
jackknife's standard error is 0, still bounds only by the number of pairs.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Sequence

import numpy as np

from bornbiased_jax.fingerprint.methods import calibrated as C
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods import permutation as P
from bornbiased_jax.fingerprint.runner import registry
from bornbiased_jax.fingerprint.methods.algorithm1 import TRIALS, null_taus, paper_test
from bornbiased_jax.fingerprint.methods.official import official_test
from bornbiased_jax.stats import clopper_pearson

# Every registered test's variants (``registry.Entry.rejection``): beside one per test, the
# permutation test with Pearson's r (the statistic is chosen by power); in the registry's
# order (a study passes its records' order to :func:`rates` and :func:`power`).
VARIANTS = registry.rejection_variants()
ALPHAS = (0.01, 0.05)


@dataclasses.dataclass(frozen=True)
class NullBank:
    """What every pair shares: the calibrated test's null models (rank-standardised features of
    K fresh initialisations, (K, n, d) float32) and the paper test's Gaussian-null draws."""

    null_z: np.ndarray
    paper_draws: tuple[np.ndarray, ...]

    @classmethod
    def build(cls, null_features: Iterable[np.ndarray], n: int, d: int,
              seed: int = 0) -> "NullBank":
        z = np.stack([D.RankedFeatures.of(F).z_nd for F in null_features]).astype(np.float32)
        rng = np.random.default_rng(seed)
        draws = tuple(null_taus(n, d, D.default_size(d), rng) for _ in range(TRIALS))
        return cls(z, draws)


@dataclasses.dataclass(frozen=True)
class Prepared:
    """One model's features and their standardised columns, computed once for all its pairs."""

    F: np.ndarray
    spearman: np.ndarray
    pearson: np.ndarray

    @classmethod
    def of(cls, F: np.ndarray) -> "Prepared":
        return cls(np.asarray(F), P.standardised(F, "spearman"), P.standardised(F, "pearson"))


def aligned_null(B: Prepared | np.ndarray, bank: NullBank) -> np.ndarray:
    """The aligned statistic of every null model of ``bank`` against suspect B, (K,): it
    depends on B alone, so a suspect in many pairs needs it once."""
    B = B if isinstance(B, Prepared) else Prepared.of(B)
    n = B.F.shape[0]
    zb = B.spearman.astype(np.float32)
    return np.array([C.aligned_from_correlations((z.T @ zb) / n) for z in bank.null_z])


def pair_p_values(A: Prepared | np.ndarray, B: Prepared | np.ndarray, bank: NullBank, *,
                  permutations: int = P.DEFAULT_PERMUTATIONS, seed: int = 0,
                  b_aligned_null: np.ndarray | None = None) -> dict:
    """The tests' primary p-values (and the permutation test's z) of one pair.

    The calibrated statistic 'spearman_all' is the mean matched Spearman rho, i.e. the mean
    diagonal of the permutation test's C: both come from one matrix product; 'aligned' is the
    best one-to-one alignment of the same C (``b_aligned_null``: :func:`aligned_null` of B,
    computed here when not given)."""
    A = A if isinstance(A, Prepared) else Prepared.of(A)
    B = B if isinstance(B, Prepared) else Prepared.of(B)
    n, d = D.check_features(A.F, B.F)
    paper = paper_test(A.F, B.F, null_draws=bank.paper_draws)
    official = official_test(A.F, B.F)
    C_s = (A.spearman.T @ B.spearman) / n
    flat = bank.null_z.reshape(len(bank.null_z), -1)
    null_stats = (flat @ B.spearman.ravel().astype(np.float32)).astype(np.float64) / (n * d)
    calibrated, _, _ = C.exchangeable_p(P.matched_statistic(C_s), null_stats)
    if b_aligned_null is None:
        b_aligned_null = aligned_null(B, bank)
    # A's statistic from the same float32 product as the null models'
    s_aligned = C.aligned_from_correlations((A.spearman.astype(np.float32).T
                                             @ B.spearman.astype(np.float32)) / n)
    aligned, _, aligned_z = C.exchangeable_p(s_aligned, b_aligned_null)
    perm = P.test_of_correlation(C_s, n, permutations=permutations,
                                 rng=np.random.default_rng(seed))
    pearson = P.test_of_correlation((A.pearson.T @ B.pearson) / n, n, statistic="pearson",
                                    permutations=permutations, rng=np.random.default_rng(seed))
    return {"paper": paper.p_values["t_mean"], "paper_u": paper.p_values["u_mean"],
            "official": official.p, "calibrated": calibrated, "permutation": perm.p,
            "permutation_normal": perm.p_values["normal"], "permutation_z": perm.details["z"],
            "matched_rho": perm.statistic, "permutation_pearson": pearson.p,
            "permutation_pearson_z": pearson.details["z"], "aligned": aligned,
            "aligned_z": aligned_z}


def run_pairs(features: Sequence[np.ndarray], pairs: Sequence[tuple[int, int]],
              bank: NullBank, *, permutations: int = P.DEFAULT_PERMUTATIONS) -> list[dict]:
    """``pair_p_values`` of every (base a, suspect b) in ``pairs`` of ``features``."""
    prepared = {i: Prepared.of(features[i]) for i in sorted({i for pair in pairs for i in pair})}
    nulls = {b: aligned_null(prepared[b], bank) for b in sorted({b for _, b in pairs})}
    return [{"a": a, "b": b, **pair_p_values(prepared[a], prepared[b], bank,
                                              permutations=permutations, seed=i,
                                              b_aligned_null=nulls[b])}
            for i, (a, b) in enumerate(pairs)]


def all_pairs(M: int) -> list[tuple[int, int]]:
    """The M(M-1)/2 unordered pairs (a < b) of M models, base a."""
    return [(a, b) for a in range(M) for b in range(a + 1, M)]


def rate(rows: Sequence[dict], test: str, alpha: float) -> dict:
    """Rejections of ``test`` at ``alpha`` over ``rows`` (pairs with 'a', 'b' and p-values):
    the rate, its Clopper-Pearson 95 % interval over all pairs (as if independent), the same
    over the disjoint pairs {2i, 2i+1} among them, a jackknife-over-models standard error
    with its normal 95 % interval (clipped to [0, 1]), and, where rows repeat an (a, b) pair,
    ``per_pair``: the Clopper-Pearson interval with the P distinct pairs as the trials, at the
    rate observed (an effective count rate x P: each pair's rows as one outcome, the most
    dependent they can be, so at least as wide as any lesser dependence within a pair needs)."""
    x = np.array([r[test] <= alpha for r in rows], dtype=float)
    k, N = int(x.sum()), len(x)
    out = {"rejections": k, "pairs": N, "rate": k / N if N else math.nan,
           "ci95": list(clopper_pearson(k, N)) if N else [math.nan, math.nan]}
    distinct = len({(r["a"], r["b"]) for r in rows})
    if distinct < N:
        out["per_pair"] = {"pairs": distinct,
                           "ci95": list(clopper_pearson(k * distinct / N, distinct))}
    disjoint = [r[test] <= alpha for r in rows if r["a"] % 2 == 0 and r["b"] == r["a"] + 1]
    if disjoint:
        kd = int(sum(disjoint))
        out["disjoint"] = {"rejections": kd, "pairs": len(disjoint),
                           "ci95": list(clopper_pearson(kd, len(disjoint)))}
    models = sorted({r["a"] for r in rows} | {r["b"] for r in rows})
    if len(models) > 2 and N:
        loo = []
        for m in models:
            keep = [xi for xi, r in zip(x, rows) if m not in (r["a"], r["b"])]
            if keep:
                loo.append(float(np.mean(keep)))
        loo = np.asarray(loo)
        se = math.sqrt((len(loo) - 1) / len(loo) * ((loo - loo.mean()) ** 2).sum())
        out["jackknife"] = {"se": se, "ci95": [max(0.0, out["rate"] - 1.96 * se),
                                               min(1.0, out["rate"] + 1.96 * se)]}
    return out


def rates(rows: Sequence[dict], tests: Sequence[str] = VARIANTS,
          alphas: Sequence[float] = ALPHAS) -> dict:
    """{test: {alpha: rate(...)}}."""
    return {t: {str(a): rate(rows, t, a) for a in alphas} for t in tests}


def power(rows: Sequence[dict], tests: Sequence[str] = VARIANTS, alpha: float = 0.01) -> dict:
    """{test: {"rejections", "trials"}} of related pairs (every row a true lineage)."""
    return {t: {"rejections": int(sum(r[t] <= alpha for r in rows)), "trials": len(rows)}
            for t in tests}


def relative_distance(params: dict, origin: dict) -> float:
    """||theta - theta_0|| / ||theta_0|| over every parameter: how far training moved a model
    from the model it started from."""
    import jax

    num = sum(float(np.sum((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
              for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(origin)))
    den = sum(float(np.sum(np.asarray(b, np.float64) ** 2)) for b in jax.tree.leaves(origin))
    return math.sqrt(num / den)
