"""Proposition 5 (App. A.3): intra-sequence contraction under stacked causal Attn0.

Tier 1: the exact finite-T closed form vs the model zoo's Attn0 blocks on Gaussian sequences
        (T = 16, d = 2048, 200 sequences; allowance 2/d for the finite-width bias of a cosine).
Tier 2: the paper's closed form vs the continuum limit we derive, vs quadrature of the derived
        kernel, vs the exact discrete computation at large T; the density of r = s/t.
Tier 3: monotonicity, the L = 3 coincidence of the paper's approximation, geometric collapse of
        every position onto the first token at finite T.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate

from bornbiased_jax.theory import attn0, simulate
from theory.mc import assert_mc

D = 2048


def test_tier1_exact_finite_T_vs_random_sequences():
    sim = simulate.attn0_intra_similarity(16, 4, d=D, n_seqs=200)
    exact = [attn0.attn0_intra_exact(16, n) for n in range(1, 5)]
    assert_mc(exact, sim.mean[1:], sim.se[1:], allowance=2 / D, max_abs=0.01,
              what="Attn0 intra-sequence cosine, T=16")
    # The paper's finite-T statement is off by far more than the tolerance at T = 16:
    paper = [attn0.paper_prop5_finite_T(16, n + 1) for n in range(2, 5)]
    assert np.all(sim.mean[2:] - np.array(paper) > 0.02)


@pytest.mark.parametrize("L", range(2, 12))
def test_tier2_paper_closed_form_is_the_limit_after_L_minus_1_layers(L):
    n = L - 1
    limit = attn0.attn0_intra_limit(n)
    assert attn0.paper_prop5_closed_form(L) == pytest.approx(limit, rel=1e-12)
    # ... and equals the uniform-density integral of the derived continuum kernel.
    quad, _ = integrate.quad(lambda r: attn0.attn0_kernel(r, n), 0, 1, limit=200)
    assert quad == pytest.approx(limit, abs=1e-9)
    # With the paper's stated density f(r) = 2r the integral would be different.
    wrong, _ = integrate.quad(lambda r: 2 * r * attn0.attn0_kernel(r, n), 0, 1, limit=200)
    assert abs(wrong - limit) > 0.01


@pytest.mark.parametrize("n", [1, 2, 3])
def test_tier2_continuum_limit_vs_exact_discrete_at_large_T(n):
    # Off-diagonal finite-T mean approaches the continuum limit as T grows (O(log T / T)).
    errs = [abs(attn0.attn0_intra_exact(T, n, include_diagonal=False) - attn0.attn0_intra_limit(n))
            for T in (256, 1024, 4096)]
    assert errs[2] < errs[1] < errs[0] and errs[2] < 5 * np.log(4096) / 4096


def test_tier2_pairs_ratio_is_uniform():
    # Exact count over all pairs s < t <= T: P(s/t <= a) -> a (density 1, not 2r).
    T = 2000
    t = np.arange(1, T + 1)
    for a in (0.25, 0.5, 0.75):
        count = np.sum(np.floor(a * t))  # s in [1, a t]
        assert count / (T * (T - 1) / 2) == pytest.approx(a, abs=2e-3)


def test_tier3_paper_approximation_coincides_at_L3_only():
    assert attn0.attn0_intra_limit(2) == pytest.approx(8 / 9, rel=1e-12)
    assert float(attn0.paper_prop5_approximation(np.inf, 3)) == pytest.approx(8 / 9)
    # Elsewhere it overshoots; 1 - rho decays slower than 1/L^2.
    gaps = [float(attn0.paper_prop5_approximation(np.inf, L)) - attn0.attn0_intra_limit(L - 1)
            for L in range(5, 13)]
    assert all(g > 0 for g in gaps) and gaps[-1] > 5e-3
    l2 = [L * L * (1 - attn0.attn0_intra_limit(L - 1)) for L in range(4, 13)]
    assert np.all(np.diff(l2) > 0)


@given(T=st.integers(2, 64), n=st.integers(1, 8))
def test_tier3_monotone_in_depth_and_length(T, n):
    a = attn0.attn0_intra_exact(T, n)
    assert attn0.attn0_intra_exact(T, n + 1) > a  # more layers, more contraction
    assert attn0.attn0_intra_exact(T + 1, n) < a  # longer sequences contract less (Finding 5)


def test_tier3_every_position_collapses_onto_the_first_token():
    # A has eigenvalues 1/i; its top eigenvector is constant and A^n -> 1 e_1^T at rate 2^-n.
    T = 32
    A = attn0.running_average_matrix(T)
    errs = [np.abs(np.linalg.matrix_power(A, n) - np.outer(np.ones(T), np.eye(T)[0])).max()
            for n in (10, 20, 30)]
    rate = np.log2(errs[1] / errs[2]) / 10  # halvings per layer, after the 1/3^n terms fade
    assert rate == pytest.approx(1.0, abs=0.03)
    assert 1 - attn0.attn0_intra_exact(T, 30) < 1e-6
