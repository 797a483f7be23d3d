"""Identity dimensions and per-dimension rank correlations of two feature matrices.

A *feature matrix* F_nd holds one model's output g(x_i) (d = d_out values) for each of the n
random inputs x_i, the same inputs for every model. Everything here is plain numpy/scipy:

  * ``top_m`` / ``bottom_k``: the m dimensions with the largest (smallest) mean output, the
    "most biased dimensions" of paper Sec. 5 and Algorithm 1 step 2 (top) or of the authors'
    released code (bottom);
  * ``coset``: S = M(f) intersect M(f'), the "identity dimensions" (Algorithm 1 step 3);
  * ``kendall_per_dim``: Kendall's tau of column s of F and F' across the n inputs, for s in S
    (Algorithm 1 step 5). scipy computes tau-b; for continuous outputs (no ties) it equals the
    tau-a of App. B.3;
  * ``RankedFeatures``: column ranks standardised to mean 0 and variance 1, so that Spearman's
    rho of a column pair is a dot product over the inputs divided by n, and the rho's of every
    dimension (and of many models against one) are one matrix product.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bornbiased_jax.errors import UserError

# The authors' released code keeps buffer_k = 400 of d_out = 768 dimensions (notes Sec. 2.2);
# the defaults of m and k here keep that fraction at every width (see ``default_size``).
CODE_FRACTION = 400 / 768


def default_size(d_out: int) -> int:
    """Default m (paper test) and k (official test): round(400/768 * d_out), at least 2.

    m = 50 (Sec. 5) cannot give the paper's Sec. 6.1 p-values: a one-sided Mann-Whitney p is at
    least about Phi-bar(sqrt(3|S|)), so 7.8e-89 needs |S| >= 133, while under independence
    E|S| = m^2/d_out = 3.3 for m = 50 at d = 768. The released code's 400 of 768 (0.52 d_out)
    gives E|S_null| = 208 there, consistent with the reported p-values.
    """
    return max(2, int(round(CODE_FRACTION * d_out)))


def check_features(F_A: np.ndarray, F_B: np.ndarray) -> tuple[int, int]:
    """(n, d_out) of two feature matrices, or a UserError saying what does not fit."""
    F_A, F_B = np.asarray(F_A), np.asarray(F_B)
    if F_A.ndim != 2 or F_B.ndim != 2:
        raise UserError(f"features must be (n, d_out) matrices, got shapes {F_A.shape} and "
                        f"{F_B.shape}")
    if F_A.shape[1] != F_B.shape[1]:
        raise UserError(f"the two models' output dimensions differ ({F_A.shape[1]} vs "
                        f"{F_B.shape[1]}): a lineage test compares the same output dimensions, "
                        f"so both models need the same d_out")
    if F_A.shape[0] != F_B.shape[0]:
        raise UserError(f"the two models saw different numbers of inputs ({F_A.shape[0]} vs "
                        f"{F_B.shape[0]}); both must see the same n inputs")
    n = F_A.shape[0]
    if n < 3:
        raise UserError(f"n = {n} inputs is too few: Kendall's tau and its tests need n >= 3")
    if not (np.isfinite(F_A).all() and np.isfinite(F_B).all()):
        raise UserError("the features contain NaN or inf values; the model's outputs overflowed")
    return n, F_A.shape[1]


def check_size(name: str, size: int, d_out: int) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= d_out:
        raise UserError(f"{name} = {size!r} must be an integer in [1, d_out = {d_out}]")
    return int(size)


def top_m(mean_d: np.ndarray, m: int) -> np.ndarray:
    """Indices of the m largest entries of ``mean_d``, sorted (Algorithm 1 step 2)."""
    return np.sort(np.argpartition(-np.asarray(mean_d), m - 1)[:m])


def bottom_k(mean_d: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k smallest entries (the released code's identity dimensions), sorted."""
    return np.sort(np.argpartition(np.asarray(mean_d), k - 1)[:k])


def coset(F_A: np.ndarray, F_B: np.ndarray, size: int, largest: bool = True) -> np.ndarray:
    """S = M(A) intersect M(B): dimensions among the ``size`` most extreme means of both."""
    pick = top_m if largest else bottom_k
    return np.intersect1d(pick(F_A.mean(0), size), pick(F_B.mean(0), size))


# Below this n, tau-b is computed from the n x n sign matrices of many columns at once (numpy,
# no per-call overhead); above it scipy's O(n log n) algorithm, one call per dimension.
_DENSE_KENDALL_MAX_N = 400


