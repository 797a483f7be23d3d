"""Attention-sink variants (Sec. 6.2.1 and an output gate), the sink metric and ``bornbiased sinks``.

Tiny presets (llama2-tiny: 2 layers, 4 heads, d = 64, context 128) keep every test fast."""

import dataclasses
import json
import shutil
import sysconfig
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

from bornbiased_jax import layers, model
from bornbiased_jax.cli import main
from bornbiased_jax.config_io import apply_overrides
from bornbiased_jax.presets import get_preset
from bornbiased_jax.defaults import SINK_LENGTHS
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_key
from bornbiased_jax.probes.sinks.metric import (check_eps, measure_sinks,
                                                sink_rates_over_lengths, sink_result,
                                                text_windows)

TINY = get_preset("llama2-tiny")
VARIANTS = {
    "baseline": {},
    "amplification": dict(attn_output_transform="sqrt_i"),
    "attenuation": dict(attn_output_transform="sqrt_i_over_T"),
    "headwise_rmsnorm": dict(attn_output_transform="headwise_rmsnorm"),
    "gate": dict(attn_output_gate=True, attn_output_gate_bias=True),
}


def variant(name, base=TINY, **more):
    return dataclasses.replace(base, **VARIANTS[name], **more)


def attn_block(cfg, key):
    """One attention sublayer's parameters and a function x (T, d) -> (output, sown o (T, H, K))."""
    p = layers.Attention(cfg).init(key, jnp.zeros((4, cfg.d_model)))["params"]

    def run(p, x_Td):
        out, st = layers.Attention(cfg).apply({"params": p}, x_Td, mutable=["intermediates"])
        return out, st["intermediates"]["head_outputs"][0]
    return p, run


# --- the variants at initialisation -----------------------------------------------------------
def test_amplification_flattens_per_position_variance_at_init():
    """Gaussian inputs, T = 32 (Figure 9): E|o_i|^2 falls as 1/i without the transform, and is
    the same at every i with sqrt(i). Per position: the mean over R = 256 replicates of the
    channel-averaged o_i^2; flat means within 4 standard errors of the mean over positions."""
    T, R = 32, 256
    cfg = variant("amplification", base=TINY.ablate(block="attn_only"))
    p, run = attn_block(cfg, jax.random.key(0))
    x_RTd = jax.random.normal(jax.random.key(1), (R, T, cfg.d_model))
    o_RTHK = jax.vmap(lambda x: run(p, x)[1])(x_RTd)
    m_RT = (np.asarray(o_RTHK, np.float64) ** 2).mean(axis=(2, 3))
    mean_T, se_T = m_RT.mean(0), m_RT.std(0, ddof=1) / np.sqrt(R)
    grand = mean_T.mean()
    assert np.all(np.abs(mean_T - grand) < 4 * np.sqrt(se_T**2 + (se_T**2).mean() / T)), (
        mean_T / grand)
    # The baseline's o_i (same weights) is the amplified one divided by sqrt(i), exactly; its
    # mean square therefore falls as 1/i (mean_T / i), which the transform flattened.
    _, run_base = attn_block(dataclasses.replace(cfg, attn_output_transform="none"),
                             jax.random.key(0))
    o_base = jax.vmap(lambda x: run_base(p, x)[1])(x_RTd[:4])
    np.testing.assert_allclose(o_RTHK[:4], o_base * np.sqrt(np.arange(1, T + 1))[:, None, None],
                               rtol=1e-5, atol=1e-7)


def test_attenuation_is_amplification_times_inverse_sqrt_max_context():
    """sqrt(i / T) with T = max_seq_len = 128 even on a 10-token sequence."""
    amp, att = variant("amplification"), variant("attenuation")
    p, run_amp = attn_block(amp, jax.random.key(2))
    _, run_att = attn_block(att, jax.random.key(2))
    x = jax.random.normal(jax.random.key(3), (10, TINY.d_model))
    (_, o_amp), (_, o_att) = run_amp(p, x), run_att(p, x)
    np.testing.assert_allclose(o_att, o_amp / np.sqrt(TINY.max_seq_len), rtol=1e-6, atol=0)


