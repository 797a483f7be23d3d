"""The rule that judges a false-positive rate measured on pairs of a pool of models, and its
power (the matched test's held-out level, experiments/seedprint/claims.py).

Pairs drawn from M models share models, so their rejections are not independent trials. The
rule is a one-sided t test of H0 "the rate is at most alpha" with the delete-one-model
jackknife standard error (``fingerprint.runner.rejection.rate``'s): the level is *rejected* when

    (rate - alpha) / se_jk > t_{0.95, M - 1},

and *not rejected* otherwise (a rate with se_jk = 0 is rejected when it is above alpha). A
level not rejected is what a held-out measurement can say; whether the rule could have
rejected a rate a user would care about is its power, which :func:`power` computes by
simulation on the design measured (every unordered pair of M models at C checkpoints), for
two ways the pairs' outcomes can depend on one another:

  * ``independent``: every (pair, checkpoint) rejects on its own with probability r (the
    sharing of models then only enters through the jackknife, which over-estimates the
    standard error of a pair statistic, so the rule is conservative);
  * ``persistent``: each pair's outcome is drawn once and repeated at every checkpoint (the
    most dependent case, M(M-1)/2 independent outcomes instead of C times as many).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

POWER_REPS = 4000  # replicates per rate: a power is known to +-0.016 (2 binomial SE at 0.5)
POWER_SEED = 0
CONFIDENCE = 0.95  # one-sided


def critical_t(models: int) -> float:
    """t_{0.95, M - 1}: the rule's multiple of the jackknife standard error."""
    return float(stats.t.ppf(CONFIDENCE, models - 1))


def level_rejected(rate: float, se: float, alpha: float, models: int) -> tuple[bool, float]:
    """(rejected, z): whether the rule rejects "the rate is at most alpha", and the rate's
    distance above alpha in jackknife standard errors (inf when se = 0 and rate > alpha)."""
    if se <= 0:
        return rate > alpha, (math.inf if rate > alpha else -math.inf if rate < alpha else 0.0)
    z = (rate - alpha) / se
    return z > critical_t(models), z


def _design(models: int, checkpoints: int) -> tuple[np.ndarray, np.ndarray]:
    """(incidence (N, M) of the N = C M (M - 1) / 2 (pair, checkpoint) rows on the models,
    pair index of each row)."""
    return _design_blocks([(models, checkpoints)])


def _design_blocks(blocks) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_design` of disjoint pools of models, ``blocks`` = [(M_i, C_i)]: every pair
    within a pool at each of its checkpoints, no pair across pools."""
    rows, pair_of, first, n_pairs = [], [], 0, 0
    for models, checkpoints in blocks:
        pairs = [(first + a, first + b) for a in range(models) for b in range(a + 1, models)]
        for _ in range(checkpoints):
            rows += pairs
            pair_of += range(n_pairs, n_pairs + len(pairs))
        first, n_pairs = first + models, n_pairs + len(pairs)
    inc = np.zeros((len(rows), first))
    for i, (a, b) in enumerate(rows):
        inc[i, [a, b]] = 1
    return inc, np.asarray(pair_of, dtype=int)


def jackknife(X: np.ndarray, inc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rates and delete-one-model jackknife standard errors of replicates ``X`` (R, N) of 0/1
    outcomes on the rows of ``inc`` (as ``fingerprint.runner.rejection.rate`` computes them)."""
    N, M = inc.shape
    K = X.sum(1)
    loo = (K[:, None] - X @ inc) / (N - inc.sum(0))
    se = np.sqrt((M - 1) / M * ((loo - loo.mean(1, keepdims=True)) ** 2).sum(1))
    return K / N, se


def power(rate: float, alpha: float, models: int, checkpoints: int, *,
          dependence: str = "independent", reps: int = POWER_REPS,
          seed: int = POWER_SEED) -> float:
    """P(the rule rejects alpha) when the true rejection rate of every pair is ``rate``, on
    every pair of ``models`` models at ``checkpoints`` checkpoints, by ``reps`` simulated
    replicates (module docstring for ``dependence``)."""
    return power_blocks(rate, alpha, [(models, checkpoints)], dependence=dependence,
                        reps=reps, seed=seed)


def power_blocks(rate: float, alpha: float, blocks, *, dependence: str = "independent",
                 reps: int = POWER_REPS, seed: int = POWER_SEED) -> float:
    """:func:`power` of a rate pooled over disjoint pools of models, ``blocks`` = [(M_i,
    C_i)] (every pair within a pool at each of its C_i checkpoints), judged by the rule with
    the jackknife over all the pools' models."""
    inc, pair_of = _design_blocks(blocks)
    models = inc.shape[1]
    rng = np.random.default_rng(seed)
    if dependence == "independent":
        X = (rng.random((reps, len(pair_of))) < rate).astype(float)
    elif dependence == "persistent":
        X = (rng.random((reps, pair_of.max() + 1)) < rate).astype(float)[:, pair_of]
    else:
        raise ValueError(f"dependence {dependence!r}: 'independent' or 'persistent'")
    r, se = jackknife(X, inc)
    t = critical_t(models)
    over = np.where(se > 0, (r - alpha) > t * se, r > alpha)
    return float(over.mean())
