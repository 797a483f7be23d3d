"""The decoder: seeds, initialisation statistics (App. B.1), causality, RoPE, ablation flags."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bornbiased_jax import layers, model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.keys import seed_key

TINY = ["gpt2-rope-tiny", "llama2-tiny", "qwen2-tiny"]
# Eager initialisation: each parameter's sampler is compiled once per shape and reused by every
# configuration below, where a jitted init compiles all of them again for each configuration
# (seconds each). Eager, jitted and vmapped inits are bitwise equal (tested below).
_init = model.init
fwd = jax.jit(model.forward, static_argnums=1, static_argnames=("last_only", "return_hidden"))


def leaves(tree):
    return dict(jax.tree_util.tree_flatten_with_path(tree)[0])


def test_same_seed_gives_bitwise_identical_params():
    cfg = get_preset("gpt2-rope-tiny")
    a, b = _init(cfg, seed_key(7)), _init(cfg, seed_key(7))
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x, y), a, b)


@pytest.mark.parametrize("name", TINY)
def test_seeds_differ_in_blocks_and_share_embeddings(name):
    cfg = get_preset(name)
    a, b = _init(cfg, seed_key(0)), _init(cfg, seed_key(1))
    for path, x in leaves(a).items():
        y = leaves(b)[path]
        key = jax.tree_util.keystr(path)
        if key.startswith(("['embed']", "['lm_head']", "['pos_embed']")):
            np.testing.assert_array_equal(x, y)  # footnote 2: fixed embedding and LM head
        elif float(jnp.std(x)) > 0:  # random weights (not zero biases / unit scales)
            assert not np.array_equal(x, y), key
    # The switch makes every parameter seed-dependent.
    own = cfg.ablate(shared_embedding=False)
    a, b = _init(own, seed_key(0)), _init(own, seed_key(1))
    assert not np.array_equal(a["embed"]["embedding"], b["embed"]["embedding"])


class ReorderedDecoder(model.Decoder):
    """The same model built another way: submodules declared in reverse order, and the blocks
    initialised last to first, before the embedding is ever touched."""

    def setup(self):
        cfg, dt = self.cfg, self.param_dtype
        self.final_norm = layers.Norm(cfg, dt)
        self.layers = [model.Block(cfg, dt) for _ in range(cfg.n_layers)]
        if not cfg.tie_embeddings:
            self.lm_head = model.LMHead(cfg.d_model, cfg.vocab_size, cfg.init_std, dt)
        if cfg.position == "learned":
            self.pos_embed = model.Embedding(cfg.max_seq_len, cfg.d_model, cfg.init_std, dt)
        self.embed = model.Embedding(cfg.vocab_size, cfg.d_model, cfg.init_std, dt)

    def __call__(self, tokens_T, *args):
        x_Td = jnp.zeros((tokens_T.shape[0], self.cfg.d_model))
        for block in reversed(self.layers):
            block(x_Td)
        self.final_norm(x_Td)
        return super().__call__(tokens_T, *args)


def test_parameter_keys_come_from_names_not_order():
    # Linen folds each submodule's name into its key: construction order does not matter.
    cfg = get_preset("qwen2-tiny").ablate(position="learned")  # every parameter kind
    key = seed_key(5)
    rngs = {"params": key, "embed": model.embed_key(cfg, key)}
    other = ReorderedDecoder(cfg).init(rngs, jnp.zeros((3,), jnp.int32))
    p = _init(cfg, key)
    jax.tree.map(np.testing.assert_array_equal, p, model._as_dict_layout(cfg, other["params"]))
    # The two groups built apart (as the sweep does) are the same parameters.
    emb = model.init_embeddings(cfg, model.embed_key(cfg, key))
    blocks = model.init_blocks(cfg, key)
    assert set(emb) == {"embed", "pos_embed"} | ({"lm_head"} if "lm_head" in p else set())
    jax.tree.map(np.testing.assert_array_equal, p, {**emb, **blocks})
    # A deeper model shares its first layers' weights (except the 1/sqrt(2L)-scaled W_O, W_down).
    deep = _init(cfg.ablate(n_layers=3), key)
    for sub in ("q_proj", "k_proj", "v_proj"):
        np.testing.assert_array_equal(deep["layers_1"]["attn"][sub]["kernel"],
                                      p["layers_1"]["attn"][sub]["kernel"])
    np.testing.assert_array_equal(deep["embed"]["embedding"], p["embed"]["embedding"])


def test_init_is_bitwise_the_same_eager_jitted_and_vmapped():
    cfg = get_preset("qwen2-tiny")
    seeds = [0, 123]
    eager = [model.init(cfg, seed_key(s)) for s in seeds]
    jitted = [jax.jit(model.init, static_argnums=0)(cfg, seed_key(s)) for s in seeds]
    keys = jax.vmap(jax.random.key)(np.asarray(seeds, np.uint32))
    vmapped = jax.jit(jax.vmap(lambda k: model.init(cfg, k)))(keys)
    blocks = jax.jit(jax.vmap(lambda k: model.init_blocks(cfg, k)))(keys)
    for i in range(len(seeds)):
        jax.tree.map(np.testing.assert_array_equal, eager[i], jitted[i])
        jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b[i]), eager[i], vmapped)
        jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b[i]),
                     {k: v for k, v in eager[i].items() if k.startswith(("layers_", "final"))},
                     blocks)


def test_embedding_group_has_its_own_stream():
    cfg = get_preset("llama2-tiny")
    p = _init(cfg, seed_key(1))
    # The blocks depend on the model key alone, the group on the embed stream's key alone.
    own = _init(cfg.ablate(shared_embedding=False), seed_key(1))
    jax.tree.map(np.testing.assert_array_equal, own["layers_1"], p["layers_1"])
    assert not np.array_equal(own["lm_head"]["kernel"], p["lm_head"]["kernel"])
    other = _init(cfg.ablate(embed_seed=3), seed_key(1))
    assert not np.array_equal(other["embed"]["embedding"], p["embed"]["embedding"])
    jax.tree.map(np.testing.assert_array_equal, other["layers_0"], p["layers_0"])
    # The group is never drawn from the params stream by accident.
    with pytest.raises(ValueError, match="'embed' rng stream"):
        model.Decoder(cfg).init({"params": seed_key(1)}, jnp.zeros((2,), jnp.int32))


@pytest.mark.parametrize("name", ["gpt2-rope-cpu", "llama2-cpu"])
def test_init_statistics_match_appendix_b1(name):
    """Every weight class has mean 0 and the B.1 std, within 5 standard errors.

    For n i.i.d. N(0, s^2) draws, SE(mean) = s / sqrt(n) and SE(sample std) ~= s / sqrt(2n).
    Biases are exactly 0 and norm scales exactly 1.
    """
    cfg = get_preset(name)
    p = _init(cfg, seed_key(3))
    for path, x in leaves(p).items():
        key = jax.tree_util.keystr(path)
        x = np.asarray(x, np.float64)
        if key.endswith("['bias']"):
            assert np.all(x == 0), key
            continue
        if key.endswith("['scale']"):
            assert np.all(x == 1), key
            continue
        want = cfg.residual_std if ("o_proj" in key or "down_proj" in key) else cfg.init_std
        n = x.size
        assert abs(x.mean()) < 5 * want / np.sqrt(n), key
        assert abs(x.std() - want) < 5 * want / np.sqrt(2 * n), (key, x.std(), want)


@pytest.mark.parametrize("name", TINY + ["attn0"])
def test_causality(name):
    cfg = (get_preset("gpt2-rope-tiny").ablate(attention="attn0_causal") if name == "attn0"
           else get_preset(name))
    p = _init(cfg, seed_key(0))
    tok = jax.random.randint(jax.random.key(1), (32,), 0, cfg.vocab_size)
    t = 20
    changed = tok.at[t].set((tok[t] + 1) % cfg.vocab_size)
    a = fwd(p, cfg, tok, return_hidden=True)
    b = fwd(p, cfg, changed, return_hidden=True)
    np.testing.assert_array_equal(a.hidden[:, :t], b.hidden[:, :t])
    np.testing.assert_array_equal(a.logits[:t], b.logits[:t])
    assert not np.allclose(a.logits[t:], b.logits[t:])


def test_full_attn0_is_not_causal():
    cfg = get_preset("gpt2-rope-tiny").ablate(attention="attn0_full")
    p = _init(cfg, seed_key(0))
    tok = jnp.arange(32)
    a = fwd(p, cfg, tok).logits
    b = fwd(p, cfg, tok.at[31].set(0)).logits
    assert not np.allclose(a[:5], b[:5])


@given(s=st.integers(0, 200), t=st.integers(0, 200), shift=st.integers(0, 300))
def test_rope_scores_depend_only_on_relative_position(s, t, shift):
    K = 16
    q = jax.random.normal(jax.random.key(0), (1, 1, K))
    k = jax.random.normal(jax.random.key(1), (1, 1, K))
    cos, sin = layers.rope_cos_sin(600, K, 10000.0)

    def score(i, j):
        qi = layers.apply_rope(q, cos[i:i + 1], sin[i:i + 1])
        kj = layers.apply_rope(k, cos[j:j + 1], sin[j:j + 1])
        return float(jnp.sum(qi * kj))

    assert score(s, t) == pytest.approx(score(s + shift, t + shift), rel=1e-4, abs=1e-4)
    # Rotation preserves norms.
    np.testing.assert_allclose(jnp.linalg.norm(layers.apply_rope(q, cos[s:s + 1], sin[s:s + 1])),
                               jnp.linalg.norm(q), rtol=1e-5)


@pytest.mark.parametrize("name", TINY)
def test_last_only_and_hidden_states_agree_with_full_forward(name):
    cfg = get_preset(name)
    p = _init(cfg, seed_key(2))
    tok = jax.random.randint(jax.random.key(3), (24,), 0, cfg.vocab_size)
    full = fwd(p, cfg, tok, return_hidden=True)
    last = fwd(p, cfg, tok, last_only=True)
    np.testing.assert_allclose(last.logits[0], full.logits[-1], rtol=1e-5, atol=1e-6)
    assert full.hidden.shape == (cfg.n_layers + 1, 24, cfg.d_model)
    np.testing.assert_array_equal(full.hidden[0], p["embed"]["embedding"][tok])
    np.testing.assert_allclose(full.normed, layers.norm(p["final_norm"], cfg, full.hidden[-1]),
                               rtol=1e-6)
    # Input embeddings instead of token ids give the same result.
    emb = fwd(p, cfg, embeds_Td=p["embed"]["embedding"][tok])
    np.testing.assert_array_equal(emb.logits, full.logits)


def test_sequence_longer_than_context_is_an_error():
    cfg = get_preset("gpt2-rope-tiny")
    p = _init(cfg, seed_key(0))
    with pytest.raises(ValueError, match="max_seq_len=128"):
        fwd(p, cfg, jnp.zeros(129, jnp.int32))


# --- ablation flags: each changes exactly what it says ------------------------------------------
def test_activation_flag_keeps_weights_and_changes_output():
    # Footnote 4: ReLU and tanh variants "are initialized with identical random weights".
    base = get_preset("gpt2-rope-tiny")
    x = jnp.arange(16)
    p = _init(base, seed_key(0))
    jax.tree.map(np.testing.assert_array_equal, p, _init(base.ablate(activation="relu"), seed_key(0)))
    outs = [fwd(p, base.ablate(activation=act), x).logits
            for act in ["relu", "gelu", "tanh", "silu", "gelu_tanh"]]
    for i in range(len(outs)):
        for j in range(i):
            assert not np.allclose(outs[i], outs[j])


def test_gelu_is_x_times_normal_cdf_to_float32_accuracy():
    """The erf form of exact GELU against a float64 reference on a dense grid and in the tails."""
    from scipy.special import ndtr

    x = np.concatenate([np.linspace(-10, 10, 200_001), [-30.0, -12.0, 12.0, 30.0]])
    x32 = x.astype(np.float32)
    want = x32.astype(np.float64) * ndtr(x32.astype(np.float64))
    got = np.asarray(jax.jit(layers.gelu_exact)(jnp.asarray(x32)), np.float64)
    err = np.abs(got - want)
    assert err.max() < 1.5e-6  # the docstring's bound, 1.1e-6, plus float32 rounding of x
    # Relative accuracy: float32-level where |GELU| > 0.1; in the negative tail 1 + erf cancels
    # (measured: 2.2e-5 relative where |GELU| > 0.01, 3.0e-4 where > 1e-3).
    for floor, bound in ((0.1, 2e-6), (0.01, 5e-5)):
        big = np.abs(want) > floor
        assert (err[big] / np.abs(want[big])).max() < bound
    ref = np.asarray(jax.nn.gelu(jnp.asarray(x32), approximate=False), np.float64)
    assert np.abs(got - ref).max() < 1.5e-6


def test_block_flags_remove_sublayers():
    base = get_preset("gpt2-rope-tiny")
    attn_only = _init(base.ablate(block="attn_only"), seed_key(0))["layers_0"]
    mlp_only = _init(base.ablate(block="mlp_only"), seed_key(0))["layers_0"]
    full = _init(base, seed_key(0))["layers_0"]
    assert set(attn_only) == {"attn_norm", "attn"} and set(mlp_only) == {"mlp_norm", "mlp"}
    # The sublayers that remain are the same weights as in the full model.
    jax.tree.map(np.testing.assert_array_equal, attn_only["attn"], full["attn"])
    jax.tree.map(np.testing.assert_array_equal, mlp_only["mlp"], full["mlp"])
    # MLP-only mixes no positions: each output depends on its own token alone.
    cfg = base.ablate(block="mlp_only")
    p = _init(cfg, seed_key(0))
    a = fwd(p, cfg, jnp.array([3, 4, 5])).logits
    b = fwd(p, cfg, jnp.array([9, 9, 5])).logits
    np.testing.assert_allclose(a[2], b[2], rtol=1e-6)


def test_mlp0_block_is_definition_1():
    # MLP0: Y = phi(X W_up) W_down, no norm, no residual (Definition 1).
    cfg = get_preset("gpt2-rope-tiny").ablate(block="mlp_only", norm="none", residual=False,
                                              activation="relu", n_layers=1)
    p = _init(cfg, seed_key(0))
    assert p["final_norm"] == {} and p["layers_0"]["mlp_norm"] == {}
    x = 0.02 * jax.random.normal(jax.random.key(1), (8, cfg.d_model))
    m = p["layers_0"]["mlp"]
    want = jax.nn.relu(x @ m["up_proj"]["kernel"]) @ m["down_proj"]["kernel"]
    out = fwd(p, cfg, embeds_Td=x, return_hidden=True)
    np.testing.assert_allclose(out.hidden[1], want, rtol=1e-5, atol=1e-8)


def test_attn0_causal_is_the_running_average():
    cfg = get_preset("gpt2-rope-tiny").ablate(block="attn_only", attention="attn0_causal",
                                              norm="none", residual=False, n_layers=1)
    p = _init(cfg, seed_key(0))
    assert p["layers_0"]["attn"] == {}
    x = jax.random.normal(jax.random.key(1), (10, cfg.d_model))
    out = fwd(p, cfg, embeds_Td=x, return_hidden=True).hidden[1]
    want = np.cumsum(np.asarray(x), 0) / np.arange(1, 11)[:, None]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_norm_and_residual_flags():
    base = get_preset("llama2-tiny")
    p = _init(base.ablate(norm="none"), seed_key(0))
    assert p["layers_0"]["attn_norm"] == {} and p["final_norm"] == {}
    # rmsnorm has no shift; layernorm (GPT-2) has one; values are 1 and 0.
    assert set(_init(base, seed_key(0))["final_norm"]) == {"scale"}
    assert set(_init(get_preset("gpt2-rope-tiny"), seed_key(0))["final_norm"]) == {"scale", "bias"}
    # Without residuals, X^(1) = MLP(Norm(H)) with H = MHA(Norm(X^(0))).
    cfg = base.ablate(residual=False, n_layers=1)
    p = _init(cfg, seed_key(0))
    x = jax.random.normal(jax.random.key(2), (6, cfg.d_model))
    blk = p["layers_0"]
    rope = layers.rope_cos_sin(6, cfg.resolved_head_dim, cfg.rope_theta)
    h = layers.attention(blk["attn"], cfg, layers.norm(blk["attn_norm"], cfg, x), rope)
    want = layers.mlp(blk["mlp"], cfg, layers.norm(blk["mlp_norm"], cfg, h))
    got = fwd(p, cfg, embeds_Td=x, return_hidden=True).hidden[1]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_bias_tying_and_gating_flags():
    g, l, q = (_init(get_preset(n), seed_key(0)) for n in TINY)
    assert "bias" in g["layers_0"]["attn"]["o_proj"] and "bias" in g["layers_0"]["mlp"]["up_proj"]
    assert "lm_head" not in g and "lm_head" in l  # GPT-2 ties W_U = W_E^T; LLaMA does not
    assert "gate_proj" in l["layers_0"]["mlp"] and "gate_proj" not in g["layers_0"]["mlp"]
    assert all("bias" not in v for v in l["layers_0"]["attn"].values())
    assert all("bias" in q["layers_0"]["attn"][k] for k in ("q_proj", "k_proj", "v_proj"))
    assert "bias" not in q["layers_0"]["attn"]["o_proj"]


@pytest.mark.parametrize("kind", ["sqrt_i", "sqrt_i_over_T", "headwise_rmsnorm"])
def test_output_transform_acts_per_position_per_head(kind):
    cfg = get_preset("llama2-tiny")
    cfg_t = dataclasses.replace(cfg, attn_output_transform=kind)
    o = jax.random.normal(jax.random.key(0), (12, cfg.n_heads, cfg.resolved_head_dim))
    got = np.asarray(layers.output_transform(cfg_t, o))
    i = np.arange(1, 13)[:, None, None]
    want = {"sqrt_i": np.sqrt(i) * o, "sqrt_i_over_T": np.sqrt(i / cfg.max_seq_len) * o,
            "headwise_rmsnorm": o / np.sqrt((np.asarray(o) ** 2).mean(-1, keepdims=True)
                                            + cfg.norm_eps)}[kind]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def _captured(cfg, p, x):
    """logits and what each attention layer sowed: A (H, Q, T) and o (Q, H, K) into W_O."""
    out, state = model.Decoder(cfg).apply({"params": p}, x, mutable=["intermediates"])
    sown = state["intermediates"]
    return out.logits, [sown[f"layers_{i}"]["attn"] for i in range(cfg.n_layers)]


@pytest.mark.parametrize("kind", ["sqrt_i", "sqrt_i_over_T", "headwise_rmsnorm"])
def test_output_transform_acts_only_through_o_i(kind):
    """In the first layer (same input with and without the transform) the probabilities are
    unchanged and o_i becomes c_i o_i; then the output changes."""
    cfg = get_preset("qwen2-tiny")  # GQA: the transform acts on query heads
    cfg_t = dataclasses.replace(cfg, attn_output_transform=kind)
    p = _init(cfg, seed_key(0))
    p_t = _init(cfg_t, seed_key(0))  # the same weights, plus gamma = 1 for head-wise RMSNorm
    x = jnp.arange(10)
    logits, (a0, *_) = _captured(cfg, p, x)
    logits_t, (t0, *_) = _captured(cfg_t, p_t, x)
    np.testing.assert_array_equal(t0["attention_probs"][0], a0["attention_probs"][0])
    o = np.asarray(a0["head_outputs"][0], np.float64)  # (T, H, K), untransformed
    i = np.arange(1, 11)[:, None, None]
    c = {"sqrt_i": np.sqrt(i), "sqrt_i_over_T": np.sqrt(i / cfg.max_seq_len),
         "headwise_rmsnorm": 1 / np.sqrt((o**2).mean(-1, keepdims=True) + cfg.norm_eps)}[kind]
    np.testing.assert_allclose(t0["head_outputs"][0], c * o, rtol=1e-5, atol=1e-7)
    assert not np.allclose(logits, logits_t)


@pytest.mark.parametrize("kind", ["none", "sqrt_i", "sqrt_i_over_T", "headwise_rmsnorm"])
def test_last_only_equals_full_last_row_for_every_transform(kind):
    # The transform's position i must be the absolute one when only the last query is computed.
    cfg = dataclasses.replace(get_preset("qwen2-tiny"), attn_output_transform=kind)
    p = _init(cfg, seed_key(1))
    tok = jax.random.randint(jax.random.key(2), (19,), 0, cfg.vocab_size)
    full = fwd(p, cfg, tok)
    last = fwd(p, cfg, tok, last_only=True)
    np.testing.assert_allclose(last.logits[0], full.logits[-1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(last.normed[0], full.normed[-1], rtol=1e-5, atol=1e-6)


def test_returned_attention_is_what_the_layers_used():
    """Recompute each layer's output from the returned A and the layer's own V and W_O."""
    cfg = get_preset("qwen2-tiny").ablate(block="attn_only", attn_output_transform="sqrt_i")
    p = _init(cfg, seed_key(3))
    tok = jax.random.randint(jax.random.key(4), (13,), 0, cfg.vocab_size)
    fwd_a = jax.jit(model.forward, static_argnums=1,
                    static_argnames=("last_only", "return_hidden", "return_attention"))
    out = fwd_a(p, cfg, tok, return_hidden=True, return_attention=True)
    L, H, T, N, K = cfg.n_layers, cfg.n_heads, 13, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    assert out.attention.shape == (L, H, T, T)
    A = np.asarray(out.attention, np.float64)
    np.testing.assert_allclose(A.sum(-1), 1.0, rtol=1e-6)
    assert np.all(np.triu(A, k=1) == 0)  # causal
    for layer in range(L):
        blk = p[f"layers_{layer}"]
        x = out.hidden[layer]
        v_TNK = layers.linear(blk["attn"]["v_proj"], layers.norm(blk["attn_norm"], cfg, x))
        v_TNK = np.asarray(v_TNK, np.float64).reshape(T, N, K)
        o_THK = np.einsum("hqt,thk->qhk", A[layer], np.repeat(v_TNK, H // N, axis=1))
        o_THK = o_THK * np.sqrt(np.arange(1, T + 1))[:, None, None]
        want = layers.linear(blk["attn"]["o_proj"], jnp.asarray(o_THK.reshape(T, H * K),
                                                                jnp.float32))
        np.testing.assert_allclose(out.hidden[layer + 1] - x, want, rtol=1e-4, atol=1e-6)
    last = fwd_a(p, cfg, tok, last_only=True, return_attention=True)
    assert last.attention.shape == (L, H, 1, T)
    np.testing.assert_allclose(last.attention[:, :, 0], out.attention[:, :, -1], rtol=1e-5,
                               atol=1e-7)
    # Nothing is returned (or sown) unless asked.
    assert fwd_a(p, cfg, tok).attention is None
    with pytest.raises(ValueError, match="no softmax attention"):
        model.forward(p, cfg.ablate(attention="attn0_causal", n_kv_heads=H,
                                  attn_output_transform="none"), tok,
                      return_attention=True)


@pytest.mark.parametrize("name,changes", [
    ("gpt2-rope-tiny", {}), ("llama2-tiny", {}),
    ("qwen2-tiny", {}),  # grouped K/V heads (4 query heads read 2)
    ("qwen2-tiny", {"attn_output_transform": "sqrt_i"}),  # positions of later blocks
    ("llama2-tiny", {"attn_output_transform": "headwise_rmsnorm", "attn_output_gate": True}),
])
def test_blockwise_attention_is_the_whole_matrix_attention(name, changes, monkeypatch):
    """Without attention maps to keep, a layer attends QUERY_BLOCK queries at a time (queries
    [s, e) over keys [0, e)); its outputs, every block's hidden state and the gradients equal
    those of the whole (H, T, T) softmax to float32 rounding. T = 50 with blocks of 16 leaves
    a ragged last block."""
    cfg = dataclasses.replace(get_preset(name), **changes)
    p = _init(cfg, seed_key(5))
    tok = jax.random.randint(jax.random.key(6), (50,), 0, cfg.vocab_size)

    calls, blocked_attention = [], layers.blocked_causal_attention
    monkeypatch.setattr(layers, "blocked_causal_attention",
                        lambda *a: calls.append(a[3]) or blocked_attention(*a))

    def run(block):
        monkeypatch.setattr(layers, "QUERY_BLOCK", block)
        f = jax.jit(lambda p: model.forward(p, cfg, tok, return_hidden=True))  # traced anew
        g = jax.jit(jax.grad(lambda p: model.forward(p, cfg, tok).logits.std()))
        return f(p), g(p)

    (whole, g_whole), n_whole = run(10**6), len(calls)
    blocked, g_blocked = run(16)
    assert n_whole == 0 and calls == [16] * (2 * cfg.n_layers)  # forward and gradient traces
    np.testing.assert_allclose(blocked.hidden, whole.hidden, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(blocked.logits, whole.logits, rtol=1e-5, atol=1e-6)
    for path, g in leaves(g_blocked).items():
        np.testing.assert_allclose(g, leaves(g_whole)[path], rtol=1e-4, atol=1e-7,
                                   err_msg=jax.tree_util.keystr(path))
    # ... and with the maps asked for, the whole matrix is formed and returned as before
    monkeypatch.setattr(layers, "QUERY_BLOCK", 16)
    maps = model.forward(p, cfg, tok, return_attention=True)
    assert maps.attention.shape == (cfg.n_layers, cfg.n_heads, 50, 50)
    np.testing.assert_allclose(maps.logits, whole.logits, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("preset", ["llama2-tiny", "gpt2-rope-tiny", "qwen2-tiny"])
def test_param_shapes_of_an_untied_head_are_the_traced_ones(preset):
    """``param_shapes`` builds an untied model's tree from the tied one's trace plus W_U
    (d, V); it equals the tree ``jax.eval_shape`` traces for the untied model."""
    for tie in (True, False):
        cfg = dataclasses.replace(get_preset(preset), tie_embeddings=tie)
        traced = jax.eval_shape(lambda k: model.init(cfg, k), jax.random.key(0))
        ours = model.param_shapes(cfg)
        assert jax.tree.structure(ours) == jax.tree.structure(traced)
        assert jax.tree.leaves(ours) == jax.tree.leaves(traced)
