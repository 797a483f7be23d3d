"""Statistics helpers shared by the probes, the fingerprint and the experiments.

* The Bonferroni binomial test of Table 1 (App. B.2). Under H0 each of N predicted tokens is
  uniform over V tokens, so the count of any one token is X ~ Binomial(N, p0 = 1/V). With k_max
  the count of the top-1 token,

      p_nominal = P(X >= k_max),    p = min(1, V * p_nominal)    (Bonferroni over the vocabulary).

  Everything is computed in log space (a log-sum-exp of log-pmf terms), so p-values far below
  the float64 range (the paper's "0.00 due to underflow") are reported as finite ``log10 p``.
* Figure 1a's red dashed line, the expected sorted count profile of N uniform draws over V
  cells: :func:`uniform_rank_frequency` computes E[X_(r)], the expected r-th largest cell count,
  and :func:`simulate_uniform_rank_frequency` is its Monte Carlo simulator.
* :func:`clopper_pearson`, the exact binomial confidence interval of a proportion;
  :func:`mean_se` and :func:`t_quantile`, a sample mean's standard error and Student's t
  quantile for intervals over a few seeds; :class:`SeedMean` (:func:`seed_mean`,
  :func:`paired_mean`), a mean over seeds with its t interval, alone or paired seed by seed.
* :func:`kendall_null_var` and :func:`kendall_null_sd`, the exact permutation null of
  Kendall's tau (SeedPrint's per-dimension statistic).
* :func:`mantel_haenszel_greater`, the one-sided Cochran-Mantel-Haenszel test of a common
  direction over several 2 x 2 tables (a directional claim judged across seeds and models).
* Formatting of p-values for tables: :func:`fmt_p` (a p-value) and :func:`format_log10_p`
  (a p-value given by its log10).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special, stats

from bornbiased_jax.errors import UserError

LOG10_E = 1.0 / math.log(10.0)


def _check(k: int, n: int, v: int) -> None:
    if n < 1:
        raise ValueError(f"N must be >= 1, got {n}")
    if v < 1:
        raise ValueError(f"V must be >= 1, got {v}")
    if not 0 <= k <= n:
        raise ValueError(f"k must lie in [0, N={n}], got {k}")


def log_binom_sf(k: int, n: int, p0: float) -> float:
    """ln P(X >= k) for X ~ Binomial(n, p0), exact summation in log space."""
    if k <= 0:
        return 0.0
    x = np.arange(k, n + 1)
    return float(special.logsumexp(stats.binom.logpmf(x, n, p0)))


def bonferroni_log10_p(k_max: int, n: int, v: int) -> float:
    """log10 of the Bonferroni-corrected p-value min(1, V * P(X >= k_max)), X ~ Bin(N, 1/V)."""
    _check(k_max, n, v)
    log_p = math.log(v) + log_binom_sf(k_max, n, 1.0 / v)
    return min(0.0, log_p * LOG10_E)


def format_log10_p(log10_p: float, digits: int = 2) -> str:
    """'4.55e-137' style text for a p-value given by its log10 (no underflow to 0)."""
    if log10_p >= -3:
        return f"{10 ** log10_p:.{digits + 1}g}"
    e = math.floor(log10_p)
    m = 10 ** (log10_p - e)
    if round(m, digits) >= 10:
        m, e = m / 10, e + 1
    return f"{m:.{digits}f}e{e}"


def fmt_p(p: float) -> str:
    """A p-value for a table, three significant digits ('0.0123', '2.20e-08'); an exact 0 is a
    float64 underflow (the true p is positive but below about 1e-308) and says so."""
    if p == 0:
        return "0 (underflow)"
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.2e}"


def clopper_pearson(k: float, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) confidence interval of a proportion k/n. A fractional k (an
    effective count: a rate times an effective sample size) reads the same beta quantiles."""
    a = 1 - conf
    lo = 0.0 if k == 0 else stats.beta.ppf(a / 2, k, n - k + 1)
    hi = 1.0 if k == n else stats.beta.ppf(1 - a / 2, k + 1, n - k)
    return float(lo), float(hi)


def mantel_haenszel_greater(tables) -> float:
    """One-sided Cochran-Mantel-Haenszel p of "the second proportion is larger" over strata.

    ``tables``: (k1, n1, k2, n2) per stratum, k successes of n in group 1 and group 2. Given
    each stratum's margins, k2 is hypergeometric under H0 (no difference within any stratum),
    with E[k2] = n2 m / N and Var[k2] = n1 n2 m (N - m) / (N^2 (N - 1)), m = k1 + k2,
    N = n1 + n2. The statistic Z = (sum k2 - sum E[k2] - 1/2) / sqrt(sum Var[k2]) (with
    the continuity correction) is referred to the standard normal: p = P(N(0, 1) >= Z).
    Strata whose margins leave k2 no freedom (m = 0 or m = N) add nothing; with none left,
    p = 1. The alternative is a common direction (odds ratios above 1), not one stratum."""
    obs = mean = var = 0.0
    for k1, n1, k2, n2 in tables:
        N, m = n1 + n2, k1 + k2
        if N < 2 or m == 0 or m == N:
            continue
        obs += k2
        mean += n2 * m / N
        var += n1 * n2 * m * (N - m) / (N * N * (N - 1))
    if var == 0:
        return 1.0
    return float(stats.norm.sf((obs - mean - 0.5) / math.sqrt(var)))


