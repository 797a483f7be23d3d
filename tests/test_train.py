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
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

from bornbiased_jax import data
from bornbiased_jax.cli import main
from bornbiased_jax.config_io import config_record
from bornbiased_jax.errors import UserError
from bornbiased_jax.training.config import TrainConfig
from bornbiased_jax.training.loop import Run
from bornbiased_jax.training.step import make_train_step

STDLIB = Path(sysconfig.get_paths()["stdlib"])
TINY = dict(preset="llama2-tiny", seq_len=32, batch_size=8, vocab_size=256, warmup=2,
            eval_every=5, eval_batches=2, log_every=2)


@pytest.mark.parametrize("tc", [
    TrainConfig(),
    TrainConfig(preset="llama2-tiny", seeds=tuple(range(32)), seq_len=64, steps=250,
                vocab_size=2048, warmup=25, lr=3e-3, min_lr=3e-4, keep_every=50, keep_last=2, log_every=10),
    TrainConfig(steps=4000, save_every=250, keep_steps=(4000, 250, 1000), keep_last=1),
    TrainConfig(seeds=(1, 5, 9), bos=True, bos_token="<s>", doc_aligned=True, bf16=True,
                fsdp=True, schedule="constant", stop_at=100, grad_accum=4, corpus_max_mb=2.5,
                model_set=("n_layers=1", "attn_output_gate=true")),
    TrainConfig(seed=7, init_from="runs/x/base-s42@500", weight_decay=-1e-5, data_seed=-3)])
def test_train_command_parses_back_to_its_config(tc):
    """config.train_command spells a TrainConfig as bornbiased train's flags: the command's own
    parser reads the same TrainConfig back."""
    from bornbiased_jax.cli import build_parser
    from bornbiased_jax.commands.train import train_config
    from bornbiased_jax.training.config import train_command

    argv = train_command(tc, ["python-stdlib", "/data/x"], "runs/out")
    args = build_parser().parse_args(argv)
    assert train_config(args) == tc
    assert (args.corpus, str(args.out)) == (["python-stdlib", "/data/x"], "runs/out")
    assert "--b2" not in argv and train_command(TrainConfig(), "c", "o") == [
        "train", "--corpus", "c", "--out", "o"]
    with pytest.raises(UserError, match="b2 = 0.99 has no flag of bornbiased train"):
        train_command(dataclasses.replace(tc, b2=0.99), ["c"], "o")


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


@pytest.mark.slow
def test_orbax_round_trip_on_disk(corpus, tmp_path):
    """Weights, Adam moments, step and data position survive a real save and load."""
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
    # Nothing else is saved: the data order follows from data_seed and data_position alone.
    assert set(again.state) == {"params", "opt_state", "step", "data_position"}
    assert sorted(int(p.name) for p in (tmp_path / "run/checkpoints").iterdir()) == [3, 6]
    # The held-out documents every reader of the run uses (run_folder.validation_split) are the ones
    # the trainer held out: cut into blocks with the run's tokenizer they give its data
    # fingerprint, and the last val_fraction of the documents the run read.
    from bornbiased_jax.training import run_folder

    folder = tmp_path / "run"
    train_docs, val_docs = run_folder.validation_split([str(corpus)], tc)
    tok = data.load_tokenizer(run_folder.tokenizer_path(folder))
    blocks = data.make_blocks(train_docs + val_docs, tok, tc.seq_len, tc.val_fraction)
    info = run_folder.read_run_info(folder)
    assert run_folder.data_fingerprint(blocks.train, blocks.val) == info["data"]["fingerprint"]
    # run.json's dict works too
    docs = run_folder.read_documents([str(corpus)], info["train_config"])
    assert val_docs == docs[len(train_docs):] and len(val_docs) >= 1


def _train_args(corpus, out, steps, seeds="0"):
    return ["train", "--preset", "llama2-tiny", "--corpus", str(corpus), "--out", str(out),
            "--steps", str(steps), "--save-every", "2", "--keep-last", "50", "--seq-len", "32",
            "--batch-size", "8", "--bpe-vocab", "256", "--warmup", "2", "--eval-every", "10",
            "--eval-batches", "1", "--no-progress", "--seeds", seeds]


