"""Contraction probes on inputs with a known answer, and the validity of their significance test."""

import math

import jax
import numpy as np
import pytest

from bornbiased_jax.presets import get_preset
from bornbiased_jax.probes import contraction as C
from bornbiased_jax.probes.inputs import GaussianEmbeds
from bornbiased_jax.sweep import sweep
from bornbiased_jax.theory import attn0, simulate


def test_identical_vectors_have_similarity_one_and_orthogonal_zero():
    v = np.random.default_rng(0).standard_normal(16)
    s = C.pairwise_similarity(np.tile(v, (5, 1)) * np.arange(1, 6)[:, None])  # scale-free
    assert s.mean == pytest.approx(1.0) and s.sd == pytest.approx(0.0, abs=1e-12)
    s0 = C.pairwise_similarity(np.eye(8))
    assert s0.mean == pytest.approx(0.0) and s0.z == pytest.approx(0.0)


def test_planted_direction_is_recovered():
    rng = np.random.default_rng(1)
    d, V, N = 64, 300, 400
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    U = 0.6 * v + rng.standard_normal((N, d)) / math.sqrt(d)
    direction = C.contraction_direction(U)
    assert direction @ v / np.linalg.norm(direction) > 0.95
    W_U = rng.standard_normal((d, V)) * 0.02
    W_U[:, 123] = v  # the token aligned with the planted direction
    assert C.direction_top_token(direction, W_U) == 123
    sim = C.pairwise_similarity(U)
    assert sim.mean > 0.2 and sim.log10_p < -50


def test_max_dimension_counts():
    X = np.zeros((5, 4))
    X[[0, 1, 2], 2] = 1.0
    X[[3, 4], 0] = 1.0
    np.testing.assert_array_equal(C.max_dimension_counts(X), [2, 0, 3, 0])


def test_leave_one_block_out_cosines_match_the_vectors_themselves():
    rng = np.random.default_rng(3)
    U = rng.standard_normal((40, 8)) + 0.5
    blocks = np.split(U / np.linalg.norm(U, axis=1, keepdims=True), [10, 25])  # 10, 15, 15
    loo = C.mean_similarity_leave_one_out([b.sum(0) for b in blocks], [len(b) for b in blocks])
    for b in range(3):
        rest = np.concatenate([x for i, x in enumerate(blocks) if i != b])
        assert loo[b] == pytest.approx(C.pairwise_similarity(rest).mean, abs=1e-12)
    with pytest.raises(ValueError, match="at least two blocks"):
        C.mean_similarity_leave_one_out([blocks[0].sum(0)], [10])