def mean_se(xs) -> tuple[float, float]:
    """The mean of ``xs`` and its standard error, sd (n - 1 denominator) / sqrt(n); the
    standard error is nan for a single value (both are nan for none). Sums are exactly
    rounded (``math.fsum``), so a mean that lies on a rounding boundary (e.g. -0.285 of eight
    rates) does not print one way or the other depending on the order of summation."""
    x = [float(v) for v in np.asarray(list(xs), dtype=np.float64).ravel()]
    n = len(x)
    if n == 0:
        return float("nan"), float("nan")
    m = math.fsum(x) / n
    if n < 2:
        return m, float("nan")
    return m, math.sqrt(math.fsum((v - m) ** 2 for v in x) / (n - 1) / n)


def jackknife_se(leave_one_out) -> np.ndarray:
    """The delete-one-group jackknife standard error of a statistic from its B >= 2
    leave-one-group-out values (axis 0): sqrt((B - 1) / B * sum_b (theta_(b) - mean)^2)
    (Efron and Stein; for a smooth statistic of independent groups, such as a mean pairwise
    cosine over blocks of independent sequences). Other axes are kept."""
    loo = np.asarray(leave_one_out, dtype=np.float64)
    B = loo.shape[0]
    if B < 2:
        raise ValueError(f"a jackknife needs at least two groups, got {B}")
    return np.sqrt((B - 1) / B * ((loo - loo.mean(0)) ** 2).sum(0))


def t_quantile(df: int, q: float = 0.975) -> float:
    """Student's t quantile on ``df`` >= 1 degrees of freedom (0.975: a two-sided 95 %
    interval's multiple of the standard error)."""
    return float(stats.t.ppf(q, df))


def kendall_null_var(n: int) -> float:
    """Var(tau) for n pairs of independent continuous variables: 2(2n + 5) / (9 n (n - 1))
    (the permutation null of Kendall's tau, exact)."""
    if n < 2:
        raise UserError(f"Kendall's tau needs n >= 2 pairs, got {n}")
    return 2.0 * (2 * n + 5) / (9.0 * n * (n - 1))


def kendall_null_sd(n: int) -> float:
    """sd of Kendall's tau of n pairs of independent continuous variables:
    sqrt(2(2n + 5) / (9 n (n - 1)))."""
    return math.sqrt(kendall_null_var(n))


def uniform_rank_frequency(n: int, v: int, ranks: int) -> np.ndarray:
    """E[X_(r)], r = 1..ranks: the expected r-th largest count of N uniform draws over V cells.

    E[X_(r)] = sum_{k>=1} P(X_(r) >= k) = sum_{k>=1} P(#{cells with count >= k} >= r).
    The number of cells with count >= k is a sum of V exchangeable, weakly negatively dependent
    indicators with mean q_k = P(Bin(N, 1/V) >= k); we take it Binomial(V, q_k). This is
    accurate in the sparse regime N << V of the paper (within Monte Carlo error at N = 2,000,
    V = 50,257 and N = 10,000, V = 32,000, tested against
    :func:`simulate_uniform_rank_frequency`); when N is comparable to V the ignored negative
    dependence biases it (by up to 0.07 counts at N = 500, V = 300).
    """
    _check(0, n, v)
    ranks = min(ranks, v)
    ks = np.arange(1, n + 1)
    q_k = stats.binom.sf(ks - 1, n, 1.0 / v)  # P(count >= k) for one cell
    keep = q_k * v > 1e-12
    ks, q_k = ks[keep], q_k[keep]
    r = np.arange(1, ranks + 1)
    # P(Binomial(V, q_k) >= r) for every (r, k)
    tail = stats.binom.sf(r[:, None] - 1, v, q_k[None, :])
    return tail.sum(axis=1)


