"""The matched test's null law, light enough for the results renderer (NumPy and SciPy only).

Under H0 with one model an initialisation, each layer's agreement K_l is the number of fixed
points of a uniform permutation of F units, whose law is the rencontres distribution
(:func:`rencontres_log_sf`, :func:`rencontres_pmf`): P(K = j) = (1 / j!) sum_{i <= F - j}
(-1)^i / i!, mean 1, variance 1. Layers combine by Fisher's method (:func:`fisher_log_p`).

Valid, not exact. p_l = P(K >= K_l) of a discrete K is super-uniform: P(p_l <= u) <= u, with
equality only at the attainable values. Fisher's combination of super-uniform p-values is again
super-uniform, so the test is valid (P(p <= alpha) <= alpha) but conservative: with L = 2 layers
of F = 176 units its size at alpha = 0.01 is 0.0030 (:func:`size`, by enumeration), not 0.01,
because few layers leave few attainable p-values.

A randomised tie-break makes it exact. With U ~ Uniform(0, 1) independent of K,

    p_l* = P(K > K_l) + U P(K = K_l)

is exactly Uniform(0, 1) under H0: for u in [P(K > k), P(K >= k)], P(p* <= u) = P(K > k) +
P(K = k) (u - P(K > k)) / P(K = k) = u (the probability integral transform of a discrete
variable smoothed by U). Each layer's p_l* is uniform given the earlier layers (K_l is
rencontres given them; the module docstring of ``matched`` says why), so the L values are
independent uniforms and Fisher's X = -2 sum log p_l* is exactly chi^2 with 2L degrees of
freedom: the combined test has size alpha exactly (:func:`randomised_log_p`). It is an option,
not the default: the verdict on a pair would then depend on a draw of U as well as on the two
models.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

SIZE_K_MAX = 40  # agreements enumerated by :func:`size`: P(K > 40) < 1e-48 for any F


@functools.lru_cache(maxsize=65536)
def rencontres_log_sf(F: int, k: int) -> float:
    """log P(K >= k) for K the number of fixed points of a uniform permutation of F items."""
    if k <= 0:
        return 0.0
    if k > F:
        return -math.inf
    j = np.arange(k, F + 1)
    # P(K = j) = D(F - j) / (j! (F - j)!), D(m) / m! = sum_{i <= m} (-1)^i / i! (> 0 unless m = 1)
    m = F - j
    frac = np.array([sum((-1) ** i / math.factorial(i) for i in range(mm + 1)) if mm < 20
                     else math.exp(-1) for mm in m])
    ok = frac > 0
    logs = np.log(frac[ok]) - special.gammaln(j[ok] + 1)
    return float(special.logsumexp(logs)) if ok.any() else -math.inf


@functools.lru_cache(maxsize=65536)
def rencontres_log_pmf(F: int, k: int) -> float:
    """log P(K = k) of the rencontres law of F items (-inf where it is 0: k = F - 1, k < 0,
    k > F)."""
    if k < 0 or k > F:
        return -math.inf
    m = F - k  # P(K = k) = (1 / k!) sum_{i <= m} (-1)^i / i!
    frac = sum((-1) ** i / math.factorial(i) for i in range(m + 1)) if m < 20 else math.exp(-1)
    return math.log(frac) - math.lgamma(k + 1) if frac > 0 else -math.inf


def rencontres_pmf(F: int, k_max: int) -> np.ndarray:
    """P(K = k) for k = 0..k_max (float64)."""
    return np.exp([rencontres_log_pmf(F, k) for k in range(k_max + 1)])


def fisher_log_p(log_p_L: np.ndarray) -> float:
    """log of Fisher's combined p of L p-values given as logs: X = -2 sum log p_l ~ chi^2 with
    2L degrees of freedom, whose survival function is exactly
    exp(-X/2) sum_{i < L} (X/2)^i / i!, evaluated in log space (no underflow)."""
    half = -float(np.sum(log_p_L))
    if not np.isfinite(half):
        return -math.inf
    if half == 0:
        return 0.0
    i = np.arange(len(log_p_L))
    return min(0.0, -half + float(special.logsumexp(i * math.log(half) - special.gammaln(i + 1))))


def log_p(K_L, F: int, slack: int = 0) -> float:
    """log p of the matched test (Fisher over layers of P(K >= K_l - slack)): the default,
    valid and conservative."""
    return fisher_log_p(np.array([rencontres_log_sf(F, int(k) - slack) for k in K_L]))


def randomised_log_p(K_L, F: int, u_L, slack: int = 0) -> float:
    """log p of the randomised matched test: Fisher over layers of P(K > k) + U_l P(K = k),
    k = K_l - slack, with ``u_L`` one Uniform(0, 1) draw per layer; exactly uniform under H0
    (module docstring)."""
    out = []
    for k, u in zip(K_L, u_L):
        k = int(k) - slack
        above, at = rencontres_log_sf(F, k + 1), rencontres_log_pmf(F, k)
        if k < 0:  # every agreement is at or above a negative threshold: p = 1
            out.append(0.0)
            continue
        terms = [above] + ([at + math.log(u)] if u > 0 else [])
        out.append(min(0.0, float(special.logsumexp(terms))))
    return fisher_log_p(np.array(out))


def size(F: int, L: int, alpha: float, slack: int = 0) -> float:
    """P(p <= alpha) under H0 of the (non-randomised) matched test with L independent layers
    of F units: the sum of prod_l P(K = k_l) over every agreement vector whose Fisher p is at
    most alpha, k_l up to :data:`SIZE_K_MAX` (beyond it the law has no mass that counts)."""
    k_max = min(F, SIZE_K_MAX)
    pmf = rencontres_pmf(F, k_max)
    log_sf = np.array([rencontres_log_sf(F, k - slack) for k in range(k_max + 1)])
    cut = math.log(alpha)
    total = 0.0
    # L-fold enumeration, layer by layer: (sum of log p so far) -> probability
    states = {0.0: 1.0}
    for _ in range(L):
        nxt: dict = {}
        for s, prob in states.items():
            for k in range(k_max + 1):
                if pmf[k] == 0:
                    continue
                key = round(s + log_sf[k], 12)
                nxt[key] = nxt.get(key, 0.0) + prob * pmf[k]
        states = nxt
    for s, prob in states.items():
        half = -s
        i = np.arange(L)
        lp = 0.0 if half == 0 else min(0.0, -half + float(special.logsumexp(
            i * math.log(half) - special.gammaln(i + 1))))
        if lp <= cut:
            total += prob
    return float(total)


def chi2_fit(K, F: int, top: int = 4) -> tuple[float, list[int], list[float]]:
    """Pearson's chi-square p of agreements ``K`` (any shape) against the rencontres law of F,
    in the bins 0, 1, ..., top - 1 and >= top (the default keeps every expected count above 5
    from a few hundred values); (p, observed, expected). The values of pairs that share
    models are not independent: the p is a description of the fit, not an exact test."""
    from scipy import stats

    K = np.asarray(K).ravel()
    pmf = rencontres_pmf(F, top - 1)
    obs = [int(np.sum(K == k)) for k in range(top)] + [int(np.sum(K >= top))]
    exp = [float(p * K.size) for p in pmf] + [math.exp(rencontres_log_sf(F, top)) * K.size]
    return float(stats.chisquare(obs, exp).pvalue), obs, exp
