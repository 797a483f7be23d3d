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
from bornbiased_jax.fingerprint.features import init_features
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
FAST = ["--n", "40", "--seq-len", "8", "--null-models", "4", "--no-progress"]


def test_fingerprint_cli_writes_table_json_png(tmp_path, capsys):
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@2", *FAST,
                 "--test", "all", "--out", str(out)]) == 0
    for f in ("fingerprint.json", "fingerprint.md", "fingerprint.png"):
        assert (out / f).stat().st_size > 0
    saved = json.loads((out / "fingerprint.json").read_text())
    res = saved["results"]
    assert list(res) == ["paper", "official", "calibrated", "permutation"]
    assert saved["run"]["settings"]["input"] == "tokens"  # the permutation test's inputs
    assert saved["verdict"].startswith("verdict (permutation test, exact p = ")
    assert res["permutation"]["details"]["K"] == 9999
    assert res["calibrated"]["details"]["K"] == 4
    assert "never reject" in res["calibrated"]["note"]  # K = 4 < 99
    assert all(0 <= p <= 1 for r in res.values() for p in r["p_values"].values())
    printed = capsys.readouterr().out
    assert "calibrated" in printed and saved["verdict"] in printed


def test_fingerprint_cli_defaults_to_the_permutation_test(tmp_path, capsys):
    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", "preset:llama2-tiny@1", *FAST,
                 "--out", str(out)]) == 0
    saved = json.loads((out / "fingerprint.json").read_text())
    assert list(saved["results"]) == ["permutation"]
    assert saved["results"]["permutation"]["p_values"]["exact"] == 1 / 10_000  # same model
    assert "is related to" in saved["verdict"] and saved["verdict"] in capsys.readouterr().out


@pytest.mark.parametrize("extra, match", [
    (["--n", "2"], "n >= 3"),
    (["--output", "logits"], "vocabulary ids are not exchangeable"),
    (["--input", "gaussian"], "one forward pass of the base per null draw"),
    (["--test", "all", "--input", "gaussian"], "one forward pass of the base per null draw"),
    (["--permutations", "98"], r"K >= 1/alpha - 1 = 99"),
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


def test_sweep_model_flag_runs_a_trained_run(tmp_path, run_dir):
    run, _ = run_dir
    out = tmp_path / "sw"
    assert main(["sweep", "--model", f"{run}@2", "--model", "preset:llama2-tiny@5",
                 "--seq-len", "8", "--num-seqs", "20", "--no-progress", "--out", str(out)]) == 0
    recs = json.loads((out / "token_preference.json").read_text())["records"]
    assert [r["preset"] for r in recs] == ["run@2", "llama2-tiny@5"]
    assert recs[0]["vocab_size"] == 257 and recs[0]["num_seqs"] == 20
