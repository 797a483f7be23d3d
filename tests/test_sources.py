"""Model sources (preset / run folder / HF folder), run_probe, and the fingerprint command's
errors and outputs. The run-folder fixture is a real 4-step ``bornbiased train`` run of the
llama2-tiny preset (2 blocks, d = 64) with Orbax checkpoints at steps 2 and 4."""

import json
import shutil
import sysconfig
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

from bornbiased_jax import model
from bornbiased_jax.cli import main
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.runner.features import init_features
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.probes.outputs import feature_probe
from bornbiased_jax.sources import load_source
from bornbiased_jax.sweep import run_probe
from bornbiased_jax.training.config import TrainConfig
from bornbiased_jax.training.loop import Run
from bornbiased_jax.training.optimizer import make_optimizer
from bornbiased_jax.training.step import init_state

STDLIB = Path(sysconfig.get_paths()["stdlib"])
TINY = dict(preset="llama2-tiny", seq_len=32, batch_size=8, vocab_size=256, warmup=1,
            eval_every=4, eval_batches=1, log_every=2, steps=4, save_every=2, keep_last=5,
            seed=7)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    for name in ["json/decoder.py", "json/encoder.py", "textwrap.py", "heapq.py"]:
        shutil.copy(STDLIB / name, d / name.replace("/", "_"))
    out = tmp_path_factory.mktemp("runs") / "run"
    run = Run(TrainConfig(**TINY), [str(d)], out)
    run.train(progress=False)
    return out, run


def leaves_equal(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# --- presets ----------------------------------------------------------------------------------
def test_preset_spec():
    m = load_source("preset:llama2-tiny@42")
    assert (m.kind, m.seed, m.step, m.label) == ("preset", 42, None, "llama2-tiny@42")
    assert m.cfg.shared_embedding and m.is_init
    leaves_equal(m.params, jax.jit(model.init, static_argnums=0)(m.cfg, jax.random.key(42)))
    own = load_source("preset:llama2-tiny@42", shared_embedding=False)
    assert not own.cfg.shared_embedding
    other = load_source("preset:llama2-tiny@43", shared_embedding=False)
    assert not np.array_equal(own.params["embed"]["embedding"], other.params["embed"]["embedding"])


@pytest.mark.parametrize("spec, match", [
    ("preset:llama2-tiny", "preset:NAME@SEED"),
    ("preset:nope@1", "unknown preset"),
    ("preset:llama2-tiny@x", "bad seed"),
    ("preset:llama2-tiny@-1", "bad seed|outside"),
    ("preset:llama2-tiny@4294967296", "outside"),
    ("/no/such/folder", "no such folder"),
    ("", "empty model source"),
])
def test_bad_specs(spec, match):
    with pytest.raises(UserError, match=match):
        load_source(spec)


def test_a_source_is_parsed_once_into_a_typed_value(run_dir, monkeypatch):
    """parse_source reads a spec once (kind, path, seed, step, origin); every later step takes
    the Source as it is and never re-splits the string."""
    from bornbiased_jax import sources

    out, _ = run_dir
    p = sources.parse_source(" preset:llama2-tiny@42 ")
    assert (p.kind, p.preset, p.seed, p.spec) == ("preset", "llama2-tiny", 42,
                                                  "preset:llama2-tiny@42")
    r = sources.parse_source(f"{out}@2")
    assert (r.kind, r.path, r.seed, r.step, r.origin) == ("run", out, None, 2, None)
    assert r.initialisation() == f"{out}@0"
    assert sources.parse_source(r) is r

    def no_split(spec):
        raise AssertionError(f"{spec!r} split again")

    monkeypatch.setattr(sources, "split_run_spec", no_split)
    cfg = sources.source_config(r)
    assert cfg == sources.load_source(r).cfg == sources.check_source(r)
    assert sources.source_location(r) == ("run", out)
    assert sources.load_source(r).step == 2


# --- run folders --------------------------------------------------------------------------------
def test_run_folder_latest_and_step_equal_checkpoints(run_dir):
    out, run = run_dir
    latest = load_source(str(out))
    assert (latest.kind, latest.step, latest.seed) == ("run", 4, 7)
    leaves_equal(latest.params, run.seed_params())  # the state after the last step
    at2 = load_source(f"{out}@2")
    mgr = ocp.CheckpointManager((out / "checkpoints").absolute())
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, run.state)
    saved2 = mgr.restore(2, args=ocp.args.StandardRestore(abstract))
    leaves_equal(at2.params, jax.tree.map(lambda x: x[0], saved2["params"]))  # seed axis
    assert not latest.is_init and at2.step == 2


