"""Several seeds in one training program (``train --seeds``): each seed equals its own
single-seed run, seed groups under a memory budget, the seed selector of model sources, per-seed
metrics, and checkpoints written before the seed axis existed.

Fixtures are tiny (llama2-tiny, d = 64, a 256-token BPE, 4 steps of 8 x 32 tokens) on the four
fake CPU devices of conftest.py, so two seeds train on a 2 x 2 ('seeds', 'data') mesh.
"""

import dataclasses
import json
import shutil
import sysconfig
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from bornbiased_jax.cli import main
from bornbiased_jax.errors import UserError
from bornbiased_jax.sources import init_params, load_source
from bornbiased_jax.training import checkpoints, run_folder
from bornbiased_jax.training.config import TrainConfig
from bornbiased_jax.training.loop import Run
from bornbiased_jax.training.seed_plan import plan_seed_groups
from bornbiased_jax.training.step import batch_sharding, training_mesh

STDLIB = Path(sysconfig.get_paths()["stdlib"])
TINY = dict(preset="llama2-tiny", seq_len=32, batch_size=8, vocab_size=256, warmup=1, steps=4,
            save_every=2, keep_last=5, eval_every=2, eval_batches=1, log_every=1)
SEEDS = (5, 7)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    for name in ["json/decoder.py", "json/encoder.py", "textwrap.py", "heapq.py", "bisect.py"]:
        shutil.copy(STDLIB / name, d / name.replace("/", "_"))
    return d


@pytest.fixture(scope="module")
def many(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "many"
    run = Run(TrainConfig(seeds=SEEDS, **TINY), [str(corpus)], out)
    run.train(progress=False)
    return out, run


@pytest.fixture(scope="module")
def single(corpus, tmp_path_factory):
    """The single-seed run of seed 7 on the same data."""
    out = tmp_path_factory.mktemp("runs") / "single"
    run = Run(TrainConfig(seed=7, **TINY), [str(corpus)], out)
    run.train(progress=False)
    return out, run


def leaves_equal(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def sum_order_rtol(run) -> float:
    """A float32 summation-order bound for comparing two computations of the same steps whose
    sums differ only in order (batched vs. unbatched matrix products, another split of the
    batch over devices). The longest sum in a step has n = max(B T, d_model, d_ff, V) terms
    (a weight gradient sums B T per-token terms; a matrix product sums d_model or d_ff; the
    softmax sums V); summed in another order it may differ by up to n u sum|terms|, u = 2^-24,
    and Adam's moments and the parameters inherit that relative error. Each leaf is compared
    to n u of its largest magnitude (as tests/test_train.py's data-parallel comparison)."""
    tc, cfg = run.tc, run.cfg
    n = max(tc.batch_size * tc.seq_len, cfg.d_model, cfg.d_ff, cfg.vocab_size)
    return n * 2.0**-24


def seed_state(state, index):
    """Seed ``index``'s parameters and AdamW moments (mu, nu) as host arrays."""
    adam = state["opt_state"][1][0]  # chain(clip, adamw): adamw's ScaleByAdamState
    tree = {"params": state["params"], "mu": adam.mu, "nu": adam.nu}
    return jax.tree.map(lambda x: np.asarray(x)[index], tree)


def assert_close(a, b, rtol):
    for (path, x), y in zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b)):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        err, scale = np.abs(x - y).max(), np.abs(x).max()
        assert err <= rtol * scale, (jax.tree_util.keystr(path), err, scale)


def assert_same_training(m, tc, mesh, shard, *steps):
    """Three steps of the four seeds of ``tc`` from their initialisation by each (step function,
    groups per step) of ``steps``: the same models within the summation-order bound."""
    from bornbiased_jax.training.step import init_state

    def train(step, n_groups):
        state = init_state(m.cfg, tc, m.optimizer, shardings=shard)
        for k in range(3):
            blocks = jax.device_put(m.batch(k * tc.batch_size), batch_sharding(mesh))
            for i in range(n_groups):
                state, _ = step(state, blocks, np.int32(i))
        return state

    a, b = (train(*s) for s in steps)
    assert int(a["step"]) == int(b["step"]) == 3
    for i in range(4):
        assert_close(seed_state(a, i), seed_state(b, i), sum_order_rtol(m))


