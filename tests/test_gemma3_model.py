"""Gemma 3's pieces in the one decoder: QK-norm, sandwich norms, the (1 + w) gain, the scaled
embedding, query_pre_attn_scalar, sliding-window layers with their own RoPE base (in the
attention that forms A and in the blocked one), the presets' shapes and initialisation, and the
config's validation. Parity with transformers is tests/test_hf.py (committed fixture) and
tests/test_gguf_gemma3.py (the real model).

Tolerances: where two computations are the same float32 arithmetic in the same order they are
compared bitwise; where they differ only in the order of float32 sums (the blocked and the
unblocked attention, an explicit numpy reference) by 1e-5 relative to the largest |value|
(float32 rounding is 6e-8 per operation; the forwards here chain a few hundred of them).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bornbiased_jax import layers, model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.config_io import LATER_FIELDS, config_record, from_record, recorded_differences
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_key

TINY = get_preset("gemma3-tiny")
REL = 1e-5  # float32 rounding in another summation order, relative to the largest |value|


def _close(a, b, what=""):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, what
    assert np.abs(a - b).max() <= REL * np.abs(b).max(), (what, np.abs(a - b).max())


def _random_params(cfg, seed=0):
    """init's parameters with every leaf redrawn: w of the norms N(0, 0.3^2) (init's zeros
    would hide a misplaced gain), matrices N(0, 1/fan_in), the embedding N(0, 1)."""
    keys = iter(jax.random.split(jax.random.key(seed), 512))

    def redraw(path, a):
        z = jax.random.normal(next(keys), a.shape)
        if path[-1].key == "scale":
            return 0.3 * z
        return z if path[-1].key == "embedding" else z / math.sqrt(a.shape[0])
    return jax.tree_util.tree_map_with_path(redraw, model.init(cfg, seed_key(seed)))


# --- presets -----------------------------------------------------------------------------------
def test_the_270m_preset_is_gemma_3_270m():
    cfg = get_preset("gemma3-270m")
    shapes = jax.eval_shape(lambda k: model.init(cfg, k), jax.random.key(0))
    # 268,098,176: the count of the released model (its GGUF's tensors, tied head counted once)
    assert sum(math.prod(x.shape) for x in jax.tree.leaves(shapes)) == 268_098_176
    blk = shapes["layers_0"]
    assert blk["attn"]["q_proj"]["kernel"].shape == (640, 1024)  # 4 heads of 256 != 640 / 4
    assert blk["attn"]["k_proj"]["kernel"].shape == (640, 256)  # one K/V head
    assert blk["attn"]["q_norm"]["scale"].shape == blk["attn"]["k_norm"]["scale"].shape == (256,)
    assert {"attn_post_norm", "mlp_post_norm"} <= set(blk)
    assert [cfg.is_sliding(i) for i in range(18)] == [(i + 1) % 6 != 0 for i in range(18)]
    assert [cfg.layer_rope_theta(i) for i in (0, 4, 5, 11, 17)] == [1e4, 1e4, 1e6, 1e6, 1e6]
    assert (cfg.layer_window(0), cfg.layer_window(5), cfg.attn_scalar) == (512, None, 256.0)
    assert "lm_head" not in shapes  # tied


def test_initialisation_is_gemmas():
    """Google's Gemma code: every weight N(0, 0.01^2), no depth scaling, norm w = 0."""
    p = model.init(TINY, seed_key(3))
    flat = {jax.tree_util.keystr(k): np.asarray(v)
            for k, v in jax.tree_util.tree_flatten_with_path(p)[0]}
    for name, a in flat.items():
        if "norm" in name:
            assert not a.any(), name  # gain 1 + 0
        else:
            assert abs(a.std() / 0.01 - 1) < 0.1, (name, a.std())  # >= 2,048 draws each
    assert flat["['layers_5']['mlp']['down_proj']['kernel']"].std() > 0.009  # not 0.01/sqrt(2L)


