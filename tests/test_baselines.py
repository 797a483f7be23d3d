"""The four fingerprint baselines (Intrinsic, REEF, PCS, ICS) on cases with known answers.

Symmetries: a copy of a model with its MLP hidden units, its attention heads (K/V groups with
their query heads) or its residual basis permuted computes the same function (checked on the
logits, so each permutation is a true symmetry); HuRef's invariants, REEF's CKA and the std
profiles must not change, PCS must. Unrelated initialisations: PCS has a closed form (the norm
gains make it large), ICS is near 0. Tiny presets (d = 64, 2 blocks), LLaMA-style (multi-head)
and Qwen2-style (grouped-query attention, Q/K/V biases).
"""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from bornbiased_jax import model
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods import baselines as B
from bornbiased_jax.sources import load_source

PRESETS = ["llama2-tiny", "qwen2-tiny"]


def _tiny(name, seed):
    return load_source(f"preset:{name}@{seed}", shared_embedding=False)


def _copy(params):
    return {k: _copy(v) if isinstance(v, dict) else np.array(v) for k, v in params.items()}


def permute_mlp(params, cfg, rng):
    """Permute each block's MLP hidden units: columns of W_gate, W_up, rows of W_down."""
    p = _copy(params)
    for i in range(cfg.n_layers):
        perm = rng.permutation(cfg.d_ff)
        mlp = p[f"layers_{i}"]["mlp"]
        for name in ("gate_proj", "up_proj"):
            if name in mlp:
                mlp[name]["kernel"] = mlp[name]["kernel"][:, perm]
                if "bias" in mlp[name]:
                    mlp[name]["bias"] = mlp[name]["bias"][perm]
        mlp["down_proj"]["kernel"] = mlp["down_proj"]["kernel"][perm]
    return p


def derangement(rng, n):
    """A random permutation of n items that moves every one of them (n = 1: the identity). With
    a few heads a plain random permutation is the identity often (1/2 for two heads), and a copy
    that permutes nothing tests nothing."""
    while True:
        perm = rng.permutation(n)
        if n == 1 or not np.any(perm == np.arange(n)):
            return perm


def permute_heads(params, cfg, rng):
    """Permute each block's K/V heads, and the query heads of every group with them (query
    head h = n G + g reads K/V head n); every head moves."""
    p = _copy(params)
    d, H, N, K = cfg.d_model, cfg.n_heads, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    G = H // N
    for i in range(cfg.n_layers):
        kv = derangement(rng, N)
        q = np.concatenate([kv[n] * G + derangement(rng, G) for n in range(N)])
        a = p[f"layers_{i}"]["attn"]
        for name, heads, perm in (("q_proj", H, q), ("k_proj", N, kv), ("v_proj", N, kv)):
            a[name]["kernel"] = a[name]["kernel"].reshape(d, heads, K)[:, perm].reshape(d, -1)
            if "bias" in a[name]:
                a[name]["bias"] = a[name]["bias"].reshape(heads, K)[perm].reshape(-1)
        a["o_proj"]["kernel"] = a["o_proj"]["kernel"].reshape(H, K, d)[q].reshape(H * K, d)
    return p


def permute_residual(params, cfg, rng):
    """Permute the residual basis: embedding columns, LM-head rows, every norm gain, the input
    rows of W_Q, W_K, W_V, W_gate, W_up and the output columns of W_O, W_down."""
    perm = rng.permutation(cfg.d_model)
    p = _copy(params)
    p["embed"]["embedding"] = p["embed"]["embedding"][:, perm]
    p["lm_head"]["kernel"] = p["lm_head"]["kernel"][perm]
    p["final_norm"]["scale"] = p["final_norm"]["scale"][perm]
    for i in range(cfg.n_layers):
        blk = p[f"layers_{i}"]
        for norm in ("attn_norm", "mlp_norm"):
            blk[norm]["scale"] = blk[norm]["scale"][perm]
        for sub, name in (("attn", "q_proj"), ("attn", "k_proj"), ("attn", "v_proj"),
                          ("mlp", "gate_proj"), ("mlp", "up_proj")):
            blk[sub][name]["kernel"] = blk[sub][name]["kernel"][perm]
        for sub, name in (("attn", "o_proj"), ("mlp", "down_proj")):
            blk[sub][name]["kernel"] = blk[sub][name]["kernel"][:, perm]
    return p, perm


def _trained_like(params, rng):
    """The parameters with the norm gains moved off 1 (as training does), so that permuting
    the residual basis changes them too."""
    p = _copy(params)

    def visit(t):
        for k, v in t.items():
            if isinstance(v, dict):
                visit(v)
            elif k == "scale":
                t[k] = (1 + 0.3 * rng.standard_normal(v.shape)).astype(np.float32)
    visit(p)
    return p


def _logits(params, cfg, tokens):
    return np.asarray(model.forward(jnp_tree(params), cfg, tokens).logits)


def jnp_tree(params):
    return {k: jnp_tree(v) if isinstance(v, dict) else jnp.asarray(v) for k, v in params.items()}