# --- one program, many seeds ------------------------------------------------------------------
def test_each_seed_equals_its_single_seed_run(many, single):
    """Seed 7 of the two-seed run (a 2 x 2 mesh, the seeds vmapped) and the single-seed run of
    seed 7 (the 4 devices on data, the per-seed step unbatched): the same initialisation bit for
    bit, and after 4 steps the same parameters and Adam moments within the float32
    summation-order bound n u = 256 u = 1.5e-5 of each leaf's scale (measured: at most
    5.8e-7, about 10 u)."""
    (_, m), (_, s) = many, single
    assert dict(m.mesh.shape) == {"seeds": 2, "data": 2}
    assert dict(s.mesh.shape) == {"seeds": 1, "data": 4}
    assert m.plan.n_groups == 1 and int(m.state["step"]) == int(s.state["step"]) == 4
    assert m.tc.init_seeds == SEEDS and m.state["params"]["embed"]["embedding"].shape[0] == 2
    rtol = sum_order_rtol(s)
    got, want = seed_state(m.state, 1), seed_state(s.state, 0)
    assert_close(got, want, rtol)
    # Not vacuous: training moved the parameters far more than the tolerance, the moments are
    # not zero, and the two seeds are different models.
    init = init_params(s.cfg, 7)
    moved = max(float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())
                for a, b in zip(jax.tree.leaves(want["params"]), jax.tree.leaves(init)))
    assert moved > 100 * rtol
    assert all(float(np.abs(v).max()) > 0 for v in jax.tree.leaves(want["nu"]))
    other = seed_state(m.state, 0)["params"]["lm_head"]["kernel"]
    assert np.abs(other - got["params"]["lm_head"]["kernel"]).max() > 0.1
    # per-seed metrics: the same losses as the single-seed run's, in seed order
    mrec, srec = run_folder.read_metrics(many[0]), run_folder.read_metrics(single[0])
    assert [r["step"] for r in mrec] == [r["step"] for r in srec] == [1, 2, 3, 4]
    assert all(r["seeds"] == list(SEEDS) and len(r["loss"]) == 2 for r in mrec)
    np.testing.assert_allclose([r["loss"] for r in run_folder.seed_metrics(mrec, 1)],
                               [r["loss"] for r in srec], rtol=rtol)
    np.testing.assert_allclose(mrec[-1]["val_loss"][1], srec[-1]["val_loss"], rtol=rtol)
    assert run_folder.seed_metrics(srec, 0) == srec  # a single-seed run's records read as they are
    assert (many[0] / "loss_curve.png").stat().st_size > 0


@pytest.mark.slow
def test_fsdp_shards_every_seed_and_trains_the_same_models(many, corpus, tmp_path):
    """--fsdp with several seeds: on the 2 x 2 mesh each seed's matrices and Adam moments are
    split over the 'data' devices (not copied to both), the seed axis over 'seeds'; after the
    same 4 steps every seed's parameters and moments equal the data-parallel run's within the
    float32 summation-order bound (only where the sums run differs)."""
    _, m = many
    f = Run(TrainConfig(seeds=SEEDS, fsdp=True, **TINY), [str(corpus)], tmp_path / "fsdp")
    f.train(progress=False)
    assert dict(f.mesh.shape) == {"seeds": 2, "data": 2}
    w = max(jax.tree.leaves(f.state["params"]), key=lambda a: a.size)  # a (2, ...) matrix stack
    shard = w.addressable_shards[0].data.shape
    assert shard[0] == 1 and np.prod(shard) * 4 == w.size  # a quarter of the stack per device
    rtol = sum_order_rtol(m)
    for i in range(len(SEEDS)):
        assert_close(seed_state(f.state, i), seed_state(m.state, i), rtol)


