"""Algorithm 1's Gaussian null (Sec. 6.1.1, App. B.3.1) in closed form.

Tier 1: the simulated null pipeline (top-m selection, intersection, Kendall tau) vs
        E|S| = m^2/d_out (hypergeometric) and Var(tau) = 2(2n+5)/(9n(n-1)).
Tier 2: the tau variance vs exact enumeration of all n! permutations.
Tier 3: identities.
"""

import math

import numpy as np
import pytest
from scipy import stats

from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.stats import kendall_null_var
from bornbiased_jax.theory import seedprint_null as sp
from theory.mc import assert_mc


def test_tier1_null_pipeline_matches_closed_forms():
    rng = np.random.default_rng(0)
    n, d_out, m, reps = 100, 256, 48, 300
    sizes, taus = sp.simulate_gaussian_null(n, d_out, m, reps, rng)
    mean_s, var_s = sp.identity_dims_moments(d_out, m)
    assert mean_s == pytest.approx(m * m / d_out)
    assert_mc(mean_s, sizes.mean(), math.sqrt(var_s / reps), max_rel=0.1, what="E|S|")
    v = kendall_null_var(n)
    # SE of a sample variance of ~normal draws: v sqrt(2/(k-1)).
    assert_mc(v, taus.var(ddof=1), v * math.sqrt(2 / (taus.size - 1)), max_rel=0.2,
              what="Var(tau)")
    assert_mc(0.0, taus.mean(), math.sqrt(v / taus.size), max_abs=0.01, what="E tau")


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7])
def test_tier2_tau_variance_by_enumeration(n):
    vals = sp.kendall_tau_exact_null(n)
    assert vals.mean() == pytest.approx(0.0, abs=1e-12)
    assert vals.var() == pytest.approx(kendall_null_var(n), rel=1e-12)


def test_tier3_identities():
    Y = np.arange(12.0).reshape(3, 4)
    assert set(D.top_m(Y.mean(0), 2)) == {2, 3}
    np.testing.assert_array_equal(D.coset(Y, Y, 2), [2, 3])
    mean, var = sp.identity_dims_moments(10, 10)
    assert (mean, var) == (10.0, 0.0)
    x = np.random.default_rng(1).standard_normal(50)
    assert stats.kendalltau(x, x).statistic == pytest.approx(1.0)
    with pytest.raises(ValueError):
        sp.identity_dims_moments(10, 11)