def test_checkpoint_params_are_read_without_building_a_model(run_dir, monkeypatch):
    """A run's parameters are read with the structure its checkpoint's metadata records: no
    model is initialised or traced, and they are the trained ones, bitwise, in the model's
    own tree."""
    out, run = run_dir

    def no_model(*args, **kwargs):
        raise AssertionError("a model was built to read a checkpoint")

    monkeypatch.setattr(model, "init", no_model)
    latest = load_source(str(out))
    assert jax.tree.structure(latest.params) == jax.tree.structure(run.seed_params())
    leaves_equal(latest.params, run.seed_params())


def test_run_step_zero_is_the_initialisation(run_dir):
    out, run = run_dir
    init = load_source(f"{out}@0")
    assert init.is_init and init.step == 0
    built = init_state(run.cfg, run.tc, make_optimizer(run.tc))["params"]
    leaves_equal(init.params, jax.tree.map(lambda x: x[0], built))


def test_initialisation_spec_names_each_sources_initialisation(run_dir, tmp_path):
    """A preset is its own initialisation; a run's is its step 0 (any step, any seed selector);
    a run continued from another model (run.json's init_from) has its source's; an HF
    folder's is unknown. A continued run's step 0 is that trained source, not an init."""
    from bornbiased_jax import hf
    from bornbiased_jax.sources import initialisation_spec, parse_source

    out, run = run_dir
    assert initialisation_spec(parse_source("preset:llama2-tiny@3")) == "preset:llama2-tiny@3"
    assert initialisation_spec(parse_source(str(out))) == f"{out}@0"
    assert initialisation_spec(parse_source(f"{out}@4")) == f"{out}@0"
    assert initialisation_spec(parse_source(f"{out}#7@2")) == f"{out}#7@0"
    continued = tmp_path / "continued"
    continued.mkdir()
    info = json.loads((out / "run.json").read_text())
    info["init_from"] = {"spec": f"{out}@4", "label": "run@4", "kind": "run", "seed": 7,
                         "step": 4}
    (continued / "run.json").write_text(json.dumps(info))
    assert initialisation_spec(parse_source(f"{continued}@2")) == f"{out}@0"
    start = load_source(f"{continued}@0")
    assert start.step == 0 and start.seed == 7 and not start.is_init  # trained, 4 steps
    leaves_equal(start.params, load_source(f"{out}@4").params)
    m = load_source("preset:llama2-tiny@1", shared_embedding=False)
    hf.save_hf(m.cfg, m.params, tmp_path / "hf")
    assert initialisation_spec(parse_source(str(tmp_path / "hf"))) is None
    moved = tmp_path / "moved"  # continued from a run that is not where run.json says
    moved.mkdir()
    info["init_from"]["spec"] = str(tmp_path / "gone") + "@4"
    (moved / "run.json").write_text(json.dumps(info))
    with pytest.raises(UserError, match="which is not found from"):
        initialisation_spec(parse_source(str(moved)))
    assert main(["fingerprint", str(moved), "preset:llama2-tiny@1", "--test", "aligned",
                 "--out", str(tmp_path / "fp")]) == 2
    assert not (tmp_path / "fp").exists()
    info["init_from"]["spec"] = str(moved)  # a run that says it continues itself
    (moved / "run.json").write_text(json.dumps(info))
    with pytest.raises(UserError, match="cycle of continued runs"):
        initialisation_spec(parse_source(str(moved)))


def test_run_missing_step_lists_steps(run_dir):
    out, _ = run_dir
    with pytest.raises(UserError, match=r"no checkpoint at step 3; its steps are \[2, 4\]"):
        load_source(f"{out}@3")


def test_damaged_checkpoint_and_run_json(run_dir, tmp_path):
    out, _ = run_dir
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    for f in (bad / "checkpoints" / "4" / "default").iterdir():
        if f.is_file():
            f.unlink()
        else:
            shutil.rmtree(f)
    with pytest.raises(UserError, match="does not load"):
        load_source(str(bad))
    (bad / "run.json").write_text("{not json")
    with pytest.raises(UserError, match="not a readable run description"):
        load_source(str(bad))


