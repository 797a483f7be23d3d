"""Function-preserving changes of basis beyond permutations: what rotation-based quantization
(QuaRot, SpinQuant, SliceGPT) applies honestly and a thief can apply to hide a copy. Like
:mod:`.obfuscation`, each acts on a plain parameter dict and returns a new one; each is exact
in real arithmetic and preserves the logits to float32 rounding.

  :func:`rotate_residual`     the residual stream x -> x Q for any orthogonal Q (d, d), after
                              folding every RMSNorm gain into the matrices that read the norm;
  :func:`random_orthogonal`, :func:`randomized_hadamard`   the Q's (Haar; QuaRot's D H / sqrt d);
  :func:`flip_residual_signs` x -> x diag(s), s in {-1, +1}^d (no folding needed);
  :func:`scale_mlp_units`     SwiGLU unit j: up column times c_j, down row divided by c_j
                              (c_j of either sign; the gate row, inside the nonlinearity, cannot
                              carry a scale, so it only moves with its unit);
  :func:`mix_value_heads`     per K/V head n: V's columns times M_n (K, K) invertible, the output
                              projection's rows of every query head reading it times M_n^-1.

Why each holds, and where it does not (refused with a ``UserError`` naming the reason):
  * RMSNorm(x Q) = RMSNorm(x) Q for orthogonal Q (the root mean square is a norm); its gain g
    does not commute with Q, so it is folded first: diag(g) W for each reader W (attention
    q/k/v and output gate, MLP gate/up, the LM head), gain set to 1. LayerNorm subtracts the
    mean, which x -> x Q (and x -> x diag(s)) does not preserve: LayerNorm models are refused.
  * Tied embeddings: the input embedding E becomes E Q, while the unembedding must become
    Q^T diag(g) E^T; the two are one matrix only when g is constant, so a tied model is refused
    unless ``untie=True``, which gives the rotated copy its own LM head (what a thief or a
    quantizer exporting an untied checkpoint does). Sign flips commute with diag(g), so they
    keep a tied model tied.
  * Writers: every matrix or bias that adds to the residual stream (embeddings, W_O, W_down and
    their biases) is multiplied by Q on its residual axis; readers by Q^T.
  * :func:`mix_value_heads` needs the attention output to reach W_O linearly per head: it is
    refused with the head-wise RMSNorm or the output gate, which act coordinate-wise on a head.
  * Sandwich norms (Gemma's ``post_norms``): a sublayer's output o is normalised and scaled,
    g * o / rms(o), just before it joins the residual stream. Rotating the stream needs
    (g * o / rms(o)) Q = g' * o' / rms(o') for some gain g' and o' = o Q (W_O and W_down can
    carry Q, and rms(o Q) = rms(o)), i.e. diag(g) Q = Q diag(g'): only a constant g allows that,
    and there is no matrix after the post-norm to fold diag(g) into. A rotation (and QuaRot) of
    such a model is refused; sign flips (diagonal, they commute with diag(g)) and permutations
    remain exact.
  * Gemma's (1 + w) gains (``norm_unit_offset``) are folded as the gains 1 + w they are, and
    set to w = 0 after folding.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import schema
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits.obfuscation import norm_names, rescale_norms
from bornbiased_jax.fingerprint.edits.tree import layer_index, map_roles
from bornbiased_jax.schema import residual_axis

def check_rotatable(cfg: ModelConfig, what: str) -> None:
    _check_residual_norm(cfg, what)
    if cfg.post_norms:
        raise UserError(f"{what} is not function-preserving for {cfg.name}: its sandwich norms "
                        f"(post_norms) scale each sublayer's normalised output by a gain g just "
                        f"before the residual stream, and diag(g) does not commute with a "
                        f"rotation unless g is constant, with no matrix after the norm to fold "
                        f"it into (sign flips and permutations remain exact)")


def _check_residual_norm(cfg: ModelConfig, what: str) -> None:
    if cfg.norm == "layernorm":
        raise UserError(f"{what} is not function-preserving for {cfg.name}: LayerNorm subtracts "
                        f"the mean of the residual coordinates, which a change of basis does "
                        f"not preserve (RMSNorm and no norm are supported)")


def random_orthogonal(d: int, key: jax.Array) -> np.ndarray:
    """A Haar-distributed orthogonal (d, d) matrix (QR of a Gaussian, signs fixed), float64."""
    g = np.asarray(jax.random.normal(key, (d, d), jnp.float32), np.float64)
    q, r = np.linalg.qr(g)
    return q * np.sign(np.diag(r))


def _paley(q: int) -> np.ndarray:
    """Paley's construction I: a Hadamard matrix of order q + 1 for a prime q = 3 mod 4."""
    residues = {(i * i) % q for i in range(1, q)}
    chi = np.array([0] + [1 if i in residues else -1 for i in range(1, q)])
    jac = chi[(np.arange(q)[None, :] - np.arange(q)[:, None]) % q]  # Jacobsthal matrix
    s = np.zeros((q + 1, q + 1), np.int64)
    s[0, 1:], s[1:, 0], s[1:, 1:] = 1, -1, jac
    return s + np.eye(q + 1, dtype=np.int64)