def _final_state(out: Path):
    mngr = ocp.CheckpointManager(out.absolute() / "checkpoints")
    step = mngr.latest_step()
    return step, mngr.restore(step, args=ocp.args.StandardRestore())


@pytest.mark.slow
def test_sigkill_and_resume_is_bitwise_equal_to_an_uninterrupted_run(corpus, tmp_path, capsys):
    """A run of two seeds (one program, the seeds' states stacked in each checkpoint) killed
    after a checkpoint and resumed ends bitwise equal to an uninterrupted run. A single-seed
    run is the same program with a seed axis of one; its resume is checked in-process
    (test_stop_at_then_resume_equals_an_uninterrupted_run).

    The killed run is a real process (SIGKILL, which nothing in it can catch or clean up
    after); the resume and the uninterrupted run call the same CLI here (``main``): the resume
    sees only what the killed process left on disk."""
    steps = 20
    seeds = "3,8"
    # The kill step is random; its seed is in every failure message, and
    # BORNBIASED_KILL_SEED=<seed> replays a failing draw.
    seed = int(os.environ.get("BORNBIASED_KILL_SEED", time.time_ns() % 2**32))
    kill_after = int(np.random.default_rng(seed).integers(2, 9)) * 2  # checkpointed, in [4, 16]
    ctx = f"(BORNBIASED_KILL_SEED={seed}: kill after checkpoint {kill_after})"
    # The uninterrupted run first: the killed process then finds this run's compiled programs
    # in the session's compilation cache (conftest.py) instead of compiling them again.
    clean = tmp_path / "clean"
    rc = main(_train_args(corpus, clean, steps, seeds))
    assert rc == 0, f"{ctx} {capsys.readouterr().err[-2000:]}"
    capsys.readouterr()
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "bornbiased_jax.cli",
                             *_train_args(corpus, killed, steps, seeds)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 240
    while not (killed / "checkpoints" / str(kill_after)).exists():
        assert proc.poll() is None, f"{ctx} {proc.stderr.read().decode()[-2000:]}"
        assert time.time() < deadline, f"the run never reached the kill step {ctx}"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, ctx
    step_at_kill, _ = _final_state(killed)
    assert step_at_kill < steps, f"the run finished before it was killed {ctx}"
    rc = main(_train_args(corpus, killed, steps, seeds))
    resumed = capsys.readouterr()
    assert rc == 0, f"{ctx} {resumed.err[-2000:]}"
    assert f"resuming {killed} from step" in resumed.out, ctx
    (sa, a), (sb, b) = _final_state(killed), _final_state(clean)
    assert sa == sb == steps, ctx
    assert a["params"]["embed"]["embedding"].shape[0] == 2, ctx  # both seeds in each checkpoint
    try:
        leaves_equal(a, b)  # params, Adam moments, step, data position: bitwise
    except AssertionError as e:
        raise AssertionError(f"{ctx} {e}") from None


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


# float32 summation-order tolerance. A step's gradient is a mean over B x T = 8 x 32 = 256
# per-token terms; summed in another order (split over devices, or over micro-batches), it may
# differ by up to n u sum|terms| with u = 2^-24 (the deterministic bound for a sum of n terms),
# and Adam's moments and the parameters inherit that relative error. We compare each leaf to
# n u = 256 x 2^-24 = 1.5e-5 of its largest magnitude; measured differences are at most 2.4e-6.
SUM_ORDER_RTOL = 256 * 2.0**-24
STEPS_COMPARED = 4  # the schedule starts at lr 0: step 0 moves nothing, steps 1-3 do


def _adam(state):
    adam = state["opt_state"][1][0]  # chain(clip, adamw): adamw's ScaleByAdamState
    return {"mu": adam.mu, "nu": adam.nu}


def assert_close_per_leaf(a, b, rtol, what):
    for path, x in jax.tree_util.tree_leaves_with_path(a):
        y = _at(b, path)
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        scale = np.abs(x).max()
        assert np.abs(x - y).max() <= rtol * scale, (what, jax.tree_util.keystr(path),
                                                     np.abs(x - y).max(), scale)


