"""Proposition 2 (App. A.1): the ReLU arc-cosine recurrence and the tanh case.

Tier 1: closed form vs random MLP0 networks of the model zoo (d = 1024, d_ff = 4096, 16
        networks x 64 sequences, the theory table's --fast simulations, shared with it;
        allowance 2/d for the O(1/width) bias of a cosine).
Tier 2: the closed form vs 2-D Gauss-Hermite quadrature of E[relu(u1) relu(u2)].
Tier 3: identities, monotonicity and limits as hypothesis properties.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from bornbiased_jax.theory import kernels
from theory.mc import assert_mc

D = 1024


def test_tier1_relu_iterates_match_random_networks(sims):
    relu_sim = sims.mlp0_inter_similarity("relu", 4, d=D, d_ff=4 * D, n_seqs=64, reps=16)
    closed = kernels.relu_iterates(4)
    assert closed[1] == pytest.approx(1 / math.pi)
    assert closed[2] == pytest.approx(0.4937, abs=1e-4)  # "approximately 0.49" (Prop. 4)
    assert_mc(closed[1:], relu_sim.mean[1:], relu_sim.se[1:], allowance=2 / D, max_rel=0.05,
              what="ReLU MLP0 rho_l")
    assert np.all(np.diff(relu_sim.mean) > 0)  # increasing with depth, as stated


def test_tier1_tanh_stays_orthogonal_at_finite_width(sims):
    sim = sims.mlp0_inter_similarity("tanh", 3, d=D, d_ff=4 * D, n_seqs=64, reps=16)
    # Exact at any width by the sign-flip symmetry, so no width allowance.
    assert_mc(np.zeros(3), sim.mean[1:], sim.se[1:], max_abs=0.003, what="tanh MLP0 rho_l")


@pytest.mark.parametrize("rho", [-0.6, 0.0, 0.3183, 0.5, 0.9, 0.99])
def test_tier2_closed_form_vs_adaptive_quadrature(rho):
    # E[relu(u1) relu(u2)] = int_{u1, u2 > 0} u1 u2 phi_rho(u1, u2): a smooth integrand on the
    # positive quadrant, integrated adaptively; E[relu(u)^2] = 1/2 at sigma = 1.
    dens = stats.multivariate_normal([0, 0], [[1, rho], [rho, 1]])
    val, err = integrate.dblquad(lambda y, x: x * y * dens.pdf([x, y]), 0, 12, 0, 12,
                                 epsabs=1e-11, epsrel=1e-10)
    assert val / 0.5 == pytest.approx(float(kernels.relu_arccos_map(rho)), abs=1e-8)


@given(rho=st.floats(0.0, 0.999))
def test_tier3_g_above_identity_and_increasing(rho):
    g = float(kernels.relu_arccos_map(rho))
    assert g > rho  # so the iterates increase
    assert float(kernels.relu_arccos_map(min(1.0, rho + 1e-3))) > g
    # The correct reason: h = g - id is decreasing with h(1) = 0.
    h_prime = float(kernels.relu_arccos_map_derivative(rho)) - 1.0
    assert h_prime == pytest.approx(-math.acos(rho) / math.pi)
    assert h_prime < 0


@given(rho=st.floats(-0.95, 0.95))
def test_tier3_derivative_identity_by_finite_differences(rho):
    eps = 1e-6
    fd = (kernels.relu_arccos_map(rho + eps) - kernels.relu_arccos_map(rho - eps)) / (2 * eps)
    assert float(fd) == pytest.approx(float(kernels.relu_arccos_map_derivative(rho)), abs=1e-6)


def test_tier3_fixed_point_and_rate():
    assert float(kernels.relu_arccos_map(1.0)) == 1.0
    assert float(kernels.relu_arccos_map_derivative(1.0)) == 1.0  # marginal, not contracting
    it = kernels.relu_iterates(10_000)
    assert np.all(np.diff(it) > 0) and it[-1] < 1
    # Polynomial convergence: l^2 (1 - rho_l) -> 9 pi^2 / 2, with O(log l / l) corrections.
    c = kernels.relu_tail_constant()
    assert 10_000**2 * (1 - it[-1]) == pytest.approx(c, rel=0.01)
    assert 1_000**2 * (1 - it[1_000]) == pytest.approx(c, rel=0.05)


@given(sigma=st.floats(0.01, 5.0))
def test_tier3_odd_kernels_vanish_at_zero(sigma):
    # Any odd activation maps independent inputs to uncorrelated outputs (the tanh case).
    assert abs(kernels.dual_correlation_map("tanh", sigma, 0.0, n_quad=40)) < 1e-12