def test_positional_factors_are_not_rounded_to_bfloat16_first():
    """In bfloat16 the product o_i * sqrt(i) is rounded once, from float32: rounding sqrt(i)
    first would give neighbouring positions one factor (bfloat16 keeps 8 significant bits)."""
    T = TINY.max_seq_len
    o_QHK = jax.random.normal(jax.random.key(4), (T, 2, 8)).astype(jnp.bfloat16)
    i_Q = np.arange(1, T + 1, dtype=np.float32)
    for name, factor in [("amplification", np.sqrt(i_Q)),
                         ("attenuation", np.sqrt(i_Q / TINY.max_seq_len))]:
        got = layers.output_transform(variant(name), o_QHK)
        want = (o_QHK.astype(jnp.float32) * factor[:, None, None]).astype(jnp.bfloat16)
        assert got.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))


def test_headwise_rmsnorm_unit_rms_per_head_then_gamma():
    cfg = variant("headwise_rmsnorm")
    p, run = attn_block(cfg, jax.random.key(4))
    gamma = p["head_norm"]["scale"]
    assert gamma.shape == (cfg.n_heads, cfg.resolved_head_dim) and np.all(np.asarray(gamma) == 1.0)
    x = jax.random.normal(jax.random.key(5), (12, cfg.d_model))
    _, o_THK = run(p, x)
    # Unit RMS per position and head, up to the epsilon: RMS = sqrt(ms / (ms + eps)), where
    # ms is the mean square of the untransformed o_i (read from the baseline, same weights).
    _, run_raw = attn_block(dataclasses.replace(cfg, attn_output_transform="none"),
                            jax.random.key(4))
    _, raw = run_raw({k: v for k, v in p.items() if k != "head_norm"}, x)
    ms = (np.asarray(raw, np.float64) ** 2).mean(-1)
    rms = np.sqrt((np.asarray(o_THK, np.float64) ** 2).mean(-1))
    np.testing.assert_allclose(rms, np.sqrt(ms / (ms + cfg.norm_eps)), rtol=1e-6)
    assert np.all(np.abs(rms - 1) < 1e-3)  # ms >= 1e-3 here: eps moves it by < 0.1 %
    g = jax.random.uniform(jax.random.key(6), gamma.shape, minval=0.5, maxval=2.0)
    _, o_g = run({**p, "head_norm": {"scale": g}}, x)
    np.testing.assert_allclose(o_g, np.asarray(o_THK) * np.asarray(g)[None], rtol=1e-6)


def test_gate_init_and_zeroed_gate_is_exactly_half():
    cfg = variant("gate")
    p, run = attn_block(cfg, jax.random.key(7))
    W = np.asarray(p["gate_proj"]["kernel"])
    HK = cfg.n_heads * cfg.resolved_head_dim
    assert W.shape == (cfg.d_model, HK) and np.all(np.asarray(p["gate_proj"]["bias"]) == 0)
    # std of d HK = 4096 normal draws: relative SE 1 / sqrt(2 n) ~ 1.1 %; 5 SE.
    assert W.std() == pytest.approx(cfg.init_std, rel=5 / np.sqrt(2 * W.size))
    x = jax.random.normal(jax.random.key(8), (9, cfg.d_model))
    ungated_cfg = dataclasses.replace(cfg, attn_output_gate=False, attn_output_gate_bias=False)
    _, run_u = attn_block(ungated_cfg, jax.random.key(7))
    p_u = {k: v for k, v in p.items() if k != "gate_proj"}
    _, o_u = run_u(p_u, x)
    zero = {**p, "gate_proj": jax.tree.map(jnp.zeros_like, p["gate_proj"])}
    _, o_half = run(zero, x)
    np.testing.assert_array_equal(o_half, np.asarray(o_u) * 0.5)
    # With its initial W_g the gate is sigmoid(x W_g) per position, head and channel.
    _, o_g = run(p, x)
    gate = 1 / (1 + np.exp(-(np.asarray(x, np.float64) @ W)))
    np.testing.assert_allclose(o_g, np.asarray(o_u) * gate.reshape(o_u.shape), rtol=1e-5)


