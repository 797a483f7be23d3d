"""The shape-changing derivatives (``fingerprint.edits.shape_edits``, registered in
``derivatives.SHAPES``): each does the shape change it says, states where every layer and
every token id of the result came from, and keeps the function where it says so."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from bornbiased_jax import model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits import derivatives
from bornbiased_jax.fingerprint.edits import shape_edits as S
from bornbiased_jax.fingerprint.edits import vocab_edits as VE
from bornbiased_jax.keys import seed_key

# As tests/test_rotation.py's bound: float32 forwards of re-arranged weights agree to a few
# ulps of the largest logit; a split unit's halves add in another order (two roundings), and
# the rotated ones mix every coordinate. A wrong edit moves logits by a sizeable fraction.
RTOL_OF_MAX = 1e-5
PRESETS = ["llama2-tiny", "qwen2-tiny"]


def _base(name: str = "llama2-tiny", seed: int = 3):
    cfg = dataclasses.replace(get_preset(name), shared_embedding=False)
    params = model.init(cfg, seed_key(seed))
    rng = np.random.default_rng(seed)  # norm gains away from 1, as training leaves them
    params = jax.tree_util.tree_map_with_path(
        lambda kp, a: (1 + 0.3 * rng.standard_normal(a.shape)).astype(a.dtype)
        if str(kp[-1].key) == "scale" else a, params)
    return cfg, params


def _logits(cfg, params, tokens):
    return np.asarray(jax.vmap(lambda t: model.forward(params, cfg, t).logits)(tokens))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", sorted(derivatives.SHAPES))
def test_shape_derivatives_do_what_they_say(preset, name):
    cfg, base = _base(preset)
    d = derivatives.SHAPES[name]
    key = jax.random.key(5)
    cfg2, edited = derivatives.derive(name, base, cfg, key)
    # the parameter tree matches the stated config exactly
    want = jax.tree.map(lambda a: a.shape, model.param_shapes(cfg2))
    got = jax.tree.map(lambda a: np.shape(a), edited)
    assert got == want, name
    origin = d.layer_origin(cfg)
    assert len(origin) == cfg2.n_layers
    old_of_new = d.vocab_origin(cfg, key)
    assert len(old_of_new) == cfg2.vocab_size
    for j, o in enumerate(origin):  # a copied layer's attention is its origin's (or rotated)
        if o is not None and "rotated" not in name:
            np.testing.assert_array_equal(edited[f"layers_{j}"]["attn"]["q_proj"]["kernel"],
                                          base[f"layers_{o}"]["attn"]["q_proj"]["kernel"])
    tokens = np.asarray(jax.random.randint(jax.random.key(1), (3, 16), 0, cfg2.vocab_size))
    keep = np.all(old_of_new[tokens] >= 0, axis=1)
    tokens = tokens[keep] if keep.any() else np.zeros((1, 16), np.int64)
    la = _logits(cfg, base, old_of_new[tokens])[..., old_of_new[old_of_new >= 0]]
    lb = _logits(cfg2, edited, tokens)[..., old_of_new >= 0]
    err, scale = np.abs(la - lb).max(), np.abs(la).max()
    if d.function_preserving:
        assert err <= RTOL_OF_MAX * scale, f"{name}: |err| {err:.3g} at |logit| {scale:.3g}"
    else:
        assert err > 1e-3 * scale, f"{name} says it changes the function; it moved {err:.3g}"


def test_widths_depths_and_vocabularies_change_as_stated():
    cfg, base = _base()
    F, L, V = cfg.d_ff, cfg.n_layers, cfg.vocab_size
    shapes = {n: derivatives.derive(n, base, cfg, jax.random.key(0))[0]
              for n in derivatives.SHAPES}
    assert shapes["pad-mlp"].d_ff == shapes["pad-mlp-dead"].d_ff == F + F // 16
    assert shapes["split-units"].d_ff == F + F // 16
    assert shapes["prune-width-25"].d_ff == F - round(0.25 * F)
    assert shapes["mask-units-25"].d_ff == F
    assert shapes["drop-layer"].n_layers == L - 1
    assert shapes["insert-identity"].n_layers == L + 1
    assert shapes["depth-upscale"].n_layers == 2 * L - 2 * (L // 4)
    assert shapes["layer-shift-rotated"].n_layers == L
    assert shapes["vocab-extend"].vocab_size == V + 64
    assert shapes["vocab-truncate"].vocab_size == V * 7 // 8
    assert shapes["vocab-permute"].vocab_size == V


def test_pruning_removes_the_least_important_units_and_masking_zeroes_them():
    cfg, base = _base()
    mlp = jax.tree.map(np.asarray, base["layers_0"]["mlp"])
    score = S.unit_importance(mlp)
    _, pruned = S.prune_mlp_width(base, cfg, 0.25)
    _, masked = S.mask_mlp_units(base, cfg, 0.25)
    drop = np.argsort(score)[:round(0.25 * cfg.d_ff)]
    keep = np.setdiff1d(np.arange(cfg.d_ff), drop)
    np.testing.assert_array_equal(pruned["layers_0"]["mlp"]["up_proj"]["kernel"],
                                  mlp["up_proj"]["kernel"][:, keep])
    assert not np.any(masked["layers_0"]["mlp"]["gate_proj"]["kernel"][:, drop])
    assert not np.any(masked["layers_0"]["mlp"]["down_proj"]["kernel"][drop])
    np.testing.assert_array_equal(masked["layers_0"]["mlp"]["up_proj"]["kernel"][:, keep],
                                  mlp["up_proj"]["kernel"][:, keep])


def test_a_permuted_vocabulary_with_its_tokenizer_is_the_same_function_of_text():
    """Token strings remapped with the ids: the new model reads string s as its own id of s,
    and gives it the old model's logits for every string."""
    cfg, base = _base()
    strings = [f"tok{i}" for i in range(cfg.vocab_size)]
    key = jax.random.key(9)
    cfg2, edited = derivatives.derive("vocab-permute", base, cfg, key)
    new_strings = VE.remap_strings(strings, derivatives.SHAPES["vocab-permute"].vocab_origin(
        cfg, key))
    text = ["tok5", "tok77", "tok300", "tok1", "tok42"]
    ids_a = np.array([[strings.index(t) for t in text]])
    ids_b = np.array([[new_strings.index(t) for t in text]])
    la, lb = _logits(cfg, base, ids_a), _logits(cfg2, edited, ids_b)
    for j, s in enumerate(strings[:50]):
        np.testing.assert_allclose(lb[..., new_strings.index(s)], la[..., j], rtol=1e-5,
                                   atol=1e-5 * np.abs(la).max())


def test_refusals():
    cfg, base = _base()
    with pytest.raises(UserError, match="removes 0"):
        S.prune_mlp_width(base, cfg, 0.001)
    with pytest.raises(UserError, match="no layer"):
        S.drop_layers(base, cfg, [5])
    with pytest.raises(UserError, match="leave no layer"):
        S.drop_layers(base, cfg, [0, 1])
    with pytest.raises(UserError, match="0 <= m < L"):
        S.depth_upscale(base, cfg, 2)
    with pytest.raises(UserError, match="k >= 1"):
        S.pad_mlp(base, cfg, 0, jax.random.key(0))
    with pytest.raises(UserError, match="keep 1"):
        VE.truncate_vocab(base, cfg, 0)