def _at(tree, path):
    for k in path:
        tree = tree[k.key] if hasattr(k, "key") else tree[k.idx]
    return tree


def _train_steps(step_fn, run, n):
    state = jax.tree.map(np.asarray, run.state)
    losses = []
    for k in range(n):
        state, m = step_fn(state, run.batch(k * run.tc.batch_size), np.int32(0))
        losses.append(float(m["loss"][0]))  # one seed
    return jax.tree.map(np.asarray, state), losses


def _assert_same_training(s1, l1, s2, l2, start):
    np.testing.assert_allclose(l1, l2, rtol=SUM_ORDER_RTOL)
    assert_close_per_leaf(_adam(s1), _adam(s2), SUM_ORDER_RTOL, "Adam moments")
    assert_close_per_leaf(s1["params"], s2["params"], SUM_ORDER_RTOL, "parameters")
    # Not vacuous: training moved the parameters far more than the tolerance, and the moments
    # are not zero.
    moved = max(float(np.abs(np.asarray(x) - np.asarray(y)).max() / np.abs(np.asarray(y)).max())
                for x, y in zip(jax.tree.leaves(s1["params"]), jax.tree.leaves(start["params"])))
    assert moved > 100 * SUM_ORDER_RTOL
    assert all(float(np.abs(v).max()) > 0 for v in jax.tree.leaves(_adam(s1)["nu"]))


@pytest.mark.slow
def test_data_parallel_steps_match_single_device(corpus, tmp_path):
    tc = TrainConfig(steps=8, **TINY)
    run = Run(tc, [str(corpus)], tmp_path / "dp")
    assert len(jax.devices()) == 4
    one = make_train_step(run.cfg, tc, run.optimizer,
                          jax.sharding.Mesh(np.asarray(jax.devices()[:1]), ("data",)))
    four = make_train_step(run.cfg, tc, run.optimizer, run.mesh)
    s1, l1 = _train_steps(one, run, STEPS_COMPARED)
    s4, l4 = _train_steps(four, run, STEPS_COMPARED)
    _assert_same_training(s1, l1, s4, l4, run.state)


@pytest.mark.slow
def test_grad_accumulation_equals_the_full_batch(corpus, tmp_path):
    tc1 = TrainConfig(steps=8, **TINY)
    tc2 = dataclasses.replace(tc1, grad_accum=2)
    r1 = Run(tc1, [str(corpus)], tmp_path / "a1")
    r2 = Run(tc2, [str(corpus)], tmp_path / "a2")
    np.testing.assert_array_equal(r1.batch(0).reshape(-1), r2.batch(0).reshape(-1))
    s1, l1 = _train_steps(make_train_step(r1.cfg, tc1, r1.optimizer, r1.mesh), r1, STEPS_COMPARED)
    s2, l2 = _train_steps(make_train_step(r2.cfg, tc2, r2.optimizer, r2.mesh), r2, STEPS_COMPARED)
    _assert_same_training(s1, l1, s2, l2, r1.state)


@pytest.mark.slow
def test_bf16_training_computes_in_bfloat16_and_keeps_float32_weights(corpus, tmp_path):
    tc = TrainConfig(steps=8, **TINY)
    r32 = Run(tc, [str(corpus)], tmp_path / "f32")
    r16 = Run(dataclasses.replace(tc, bf16=True), [str(corpus)], tmp_path / "bf16")
    s32, l32 = _train_steps(make_train_step(r32.cfg, r32.tc, r32.optimizer, r32.mesh), r32, 4)
    s16, l16 = _train_steps(make_train_step(r16.cfg, r16.tc, r16.optimizer, r16.mesh), r16, 4)
    f32 = {np.dtype(np.float32)}
    assert {np.asarray(x).dtype for x in jax.tree.leaves(s16["params"])} == f32
    assert {np.asarray(x).dtype for x in jax.tree.leaves(_adam(s16))} == f32
    # The bf16 branch is taken: bfloat16 keeps 8 significant bits, so its loss differs from
    # float32's, by about the relative rounding 2^-8 = 0.4 % of the logits' scale, not more.
    assert l16[0] != l32[0]
    np.testing.assert_allclose(l16, l32, rtol=2.0**-6)
    assert np.isfinite(l16).all() and l16[-1] < l16[0]  # and it trains


