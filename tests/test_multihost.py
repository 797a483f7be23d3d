"""Multi-process runs: two real local processes (JAX's multi-controller runtime on CPU, gloo
collectives, a coordinator on localhost, 2 fake devices each) against one process with 4 devices.

One launch of two processes runs the real CLI's sweep, the fingerprint's null of fresh
initialisations (``init_features``, the sweep engine under ``bornbiased fingerprint``), and a
short FSDP training run with the real CLI, and reports which seeds each process built; the
tests below compare its outputs with the same work done here, in one process. Tolerances:

* sweep and fingerprint nulls: bitwise. Each device runs the same compiled per-seed program on
  the same seeds in both layouts (a 4-device mesh either way); nothing is summed across devices.
* training: not bitwise. The gradient is a mean over B x T = 8 x 16 = 128 token terms whose
  partial sums live on 4 devices; gloo's cross-process reduction adds them in another order
  than XLA's in-process one. Each step's loss and gradient may then differ by n u = 128 x 2^-24
  = 7.6e-6 relative (the deterministic bound for a float32 sum of n terms), and Adam's moments
  and the parameters inherit that; measured: 4.7e-7 after 4 steps. The comparison is per leaf
  against its largest magnitude (as in test_train.py).
"""

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from bornbiased_jax import distributed
from bornbiased_jax.cli import main
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
STDLIB = Path(sysconfig.get_paths()["stdlib"])
# The launch took 35 s (66 s of CPU time in its two processes) on the idle 2-core machine; the
# bound leaves room for a machine shared with other jobs (it took 6 min under a load of 9).
TIMEOUT_S = 600


def _gloo_available() -> bool:
    try:
        from jax._src.lib import _jax
    except ImportError:
        return False
    return hasattr(_jax, "make_gloo_tcp_collectives")


needs_gloo = pytest.mark.skipif(not _gloo_available(),
                                reason="this jaxlib has no gloo CPU collectives")

NULL_SEEDS = [1_000_000, 1_000_001, 1_000_002, 1_000_003]  # as the fingerprint's nulls
SWEEP = ["sweep", "--preset", "gpt2-rope-tiny", "--seeds", "0:5", "--seq-len", "16",
         "--num-seqs", "12", "--seq-chunk", "12", "--seq-batch", "12", "--no-progress"]
TRAIN = ["train", "--preset", "llama2-tiny", "--seq-len", "16", "--batch-size", "8",
         "--bpe-vocab", "256", "--steps", "6", "--warmup", "1", "--save-every", "2",
         "--eval-every", "2", "--eval-batches", "1", "--log-every", "1", "--no-progress",
         "--fsdp"]
B_T = 8 * 16
SUM_ORDER_RTOL = B_T * 2.0**-24


def null_features():
    """(4, n, d) features of 4 fresh initialisations on 8 Gaussian inputs: the fingerprint's
    calibrated null, built by the sweep engine (sizes given, so nothing is measured)."""
    from bornbiased_jax.fingerprint.runner.features import init_features
    from bornbiased_jax.probes.inputs import probe_inputs

    cfg = dataclasses.replace(get_preset("gpt2-rope-tiny"), shared_embedding=False)
    xs = probe_inputs("gaussian", cfg, 8, 16)
    return cfg, np.stack([F for _, F in init_features(cfg, NULL_SEEDS, xs, seq_chunk=8,
                                                      seq_batch=8)])


