"""The lineage verdict across shapes: descendants whose MLP width, depth or vocabulary changed,
with BASE an HF folder carrying its tokenizer, found and localised; the statistic unchanged by
renamings that now include a permuted vocabulary (tokenizer remapped) and dead padding; dead
units never counted as agreeing; the rectangular null exact on initialisations; unrelated
models padded the same way not flagged."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import sysconfig
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats

from bornbiased_jax import model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits import derivatives
from bornbiased_jax.fingerprint.methods import matched as M
from bornbiased_jax.fingerprint.edits import shape_edits as S
from bornbiased_jax.fingerprint.edits import vocab_edits as VE
from bornbiased_jax.fingerprint.methods import unit_matching as U
from bornbiased_jax.fingerprint.runner.compare import Settings, compare_many
from bornbiased_jax.fingerprint.runner.registry import verdict_order
from bornbiased_jax.fingerprint.runner.tables import deciding_test
from bornbiased_jax.keys import seed_key

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CFG = dataclasses.replace(get_preset("llama2-tiny"), shared_embedding=False)
TOKENS = np.asarray(jax.random.randint(jax.random.key(5), (32, 20), 0, CFG.vocab_size))
ANY_PAIR = ("permutation", "matched")  # the verdict when BASE's initialisation is unknown


def _init(seed: int, cfg=CFG):
    return model.init(cfg, seed_key(seed))


def _pre(params, cfg=CFG, tokens=TOKENS):
    return M.preactivations(params, cfg, tokens)


# ----------------------------------------------------------------------- the null's law
def test_partial_rencontres_law_against_enumeration_and_its_moments():
    import itertools

    for n, m in ((5, 3), (6, 6), (7, 2), (4, 0)):
        counts = np.zeros(m + 1)
        for s in itertools.permutations(range(n)):
            counts[sum(s[i] == i for i in range(m))] += 1
        for k in range(m + 2):
            want = counts[k:].sum() / counts.sum()
            got = math.exp(U.partial_rencontres_log_sf(n, m, k))
            assert got == pytest.approx(want, abs=1e-12), (n, m, k)
    for n, m in ((176, 150), (1536, 1200)):  # mean m / n: E K = sum_j P(K >= j)
        mean = sum(math.exp(U.partial_rencontres_log_sf(n, m, k)) for k in range(1, m + 1))
        assert mean == pytest.approx(m / n, rel=1e-9)
    assert U.partial_rencontres_log_sf(176, 176, 3) == M.rencontres_log_sf(176, 3)
    with pytest.raises(UserError, match="0 <= m <= n"):
        U.partial_rencontres_log_sf(5, 6, 1)


@pytest.mark.slow
def test_rectangular_null_is_exact_on_initialisations():
    """BASE an initialisation of width 176, SUSPECT one of width 208 (another preset's init):
    16 disjoint pairs, 2 layers each. Given the pair sizes (n = 176, m_a), K follows the
    partial rencontres law: sum of K minus sum of m_a / n is within 4 standard errors of 0, and
    the Fisher p-values pass the one-sided KS test of super-uniformity at level 0.001 (the
    counts are small and discrete; see tests/test_matched.py)."""
    wide = dataclasses.replace(CFG, d_ff=208)
    ks, means, variances, ps = [], [], [], []
    for a in range(16):
        pre_a, pre_b = _pre(_init(a)), _pre(_init(100 + a, wide), wide)
        lm = U.match_layers(pre_a, pre_b, direction="a")
        for l in range(CFG.n_layers):
            c = lm.counts[(l, int(lm.to_b[l]))]
            assert (c.n_a, c.n_b) == (176, 208)
            ks.append(c.K)
            pmf = np.exp(U._log_pmf(c.n_a, c.m_a))
            j = np.arange(len(pmf))
            means.append(float(j @ pmf))
            variances.append(float(j ** 2 @ pmf) - means[-1] ** 2)
        ps.append(math.exp(lm.log_p))
    z = (sum(ks) - sum(means)) / math.sqrt(sum(variances))
    assert abs(z) < 4, (ks, means)
    assert stats.kstest(ps, "uniform", alternative="greater").pvalue > 1e-3, ps


# --------------------------------------------------------------------------- dead units
def test_dead_units_are_never_counted_as_agreeing():
    """The false positive of a matched test that kept them: two unrelated models, each given
    16 constant MLP units (zero gate, up and down rows), whose zero standardised columns tie
    with every partner. Dead units are matched to none, K counts only live ones, and the two
    stay unrelated; the dead units are reported."""
    a = S.pad_mlp(_init(0), CFG, 16, jax.random.key(0), dead=True)
    b = S.pad_mlp(_init(1), CFG, 16, jax.random.key(1), dead=True)
    pre_a, pre_b = _pre(a[1], a[0]), _pre(b[1], b[0])
    for l in range(CFG.n_layers):
        c = U.count_pair(pre_a[l], pre_b[l])
        assert c.dead_a == c.dead_b == 16 and c.K < 16
        g = U.partners(pre_a[l][0], pre_b[l][0])
        assert np.all(g[CFG.d_ff:] == -1) and not np.isin(np.arange(CFG.d_ff, CFG.d_ff + 16),
                                                          g).any()
    r = M.matched_test(pre_a, pre_b, exact=True, init="base")
    assert not r.same_lineage and r.details["dead_units"] == {"base": 32, "suspect": 32}


def _partners_reference(za, zb, la, lb):
    """Reciprocal best partners as their definition reads, in plain numpy (float64 |r|):
    unique best both ways, dead units no one's partner."""
    c = np.abs(za.T.astype(np.float64) @ zb.astype(np.float64))
    c[~la, :] = -1
    c[:, ~lb] = -1
    out = np.full(za.shape[1], -1)
    for i in np.flatnonzero(la):
        j = int(np.argmax(c[i]))
        if lb[j] and np.sum(c[i] == c[i, j]) == 1 and np.sum(c[:, j] == c[i, j]) == 1 \
                and int(np.argmax(c[:, j])) == i:
            out[i] = j
    return out


def test_partners_and_screen_agree_with_plain_references_ties_and_dead_units_included():
    """The jitted matchings (separate programs, arg-maxes and tie checks as max and min
    reductions, two threads) against the definitions in numpy: reciprocal best partners with
    ties and dead units, and the screen's mean margin of the best |r| over the second (a tie
    for the best leaves none). Views on a coarse grid make exact ties common."""
    rng = np.random.default_rng(0)
    for R, FA, FB in ((40, 30, 45), (64, 50, 50)):
        za = rng.integers(-2, 3, (R, FA)).astype(np.float32)
        zb = rng.integers(-2, 3, (R, FB)).astype(np.float32)
        zb[:, :6] = za[:, :6]  # shared units: matched
        za[:, 7] = za[:, 8]  # two units of A alike, and a unit of B equal to both: a tie
        zb[:, 6] = za[:, 7]
        za[:, 3] = 0  # dead units
        zb[:, 10] = 0
        la, lb = U.live(za), U.live(zb)
        want = _partners_reference(za, zb, la, lb)
        np.testing.assert_array_equal(U.partners(za, zb), want)
        assert np.all(want[[0, 1, 2, 4, 5]] == [0, 1, 2, 4, 5]) and want[3] == -1
        assert want[7] == want[8] == -1 and 6 not in want
        # the screen: B's layers of one width (the jitted path) and of two widths (numpy)
        views_b = [zb, zb[:, ::-1].copy(), zb[:, :20]]
        S_mixed = U.screen([za], views_b)
        S_one = U.screen([za], views_b[:2])
        for j, v in enumerate(views_b):
            c = np.abs(za.T.astype(np.float64) @ v) / R
            top = np.sort(c, axis=1)[:, -2:]
            want_j = (top[:, 1] - top[:, 0]).mean()
            assert S_mixed[0, j] == pytest.approx(want_j, rel=1e-5)
            if j < 2:
                assert S_one[0, j] == pytest.approx(want_j, rel=1e-5)


def test_views_with_nan_are_refused():
    """The matchings rank finite correlations: a NaN or infinite view is refused (XLA's CPU
    max would drop a NaN along one axis and not the other)."""
    z = np.random.default_rng(0).standard_normal((40, 12)).astype(np.float32)
    bad = z.copy()
    bad[3, 4] = np.nan
    for a, b in ((bad, z), (z, bad)):
        with pytest.raises(UserError, match="NaN or infinite"):
            U.partners(a, b)


def test_a_model_whose_every_unit_is_dead_is_refused():
    params = jax.tree.map(np.array, _init(0))
    for l in range(CFG.n_layers):
        for name in ("gate_proj", "up_proj"):
            params[f"layers_{l}"]["mlp"][name]["kernel"][:] = 0
    with pytest.raises(UserError, match="every MLP unit of SUSPECT is dead"):
        M.matched_test(_pre(_init(0)), _pre(params))


# ------------------------------------------------------------------- renamings and copies
def _child(params, seed: int = 1, scale: float = 1.2):
    """A stand-in for a fine-tune: every weight moved by ``scale`` x its own std of noise."""
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda a: np.asarray(a) + scale * np.asarray(a).std()
                        * rng.standard_normal(np.shape(a)).astype(np.float32), params)