def test_lr_schedules_warm_up_linearly_then_decay_to_min_lr():
    from bornbiased_jax.training.optimizer import lr_schedule

    tc = TrainConfig(**{**TINY, "warmup": 10}, steps=100, lr=1e-3, min_lr=1e-4)
    cos, lin = lr_schedule(tc), lr_schedule(dataclasses.replace(tc, schedule="linear"))
    for step, want_cos, want_lin in [
            (0, 0.0, 0.0), (5, 5e-4, 5e-4), (10, 1e-3, 1e-3),
            # 20 % into the decay: cosine 1e-4 + 9e-4 (1 + cos(0.2 pi)) / 2, linear 1e-3 - 0.2 * 9e-4
            (28, 1e-4 + 9e-4 * (1 + np.cos(0.2 * np.pi)) / 2, 8.2e-4),
            (55, 5.5e-4, 5.5e-4), (100, 1e-4, 1e-4)]:
        assert np.isclose(float(cos(step)), want_cos, rtol=1e-5, atol=1e-9), step
        assert np.isclose(float(lin(step)), want_lin, rtol=1e-5, atol=1e-9), step
    with pytest.raises(UserError, match="schedule must be one of"):
        TrainConfig(schedule="step", **TINY)
    # the optimiser follows the schedule: without weight decay, AdamW's updates of two runs on
    # the same gradients differ by the ratio of their learning rates
    from bornbiased_jax.training.optimizer import make_optimizer

    updates = {}
    for name in ("cosine", "linear"):
        opt = make_optimizer(dataclasses.replace(tc, schedule=name, weight_decay=0.0))
        params = {"w": jnp.ones((2, 2))}
        state = opt.init(params)
        for step in range(29):
            g = {"w": jnp.full((2, 2), 0.1 * (1 + step % 3))}
            u, state = opt.update(g, state, params)
        updates[name] = float(u["w"][0, 0])  # the update at step 28
    assert updates["cosine"] / updates["linear"] == pytest.approx(
        float(cos(28)) / float(lin(28)), rel=1e-5)


def test_evaluation_runs_in_micro_batches_and_averages_every_block(corpus, tmp_path):
    from bornbiased_jax.training.step import make_eval

    tc = TrainConfig(**{**TINY, "grad_accum": 2}, steps=4)  # batches of 8 in micro-batches of 4
    run = Run(tc, [str(corpus)], tmp_path / "e")
    eval_fn = make_eval(run.cfg, tc)
    seen = []

    def spy(params, blocks):
        seen.append(len(blocks))
        return eval_fn(params, blocks)

    got = run.evaluate(spy)
    n = min(len(run.blocks.val), tc.eval_batches * tc.batch_size)
    assert n == 16 and seen == [4] * 4  # eval_batches x batch_size blocks, 4 at a time
    assert got.shape == (1,)  # one loss per seed
    assert got[0] == pytest.approx(float(eval_fn(run.state["params"], run.blocks.val[:n])[0]),
                                   rel=1e-5)


def test_keep_every_keeps_periodic_checkpoints(corpus, tmp_path):
    tc = TrainConfig(steps=8, save_every=2, keep_last=1, keep_every=4, **TINY)
    Run(tc, [str(corpus)], tmp_path / "k").train(progress=False)
    kept = sorted(int(p.name) for p in (tmp_path / "k/checkpoints").iterdir())
    assert kept == [4, 8]  # 2 and 6 pruned by keep_last=1; 4 kept as a multiple of keep_every