def test_jackknife_interval_of_a_mean_cosine_covers_at_the_stated_rate():
    """The delete-one-block jackknife over 8 blocks (Figure 2's paper-scale standard error):
    for a mean it is sd / sqrt(B) exactly; for a mean pairwise cosine of vectors around a
    planted direction its 95 % t interval (7 df) covers the true mean cosine in 95 % of 400
    replicates, up to 3 binomial SE (1.1 % each)."""
    from bornbiased_jax.stats import jackknife_se, mean_se, t_quantile

    x = np.random.default_rng(4).standard_normal(8)
    loo = np.array([np.delete(x, b).mean() for b in range(8)])
    assert jackknife_se(loo) == pytest.approx(mean_se(x)[1], rel=1e-12)
    with pytest.raises(ValueError, match="at least two groups"):
        jackknife_se([0.5])

    rng = np.random.default_rng(5)
    d, n, B = 32, 400, 8
    v = np.zeros(d)
    v[0] = 1.0

    def draw(m):
        U = 0.4 * v + rng.standard_normal((m, d)) / math.sqrt(d)
        return U / np.linalg.norm(U, axis=1, keepdims=True)
    mu = draw(200_000).mean(0)
    truth = float(mu @ mu)  # E[u_i . u_j], i != j, to ~3e-4 (5 % of a replicate's SE)
    half = t_quantile(B - 1)
    cover = 0
    for _ in range(400):
        sums = draw(n).reshape(B, n // B, d).sum(1)
        est = C.mean_similarity_from_sums(sums.sum(0), n)
        se = jackknife_se(C.mean_similarity_leave_one_out(sums, [n // B] * B))
        cover += abs(est - truth) <= half * se
    assert abs(cover / 400 - 0.95) < 3 * math.sqrt(0.05 * 0.95 / 400)


def test_significance_test_is_calibrated_under_the_null():
    """Under H0 (isotropic, independent vectors) p < 0.05 must occur ~5 % of the time:
    400 replicates give a binomial SE of 1.1 %, so we accept 5 % +- 3.3 %."""
    rng = np.random.default_rng(2)
    ps = np.array([C.pairwise_similarity(rng.standard_normal((60, 128))).log10_p
                   for _ in range(400)])
    rate = np.mean(ps < math.log10(0.05))
    assert abs(rate - 0.05) < 3 * math.sqrt(0.05 * 0.95 / 400)
    # ... and anisotropic but mean-zero vectors do not fool it.
    scales = np.r_[np.full(4, 10.0), np.ones(124)]
    ps = np.array([C.pairwise_similarity(rng.standard_normal((60, 128)) * scales).log10_p
                   for _ in range(400)])
    assert np.mean(ps < math.log10(0.05)) < 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


def test_intra_sequence_probe_matches_attn0_theory():
    cfg = simulate.block_config(d=512, n_layers=3, block="attn_only", attention="attn0_causal",
                                max_seq_len=16)
    xs = GaussianEmbeds(jax.random.key(0), 64, 16, 512, std=1.0)
    out = sweep(C.intra_sequence_probe(cfg), cfg, [0], xs, devices=jax.devices()[:1])
    got = out[0].mean(0)
    se = out[0].std(0) / 8
    for n in (1, 2, 3):
        assert abs(got[n] - attn0.attn0_intra_exact(16, n)) < 4 * se[n] + 2 / 512


def test_last_token_probe_shapes_and_consistency():
    cfg = get_preset("gpt2-rope-tiny")
    xs = GaussianEmbeds(jax.random.key(1), 6, 10, cfg.d_model, std=cfg.init_std)
    out = sweep(C.last_token_probe(cfg), cfg, [0, 1], xs, devices=jax.devices()[:1])
    assert out["hidden"].shape == (2, 6, cfg.n_layers + 1, cfg.d_model)
    assert out["normed"].shape == (2, 6, cfg.d_model) and out["top"].shape == (2, 6)
    np.testing.assert_allclose(out["hidden"][0, :, 0], xs[:][:, -1], rtol=1e-6)


def test_mlp_preactivation_probe_has_the_predicted_scales():
    # std(x W_up) = 0.02 sqrt(d) rms(x): rms 1 after LayerNorm, rms 0.02 on raw embeddings.
    cfg = get_preset("gpt2-rope-tiny").ablate(block="mlp_only")
    xs = GaussianEmbeds(jax.random.key(4), 64, 4, cfg.d_model, std=cfg.init_std)
    out = sweep(C.mlp_preactivation_probe(cfg), cfg, [0, 1, 2], xs, devices=jax.devices()[:1])
    want_norm, want_raw = 0.02 * math.sqrt(cfg.d_model), 0.02 * 0.02 * math.sqrt(cfg.d_model)
    # The dominant fluctuation is each input's squared norm, relative sd sqrt(2/d) = 18 % at
    # d = 64, averaged over 64 inputs x 3 seeds: ~1 % on the variance, ~0.7 % on the std; the
    # weights' column norms add less. 10 % is > 5 SE.
    assert out["norm"].std() == pytest.approx(want_norm, rel=0.1)
    assert out["nonorm"].std() == pytest.approx(want_raw, rel=0.1)
    with pytest.raises(ValueError, match="MLP-only"):
        C.mlp_preactivation_probe(get_preset("gpt2-rope-tiny"))