def test_run_json_model_config_is_used(run_dir, tmp_path):
    """When run.json records the model config it is read as is."""
    import dataclasses

    out, run = run_dir
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    info = json.loads((copy / "run.json").read_text())
    info["model_config"] = dataclasses.asdict(run.cfg)
    (copy / "run.json").write_text(json.dumps(info))
    assert load_source(str(copy)).cfg == run.cfg


def test_hf_folder_and_plain_folder(tmp_path):
    """A folder with config.json goes to the HF importer: an empty config is refused by it (or,
    where HF import is not installed, with a message saying so); never a traceback."""
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text("{}")
    with pytest.raises(UserError, match="Hugging Face|config.json"):
        load_source(str(hf))
    with pytest.raises(UserError, match="neither run.json"):
        load_source(str(tmp_path))


# --- run_probe: one given model ------------------------------------------------------------------
@pytest.mark.slow
def test_run_probe_matches_sweep_and_direct_forward():
    m = load_source("preset:llama2-tiny@3")
    xs = probe_inputs("tokens", m.cfg, 7, 12)
    probe = feature_probe(m.cfg, "normed")
    # 3 calls of 3 sequences (the last padded), each in batches of 2 (a compiled loop)
    F = run_probe(probe, m.cfg, m.params, xs, seq_chunk=3, seq_batch=2)
    one = jax.jit(lambda x: model.forward(m.params, m.cfg, x).normed[-1])
    direct = np.stack([np.asarray(one(jnp.asarray(x))) for x in xs[:]])
    np.testing.assert_allclose(F, direct, rtol=1e-5, atol=1e-6)
    swept = dict(init_features(m.cfg, [3], xs))[3]
    np.testing.assert_allclose(F, swept, rtol=1e-5, atol=1e-6)
    logits = run_probe(feature_probe(m.cfg, "logits"), m.cfg, m.params, xs)
    assert logits.shape == (7, m.cfg.vocab_size)
    np.testing.assert_allclose(logits, F @ np.asarray(model.unembedding(m.params, m.cfg)),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(UserError, match="outside"):
        run_probe(probe, m.cfg, m.params, np.zeros((2, m.cfg.max_seq_len + 1), np.int32))


# --- the fingerprint command ---------------------------------------------------------------------
FAST = ["--num-seqs", "40", "--seq-len", "8", "--null-models", "99", "--no-progress"]


@pytest.mark.slow
def test_fingerprint_cli_writes_table_json_png(tmp_path, capsys):
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@2", *FAST,
                 "--test", "all", "--out", str(out)]) == 0
    for f in ("fingerprint.json", "fingerprint.md", "fingerprint.png"):
        assert (out / f).stat().st_size > 0
    saved = json.loads((out / "fingerprint.json").read_text())
    res = saved["results"]
    # every test that applies (matched: llama2's MLP is gated) and the any-pair combination
    assert list(res) == ["paper", "official", "calibrated", "aligned", "permutation", "matched",
                         "matched_init", "attention", "any_pair"]
    assert saved["run"]["settings"]["input"] == "tokens"  # the aligned/permutation tests' inputs
    assert saved["verdict"].startswith("verdict (matched_init test, ")
    assert res["permutation"]["details"]["K"] == 9999
    assert res["calibrated"]["details"]["K"] == res["aligned"]["details"]["K"] == 99
    assert res["aligned"]["details"]["base_initialisation"] == "llama2-tiny@1"
    assert all(0 <= p <= 1 for r in res.values() for p in r["p_values"].values())
    printed = capsys.readouterr().out
    assert "calibrated" in printed and saved["verdict"] in printed


def test_calibrated_test_with_too_few_null_models_says_it_cannot_reject(tmp_path):
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@2", *FAST,
                 "--test", "calibrated", "--null-models", "4", "--out", str(out)]) == 0
    res = json.loads((out / "fingerprint.json").read_text())["results"]
    assert res["calibrated"]["details"]["K"] == 4
    assert "never reject" in res["calibrated"]["note"]  # K = 4 < 99


def test_fingerprint_cli_defaults_to_the_matched_test_from_the_initialisation(tmp_path, capsys):
    """BASE a preset with a gated MLP (its own initialisation): auto runs the permutation test
    and the matched test against BASE's initialisation, whose verdict it is; no null model is
    built. Same model: every unit agrees in both views, and the permutation test's p is
    1/(9999+1)."""
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@1", *FAST,
                 "--out", str(out)]) == 0
    saved = json.loads((out / "fingerprint.json").read_text())
    res = saved["results"]
    assert list(res) == ["permutation", "matched_init"]
    assert res["permutation"]["p_values"]["exact"] == 1 / 10_000  # same model
    units = res["matched_init"]["details"]["units"]
    assert res["matched_init"]["details"]["K_per_layer"] == [units, units]
    assert res["matched_init"]["details"]["slack"] == 0 and "exact" in res["matched_init"]["note"]
    assert saved["verdict"].startswith("verdict (matched_init test, ")
    assert "is related to" in saved["verdict"] and saved["verdict"] in capsys.readouterr().out