# One process of the pair: the CLI commands given as JSON, the fingerprint's null (saved by
# process 0), then which seeds' keys this process's devices hold in that sweep and which
# collectives its compiled call contains.
WORKER = r"""
import json, re, sys
import jax, numpy as np
from bornbiased_jax import cli, sweep
from bornbiased_jax.keys import seed_keys
from bornbiased_jax.probes.outputs import feature_probe
from tests.test_multihost import NULL_SEEDS, null_features
jobs, out = json.loads(sys.argv[1]), sys.argv[2]
if cli.main(jobs[0]):
    sys.exit(1)
cfg, F = null_features()
if jax.process_index() == 0:
    np.save(out, F)
plan = sweep.plan_sweep(cfg, 4, 8, 16, seed_chunk=4, seq_chunk=8, seq_batch=8)
# The keys each process's devices hold, and the collectives of the compiled call (none: each
# process builds the models of its own seeds only, inside the call).
compiled = sweep._compiled(cfg, feature_probe(cfg), plan, tuple(jax.devices()))
keys = compiled.place_keys(seed_keys(NULL_SEEDS))
placed = jax.random.key_data(keys)  # (4 seeds, 2)
seeds = sorted(int(np.asarray(s.data)[0, 1]) for s in placed.addressable_shards)
rows = sorted({s.index[0].indices(4)[:2] for s in placed.addressable_shards})
xs = jax.ShapeDtypeStruct((8, 16, cfg.d_model), np.float32, sharding=compiled.seqs_sharding)
call = compiled.run_many.lower(keys, compiled.shared_params, xs).compile()
moves = sorted(set(re.findall(r"all-gather|all-reduce|all-to-all|collective-permute",
                              call.as_text())))
print("OWNED " + json.dumps({"process": jax.process_index(), "seeds": seeds, "rows": rows,
                             "addressable": placed.is_fully_addressable,
                             "collectives": moves}), flush=True)
sys.exit(cli.main(jobs[1]))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(devices: int) -> dict:
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    env.update(XLA_FLAGS=" ".join(flags + [f"--xla_force_host_platform_device_count={devices}"]),
               JAX_PLATFORMS="cpu", JAX_CPU_COLLECTIVES_IMPLEMENTATION="gloo",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    return env


def run_two_processes(jobs: list[list[str]], out: Path, timeout_s: float = TIMEOUT_S):
    """Start processes 0 and 1 of a 2-process run (2 CPU devices each) running WORKER with
    ``jobs`` (a sweep and a train command) and output file ``out``; returns their
    (returncode, output) after both exit; kills both after ``timeout_s``."""
    port = _free_port()
    procs = []
    for pid in (0, 1):
        flags = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
                 "--process-id", str(pid), "--init-timeout", "60"]
        argv = json.dumps([job + flags for job in jobs])
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER, argv, str(out)], cwd=ROOT,
                                      env=_env(2), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + timeout_s
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            outs.append((p.returncode, out))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()  # SIGKILL: JAX's preemption notifier catches SIGTERM
        logs = [p.communicate()[0][-3000:] for p in procs]
        pytest.fail(f"the two processes did not finish within {timeout_s} s:\n" + "\n".join(logs))
    return outs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    for name in ["json/decoder.py", "json/encoder.py", "textwrap.py", "heapq.py"]:
        shutil.copy(STDLIB / name, d / name.replace("/", "_"))
    return d


@pytest.fixture(scope="module")
def two(tmp_path_factory, corpus):
    """Outputs of the commands run by 2 processes x 2 devices."""
    out = tmp_path_factory.mktemp("two")
    jobs = [SWEEP + ["--out", str(out / "sweep")],
            TRAIN + ["--corpus", str(corpus), "--out", str(out / "train"), "--stop-at", "4"]]
    t0 = time.monotonic()
    results = run_two_processes(jobs, out / "null_features.npy")
    for rc, log in results:
        assert rc == 0, log[-4000:]
    return {"dir": out, "logs": [log for _, log in results], "wall_s": time.monotonic() - t0}


@pytest.fixture(scope="module")
def one(tmp_path_factory, corpus):
    """The same commands in this process (1 process x 4 devices); training runs all 6 steps."""
    out = tmp_path_factory.mktemp("one")
    assert main(SWEEP + ["--out", str(out / "sweep")]) == 0
    np.save(out / "null_features.npy", null_features()[1])
    assert main(TRAIN + ["--corpus", str(corpus), "--out", str(out / "train")]) == 0
    return out


def _records(path):
    return json.loads(Path(path).read_text())["records"]


def _owned(log: str) -> dict:
    return json.loads(next(ln for ln in log.splitlines() if ln.startswith("OWNED "))[6:])


@pytest.mark.slow
@needs_gloo
def test_sweep_and_fingerprint_nulls_over_two_processes_equal_one_process(one, two):
    assert len(jax.devices()) == 4  # the one-process reference has as many devices as the pair
    got = _records(two["dir"] / "sweep/token_preference.json")
    assert got == _records(one / "sweep/token_preference.json") and len(got) == 5
    F2, F1 = np.load(two["dir"] / "null_features.npy"), np.load(one / "null_features.npy")
    assert F2.shape == (4, 8, 64)
    np.testing.assert_array_equal(F2, F1)  # bitwise
    assert np.abs(F1[0] - F1[1]).max() > 0.1  # four different models
    # Written once, by process 0; each process built only its own 2 of the 4 seeds.
    assert "wrote" in two["logs"][0] and "wrote" not in two["logs"][1]
    owned = [_owned(log) for log in two["logs"]]
    assert [o["seeds"] for o in owned] == [NULL_SEEDS[:2], NULL_SEEDS[2:]]
    assert [o["rows"] for o in owned] == [[[0, 1], [1, 2]], [[2, 3], [3, 4]]]
    assert not any(o["addressable"] for o in owned)
    # and the compiled call moves nothing between devices: no process gathers others' keys
    assert [o["collectives"] for o in owned] == [[], []]


def _checkpoint(run_dir: Path, step: int) -> dict:
    """A checkpoint's state on one device of this process, whatever wrote it."""
    path = run_dir / "checkpoints" / str(step) / "default"
    ck = ocp.StandardCheckpointer()
    meta = ck.metadata(path)
    meta = getattr(getattr(meta, "item_metadata", meta), "tree", meta)
    here = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    target = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=here), meta)
    return jax.tree.map(np.asarray, ck.restore(path, target))


