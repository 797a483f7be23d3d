"""The matched test's null law, light enough for the results renderer (NumPy and SciPy only).

Under H0 with one model an initialisation, each layer's agreement K_l is the number of the m
values prescribed by the two matchings that a uniform permutation of that model's n units
takes (``unit_matching``): the *partial rencontres* law (:func:`partial_log_pmf`),
P(K = j) = C(m, j) sum_i (-1)^i C(m - j, i) (n - j - i)! / n!, mean m / n. With every unit
matched in both views (m = n = F) it is the rencontres distribution (:func:`rencontres_log_sf`,
:func:`rencontres_pmf`): P(K = j) = (1 / j!) sum_{i <= F - j} (-1)^i / i!, mean 1, variance 1.
Layers combine by Fisher's method (:func:`fisher_log_p`).

Valid, not exact. p_l = P(K >= K_l) of a discrete K is super-uniform: P(p_l <= u) <= u, with
equality only at the attainable values. Fisher's combination of super-uniform p-values is again
super-uniform, so the test is valid (P(p <= alpha) <= alpha) but conservative: with L = 2 layers
of F = 176 units, every unit paired (m = n), its size at alpha = 0.01 is 0.0030 (:func:`size`, by enumeration), not 0.01,
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

from bornbiased_jax.errors import UserError

SIZE_K_MAX = 40  # agreements enumerated by :func:`size`: P(K > 40) < 1e-48 for any F


_TAIL_TERMS = 40  # terms of the alternating sum kept (the rest are below 1 / 40!)


@functools.lru_cache(maxsize=4096)
def partial_log_pmf(n: int, m: int) -> np.ndarray:
    """log P(K = j), j = 0..m, for K = #{i < m : sigma(i) = i}, sigma a uniform permutation of
    n items (the *partial rencontres* law; m = n: the rencontres law). P(K = j) = (1 / j!)
    r(j) sum_i (-1)^i / i! rho_j(i), r(s) = prod_{t < s} (m - t) / (n - t), rho_j(i) =
    r(j + i) / r(j): the terms fall as 1 / i!, so the sum keeps its precision; it is truncated
    after :data:`_TAIL_TERMS` terms."""
    if not 0 <= m <= n:
        raise UserError(f"the partial rencontres law needs 0 <= m <= n, got m = {m}, n = {n}")
    j = np.arange(m + 1)
    t = np.arange(m)
    log_r = np.concatenate([[0.0], np.cumsum(np.log((m - t) / (n - t)))])  # log r(s), s = 0..m
    i = np.arange(_TAIL_TERMS)
    idx = j[:, None] + i[None, :]  # s = j + i
    rho = np.where(idx <= m, np.exp(log_r[np.minimum(idx, m)] - log_r[j][:, None]), 0.0)
    terms = rho * ((-1.0) ** i / special.factorial(i))[None, :]
    total = terms.sum(1)
    with np.errstate(divide="ignore"):
        return np.where(total > 0, np.log(np.maximum(total, 1e-300)) + log_r
                        - special.gammaln(j + 1), -np.inf)


def partial_rencontres_log_sf(n: int, m: int, k: int) -> float:
    """log P(K >= k) of the partial rencontres law (:func:`partial_log_pmf`)."""
    if k <= 0:
        return 0.0
    if k > m:
        return -math.inf
    return min(0.0, float(special.logsumexp(partial_log_pmf(int(n), int(m))[k:])))


def randomised_log_sf(n: int, m: int, k: int, u: float) -> float:
    """log of the randomised p of the partial rencontres law, P(K > k) + u P(K = k): exactly
    Uniform(0, 1) under the law when u is (the module docstring); 0 for k < 0 (every
    agreement is above a negative threshold)."""
    if k < 0:
        return 0.0
    above = partial_rencontres_log_sf(n, m, k + 1)
    at = float(partial_log_pmf(int(n), int(m))[k]) if k <= m else -math.inf
    terms = [above] + ([at + math.log(u)] if u > 0 else [])
    return min(0.0, float(special.logsumexp(terms)))


def rencontres_log_sf(F: int, k: int) -> float:
    """log P(K >= k) for K the number of fixed points of a uniform permutation of F items."""
    return partial_rencontres_log_sf(F, F, k)


def rencontres_log_pmf(F: int, k: int) -> float:
    """log P(K = k) of the rencontres law of F items (-inf where it is 0: k = F - 1, k < 0,
    k > F)."""
    if k < 0 or k > F:
        return -math.inf
    return float(partial_log_pmf(int(F), int(F))[k])


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
    return fisher_log_p(np.array([randomised_log_sf(F, F, int(k) - slack, u)
                                  for k, u in zip(K_L, u_L)]))


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