def test_keep_steps_keeps_the_steps_named_across_a_resume(corpus, tmp_path):
    """--keep-steps keeps checkpoints at geometric steps of a long run, through a stop and a
    resume; a kept step that is never a checkpoint's step is refused, saying which."""
    tc = TrainConfig(steps=8, save_every=1, keep_last=1, keep_steps=(1, 2, 4), **TINY)
    Run(dataclasses.replace(tc, stop_at=5), [str(corpus)], tmp_path / "g").train(progress=False)
    kept = sorted(int(p.name) for p in (tmp_path / "g/checkpoints").iterdir())
    assert kept == [1, 2, 4, 5]
    Run(tc, [str(corpus)], tmp_path / "g").train(progress=False)
    kept = sorted(int(p.name) for p in (tmp_path / "g/checkpoints").iterdir())
    assert kept == [1, 2, 4, 8]
    assert TrainConfig(steps=8, warmup=2, save_every=4, keep_steps=(8, 4, 4)).keep_steps == (4, 8)
    with pytest.raises(UserError, match=r"keep_steps \[3, 9\]: each kept step must lie in"):
        TrainConfig(steps=8, warmup=2, save_every=2, keep_steps=(2, 3, 9))


@pytest.mark.slow
def test_stop_at_then_resume_equals_an_uninterrupted_run(corpus, tmp_path):
    """--stop-at stops early on the full schedule; resuming later continues it exactly."""
    tc = TrainConfig(steps=6, save_every=3, **TINY)
    Run(dataclasses.replace(tc, stop_at=3), [str(corpus)], tmp_path / "s").train(progress=False)
    part = Run(tc, [str(corpus)], tmp_path / "s")
    assert int(part.state["step"]) == 3
    part.train(progress=False)
    full = Run(tc, [str(corpus)], tmp_path / "f")
    full.train(progress=False)
    leaves_equal(part.state, full.state)


def test_run_json_records_the_model_config(corpus, tmp_path):
    tc = TrainConfig(steps=4, **TINY)
    run = Run(tc, [str(corpus)], tmp_path / "m")
    saved = json.loads((tmp_path / "m/run.json").read_text())
    # the fields added for Gemma 3 are left out at their defaults (config.LATER_FIELDS)
    assert saved["model_config"] == json.loads(json.dumps(config_record(run.cfg)))
    assert saved["model_config"]["vocab_size"] == run.blocks.vocab_size
    # A recorded model that the preset no longer gives is an error naming the fields.
    saved["model_config"]["d_ff"] += 1
    (tmp_path / "m/run.json").write_text(json.dumps(saved))
    with pytest.raises(UserError, match="d_ff"):
        Run(tc, [str(corpus)], tmp_path / "m")


@pytest.mark.slow
def test_init_from_continues_a_run_on_another_corpus(corpus, tmp_path):
    """Continued pretraining (Table 5): step 0 of the new run is the source checkpoint exactly,
    the tokenizer and architecture are the source's, and the lineage keeps the source's seed."""
    from bornbiased_jax.sources import load_source

    base = Run(TrainConfig(steps=4, save_every=2, seed=7, **TINY), [str(corpus)], tmp_path / "b")
    base.train(progress=False)
    other = tmp_path / "other"
    other.mkdir()
    for name in ["difflib.py", "shlex.py"]:
        shutil.copy(STDLIB / name, other / name)
    tc = TrainConfig(steps=3, init_from=f"{tmp_path / 'b'}@4", **TINY)
    cont = Run(tc, [str(other)], tmp_path / "c")
    leaves_equal(cont.seed_params(), load_source(f"{tmp_path / 'b'}@4").params)
    assert (tmp_path / "c/tokenizer.json").read_text() == (tmp_path / "b/tokenizer.json").read_text()
    assert cont.cfg == base.cfg
    cont.train(progress=False)
    assert not np.allclose(np.asarray(cont.state["params"]["lm_head"]["kernel"]),
                           np.asarray(base.state["params"]["lm_head"]["kernel"]))
    start, end = load_source(f"{tmp_path / 'c'}@0"), load_source(str(tmp_path / "c"))
    leaves_equal(start.params, load_source(f"{tmp_path / 'b'}@4").params)
    assert (start.seed, end.seed, end.step) == (7, 7, 3)
    assert json.loads((tmp_path / "c/run.json").read_text())["init_from"]["step"] == 4
    # Resuming the continued run checks the source again and restores the same state.
    again = Run(tc, [str(other)], tmp_path / "c")
    leaves_equal(again.state, cont.state)
    with pytest.raises(UserError, match="fresh initialisation"):
        Run(dataclasses.replace(tc, init_from="preset:llama2-tiny@0"), [str(other)], tmp_path / "d")
    with pytest.raises(UserError, match="contradicts"):
        Run(dataclasses.replace(tc, seed=8), [str(other)], tmp_path / "e")
    with pytest.raises(UserError, match="model-set"):
        TrainConfig(init_from="x", model_set=("attn_output_gate=true",), **TINY)


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


