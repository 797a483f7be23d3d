"""The attention test (``fingerprint.methods.attention``, its views ``head_spectra``): the views
unchanged by the renamings a copy may carry (residual rotations, per-head maps -- for RoPE only
those that commute with its rotations -- head permutations, the scales a norm makes free), the
null law of the re-pairing checked against enumeration and on pairs of fresh initialisations,
and a dead head matched to none."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bornbiased_jax import model
from bornbiased_jax.fingerprint.edits.obfuscation import obfuscate, permute_heads
from bornbiased_jax.fingerprint.edits.rotation import (flip_residual_signs, mix_value_heads,
                                                       random_orthogonal, rotate_residual)
from bornbiased_jax.fingerprint.edits.tree import map_roles
from bornbiased_jax.fingerprint.methods import attention as A
from bornbiased_jax.fingerprint.methods import head_spectra as S
from bornbiased_jax.keys import seed_key
from bornbiased_jax.presets import get_preset

PRESETS = ["llama2-tiny", "qwen2-tiny"]  # multi-head and grouped-query, both RoPE
# Views are logs of singular values, computed in float64 from float32 weights that an edit
# rounded once: they move by ~1e-7; a wrong fold or a map that is no renaming moves them by
# 1e-2 and more.
ATOL = 1e-4


def _trained_like(cfg, seed: int) -> dict:
    """A fresh init whose gains (every norm's, the QK-norm's) are 1 + N(0, 0.3^2), so that a
    gain left unfolded shows."""
    rng = np.random.default_rng(seed)

    def fn(path, role, leaf):
        w = np.asarray(leaf)
        if role in ("norm", "qk_norm", "head_norm") and path[-1] == "scale":
            return (np.abs(1 + 0.3 * rng.standard_normal(w.shape))
                    - (1.0 if cfg.norm_unit_offset else 0.0)).astype(w.dtype)
        return w
    return map_roles(model.init(cfg, seed_key(seed)), fn)


def _assert_same_function(cfg, a, b):
    tokens = jax.random.randint(jax.random.key(1), (3, 16), 0, cfg.vocab_size)

    def logits(c, p):
        return np.asarray(jax.vmap(lambda t: model.forward(p, c, t).logits)(tokens))
    la, lb = logits(cfg, a), logits(cfg, b)
    assert np.abs(la - lb).max() <= 1e-5 * np.abs(la).max()


def _assert_same_views(va, vb, order=None):
    """Layer by layer, B's head h has A's head order[l][h]'s views (None: the same head)."""
    for l, (x, y) in enumerate(zip(va, vb)):
        idx = np.arange(x.heads) if order is None else order[l]
        np.testing.assert_allclose(y.qk, x.qk[idx], atol=ATOL)
        np.testing.assert_allclose(y.ov, x.ov[idx], atol=ATOL)


def _qk_maps(cfg, rng, rope_commuting: bool) -> np.ndarray:
    """(L, N, K, K) invertible maps A, one per K/V head: with ``rope_commuting`` block-diagonal
    over RoPE's frequency pairs (i, i + K/2), each block c R_phi (c in [0.5, 2]); else a
    general M = U diag(c) (U Haar-orthogonal, condition number <= 4)."""
    L, N, K = cfg.n_layers, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    if not rope_commuting:
        u = np.linalg.qr(rng.standard_normal((L, N, K, K)))[0]
        return u * rng.uniform(0.5, 2.0, (L, N, 1, K))
    h = K // 2
    c, phi = rng.uniform(0.5, 2.0, (L, N, h)), rng.uniform(0, 2 * np.pi, (L, N, h))
    out = np.zeros((L, N, K, K))
    f = np.arange(h)
    out[..., f, f] = out[..., f + h, f + h] = c * np.cos(phi)
    out[..., f, f + h], out[..., f + h, f] = c * np.sin(phi), -c * np.sin(phi)
    return out