def uniform_max_quantile(n: int, v: int, q: float = 0.99) -> int:
    """The smallest m with P(max count <= m) >= ``q`` for N uniform draws over V cells: the
    largest count that uniform sampling reaches in a fraction ``q`` of draws or fewer.

    P(max <= m) is taken as P(Bin(N, 1/V) <= m)^V, the cells as independent. Multinomial
    counts are negatively associated (Joag-Dev & Proschan 1983), so the product overstates
    P(max <= m) and m errs, if at all, downward: at N = V = 3 it gives P(max <= 1) = 0.406
    against the exact 2/9. In the sparse regime N << V of Figure 10 the overstatement is
    about 1e-4 and leaves the 99th percentile unchanged (tested against multinomial draws)."""
    _check(0, n, v)
    if not 0 < q < 1:
        raise ValueError(f"q must be in (0, 1), got {q}")
    ms = np.arange(0, n + 1)
    log_cdf_max = v * stats.binom.logcdf(ms, n, 1.0 / v)
    return int(ms[np.argmax(log_cdf_max >= np.log(q))])


def uniform_distinct(n: int, v: int) -> tuple[float, float]:
    """Mean and standard deviation of the number of distinct cells hit by N uniform draws over V
    cells (the occupancy problem, exact moments):

      E[D] = V (1 - (1 - 1/V)^N),
      Var[D] = V (V - 1) (1 - 2/V)^N + V (1 - 1/V)^N - V^2 (1 - 1/V)^(2N).

    A preference spread over many tokens, none of them far above the rest, shows as fewer
    distinct arg-max tokens than this while no single count is significant."""
    _check(0, n, v)
    a, b = (1 - 1 / v) ** n, (1 - 2 / v) ** n
    mean = v * (1 - a)
    var = v * (v - 1) * b + v * a - (v * a) ** 2
    return float(mean), float(math.sqrt(max(var, 0.0)))


def collisions_log10_p(distinct: int, n: int, v: int) -> float:
    """log10 of the p-value of N - ``distinct`` collisions or more among N uniform draws over V
    cells: the collision count taken as Poisson with the exact mean N - E[D]
    (:func:`uniform_distinct`), accurate in the sparse regime N << V (its tail holds its level
    against multinomial draws at N = 10,000, V = 262,144: tested). Small when the draws
    concentrate on fewer cells than uniform ones do."""
    _check(0, n, v)
    if not 0 <= distinct <= min(n, v):
        raise UserError(f"distinct must be in [0, min(N, V)] = [0, {min(n, v)}], got {distinct}")
    mean, _ = uniform_distinct(n, v)
    return float(stats.poisson.logsf(n - distinct - 1, n - mean) / math.log(10))


def critical_count(n: int, v: int, alpha: float) -> int:
    """The smallest top-1 count whose Bonferroni binomial p (:func:`bonferroni_log10_p`) at N
    draws over V tokens is below ``alpha``; N + 1 when no count is."""
    _check(0, n, v)
    cut = math.log10(alpha)
    for k in range(1, n + 1):
        if bonferroni_log10_p(k, n, v) < cut:
            return k
    return n + 1


def preference_power(freq: float, n: int, v: int, alpha: float) -> float:
    """The probability that a network preferring one token with probability ``freq`` (on each
    of N sequences, independently) shows a top-1 count at or above :func:`critical_count`: the
    power of Table 1's per-row test against a preference of that size (a lower bound: another
    token's count may also pass)."""
    return float(stats.binom.sf(critical_count(n, v, alpha) - 1, n, freq))


def simulate_uniform_rank_frequency(n: int, v: int, ranks: int, reps: int,
                                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo E[X_(r)] and its standard error from ``reps`` multinomial draws."""
    draws = rng.multinomial(n, np.full(v, 1.0 / v), size=reps)
    top = -np.sort(-draws, axis=1)[:, :ranks].astype(float)
    return top.mean(0), top.std(0, ddof=1) / np.sqrt(reps)


@dataclasses.dataclass(frozen=True)
class SeedMean:
    """Mean over seeds of one quantity, its standard error (seed SD / sqrt(n)), n, and the 95 %
    t interval on n - 1 degrees of freedom (nan bounds with one seed)."""

    mean: float
    se: float
    n: int

    @property
    def half_width(self) -> float:
        return self.se * t_quantile(self.n - 1) if self.n > 1 else float("nan")

    @property
    def lo(self) -> float:
        return self.mean - self.half_width

    @property
    def hi(self) -> float:
        return self.mean + self.half_width

    def text(self, digits: int = 3) -> str:
        return (f"{self.mean:.{digits}f} ± {self.se:.{digits}f} "
                f"[{self.lo:.{digits}f}, {self.hi:.{digits}f}]")


def seed_mean(xs) -> SeedMean:
    """The :class:`SeedMean` of one value per seed."""
    m, se = mean_se(xs)
    return SeedMean(m, se, len(xs))


def paired_mean(a, b) -> SeedMean:
    """The :class:`SeedMean` of the differences a_i - b_i of values paired seed by seed (two
    arms trained from the same seeds on the same data): the seeds' shared part cancels."""
    if len(a) != len(b):
        raise ValueError(f"paired values need one per seed on both sides, got {len(a)} and "
                         f"{len(b)}")
    return seed_mean([x - y for x, y in zip(a, b)])
