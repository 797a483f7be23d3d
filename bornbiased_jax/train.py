"""Pretraining: AdamW per Table 14, Orbax checkpoints, deterministic resume, data parallelism,
and several initialisation seeds in one program.

A run lives in one folder (run.json, tokenizer.json, checkpoints/, metrics.jsonl,
loss_curve.png; ``bornbiased_jax.runs`` owns the layout and reads it back).

Resuming (run the same command again) restores the latest *complete* checkpoint (Orbax writes
into a temporary folder and renames it when finished) and continues with exactly the batches an
uninterrupted run would have seen, so final parameters are bitwise equal.

The learning-rate schedule spans ``steps`` (linear warmup, then cosine decay to ``min_lr`` at
``steps``, Table 14; or linear decay, ``schedule="linear"``, as the lineage models' code),
so ``steps`` is part of the run's identity: resuming with another ``steps`` would reshape the
schedule mid-run and match no uninterrupted run, and is an error. To stop early and continue
later on the same schedule, use ``stop_at`` (``--stop-at``), which may differ between resumes.

Seeds. A run trains S initialisation seeds (``TrainConfig.init_seeds``; S = 1 for a
single-seed run) with one jitted step: parameters and Adam moments carry a leading seed axis,
and the per-seed step (gradient, clipping, AdamW) is vmapped over it, every seed on the same
batch. The seed axis is split over a ``seeds`` axis of the device mesh (as many devices as
divide both S and the device count), the batch over the remaining ``data`` devices
(:func:`training_mesh`). When S seeds' working sets do not fit the memory budget at once, each
step runs the seeds in groups, one after another, from the one compiled program
(:func:`plan_seed_groups`); where even the seeds' state does not fit, the run is refused with
the number of seeds that would. A seed's numbers do not depend on the other seeds; with
groups of more than one seed they depend on the group size only through the summation order
of XLA's batched matrix products (float32 rounding), and a group of one runs the per-seed step
unbatched, exactly as a single-seed run.

Across processes (``bornbiased_jax.distributed``: one process per host, started with the same
command) the mesh spans every process's devices; each process loads only its own rows of each
batch (``jax.make_array_from_process_local_data``), all processes write their shards of each
checkpoint through Orbax (``--out`` must be a folder every host sees), and process 0 alone
writes run.json, the tokenizer, metrics and plots. The state is saved without its layout, so a
run resumes with another number of processes or devices, or with ``fsdp`` switched, from the
same state. ``fsdp`` shards parameters and Adam moments over the ``data`` devices
(``sharding.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from tqdm.auto import tqdm

from bornbiased_jax import bigram_backcopy, data, distributed, files, model, runs, sharding
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_keys
from bornbiased_jax.runs import TrainConfig, model_config
from bornbiased_jax.sources import load_source


def lr_schedule(tc: TrainConfig) -> optax.Schedule:
    """Linear warmup from 0 to ``lr`` over ``warmup`` steps, then decay to ``min_lr`` at step
    ``steps``: cosine (Table 14) or linear (HF's ``get_linear_schedule_with_warmup`` with
    ``min_lr`` 0, which the lineage models' released code uses); or, ``schedule="constant"``,
    ``lr`` from the end of the warmup on (``min_lr`` unused)."""
    if tc.schedule == "cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0, peak_value=tc.lr, warmup_steps=tc.warmup, decay_steps=tc.steps,
            end_value=tc.min_lr)
    if tc.schedule == "constant":
        return optax.join_schedules(
            [optax.linear_schedule(0.0, tc.lr, tc.warmup), optax.constant_schedule(tc.lr)],
            [tc.warmup])
    return optax.join_schedules(
        [optax.linear_schedule(0.0, tc.lr, tc.warmup),
         optax.linear_schedule(tc.lr, tc.min_lr, tc.steps - tc.warmup)], [tc.warmup])


def make_optimizer(tc: TrainConfig) -> optax.GradientTransformation:
    """Clip to global norm 1.0, AdamW(0.9, 0.95), wd 0.1 on matrices only, warmup + decay
    (:func:`lr_schedule`).

    Norm scales are not decayed, including head-wise RMSNorm's gamma, a matrix (H, K)."""
    schedule = lr_schedule(tc)
    decay_mask = lambda params: jax.tree_util.tree_map_with_path(  # noqa: E731
        lambda path, p: p.ndim >= 2 and getattr(path[-1], "key", None) != "scale", params)
    return optax.chain(
        optax.clip_by_global_norm(tc.grad_clip),
        optax.adamw(schedule, b1=tc.b1, b2=tc.b2, eps=1e-8, weight_decay=tc.weight_decay,
                    mask=decay_mask))


def loss_fn(params, cfg: ModelConfig, blocks_BT1: jax.Array, bf16: bool) -> jax.Array:
    """Mean next-token cross-entropy over all positions of a batch of T + 1 token blocks."""
    if bf16:
        params = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
    logits = jax.vmap(lambda t: model.forward(params, cfg, t).logits)(blocks_BT1[:, :-1])
    return optax.softmax_cross_entropy_with_integer_labels(
        logits.astype(jnp.float32), blocks_BT1[:, 1:]).mean()


def init_state(cfg: ModelConfig, tc: TrainConfig, optimizer, params=None,
               shardings=None) -> dict:
    """Parameters of each seed of ``tc.init_seeds`` (or the given ``params``, e.g. a source
    model's, for a single-seed run), fresh Adam moments, stacked along a leading seed axis;
    step 0 and data position 0, shared. Training uses no randomness beyond these: the data
    order is a function of ``data_seed`` and the position (``data.batch_indices``), so the
    state holds no RNG key. With ``shardings`` (:func:`state_shardings`) each device builds
    only its own pieces (the same values as built whole)."""
    def build(keys, params):
        if params is None:
            params = jax.vmap(lambda k: model.init(cfg, k))(keys)
        return {"params": params, "opt_state": jax.vmap(optimizer.init)(params),
                "step": jnp.zeros((), jnp.int32), "data_position": jnp.zeros((), jnp.int32)}

    keys = seed_keys(tc.init_seeds)
    if params is not None:  # one seed, from host arrays every process holds
        params = jax.tree.map(lambda a: np.asarray(a, np.float32)[None], params)
        if shardings is not None:
            params = jax.tree.map(distributed.global_array, params, shardings["params"])
    if shardings is None:
        return jax.jit(build)(keys, params)
    return jax.jit(build, out_shardings=shardings)(keys, params)


def training_mesh(n_seeds: int, devices=None) -> Mesh:
    """The ('seeds', 'data') mesh: the seeds over as many devices as divide both the seed and
    the device count, the batch over the rest (one seed: every device on 'data')."""
    devices = np.asarray(jax.devices() if devices is None else devices)
    along_seeds = math.gcd(n_seeds, devices.size)
    return Mesh(devices.reshape(along_seeds, devices.size // along_seeds), ("seeds", "data"))


@functools.lru_cache(maxsize=8)
def _one_seed_state_shapes(cfg: ModelConfig, tc: TrainConfig, optimizer) -> dict:
    """Shapes of one seed's training state, without the seed axis. Traced once per settings and
    optimiser (tracing a 1.2B-parameter model's state takes seconds; laying it out over several
    meshes needs it each time)."""
    one = jax.eval_shape(lambda: init_state(cfg, tc, optimizer))
    return {**one, **jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype),
                                  {"params": one["params"], "opt_state": one["opt_state"]})}


def state_shardings(cfg: ModelConfig, tc: TrainConfig, optimizer, mesh: Mesh) -> dict:
    """Shardings of the stacked training state: each seed's parameters and moments laid out by
    the rules (data parallel or FSDP over 'data'), their seed axis over 'seeds'; the shared
    step and data position replicated."""
    one = _one_seed_state_shapes(cfg, dataclasses.replace(tc, seeds=(), seed=0), optimizer)
    per_seed = sharding.state_shardings(
        one, optimizer, mesh, sharding.RULES_FSDP if tc.fsdp else sharding.RULES_DATA_PARALLEL)
    return {**per_seed, "params": sharding.with_seed_axis(per_seed["params"]),
            "opt_state": sharding.with_seed_axis(per_seed["opt_state"])}


def _seeds_along(mesh: Mesh) -> int:
    return mesh.shape["seeds"] if "seeds" in mesh.axis_names else 1


def group_order(n_seeds: int, mesh: Mesh, group_size: int) -> list[np.ndarray]:
    """The seed positions (indices into ``init_seeds``) that each group of a step trains, in
    the order its metrics come back: with d devices along 'seeds', each holding n_seeds / d
    consecutive seeds, group i takes seeds [i g, (i + 1) g) of every device's share."""
    d = _seeds_along(mesh)
    per = n_seeds // d
    return [np.asarray([k * per + i * group_size + j for k in range(d)
                        for j in range(group_size)]) for i in range(per // group_size)]


def make_train_step(cfg: ModelConfig, tc: TrainConfig, optimizer, mesh: Mesh,
                    state_sharding=None, group_size: int | None = None):
    """(state, blocks (A, B/A, T+1), group) -> (state, metrics): one optimiser step of the
    seeds of group ``group`` (:func:`group_order`; ``group_size`` seeds of each device's
    share, default all of them). Gradients are averaged over the A micro-batches by a scan;
    the micro-batch axis B/A is sharded over the mesh's 'data' axis; the state is laid out
    as ``state_sharding`` (default :func:`state_shardings`), and is donated: the group's
    seeds are updated in place. Step and data position advance with the last group. Metrics
    ('loss', 'grad_norm') hold one number per seed of the group."""
    n_seeds = len(tc.init_seeds)
    along = _seeds_along(mesh)
    per = n_seeds // along
    g = per if group_size is None else group_size
    if n_seeds % along or per % g:
        raise ValueError(f"{n_seeds} seeds do not split into groups of {g} per device over "
                         f"{along} devices")
    n_groups = per // g
    grad = jax.value_and_grad(loss_fn)
    if state_sharding is None:
        state_sharding = state_shardings(cfg, tc, optimizer, mesh)

    def one_seed(params, opt_state, blocks_ABT1):
        def micro(acc, blk):
            loss, grads = grad(params, cfg, blk, tc.bf16)
            return jax.tree.map(jnp.add, acc, (loss, grads)), None

        zero = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params))
        (loss, grads), _ = jax.lax.scan(micro, zero, blocks_ABT1)
        loss, grads = jax.tree.map(lambda x: x / tc.grad_accum, (loss, grads))
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state,
                {"loss": loss, "grad_norm": optax.tree.norm(grads)})

    if g * along == 1:  # one seed at a time: the per-seed step itself, not a batch of one
        def seeds_step(params, opt_state, blocks):
            out = one_seed(*jax.tree.map(lambda x: x[0], (params, opt_state)), blocks)
            return jax.tree.map(lambda x: x[None], out)
    else:
        seeds_step = jax.vmap(one_seed, in_axes=(0, 0, None))

    def take(x, where, group):  # (S, ...) -> this group's (along * g, ...)
        x = x.reshape(along, per, *x.shape[1:])
        x = jax.lax.dynamic_slice_in_dim(x, group * g, g, axis=1)
        return jax.lax.with_sharding_constraint(x.reshape(along * g, *x.shape[2:]), where)

    def put(x, y, group):
        y = y.reshape(along, g, *y.shape[1:])
        x = jax.lax.dynamic_update_slice_in_dim(x.reshape(along, per, *x.shape[1:]), y,
                                                group * g, axis=1)
        return x.reshape(n_seeds, *x.shape[2:])

    def step(state, blocks_ABT1, group):
        mine = {k: jax.tree.map(lambda x, w: take(x, w, group), state[k], state_sharding[k])
                for k in ("params", "opt_state")}
        params, opt_state, metrics = seeds_step(mine["params"], mine["opt_state"], blocks_ABT1)
        last = (group == n_groups - 1).astype(jnp.int32)
        new = {"params": jax.tree.map(lambda x, y: put(x, y, group), state["params"], params),
               "opt_state": jax.tree.map(lambda x, y: put(x, y, group), state["opt_state"],
                                         opt_state),
               "step": state["step"] + last,
               "data_position": state["data_position"] + last * tc.batch_size}
        return new, metrics

    replicated = NamedSharding(mesh, P())
    return jax.jit(step, in_shardings=(state_sharding, batch_sharding(mesh), replicated),
                   out_shardings=(state_sharding, replicated), donate_argnums=0)


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Blocks (A, B/A, T+1): the micro-batch rows over the 'data' devices (every seed's devices
    hold the same rows)."""
    return NamedSharding(mesh, P(None, "data", None))


def make_eval(cfg: ModelConfig, tc: TrainConfig):
    """(params with a seed axis, blocks) -> the mean loss of each seed on the blocks."""
    return jax.jit(jax.vmap(lambda params, blocks: loss_fn(params, cfg, blocks, tc.bf16),
                            in_axes=(0, None)))


# --- memory ------------------------------------------------------------------------------------
def default_memory_budget(devices) -> int:
    """Bytes of one device that training may plan for: 90 % of an accelerator's memory (the
    bytes XLA's allocator may use); on a CPU a quarter of the host's memory, shared by this
    process's CPU devices (``--memory-budget`` sets it)."""
    dev = devices[0]
    stats = dev.memory_stats() if dev.platform != "cpu" else None
    if stats and "bytes_limit" in stats:
        return int(0.9 * stats["bytes_limit"])
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return host // 4 // len(devices)