@pytest.mark.slow
def test_resume_errors(corpus, tmp_path, capsys):
    out = tmp_path / "r"
    base = ["--preset", "llama2-tiny", "--corpus", str(corpus), "--out", str(out),
            "--seq-len", "32", "--batch-size", "8", "--bpe-vocab", "256", "--warmup", "1",
            "--save-every", "2"]
    rc, err = _cli(base + ["--steps", "2", "--resume"], capsys)
    assert rc == 2 and "no run to resume" in err
    assert main(["train", "--no-progress", *base, "--steps", "4"]) == 0
    # A resume whose settings differ from the run's.
    rc, err = _cli([*base[:7], "64", *base[8:], "--steps", "6"], capsys)
    assert rc == 2 and "different settings" in err and "seq_len" in err
    rc, err = _cli(base + ["--steps", "6", "--seed", "9"], capsys)
    assert rc == 2 and "different settings" in err
    # --steps sets the schedule's length: changing it on resume would reshape the schedule.
    rc, err = _cli(base + ["--steps", "6"], capsys)
    assert rc == 2 and "different settings" in err and "'steps': (4, 6)" in err
    rc, err = _cli(base + ["--steps", "4", "--schedule", "linear"], capsys)
    assert rc == 2 and "'schedule': ('cosine', 'linear')" in err
    # A run recorded before the schedule setting existed was trained with cosine decay.
    info = json.loads((out / "run.json").read_text())
    del info["train_config"]["schedule"]
    (out / "run.json").write_text(json.dumps(info))
    assert main(["train", "--no-progress", *base, "--steps", "4"]) == 0
    # A corrupt checkpoint: overwrite every file of the latest step with garbage.
    latest = out / "checkpoints" / "4"
    for f in latest.rglob("*"):
        if f.is_file():
            f.write_bytes(b"\x00garbage")
    rc, err = _cli(base + ["--steps", "4"], capsys)
    assert rc == 2 and "checkpoint 4" in err and "unreadable" in err
    # A missing checkpoint folder with --resume.
    shutil.rmtree(out / "checkpoints")
    rc, err = _cli(base + ["--steps", "4", "--resume"], capsys)
    assert rc == 2 and "no complete checkpoint" in err
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert metrics and metrics[-1]["step"] == 4  # the failed resumes wrote nothing


def test_hf_corpus_without_datasets_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if the package were not installed
    with pytest.raises(ValueError, match="pip install datasets"):
        data.load_corpus(["hf:roneneldan/TinyStories:train"])


def test_hf_corpus_spec_names_dataset_split_and_config(monkeypatch):
    calls = []

    def load_dataset(name, config, split, streaming, revision=None):
        calls.append((name, config, split, streaming) + ((revision,) if revision else ()))
        return iter([{"text": "abcd"}, {"text": "  "}, {"content": "efgh"}, {"text": "ijkl"}])

    monkeypatch.setitem(sys.modules, "datasets", type(sys)("datasets"))
    monkeypatch.setattr(sys.modules["datasets"], "load_dataset", load_dataset, raising=False)
    # blank rows are skipped, "content" stands in for "text", reading stops at max_bytes
    assert data.load_corpus(["hf:Salesforce/wikitext:test:wikitext-2-raw-v1"],
                            max_bytes=8) == ["abcd", "efgh"]
    assert data.load_corpus(["hf:Skylion007/openwebtext"]) == ["abcd", "efgh", "ijkl"]
    assert calls == [("Salesforce/wikitext", "wikitext-2-raw-v1", "test", True),
                     ("Skylion007/openwebtext", None, "train", True)]
    # a corpus stored a line per row is read as one document, blank lines kept
    assert data.load_corpus(["hf:Salesforce/wikitext:test:wikitext-2-raw-v1:joined"]) == [
        "abcd  efghijkl"]
    # NAME@REVISION pins the dataset repository's commit
    calls.clear()
    assert data.load_corpus(["hf:Skylion007/openwebtext@f7d4e8a:train"]) == ["abcd", "efgh", "ijkl"]
    assert calls == [("Skylion007/openwebtext", None, "train", True, "f7d4e8a")]
    for bad in ["hf::test", "hf:a:b:c:lines", "hf:a:b:c:joined:x", "hf:a@:train", "hf:@v1"]:
        with pytest.raises(ValueError, match="hf:NAME"):
            data.load_corpus([bad])