# --- the pieces ---------------------------------------------------------------------------------
def test_unit_offset_norm_multiplies_by_one_plus_w():
    cfg = TINY
    x = np.random.default_rng(0).normal(size=(5, 64)).astype(np.float32)
    w = np.random.default_rng(1).normal(size=64).astype(np.float32)
    got = layers.norm({"scale": jnp.asarray(w)}, cfg, jnp.asarray(x))
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * (1 + w)
    _close(got, want, "(1 + w) RMSNorm")
    plain = dataclasses.replace(cfg, norm_unit_offset=False)  # the LLaMA convention: gain w
    _close(layers.norm({"scale": jnp.asarray(1 + w)}, plain, jnp.asarray(x)), want, "w RMSNorm")
    assert model.init(plain, seed_key(0))["final_norm"]["scale"].tolist() == [1.0] * 64


def test_qk_norm_normalises_each_heads_query_and_key_before_rope():
    cfg = dataclasses.replace(TINY, n_kv_heads=2)
    blk = _random_params(cfg)["layers_0"]["attn"]
    x = jax.random.normal(jax.random.key(1), (7, 64))
    q, k, v = layers.Attention(cfg).apply({"params": blk}, x, None, method=layers.Attention.qkv)
    qp = (x @ blk["q_proj"]["kernel"]).reshape(7, 4, 32)
    kp = (x @ blk["k_proj"]["kernel"]).reshape(7, 2, 32)
    rms = lambda a: np.sqrt((np.asarray(a, np.float64) ** 2).mean(-1, keepdims=True) + 1e-6)
    _close(q.reshape(7, 4, 32), qp / rms(qp) * (1 + blk["q_norm"]["scale"]), "q")
    _close(k, kp / rms(kp) * (1 + blk["k_norm"]["scale"]), "k")  # one gain for every head
    _close(v, (x @ blk["v_proj"]["kernel"]).reshape(7, 2, 32), "v untouched")
    cos, sin = layers.rope_cos_sin(7, 32, 1e4)
    q_rope, k_rope, _ = layers.Attention(cfg).apply({"params": blk}, x, (cos, sin),
                                                     method=layers.Attention.qkv)
    _close(k_rope, layers.apply_rope(k, cos, sin), "RoPE after the norm")


def test_sandwich_norms_and_scaled_embedding_compose_as_gemma():
    """One block written out: H = X + Norm(MHA(Norm(X))), Y = H + Norm(MLP(Norm(H))), and
    X^(0) = W_E[tokens] * sqrt(d) with sqrt(d) rounded to float32."""
    cfg = TINY
    p = _random_params(cfg)
    toks = jnp.arange(9) * 37 % cfg.vocab_size
    out = model.forward(p, cfg, toks, return_hidden=True)
    x0 = np.asarray(p["embed"]["embedding"])[np.asarray(toks)] * np.float32(math.sqrt(64))
    np.testing.assert_array_equal(out.hidden[0], x0)
    blk = p["layers_0"]
    rope = layers.rope_cos_sin(9, 32, cfg.layer_rope_theta(0))
    a = layers.attention(blk["attn"], cfg, layers.norm(blk["attn_norm"], cfg, x0), rope,
                         window=cfg.layer_window(0))
    h = x0 + layers.norm(blk["attn_post_norm"], cfg, a)
    y = h + layers.norm(blk["mlp_post_norm"], cfg,
                        layers.mlp(blk["mlp"], cfg, layers.norm(blk["mlp_norm"], cfg, h)))
    _close(out.hidden[1], y, "block 0")  # fused in one program there, op by op here
    # the tied head reads the unscaled table
    _close(out.logits, out.normed @ p["embed"]["embedding"].T, "logits")
    # Gaussian inputs (Sec. 4.1) replace the scaled embedding: not scaled again
    e = jax.random.normal(jax.random.key(0), (9, 64))
    np.testing.assert_array_equal(model.forward(p, cfg, embeds_Td=e, return_hidden=True)
                                  .hidden[0], e)


@pytest.mark.parametrize("field, value", [("qk_norm", False), ("post_norms", False),
                                          ("embed_scale", False), ("norm_unit_offset", False),
                                          ("query_pre_attn_scalar", 64.0),
                                          ("rope_local_theta", None)])