@dataclasses.dataclass(frozen=True)
class SeedPlan:
    """How a step trains the seeds: ``group_size`` seeds of each device's share at a time
    (``n_groups`` groups per step), from XLA's memory analysis of the compiled step."""

    n_seeds: int
    seeds_along: int  # devices along the mesh's 'seeds' axis
    group_size: int
    budget: int | None  # bytes per device; None: not planned (one seed, or no statistics)
    state_bytes: int | None  # the whole state's bytes per device
    seed_step_bytes: int | None  # one seed's working set in a step, per device

    @property
    def n_groups(self) -> int:
        return self.n_seeds // self.seeds_along // self.group_size

    def describe(self) -> str:
        if self.n_groups == 1:
            return f"{self.n_seeds} seed(s) in one program"
        return (f"{self.n_seeds} seeds in {self.n_groups} groups of "
                f"{self.group_size * self.seeds_along} per step (memory budget "
                f"{self.budget / 2**30:.1f} GiB per device)")


def _compiled_bytes(compiled) -> tuple[int, int] | None:
    """(arguments + outputs not aliased to them, temporaries) of a compiled step, per device."""
    stats = compiled.memory_analysis()
    if stats is None:
        return None
    io_bytes = (stats.argument_size_in_bytes + stats.output_size_in_bytes
                - stats.alias_size_in_bytes)
    return int(io_bytes), int(stats.temp_size_in_bytes)