def test_stop_at_then_resume_equals_the_uninterrupted_run(many, corpus, tmp_path):
    """--stop-at on a many-seed run stops after that step on the full schedule; the same run
    resumed (--stop-at may change between resumes) ends bitwise equal to the uninterrupted
    two-seed run: every seed's parameters and Adam moments, the step and the data position."""
    _, m = many
    out = tmp_path / "stopped"
    first = Run(TrainConfig(seeds=SEEDS, stop_at=2, **TINY), [str(corpus)], out)
    first.train(progress=False)
    assert int(first.state["step"]) == 2 and checkpoints.run_steps(out) == [2]
    resumed = Run(TrainConfig(seeds=SEEDS, **TINY), [str(corpus)], out)
    assert int(resumed.state["step"]) == 2
    resumed.train(progress=False)
    leaves_equal(resumed.state, m.state)


def test_initialisation_of_every_seed_is_its_presets(many):
    _, m = many
    from bornbiased_jax.training.step import init_state

    built = init_state(m.cfg, m.tc, m.optimizer)
    for i, seed in enumerate(SEEDS):
        leaves_equal(jax.tree.map(lambda x: x[i], built["params"]), init_params(m.cfg, seed))


@pytest.mark.slow
def test_seed_groups_follow_the_memory_budget(many):
    """Four seeds on a 2-device 'seeds' axis (2 per device): a budget that holds the state and
    one seed's working set per device (XLA's memory analysis of the compiled step) trains them
    in 2 groups of one seed per device, with the same results as all at once within the
    summation-order bound; a larger budget takes them at once; a smaller one is refused,
    naming how many seeds fit."""
    from bornbiased_jax.training.seed_plan import seed_group_size
    from bornbiased_jax.training.step import state_shardings

    _, m = many
    tc = dataclasses.replace(m.tc, seeds=(1, 3, 5, 7))
    mesh = training_mesh(4, jax.devices()[:2])
    shard = state_shardings(m.cfg, tc, m.optimizer, mesh)
    probe, step_all = plan_seed_groups(m.cfg, tc, m.optimizer, mesh, shard, budget=1 << 40)
    state_b, step_b = probe.state_bytes, probe.seed_step_bytes
    assert (probe.seeds_along, probe.group_size, probe.n_groups) == (2, 2, 1)
    assert seed_group_size(4, 2, state_b, step_b, state_b + 2 * step_b) == 2
    assert seed_group_size(4, 2, state_b, step_b, state_b + 2 * step_b - 1) == 1
    assert seed_group_size(4, 2, state_b, step_b, 1 << 40, most=1) == 1  # --seed-chunk 1
    with pytest.raises(UserError, match=r"4 seeds do not fit .* at most \d+ seeds fit"):
        seed_group_size(4, 2, state_b, step_b, state_b + step_b - 1)
    plan, step_one = plan_seed_groups(m.cfg, tc, m.optimizer, mesh, shard,
                                      budget=state_b + step_b)
    assert (plan.group_size, plan.n_groups) == (1, 2)

    assert_same_training(m, tc, mesh, shard, (step_all, 1), (step_one, 2))