def test_fingerprint_cli_defaults_to_aligned_for_an_ungated_mlp(tmp_path, capsys):
    """BASE a preset whose MLP is not gated (GPT-2): the matched test cannot serve it, and auto
    runs the aligned test (K null initialisations) and the permutation test. Same model: the
    aligned statistic is the largest of its K + 1, p = 1/(K+1) exactly."""
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:gpt2-rope-tiny@1", "preset:gpt2-rope-tiny@1", *FAST,
                 "--out", str(out)]) == 0
    saved = json.loads((out / "fingerprint.json").read_text())
    assert list(saved["results"]) == ["aligned", "permutation"]
    assert saved["results"]["aligned"]["p_values"]["exact"] == 1 / 100
    assert saved["verdict"].startswith("verdict (aligned test, exact p = 0.01, ")
    assert "is related to" in saved["verdict"] and saved["verdict"] in capsys.readouterr().out


@pytest.mark.parametrize("extra, match", [
    (["--num-seqs", "2"], r"--num-seqs 2 is too few sequences.*at least 3"),
    (["--test", "permutation", "--feature", "logits"], "vocabulary ids are not exchangeable"),
    (["--test", "permutation", "--input", "gaussian"],
     "one forward pass of the base per null draw"),
    (["--test", "aligned", "--feature", "logits"], r"aligned test needs .*residual outputs"),
    (["--test", "aligned", "--input", "gaussian"], r"aligned test needs token inputs"),
    (["--test", "matched_init", "--input", "gaussian"], r"matched.* token inputs"),
    (["--test", "all", "--input", "gaussian"], r"aligned test needs token inputs"),
    (["--permutations", "98"], r"K >= 1/alpha - 1 = 99"),
    (["--test", "aligned", "--null-models", "98"], r"too few for the aligned test.*--null-models >= 1/alpha - 1 = 99"),
    (["--test", "paper", "--m", "65"], r"m = 65 must be an integer in \[1, d_out = 64\]"),
    (["--test", "official", "--k", "100"], r"k = 100 must be an integer in \[1, d_out = 64\]"),
])
def test_fingerprint_cli_bad_sizes(tmp_path, capsys, extra, match):
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@2", *FAST, *extra,
                 "--out", str(out)]) == 2
    import re

    assert re.search(match, capsys.readouterr().err)
    assert not out.exists()  # nothing half-written


def test_fingerprint_cli_bad_sources(tmp_path, capsys, run_dir):
    run, _ = run_dir
    cases = [("preset:llama2-tiny@1", "preset:llama2-cpu@1",
              r"residual widths \(d_model\) differ \(64 vs 512\)"),
             ("preset:llama2-tiny@1", f"{run}@3", "no checkpoint at step 3"),
             ("preset:llama2-tiny@1", str(tmp_path / "missing"), "no such folder"),
             ("llama2-tiny@1", "preset:llama2-tiny@2", "unknown model source")]
    for base, suspect, match in cases:
        out = tmp_path / "fp"
        assert main(["fingerprint", base, suspect, *FAST, "--out", str(out)]) == 2
        import re

        assert re.search(match, capsys.readouterr().err), (base, suspect)
        assert not out.exists()