def map_queries_keys(params: dict, cfg, a_LNKK: np.ndarray) -> dict:
    """W_Q^h -> W_Q^h A_n for every query head h of K/V head n, W_K^n -> W_K^n A_n^-T (and
    their biases): q k^T unchanged wherever A_n commutes with what acts between them."""
    H, N, K = cfg.n_heads, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    G = H // N
    inv_t = np.swapaxes(np.linalg.inv(a_LNKK), -1, -2)

    def fn(path, role, leaf):
        if path[1] != "attn" or path[2] not in ("q_proj", "k_proj") or role not in (
                "kernel", "bias"):
            return leaf
        l, w = int(path[0].removeprefix("layers_")), np.asarray(leaf, np.float64)
        m = np.repeat(a_LNKK[l], G, axis=0) if path[2] == "q_proj" else inv_t[l]
        heads = w.reshape(*w.shape[:-1], -1, K)
        return np.einsum("...hk,hkj->...hj", heads, m).reshape(w.shape).astype(np.float32)
    return map_roles(params, fn)


# ------------------------------------------------------------------------ invariances
@pytest.mark.parametrize("name", PRESETS)
def test_views_unchanged_by_a_residual_rotation(name):
    cfg = get_preset(name)
    params = _trained_like(cfg, 0)
    cfg_r, rotated = rotate_residual(params, cfg, random_orthogonal(cfg.d_model,
                                                                    jax.random.key(3)))
    _assert_same_views(S.head_views(params, cfg), S.head_views(rotated, cfg_r))
    other = _trained_like(cfg, 1)
    for x in (params, other):  # the statistic and its p, of a copy and of an unrelated model
        r, r_rot = A.attention_test(x, cfg, params, cfg), A.attention_test(x, cfg, rotated,
                                                                           cfg_r)
        assert (r.statistic, r.p) == (r_rot.statistic, r_rot.p)
    assert A.attention_test(params, cfg, rotated, cfg_r).statistic == cfg.n_layers * cfg.n_heads


@pytest.mark.parametrize("name", PRESETS)
def test_sign_flips_and_all_obfuscations_at_once_leave_the_copy_found(name):
    """Residual sign flips (a rotation needing no fold), and ``obfuscation.obfuscate``: norm
    gains rescaled and compensated, heads and MLP units permuted, the residual basis
    permuted: every head still doubly matched, in both directions."""
    cfg = get_preset(name)
    params = _trained_like(cfg, 8)
    signs = np.where(np.random.default_rng(5).random(cfg.d_model) < 0.5, -1, 1)
    flipped = flip_residual_signs(params, cfg, signs)
    _assert_same_views(S.head_views(params, cfg), S.head_views(flipped, cfg))
    renamed = obfuscate(params, cfg, jax.random.key(6))
    r = A.attention_test(params, cfg, renamed, cfg)
    assert r.details["K_total_a"] == r.details["K_total_b"] == cfg.n_layers * cfg.n_heads


@pytest.mark.parametrize("name", PRESETS)
def test_views_unchanged_by_per_head_maps_rope_allows(name):
    """Q/K: per K/V head a scaled rotation of each frequency pair (what commutes with RoPE);
    V/O: any invertible map per K/V head (``rotation.mix_value_heads``). Both preserve the
    function; the views do not move."""
    cfg = get_preset(name)
    params = _trained_like(cfg, 2)
    rng = np.random.default_rng(0)
    L, N, K = cfg.n_layers, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    u = np.linalg.qr(rng.standard_normal((L, N, K, K)))[0]
    mapped = mix_value_heads(map_queries_keys(params, cfg, _qk_maps(cfg, rng, True)), cfg,
                             u * rng.uniform(0.5, 2.0, (L, N, 1, K)))
    _assert_same_function(cfg, params, mapped)
    _assert_same_views(S.head_views(params, cfg), S.head_views(mapped, cfg))


def test_a_map_rope_forbids_changes_the_function_and_the_per_pair_view():
    """A general invertible A on queries and keys keeps W_Q W_K^T (so its whole spectrum) but
    not the function of a RoPE model: no renaming, and the per-pair view moves. Without RoPE
    (learned positions) the same map is a renaming, and the view, the whole spectrum, stays."""
    cfg = get_preset("llama2-tiny")
    params = _trained_like(cfg, 3)
    a = _qk_maps(cfg, np.random.default_rng(1), False)
    mapped = map_queries_keys(params, cfg, a)
    with pytest.raises(AssertionError):
        _assert_same_function(cfg, params, mapped)
    assert np.abs(S.head_views(mapped, cfg)[0].qk - S.head_views(params, cfg)[0].qk).max() > 0.01
    c = S.circuits(params, cfg, 0)
    c2 = S.circuits(mapped, cfg, 0)
    np.testing.assert_allclose(S.product_singular_values(c2["q"], c2["k"]),
                               S.product_singular_values(c["q"], c["k"]), rtol=1e-5)
    learned = cfg.ablate(position="learned")
    p_learned = _trained_like(learned, 3)
    m_learned = map_queries_keys(p_learned, learned, a)
    _assert_same_function(learned, p_learned, m_learned)
    _assert_same_views(S.head_views(p_learned, learned), S.head_views(m_learned, learned))


