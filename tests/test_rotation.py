"""The rotation-type renamings (``fingerprint.edits.rotation``) and QuaRot-style int4
(``edits.quarot_int4``): each preserves the logits to float32 rounding on the LLaMA and Qwen2
presets (with trained-like gains and biases, so that a misplaced fold or bias shows), and each
is refused, naming why, where it cannot preserve the function."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bornbiased_jax import model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits import derivatives, downstream as edits
from bornbiased_jax.fingerprint.edits.tree import map_roles
from bornbiased_jax.fingerprint.edits.obfuscation import permute_heads
from bornbiased_jax.fingerprint.edits.rotation import (flip_residual_signs, hadamard,
                                                       mix_value_heads, random_orthogonal,
                                                       randomized_hadamard, rotate_residual,
                                                       scale_mlp_units)
from bornbiased_jax.keys import seed_key

# Both forwards run the same float32 arithmetic on weights that differ by the rounding of one
# float64 product each, and a rotated stream mixes all d coordinates in every matmul, so the
# outputs differ by accumulated rounding. Measured on these tiny models (2 blocks, d = 64, 3 x 16
# tokens): at most 5.6e-7 of the largest |logit| over the twelve function-preserving cases here
# (V/O maps with condition number <= 4; an ill-conditioned M of cond ~1e2 reached 1.9e-5). The
# bound, 1e-5 of the largest |logit|, is ~18x the largest seen; a wrong fold, sign or inverse
# moves logits by a sizeable fraction of their size (the last test: a LayerNorm model rotated
# anyway moves them by more than 1e-2).
RTOL_OF_MAX = 1e-5
PRESETS = ["llama2-tiny", "qwen2-tiny"]


def _trained_like(cfg, seed: int) -> dict:
    """A fresh init whose norm gains are 1 + N(0, 0.3^2) and whose biases are N(0, 0.1^2)."""
    params = model.init(cfg, seed_key(seed))
    rng = np.random.default_rng(seed)

    def fn(path, role, leaf):
        w = np.asarray(leaf)
        if role == "norm" and path[-1] == "scale":
            return (1 + 0.3 * rng.standard_normal(w.shape)).astype(w.dtype)
        if role == "bias":
            return (0.1 * rng.standard_normal(w.shape)).astype(w.dtype)
        return w
    return map_roles(params, fn)


def _logits(cfg, params, tokens):
    return np.asarray(jax.vmap(lambda t: model.forward(params, cfg, t).logits)(tokens))


def _assert_same_function(cfg_a, a, cfg_b, b):
    tokens = jax.random.randint(jax.random.key(1), (3, 16), 0, cfg_a.vocab_size)
    la, lb = _logits(cfg_a, a, tokens), _logits(cfg_b, b, tokens)
    err, scale = np.abs(la - lb).max(), np.abs(la).max()
    assert err <= RTOL_OF_MAX * scale, f"|err| {err:.3g} at |logit| {scale:.3g}"


def _changed(a: dict, b: dict, path: tuple[str, ...]) -> bool:
    x, y = a, b
    for k in path:
        x, y = x[k], y[k]
    return not np.allclose(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("rotation", ["haar", "hadamard"])
def test_residual_rotation_preserves_the_function(name, rotation):
    cfg = get_preset(name)
    params = _trained_like(cfg, 0)
    q = (random_orthogonal if rotation == "haar" else randomized_hadamard)(
        cfg.d_model, jax.random.key(3))
    cfg_r, rotated = rotate_residual(params, cfg, q)
    assert cfg_r == cfg
    _assert_same_function(cfg, params, cfg_r, rotated)
    assert _changed(params, rotated, ("embed", "embedding"))
    assert np.all(np.asarray(rotated["layers_0"]["attn_norm"]["scale"]) == 1)  # folded


@pytest.mark.parametrize("name", PRESETS)
def test_tied_model_is_rotated_only_when_untied(name):
    cfg = get_preset(name).ablate(tie_embeddings=True)
    params = _trained_like(cfg, 1)
    q = random_orthogonal(cfg.d_model, jax.random.key(4))
    with pytest.raises(UserError, match="ties its embeddings.*untie=True"):
        rotate_residual(params, cfg, q)
    cfg_r, rotated = rotate_residual(params, cfg, q, untie=True)
    assert not cfg_r.tie_embeddings and "lm_head" in rotated
    _assert_same_function(cfg, params, cfg_r, rotated)


@pytest.mark.parametrize("name", PRESETS)
def test_sign_flips_keep_a_tied_model_tied(name):
    cfg = get_preset(name).ablate(tie_embeddings=True)
    params = _trained_like(cfg, 2)
    s = np.where(np.random.default_rng(0).random(cfg.d_model) < 0.5, -1, 1)
    flipped = flip_residual_signs(params, cfg, s)
    assert "lm_head" not in flipped
    _assert_same_function(cfg, params, cfg, flipped)
    assert _changed(params, flipped, ("layers_1", "mlp", "down_proj", "kernel"))


@pytest.mark.parametrize("name", PRESETS)
def test_mlp_units_permuted_and_scaled_with_sign(name):
    from bornbiased_jax.fingerprint.edits.obfuscation import permute_mlp_hidden

    cfg = get_preset(name)
    params = _trained_like(cfg, 3)
    rng = np.random.default_rng(1)
    perm = np.stack([rng.permutation(cfg.d_ff) for _ in range(cfg.n_layers)])
    c = np.exp(rng.normal(0, 1, (cfg.n_layers, cfg.d_ff))) * rng.choice([-1, 1], (cfg.n_layers,
                                                                                    cfg.d_ff))
    out = scale_mlp_units(permute_mlp_hidden(params, cfg, perm), cfg, c)
    _assert_same_function(cfg, params, cfg, out)


@pytest.mark.parametrize("name", PRESETS)
def test_heads_within_groups_and_value_output_maps(name):
    cfg = get_preset(name)
    params = _trained_like(cfg, 4)
    L, N, G, K = cfg.n_layers, cfg.resolved_n_kv_heads, cfg.n_groups, cfg.resolved_head_dim
    rng = np.random.default_rng(2)
    grp = np.stack([[rng.permutation(G) for _ in range(N)] for _ in range(L)])
    # M = U diag(c) with U Haar-orthogonal and c in [0.5, 2]: condition number <= 4
    u = np.linalg.qr(rng.standard_normal((L, N, K, K)))[0]
    m = u * rng.uniform(0.5, 2.0, (L, N, 1, K))
    out = mix_value_heads(permute_heads(params, cfg, np.tile(np.arange(N), (L, 1)), grp), cfg, m)
    _assert_same_function(cfg, params, cfg, out)
    assert _changed(params, out, ("layers_0", "attn", "v_proj", "kernel"))


def test_quarot_int4_is_a_rotation_then_int4():
    cfg = get_preset("llama2-tiny").ablate(tie_embeddings=True)
    params = _trained_like(cfg, 5)
    key = jax.random.key(7)
    cfg_q, quant = edits.quarot_int4(params, cfg, key, group_size=32)
    cfg_r, rotated = rotate_residual(params, cfg, randomized_hadamard(cfg.d_model, key),
                                     untie=True)
    assert cfg_q == cfg_r and not cfg_q.tie_embeddings
    want = edits.quantize_int4(rotated, 32)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), quant, want))
    assert _changed(rotated, quant, ("layers_0", "mlp", "up_proj", "kernel"))


def test_hadamard_orders():
    for n in (1, 2, 12, 20, 24, 64, 576, 768):
        h = hadamard(n)
        assert set(np.unique(h)) <= {-1, 1}
        assert np.array_equal(h @ h.T, n * np.eye(n, dtype=np.int64)), n
    with pytest.raises(UserError, match="no Hadamard matrix of order 36"):
        hadamard(36)
    q = randomized_hadamard(576, jax.random.key(0))
    assert np.allclose(q @ q.T, np.eye(576))


def test_what_cannot_be_preserved_is_refused():
    gpt2 = get_preset("gpt2-rope-tiny")
    p = model.init(gpt2, seed_key(0))
    q = random_orthogonal(gpt2.d_model, jax.random.key(0))
    for call in (lambda: rotate_residual(p, gpt2, q, untie=True),
                 lambda: flip_residual_signs(p, gpt2, np.ones(gpt2.d_model))):
        with pytest.raises(UserError, match="LayerNorm subtracts the mean"):
            call()
    with pytest.raises(UserError, match="no gated MLP"):
        scale_mlp_units(p, gpt2, np.ones((gpt2.n_layers, gpt2.d_ff)))
    llama = get_preset("llama2-tiny")
    lp = model.init(llama, seed_key(0))
    with pytest.raises(UserError, match="not orthogonal"):
        rotate_residual(lp, llama, 2 * np.eye(llama.d_model))
    with pytest.raises(UserError, match="in \\{-1, \\+1\\}"):
        flip_residual_signs(lp, llama, np.full(llama.d_model, 0.5))
    with pytest.raises(UserError, match="finite and non-zero"):
        scale_mlp_units(lp, llama, np.zeros((llama.n_layers, llama.d_ff)))
    normed = llama.ablate(attn_output_transform="headwise_rmsnorm")
    K = llama.resolved_head_dim
    with pytest.raises(UserError, match="coordinate by coordinate"):
        mix_value_heads(model.init(normed, seed_key(0)), normed,
                        np.tile(np.eye(K), (llama.n_layers, llama.resolved_n_kv_heads, 1, 1)))
    # what a refusal protects against: a LayerNorm model rotated anyway changes its function
    from bornbiased_jax.fingerprint.edits import rotation

    cfg_fake = dataclasses.replace(gpt2, norm="rmsnorm")
    _, moved = rotation.rotate_residual(p, cfg_fake, q, untie=True)
    tokens = jax.random.randint(jax.random.key(1), (2, 16), 0, gpt2.vocab_size)
    moved_cfg = dataclasses.replace(gpt2, tie_embeddings=False)
    err = np.abs(_logits(gpt2, p, tokens) - _logits(moved_cfg, moved, tokens)).max()
    assert err > 1e-2


@pytest.mark.parametrize("name", sorted(set(derivatives.DERIVATIVES) - set(derivatives.SHAPES)))
def test_registered_derivatives_keep_or_change_the_function_as_they_say(name):
    """Every registered same-shape edit runs on a trained-like LLaMA; those marked
    function-preserving keep the logits to the bound above, the others change some weight
    (the shape-changing ones: tests/test_shape_edits.py)."""
    cfg = get_preset("llama2-tiny")
    base = _trained_like(cfg, 3)
    d = derivatives.DERIVATIVES[name]
    assert d.what
    cfg2, edited = derivatives.derive(name, base, cfg, jax.random.key(5))
    if d.function_preserving:
        _assert_same_function(cfg, base, cfg2, edited)
    else:
        assert cfg2.d_model == cfg.d_model and cfg2.n_layers == cfg.n_layers
        assert _changed(base, edited, ("layers_0", "mlp", "up_proj", "kernel"))


def test_an_unknown_derivative_is_refused_naming_the_registered_ones():
    with pytest.raises(UserError, match="quarot-int4"):
        derivatives.derive("int3", {}, get_preset("llama2-tiny"), jax.random.key(0))