def plan_seed_groups(cfg, tc, optimizer, mesh, state_sharding, budget: int | None = None,
                     most: int | None = None):
    """(SeedPlan, the step for it). One seed: no plan. Several: the step is compiled
    for groups of one seed per device, and XLA's memory analysis of it gives the whole state
    (every seed's parameters and moments, resident throughout) and one seed's working set of
    a step (its activations, gradients and their scratch) per device; :func:`seed_group_size`
    chooses the group, of at most ``most`` seeds per device when given (``--seed-group``). A
    UserError, before any training, if even one seed per device at a time does not fit."""
    n = len(tc.init_seeds)
    along = _seeds_along(mesh)
    shapes = jax.eval_shape(lambda: init_state(cfg, tc, optimizer))
    abstract = (jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                             shapes, state_sharding),
                jax.ShapeDtypeStruct((tc.grad_accum, tc.batch_size // tc.grad_accum,
                                      tc.seq_len + 1), jnp.int32, sharding=batch_sharding(mesh)),
                jax.ShapeDtypeStruct((), jnp.int32, sharding=NamedSharding(mesh, P())))

    def compile_for(g):
        return make_train_step(cfg, tc, optimizer, mesh, state_sharding, g).lower(
            *abstract).compile()

    if n == 1:  # nothing to plan: compiled at its first call
        return (SeedPlan(n, along, 1, None, None, None),
                make_train_step(cfg, tc, optimizer, mesh, state_sharding, 1))
    one = compile_for(1)
    budget = budget or default_memory_budget(mesh.devices.ravel())
    sizes = _compiled_bytes(one)
    if sizes is None:  # the backend gives no statistics: unplanned, as many as allowed
        per = n // along
        g = max(d for d in range(1, min(per, most or per) + 1) if per % d == 0)
        return SeedPlan(n, along, g, None, None, None), (one if g == 1 else compile_for(g))
    g = seed_group_size(n, along, *sizes, budget, most)
    plan = SeedPlan(n, along, g, budget, *sizes)
    return plan, (one if g == 1 else compile_for(g))