@pytest.mark.parametrize("name", PRESETS + ["gemma3-tiny", "olmo2-tiny"])
def test_views_follow_permuted_heads(name):
    cfg = get_preset(name)
    params = _trained_like(cfg, 4)
    L, N, G = cfg.n_layers, cfg.resolved_n_kv_heads, cfg.n_groups
    rng = np.random.default_rng(3)
    kv = np.stack([rng.permutation(N) for _ in range(L)])
    grp = np.stack([[rng.permutation(G) for _ in range(N)] for _ in range(L)])
    permuted = permute_heads(params, cfg, kv, grp)
    _assert_same_function(cfg, params, permuted)
    order = (kv[:, :, None] * G + grp).reshape(L, N * G)  # new head h is old head order[l, h]
    _assert_same_views(S.head_views(params, cfg), S.head_views(permuted, cfg), order)
    r = A.attention_test(params, cfg, permuted, cfg)
    assert r.statistic == L * cfg.n_heads and r.details["K_per_layer"] == [cfg.n_heads] * L


@pytest.mark.parametrize("name, scope", [("gemma3-tiny", "head"), ("olmo2-tiny", "layer")])
def test_scales_a_qk_norm_makes_free_do_not_move_the_views(name, scope):
    """A QK-norm divides q and k by their root mean square, so a scale c > 0 on W_Q (per head
    with a per-head norm, on the whole projection with OLMo 2's) changes nothing but eps's
    share; the QK view is centred to match. A post-norm does the same for W_O's layer-wide
    scale."""
    cfg = get_preset(name)
    params = _trained_like(cfg, 5)
    K, H = cfg.resolved_head_dim, cfg.n_heads
    c = np.exp(np.random.default_rng(4).normal(0, 1, H)) if scope == "head" else np.full(H, 3.0)

    def fn(path, role, leaf):
        if role == "kernel" and path[1] == "attn" and path[2] == "q_proj":
            return np.asarray(leaf) * np.repeat(c, K)
        if role == "kernel" and path[1] == "attn" and path[2] == "o_proj":
            return np.asarray(leaf) * 2.5  # the post-norm removes a layer-wide scale
        return leaf
    scaled = map_roles(params, fn)
    _assert_same_views(S.head_views(params, cfg), S.head_views(scaled, cfg))