def test_statistic_unchanged_by_dead_padding_and_found_through_live_padding():
    base = _init(0)
    child = _child(base)
    pre_a = _pre(base)
    k0 = [r["K"] for r in U.match_layers(pre_a, _pre(child)).suspect_rows()]
    assert 0.5 * CFG.d_ff < min(k0) < CFG.d_ff  # a far fine-tune keeps most units
    cfg_d, dead = S.pad_mlp(child, CFG, 16, jax.random.key(2), dead=True)
    assert [r["K"] for r in U.match_layers(pre_a, _pre(dead, cfg_d)).suspect_rows()] == k0
    cfg_l, live = S.pad_mlp(child, CFG, 16, jax.random.key(2))
    k_live = [r["K"] for r in U.match_layers(pre_a, _pre(live, cfg_l)).suspect_rows()]
    # 16 random units can take a partner only where they beat the child's own unit
    assert all(k0[l] - 16 <= k_live[l] <= k0[l] for l in range(CFG.n_layers)), (k0, k_live)


# ------------------------------------------------------------- a trained BASE as HF folder
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two llama2-tiny models trained 120 steps on ~100 KB of Python source, other seeds and
    other data orders (unrelated), each written as an HF folder with the run's tokenizer."""
    from bornbiased_jax.hf import save_hf
    from bornbiased_jax.sources import load_source
    from bornbiased_jax.training import loop
    from bornbiased_jax.training.config import TrainConfig

    root = tmp_path_factory.mktemp("shapes")
    corpus = root / "corpus"
    corpus.mkdir()
    for name in ["json/decoder.py", "json/encoder.py", "textwrap.py", "heapq.py", "fnmatch.py"]:
        shutil.copy(STDLIB / name, corpus / name.replace("/", "_"))
    out = {}
    for seed in (0, 1):
        tc = TrainConfig(preset="llama2-tiny", seed=seed, data_seed=seed, seq_len=32,
                         batch_size=8, vocab_size=512, steps=120, warmup=10, lr=3e-3,
                         min_lr=3e-4, eval_every=60, eval_batches=2, log_every=20,
                         save_every=120)
        run = loop.ensure(tc, [str(corpus)], root / f"run{seed}")
        m = load_source(str(run))
        tok = json.loads((run / "tokenizer.json").read_text())
        out[seed] = (m.cfg, jax.tree.map(np.asarray, m.params), tok)
    return root, out