@pytest.mark.slow
def test_aligned_verdict_for_a_trained_run_finds_its_renamed_copy(tmp_path, run_dir):
    """BASE a run continued from a trained run (its step 0 is that trained model): the aligned
    test compares each suspect with the *first* run's step 0, through the continuation. Its
    statistic is the aligned Spearman of that initialisation's features and the suspect's
    (recomputed here), not of BASE's. A copy of the trained model with its residual basis and
    hidden units renamed (an HF folder, function-preserving) is found at the smallest exact p,
    1/(K+1), while the exact permutation test sees no evidence; an unrelated initialisation
    is not called related. The continuation's step 0 is not taken for an initialisation."""
    from bornbiased_jax import hf
    from bornbiased_jax.fingerprint.methods import identity_dims as D
    from bornbiased_jax.fingerprint.methods.calibrated import aligned_spearman
    from bornbiased_jax.fingerprint.runner.compare import Settings, probe_set
    from bornbiased_jax.fingerprint.runner.features import model_features
    from bornbiased_jax.fingerprint.edits.obfuscation import obfuscate

    run, _ = run_dir
    trained = load_source(str(run))
    hf.save_hf(trained.cfg, obfuscate(trained.params, trained.cfg, jax.random.key(0)),
               tmp_path / "renamed")
    hf.save_hf(trained.cfg, model.init(trained.cfg, jax.random.key(3)), tmp_path / "other")
    continued = tmp_path / "continued"  # run.json of a run continued from run@4
    continued.mkdir()
    info = json.loads((run / "run.json").read_text())
    info["init_from"] = {"spec": f"{run}@4", "label": "run@4", "kind": "run", "seed": 7,
                         "step": 4}
    (continued / "run.json").write_text(json.dumps(info))
    out = tmp_path / "fp"
    assert main(["fingerprint", f"{continued}@0", str(tmp_path / "renamed"),
                 str(tmp_path / "other"), *FAST, "--test", "all", "--out", str(out)]) == 0
    rows = json.loads((out / "summary.json").read_text())["suspects"]
    # the verdict: the matched test against that same initialisation (a gated MLP)
    assert [r["verdict_test"] for r in rows] == ["matched_init", "matched_init"]
    assert rows[0]["related"]["matched_init"] and not rows[1]["related"]["matched_init"]
    assert rows[0]["p"]["aligned"] == 1 / 100 and rows[0]["related"]["aligned"]
    assert not rows[0]["related"]["permutation"]  # the renaming hides it from this test
    assert not rows[1]["related"]["aligned"]
    aligned = json.loads((out / rows[0]["folder"] / "fingerprint.json").read_text()
                         )["results"]["aligned"]
    assert aligned["details"]["base_initialisation"] == "run@0"
    xs = probe_set(trained, Settings(n=40, seq_len=8))
    F = {name: D.RankedFeatures.of(model_features(load_source(spec), xs)) for name, spec in
         (("init", f"{run}@0"), ("trained", str(run)), ("suspect", str(tmp_path / "renamed")))}
    from_init = aligned_spearman(F["init"], F["suspect"])[0]
    assert aligned["statistic"] == pytest.approx(from_init, rel=1e-6)
    assert abs(aligned_spearman(F["trained"], F["suspect"])[0] - from_init) > 1e-3


def test_aligned_test_needs_a_known_initialisation(tmp_path, capsys):
    """An HF BASE: auto falls back to the permutation test and says so; --test aligned is
    refused before any work, naming what BASE would need."""
    from bornbiased_jax import hf

    m = load_source("preset:llama2-tiny@1", shared_embedding=False)
    hf.save_hf(m.cfg, m.params, tmp_path / "base")
    out = tmp_path / "fp"
    assert main(["fingerprint", str(tmp_path / "base"), "preset:llama2-tiny@2", *FAST,
                 "--out", str(out)]) == 0
    saved = json.loads((out / "fingerprint.json").read_text())
    # the any-pair verdict: the permutation and (gated MLP) matched legs
    assert list(saved["results"]) == ["permutation", "matched", "any_pair"]
    assert "is not known" in capsys.readouterr().out and "is not known" in saved["run"]["notes"][0]
    assert "Note: the initialisation of" in (out / "fingerprint.md").read_text()
    out2 = tmp_path / "fp2"
    assert main(["fingerprint", str(tmp_path / "base"), "preset:llama2-tiny@2", *FAST,
                 "--test", "aligned", "--out", str(out2)]) == 2
    assert "is not known" in capsys.readouterr().err and not out2.exists()


@pytest.mark.slow
def test_sweep_model_flag_runs_a_trained_run(tmp_path, run_dir):
    run, _ = run_dir
    out = tmp_path / "sw"
    assert main(["sweep", "--model", f"{run}@2", "--model", "preset:llama2-tiny@5",
                 "--seq-len", "8", "--num-seqs", "20", "--no-progress", "--out", str(out)]) == 0
    recs = json.loads((out / "token_preference.json").read_text())["records"]
    assert [r["preset"] for r in recs] == ["run@2", "llama2-tiny@5"]
    assert recs[0]["vocab_size"] == 257 and recs[0]["num_seqs"] == 20
