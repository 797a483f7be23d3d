"""Pretraining: on-disk Orbax round trip, SIGKILL + resume bitwise equality, data order, errors.

Fixtures are tiny on purpose: the llama2-tiny preset (2 layers, d = 64) with a 256-token BPE on a
corpus of Python standard-library modules copied into a temporary folder, so each step takes
milliseconds and the tests exercise the real tokenizer, Orbax and optax code paths.
"""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from bornbiased_jax import data
from bornbiased_jax.cli import main
from bornbiased_jax.train import Run, TrainConfig, make_train_step

STDLIB = Path(sysconfig.get_paths()["stdlib"])
TINY = dict(preset="llama2-tiny", seq_len=32, batch_size=8, vocab_size=256, warmup=2,
            eval_every=5, eval_batches=2, log_every=2)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """~100 KB of real Python source: a few stdlib modules (a real, local corpus)."""
    d = tmp_path_factory.mktemp("corpus")
    for name in ["json/__init__.py", "json/decoder.py", "json/encoder.py", "json/scanner.py",
                 "textwrap.py", "bisect.py", "heapq.py", "colorsys.py", "fnmatch.py"]:
        shutil.copy(STDLIB / name, d / name.replace("/", "_"))
    return d


def leaves_equal(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_orbax_round_trip_on_disk(corpus, tmp_path):
    """Weights, Adam moments, step, data position and RNG survive a real save and load."""
    tc = TrainConfig(steps=6, save_every=3, **TINY)
    run = Run(tc, [str(corpus)], tmp_path / "run")
    run.train(progress=False)
    saved = run.state
    # Adam's moments are non-trivial after training (the fixture would be vacuous otherwise).
    adam = saved["opt_state"][1][0]
    assert float(np.abs(np.asarray(jax.tree.leaves(adam.nu)[0])).max()) > 0
    again = Run(tc, [str(corpus)], tmp_path / "run")  # a new process would do the same
    leaves_equal(again.state, saved)
    assert int(again.state["step"]) == 6
    assert int(again.state["data_position"]) == 6 * tc.batch_size
    np.testing.assert_array_equal(again.state["rng"],
                                  jax.random.key_data(data.data_key(tc.data_seed)))
    assert sorted(int(p.name) for p in (tmp_path / "run/checkpoints").iterdir()) == [3, 6]


def _train_cmd(corpus, out, steps):
    return [sys.executable, "-m", "bornbiased_jax.cli", "train", "--preset", "llama2-tiny",
            "--corpus", str(corpus), "--out", str(out), "--steps", str(steps),
            "--save-every", "2", "--keep-last", "50", "--seq-len", "32", "--batch-size", "8",
            "--vocab-size", "256", "--warmup", "2", "--eval-every", "10", "--eval-batches", "1",
            "--no-progress"]


def _final_state(out: Path):
    mngr = ocp.CheckpointManager(out.absolute() / "checkpoints")
    step = mngr.latest_step()
    return step, mngr.restore(step, args=ocp.args.StandardRestore())


def test_sigkill_and_resume_is_bitwise_equal_to_an_uninterrupted_run(corpus, tmp_path):
    steps = 40
    rng = np.random.default_rng(int(time.time()))
    kill_after = int(rng.integers(2, 16)) * 2  # a random checkpointed step in [4, 30]
    killed = tmp_path / "killed"
    proc = subprocess.Popen(_train_cmd(corpus, killed, steps), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 240
    while not (killed / "checkpoints" / str(kill_after)).exists():
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.time() < deadline, "the run never reached the kill step"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    step_at_kill, _ = _final_state(killed)
    assert step_at_kill < steps, "the run finished before it was killed; the test proves nothing"
    resumed = subprocess.run(_train_cmd(corpus, killed, steps), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming {killed} from step" in resumed.stdout
    clean = tmp_path / "clean"
    full = subprocess.run(_train_cmd(corpus, clean, steps), capture_output=True, text=True)
    assert full.returncode == 0, full.stderr[-2000:]
    (sa, a), (sb, b) = _final_state(killed), _final_state(clean)
    assert sa == sb == steps
    leaves_equal(a, b)  # params, Adam moments, step, data position, RNG: bitwise
    print(f"killed after checkpoint {kill_after} (latest complete: {step_at_kill})")


def test_data_order_depends_on_the_data_seed_only():
    n = 37
    a = data.batch_indices(5, 30, 16, n)  # crosses the epoch boundary at 37
    np.testing.assert_array_equal(a[:7], data.epoch_order(5, 0, n)[30:])
    np.testing.assert_array_equal(a[7:], data.epoch_order(5, 1, n)[:9])
    assert sorted(data.epoch_order(5, 0, n)) == list(range(n))
    assert not np.array_equal(data.epoch_order(5, 0, n), data.epoch_order(6, 0, n))
    # Two init seeds, one data seed: the same batches (paper Table 4c).
    tc1, tc2 = TrainConfig(seed=1, data_seed=3), TrainConfig(seed=2, data_seed=3)
    np.testing.assert_array_equal(data.batch_indices(tc1.data_seed, 64, 16, n),
                                  data.batch_indices(tc2.data_seed, 64, 16, n))


def test_data_parallel_step_matches_single_device(corpus, tmp_path):
    tc = TrainConfig(steps=4, **TINY)
    run = Run(tc, [str(corpus)], tmp_path / "dp")
    assert len(jax.devices()) == 4
    blocks = run.batch(0)
    one = make_train_step(run.cfg, tc, run.optimizer, jax.sharding.Mesh(np.asarray(jax.devices()[:1]), ("data",)))
    four = make_train_step(run.cfg, tc, run.optimizer, run.mesh)
    s1, m1 = one(jax.tree.map(np.asarray, run.state), blocks)
    s4, m4 = four(jax.tree.map(np.asarray, run.state), blocks)
    np.testing.assert_allclose(m1["loss"], m4["loss"], rtol=1e-6)
    for x, y in zip(jax.tree.leaves(s1["params"]), jax.tree.leaves(s4["params"])):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-7)


def test_grad_accumulation_equals_the_full_batch(corpus, tmp_path):
    tc1 = TrainConfig(steps=4, **TINY)
    tc2 = dataclasses.replace(tc1, grad_accum=2)
    r1 = Run(tc1, [str(corpus)], tmp_path / "a1")
    r2 = Run(tc2, [str(corpus)], tmp_path / "a2")
    s1, m1 = make_train_step(r1.cfg, tc1, r1.optimizer, r1.mesh)(r1.state, r1.batch(0))
    s2, m2 = make_train_step(r2.cfg, tc2, r2.optimizer, r2.mesh)(r2.state, r2.batch(0))
    np.testing.assert_allclose(m1["loss"], m2["loss"], rtol=1e-5)
    for x, y in zip(jax.tree.leaves(s1["params"]), jax.tree.leaves(s2["params"])):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-6)


def _cli(args, capsys):
    rc = main(["train", "--no-progress", *args])
    return rc, capsys.readouterr().err


def test_empty_corpus_is_an_error_and_writes_nothing(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "blank.txt").write_text("  \n")
    out = tmp_path / "out"
    rc, err = _cli(["--corpus", str(empty), "--out", str(out), "--steps", "5", "--warmup", "1"],
                   capsys)
    assert rc == 2 and "empty" in err
    assert not out.exists()
    rc, err = _cli(["--corpus", str(tmp_path / "nope"), "--out", str(out), "--steps", "5",
                    "--warmup", "1"], capsys)
    assert rc == 2 and "does not exist" in err


def test_resume_errors(corpus, tmp_path, capsys):
    out = tmp_path / "r"
    base = ["--preset", "llama2-tiny", "--corpus", str(corpus), "--out", str(out),
            "--seq-len", "32", "--batch-size", "8", "--vocab-size", "256", "--warmup", "1",
            "--save-every", "2"]
    rc, err = _cli(base + ["--steps", "2", "--resume"], capsys)
    assert rc == 2 and "no run to resume" in err
    assert main(["train", "--no-progress", *base, "--steps", "4"]) == 0
    # A resume whose settings differ from the run's.
    rc, err = _cli([*base[:7], "64", *base[8:], "--steps", "6"], capsys)
    assert rc == 2 and "different settings" in err and "seq_len" in err
    rc, err = _cli(base + ["--steps", "6", "--seed", "9"], capsys)
    assert rc == 2 and "different settings" in err
    # A corrupt checkpoint: overwrite every file of the latest step with garbage.
    latest = out / "checkpoints" / "4"
    for f in latest.rglob("*"):
        if f.is_file():
            f.write_bytes(b"\x00garbage")
    rc, err = _cli(base + ["--steps", "6"], capsys)
    assert rc == 2 and "checkpoint 4" in err and "unreadable" in err
    # A missing checkpoint folder with --resume.
    shutil.rmtree(out / "checkpoints")
    rc, err = _cli(base + ["--steps", "6", "--resume"], capsys)
    assert rc == 2 and "no complete checkpoint" in err
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert metrics and metrics[-1]["step"] == 4  # the failed resumes wrote nothing


def test_hf_corpus_without_datasets_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if the package were not installed
    with pytest.raises(ValueError, match="pip install datasets"):
        data.load_corpus(["hf:roneneldan/TinyStories:train"])


def test_load_corpus_reads_files_and_folders(corpus):
    docs = data.load_corpus([str(corpus)])
    assert len(docs) == 9 and all(d.strip() for d in docs)
    assert len(data.load_corpus([str(corpus)], max_bytes=1)) == 1  # stops once the cap is met