def _hf(root: Path, name: str, cfg, params, tok: dict, old_of_new=None) -> str:
    from bornbiased_jax.hf import save_hf

    folder = save_hf(cfg, params, root / name, overwrite=True)
    data = tok if old_of_new is None else VE.remap_tokenizer_json(tok, old_of_new)
    (Path(folder) / "tokenizer.json").write_text(json.dumps(data))
    return str(folder)


def _verdicts(base: str, suspects: dict[str, str], **kw) -> dict:
    from bornbiased_jax.sources import load_source

    names = list(suspects)
    outs = compare_many(load_source(base), [lambda n=n: load_source(suspects[n]) for n in names],
                        Settings(tests=ANY_PAIR, n=96, seq_len=24, **kw))
    return dict(zip(names, outs))


@pytest.mark.slow
def test_shape_changed_copies_of_a_trained_model_are_found_and_localised(trained):
    root, models = trained
    cfg, base, tok = models[0]
    key = jax.random.key(7)
    base_dir = _hf(root, "base", cfg, base, tok)
    suspects = {}
    for name in ("layer-shift-rotated", "pad-rotated", "prune-width-25", "vocab-extend",
                 "depth-upscale", "vocab-permute", "drop-layer", "insert-identity"):
        d = derivatives.SHAPES[name]
        cfg2, p2 = derivatives.derive(name, base, cfg, key)
        suspects[name] = _hf(root, name, cfg2, jax.tree.map(np.asarray, p2), tok,
                             d.vocab_origin(cfg, key) if d.vocab is not None else None)
    outs = _verdicts(base_dir, suspects)
    for name, out in outs.items():
        res = out["results"]
        assert deciding_test(res, verdict_order()) == "any_pair"
        assert res["any_pair"].same_lineage, (name, res["matched"].details)
        d = derivatives.SHAPES[name]
        origin = d.layer_origin(cfg)
        chosen = res["matched"].details["base_layer_of"]
        for l, o in enumerate(origin):  # every copied layer is attributed to its origin
            if o is not None:
                assert chosen[l] == o, (name, chosen, origin)
    for name, extra in (("vocab-extend", 64), ("vocab-permute", 0)):  # by string, said so
        v = outs[name]["vocab"]
        assert v["by"] == "strings" and v["shared"] == cfg.vocab_size
        assert (v["identity"], v["suspect_only"]) == (name == "vocab-extend", extra)
        assert outs[name]["notes"] and "aligned by token string" in outs[name]["notes"][0]
    # a permuted vocabulary with its tokenizer is a renaming: the statistic does not move
    plain = _verdicts(base_dir, {"copy": _hf(root, "copy", cfg, base, tok)})["copy"]
    assert (outs["vocab-permute"]["results"]["matched"].details["K_per_layer"]
            == plain["results"]["matched"].details["K_per_layer"])