def test_gate_bias_and_gate_after_headwise_rmsnorm():
    """With a nonzero bias the gate is sigmoid(x W_g + b_g); combined with head-wise RMSNorm it
    multiplies the normalised, gamma-scaled o_i (the gate comes after the transform)."""
    cfg = dataclasses.replace(variant("gate"), attn_output_transform="headwise_rmsnorm")
    p, run = attn_block(cfg, jax.random.key(11))
    HK = cfg.n_heads * cfg.resolved_head_dim
    b = jax.random.normal(jax.random.key(12), (HK,))
    g = jax.random.uniform(jax.random.key(13), (cfg.n_heads, cfg.resolved_head_dim), minval=0.5,
                           maxval=2.0)
    p = {**p, "gate_proj": {**p["gate_proj"], "bias": b}, "head_norm": {"scale": g}}
    x = jax.random.normal(jax.random.key(14), (10, cfg.d_model))
    _, run_norm = attn_block(variant("headwise_rmsnorm"), jax.random.key(11))
    _, o_norm = run_norm({k: v for k, v in p.items() if k != "gate_proj"}, x)
    _, o = run(p, x)
    gate = 1 / (1 + np.exp(-(np.asarray(x, np.float64) @ np.asarray(p["gate_proj"]["kernel"])
                             + np.asarray(b))))
    np.testing.assert_allclose(o, np.asarray(o_norm) * gate.reshape(o.shape), rtol=1e-5)
    # the bias matters: without it the output differs
    _, o_nob = run({**p, "gate_proj": {**p["gate_proj"], "bias": jnp.zeros(HK)}}, x)
    assert np.abs(np.asarray(o_nob) - np.asarray(o)).max() > 1e-2


@pytest.mark.parametrize("name", [v for v in VARIANTS if v != "baseline"])
def test_variants_keep_the_baselines_initialisation(name):
    """Same seed, same shared parameters: a variant only adds its own (gamma, W_g, b_g), so the
    arms of the sink study differ in the variant alone, not in their initial weights."""
    key = seed_key(21)
    base = jax.tree_util.tree_flatten_with_path(model.init(TINY, key))[0]
    var = dict(jax.tree_util.tree_flatten_with_path(model.init(variant(name), key))[0])
    for path, leaf in base:
        np.testing.assert_array_equal(var.pop(path), leaf, err_msg=jax.tree_util.keystr(path))
    extra = {jax.tree_util.keystr(p).split("'attn']")[-1] for p in var}
    assert extra == {"amplification": set(), "attenuation": set(),
                     "headwise_rmsnorm": {"['head_norm']['scale']"},
                     "gate": {"['gate_proj']['kernel']", "['gate_proj']['bias']"}}[name]


# --- the sink metric on hand-built maps -------------------------------------------------------
def _maps(T):
    first = np.zeros((T, T)); first[:, 0] = 1.0
    uniform = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    diag = np.eye(T)
    return first, uniform, diag


def test_sink_metric_on_hand_built_heads():
    T = 16
    first, uniform, diag = _maps(T)
    A_LHTT = np.stack([np.stack([first, uniform, diag]), np.stack([first, first, diag])])
    r = sink_result(np.stack([A_LHTT] * 3), eps=0.25)
    harmonic = np.sum(1 / np.arange(1, T + 1))
    np.testing.assert_allclose(r.alpha_LH, [[1, harmonic / T, 1 / T], [1, 1, 1 / T]], rtol=1e-6)
    np.testing.assert_allclose(r.alpha_excl_SLH[0],
                               [[1, (harmonic - 1) / (T - 1), 0], [1, 1, 0]], rtol=1e-6, atol=1e-7)
    assert harmonic / T < 0.25  # H_16 / 16 = 0.211: the uniform head is not a sink at 0.25
    assert r.rate == pytest.approx(3 / 6) and r.rate_of_mean_alpha == pytest.approx(3 / 6)
    assert r.rate_se == 0.0
    assert sink_result(np.stack([A_LHTT]), eps=0.2).rate == pytest.approx(4 / 6)


def test_per_sequence_rate_differs_from_rate_of_mean_alpha():
    """A head that is a pure sink in one sequence and diagonal in the other: alpha^1 = 1 and
    1/T, mean (1 + 1/T) / 2 > 0.25, so thresholding after averaging counts it, per sequence
    only half the time."""
    T = 8
    first, _, diag = _maps(T)
    r = sink_result(np.stack([first, diag])[:, None, None], eps=0.25)
    assert r.rate == pytest.approx(0.5) and r.rate_of_mean_alpha == 1.0
    assert r.rate_se == pytest.approx(0.5)  # rates (1, 0): std 0.707 / sqrt 2


