"""Attn0 closed forms: amplification (Prop. 4), intra-sequence contraction (Prop. 5), Eq. 2.

All in the infinite-width limit, where a cosine similarity equals the correlation of the
coordinates' covariance (per-coordinate i.i.d. structure).

Proposition 4 (App. A.2). If every pair of tokens (within and across sequences) has cosine rho
after a first layer, the full average over T tokens gives inter-sequence cosine

    T rho / (T rho + 1 - rho),        = T / (T + pi - 1) for ReLU's rho = 1/pi.

Proposition 5 (App. A.3). The causal running average o_t = (1/t) sum_{s<=t} x_s applied n times
to white noise. Exactly, with A the T x T running-average matrix, Z = A^n X has covariance
C = A^n (A^n)^T, and the mean intra-sequence cosine is the mean of C_ij / sqrt(C_ii C_jj). In
the continuum limit T -> infinity the n-fold kernel is K_n(t, u) = (ln(t/u))^{n-1} / ((n-1)! t),
giving for s < t, r = s/t,

    rho_n(r) = sqrt(r) sum_{k=0}^{n-1} C(n-1, k) (2n-2-k)! / (2n-2)! (ln 1/r)^k,

and, because r = s/t is *uniform* on (0, 1) for (s, t) uniform on the triangle,

    rho_bar(n) = (n-1)!/(2n-2)! sum_{j=0}^{n-1} (n-1+j)!/j! (2/3)^{n-j}.

What differs from the paper:
  * The paper states the density of r as f(r) = 2r. It is 1 (P(s/t <= a) = a). Its final
    formula is nevertheless the uniform-density result, so only the stated step is wrong.
  * Layer indexing: the paper's closed form at "L layers" uses N = L - 1 applications of the
    operator, so the paper's rho'(L) is the similarity after L - 1 Attn0 layers.
    :func:`paper_prop5_closed_form` keeps the paper's L; :func:`attn0_intra_limit` takes the
    number of Attn0 layers n.
  * The approximation 1 - (1 - 1/T)/L^2 is exact at L = 3 in the limit (8/9) and within 1e-3 for
    L = 3..6, but it is not the large-L behaviour: 1 - rho_bar decays like a power of L slower
    than 1/L^2 (see the theory table).
  * The finite-T step rho'(T, L) = 1/T + (1 - 1/T) rho'(L) averages over all T^2 pairs including
    i = j, and assumes every off-diagonal pair has the T -> infinity mean; the exact finite-T
    value (:func:`attn0_intra_exact`) differs from it by O(log T / T).

Eq. 2. For uncorrelated values of variance sigma^2, the running average has Var(o_i) = sigma^2/i
exactly. For real softmax attention at initialisation the weights are not exactly uniform:
with score std s, E[sum_j A_ij^2] ~ exp(s^2)/i for large i (log-normal weights), so
Var(o_i) ~ sigma^2 exp(s^2)/i; :func:`softmax_variance_factor` gives it.
"""

from __future__ import annotations

import math

import numpy as np


# --- Proposition 4 -----------------------------------------------------------------------------
def attn0_amplified_similarity(T: int | np.ndarray, rho):
    """Inter-sequence cosine after the full average of T tokens with pairwise cosine rho."""
    T = np.asarray(T, np.float64)
    rho = np.asarray(rho, np.float64)
    return T * rho / (T * rho + 1.0 - rho)


def prop4_attn0_after_relu(T):
    """T / (T + pi - 1): Attn0 o MLP0 with ReLU (Proposition 4)."""
    T = np.asarray(T, np.float64)
    return T / (T + np.pi - 1.0)


# --- Proposition 5 -----------------------------------------------------------------------------
def running_average_matrix(T: int) -> np.ndarray:
    """A with A_ij = 1/i for j <= i (1-based): o = A x is the causal running average."""
    return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]


def attn0_intra_correlation(T: int, n_layers: int) -> np.ndarray:
    """The T x T correlation matrix after n causal Attn0 layers on white noise (exact)."""
    An = np.linalg.matrix_power(running_average_matrix(T), n_layers)
    C = An @ An.T
    s = np.sqrt(np.diag(C))
    return C / s[:, None] / s[None, :]