# ---------------------------------------------------------------------------- the law
@pytest.mark.parametrize("H, N", [(4, 4), (4, 2), (6, 3), (6, 2), (8, 2)])
def test_layer_law_is_the_law_of_the_re_pairing_group(H, N):
    """layer_log_pmf against enumeration of S_G wr S_N (every permutation of the H heads that
    keeps the K/V grouping), for prescriptions phi with holes and across groups."""
    G = H // N
    rng = np.random.default_rng(H * 10 + N)
    group = [p for p in itertools.permutations(range(H))
             if all(p[i] // G == p[i - i % G] // G for i in range(H))]
    assert len(group) == math.factorial(G) ** N * math.factorial(N)
    for _ in range(4):
        phi = rng.permutation(H)
        phi[rng.random(H) < 0.3] = -1
        counts = np.bincount([sum(p[i] == phi[i] for i in range(H)) for p in group],
                             minlength=H + 1)
        np.testing.assert_allclose(np.exp(A.layer_log_pmf(phi, N)), counts / len(group),
                                   atol=1e-12)


def _fresh_blocks(cfg, first: int, count: int) -> list[dict]:
    keys = jax.vmap(jax.random.key)(jnp.arange(first, first + count))
    stacked = jax.jit(jax.vmap(lambda k: model.init_blocks(cfg, k)))(keys)
    host = jax.tree.map(np.asarray, stacked)
    return [jax.tree.map(lambda x, i=i: x[i], host) for i in range(count)]


@pytest.mark.parametrize("name, pairs", [
    ("llama2-tiny", 150),
    pytest.param("llama2-tiny", 1000, marks=pytest.mark.slow),  # 25 s on the 2-core CPU
    pytest.param("qwen2-tiny", 400, marks=pytest.mark.slow)])
def test_null_at_initialisation(name, pairs):
    """Pairs of independent fresh initialisations, each direction's p from its own model's
    re-pairing: the rejection rate at alpha is at most alpha plus three binomial standard
    errors sqrt(alpha (1 - alpha) / pairs) (0.0094 at alpha = 0.01 for 1,000 pairs; measured
    there: 0.2 % and 0.1 % of the two directions at 0.01, 2.6 % and 3.0 % at 0.05), and
    equals the law's attainable size (P(p <= alpha) under the exact law of each pair,
    averaged) within three standard errors: the law is the null's, not only conservative.
    Matching by one view alone pairs every head of two unrelated initialisations (the QK
    spectra concentrate: an unrelated head is about as near as a sibling head of the same
    model); it is the two views' agreement that the law prices."""
    cfg = get_preset(name)
    models = _fresh_blocks(cfg, 50_000, 2 * pairs)
    alphas = (0.01, 0.05, 0.1, 0.2)
    rejected, size = np.zeros(len(alphas)), np.zeros(len(alphas))
    K, mean_K, nearest, sibling = [], [], [], []
    for i in range(pairs):
        va, vb = S.head_views(models[2 * i], cfg), S.head_views(models[2 * i + 1], cfg)
        for x, y in ((va, vb), (vb, va)):
            d = A.Direction.of(x, y)
            rejected += np.exp(d.log_p) <= np.asarray(alphas)
            sf = np.exp([A.log_sf(d.log_pmf, k) for k in range(len(d.log_pmf))])
            pmf = np.exp(d.log_pmf)
            size += [pmf[sf <= a].sum() for a in alphas]
            K.append(d.K)
            mean_K.append(float((pmf * np.arange(len(pmf))).sum()))
        nearest.append(np.nanmean(A.Direction.of(va, vb).qk_distance_L))
        D = A.distances(va[0].qk, va[0].qk)
        sibling.append(D[~np.eye(len(D), dtype=bool)].min())
    n = 2 * pairs  # the two directions of a pair are not independent: judged on n / 2
    rate, size = rejected / n, size / n
    se = np.sqrt(np.asarray(alphas) * (1 - np.asarray(alphas)) / pairs)
    assert np.all(rate <= np.asarray(alphas) + 3 * se), (rate, alphas)
    se_size = np.sqrt(size * (1 - size) / pairs)
    assert np.all(np.abs(rate - size) <= 3 * se_size + 1e-12), (rate, size)
    assert abs(np.mean(K) - np.mean(mean_K)) <= 3 * np.std(K) / math.sqrt(pairs)
    assert np.median(nearest) < 1.5 * np.median(sibling)


def test_a_dead_head_is_nobodys_partner():
    """A head whose W_O is zero (a pruned head) has a zero OV circuit: it is dead in that view
    and paired with none, so two models pruned alike do not agree on it by ties."""
    cfg = get_preset("llama2-tiny")
    K = cfg.resolved_head_dim

    def prune(p):
        def fn(path, role, leaf):
            w = np.array(leaf)
            if role == "kernel" and path[1] == "attn" and path[2] == "o_proj":
                w[:K] = 0  # head 0's rows
            return w
        return map_roles(p, fn)
    a, b = prune(_trained_like(cfg, 6)), prune(_trained_like(cfg, 7))
    va = S.head_views(a, cfg)
    assert not va[0].live_ov[0] and va[0].live_ov[1:].all() and va[0].live_qk.all()
    m = A.partners(A.distances(va[0].ov, va[0].ov), va[0].live_ov, va[0].live_ov)
    assert m[0] == -1 and list(m[1:]) == [1, 2, 3]
    r = A.attention_test(a, cfg, b, cfg, direction="a")
    assert 0 < r.p <= 1 and r.details["K_per_layer"][0] <= 3