def test_each_gemma_flag_changes_the_output(field, value):
    """Switched off, each piece moves the logits (the model without it keeps the parameters
    it still has)."""
    p = _random_params(TINY)
    toks = jnp.arange(12) * 11 % TINY.vocab_size
    base = np.asarray(model.forward(p, TINY, toks).logits)
    other = dataclasses.replace(TINY, **{field: value})
    kept = _subset(p, model.init(other, seed_key(0)))
    assert np.abs(np.asarray(model.forward(kept, other, toks).logits) - base).max() > 1e-3


def _subset(full: dict, like: dict) -> dict:
    """``full``'s leaves at the paths ``like`` has."""
    return {k: _subset(full[k], v) if isinstance(v, dict) else full[k] for k, v in like.items()}


def test_query_pre_attn_scalar_of_head_dim_is_the_default_bitwise():
    cfg = dataclasses.replace(TINY, query_pre_attn_scalar=None)
    p = _random_params(TINY)
    toks = jnp.arange(10)
    np.testing.assert_array_equal(model.forward(p, cfg, toks).logits,
                                  model.forward(p, TINY, toks).logits)


# --- sliding windows ----------------------------------------------------------------------------
def test_sliding_window_mask_at_600_tokens_in_both_attention_paths():
    """T = 600 > W = 512: on a sliding layer the attention weight of query i on key j is 0
    for j <= i - 512 and the row sums to 1 over the rest; on the global layer the oldest keys
    are still seen. The attention that forms A (return_attention) and the blocked one
    (QUERY_BLOCK queries at a time, keys outside every window skipped) give the same outputs,
    and both equal a numpy reference of the masked softmax on the first sliding layer."""
    cfg = TINY
    T, W = 600, 512
    p = _random_params(cfg)
    toks = jnp.asarray(np.random.default_rng(0).integers(0, cfg.vocab_size, T))
    with_a = model.forward(p, cfg, toks, return_hidden=True, return_attention=True)
    blocked = model.forward(p, cfg, toks, return_hidden=True)
    _close(blocked.hidden, with_a.hidden, "blocked vs unblocked hidden states")
    _close(blocked.logits, with_a.logits, "blocked vs unblocked logits")
    A = np.asarray(with_a.attention)  # (L, H, T, T)
    i, j = np.indices((T, T))
    outside = j <= i - W
    for layer in range(cfg.n_layers):
        if cfg.is_sliding(layer):
            assert not A[layer][:, outside].any(), layer
        else:
            assert (A[layer][:, outside] > 0).all(), layer
        np.testing.assert_allclose(A[layer].sum(-1), 1.0, rtol=1e-5)
    assert not cfg.is_sliding(5) and cfg.is_sliding(0)

    # numpy reference of layer 0's attention output, float64
    blk = p["layers_0"]
    x = np.asarray(layers.norm(blk["attn_norm"], cfg, with_a.hidden[0]))
    q, k, v = (np.asarray(a, np.float64) for a in layers.Attention(cfg).apply(
        {"params": blk["attn"]}, jnp.asarray(x), layers.rope_cos_sin(T, 32, 1e4),
        method=layers.Attention.qkv))
    s = np.einsum("qngk,tnk->ngqt", q, k) / math.sqrt(cfg.attn_scalar)  # N=1, G=4
    s = np.where((j <= i) & (j > i - W), s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = np.einsum("ngqt,tnk->qngk", a, v).reshape(T, 4 * 32)
    _close(A[0], a.reshape(4, T, T), "A of layer 0")
    want = o @ np.asarray(blk["attn"]["o_proj"]["kernel"], np.float64)
    for path in ("blocked", "unblocked"):
        got = layers.attention(blk["attn"], cfg, jnp.asarray(x), layers.rope_cos_sin(T, 32, 1e4),
                               window=W)
        _close(got, want, path)


def test_blocked_attention_skips_only_keys_outside_every_window():
    rng = np.random.default_rng(0)
    T, W = 100, 40
    q = jnp.asarray(rng.normal(size=(T, 1, 2, 8)), jnp.float32)
    k = jnp.asarray(rng.normal(size=(T, 1, 8)), jnp.float32)
    v = jnp.asarray(rng.normal(size=(T, 1, 8)), jnp.float32)
    whole = jnp.einsum("ngqt,tnk->qngk",
                       layers.causal_softmax(q, k, jnp.float32, None, W).reshape(1, 2, T, T), v)
    for block in (7, 64, 100):  # blocks inside, across and beyond the window
        _close(layers.blocked_causal_attention(q, k, v, block, jnp.float32, None, W), whole,
               f"block {block}")
    seen = layers.visible(6, 3)
    assert seen.astype(int).tolist() == [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0],
                                         [1, 1, 1, 0, 0, 0], [0, 1, 1, 1, 0, 0],
                                         [0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 1, 1]]