def test_alpha_k_for_every_key_on_hand_built_heads():
    """Gu et al.'s alpha_k = (1/(T - k + 1)) sum_{i >= k} A[i, k] (1-based k): a pure
    first-token head (1, 0, ...), a uniform causal head ((H_T - H_{k-1}) / (T - k + 1)), a
    diagonal head (1 / (T - k + 1)), and a head whose queries i >= 3 all attend to key 3
    (queries 1, 2 to themselves): alpha_1 = 1/T, alpha_2 = 1/(T - 1), alpha_3 = 1, 0 after."""
    T = 12
    first, uniform, diag = _maps(T)
    on3 = np.eye(T)
    on3[2:] = 0
    on3[2:, 2] = 1
    assert np.allclose(on3.sum(1), 1) and np.allclose(np.triu(on3, 1), 0)  # causal rows
    r = sink_result(np.stack([first, uniform, diag, on3])[None, None], eps=0.3, all_keys=True)
    got = r.alpha_keys_SLHT[0, 0]
    k = np.arange(1, T + 1)
    H = np.concatenate([[0], np.cumsum(1 / k)])  # H[m] = harmonic number H_m
    np.testing.assert_allclose(got[0], (k == 1).astype(float), atol=1e-7)
    np.testing.assert_allclose(got[1], (H[T] - H[k - 1]) / (T - k + 1), rtol=1e-6)
    np.testing.assert_allclose(got[2], 1 / (T - k + 1), rtol=1e-6)
    want = np.zeros(T)
    want[:3] = [1 / T, 1 / (T - 1), 1]
    np.testing.assert_allclose(got[3], want, rtol=1e-6, atol=1e-7)
    # alpha_1 is alpha^1, the quantity every sink rate thresholds
    np.testing.assert_allclose(got[:, 0], r.alpha_SLH[0, 0], rtol=1e-6)
    assert r.rate == pytest.approx(1 / 4)  # only the first-token head sinks on key 1
    assert np.shape(r.to_json()["alpha_k_LHT"]) == (1, 4, T)
    assert "alpha_k_LHT" not in sink_result(first[None, None, None]).to_json()


def test_gu_per_sample_threshold_differs_from_the_rate_of_mean_alpha():
    """At eps = 0.3, a head that is a first-token sink in 1 of 4 sequences and diagonal in the
    others: per sample it is a sink a quarter of the time (Gu et al.'s rate 0.25); its mean
    alpha_1 is (1 + 3/T) / 4 < 0.3, so thresholding the mean gives 0. A second head sinks in
    2 of 4: mean (2 + 2/T) / 4 > 0.3, rate of mean 1 for it, per sample 0.5."""
    T = 16
    first, _, diag = _maps(T)
    h0 = np.stack([first, diag, diag, diag])
    h1 = np.stack([first, first, diag, diag])
    r = sink_result(np.stack([h0, h1], axis=1)[:, None], eps=0.3, all_keys=True)
    np.testing.assert_allclose(r.rate_S, [1, 0.5, 0, 0])
    assert r.rate == pytest.approx((0.25 + 0.5) / 2)
    assert r.rate_of_mean_alpha == pytest.approx(0.5)
    np.testing.assert_allclose(r.alpha_keys_LHT[0, :, 0], [(1 + 3 / T) / 4, (2 + 2 / T) / 4])


def test_measure_sinks_all_keys_matches_the_maps():
    cfg, p = TINY, model.init(TINY, seed_key(1))
    tok = jax.random.randint(jax.random.key(4), (2, 12), 0, cfg.vocab_size)
    A = jnp.stack([model.forward(p, cfg, t, return_attention=True).attention for t in tok])
    r = measure_sinks(p, cfg, np.asarray(tok), all_keys=True)
    np.testing.assert_allclose(r.alpha_keys_SLHT, sink_result(A, all_keys=True).alpha_keys_SLHT,
                               rtol=1e-5)


