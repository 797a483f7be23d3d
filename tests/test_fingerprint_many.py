"""``bornbiased fingerprint BASE SUSPECT [SUSPECT ...]``: the base's features once, one pair
folder per suspect and a summary; a folder of model folders as suspects; every suspect checked
before any work (a missing one, another width, a missing checkpoint: one clear error, exit 2,
nothing written)."""

import json

import pytest

from bornbiased_jax.defaults import MATCHED_SEQS
from bornbiased_jax.cli import main

FAST = ["--num-seqs", "40", "--seq-len", "8", "--no-progress"]


@pytest.mark.slow
def test_several_suspects_cost_one_base_pass(tmp_path, capsys, monkeypatch):
    import bornbiased_jax.fingerprint.runner.compare as compare
    import bornbiased_jax.fingerprint.runner.features as features
    import bornbiased_jax.fingerprint.methods.matched as matched

    passes = []  # (what, sequences) of every forward pass through the sweep engine

    def counting(module, what):
        real = module.run_probe

        def run_probe(probe, cfg, params, inputs, **k):
            passes.append((what, len(inputs)))
            return real(probe, cfg, params, inputs, **k)
        monkeypatch.setattr(module, "run_probe", run_probe)

    counting(matched, "views")
    counting(features, "features")

    null_passes = []
    real_inits = compare.init_features

    def counting_inits(cfg, seeds, *a, **k):
        null_passes.append(len(seeds))
        return real_inits(cfg, seeds, *a, **k)

    monkeypatch.setattr(compare, "init_features", counting_inits)
    out = tmp_path / "fp"
    suspects = ["preset:llama2-tiny@1", "preset:llama2-tiny@2", "preset:llama2-tiny@3"]
    assert main(["fingerprint", "preset:llama2-tiny@1", *suspects, *FAST, "--test", "all",
                 "--null-models", "99", "--out", str(out)]) == 0
    # the base once, each suspect once: one pass over each model's 40 sequences, the first
    # MATCHED_SEQS giving both the features and the MLP views, the rest the features
    k = MATCHED_SEQS
    assert passes == [("views", k), ("features", 40 - k)] * (1 + len(suspects))
    assert null_passes == [99]  # the K null inits once, for every suspect and test
    summary = json.loads((out / "summary.json").read_text())
    assert [r["suspect"] for r in summary["suspects"]] == [s[len("preset:"):] for s in suspects]
    for test in ("aligned", "permutation", "matched_init"):
        assert [r["related"][test] for r in summary["suspects"]] == [True, False, False]
    assert {r["verdict_test"] for r in summary["suspects"]} == {"matched_init"}
    for row in summary["suspects"]:
        pair = json.loads((out / row["folder"] / "fingerprint.json").read_text())
        assert pair["verdict"] == row["verdict"] and pair["run"]["suspect"] == row["suspect"]
    md = (out / "summary.md").read_text()
    assert "| 0.01 | 0.01 | 1.00e-04 | 0 (underflow) | 0 (underflow) | 0.00174 | 0 (underflow) " \
           "| related (matched_init) |" in md  # calibrated, aligned (K = 99), permutation,
    # matched, matched_init, attention (every head doubly matched: 1/4!^2), any_pair
    assert "| llama2-tiny@2 |" in md and "no evidence (matched_init)" in md
    assert md in capsys.readouterr().out


@pytest.fixture(scope="module")
def hf_zoo(tmp_path_factory):
    """A folder holding two HF model folders (a copy of the base and an unrelated model)."""
    import jax

    from bornbiased_jax import model
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.hf import save_hf

    import dataclasses

    root = tmp_path_factory.mktemp("zoo")
    # every parameter seed-dependent, the embedding too (presets share it across seeds)
    cfg = dataclasses.replace(get_preset("llama2-tiny"), shared_embedding=False)
    for name, seed in (("base", 0), ("zoo/a-copy", 0), ("zoo/b-other", 7)):
        save_hf(cfg, jax.device_get(model.init(cfg, jax.random.key(seed))), root / name)
    big = dataclasses.replace(cfg, vocab_size=600)  # same width, another vocabulary
    save_hf(big, jax.device_get(model.init(big, jax.random.key(1))), root / "other-vocab")
    return root


def test_a_folder_of_models_is_a_list_of_suspects(hf_zoo, tmp_path):
    out = tmp_path / "fp"
    assert main(["fingerprint", str(hf_zoo / "base"), str(hf_zoo / "zoo"), *FAST,
                 "--out", str(out)]) == 0
    rows = json.loads((out / "summary.json").read_text())["suspects"]
    assert [(r["suspect"], r["related"]["permutation"]) for r in rows] == [
        ("a-copy", True), ("b-other", False)]
    assert sorted(p.name for p in (out / "pairs").iterdir()) == ["00-a-copy", "01-b-other"]