def _assert_close(a: dict, b: dict, rtol: float):
    for path, x in jax.tree_util.tree_leaves_with_path(a):
        y = b
        for k in path:
            y = y[k.key] if hasattr(k, "key") else y[k.idx]
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        assert np.abs(x - y).max() <= rtol * np.abs(x).max(), jax.tree_util.keystr(path)


def _losses(run_dir: Path, upto: int):
    recs = [json.loads(ln) for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r["loss"] for r in recs if r["step"] <= upto]


@pytest.mark.slow
@needs_gloo
def test_training_over_two_processes_equals_one_process(two, one):
    r2, r1 = two["dir"] / "train", one / "train"
    assert (r2 / "tokenizer.json").read_text() == (r1 / "tokenizer.json").read_text()
    assert json.loads((r2 / "run.json").read_text())["data"] == json.loads(
        (r1 / "run.json").read_text())["data"]
    assert sorted(p.name for p in (r2 / "checkpoints").iterdir()) == ["2", "4"]
    np.testing.assert_allclose(_losses(r2, 4), _losses(r1, 4), rtol=SUM_ORDER_RTOL)
    s2, s1 = _checkpoint(r2, 4), _checkpoint(r1, 4)
    assert int(s2["step"]) == 4 and int(s2["data_position"]) == 4 * 8
    _assert_close(s2, s1, SUM_ORDER_RTOL)
    # Not vacuous: steps 3-4 moved the weights far more than the tolerance.
    before = _checkpoint(r1, 2)["params"]["layers_0"]["mlp"]["up_proj"]["kernel"]
    after = s1["params"]["layers_0"]["mlp"]["up_proj"]["kernel"]
    assert np.abs(after - before).max() > 100 * SUM_ORDER_RTOL * np.abs(before).max()
    assert "wrote" in two["logs"][0] and "wrote" not in two["logs"][1]


@pytest.mark.slow
@needs_gloo
def test_checkpoint_of_two_processes_resumes_in_one(two, one, corpus, tmp_path):
    """The FSDP checkpoint written by 2 processes (each its own shards) is restored here, in one
    process, with the state replicated instead, and training continues to step 6."""
    from bornbiased_jax.training.config import TrainConfig
    from bornbiased_jax.training.loop import Run

    run_dir = tmp_path / "resumed"
    shutil.copytree(two["dir"] / "train", run_dir)
    tc = TrainConfig(preset="llama2-tiny", seq_len=16, batch_size=8, vocab_size=256, steps=6,
                     warmup=1, save_every=2, eval_every=2, eval_batches=1, log_every=1)
    run = Run(tc, [str(corpus)], run_dir, require_resume=True)  # fsdp off: another layout
    restored, saved = jax.tree.leaves(run.state), jax.tree.leaves(_checkpoint(run_dir, 4))
    assert len(restored) == len(saved) and int(run.state["step"]) == 4
    for a, b in zip(restored, saved):  # bitwise the state the two processes wrote
        np.testing.assert_array_equal(np.asarray(a), b)
    run.train(progress=False)
    assert int(run.state["step"]) == 6
    _assert_close(_checkpoint(run_dir, 6), _checkpoint(one / "train", 6), SUM_ORDER_RTOL)
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(ln)["step"] for ln in lines] == [1, 2, 3, 4, 5, 6]