def test_measure_sinks_uses_the_models_maps():
    cfg, p = TINY, model.init(TINY, seed_key(0))
    tok = jax.random.randint(jax.random.key(9), (3, 20), 0, cfg.vocab_size)
    A = jnp.stack([model.forward(p, cfg, t, return_attention=True).attention for t in tok])
    r, want = measure_sinks(p, cfg, np.asarray(tok), batch=2), sink_result(A)
    np.testing.assert_allclose(r.alpha_SLH, want.alpha_SLH, rtol=1e-5)
    # At init attention is nearly uniform: alpha^1 ~ H_T / T. To first order in the scores
    # s_ij = q_i.k_j / sqrt(K), A[i, 1] = (1 + s_i1 - mean_j s_ij) / i, so a head's relative
    # deviation is delta = sum_{i >= 2} w_i (s_i1 - mean_j s_ij), w_i = (1/i) / H_T. Over the
    # random weights (q, k of unit-RMS normed inputs through N(0, std^2) matrices) sd(s) =
    # d std^2 and, for near-orthogonal inputs, sd(delta) = d std^2 sqrt(sum w_i^2 (1 - 1/i)) =
    # 0.0045 here. The 3 sequences share the weights, so their mean has the same sd; the
    # tolerance is 4.4 sd (P(any of 8 heads beyond) ~ 1e-4; measured over 6 seeds: at most 1.8 sd).
    T = 20
    harmonic = np.sum(1 / np.arange(1, T + 1))
    i = np.arange(2, T + 1)
    sd_delta = cfg.d_model * cfg.init_std**2 * np.sqrt(np.sum((1 / i / harmonic)**2 * (1 - 1 / i)))
    assert 0.0044 < sd_delta < 0.0046
    np.testing.assert_allclose(r.alpha_LH, harmonic / T, rtol=4.4 * sd_delta)
    # With the keys zeroed every score is 0, attention is exactly uniform over the causal
    # positions and alpha^1 = H_T / T up to float32 rounding of T terms (T 2^-24 = 1.2e-6).
    p0 = jax.tree_util.tree_map_with_path(
        lambda path, x: jnp.zeros_like(x) if "k_proj" in jax.tree_util.keystr(path) else x, p)
    r0 = measure_sinks(p0, cfg, np.asarray(tok), batch=2)
    np.testing.assert_allclose(r0.alpha_LH, harmonic / T, rtol=2e-6)


def test_sink_rates_over_lengths_is_the_metric_on_windows_seeded_per_length():
    """Figure 12's loop (the CLI and experiments/figure12_table7.py): at each T, measure_sinks
    on the windows text_windows draws with seed ``seed + T``, reported as each finishes."""
    cfg, p = TINY, model.init(TINY, seed_key(0))
    ids = np.asarray(jax.random.randint(jax.random.key(3), (400,), 0, cfg.vocab_size))
    seen = []
    got = sink_rates_over_lengths(p, cfg, ids, [8, 16], 3, eps=0.1, seed=5,
                                  on_result=seen.append)
    assert [r.T for r in got] == [8, 16] and seen == got
    for r in got:
        want = measure_sinks(p, cfg, text_windows(ids, r.T, 3, seed=5 + r.T), 0.1)
        np.testing.assert_array_equal(r.alpha_SLH, want.alpha_SLH)  # the same program, inputs
        assert r.eps == 0.1 and r.n_seqs == 3


