"""Proposition 4 (App. A.2): Attn0 amplifies MLP0's contraction to T/(T + pi - 1).

Tier 1: closed forms vs the model zoo's ReLU MLP0 and Attn0 blocks (d = 512, d_ff = 2048,
        T = 128, 16 networks x 48 sequences: the theory table's --fast simulation, shared with
        it; allowance 2/d scaled by the quantity's distance from 1 for the averaged output,
        whose finite-width error shrinks with 1 - rho).
Tier 2: the general form T rho/(T rho + 1 - rho) vs a direct covariance computation.
Tier 3: limits and monotonicity.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bornbiased_jax.theory import attn0, kernels
from theory.mc import assert_mc

T, D = 128, 512


def test_tier1_table3_rows(sims):
    sim = sims.prop4_similarities(T, d=D, d_ff=4 * D, n_seqs=48, reps=16)
    assert_mc(1 / math.pi, sim["h"].mean, sim["h"].se, allowance=2 / D, max_rel=0.1, what="h")
    assert_mc(kernels.relu_iterates(2)[2], sim["mlp0_mlp0"].mean, sim["mlp0_mlp0"].se,
              allowance=2 / D, max_rel=0.1, what="MLP0 o MLP0")
    closed = float(attn0.prop4_attn0_after_relu(T))
    assert closed == pytest.approx(0.9835, abs=1e-4)  # the paper's "~0.98 at T = 128"
    assert_mc(closed, sim["attn0_mlp0"].mean, sim["attn0_mlp0"].se,
              allowance=2 / D * (1 - closed), max_abs=0.003, what="Attn0 o MLP0")
    assert sim["attn0_mlp0"].mean > sim["mlp0_mlp0"].mean + 0.4  # the amplification


@pytest.mark.parametrize("T_, rho", [(1, 0.3), (5, 1 / math.pi), (64, 0.1), (300, 0.9)])
def test_tier2_general_form_vs_covariance_algebra(T_, rho):
    # Two sequences of T unit-variance tokens, every distinct pair with covariance rho. The
    # averages' covariance and variances are quadratic forms of the joint covariance matrix.
    n = 2 * T_
    C = np.full((n, n), rho) + (1 - rho) * np.eye(n)
    w1 = np.r_[np.ones(T_), np.zeros(T_)] / T_
    w2 = np.r_[np.zeros(T_), np.ones(T_)] / T_
    direct = (w1 @ C @ w2) / math.sqrt((w1 @ C @ w1) * (w2 @ C @ w2))
    assert float(attn0.attn0_amplified_similarity(T_, rho)) == pytest.approx(direct, rel=1e-12)


@given(t=st.integers(1, 10_000), rho=st.floats(0.01, 0.99))
def test_tier3_limits_and_monotonicity(t, rho):
    f = lambda tt, r: float(attn0.attn0_amplified_similarity(tt, r))  # noqa: E731
    assert f(1, rho) == pytest.approx(rho)  # one token: nothing to average
    assert rho <= f(t, rho) < 1
    assert f(t + 1, rho) >= f(t, rho)  # more tokens, more contraction
    assert f(t, min(0.999, rho + 0.005)) > f(t, rho)
    assert float(attn0.prop4_attn0_after_relu(t)) == pytest.approx(f(t, 1 / math.pi), rel=1e-12)
    assert float(attn0.prop4_attn0_after_relu(10**9)) == pytest.approx(1.0, abs=1e-8)