@pytest.mark.slow
def test_unrelated_models_padded_the_same_way_are_not_flagged(trained):
    root, models = trained
    (cfg, a, tok_a), (_, b, tok_b) = models[0], models[1]
    ca, pa = S.pad_mlp(a, cfg, 16, jax.random.key(0), dead=True)
    cb, pb = S.pad_mlp(b, cfg, 16, jax.random.key(0), dead=True)
    base_dir = _hf(root, "pad-a", ca, jax.tree.map(np.asarray, pa), tok_a)
    out = _verdicts(base_dir, {"pad-b": _hf(root, "pad-b", cb, jax.tree.map(np.asarray, pb),
                                            tok_b)})["pad-b"]
    r = out["results"]
    assert not r["any_pair"].same_lineage, r["matched"].details
    assert r["matched"].details["dead_units"]["suspect"] == 16 * cfg.n_layers


def test_tokenizers_sharing_too_few_strings_are_refused():
    from bornbiased_jax.fingerprint.runner import vocab

    a = [f"a{i}" for i in range(100)]
    b = [f"a{i}" for i in range(40)] + [f"b{i}" for i in range(60)]
    with pytest.raises(UserError, match="share 40 token strings, 40% of the smaller"):
        vocab.align_strings(a, b, 100, 100, "SUSPECT")
    ok = vocab.align_strings(a, a[::-1], 100, 100)
    assert ok.by == "strings" and not ok.identity and ok.shared == 100
    assert np.array_equal(ok.suspect_ids, 99 - ok.base_ids)
    same = vocab.align_strings(None, a, 100, 120)  # no tokenizer on one side: ids
    assert same.by == "ids" and same.shared == 100 and same.suspect_only == 20


# ------------------------------------------------------------------------------ bad input
def _cli(args, tmp_path):
    import subprocess
    import sys

    out = tmp_path / "fp"
    r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", "fingerprint", *args,
                        "--num-seqs", "8", "--seq-len", "12", "--no-progress", "--out", str(out)],
                       capture_output=True, text=True)
    return r, out


def _word_tok(strings):
    return json.loads(VE.word_level_tokenizer(strings).to_str())


def test_bad_pairs_are_refused_with_one_clear_error_and_nothing_written(tmp_path):
    """Another architecture family, tokenizers that share too few strings, a model whose every
    MLP unit is dead: one error naming what and why, a non-zero exit, no --out."""
    r, out = _cli(["preset:llama2-tiny@0", "preset:gpt2-rope-tiny@1"], tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr and not out.exists()
    assert "different architecture families" in r.stderr and "norm" in r.stderr

    strings = [f"w{i}" for i in range(CFG.vocab_size)]
    other = [f"w{i}" for i in range(100)] + [f"x{i}" for i in range(CFG.vocab_size - 100)]
    a = _hf(tmp_path, "a", CFG, jax.tree.map(np.asarray, _init(0)), _word_tok(strings))
    b = _hf(tmp_path, "b", CFG, jax.tree.map(np.asarray, _init(1)), _word_tok(other))
    r, out = _cli([a, b], tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr and not out.exists()
    assert "share 100 token strings" in r.stderr and "other tokenizers" in r.stderr

    dead = jax.tree.map(np.array, _init(2))
    for l in range(CFG.n_layers):
        for name in ("gate_proj", "up_proj"):
            dead[f"layers_{l}"]["mlp"][name]["kernel"][:] = 0
    c = _hf(tmp_path, "c", CFG, dead, _word_tok(strings))
    r, out = _cli([a, c], tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr and not out.exists()
    assert "every MLP unit of SUSPECT is dead" in r.stderr