def test_each_layer_gets_its_own_rope_base():
    """Swapping the bases moves the output; giving the global base to every layer equals a
    model without rope_local_theta."""
    p = _random_params(TINY)
    toks = jnp.arange(30)
    same = dataclasses.replace(TINY, rope_local_theta=1e6)
    np.testing.assert_array_equal(model.forward(p, same, toks).logits,
                                  model.forward(p, dataclasses.replace(TINY,
                                                                       rope_local_theta=None),
                                                toks).logits)
    assert np.abs(np.asarray(model.forward(p, same, toks).logits)
                  - np.asarray(model.forward(p, TINY, toks).logits)).max() > 1e-3


# --- validation and records ---------------------------------------------------------------------
@pytest.mark.parametrize("changes, match", [
    ({"qk_norm": True, "norm": "layernorm"}, "qk_norm=True .* needs norm='rmsnorm'"),
    ({"post_norms": True, "norm": "none"}, "post_norms=True .* not norm='none'"),
    ({"sliding_window": 0}, "sliding_window must be a positive integer"),
    ({"layer_types": ("sliding_attention",) * 5}, "layer_types has 5 entries, one per layer "
                                                   "is 2"),
    ({"layer_types": ("sliding_attention", "full_attention")},
     "names sliding_attention layers but sliding_window is None"),
    ({"layer_types": ("sliding", "full_attention"), "sliding_window": 4},
     "layer_types must be a list of full_attention / sliding_attention"),
    ({"rope_local_theta": 1e4}, "give sliding_window too"),
    ({"query_pre_attn_scalar": 0.0}, "query_pre_attn_scalar must be a number > 0"),
    ({"embed_scale": "yes"}, "embed_scale must be True or False"),
])
def test_bad_gemma_settings_are_refused(changes, match):
    with pytest.raises(UserError, match=match):
        get_preset("llama2-tiny").ablate(**changes)


def test_records_without_the_new_fields_name_the_same_model():
    """Records written before these fields existed (run.json, sweep and blockwise states)
    leave them out, and a record leaves them out while they hold their defaults."""
    llama = get_preset("llama2-tiny")
    rec = config_record(llama)
    assert not set(LATER_FIELDS) & set(rec)
    assert ModelConfig(**rec) == llama and recorded_differences(rec, llama) == {}
    gemma = config_record(TINY)
    # Gemma's layer types are recorded as their period, as records made before them hold it
    assert gemma["qk_norm"] is True and gemma["sliding_window_pattern"] == 6
    assert "layer_types" not in gemma and from_record(gemma) == TINY
    assert recorded_differences(gemma, TINY) == {}
    assert recorded_differences(rec, dataclasses.replace(llama, post_norms=True)) == {
        "post_norms": (False, True)}


def test_model_set_reads_the_new_fields_by_their_types():
    """--model-set on a preset: optional floats are read as floats (or None), flags as
    booleans, so the arms of the Gemma study can be asked for on the command line."""
    from bornbiased_jax.config_io import apply_overrides

    cfg = apply_overrides(TINY, ["rope_local_theta=20000", "query_pre_attn_scalar=16",
                                 "qk_norm=false", "post_norms=false"])
    assert (cfg.rope_local_theta, cfg.query_pre_attn_scalar, cfg.qk_norm, cfg.post_norms) == (
        20000.0, 16.0, False, False)
    assert apply_overrides(TINY, ["rope_local_theta=none"]).rope_local_theta is None
    with pytest.raises(UserError, match="expected a value of type float"):
        apply_overrides(TINY, ["rope_local_theta=fast"])