@pytest.mark.parametrize("bad, match", [
    ("missing", "suspect '.*missing': unknown model source"),
    ("preset:llama2-cpu@1", r"suspect 'preset:llama2-cpu@1'.*residual widths \(d_model\) differ"),
    ("preset:qwen2-tiny@1", r"suspect 'preset:qwen2-tiny@1'.*different architecture families"),
    ("empty", "holds no model"),
    ("preset:llama2-tiny@x", "bad seed 'x'"),
])
def test_one_bad_suspect_among_several_stops_everything_before_work(tmp_path, capsys,
                                                                     monkeypatch, hf_zoo, bad,
                                                                     match):
    import re

    from bornbiased_jax import sources

    (tmp_path / "empty").mkdir()
    bad = (str(tmp_path / bad) if bad in ("missing", "empty") else
           str(hf_zoo / bad) if bad == "other-vocab" else bad)
    loaded = []
    real = sources.load_source
    def spy(*a, **k):
        m = real(*a, **k)
        loaded.append(a)  # a model that loaded (a failed load raises first)
        return m

    monkeypatch.setattr(sources, "load_source", spy)
    out = tmp_path / "fp"
    rc = main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@2", bad,
               "preset:llama2-tiny@3", *FAST, "--out", str(out)])
    assert rc == 2 and re.search(match, capsys.readouterr().err)
    assert not out.exists() and not loaded  # refused before any model was loaded


def test_aligned_statistic_on_logits_is_refused_before_work(tmp_path, capsys):
    out = tmp_path / "fp"
    rc = main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@2", "--test",
               "calibrated", "--calibrated-statistic", "spearman_aligned", "--feature", "logits",
               *FAST, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "'spearman_aligned'" in err and "--feature normed or prenorm" in err
    assert not out.exists()


def test_aligned_statistic_finds_a_renamed_init(tmp_path):
    """A renamed copy of an initialisation (written as an HF folder) against that
    initialisation: the aligned statistic gives the smallest exact p of its K null models."""
    import jax

    from bornbiased_jax import hf
    from bornbiased_jax.fingerprint.edits.obfuscation import obfuscate
    from bornbiased_jax.sources import load_source

    m = load_source("preset:llama2-tiny@1", shared_embedding=False)
    renamed = obfuscate(m.params, m.cfg, jax.random.key(0))
    hf.save_hf(m.cfg, renamed, tmp_path / "renamed")
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", str(tmp_path / "renamed"), "--test",
                 "calibrated", "--calibrated-statistic", "spearman_aligned", "--input", "tokens",
                 "--null-models", "19", *FAST, "--out", str(out)]) == 0
    rec = json.loads((out / "fingerprint.json").read_text())
    text = json.dumps(rec)
    assert '"exact": 0.05' in text


def test_in_bfloat16_the_aligned_test_reads_the_initialisation_in_float32(tmp_path, capsys,
                                                                          monkeypatch):
    """The null initialisations are built in float32, so BASE's initialisation must be too
    (else the two are not exchangeable and the p-value is not exact): with --dtype bfloat16
    the models run in bfloat16 and BASE's initialisation is read again in float32; the plan
    counts the null initialisations' work."""
    import jax.numpy as jnp

    from bornbiased_jax import sources

    loads = []
    real = sources.load_source

    def spy(src, **k):  # the command hands on each source parsed once (sources.Source)
        assert isinstance(src, sources.Source)
        loads.append((src.spec, k.get("dtype")))
        return real(src, **k)

    monkeypatch.setattr(sources, "load_source", spy)
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@1", "--dtype",
                 "bfloat16", "--test", "aligned", "--null-models", "99", *FAST,
                 "--out", str(out)]) == 0
    assert loads == [("preset:llama2-tiny@1", jnp.bfloat16), ("preset:llama2-tiny@1",
                                                               jnp.float32),
                     ("preset:llama2-tiny@1", jnp.bfloat16)]  # base, its init, the suspect
    assert "(with 99 null initialisations in float32)" in capsys.readouterr().out
    res = json.loads((out / "fingerprint.json").read_text())["results"]
    assert res["aligned"]["p_values"]["exact"] == 1 / 100


@pytest.mark.slow
def test_a_stopped_run_resumes_its_missing_pairs(tmp_path, capsys):
    """The same command again keeps the pairs a stopped run finished (same BASE, suspect,
    settings, dtype) and computes only the rest, with the uninterrupted run's summary;
    --fresh, or another setting, recomputes every pair."""
    import shutil

    out = tmp_path / "fp"
    cmd = ["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@1",
           "preset:llama2-tiny@2", "preset:llama2-tiny@3", "--test", "permutation", *FAST,
           "--out", str(out)]
    assert main(cmd) == 0
    full = json.loads((out / "summary.json").read_text())["suspects"]
    shutil.rmtree(out / full[1]["folder"])  # as if stopped after the first pair
    shutil.rmtree(out / full[2]["folder"])
    (out / "summary.json").unlink()
    capsys.readouterr()
    assert main(cmd) == 0
    printed = capsys.readouterr().out
    assert "resuming: 1 of 3 pairs" in printed
    assert printed.count(" vs base ") == 2  # only the two missing pairs were computed
    assert json.loads((out / "summary.json").read_text())["suspects"] == full
    assert main([*cmd, "--fresh"]) == 0
    assert "resuming" not in capsys.readouterr().out
    changed = [a if a != "40" else "41" for a in cmd]  # --num-seqs 41: nothing is kept
    assert main(changed) == 0
    assert "resuming" not in capsys.readouterr().out
    # a pair recorded under another layer screen (an earlier version's) is computed again
    assert main(cmd) == 0
    f = out / full[0]["folder"] / "fingerprint.json"
    saved = json.loads(f.read_text())
    assert saved["run"]["statistic"]["screen"]["units"] > 0
    saved["run"]["statistic"]["screen"]["units"] += 1
    f.write_text(json.dumps(saved))
    shutil.rmtree(out / full[2]["folder"])
    capsys.readouterr()
    assert main(cmd) == 0
    printed = capsys.readouterr().out
    assert "resuming: 1 of 3 pairs" in printed and printed.count(" vs base ") == 2