def test_blocks_are_the_joined_token_stream_cut_into_T_plus_1(corpus):
    # more documents than one tokenisation chunk (4,096), so the chunks' seams are crossed
    docs = [f"doc {i} " + "word " * (i % 7) for i in range(9000)]
    tok = data.train_tokenizer(docs[:200], 300)
    eot = tok.token_to_id(data.EOT)
    blocks = data.make_blocks(docs, tok, seq_len=15, val_fraction=0.1)
    flat = []
    for enc in tok.encode_batch(docs[:8100]):
        flat += enc.ids + [eot]
    n = len(flat) // 16
    assert blocks.train.dtype == np.int32 and blocks.train.shape == (n, 16)
    np.testing.assert_array_equal(blocks.train, np.asarray(flat[: 16 * n]).reshape(n, 16))
    val = [i for enc in tok.encode_batch(docs[8100:]) for i in enc.ids + [eot]]
    m = len(val) // 16
    np.testing.assert_array_equal(blocks.val, np.asarray(val[: 16 * m]).reshape(m, 16))
    assert blocks.vocab_size == tok.get_vocab_size()
    # the chunk size does not change the stream
    np.testing.assert_array_equal(data.token_ids(docs[:50], tok, chunk=7),
                                  np.asarray([i for enc in tok.encode_batch(docs[:50])
                                              for i in enc.ids + [eot]], np.int32))


def test_load_corpus_reads_files_and_folders(corpus):
    docs = data.load_corpus([str(corpus)])
    assert len(docs) == 9 and all(d.strip() for d in docs)
    assert len(data.load_corpus([str(corpus)], max_bytes=1)) == 1  # stops once the cap is met


def test_load_corpus_cap_counts_bytes_across_sources(tmp_path):
    # 30 characters but 60 UTF-8 bytes: a 50-byte cap is met by the first file alone, so the
    # second source is not read (counting characters would leave 20 'bytes' for it)
    (tmp_path / "a.txt").write_text("é" * 30, encoding="utf-8")
    (tmp_path / "b.txt").write_text("plain ascii", encoding="utf-8")
    assert data.load_corpus([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")],
                            max_bytes=50) == ["é" * 30]
    assert len(data.load_corpus([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")],
                                max_bytes=61)) == 2


def test_reading_a_checkpoints_parameters_logs_no_item_metadata_warning(corpus, tmp_path,
                                                                         caplog):
    """Orbax warns, on every item read, that the step's metadata is missing from the item
    folder (the manager keeps it one folder up); the readers drop that one message and still
    read the parameters."""
    import logging

    from bornbiased_jax.training import checkpoints

    tc = TrainConfig(steps=4, save_every=4, **TINY)
    run = Run(tc, [str(corpus)], tmp_path / "q")
    run.train(progress=False)
    assert (tmp_path / "q/checkpoints/4/_CHECKPOINT_METADATA").exists()
    with caplog.at_level(logging.WARNING):
        params = checkpoints.load_checkpoint_params(tmp_path / "q", 4, run.cfg)
    assert params["embed"]["embedding"].shape == (run.cfg.vocab_size,
                                                  run.cfg.d_model)
    assert not [r for r in caplog.records if "Metadata file does not exist" in r.getMessage()]
    assert not logging.getLogger("absl").filters  # the filter is gone after the read