# --- forward returns the maps it used, for every variant --------------------------------------
@pytest.mark.parametrize("name", list(VARIANTS))
def test_returned_attention_is_what_each_variant_used(name):
    """Recompute each layer's output from the returned A, the layer's own V, the variant's
    transform and gate, and W_O (gamma randomised so that it takes part)."""
    cfg = variant(name, base=TINY.ablate(block="attn_only"))
    p = model.init(cfg, seed_key(3))
    if name == "headwise_rmsnorm":
        for i in range(cfg.n_layers):
            s = p[f"layers_{i}"]["attn"]["head_norm"]["scale"]
            p[f"layers_{i}"]["attn"]["head_norm"]["scale"] = jax.random.uniform(
                jax.random.key(i), s.shape, minval=0.5, maxval=2.0)
    T, H, K = 11, cfg.n_heads, cfg.resolved_head_dim
    tok = jax.random.randint(jax.random.key(4), (T,), 0, cfg.vocab_size)
    out = model.forward(p, cfg, tok, return_hidden=True, return_attention=True)
    for layer in range(cfg.n_layers):
        blk = p[f"layers_{layer}"]
        xn = layers.norm(blk["attn_norm"], cfg, out.hidden[layer])
        v_TNK = layers.linear(blk["attn"]["v_proj"], xn).reshape(T, cfg.resolved_n_kv_heads, K)
        o = jnp.einsum("hqt,thk->qhk", out.attention[layer],
                       jnp.repeat(v_TNK, H // cfg.resolved_n_kv_heads, axis=1))
        gamma = blk["attn"].get("head_norm", {}).get("scale")
        o = layers.output_transform(cfg, o, 0, gamma)
        if cfg.attn_output_gate:
            o = o * jax.nn.sigmoid(layers.linear(blk["attn"]["gate_proj"], xn)).reshape(T, H, K)
        want = layers.linear(blk["attn"]["o_proj"], o.reshape(T, H * K))
        np.testing.assert_allclose(out.hidden[layer + 1] - out.hidden[layer], want, rtol=1e-4,
                                   atol=1e-6)


# --- training and checkpoints -----------------------------------------------------------------
@pytest.mark.slow
def test_new_parameters_get_gradients_and_survive_orbax(tmp_path):
    cfg = dataclasses.replace(TINY, attn_output_transform="headwise_rmsnorm",
                              attn_output_gate=True, attn_output_gate_bias=True)
    p = model.init(cfg, seed_key(1))
    tok = jax.random.randint(jax.random.key(5), (2, 17), 0, cfg.vocab_size)

    def loss(p):
        logits = jax.vmap(lambda t: model.forward(p, cfg, t).logits)(tok[:, :-1])
        return -jnp.take_along_axis(jax.nn.log_softmax(logits), tok[:, 1:, None], -1).mean()
    g = jax.grad(loss)(p)
    for i in range(cfg.n_layers):
        a = g[f"layers_{i}"]["attn"]
        for leaf in (a["head_norm"]["scale"], a["gate_proj"]["kernel"], a["gate_proj"]["bias"]):
            assert np.all(np.isfinite(leaf)) and float(jnp.abs(leaf).max()) > 0
    ckpt = ocp.StandardCheckpointer()
    ckpt.save(tmp_path / "ckpt", p)
    ckpt.wait_until_finished()
    back = ckpt.restore(tmp_path / "ckpt", jax.tree.map(ocp.utils.to_shape_dtype_struct, p))
    assert jax.tree.structure(back) == jax.tree.structure(p)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(p)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_train_cli_model_set_two_steps(tmp_path):
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ["textwrap.py", "bisect.py", "heapq.py", "colorsys.py", "fnmatch.py"]:
        shutil.copy(stdlib / name, corpus / name)
    out = tmp_path / "run"
    args = ["train", "--preset", "llama2-tiny", "--corpus", str(corpus), "--out", str(out),
            "--steps", "2", "--warmup", "1", "--seq-len", "32", "--batch-size", "4",
            "--bpe-vocab", "256", "--eval-every", "2", "--eval-batches", "1", "--no-progress",
            "--model-set", "attn_output_transform=headwise_rmsnorm",
            "--model-set", "attn_output_gate=true"]
    assert main(args) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["train_config"]["model_set"] == ["attn_output_transform=headwise_rmsnorm",
                                                "attn_output_gate=true"]
    assert main(args + ["--resume"]) == 0  # the recorded settings match on resume
    bad = args[:args.index("--out")] + ["--out", str(tmp_path / "bad"), "--model-set",
                                         "attn_output_transform=sqrt_j"]
    assert main(bad) == 2 and not (tmp_path / "bad").exists()


# --- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("changes, match", [
    (dict(attn_output_transform="sqrt_j"), "allowed: .*'sqrt_i'.*'headwise_rmsnorm'"),
    (dict(attention="attn0_causal", attn_output_gate=True), "Attn0.*attn_output_gate"),
    (dict(block="mlp_only", attn_output_transform="sqrt_i"), "mlp_only.*no attention"),
    (dict(block="mlp_only", attn_output_gate=True), "mlp_only.*no attention"),
    (dict(attn_output_gate_bias=True), "needs attn_output_gate=True"),
])
def test_config_rejects_bad_variants(changes, match):
    with pytest.raises(UserError, match=match):
        dataclasses.replace(TINY, **changes)


