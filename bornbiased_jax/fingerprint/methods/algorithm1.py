"""Algorithm 1 of the paper (Sec. 6.1.1) as written, with the Gaussian-matrix null.

  1. M(f), M(f') = the top-m dimensions of each model's mean output over the n inputs;
     S = M(f) intersect M(f').
  2. tau_s = Kendall's tau over the inputs of (f(x)_s, f'(x)_s) for s in S.
  3. Null: two independent N(0, 1)^{n x d_out} matrices through steps 1-2 (Algorithm 1 writes N;
     it must be n), giving tau_null.
  4. One-sided tests of tau > tau_null: Student's two-sample t-test (pooled variance,
     ``scipy.stats.ttest_ind(..., alternative="greater")``; the paper does not say which t-test,
     the released code uses this one) and the Mann-Whitney U test (``alternative="greater"``).

p-values are combined two ways: the mean of the p-values of ``trials`` = 10 independent null
draws (Sec. 6.1.2: "p-values averaged over 10 independent trials"), and one test against the
null taus of all trials pooled (the released code). The mean of p-values is not itself a
p-value (it is not uniform under H0); it is reported because the paper's tables report it.

Degenerate cases (Algorithm 1 does not handle them): with S empty there is nothing to test and
every p is 1 by convention; a null draw whose S is empty gives no p-value and is skipped (the
count of usable draws is reported); if no draw is usable, p = 1. A model's Kendall tau that is
undefined (a constant output column) is dropped with a note.

Caveat, measured in this project (experiments/seedprint_calibration.py): the Gaussian null
assumes unrelated models give independent outputs. They do not: all models see the same inputs,
and the last position's input reaches the output through the identity residual, so outputs of
unrelated initialisations co-vary across inputs, and the test rejects far more often than alpha.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import stats

from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods.result import ALPHA, LineageResult, check_alpha, clip_p
from bornbiased_jax.stats import kendall_null_sd

TRIALS = 10


def null_taus(n: int, d_out: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """One null draw: Algorithm 1 steps 1-2 on two independent N(0, 1)^{n x d_out} matrices."""
    Y1 = rng.standard_normal((n, d_out), dtype=np.float32)
    Y2 = rng.standard_normal((n, d_out), dtype=np.float32)
    return D.kendall_per_dim(Y1, Y2, D.coset(Y1, Y2, m))


def _one_sided(taus: np.ndarray, null: np.ndarray) -> tuple[float, float]:
    """(Student t p, Mann-Whitney U p), each NaN when that test is undefined."""
    if len(taus) == 0 or len(null) == 0:
        return np.nan, np.nan
    p_u = stats.mannwhitneyu(taus, null, alternative="greater").pvalue
    if len(taus) + len(null) < 3:
        return np.nan, float(p_u)
    with np.errstate(all="ignore"):
        p_t = stats.ttest_ind(taus, null, alternative="greater").pvalue  # Student (pooled)
    return float(p_t), float(p_u)


def paper_test(F_A: np.ndarray, F_B: np.ndarray, m: int | None = None, *,
               trials: int = TRIALS, alpha: float = ALPHA,
               rng: np.random.Generator | None = None,
               null_draws: Sequence[np.ndarray] | None = None) -> LineageResult:
    """Algorithm 1 on the base's features ``F_A`` (n, d_out) and the suspect's ``F_B``.

    Args:
      m: fingerprint size (default ``identity_dims.default_size(d_out)``).
      trials: independent Gaussian null draws.
      rng: numpy generator of the null draws (default: seeded with 0, reproducible).
      null_draws: precomputed null draws (each the output of :func:`null_taus` for this n,
        d_out, m) used instead of simulating; many pairs can then share a bank of draws.
    Returns:
      p-values 't_mean', 'u_mean' (mean over trials), 't_pooled', 'u_pooled'; primary 't_mean'.
    """
    n, d_out = D.check_features(F_A, F_B)
    alpha = check_alpha(alpha)
    m = D.check_size("m", D.default_size(d_out) if m is None else m, d_out)
    S = D.coset(F_A, F_B, m)
    taus = D.kendall_per_dim(F_A, F_B, S)
    notes = []
    if np.isnan(taus).any():
        notes.append(f"{int(np.isnan(taus).sum())} dimensions of S have a constant output and "
                     f"no Kendall tau; they are dropped")
        S, taus = S[~np.isnan(taus)], taus[~np.isnan(taus)]
    if null_draws is None:
        rng = rng or np.random.default_rng(0)
        null_draws = [null_taus(n, d_out, m, rng) for _ in range(trials)]
    null_draws = [np.asarray(t, dtype=np.float64) for t in null_draws]
    per_trial = [_one_sided(taus, t) for t in null_draws]
    p_t = [p for p, _ in per_trial if np.isfinite(p)]
    p_u = [p for _, p in per_trial if np.isfinite(p)]
    pooled = np.concatenate(null_draws) if null_draws else np.zeros(0)
    pt_pool, pu_pool = _one_sided(taus, pooled)
    if len(S) == 0:
        notes.append("S is empty (the two models share none of their top-m dimensions): "
                     "nothing to test, every p = 1 by convention")
    elif not p_u:
        notes.append("every null draw had an empty S: no null to test against, p = 1")
    elif len(p_t) < len(null_draws) or len(p_u) < len(null_draws):
        notes.append(f"{len(null_draws) - len(p_u)} of {len(null_draws)} null draws had an "
                     f"empty S and were skipped")
    p_values = {"t_mean": clip_p(np.mean(p_t)) if p_t else 1.0,
                "u_mean": clip_p(np.mean(p_u)) if p_u else 1.0,
                "t_pooled": clip_p(pt_pool), "u_pooled": clip_p(pu_pool)}
    details = {"m": m, "trials": len(null_draws), "usable_trials_t": len(p_t),
               "usable_trials_u": len(p_u),
               "null_dims_mean": float(np.mean([len(t) for t in null_draws])) if null_draws else 0,
               "null_mean": float(pooled.mean()) if pooled.size else np.nan,
               "null_sd": float(pooled.std(ddof=1)) if pooled.size > 1 else np.nan,
               "kendall_null_sd": kendall_null_sd(n)}
    return LineageResult("paper", p_values, alpha, n, d_out, S, taus, "kendall_tau",
                         float(taus.mean()) if len(taus) else np.nan, pooled, details,
                         "; ".join(notes))


def from_context(ctx) -> LineageResult:
    """The paper test of one pair that ``compare`` prepared (``runner.context.Context``)."""
    s = ctx.settings
    return paper_test(ctx.F_A, ctx.F_B, s.m, trials=s.trials, alpha=s.alpha,
                      rng=np.random.default_rng(s.probe_seed))