# Hadamard orders built here besides powers of two (Paley I from q = 11, 19): as QuaRot, a
# width d = 2^k m is served by H_m (x) H_{2^k}, repeatedly (576 = 12 x 12 x 4, 768 = 12 x 64)
_BASE_ORDERS = {12: 11, 20: 19}


def hadamard(n: int) -> np.ndarray:
    """A Hadamard matrix of order n (entries +-1, H H^T = n I), int64; for n a power of two
    times a product of 12s and 20s, else a ``UserError`` naming n."""
    if n == 1:
        return np.ones((1, 1), np.int64)
    if n % 2 == 0 and (n & (n - 1)) == 0:
        h = hadamard(n // 2)
        return np.block([[h, h], [h, -h]])
    for m, q in _BASE_ORDERS.items():
        if n % m == 0:
            try:
                return np.kron(_paley(q), hadamard(n // m))
            except UserError:
                continue
    raise UserError(f"no Hadamard matrix of order {n} is built here (orders 2^k times products "
                    f"of 12 and 20 are); use a random orthogonal rotation for d = {n}")


def randomized_hadamard(d: int, key: jax.Array) -> np.ndarray:
    """QuaRot's rotation diag(s) H / sqrt(d), s uniform in {-1, +1}^d: orthogonal, float64."""
    s = np.where(np.asarray(jax.random.bernoulli(key, 0.5, (d,))), 1.0, -1.0)
    return s[:, None] * hadamard(d) / np.sqrt(d)


def _untied(params: dict) -> dict:
    """``params`` with an explicit LM head W_E^T (d, V), as an untied model holds it."""
    out = dict(params)
    out["lm_head"] = {"kernel": jnp.asarray(np.asarray(params["embed"]["embedding"]).T)}
    return out


def _fold_gains(params: dict, cfg: ModelConfig) -> dict:
    """Every RMSNorm gain g read by a matrix folded into that matrix, the gain set to 1: the
    compensated rescaling ``obfuscation.rescale_norms`` with c = 1/g. A zero gain cannot be
    folded this way and is refused."""
    scales = {}
    for name in norm_names(params, cfg):
        node = params
        for k in name.split("/"):
            node = node[k]
        g = schema.norm_gain(cfg, node["scale"])
        if np.any(g == 0):
            raise UserError(f"{name} has a zero gain: a rotation folds each gain g into the "
                            f"matrices reading the norm as a rescaling by 1/g")
        scales[name] = 1.0 / g
    return rescale_norms(params, cfg, scales)


def rotate_residual(params: dict, cfg: ModelConfig, q: np.ndarray, *, untie: bool = False
                    ) -> tuple[ModelConfig, dict]:
    """(config, params) of the model whose residual stream is x Q (``q`` orthogonal (d, d)):
    gains folded into their readers, writers times Q, readers Q^T times. A model with tied
    embeddings is refused unless ``untie`` (then the copy's config is untied and its LM head
    Q^T diag(g) W_E^T). Computed in float64, stored float32. A model with sandwich norms is
    refused (see the module docstring)."""
    check_rotatable(cfg, "a residual rotation")
    d = cfg.d_model
    q = np.asarray(q, np.float64)
    if q.shape != (d, d) or not np.allclose(q @ q.T, np.eye(d), atol=1e-8):
        raise UserError(f"the rotation must be an orthogonal ({d}, {d}) matrix, got shape "
                        f"{q.shape}" + ("" if q.shape != (d, d) else " that is not orthogonal"))
    if cfg.tie_embeddings:
        if not untie:
            raise UserError(f"{cfg.name} ties its embeddings: a rotated copy needs the input "
                            f"embedding W_E Q and the unembedding Q^T diag(g) W_E^T, which are "
                            f"one matrix only when the final norm's gain g is constant; pass "
                            f"untie=True to give the copy its own LM head")
        params, cfg = _untied(params), dataclasses.replace(cfg, tie_embeddings=False)
    if cfg.norm == "rmsnorm":
        params = _fold_gains(params, cfg)

    def fn(path, role, leaf):
        axis = residual_axis(path)
        if axis is None or role == "norm":
            return leaf
        w = np.asarray(leaf, np.float64)
        if w.ndim == 1:  # a bias added to the residual stream
            return (w @ q).astype(np.float32)
        reader = role in ("kernel", "head") and axis == 0
        return ((q.T @ w) if reader else (w @ q)).astype(np.float32)
    return cfg, map_roles(params, fn)


def flip_residual_signs(params: dict, cfg: ModelConfig, signs: np.ndarray) -> dict:
    """The model whose residual coordinate j is s_j x_j (``signs`` in {-1, +1}^d): every
    residual axis times s. RMSNorm gains commute with the flip, so nothing is folded and a
    tied model stays tied."""
    _check_residual_norm(cfg, "a residual sign flip")
    s = np.asarray(signs)
    if s.shape != (cfg.d_model,) or not np.all(np.abs(s) == 1):
        raise UserError(f"signs must be {cfg.d_model} values in {{-1, +1}}, got shape {s.shape}")
    s = s.astype(np.float32)

    def fn(path, role, leaf):
        axis = residual_axis(path)
        if axis is None or role == "norm":
            return leaf
        w = np.asarray(leaf)
        return w * (s if w.ndim == 1 or axis == 1 else s[:, None])
    return map_roles(params, fn)


def scale_mlp_units(params: dict, cfg: ModelConfig, scale_LF: np.ndarray) -> dict:
    """SwiGLU unit j of layer l: up_proj's column (and bias) times c[l, j], down_proj's row
    divided by it; ``scale_LF`` (L, F) finite and non-zero, of either sign. Refused for
    non-gated MLPs, whose activation acts on the scaled unit."""
    if not cfg.has_mlp or not cfg.gated_mlp:
        raise UserError(f"{cfg.name} has no gated MLP: a unit's scale passes through its "
                        f"activation ({cfg.activation}), which is not homogeneous, so only "
                        f"SwiGLU's linear up branch can carry it")
    c = np.asarray(scale_LF, np.float64)
    if c.shape != (cfg.n_layers, cfg.d_ff) or not np.all(np.isfinite(c)) or np.any(c == 0):
        raise UserError(f"scale_LF must be ({cfg.n_layers}, {cfg.d_ff}) finite and non-zero, "
                        f"got shape {c.shape}")

    def fn(path, role, leaf):
        if path[1] != "mlp" or role not in ("kernel", "bias"):
            return leaf
        w, cl = np.asarray(leaf, np.float64), c[layer_index(path)]
        if path[2] == "up_proj":
            return (w * cl).astype(np.float32)
        if path[2] == "down_proj" and role == "kernel":
            return (w / cl[:, None]).astype(np.float32)
        return leaf
    return map_roles(params, fn)


def mix_value_heads(params: dict, cfg: ModelConfig, m_LNKK: np.ndarray) -> dict:
    """Per layer l and K/V head n: V's columns of that head times M = m_LNKK[l, n] (K, K),
    invertible (and its bias), and W_O's rows of each query head that reads it times M^-1."""
    if not cfg.has_attn_params:
        raise UserError(f"{cfg.name} has no attention heads to mix")
    if cfg.attn_output_transform == "headwise_rmsnorm" or cfg.attn_output_gate:
        raise UserError(f"{cfg.name} acts on each head's output coordinate by coordinate "
                        f"(head-wise RMSNorm or output gate) before W_O: a V/O change of basis "
                        f"would not pass through it")
    L, H, N, K = cfg.n_layers, cfg.n_heads, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    m = np.asarray(m_LNKK, np.float64)
    if m.shape != (L, N, K, K) or not np.all(np.isfinite(m)):
        raise UserError(f"m_LNKK must be ({L}, {N}, {K}, {K}) and finite, got shape {m.shape}")
    cond = np.linalg.cond(m)
    if not np.all(cond < 1e6):
        raise UserError(f"every M must be well conditioned (cond < 1e6), worst {cond.max():.3g}")
    inv = np.linalg.inv(m)
    G = H // N

    def fn(path, role, leaf):
        if path[1] != "attn" or role not in ("kernel", "bias"):
            return leaf
        w, ml, il = np.asarray(leaf, np.float64), m[layer_index(path)], inv[layer_index(path)]
        if path[2] == "v_proj":  # (d, N K) or (N K,): columns of head n times M_n
            heads = w.reshape(*w.shape[:-1], N, K)
            return np.einsum("...nk,nkj->...nj", heads, ml).reshape(w.shape).astype(np.float32)
        if path[2] == "o_proj" and role == "kernel":  # (H K, d): rows of head h times M^-1
            rows = w.reshape(N, G, K, -1)
            return np.einsum("nkj,ngjd->ngkd", il, rows).reshape(w.shape).astype(np.float32)
        return leaf
    return map_roles(params, fn)
