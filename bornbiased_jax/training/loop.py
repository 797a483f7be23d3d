"""Training a run: :class:`Run` sets a run folder up (fresh or resumed), then trains every
seed to its last step, logging metrics and saving checkpoints; :func:`ensure` trains a run to
its end unless it is finished.

A run lives in one folder (run.json, tokenizer.json, checkpoints/, metrics.jsonl,
loss_curve.png; ``run_folder`` owns the layout and reads it back, ``checkpoints`` the Orbax
checkpoints).

Resuming (run the same command again) restores the latest *complete* checkpoint (Orbax writes
into a temporary folder and renames it when finished) and continues with exactly the batches an
uninterrupted run would have seen, so final parameters are bitwise equal.

Across processes (``bornbiased_jax.distributed``: one process per host, started with the same
command) the mesh spans every process's devices; each process loads only its own rows of each
batch (``jax.make_array_from_process_local_data``), all processes write their shards of each
checkpoint through Orbax (``--out`` must be a folder every host sees), and process 0 alone
writes run.json, the tokenizer, metrics and plots.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import jax
import numpy as np
from tqdm.auto import tqdm

from bornbiased_jax import data, distributed, files
from bornbiased_jax.errors import UserError
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import Checkpoints
from bornbiased_jax.training.config import TrainConfig, check_batch_splits
from bornbiased_jax.training.data_setup import fresh_data, init_source, resumed_data
from bornbiased_jax.training.optimizer import lr_schedule, make_optimizer
from bornbiased_jax.training.seed_plan import group_order, plan_seed_groups
from bornbiased_jax.training.step import (abstract_state, batch_sharding, init_state, make_eval,
                                          state_shardings, training_mesh)


class Run:
    """One training run in ``out``: set up fresh or resumed, then :meth:`train`.

    ``state`` holds every seed (leading seed axis, in ``tc.init_seeds`` order);
    :meth:`seed_params` is one seed's parameters. ``memory_budget`` (bytes per device) and
    ``seed_group`` (seeds per device) bound how many seeds a step trains at once, and
    ``seed_batching`` says how ('vmap', 'map' or 'auto'; ``seed_plan.plan_seed_groups``)."""

    def __init__(self, tc: TrainConfig, corpus: list[str], out: str | Path,
                 tokenizer_path: str | None = None, require_resume: bool = False,
                 memory_budget: int | None = None, seed_group: int | None = None,
                 seed_batching: str = "auto"):
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
        self.source = init_source(tc)
        existing = run_folder.run_info_path(self.out)
        # Process 0 decides (and only then writes), so no process mistakes its files for a run.
        if distributed.same_on_all_processes((int(existing.exists()),))[0]:
            setup = resumed_data(tc, self.out, corpus, self.source)
        else:
            if require_resume:
                raise UserError(f"--resume: {str(self.out)!r} holds no run to resume "
                                f"(no run.json)")
            setup = fresh_data(tc, corpus, self.source, tokenizer_path)
        self.blocks, self.cfg, self.run_info = setup.blocks, setup.cfg, setup.run_info
        self.optimizer = make_optimizer(tc)
        self.state_sharding = state_shardings(self.cfg, tc, self.optimizer, self.mesh)
        self.plan, self._step = plan_seed_groups(self.cfg, tc, self.optimizer, self.mesh,
                                                 self.state_sharding, memory_budget,
                                                 seed_group, seed_batching)
        if setup.fresh and distributed.is_writer():  # planned: now write
            run_folder.write_new_run(self.out, self.run_info, setup.tokenizer)
        self.checkpoints = Checkpoints(self.out, tc.keep_last, tc.keep_every, tc.keep_steps)
        latest = self.checkpoints.latest_step()
        if latest is not None:  # read straight into the state's layout; nothing is built
            self.state = self.checkpoints.restore(
                latest, abstract_state(self.cfg, tc, self.optimizer, self.state_sharding),
                self.cfg)
        elif require_resume:
            raise UserError(f"--resume: no complete checkpoint in "
                            f"{str(self.checkpoints.path)!r}")
        else:
            source_params = None if self.source is None else self.source.params
            self.state = init_state(self.cfg, tc, self.optimizer, source_params,
                                    self.state_sharding)

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
        metrics_path = run_folder.metrics_path(self.out)
        writer = distributed.is_writer()  # every process computes; process 0 writes
        start = int(self.state["step"])
        records = run_folder.keep_metrics(self.out, start, write=writer)
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
                    self.checkpoints.save(done, self.state)
                bar.update(1)
        self.checkpoints.close()
        if writer:
            from bornbiased_jax.plots import loss_curve

            seeds = (f"seed {tc.seed}" if not many else
                     f"seeds {tc.init_seeds[0]}..{tc.init_seeds[-1]}")
            files.save_figure(loss_curve(records, title=f"{self.cfg.name}, {seeds}"),
                           run_folder.loss_curve_path(self.out))
        return {"records": records, "final_step": int(self.state["step"])}


def ensure(tc: TrainConfig, corpus, folder: str | Path, *, tokenizer_path=None,
           progress: bool = False, what: str = "these", remedy: str = "use another folder"
           ) -> Path:
    """Train the run in ``folder`` with settings ``tc`` on ``corpus`` to its last step,
    resuming it from its latest checkpoint; a finished run is left as it is (its corpus is not
    read: ``corpus`` may be a function giving the list, called only when there is training to
    do), and a folder holding a run of other settings is a ``UserError`` naming the
    differences (``run_folder.finished(folder, tc, what, remedy)``). Returns the folder."""
    if not run_folder.finished(folder, tc, what=what, remedy=remedy):
        corpus = corpus() if callable(corpus) else corpus
        Run(tc, corpus, folder, tokenizer_path=tokenizer_path).train(progress=progress)
    return Path(folder)
