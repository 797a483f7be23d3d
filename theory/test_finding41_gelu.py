"""Finding 4.1 as a prediction: GELU's first-layer contraction g_gelu(0; sigma) = (E phi)^2/E phi^2.

Tier 1: the quadrature closed form vs random GELU MLP0 layers whose pre-activation std is set
        by the input scale (sigma = 0.02 sqrt(d) rms(x)).
Tier 2: the small-sigma expansion 2 sigma^2 / pi and a large-sigma limit (ReLU's 1/pi).
Tier 3: monotonicity in sigma.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bornbiased_jax.theory import kernels
from theory.mc import assert_mc

D = 1024


def test_paper_sigmas_are_init_std_times_sqrt_d():
    assert kernels.preactivation_std(0.02, 768, 1.0) == pytest.approx(0.554, abs=1e-3)
    assert kernels.preactivation_std(0.02, 768, 0.02) == pytest.approx(0.011, abs=1e-3)


def test_tier1_gelu_contraction_with_layernorm_scale(sims):
    sigma = 0.554
    closed = kernels.first_layer_contraction("gelu", sigma)
    # 16 networks x 64 sequences: the theory table's --fast simulation, shared with it.
    sim = sims.mlp0_inter_similarity("gelu", 1, d=D, d_ff=4 * D, n_seqs=64, reps=16,
                                     input_std=sigma / (0.02 * math.sqrt(D)))
    assert_mc(closed, sim.mean[1], sim.se[1], allowance=2 / D * closed * math.pi, max_rel=0.12,
              what="GELU rho_1 at sigma 0.554")


def test_tier2_small_and_large_sigma_limits():
    # phi(u) ~ u/2 + u^2/sqrt(2 pi): E phi ~ sigma^2/sqrt(2 pi), E phi^2 ~ sigma^2/4.
    for s in (0.003, 0.011):
        assert kernels.first_layer_contraction("gelu", s) == pytest.approx(2 * s**2 / math.pi,
                                                                          rel=0.01)
    # Large sigma: GELU -> ReLU, whose contraction is 1/pi.
    assert kernels.first_layer_contraction("gelu", 200.0) == pytest.approx(1 / math.pi, rel=1e-2)


@given(a=st.floats(0.01, 3.0), b=st.floats(0.01, 3.0))
def test_tier3_contraction_grows_with_sigma(a, b):
    lo, hi = sorted((a, b))
    if hi - lo < 1e-3:
        return
    assert kernels.first_layer_contraction("gelu", lo) < kernels.first_layer_contraction("gelu", hi)


def test_silu_and_gelu_tanh_are_asymmetric_too():
    for act in ("silu", "gelu_tanh"):
        assert kernels.first_layer_contraction(act, 1.0) > 0.05
    assert np.isclose(kernels.first_layer_contraction("tanh", 1.0), 0.0, atol=1e-12)