def kendall_per_dim(F_A: np.ndarray, F_B: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """tau_s = Kendall's tau-b over the n inputs of (F_A[:, s], F_B[:, s]), for s in ``dims``.

    A constant column has no tau (NaN, as scipy returns); callers drop such dimensions."""
    dims = np.asarray(dims, dtype=int)
    n = F_A.shape[0]
    if n > _DENSE_KENDALL_MAX_N:
        from scipy import stats

        return np.asarray([stats.kendalltau(F_A[:, s], F_B[:, s]).statistic for s in dims],
                          dtype=np.float64)
    out = np.empty(len(dims))
    iu = np.triu_indices(n, 1)
    step = max(1, 2_000_000 // (n * n))
    for c in range(0, len(dims), step):
        a, b = F_A[:, dims[c:c + step]], F_B[:, dims[c:c + step]]  # (n, c)
        sa = np.sign(a[:, None, :] - a[None, :, :])[iu]  # (pairs, c)
        sb = np.sign(b[:, None, :] - b[None, :, :])[iu]
        num = (sa * sb).sum(0)
        den = np.sqrt((sa * sa).sum(0) * (sb * sb).sum(0))  # tau-b's tie correction
        with np.errstate(invalid="ignore", divide="ignore"):
            out[c:c + step] = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return out


def softmax_rows(F_nk: np.ndarray, temperature: float) -> np.ndarray:
    """Row-wise softmax(F / temperature), the released code's 'softmax_T10' normalisation."""
    z = F_nk / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@dataclasses.dataclass(frozen=True)
class RankedFeatures:
    """One model's features prepared for cheap rank statistics.

    z_nd: column ranks (average ranks for ties) standardised to mean 0 and variance 1, so that
      Spearman's rho of column j of two models is (z_A[:, j] . z_B[:, j]) / n.
    mean_d: column means of the raw features (for top-m selection).
    raw_nd: the raw features (for Kendall's tau)."""

    z_nd: np.ndarray
    mean_d: np.ndarray
    raw_nd: np.ndarray

    @classmethod
    def of(cls, F_nd: np.ndarray) -> "RankedFeatures":
        F_nd = np.asarray(F_nd, dtype=np.float64)
        r = column_ranks(F_nd)
        r -= r.mean(0)
        sd = r.std(0)
        z = np.divide(r, sd, out=np.zeros_like(r), where=sd > 0)  # constant column -> 0
        return cls(z.astype(np.float32), F_nd.mean(0), F_nd)


def column_ranks(F_nd: np.ndarray) -> np.ndarray:
    """Each column's ranks 1..n as float64, ties given their average rank (what
    ``scipy.stats.rankdata(F_nd, axis=0)`` returns, NaN columns all NaN): ordinal ranks by one
    sort, the tied columns' averages by ``np.unique`` (importing scipy.stats would cost a
    command a third of a second)."""
    n = F_nd.shape[0]
    order = np.argsort(F_nd, axis=0, kind="stable")
    r = np.empty(F_nd.shape, np.float64)
    np.put_along_axis(r, order, np.arange(1, n + 1, dtype=np.float64)[:, None], axis=0)
    s = np.take_along_axis(F_nd, order, axis=0)
    nan = np.any(np.isnan(F_nd), axis=0)
    r[:, nan] = np.nan
    for j in np.flatnonzero(np.any(s[1:] == s[:-1], axis=0) & ~nan):
        _, inverse, counts = np.unique(F_nd[:, j], return_inverse=True, return_counts=True)
        r[:, j] = (np.cumsum(counts) - (counts - 1) / 2)[inverse]
    return r


def spearman_per_dim(A: RankedFeatures, B: RankedFeatures) -> np.ndarray:
    """Spearman's rho of every dimension, (d,)."""
    n = A.z_nd.shape[0]
    return np.einsum("nd,nd->d", A.z_nd, B.z_nd, dtype=np.float64) / n


def kendall_all_pairs(X_Mn: np.ndarray, pair_block: int = 200_000) -> np.ndarray:
    """Kendall's tau-b between every pair of M variables observed on the same n inputs, (M, M).

    Each variable's n(n-1)/2 pairwise signs sgn(x_i - x_i') form a row of S; tau-b is then
    S S^T normalised by the rows' norms: one matrix product for all M(M-1)/2 pairs (e.g. one
    output dimension of many models), instead of one scipy call per pair."""
    X = np.asarray(X_Mn, dtype=np.float32)
    M, n = X.shape
    i, j = np.triu_indices(n, 1)
    num = np.zeros((M, M))
    sq = np.zeros(M)
    for b in range(0, len(i), pair_block):
        # x_i > x_j - (x_i < x_j): the sign as float32 without a float64 difference array
        xi, xj = X[:, i[b:b + pair_block]], X[:, j[b:b + pair_block]]
        S = (xi > xj).astype(np.float32) - (xi < xj)
        num += (S @ S.T).astype(np.float64)
        sq += np.einsum("mp,mp->m", S, S, dtype=np.float64)
    den = np.sqrt(np.outer(sq, sq))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