def test_model_set_errors():
    with pytest.raises(UserError, match="unknown model setting 'attn_gate'.*attn_output_gate"):
        apply_overrides(TINY, ["attn_gate=true"])
    with pytest.raises(UserError, match="expected a value of type bool"):
        apply_overrides(TINY, ["attn_output_gate=maybe"])
    assert apply_overrides(TINY, ["attn_output_gate=true"]).attn_output_gate is True


@pytest.mark.parametrize("eps", [0, 1, -0.1, 1.5, float("nan")])
def test_eps_outside_open_unit_interval(eps):
    with pytest.raises(UserError, match=r"open interval \(0, 1\)"):
        check_eps(eps)


@pytest.mark.parametrize("extra, message", [
    (["--model-set", "attn_output_transform=sqrt_j"], "allowed:"),
    (["--eps", "1.0"], "open interval"),
    (["--seq-len", "32", "256"], "exceed the maximum context 128"),
    (["--model-set", "block=mlp_only"], "no softmax attention"),
])
def test_sinks_cli_bad_input(extra, message, capsys, tmp_path):
    assert main(["sinks", "preset:llama2-tiny@0", "--out", str(tmp_path)] + extra) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_settings_lengths_are_fitted_to_a_short_context(tmp_path, capsys):
    """Two of the paper setting's lengths (256 and 512) do not fit llama2-tiny's context of
    128: the command measures at the others and says so (lengths a user gives are refused
    instead, above)."""
    corpus = tmp_path / "text.py"
    shutil.copy(Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py", corpus)
    out = tmp_path / "out"
    assert main(["sinks", "preset:llama2-tiny@0", "--num-seqs", "2", "--corpus", str(corpus),
                 "--bpe-vocab", "300", "--out", str(out)]) == 0
    assert "lengths [256, 512] exceed the maximum context 128" in capsys.readouterr().out
    assert [r["T"] for r in json.loads((out / "sinks.json").read_text())["results"]] == [
        T for T in SINK_LENGTHS if T <= 128]


def test_sinks_cli_bad_model_spec(capsys):
    assert main(["sinks", "llama2-tiny"]) == 2
    assert "preset:NAME@SEED" in capsys.readouterr().err


def test_sinks_cli_writes_outputs(tmp_path, capsys):
    """Several lengths, each measured with its progress bar (on stderr)."""
    corpus = tmp_path / "text.py"
    shutil.copy(Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py", corpus)
    out = tmp_path / "out"
    assert main(["sinks", "preset:llama2-tiny@0", "--seq-len", "16", "32", "--num-seqs", "4",
                 "--corpus", str(corpus), "--bpe-vocab", "300", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "sinks T=16" in err and "sinks T=32" in err
    res = json.loads((out / "sinks.json").read_text())
    assert [r["T"] for r in res["results"]] == [16, 32]
    assert "byte-level BPE" in res["run"]["tokenizer"]
    assert all(np.shape(r["alpha_LH"]) == (2, 4) for r in res["results"])
    for f in ("sinks.md", "sinks_rate_vs_length.png", "sinks_heatmaps.png"):
        assert (out / f).stat().st_size > 0


def test_sinks_cli_gu_setting_and_all_keys(tmp_path, capsys):
    corpus = tmp_path / "text.py"
    shutil.copy(Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py", corpus)
    out = tmp_path / "out"
    assert main(["sinks", "preset:llama2-tiny@0", "--setting", "gu", "--all-keys",
                 "--num-seqs", "3", "--corpus", str(corpus), "--bpe-vocab", "300",
                 "--no-progress", "--out", str(out)]) == 0
    assert "sinks T=" not in capsys.readouterr().err  # --no-progress: no bars
    res = json.loads((out / "sinks.json").read_text())
    assert res["run"]["setting"] == "gu" and res["run"]["bos_prepended"] is False
    [r] = res["results"]
    assert (r["T"], r["eps"], r["n_seqs"]) == (64, 0.3, 3)
    assert np.shape(r["alpha_k_LHT"]) == (2, 4, 64)
    np.testing.assert_allclose(np.asarray(r["alpha_k_LHT"])[..., 0], r["alpha_LH"], atol=2e-6)
    assert "Setting: gu" in (out / "sinks.md").read_text()


def test_weight_decay_spares_the_head_norm_scale():
    """AdamW decays matrices, not norm scales; gamma (H, K) is a matrix but a scale."""
    from bornbiased_jax.training.config import TrainConfig
    from bornbiased_jax.training.optimizer import make_optimizer

    cfg = variant("headwise_rmsnorm")
    p = model.init(cfg, seed_key(2))
    opt = make_optimizer(TrainConfig(preset="llama2-tiny", steps=10, warmup=1))
    state, zero = opt.init(p), jax.tree.map(jnp.zeros_like, p)
    for _ in range(2):  # lr is 0 at step 0 (warmup), the peak at step 1
        upd, state = opt.update(zero, state, p)
    attn = upd["layers_0"]["attn"]
    assert np.all(np.asarray(attn["head_norm"]["scale"]) == 0)
    assert float(jnp.abs(attn["q_proj"]["kernel"]).max()) > 0  # decayed


def test_sink_windows_sources_and_their_errors(tmp_path):
    """probes/sinks/windows.py: generated Bigram-Backcopy windows (<s> first, the task's
    vocabulary checked against the model's), text windows with or without a BOS token, the
    run's own BOS setting by default, and the refused combinations."""
    from bornbiased_jax import data
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.probes.sinks import windows as W
    from bornbiased_jax.probes.sinks.metric import bos_windows

    src = tmp_path / "src.txt"
    src.write_text("the quick brown fox jumps over the lazy dog. " * 40)
    spec = f"bbm:{src}"
    cfg = get_preset("llama2-tiny")
    w = W.for_model(cfg, None, num_seqs=5, seed=3, corpus=[spec])
    assert w.ids is None and w.bos and w.corpus == [spec] and "bbm" in w.extra
    win = w.make(16)
    assert win.shape == (5, 16) and (win[:, 0] == w.bos_id).all()
    np.testing.assert_array_equal(win, w.make(16))  # the same draws for a length
    for bad in (dict(bos=False), dict(bos_token="<s>"), dict(tokenizer="t.json")):
        with pytest.raises(UserError, match="Bigram-Backcopy windows always begin with <s>"):
            W.for_model(cfg, None, num_seqs=5, seed=3, corpus=[spec], **bad)
    small = dataclasses.replace(cfg, vocab_size=8)
    with pytest.raises(UserError, match="more than the model's vocabulary 8"):
        W.for_model(small, None, num_seqs=5, seed=3, corpus=[spec])

    docs = [f"def f{i}(x):\n    return x + {i}\n" for i in range(200)]
    tok = data.train_tokenizer(docs, 300, bos=True)
    plain, with_bos = W.text(docs, tok, False), W.text(docs, tok, True)
    assert plain.bos_id is None and "no BOS token" in plain.note
    assert with_bos.bos_id == tok.token_to_id(data.BOS) and "BOS token (id" in with_bos.note
    windows = bos_windows(with_bos.ids, 12, 4, seed=0, bos=with_bos.bos_id)
    assert (windows[:, 0] == with_bos.bos_id).all() and windows.shape == (4, 12)
    with pytest.raises(UserError, match="names the BOS token to prepend; add --bos"):
        W.for_model(cfg, None, num_seqs=5, seed=0, corpus=[str(src)], bos=False,
                    bos_token="<s>")
    # a run trained with --bos is measured with its BOS by default, and the note says why
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"train_config": {"bos": True}, "corpus": []}))
    tok.save(str(run / "tokenizer.json"))
    w = W.for_model(cfg, run, num_seqs=5, seed=0, corpus=[str(src)])
    assert w.bos and w.note.endswith("(the run's setting)") and "own tokenizer" in w.note
    w = W.for_model(cfg, run, num_seqs=5, seed=0, corpus=[str(src)], bos=False)
    assert not w.bos and w.bos_id is None
