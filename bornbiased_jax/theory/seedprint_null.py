"""The SeedPrint Gaussian null (paper Sec. 6.1.1 Algorithm 1, App. B.3.1) in closed form.

Algorithm 1's null draws two independent Gaussian matrices Y1, Y2 of shape (n, d_out), takes the
top-m columns of each by column mean, intersects them (the "identity dimensions" S) and computes
Kendall's tau between Y1[:, s] and Y2[:, s] for s in S. Two facts make this null analytic:

  * |S| ~ Hypergeometric(d_out, m, m): the column means are i.i.d., so each top-m set is a
    uniformly random m-subset, independent of the other. E|S| = m^2 / d_out.
  * Given the selected columns, the pairing of Y1's and Y2's rows is still a uniformly random
    permutation (selection depends on each column's values, not on how they pair), so every
    tau_s has exactly the permutation null of Kendall's tau: mean 0, variance
    2(2n + 5) / (9 n (n - 1)) (``stats.kendall_null_var``), asymptotically normal,
    and the tau_s are independent.

So the null needs no simulation: the paper's t-test against a simulated null (and its averaging of
p-values over 10 random nulls) can be replaced by exact statements. The simulator
:func:`simulate_gaussian_null` runs the paper's pipeline to check them.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats

from bornbiased_jax.fingerprint.methods.identity_dims import coset


def kendall_tau_exact_null(n: int) -> np.ndarray:
    """All n! equally likely values of tau under independence (small n; an independent check of
    ``stats.kendall_null_var``)."""
    vals = []
    for perm in itertools.permutations(range(n)):
        c = sum(1 if perm[i] < perm[j] else -1 for i in range(n) for j in range(i + 1, n))
        vals.append(c / (n * (n - 1) / 2))
    return np.asarray(vals)


def identity_dims_moments(d_out: int, m: int) -> tuple[float, float]:
    """Mean and variance of |S| = |top-m(Y1) intersect top-m(Y2)| under the null."""
    if not 1 <= m <= d_out:
        raise ValueError(f"need 1 <= m <= d_out, got m={m}, d_out={d_out}")
    f = m / d_out
    var = m * f * (1 - f) * (d_out - m) / (d_out - 1) if d_out > 1 else 0.0
    return m * f, float(var)  # Hypergeometric(d_out, m, m)


def simulate_gaussian_null(n: int, d_out: int, m: int, reps: int,
                           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Run Algorithm 1's null ``reps`` times: (|S| per rep, all taus pooled). The identity
    dimensions S are the fingerprint's own (``fingerprint.methods.identity_dims.coset``)."""
    sizes, taus = [], []
    for _ in range(reps):
        Y1, Y2 = rng.standard_normal((n, d_out)), rng.standard_normal((n, d_out))
        S = coset(Y1, Y2, m)
        sizes.append(len(S))
        taus += [stats.kendalltau(Y1[:, s], Y2[:, s]).statistic for s in S]
    return np.asarray(sizes), np.asarray(taus)
