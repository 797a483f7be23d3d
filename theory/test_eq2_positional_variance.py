"""Eq. 2 / Figure 9: Var(o_i) = sigma^2 / i for the running average, and what softmax adds.

Tier 1: uniform (Attn0) weights on the values of a real random attention block give
        i Var(o_i) / Var(v) = 1; real softmax weights give the corrected factor
        i E[sum_j A_ij^2] (~ exp(s^2) for large i), not 1.
Tier 2: the factor's Monte Carlo vs its log-normal limit exp(s^2) and the exact value 1 at i = 1.
Tier 3: identities.
"""

import math

import numpy as np
import pytest

from bornbiased_jax.theory import attn0, simulate
from theory.mc import assert_mc

T = 32


@pytest.fixture
def softmax(sims):
    # 16 networks x 64 sequences: the theory table's simulation, shared with it.
    return sims.attention_output_variance(T, d=768, n_heads=12, n_seqs=64, reps=16)


def test_tier1_uniform_weights_give_sigma2_over_i():
    # 32 positions are checked at once, each against an SE estimated from the replicates. With
    # 16 replicates the SE itself is noisy (t with 15 df: P(|t| > 4) = 1.2e-3 per position,
    # ~4 % over 32 positions, and seeds failing at 4.9 SE were seen); 64 replicates give
    # P(|t_63| > 4) = 1.7e-4 per position, ~0.5 % family-wise.
    uni = simulate.attention_output_variance(T, d=768, n_heads=12, n_seqs=32, reps=64,
                                             uniform=True, seed=3)
    i = np.arange(1, T + 1)
    ratio = uni.variance.mean * i / uni.value_variance.mean
    se = uni.variance.se * i / uni.value_variance.mean
    assert_mc(np.ones(T), ratio, se, max_abs=0.03, what="Attn0 weights: i Var(o_i)/sigma^2")


def test_tier1_softmax_weights_exceed_sigma2_over_i(softmax):
    s = float(softmax.score_std.mean)
    assert 0.25 < s < 0.35  # 0.02 * sqrt(768) = 0.55 per q, k coordinate -> s ~ 0.55^2 = 0.31
    i = np.arange(1, T + 1)
    ratio = softmax.variance.mean * i / softmax.value_variance.mean
    se = softmax.variance.se * i / softmax.value_variance.mean
    factor = attn0.softmax_variance_factor(T, s, n_mc=100_000)
    # The factor's own Monte Carlo error (~1e-3) is small next to the simulation's SE.
    assert_mc(factor[-8:], ratio[-8:], se[-8:], allowance=3e-3, max_abs=0.03,
              what="softmax i Var(o_i)/sigma^2")
    assert np.all(ratio[-8:] > 1.05)  # the paper's sigma^2/i underestimates by ~9 % here


def test_tier2_factor_limits():
    f = attn0.softmax_variance_factor(400, 0.3, n_mc=40_000)
    assert f[0] == 1.0
    assert f[-1] == pytest.approx(math.exp(0.09), rel=0.01)  # log-normal weights, large i
    assert np.all(attn0.softmax_variance_factor(10, 0.0, n_mc=1000) == pytest.approx(1.0))


def test_tier3_running_average_variance_identity():
    v = attn0.running_average_variance(10, 2.0)
    assert v[0] == 2.0 and v[-1] == pytest.approx(0.2)
    A = attn0.running_average_matrix(10)
    np.testing.assert_allclose(2.0 * (A**2).sum(1), v, rtol=1e-12)  # Var(A x) for i.i.d. x