def attn0_intra_exact(T: int, n_layers: int, include_diagonal: bool = True) -> float:
    """Mean intra-sequence cosine after n causal Attn0 layers, exact at finite T (infinite d).

    ``include_diagonal`` averages over all T^2 pairs (the paper's (1/T^2) sum_ij), otherwise
    over the T(T-1) pairs i != j.

    The mean of the correlation matrix :func:`attn0_intra_correlation` in O(n T^2), without
    forming it: rows M_i of A^n (n running averages of the identity), then
    sum_ij R_ij = |sum_i M_i / |M_i||^2 and R_ii = 1.
    """
    M = np.eye(T)
    for _ in range(n_layers):
        M = np.cumsum(M, axis=0) / np.arange(1, T + 1)[:, None]
    total = float(np.sum((M / np.linalg.norm(M, axis=1, keepdims=True)).sum(0) ** 2))
    if include_diagonal:
        return total / (T * T)
    return (total - T) / (T * (T - 1))


def attn0_intra_limit(n_layers: int) -> float:
    """rho_bar(n): the T -> infinity off-diagonal mean after n >= 1 Attn0 layers (derived above)."""
    n = int(n_layers)
    if n < 1:
        raise ValueError("n_layers must be >= 1 (with no averaging the mean is 0)")
    pref = math.factorial(n - 1) / math.factorial(2 * n - 2)
    return pref * sum(math.factorial(n - 1 + j) / math.factorial(j) * (2 / 3) ** (n - j)
                      for j in range(n))


def attn0_kernel(r, n_layers: int):
    """rho_n(r): continuum correlation of positions s < t with r = s/t after n Attn0 layers."""
    r = np.asarray(r, np.float64)
    n = int(n_layers)
    a = np.log(1.0 / r)
    terms = [math.comb(n - 1, k) * math.factorial(2 * n - 2 - k) / math.factorial(2 * n - 2)
             * a**k for k in range(n)]
    return np.sqrt(r) * np.sum(terms, axis=0)


def paper_prop5_closed_form(L: int) -> float:
    """The paper's rho'(L) = (L-2)!/(2L-4)! sum_{k=0}^{L-2} (L-2+k)!/k! (2/3)^{L-1-k}, L >= 2.

    Equal to :func:`attn0_intra_limit` (L - 1): the paper's L counts one more than the number
    of Attn0 layers."""
    if L < 2:
        raise ValueError("the paper's closed form needs L >= 2")
    return (math.factorial(L - 2) / math.factorial(2 * L - 4)
            * sum(math.factorial(L - 2 + k) / math.factorial(k) * (2 / 3) ** (L - 1 - k)
                  for k in range(L - 1)))


def paper_prop5_approximation(T, L):
    """The paper's E rho'(T, L) ~ 1 - (1/L^2)(1 - 1/T)."""
    return 1.0 - (1.0 - 1.0 / np.asarray(T, np.float64)) / np.asarray(L, np.float64) ** 2


def paper_prop5_finite_T(T, L):
    """The paper's finite-T step: rho'(L) + (1/T)(1 - rho'(L)), with its rho'(L)."""
    r = paper_prop5_closed_form(L)
    return r + (1.0 - r) / T


# --- Eq. 2 -------------------------------------------------------------------------------------
def running_average_variance(T: int, sigma2: float = 1.0) -> np.ndarray:
    """Var(o_i) = sigma^2 / i, i = 1..T (Eq. 2), for uncorrelated values of variance sigma^2."""
    return sigma2 / np.arange(1, T + 1)


def softmax_variance_factor(T: int, score_std: float, n_mc: int = 200_000,
                            rng: np.random.Generator | None = None) -> np.ndarray:
    """i * E[sum_j A_ij^2] for i = 1..T when the causal scores of query i are i.i.d.
    N(0, score_std^2): the factor by which softmax attention's output variance exceeds sigma^2/i
    (1 for uniform weights; -> exp(score_std^2) for large i). Monte Carlo with ``n_mc`` draws."""
    rng = rng or np.random.default_rng(0)
    out = np.empty(T)
    for i in range(1, T + 1):
        s = rng.standard_normal((n_mc // max(1, i // 8 + 1), i)) * score_std
        a = np.exp(s - s.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        out[i - 1] = i * (a**2).sum(1).mean()
    return out