@pytest.mark.slow
def test_map_over_seeds_trains_the_same_models_in_one_group(many):
    """Four seeds on one device along 'seeds': with seed batching 'map' the step loops over
    them inside one compiled call, so its working set is about one seed's (XLA's memory
    analysis: 5 % more here) and a budget of the state plus 1.1 seeds' working sets takes all
    four in one group, where vmap needs four groups; a budget of exactly one seed's leaves map
    one seed a group too; and the models equal vmap's within the summation-order bound. 'auto' is map on this CPU mesh, vmap once the seeds are spread
    over devices; 'map' over spread seeds is refused."""
    from bornbiased_jax.training.step import resolve_seed_batching, state_shardings

    _, m = many
    tc = dataclasses.replace(m.tc, seeds=(1, 3, 5, 7))
    mesh = training_mesh(4, jax.devices()[:1])
    shard = state_shardings(m.cfg, tc, m.optimizer, mesh)
    probe, _ = plan_seed_groups(m.cfg, tc, m.optimizer, mesh, shard, budget=1 << 40,
                                seed_batching="vmap")
    one = probe.state_bytes + probe.seed_step_bytes
    budget = probe.state_bytes + int(1.1 * probe.seed_step_bytes)
    vplan, vstep = plan_seed_groups(m.cfg, tc, m.optimizer, mesh, shard, budget=budget,
                                    seed_batching="vmap")
    mplan, mstep = plan_seed_groups(m.cfg, tc, m.optimizer, mesh, shard, budget=budget,
                                    seed_batching="map")
    assert (vplan.n_groups, vplan.batching) == (4, "vmap")
    assert (mplan.n_groups, mplan.group_size, mplan.batching) == (1, 4, "map")
    assert "map over seeds" in mplan.describe()
    tight, _ = plan_seed_groups(m.cfg, tc, m.optimizer, mesh, shard, budget=one,
                                seed_batching="map")
    assert (tight.n_groups, tight.group_size) == (4, 1)
    with pytest.raises(UserError, match=r"4 seeds do not fit"):
        plan_seed_groups(m.cfg, tc, m.optimizer, mesh, shard, budget=one - 1,
                         seed_batching="map")
    assert resolve_seed_batching("auto", mesh) == "map"
    assert resolve_seed_batching("auto", m.mesh) == "vmap"
    with pytest.raises(UserError, match="spreads them over 2 devices"):
        resolve_seed_batching("map", m.mesh)

    assert_same_training(m, tc, mesh, shard, (vstep, 4), (mstep, 1))


# --- model sources: PATH#SEED[@STEP] ------------------------------------------------------------
def test_seed_selector_loads_exactly_that_seed(many, single):
    out, m = many
    for i, seed in enumerate(SEEDS):
        src = load_source(f"{out}#{seed}")
        assert (src.kind, src.seed, src.step, src.label) == ("run", seed, 4, f"many#{seed}@4")
        leaves_equal(src.params, m.seed_params(i))
    at2 = load_source(f"{out}#7@2")
    saved = ocp.CheckpointManager((out / "checkpoints").absolute()).restore(2)
    leaves_equal(at2.params, jax.tree.map(lambda x: x[1], saved["params"]))
    leaves_equal(load_source(f"{out}#7@0").params, init_params(m.cfg, 7))
    # A single-seed run accepts its own seed as a selector, and its old spellings.
    sout, s = single
    leaves_equal(load_source(f"{sout}#7@4").params, load_source(str(sout)).params)
    leaves_equal(load_source(f"{sout}@4").params, s.seed_params())


@pytest.mark.parametrize("spec, match", [
    ("{out}", r"trained 2 seeds \(5, 7\); name one as"),
    ("{out}@4", r"trained 2 seeds"),
    ("{out}#6", r"has no seed 6; its seeds are 5, 7"),
    ("{out}#6@2", r"has no seed 6"),
    ("{out}#", r"bad seed selector '#'"),
    ("{out}#x", r"bad seed selector '#x'"),
    ("{out}#0:2", r"bad seed selector '#0:2'"),
    ("{out}#-1", r"bad seed selector"),
    ("{out}#7@3", r"no checkpoint at step 3"),
    ("#7", r"bad seed selector"),
])
def test_bad_seed_selectors(many, spec, match):
    out, _ = many
    with pytest.raises(UserError, match=match):
        load_source(spec.format(out=out))


def test_bad_selector_is_a_cli_error(many, tmp_path, capsys):
    out, _ = many
    rc = main(["fingerprint", f"{out}#5", f"{out}#6", "--out", str(tmp_path / "fp")])
    assert rc == 2 and "has no seed 6" in capsys.readouterr().err
    rc = main(["train", "--no-progress", "--preset", "llama2-tiny", "--corpus", "x",
               "--out", str(tmp_path / "t"), "--init-from", f"{out}#9"])
    assert rc == 2 and "has no seed 9" in capsys.readouterr().err