def seed_group_size(n_seeds: int, along: int, state_bytes: int, seed_step_bytes: int,
                    budget: int, most: int | None = None) -> int:
    """Seeds per device trained at once: the largest divisor g of each device's share
    n_seeds / along with state_bytes + g seed_step_bytes <= budget (bytes per device) and
    g <= ``most`` (when given). Taking
    g times one seed's working set is conservative: XLA reuses scratch between the seeds of a
    group. A UserError naming how many seeds fit if even g = 1 does not."""
    per = n_seeds // along
    step = max(seed_step_bytes, 1)
    if state_bytes + step > budget:
        per_seed = max(1, state_bytes // per)
        fit = max(0, (budget - step) // per_seed * along)
        raise UserError(
            f"{n_seeds} seeds do not fit the memory budget of {budget / 2**30:.3f} GiB per "
            f"device: their state takes {state_bytes / 2**30:.3f} GiB per device and a step's "
            f"working set {step / 2**30:.3f} GiB per seed; at most {fit} seeds fit (over "
            f"{along} device(s) along 'seeds'). Train fewer seeds per run, or raise "
            f"--memory-budget")
    return max(d for d in range(1, min(per, most or per) + 1)
               if per % d == 0 and state_bytes + d * step <= budget)


class Run:
    """One training run in ``out``: set up fresh or resumed, then :meth:`train`.

    ``state`` holds every seed (leading seed axis, in ``tc.init_seeds`` order);
    :meth:`seed_params` is one seed's parameters. ``memory_budget`` (bytes per device) and
    ``seed_group`` (seeds per device) bound how many seeds a step trains at once
    (:func:`plan_seed_groups`)."""

    def __init__(self, tc: TrainConfig, corpus: list[str], out: str | Path,
                 tokenizer_path: str | None = None, require_resume: bool = False,
                 memory_budget: int | None = None, seed_group: int | None = None):
        self.tc, self.out = tc, Path(out)
        files.check_writable(self.out, folder=True, flag="--out")
        self.mesh = training_mesh(len(tc.init_seeds))
        n_data = self.mesh.shape["data"]
        micro = tc.batch_size // tc.grad_accum
        check_batch_splits(tc, jax.process_count())
        if micro % n_data:  # checked before anything is written
            raise UserError(f"the micro-batch {micro} (batch_size / grad_accum) does not split "
                            f"over the {n_data} devices of the mesh's data axis (of "
                            f"{self.mesh.size} devices, {self.mesh.shape['seeds']} along the "
                            f"seeds); use a multiple of {n_data}")
        self.ckpt_dir = runs.checkpoints_path(self.out)
        self.source = _init_source(tc)
        existing = runs.run_info_path(self.out)
        # Process 0 decides (and only then writes), so no process mistakes its files for a run.
        if distributed.same_on_all_processes((int(existing.exists()),))[0]:
            self._resume_setup(existing, corpus)
        else:
            if require_resume:
                raise UserError(f"--resume: {str(self.out)!r} holds no run to resume "
                                f"(no run.json)")
            self._fresh_setup(corpus, tokenizer_path)
        self.optimizer = make_optimizer(tc)
        self.state_sharding = state_shardings(self.cfg, tc, self.optimizer, self.mesh)
        self.plan, self._step = plan_seed_groups(self.cfg, tc, self.optimizer, self.mesh,
                                                 self.state_sharding, memory_budget,
                                                 seed_group)
        if self._fresh and distributed.is_writer():  # planned: now write
            self.out.mkdir(parents=True, exist_ok=True)
            if self._new_files is not None:  # a synthetic corpus has no tokenizer
                files.write_text(runs.tokenizer_path(self.out), self._new_files.to_str())
            files.write_json(runs.run_info_path(self.out), self.run_info)
        self.manager = ocp.CheckpointManager(self.ckpt_dir, options=ocp.CheckpointManagerOptions(
            max_to_keep=tc.keep_last, keep_period=tc.keep_every, create=True,
            enable_async_checkpointing=False, cleanup_tmp_directories=True))
        latest = self.manager.latest_step()
        if latest is not None:  # read straight into the state's layout; nothing is built
            self.state = self._restore(latest)
        elif require_resume:
            raise UserError(f"--resume: no complete checkpoint in {str(self.ckpt_dir)!r}")
        else:
            source_params = None if self.source is None else self.source.params
            self.state = init_state(self.cfg, tc, self.optimizer, source_params,
                                    self.state_sharding)

    # --- setup -------------------------------------------------------------------------------
    def _fresh_setup(self, corpus, tokenizer_path):
        self._fresh = True
        if bigram_backcopy.is_spec(corpus):
            if tokenizer_path is not None:
                raise UserError("a Bigram-Backcopy corpus (bbm:PATH) has its own character "
                                "vocabulary; drop --tokenizer")
            task = self._bbm_blocks(corpus)
            self.cfg = self._model_config()
            self.run_info = runs.fresh_run_info(self.tc, self.cfg, corpus, self.blocks.train,
                                                self.blocks.val, self.blocks.vocab_size,
                                                self.source)
            self.run_info["data"]["bbm"] = task.describe()
            self._new_files = None
            return
        docs = runs.read_documents(corpus, self.tc)
        if self.source is not None and tokenizer_path is None:
            tokenizer_path = _source_tokenizer(self.source)
        tok = None
        if distributed.is_writer():  # process 0's tokenizer is every process's
            tok = (data.load_tokenizer(tokenizer_path) if tokenizer_path
                   else data.train_tokenizer(docs, self.tc.vocab_size, bos=self.tc.bos))
        tok = _same_tokenizer(tok)
        self.blocks = self._text_blocks(docs, tok)
        _check_same_data(self.blocks)
        self.cfg = self._model_config()
        self.run_info = runs.fresh_run_info(self.tc, self.cfg, corpus, self.blocks.train,
                                            self.blocks.val, self.blocks.vocab_size, self.source)
        if self.tc.bos:
            self.run_info["data"]["bos_id"] = data.bos_id(tok, self.tc.bos_token)
        self._new_files = tok  # written once the seeds are known to fit (__init__)

    def _text_blocks(self, docs, tok) -> data.TokenBlocks:
        """Blocks of a text corpus, with the run's BOS and document alignment."""
        bos = data.bos_id(tok, self.tc.bos_token) if self.tc.bos else None
        return data.make_blocks(docs, tok, self.tc.seq_len, self.tc.val_fraction, bos=bos,
                                doc_aligned=self.tc.doc_aligned)

    def _bbm_blocks(self, corpus):
        """Blocks of a Bigram-Backcopy corpus (``bigram_backcopy.make_blocks``): as many training
        sequences of T + 1 tokens as ``corpus_max_mb`` MiB holds at one token per byte."""
        tc = self.tc
        spec = bigram_backcopy.check_single(corpus)
        if tc.bos or tc.doc_aligned:
            raise UserError(f"{spec}: Bigram-Backcopy sequences always begin with <s> and "
                            f"have no documents; drop --bos, --bos-token and --doc-aligned")
        n_train = max(1, int(tc.corpus_max_mb * 2**20) // (tc.seq_len + 1))
        self.blocks, task = bigram_backcopy.make_blocks(spec, tc.seq_len, n_train,
                                                        tc.val_fraction, tc.data_seed)
        _check_same_data(self.blocks)
        return task

    def _resume_setup(self, path: Path, corpus):
        self._fresh = False
        saved = runs.read_run_info(self.out)
        diff = runs.settings_differences(saved["train_config"], self.tc)
        if diff:
            raise UserError("the run in {} was made with different settings; resume with the "
                             "same ones or use a new --out. Differences (saved, now): {}"
                             .format(str(self.out), diff))
        if bigram_backcopy.is_spec(corpus):
            self._bbm_blocks(corpus)
        else:
            tok = data.load_tokenizer(runs.tokenizer_path(self.out))
            docs = runs.read_documents(corpus, self.tc)
            self.blocks = self._text_blocks(docs, tok)
        if _fingerprint(self.blocks) != saved["data"]["fingerprint"]:
            raise UserError(f"the corpus {corpus} no longer gives the data this run was "
                            f"trained on (fingerprint mismatch); resume with the same corpus")
        _check_same_data(self.blocks)
        self.cfg = runs.saved_model_config(saved, path, self._model_config())
        self.run_info = saved
        self._new_files = None

    def _model_config(self) -> ModelConfig:
        """The preset's configuration for this vocabulary, or the source model's."""
        if self.source is None:
            return model_config(self.tc, self.blocks.vocab_size)
        cfg = self.source.cfg
        if cfg.vocab_size != self.blocks.vocab_size:
            raise UserError(f"the tokenizer has {self.blocks.vocab_size} tokens but the source "
                            f"model {self.tc.init_from!r} has a vocabulary of {cfg.vocab_size}; "
                            f"use the source's own tokenizer")
        model.check_seq_len(cfg, self.tc.seq_len)
        return cfg

    def _restore(self, step: int) -> dict:
        """Checkpoint ``step`` laid out as ``state_sharding``; a checkpoint written before the
        seed axis existed (one seed, no axis) is read as an axis of one."""
        shapes = jax.eval_shape(lambda: init_state(self.cfg, self.tc, self.optimizer))
        abstract = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                                shapes, self.state_sharding)
        legacy = not runs.checkpoint_has_seed_axis(self.out, step, self.cfg)
        if legacy:
            if len(self.tc.init_seeds) != 1:
                raise UserError(f"checkpoint {step} in {str(self.ckpt_dir)!r} holds one seed "
                                f"without a seed axis, but the run trains "
                                f"{len(self.tc.init_seeds)} seeds")
            abstract = {**abstract, **jax.tree.map(
                lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype, sharding=NamedSharding(
                    x.sharding.mesh, P(*x.sharding.spec[1:]))),
                {"params": abstract["params"], "opt_state": abstract["opt_state"]})}
        try:
            state = self.manager.restore(step, args=ocp.args.StandardRestore(abstract))
        except Exception as e:  # Orbax raises many types for damaged files
            raise UserError(f"checkpoint {step} in {str(self.ckpt_dir)!r} is unreadable "
                             f"({type(e).__name__}: {e}); delete that step's folder to fall back "
                             f"to an earlier checkpoint") from None
        if legacy:
            state = jax.jit(lambda s: {**s, "params": jax.tree.map(lambda x: x[None],
                                                                    s["params"]),
                                       "opt_state": jax.tree.map(lambda x: x[None],
                                                                 s["opt_state"])},
                            out_shardings=self.state_sharding)(state)
        if int(state["step"]) != step:
            raise UserError(f"checkpoint {step} holds step {int(state['step'])}")
        return state

    def seed_params(self, index: int = 0) -> dict:
        """The current parameters of seed number ``index`` (of ``tc.init_seeds``), on the host."""
        return jax.tree.map(lambda x: np.asarray(distributed.to_host(x)[index]),
                            self.state["params"])

    # --- training ----------------------------------------------------------------------------
    def batch(self, position: int) -> np.ndarray:
        tc = self.tc
        ids = data.batch_indices(tc.data_seed, position, tc.batch_size, len(self.blocks.train))
        return self.blocks.train[ids].reshape(tc.grad_accum, tc.batch_size // tc.grad_accum, -1)

    def global_batch(self, position: int) -> jax.Array:
        """The batch at ``position`` as one array over the mesh: this process loads only the
        rows its own devices hold (``jax.make_array_from_process_local_data``)."""
        tc = self.tc
        shape = (tc.grad_accum, tc.batch_size // tc.grad_accum, tc.seq_len + 1)
        where = batch_sharding(self.mesh)
        rows = sorted({idx[1].indices(shape[1])[:2]
                       for idx in where.addressable_devices_indices_map(shape).values()})
        ids = data.batch_indices(tc.data_seed, position, tc.batch_size,
                                 len(self.blocks.train)).reshape(shape[:2])
        mine = np.concatenate([ids[:, a:b] for a, b in rows], axis=1)
        return jax.make_array_from_process_local_data(where, self.blocks.train[mine], shape)

    def step(self, blocks) -> dict:
        """One optimiser step of every seed on ``blocks`` (group by group, :attr:`plan`);
        per-seed metrics as (S,) host arrays in ``tc.init_seeds`` order."""
        n = len(self.tc.init_seeds)
        out = {"loss": np.empty(n), "grad_norm": np.empty(n)}
        for i, where in enumerate(group_order(n, self.mesh, self.plan.group_size)):
            self.state, m = self._step(self.state, blocks, np.int32(i))
            for k in out:
                out[k][where] = np.asarray(distributed.to_host(m[k]))
        return out

    def evaluate(self, eval_fn) -> np.ndarray:
        """Each seed's mean loss over ``eval_batches`` batches of validation blocks, computed
        in micro-batches (``batch_size / grad_accum`` blocks, as a training step's) so that
        evaluation needs no more memory than training."""
        n = min(len(self.blocks.val), self.tc.eval_batches * self.tc.batch_size)
        micro = self.tc.batch_size // self.tc.grad_accum
        losses = [np.asarray(distributed.to_host(eval_fn(self.state["params"],
                                                         self.blocks.val[i:i + micro])))
                  for i in range(0, n, micro)]
        sizes = [min(micro, n - i) for i in range(0, n, micro)]
        return np.average(np.stack(losses), axis=0, weights=sizes)

    def train(self, progress: bool = True) -> dict:
        tc = self.tc
        eval_fn = make_eval(self.cfg, tc)
        metrics_path = runs.metrics_path(self.out)
        writer = distributed.is_writer()  # every process computes; process 0 writes
        start = int(self.state["step"])
        records = [r for r in runs.read_metrics(metrics_path) if r["step"] <= start]
        if writer:
            files.write_text(metrics_path, "".join(json.dumps(r) + "\n" for r in records))
        schedule = lr_schedule(tc)
        last = tc.last_step
        many = len(tc.init_seeds) > 1
        per_seed = (lambda a: [float(x) for x in a]) if many else (lambda a: float(a[0]))
        with open(metrics_path if writer else os.devnull, "a") as log, tqdm(
                total=last, initial=start, disable=not (progress and writer), desc="train",
                unit="step") as bar:
            t0 = time.perf_counter()
            for step in range(start, last):
                m = self.step(self.global_batch(int(self.state["data_position"])))
                done = step + 1
                rec = None
                if done % tc.log_every == 0 or done == last:
                    rec = {"step": done, "loss": per_seed(m["loss"]),
                           "grad_norm": per_seed(m["grad_norm"]), "lr": float(schedule(step)),
                           "tokens_per_s": tc.log_every * tc.batch_size * tc.seq_len
                           / (time.perf_counter() - t0)}
                    t0 = time.perf_counter()
                if done % tc.eval_every == 0 or done == last:
                    rec = rec or {"step": done, "loss": per_seed(m["loss"])}
                    val = self.evaluate(eval_fn)
                    rec["val_loss"] = per_seed(val)
                    rec["val_ppl"] = per_seed(np.exp(val))
                if rec:
                    if many:
                        rec["seeds"] = list(tc.init_seeds)
                    records.append(rec)
                    log.write(json.dumps(rec) + "\n")
                    log.flush()
                    bar.set_postfix(loss=f"{np.mean(m['loss']):.3f}")
                if done % tc.save_every == 0 or done == last:
                    self.manager.save(done, args=ocp.args.StandardSave(self.state))
                    self.manager.wait_until_finished()
                bar.update(1)
        self.manager.close()
        if writer:
            from bornbiased_jax.plots import loss_curve

            seeds = (f"seed {tc.seed}" if not many else
                     f"seeds {tc.init_seeds[0]}..{tc.init_seeds[-1]}")
            files.save_figure(loss_curve(records, title=f"{self.cfg.name}, {seeds}"),
                              runs.loss_curve_path(self.out))
        return {"records": records, "final_step": int(self.state["step"])}


def ensure(tc: TrainConfig, corpus, folder: str | Path, *, tokenizer_path=None,
           progress: bool = False, what: str = "these", remedy: str = "use another folder"
           ) -> Path:
    """Train the run in ``folder`` with settings ``tc`` on ``corpus`` to its last step,
    resuming it from its latest checkpoint; a finished run is left as it is (its corpus is not
    read: ``corpus`` may be a function giving the list, called only when there is training to
    do), and a folder holding a run of other settings is a ``UserError`` naming the
    differences (``runs.finished(folder, tc, what, remedy)``). Returns the folder."""
    if not runs.finished(folder, tc, what=what, remedy=remedy):
        corpus = corpus() if callable(corpus) else corpus
        Run(tc, corpus, folder, tokenizer_path=tokenizer_path).train(progress=progress)
    return Path(folder)


def check_batch_splits(tc: TrainConfig, n_processes: int) -> None:
    """A UserError unless each micro-batch splits evenly over ``n_processes`` processes (each
    process loads its own rows); checked before any work, by the CLI before the processes
    even connect."""
    micro = tc.batch_size // tc.grad_accum
    if micro % n_processes:
        raise UserError(f"the micro-batch {micro} (batch_size / grad_accum) does not split over "
                        f"{n_processes} processes; use a multiple of {n_processes} (and of the "
                        f"total number of devices)")


def _fingerprint(blocks: data.TokenBlocks) -> str:
    return runs.data_fingerprint(blocks.train, blocks.val)


def _same_tokenizer(tok):
    """Process 0's tokenizer in every process (BPE training need not tie-break alike)."""
    if jax.process_count() == 1:
        return tok
    from tokenizers import Tokenizer

    text = distributed.broadcast_bytes(tok.to_str().encode() if tok is not None else None)
    return Tokenizer.from_str(text.decode())


def _check_same_data(blocks: data.TokenBlocks) -> None:
    """A UserError in every process unless all processes' corpora give the same blocks."""
    odd = distributed.processes_differing(_fingerprint(blocks).encode())
    if odd:
        raise UserError(f"processes {odd} read a different corpus than process 0 (data "
                        f"fingerprint mismatch); every host must see the same files")


def _init_source(tc: TrainConfig):
    """The model ``tc.init_from`` names (None without one); a UserError if it cannot start a
    run: a fresh preset initialisation is not a source (use --preset and --seed)."""
    if tc.init_from is None:
        return None
    src = load_source(tc.init_from, shared_embedding=False)
    if src.kind == "preset":
        raise UserError(f"init_from {tc.init_from!r} is a fresh initialisation; train it with "
                        f"--preset and --seed instead")
    if src.seed is not None and tc.seed not in (0, src.seed):
        raise UserError(f"--seed {tc.seed} contradicts the source model's initialisation seed "
                        f"{src.seed}; leave --seed out (parameters come from the source)")
    return src


def _source_tokenizer(src) -> str:
    """The tokenizer.json in a source model's folder."""
    f = None if src.folder is None else runs.tokenizer_path(src.folder)
    if f is None or not f.is_file():
        raise UserError(f"the source model {src.label!r} has no tokenizer.json in its folder; "
                        f"pass --tokenizer with the tokenizer it was trained with")
    return str(f)
