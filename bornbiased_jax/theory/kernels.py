"""Correlation maps of random MLP0 layers (paper Sec. 4.2, Proposition 2, App. A.1).

In the infinite-width limit a random MLP0 layer phi(x W_up) W_down maps two inputs whose
cosine similarity is rho to outputs whose cosine similarity is

    g_phi(rho; sigma) = E[phi(u1) phi(u2)] / E[phi(u)^2],  (u1, u2) ~ N(0, sigma^2 [[1, rho], [rho, 1]])

(the zero-mean W_down preserves inner products, so the *uncentred* second moment appears; sigma
is the pre-activation std). For ReLU this is the normalised arc-cosine kernel of degree 1,

    g(rho) = (sqrt(1 - rho^2) + (pi - arccos rho) rho) / pi          (Eq. 3),

independent of sigma. Everything is float64 numpy.

Checked statements, and where they differ from the paper:
  * rho_1 = g(0) = 1/pi and g(rho) > rho on [0, 1), so rho_l increases to 1: true. The proof's
    reason ("g(0) > 0 and g'(1) = 1") is not enough on its own; what closes it is that
    h(rho) = g(rho) - rho has h'(rho) = -arccos(rho)/pi < 0 and h(1) = 0 (equivalently: g is
    convex with g(1) = 1, g'(1) = 1, so it lies above its tangent rho at 1).
  * "The only stable fixed point is 1": 1 is the only fixed point in [0, 1], but g'(1) = 1, so
    it is *marginally* stable and convergence is polynomial, not geometric:
    1 - rho_l ~ 9 pi^2 / (2 l^2) as l -> infinity (:func:`relu_tail_constant`; from
    g(1 - e) = 1 - e + (2 sqrt 2 / (3 pi)) e^{3/2} + O(e^{5/2})).
  * tanh: E[rho_l] = 0 for every l, and in fact at any finite width, not only in the limit:
    replacing x1 by -x1 (same law) flips the sign of an odd network's output.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import special

Array = np.ndarray


def relu_arccos_map(rho):
    """g(rho) of Eq. 3: the output cosine of a random ReLU MLP0 layer given input cosine rho."""
    rho = np.clip(np.asarray(rho, dtype=np.float64), -1.0, 1.0)
    return (np.sqrt(1.0 - rho**2) + (np.pi - np.arccos(rho)) * rho) / np.pi


def relu_arccos_map_derivative(rho):
    """g'(rho) = 1 - arccos(rho)/pi (so g'(1) = 1 and g' in [1/2, 1] on [0, 1])."""
    return 1.0 - np.arccos(np.clip(np.asarray(rho, np.float64), -1, 1)) / np.pi


def relu_iterates(n_layers: int, rho0: float = 0.0) -> Array:
    """rho_0, rho_1, ..., rho_L of Proposition 2 (rho_0 = 0: independent Gaussian inputs)."""
    out = [float(rho0)]
    for _ in range(n_layers):
        out.append(float(relu_arccos_map(out[-1])))
    return np.asarray(out)


def relu_tail_constant() -> float:
    """lim l^2 (1 - rho_l) = 9 pi^2 / 2 (beyond the paper: the rate of Proposition 2's limit)."""
    return 4.5 * math.pi**2


# --- dual kernels of any activation by Gauss-Hermite quadrature -------------------------------
ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "relu": lambda u: np.maximum(u, 0.0),
    "gelu": lambda u: u * special.ndtr(u),  # exact x * Phi(x), paper Sec. 4.2
    "gelu_tanh": lambda u: 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u**3))),
    "tanh": np.tanh,
    "silu": lambda u: u * special.expit(u),
}


def _gauss_hermite(n: int):
    """Nodes and weights for E[f(z)], z ~ N(0, 1)."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / np.sqrt(2 * np.pi)


def dual_moment(activation: str, sigma: float, rho, n_quad: int = 120):
    """E[phi(u1) phi(u2)], (u1, u2) ~ N(0, sigma^2 [[1, rho], [rho, 1]]), by 2-D quadrature.

    u1 = sigma z1, u2 = sigma (rho z1 + sqrt(1 - rho^2) z2) with z1, z2 independent N(0, 1).
    Spectrally accurate for smooth activations (GELU, SiLU, tanh); for ReLU the kink makes the
    error O(1/n_quad) (1.6e-3 at 160 nodes, rho = 0), so use :func:`relu_arccos_map` there.
    """
    phi = ACTIVATIONS[activation]
    z, w = _gauss_hermite(n_quad)
    rho = np.atleast_1d(np.asarray(rho, np.float64))
    z1, z2 = z[:, None], z[None, :]
    ww = w[:, None] * w[None, :]
    out = np.array([np.sum(ww * phi(sigma * z1) * phi(sigma * (r * z1 + np.sqrt(max(0.0, 1 - r * r)) * z2)))
                    for r in rho])
    return out if out.size > 1 else float(out[0])


def dual_correlation_map(activation: str, sigma: float, rho, n_quad: int = 120):
    """g_phi(rho; sigma) = E[phi(u1) phi(u2)] / E[phi(u)^2]: the output cosine of one random
    MLP0 layer whose pre-activations have std sigma and input cosine rho."""
    phi = ACTIVATIONS[activation]
    z, w = _gauss_hermite(n_quad)
    second = float(np.sum(w * phi(sigma * z) ** 2))
    return dual_moment(activation, sigma, rho, n_quad) / second


def preactivation_std(init_std: float, d_model: int, input_rms: float) -> float:
    """std of u = x W_up when W_up ~ N(0, init_std^2) and x has root-mean-square ``input_rms``:
    init_std * sqrt(d) * rms(x). After LayerNorm rms(x) = 1: 0.02 * sqrt(768) = 0.554, the
    paper's "sigma ~ 0.55"; on raw embeddings rms(x) = 0.02: 0.011, its "sigma ~ 0.011"."""
    return init_std * math.sqrt(d_model) * input_rms


def first_layer_contraction(activation: str, sigma: float) -> float:
    """g_phi(0; sigma) = (E phi(u))^2 / E phi(u)^2: the inter-sequence cosine one random MLP0
    layer creates from independent inputs. Zero for odd phi; 1/pi for ReLU at any sigma; for
    GELU it grows with sigma (Finding 4.1 as a prediction)."""
    return float(dual_correlation_map(activation, sigma, 0.0))