@pytest.mark.parametrize("preset", PRESETS)
def test_permuted_copy_same_function_same_invariants_different_pcs(preset):
    m = _tiny(preset, 7)
    cfg = m.cfg
    rng = np.random.default_rng(0)
    base = _trained_like(m.params, rng)
    tokens = jnp.asarray(rng.integers(0, cfg.vocab_size, 24))
    ids = list(range(0, 128, 2))
    windows = rng.integers(0, cfg.vocab_size, (40, 16)).astype(np.int32)
    loaded = lambda p: type(m)(cfg, jnp_tree(p), "x", "preset", 7, None)  # noqa: E731
    H0 = B.reef_features(loaded(base), windows)
    want = _logits(base, cfg, tokens)
    total = float(np.sum(np.square(B.flat_params(base))))
    p_res, perm = permute_residual(base, cfg, rng)
    for what, p in (("mlp", permute_mlp(base, cfg, rng)), ("heads", permute_heads(base, cfg, rng)),
                    ("residual", p_res)):
        # A true symmetry: the same logits (float32 sums in another order).
        np.testing.assert_allclose(_logits(p, cfg, tokens), want, rtol=1e-4, atol=1e-5,
                                   err_msg=what)
        assert B.ics(base, cfg, p, cfg, ids).similarity == pytest.approx(1, abs=1e-9), what
        assert B.intrinsic(base, cfg, p, cfg).similarity == pytest.approx(1, abs=1e-9), what
        H = B.reef_features(loaded(p), windows)
        assert B.reef(H0, H).similarity == pytest.approx(1, abs=1e-5), what
        if what == "residual":  # the hidden states are permuted, not changed
            np.testing.assert_allclose(H[:, np.argsort(perm)], H0, rtol=1e-4, atol=1e-5)
        # PCS: a randomly permuted array w' keeps its mean, and its centred part is nearly
        # uncorrelated with w's, so PCS falls by about sum ||w - mean w||^2 / ||theta||^2 over
        # the arrays the permutation changed; require at least half of that fall.
        moved = sum(float(np.sum(np.square(a - a.mean()))) for (path, a), (_, b) in
                    zip(B._leaves(base), B._leaves(p)) if not np.array_equal(a, b)
                    and path[0] not in B.EMBEDDING_GROUP)
        sim = B.pcs(base, p).similarity
        assert sim < 1 - 0.5 * moved / total, (what, sim, moved / total)
    assert B.pcs(base, base).similarity == pytest.approx(1, abs=1e-12)


@pytest.mark.parametrize("preset", PRESETS)
def test_unrelated_initialisations(preset):
    ms = [_tiny(preset, s) for s in range(7)]
    cfg = ms[0].cfg
    # PCS of independent inits: the norm gains (1 in both) give the closed form G / (G + S).
    want, sd = B.pcs_unrelated_init(cfg)
    got = B.pcs(ms[1].params, ms[2].params).similarity
    assert abs(got - want) < 4 * sd, (got, want, sd)
    assert want > 0.8  # so PCS calls two unrelated tiny inits related: the gains dominate
    assert B.pcs(ms[1].params, ms[2].params, include_norms=False).similarity == pytest.approx(
        0, abs=4 * sd)
    # ICS of independent inits: mean 0 over 6 pairs (within 4 standard errors), each small.
    ids = list(range(0, 128, 2))
    v = np.array([B.ics(ms[0].params, cfg, m.params, cfg, ids).similarity for m in ms[1:]])
    assert abs(v.mean()) < 4 * v.std(ddof=1) / math.sqrt(len(v)) and np.abs(v).max() < 0.05
    # Identical models: every similarity is 1.
    m = ms[3]
    assert B.ics(m.params, cfg, m.params, cfg, ids).similarity == pytest.approx(1)
    assert B.intrinsic(m.params, cfg, m.params, cfg).similarity == pytest.approx(1)


def test_linear_cka_known_values():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 40))
    Q, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    assert B.linear_cka(X, X) == pytest.approx(1)
    assert B.linear_cka(X, 3.0 * X @ Q + 5.0) == pytest.approx(1)  # orthogonal, scale, shift
    # Independent isotropic Gaussians: CKA ~ sqrt(pq / ((n + p)(n + q))), a ratio of
    # expectations accurate to O(1/n); 30 draws, 4 standard errors plus 2 % for that bias.
    n, p, q = 400, 100, 50
    v = np.array([B.linear_cka(rng.standard_normal((n, p)), rng.standard_normal((n, q)))
                  for _ in range(30)])
    want = math.sqrt(p * q / ((n + p) * (n + q)))
    assert abs(v.mean() - want) < 4 * v.std(ddof=1) / math.sqrt(len(v)) + 0.02 * want
    assert B.reef(X, X).same_lineage and not B.reef(X, rng.standard_normal((300, 40))).same_lineage


def test_text_windows_and_least_frequent_tokens():
    from bornbiased_jax.data import train_tokenizer

    docs = ["the cat sat on the mat " * 20, "a dog ran in the fog " * 20, "zebra quartz"]
    tok = train_tokenizer(docs, 300)
    w = B.text_windows(docs, tok, 8, 5)
    assert w.shape == (8, 5) and w.dtype == np.int32
    ids = [i for e in tok.encode_batch(docs) for i in e.ids]
    assert w[0].tolist() == ids[:5]  # the first window starts at the first token
    rare = B.least_frequent_tokens(docs, tok, 10)
    counts = np.bincount(ids, minlength=tok.get_vocab_size())
    assert counts[rare].max() <= np.sort(np.delete(counts, tok.token_to_id("<|endoftext|>")))[9]
    eot = tok.token_to_id("<|endoftext|>")  # exactly: by count, ties by id, end-of-text skipped
    assert rare == [i for _, i in sorted((counts[i], i) for i in range(len(counts))
                                         if i != eot)][:10]
    with pytest.raises(UserError):
        B.text_windows(docs, tok, 10_000, 50)


def test_bad_input():
    a, b = _tiny("llama2-tiny", 0), _tiny("qwen2-tiny", 0)
    with pytest.raises(UserError):
        B.pcs(a.params, b.params)  # different architectures
    with pytest.raises(UserError):
        B.ics(a.params, a.cfg, a.params, a.cfg, [a.cfg.vocab_size])  # id out of range
    with pytest.raises(UserError):
        B.linear_cka(np.ones((5, 3)), np.ones((4, 3)))
