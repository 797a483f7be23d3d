"""Config fields for released checkpoints: GQA/MQA, explicit head_dim, learned positions,
GPT-2's biases and gelu_new, the Qwen2 presets; validation; sizes under ``jax.eval_shape``."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.config_io import recorded_differences
from bornbiased_jax.presets import PRESETS, get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_key

_init = model.init  # eager: the samplers compile once per shape (see tests/test_model.py)
fwd = jax.jit(model.forward, static_argnums=1, static_argnames=("last_only", "return_hidden"))


def n_params(cfg) -> int:
    shapes = jax.eval_shape(lambda k: model.init(cfg, k), jax.random.key(0))
    return sum(math.prod(x.shape) for x in jax.tree.leaves(shapes))


def shapes(cfg) -> dict:
    tree = jax.eval_shape(lambda k: model.init(cfg, k), jax.random.key(0))
    return {jax.tree_util.keystr(p): x.shape
            for p, x in jax.tree_util.tree_flatten_with_path(tree)[0]}


# --- derived fields ----------------------------------------------------------------------------
def test_head_fields_keep_what_was_given_and_resolve_from_the_current_fields():
    cfg = get_preset("llama2-tiny")  # d = 64, 4 heads
    assert (cfg.head_dim, cfg.n_kv_heads) == (None, None)  # not given
    assert (cfg.resolved_head_dim, cfg.resolved_n_kv_heads, cfg.n_groups) == (16, 4, 1)
    assert all(isinstance(c.resolved_head_dim, int) and isinstance(c.resolved_n_kv_heads, int)
               for c in PRESETS.values())
    eight = cfg.ablate(n_heads=8)
    assert (eight.resolved_head_dim, eight.resolved_n_kv_heads) == (8, 8)  # not copied
    gqa = cfg.ablate(n_kv_heads=2)
    assert (gqa.n_groups, gqa.ablate(n_layers=1).resolved_n_kv_heads) == (2, 2)  # explicit: kept
    wide = cfg.ablate(head_dim=32)
    assert wide.resolved_head_dim == 32 and wide.ablate(n_heads=2).resolved_head_dim == 32
    # Explicit values equal to the derived ones name the same model (run.json files written
    # before the fields kept None record the resolved values).
    spelled = dataclasses.replace(cfg, head_dim=16, n_kv_heads=4)
    assert spelled == cfg and hash(spelled) == hash(cfg)
    assert dataclasses.replace(cfg, head_dim=32) != cfg


def test_replace_of_the_width_and_heads_resolves_the_head_size_again():
    """``dataclasses.replace`` used to copy the head size resolved for the old width: d = 128
    with 4 heads got head_dim 16 and a Q projection of 64 columns."""
    cfg = dataclasses.replace(get_preset("llama2-tiny"), d_model=128, n_heads=4)
    assert (cfg.resolved_head_dim, cfg.resolved_n_kv_heads) == (32, 4)
    q = shapes(cfg)["['layers_0']['attn']['q_proj']['kernel']"]
    assert q == (128, 128)
    assert dataclasses.replace(get_preset("llama2-tiny"), n_heads=8).resolved_head_dim == 8


def test_recorded_config_with_resolved_head_fields_matches():
    cfg = get_preset("llama2-tiny")
    old = {**dataclasses.asdict(cfg), "head_dim": 16, "n_kv_heads": 4}  # as older runs wrote
    assert recorded_differences(old, cfg) == {}
    assert recorded_differences(dataclasses.asdict(cfg), cfg) == {}
    assert ModelConfig(**old) == cfg
    assert recorded_differences({**old, "head_dim": 8}, cfg) == {"head_dim": (8, 16)}
    assert recorded_differences({**old, "d_ff": 1}, cfg) == {"d_ff": (1, cfg.d_ff)}


def test_a_head_free_config_ends_before_the_unembedding_and_ignores_the_tie():
    """``unembed=False`` (``model.head_free``): no W_U built or read, no logits, the hidden
    states of the model with a head; a tied and an untied checkpoint of one architecture get
    equal head-free configs (one compiled program), while configs with a head keep the key,
    the record and the overrides they had before the field existed."""
    from bornbiased_jax.config_io import apply_overrides, config_record

    untied = get_preset("llama2-tiny")
    tied = dataclasses.replace(untied, tie_embeddings=True)
    assert not untied.tie_embeddings and untied != tied
    free_u, params_u = model.head_free(untied, _init(untied, seed_key(0)), "x")
    free_t, _ = model.head_free(tied, {}, "x")
    assert free_u == free_t and hash(free_u) == hash(free_t) and free_u != untied
    assert "lm_head" not in params_u and "lm_head" not in model.init(free_u, seed_key(0))
    assert "lm_head" not in model.param_shapes(free_u)
    tokens = jnp.arange(6)
    out = model.forward(params_u, free_u, tokens)
    ref = model.forward(_init(untied, seed_key(0)), untied, tokens)
    assert out.logits is None
    np.testing.assert_array_equal(out.normed, ref.normed)
    with pytest.raises(UserError, match="head-free"):
        model.unembedding(params_u, free_u)
    # a config with a head: the key, hash and record of before the field (``architecture``
    # names a storage format and is no part of the key either)
    key = tuple({"head_dim": 16, "n_kv_heads": 4}.get(f.name, getattr(untied, f.name))
                for f in dataclasses.fields(untied) if f.name not in ("unembed", "architecture"))
    assert untied._key() == key and hash(untied) == hash(key)
    assert "unembed" not in config_record(untied) and config_record(free_u)["unembed"] is False
    assert recorded_differences(config_record(untied), untied) == {}
    with pytest.raises(UserError, match="unknown model setting 'unembed'"):
        apply_overrides(untied, ["unembed=false"])


@pytest.mark.parametrize("changes, message", [
    (dict(n_kv_heads=3), "n_kv_heads=3 does not divide n_heads=4"),
    (dict(n_kv_heads=0), "n_kv_heads must be a positive integer"),
    (dict(n_heads=5), "does not divide d_model=64.*or give head_dim"),
    (dict(n_heads=5, head_dim=15), "RoPE .* even head_dim, got 15"),
    (dict(head_dim=2.5), "head_dim must be a positive integer"),
    (dict(attention="attn0_causal", attn_output_transform="sqrt_i"),
     "Attn0.*attn_output_transform must be 'none'"),
    (dict(attention="attn0_full", n_kv_heads=2), "Attn0.*n_kv_heads must equal n_heads=4"),
    (dict(norm_eps=0.0), "norm_eps must be > 0"),
])
def test_bad_head_config_is_a_user_error(changes, message):
    with pytest.raises(UserError, match=message):
        get_preset("llama2-tiny").ablate(**changes)


def test_unknown_preset_is_a_user_error():
    with pytest.raises(UserError, match="available presets"):
        get_preset("qwen3-nano")


# --- GQA / MQA ---------------------------------------------------------------------------------
def repeat_kv(params: dict, cfg) -> dict:
    """The MHA parameters equivalent to GQA ones: each K/V head copied to its G query heads
    (HF's ``repeat_kv``: query head h reads K/V head h // G)."""
    N, K, G = cfg.resolved_n_kv_heads, cfg.resolved_head_dim, cfg.n_groups
    out = jax.tree.map(lambda x: x, params)
    for i in range(cfg.n_layers):
        attn = out[f"layers_{i}"]["attn"]
        for name in ("k_proj", "v_proj"):
            w = attn[name]["kernel"]
            attn[name] = {"kernel": jnp.repeat(w.reshape(-1, N, K), G, axis=1).reshape(
                w.shape[0], N * G * K)}
            if "bias" in params[f"layers_{i}"]["attn"][name]:
                b = params[f"layers_{i}"]["attn"][name]["bias"]
                attn[name]["bias"] = jnp.repeat(b.reshape(N, K), G, axis=0).reshape(-1)
    return out


@pytest.mark.parametrize("n_kv", [2, 1])  # GQA (2 groups) and MQA (one K/V head)
def test_grouped_query_attention_equals_mha_with_repeated_kv_heads(n_kv):
    cfg = get_preset("qwen2-tiny").ablate(n_kv_heads=n_kv)
    p = _init(cfg, seed_key(4))
    sh = shapes(cfg)
    d, H, K = cfg.d_model, cfg.n_heads, cfg.resolved_head_dim
    assert sh["['layers_0']['attn']['q_proj']['kernel']"] == (d, H * K)
    assert sh["['layers_0']['attn']['k_proj']['kernel']"] == (d, n_kv * K)
    assert sh["['layers_0']['attn']['v_proj']['bias']"] == (n_kv * K,)
    assert sh["['layers_0']['attn']['o_proj']['kernel']"] == (H * K, d)
    mha = cfg.ablate(n_kv_heads=H)
    tok = jax.random.randint(jax.random.key(1), (20,), 0, cfg.vocab_size)
    got = fwd(p, cfg, tok).logits
    want = fwd(repeat_kv(p, cfg), mha, tok).logits
    # Same sums in a different einsum layout: float32 rounding only (logits are O(1)).
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # The grouping matters: pairing query head h with K/V head h % N instead is another model.
    N = n_kv
    if N > 1:
        wrong = jax.tree.map(lambda x: x, repeat_kv(p, cfg))
        for i in range(cfg.n_layers):
            a = wrong[f"layers_{i}"]["attn"]
            for name in ("k_proj", "v_proj"):
                w = p[f"layers_{i}"]["attn"][name]["kernel"].reshape(d, N, K)
                a[name]["kernel"] = jnp.tile(w, (1, cfg.n_groups, 1)).reshape(d, H * K)
        assert not np.allclose(fwd(wrong, mha, tok).logits, got, atol=1e-4)


def test_explicit_head_dim_need_not_divide_d_model():
    cfg = get_preset("llama2-tiny").ablate(n_heads=3, n_kv_heads=1, head_dim=10)  # 3*10 != 64
    sh = shapes(cfg)
    assert sh["['layers_1']['attn']['q_proj']['kernel']"] == (64, 30)
    assert sh["['layers_1']['attn']['k_proj']['kernel']"] == (64, 10)
    assert sh["['layers_1']['attn']['o_proj']['kernel']"] == (30, 64)
    p = _init(cfg, seed_key(0))
    tok = jnp.arange(12)
    out = fwd(p, cfg, tok, return_hidden=True)
    assert out.logits.shape == (12, cfg.vocab_size) and np.isfinite(out.logits).all()
    b = fwd(p, cfg, tok.at[7].set(0), return_hidden=True)  # still causal
    np.testing.assert_array_equal(out.hidden[:, :7], b.hidden[:, :7])


# --- learned positions, GPT-2 biases and gelu_new ----------------------------------------------
def test_learned_positions_are_added_to_the_token_embeddings():
    cfg = get_preset("gpt2-rope-tiny").ablate(position="learned")
    p = _init(cfg, seed_key(0))
    assert p["pos_embed"]["embedding"].shape == (cfg.max_seq_len, cfg.d_model)
    assert float(jnp.std(p["pos_embed"]["embedding"])) > 0.5 * cfg.init_std
    tok = jnp.array([5, 5, 5, 9, 5])
    out = fwd(p, cfg, tok, return_hidden=True)
    want = p["embed"]["embedding"][tok] + p["pos_embed"]["embedding"][:5]
    np.testing.assert_array_equal(out.hidden[0], want)
    # The same token at different positions now enters the blocks differently.
    assert not np.allclose(out.hidden[0, 0], out.hidden[0, 1])
    # Positions belong to the shared embedding group: the same for every seed.
    np.testing.assert_array_equal(p["pos_embed"]["embedding"],
                                  _init(cfg, seed_key(1))["pos_embed"]["embedding"])


def test_linear_bias_puts_gpt2_biases_everywhere():
    sh = shapes(get_preset("gpt2-rope-tiny"))
    for path in ("q_proj", "k_proj", "v_proj", "o_proj"):
        assert f"['layers_0']['attn']['{path}']['bias']" in sh
    for path in ("up_proj", "down_proj"):
        assert f"['layers_0']['mlp']['{path}']['bias']" in sh
    assert "['layers_0']['attn_norm']['bias']" in sh and "['final_norm']['bias']" in sh
    sh = shapes(get_preset("qwen2-tiny"))  # Q, K, V biases only
    biased = {k.split("['")[-2].rstrip("']") for k in sh if k.endswith("['bias']")}
    assert biased == {"q_proj", "k_proj", "v_proj"}


def test_gelu_tanh_is_gpt2_gelu_new():
    from bornbiased_jax.layers import activation_fn

    x = np.linspace(-6, 6, 1001).astype(np.float32)
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(activation_fn("gelu_tanh")(jnp.asarray(x)), want,
                               rtol=1e-5, atol=1e-6)


# --- Qwen2 presets and sizes -------------------------------------------------------------------
def test_qwen2_presets_copy_qwen2():
    for size in ("tiny", "cpu", "nano"):
        q = get_preset(f"qwen2-{size}")
        assert (q.rope_theta, q.norm_eps, q.qkv_bias, q.linear_bias) == (1e6, 1e-6, True, False)
        assert (q.norm, q.activation, q.gated_mlp, q.tie_embeddings) == ("rmsnorm", "silu",
                                                                         True, False)
        assert q.n_kv_heads == 2 and q.n_groups == q.n_heads // 2 and q.d_ff == 4 * q.d_model
    nano = get_preset("qwen2-nano")
    assert (nano.n_heads, nano.n_kv_heads, nano.vocab_size) == (12, 2, 151_936)


def test_preset_sizes_by_eval_shape():
    """Parameter counts from shapes alone (nothing allocated), GQA and biases included."""
    q = get_preset("qwen2-nano")
    d, F, V, KV = 768, 3072, 151_936, 2 * 64
    attn = (d * d + d) + 2 * (d * KV + KV) + d * d  # q (+bias), k, v (+bias), o
    assert n_params(q) == 12 * (attn + 3 * d * F + 2 * d) + d + 2 * V * d
    c = get_preset("qwen2-cpu")
    d, F, V, KV = 512, 2048, 151_936, 2 * 64
    attn = (d * d + d) + 2 * (d * KV + KV) + d * d
    assert n_params(c) == 6 * (attn + 3 * d * F + 2 * d) + d + 2 * V * d
    # Explicit head_dim and learned positions (GPT-2 with wpe).
    g = get_preset("gpt2-rope-nano").ablate(position="learned")
    d = 768
    per_block = 12 * d * d + (4 * d + 4 * d + d) + 4 * d
    assert n_params(g) == 12 * per_block + 2 * d + 50_257 * d + 2048 * d
    h = get_preset("llama2-nano").ablate(head_dim=128, n_kv_heads=4)
    d = 768
    attn = d * 12 * 128 + 2 * d * 4 * 128 + 12 * 128 * d
    assert n_params(h) == 12 * (attn + 3 * d * 2048 + 2 * d) + d + 2 * 32_000 * d


def test_forward_flops_count_gqa_shapes():
    """Matmul FLOPs = 2 T x (every kernel's size) + the LM head + 4 T^2 H K per layer."""
    from bornbiased_jax.flops import forward_flops

    for cfg in (get_preset("qwen2-cpu"), get_preset("llama2-tiny").ablate(n_heads=3, head_dim=10,
                                                                         n_kv_heads=1)):
        T = 32
        kernels = sum(math.prod(s) for k, s in shapes(cfg).items()
                      if k.startswith("['layers_") and k.endswith("['kernel']"))
        want = (2 * T * kernels + 2 * T * cfg.d_model * cfg.vocab_size
                + cfg.n_layers * 4 * T * T * cfg.n_heads * cfg.resolved_head_dim)
        assert forward_flops(cfg, T) == want