def test_fsdp_shards_the_large_presets_state_over_the_mesh():
    """gpt2-rope-1.2b's parameters and AdamW moments per device, from shapes alone
    (``jax.eval_shape``; nothing is allocated) on abstract meshes of 1-8 devices."""
    from jax.sharding import AbstractMesh, Mesh

    from bornbiased_jax import sharding
    from bornbiased_jax.training.config import TrainConfig, model_config
    from bornbiased_jax.training.optimizer import make_optimizer
    from bornbiased_jax.training.step import init_state, state_shardings

    tc = TrainConfig(preset="gpt2-rope-1.2b", fsdp=True)
    cfg = model_config(tc, get_preset("gpt2-rope-1.2b").vocab_size)
    opt = make_optimizer(tc)
    shapes = jax.eval_shape(lambda: init_state(cfg, tc, opt))
    whole = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes))
    assert whole > 15e9  # params + 2 moments of 1.3 B float32 numbers: no 8 GB device holds it
    per_device = {}
    for n in (1, 2, 4, 8):
        mesh = AbstractMesh((n,), ("data",))
        shard = state_shardings(cfg, tc, opt, mesh)
        per_device[n] = sharding.bytes_per_device(shapes, shard)
        # Every matrix (behind the seed axis, of one here) is split n ways along d_model;
        # only norms and biases (vectors) stay whole, and Adam's moments are laid out as their
        # parameters.
        leaves = jax.tree.leaves(shapes["params"])
        expect = sum(x.size * 4 // (n if x.ndim == 3 else 1) for x in leaves)
        assert sharding.bytes_per_device(shapes["params"], shard["params"]) == expect
        assert sum(x.size * 4 for x in leaves if x.ndim < 3) < 1e-3 * whole
        dp = state_shardings(cfg, dataclasses.replace(tc, fsdp=False), opt, mesh)
        assert sharding.bytes_per_device(shapes, dp) == whole  # data parallel: all on each
    assert per_device[1] == whole
    assert per_device[1] > per_device[2] > per_device[4] > per_device[8]
    assert per_device[8] < 1.01 * whole / 8  # 15.7 GB -> under 2 GB per device
    # The abstract mesh lays out as the real 4 fake devices of this process do.
    real = Mesh(np.asarray(jax.devices()), ("data",))
    assert sharding.bytes_per_device(shapes, state_shardings(cfg, tc, opt, real)) == per_device[4]


def test_logical_axes_name_every_matrix():
    from bornbiased_jax import model, sharding

    cfg = get_preset("llama2-tiny").ablate(attn_output_gate=True, tie_embeddings=False)
    shapes = jax.eval_shape(lambda k: model.init(cfg, k), jax.random.key(0))
    for path, x in jax.tree_util.tree_leaves_with_path(shapes):
        names = sharding.logical_axes(path, x.ndim)
        assert len(names) == x.ndim
        if x.ndim == 2:
            assert "embed" in names, jax.tree_util.keystr(path)  # FSDP splits every matrix


def test_unreachable_coordinator_is_a_clear_error(tmp_path, capsys):
    port = _free_port()  # nothing listens there
    t0 = time.monotonic()
    rc = main(SWEEP + ["--out", str(tmp_path / "o"), "--coordinator", f"127.0.0.1:{port}",
                       "--num-processes", "2", "--process-id", "1", "--init-timeout", "1.5"])
    assert rc == 2 and time.monotonic() - t0 < 30
    err = capsys.readouterr().err
    assert f"the coordinator 127.0.0.1:{port} did not answer within 1.5 s" in err
    assert not (tmp_path / "o").exists()


def test_batch_that_does_not_split_over_the_processes_is_rejected_before_any_work(
        corpus, tmp_path, capsys):
    port = _free_port()  # were the check skipped, joining would fail with another message
    rc = main(TRAIN + ["--corpus", str(corpus), "--out", str(tmp_path / "r"), "--batch-size",
                       "9", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
                       "--process-id", "1", "--init-timeout", "1"])
    assert rc == 2
    assert "the micro-batch 9 (batch_size / grad_accum) does not split over 2 processes" in (
        capsys.readouterr().err)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("flags, message", [
    (dict(coordinator="h:1"), "needs all three"),
    (dict(coordinator="h", num_processes=2, process_id=0), "is not HOST:PORT"),
    (dict(coordinator="h:99999", num_processes=2, process_id=0), "is not HOST:PORT"),
    (dict(coordinator="h:1", num_processes=2, process_id=2), "--process-id must lie in [0, 2)"),
    (dict(coordinator="h:1", num_processes=0, process_id=0), "--num-processes must be >= 1"),
])
def test_bad_launch_flags(flags, message):
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace(")", r"\)")):
        distributed.resolve(**flags)


def test_launch_comes_from_flags_or_a_detected_cluster(monkeypatch):
    for var in ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID",
                "SLURM_LOCALID", "OMPI_MCA_orte_hnp_uri", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(var, raising=False)
    assert distributed.resolve() is None  # a plain single-process run
    assert distributed.resolve("h:1", 1, 0) is None  # one process needs no runtime
    assert distributed.resolve("[::1]:5", 3, 2) == distributed.Launch(3, 2, "[::1]:5", "flags")
    slurm = dict(SLURM_JOB_ID="7", SLURM_STEP_NODELIST="node[001-002]", SLURM_PROCID="1",
                 SLURM_LOCALID="0")
    for k, v in slurm.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("SLURM_NTASKS", "1")
    assert distributed.resolve() is None  # a one-task job step runs alone
    monkeypatch.setenv("SLURM_NTASKS", "4")
    assert distributed.resolve() == distributed.Launch(4, None, None, "slurm")