def test_refused_combinations(many, corpus, tmp_path, capsys):
    out, _ = many
    with pytest.raises(UserError, match="several seeds .* would train copies"):
        TrainConfig(seeds=(1, 2), init_from=f"{out}#5", **TINY)
    with pytest.raises(UserError, match="either seed .* or seeds"):
        TrainConfig(seed=3, seeds=(1, 2), **TINY)
    with pytest.raises(UserError, match="distinct"):
        TrainConfig(seeds=(1, 1), **TINY)
    assert TrainConfig(seeds=(4,), **TINY) == TrainConfig(seed=4, **TINY)  # one seed: that seed
    base = ["train", "--no-progress", "--preset", "llama2-tiny", "--corpus", str(corpus),
            "--seq-len", "32", "--batch-size", "8", "--bpe-vocab", "256", "--warmup", "1",
            "--steps", "4"]
    with pytest.raises(SystemExit) as e:  # argparse: an empty range
        main([*base, "--out", str(tmp_path / "a"), "--seeds", "3:3"])
    assert e.value.code == 2 and "empty" in capsys.readouterr().err
    # a resume must keep the seeds
    rc = main([*base, "--out", str(out), "--seeds", "5,8", "--save-every", "2", "--keep-last",
               "5", "--eval-every", "2", "--eval-batches", "1", "--log-every", "1"])
    assert rc == 2 and "'seeds': ([5, 7], [5, 8])" in capsys.readouterr().err
    # more seeds than the budget holds: refused before anything is written
    rc = main([*base, "--out", str(tmp_path / "b"), "--seeds", "0:2",
               "--memory-budget-gib", "0.0001"])
    assert rc == 2 and "at most" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


# --- checkpoints without a seed axis ------------------------------------------------------------
def _strip_seed_axis(folder: Path) -> None:
    """Rewrite every checkpoint of a single-seed run as the code before the seed axis wrote
    them: parameters and moments without the leading axis."""
    ck = (folder / "checkpoints").absolute()
    old = {step: ocp.CheckpointManager(ck).restore(step)
           for step in checkpoints.run_steps(folder)}
    shutil.rmtree(ck)
    mgr = ocp.CheckpointManager(ck, options=ocp.CheckpointManagerOptions(
        create=True, enable_async_checkpointing=False))
    for step, state in sorted(old.items()):
        state = {**state, "params": jax.tree.map(lambda x: x[0], state["params"]),
                 "opt_state": jax.tree.map(lambda x: x[0], state["opt_state"])}
        mgr.save(step, args=ocp.args.StandardSave(state))
        mgr.wait_until_finished()
    mgr.close()


@pytest.mark.slow
def test_checkpoints_without_a_seed_axis_load_and_resume(single, corpus, tmp_path):
    sout, s = single
    old = tmp_path / "old"
    shutil.copytree(sout, old)
    _strip_seed_axis(old)
    cfg, _ = run_folder.run_config(old)
    assert not checkpoints.checkpoint_has_seed_axis(old, 4, cfg)
    assert checkpoints.checkpoint_has_seed_axis(sout, 4, cfg)
    leaves_equal(load_source(str(old)).params, s.seed_params())
    leaves_equal(load_source(f"{old}#7@2").params, load_source(f"{sout}@2").params)
    # Resume from the old layout's step 2 and finish: bitwise the uninterrupted run.
    shutil.rmtree(old / "checkpoints" / "4")
    again = Run(s.tc, [str(corpus)], old)
    assert int(again.state["step"]) == 2
    again.train(progress=False)
    leaves_equal(again.state, s.state)
    info = json.loads((old / "run.json").read_text())
    del info["train_config"]["seeds"]  # run.json of a run made before seeds existed
    (old / "run.json").write_text(json.dumps(info))
    assert run_folder.finished(old, s.tc)
