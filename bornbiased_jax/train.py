"""Pretraining: AdamW per Table 14, Orbax checkpoints, deterministic resume, data parallelism.

A run lives in one folder::

    run.json          the run's settings ("train_config"), the full model configuration
                      ("model_config", ``dataclasses.asdict(ModelConfig)``) and a fingerprint
                      of its data; all three are checked on resume
    tokenizer.json    the BPE the run trained (or was given)
    checkpoints/<k>/  Orbax checkpoints: params, Adam moments, step, data position
    metrics.jsonl     one JSON line per logged step (train loss, lr, grad norm; val loss/ppl)
    loss_curve.png    training and validation loss

Resuming (run the same command again) restores the latest *complete* checkpoint (Orbax writes
into a temporary folder and renames it when finished) and continues with exactly the batches an
uninterrupted run would have seen, so final parameters are bitwise equal.

The learning-rate schedule spans ``steps`` (linear warmup, then cosine decay to ``min_lr`` at
``steps``, Table 14; or linear decay, ``schedule="linear"``, as the lineage models' code),
so ``steps`` is part of the run's identity: resuming with another ``steps`` would reshape the
schedule mid-run and match no uninterrupted run, and is an error. To stop early and continue
later on the same schedule, use ``stop_at`` (``--stop-at``), which may differ between resumes.

Across processes (``bornbiased_jax.distributed``: one process per host, started with the same
command) the mesh spans every process's devices; each process loads only its own rows of each
batch (``jax.make_array_from_process_local_data``), all processes write their shards of each
checkpoint through Orbax (``--out`` must be a folder every host sees), and process 0 alone
writes run.json, the tokenizer, metrics and plots. The state is saved without its layout, so a
run resumes with another number of processes or devices, or with ``fsdp`` switched, from the
same state. ``fsdp`` shards parameters and Adam moments over the devices (``sharding.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from tqdm.auto import tqdm

from bornbiased_jax import data, distributed, io, model, sharding
from bornbiased_jax.config import ModelConfig, apply_overrides, get_preset, recorded_differences
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_key
from bornbiased_jax.train_config import TrainConfig


def settings_differences(saved_tc: dict, tc: TrainConfig) -> dict[str, tuple]:
    """{field: (saved, now)} for each setting of ``tc`` that a resume must keep (all but
    ``TrainConfig.RESUMABLE``) and that differs from run.json's ``train_config`` ``saved_tc``."""
    now = json.loads(json.dumps(dataclasses.asdict(tc)))  # tuples as run.json's lists
    saved_tc = dict(saved_tc)
    saved_tc.setdefault("model_set", [])  # runs recorded before model settings existed
    saved_tc.setdefault("schedule", "cosine")  # ... and before the linear schedule
    return {k: (saved_tc.get(k), v) for k, v in now.items()
            if k not in TrainConfig.RESUMABLE and saved_tc.get(k) != v}


def model_config(tc: TrainConfig, vocab_size: int) -> ModelConfig:
    """The preset (with ``tc.model_set`` applied), the tokenizer's vocabulary and every
    parameter seed-dependent."""
    cfg = dataclasses.replace(apply_overrides(get_preset(tc.preset), tc.model_set),
                              vocab_size=vocab_size,
                              shared_embedding=False)
    model.check_seq_len(cfg, tc.seq_len)
    return cfg


def lr_schedule(tc: TrainConfig) -> optax.Schedule:
    """Linear warmup from 0 to ``lr`` over ``warmup`` steps, then decay to ``min_lr`` at step
    ``steps``: cosine (Table 14) or linear (HF's ``get_linear_schedule_with_warmup`` with
    ``min_lr`` 0, which the lineage models' released code uses)."""
    if tc.schedule == "cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0, peak_value=tc.lr, warmup_steps=tc.warmup, decay_steps=tc.steps,
            end_value=tc.min_lr)
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
    """Parameters from ``seed`` (or the given ``params``, e.g. a source model's), fresh Adam
    moments, step 0, data position 0. Training uses no randomness beyond these: the data order
    is a function of ``data_seed`` and the position (``data.batch_indices``), so the state holds
    no RNG key. With ``shardings`` (``sharding.state_shardings``) each device builds only its
    own pieces (the same values as built whole)."""
    if shardings is None:
        if params is None:
            params = jax.jit(model.init, static_argnums=0)(cfg, seed_key(tc.seed))
        else:
            params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
        return {"params": params, "opt_state": optimizer.init(params),
                "step": jnp.zeros((), jnp.int32), "data_position": jnp.zeros((), jnp.int32)}
    if params is None:
        params = jax.jit(model.init, static_argnums=0, out_shardings=shardings["params"])(
            cfg, seed_key(tc.seed))
    else:  # host arrays every process holds: each places its own devices' pieces
        params = jax.tree.map(lambda a, s: distributed.global_array(np.asarray(a, np.float32), s),
                              params, shardings["params"])
    rest = jax.jit(lambda p: {"opt_state": optimizer.init(p), "step": jnp.zeros((), jnp.int32),
                              "data_position": jnp.zeros((), jnp.int32)},
                   out_shardings={k: shardings[k] for k in ("opt_state", "step",
                                                             "data_position")})(params)
    return {"params": params, **rest}


def make_train_step(cfg: ModelConfig, tc: TrainConfig, optimizer, mesh: Mesh,
                    state_sharding=None):
    """state, blocks (A, B/A, T+1) -> state, metrics. Gradients are averaged over the A
    micro-batches by a scan; the micro-batch axis B/A is sharded over the mesh's 'data' axis;
    the state is replicated unless ``state_sharding`` says otherwise (FSDP)."""
    grad = jax.value_and_grad(loss_fn)

    def step(state, blocks_ABT1):
        def micro(acc, blk):
            loss, g = grad(state["params"], cfg, blk, tc.bf16)
            return jax.tree.map(jnp.add, acc, (loss, g)), None

        zero = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, state["params"]))
        (loss, grads), _ = jax.lax.scan(micro, zero, blocks_ABT1)
        loss, grads = jax.tree.map(lambda x: x / tc.grad_accum, (loss, grads))
        updates, opt_state = optimizer.update(grads, state["opt_state"], state["params"])
        params = optax.apply_updates(state["params"], updates)
        new = {**state, "params": params, "opt_state": opt_state, "step": state["step"] + 1,
               "data_position": state["data_position"] + tc.batch_size}
        return new, {"loss": loss, "grad_norm": optax.tree.norm(grads)}

    replicated = NamedSharding(mesh, P())
    state_sharding = replicated if state_sharding is None else state_sharding
    return jax.jit(step, in_shardings=(state_sharding, batch_sharding(mesh)),
                   out_shardings=(state_sharding, replicated), donate_argnums=0)


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Blocks (A, B/A, T+1): the micro-batch rows over the 'data' devices."""
    return NamedSharding(mesh, P(None, "data", None))


def make_eval(cfg: ModelConfig, tc: TrainConfig):
    return jax.jit(lambda params, blocks: loss_fn(params, cfg, blocks, tc.bf16))


def _fingerprint(blocks: data.TokenBlocks) -> str:
    h = hashlib.sha256()
    h.update(blocks.train.tobytes())
    h.update(blocks.val.tobytes())
    return h.hexdigest()[:16]


class Run:
    """One training run in ``out``: set up fresh or resumed, then :meth:`train`."""

    def __init__(self, tc: TrainConfig, corpus: list[str], out: str | Path,
                 tokenizer_path: str | None = None, require_resume: bool = False):
        self.tc, self.out = tc, Path(out)
        io.check_writable(self.out, folder=True, flag="--out")
        n_dev = len(jax.devices())
        micro = tc.batch_size // tc.grad_accum
        check_batch_splits(tc, jax.process_count())
        if micro % n_dev:  # checked before anything is written
            raise UserError(f"the micro-batch {micro} (batch_size / grad_accum) does not split "
                            f"over {n_dev} devices; use a multiple of {n_dev}")
        self.ckpt_dir = (self.out / "checkpoints").absolute()
        self.source = _init_source(tc)
        existing = self.out / "run.json"
        # Process 0 decides (and only then writes), so no process mistakes its files for a run.
        if distributed.same_on_all_processes((int(existing.exists()),))[0]:
            self._resume_setup(existing, corpus)
        else:
            if require_resume:
                raise UserError(f"--resume: {str(self.out)!r} holds no run to resume "
                                f"(no run.json)")
            self._fresh_setup(corpus, tokenizer_path)
        self.mesh = Mesh(np.asarray(jax.devices()), ("data",))
        self.optimizer = make_optimizer(tc)
        source_params = None if self.source is None else self.source.params
        shapes = jax.eval_shape(lambda: init_state(self.cfg, tc, self.optimizer, source_params))
        self.state_sharding = sharding.state_shardings(
            shapes, self.optimizer, self.mesh,
            sharding.RULES_FSDP if tc.fsdp else sharding.RULES_DATA_PARALLEL)
        self.manager = ocp.CheckpointManager(self.ckpt_dir, options=ocp.CheckpointManagerOptions(
            max_to_keep=tc.keep_last, keep_period=tc.keep_every, create=True,
            enable_async_checkpointing=False, cleanup_tmp_directories=True))
        self.state = init_state(self.cfg, tc, self.optimizer, source_params, self.state_sharding)
        latest = self.manager.latest_step()
        if latest is not None:
            self.state = self._restore(latest)
        elif require_resume:
            raise UserError(f"--resume: no complete checkpoint in {str(self.ckpt_dir)!r}")

    # --- setup -------------------------------------------------------------------------------
    def _fresh_setup(self, corpus, tokenizer_path):
        docs = data.load_corpus(corpus, max_bytes=int(self.tc.corpus_max_mb * 2**20))
        if not docs:
            raise UserError(f"the corpus {corpus} is empty: no readable, non-empty text files")
        if self.source is not None and tokenizer_path is None:
            tokenizer_path = _source_tokenizer(self.source)
        tok = None
        if distributed.is_writer():  # process 0's tokenizer is every process's
            tok = (data.load_tokenizer(tokenizer_path) if tokenizer_path
                   else data.train_tokenizer(docs, self.tc.vocab_size))
        tok = _same_tokenizer(tok)
        self.blocks = data.make_blocks(docs, tok, self.tc.seq_len, self.tc.val_fraction)
        _check_same_data(self.blocks)
        self.cfg = self._model_config()
        if not distributed.is_writer():
            self.run_info = _fresh_run_info(self, corpus)
            return
        self.out.mkdir(parents=True, exist_ok=True)
        io.write_text(self.out / "tokenizer.json", tok.to_str())
        self.run_info = _fresh_run_info(self, corpus)
        io.write_json(self.out / "run.json", self.run_info)

    def _resume_setup(self, path: Path, corpus):
        try:
            saved = json.loads(path.read_text())
            saved_tc = saved["train_config"]
        except (json.JSONDecodeError, KeyError) as e:
            raise UserError(f"{str(path)!r} is not a readable run description: {e}") from None
        diff = settings_differences(saved_tc, self.tc)
        if diff:
            raise UserError("the run in {} was made with different settings; resume with the "
                             "same ones or use a new --out. Differences (saved, now): {}"
                             .format(str(self.out), diff))
        tok = data.load_tokenizer(self.out / "tokenizer.json")
        docs = data.load_corpus(corpus, max_bytes=int(self.tc.corpus_max_mb * 2**20))
        self.blocks = data.make_blocks(docs, tok, self.tc.seq_len, self.tc.val_fraction)
        if _fingerprint(self.blocks) != saved["data"]["fingerprint"]:
            raise UserError(f"the corpus {corpus} no longer gives the data this run was "
                            f"trained on (fingerprint mismatch); resume with the same corpus")
        _check_same_data(self.blocks)
        self.cfg = _saved_model_config(saved, path, self._model_config())
        self.run_info = saved

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
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, self.state)
        try:
            state = self.manager.restore(step, args=ocp.args.StandardRestore(abstract))
        except Exception as e:  # Orbax raises many types for damaged files
            raise UserError(f"checkpoint {step} in {str(self.ckpt_dir)!r} is unreadable "
                             f"({type(e).__name__}: {e}); delete that step's folder to fall back "
                             f"to an earlier checkpoint") from None
        if int(state["step"]) != step:
            raise UserError(f"checkpoint {step} holds step {int(state['step'])}")
        return state

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

    def evaluate(self, eval_fn) -> float:
        """Mean loss over ``eval_batches`` batches of validation blocks, computed in
        micro-batches (``batch_size / grad_accum`` blocks, as a training step's) so that
        evaluation needs no more memory than training."""
        n = min(len(self.blocks.val), self.tc.eval_batches * self.tc.batch_size)
        micro = self.tc.batch_size // self.tc.grad_accum
        losses = [float(eval_fn(self.state["params"], self.blocks.val[i:i + micro]))
                  for i in range(0, n, micro)]
        sizes = [min(micro, n - i) for i in range(0, n, micro)]
        return float(np.average(losses, weights=sizes))

    def train(self, progress: bool = True) -> dict:
        tc = self.tc
        step_fn = make_train_step(self.cfg, tc, self.optimizer, self.mesh, self.state_sharding)
        eval_fn = make_eval(self.cfg, tc)
        metrics_path = self.out / "metrics.jsonl"
        writer = distributed.is_writer()  # every process computes; process 0 writes
        start = int(self.state["step"])
        records = [r for r in _read_jsonl(metrics_path) if r["step"] <= start]
        if writer:
            io.write_text(metrics_path, "".join(json.dumps(r) + "\n" for r in records))
        schedule = lr_schedule(tc)
        last = tc.last_step
        with open(metrics_path if writer else os.devnull, "a") as log, tqdm(
                total=last, initial=start, disable=not (progress and writer), desc="train",
                unit="step") as bar:
            t0 = time.perf_counter()
            for step in range(start, last):
                blocks = self.global_batch(int(self.state["data_position"]))
                self.state, m = step_fn(self.state, blocks)
                done = step + 1
                rec = None
                if done % tc.log_every == 0 or done == last:
                    rec = {"step": done, "loss": float(m["loss"]),
                           "grad_norm": float(m["grad_norm"]), "lr": float(schedule(step)),
                           "tokens_per_s": tc.log_every * tc.batch_size * tc.seq_len
                           / (time.perf_counter() - t0)}
                    t0 = time.perf_counter()
                if done % tc.eval_every == 0 or done == last:
                    rec = rec or {"step": done, "loss": float(m["loss"])}
                    rec["val_loss"] = self.evaluate(eval_fn)
                    rec["val_ppl"] = math.exp(rec["val_loss"])
                if rec:
                    records.append(rec)
                    log.write(json.dumps(rec) + "\n")
                    log.flush()
                    bar.set_postfix(loss=f"{rec['loss']:.3f}")
                if done % tc.save_every == 0 or done == last:
                    self.manager.save(done, args=ocp.args.StandardSave(self.state))
                    self.manager.wait_until_finished()
                bar.update(1)
        self.manager.close()
        if writer:
            from bornbiased_jax.plots import loss_curve

            io.save_figure(loss_curve(records, title=f"{self.cfg.name}, seed {tc.seed}"),
                           self.out / "loss_curve.png")
        return {"records": records, "final_step": int(self.state["step"])}


def check_batch_splits(tc: TrainConfig, n_processes: int) -> None:
    """A UserError unless each micro-batch splits evenly over ``n_processes`` processes (each
    process loads its own rows); checked before any work, by the CLI before the processes
    even connect."""
    micro = tc.batch_size // tc.grad_accum
    if micro % n_processes:
        raise UserError(f"the micro-batch {micro} (batch_size / grad_accum) does not split over "
                        f"{n_processes} processes; use a multiple of {n_processes} (and of the "
                        f"total number of devices)")


def _fresh_run_info(run: Run, corpus) -> dict:
    info = {"train_config": dataclasses.asdict(run.tc),
            "model_config": _jsonable(dataclasses.asdict(run.cfg)),
            "corpus": [str(c) for c in corpus],
            "data": {"n_train_blocks": len(run.blocks.train),
                     "n_val_blocks": len(run.blocks.val),
                     "vocab_size": run.blocks.vocab_size,
                     "fingerprint": _fingerprint(run.blocks)}}
    if run.source is not None:
        src = run.source
        info["init_from"] = {"spec": run.tc.init_from, "label": src.label,
                             "kind": src.kind, "seed": src.seed, "step": src.step}
    return info


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
    from bornbiased_jax.sources import load_source

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
    f = None if src.folder is None else Path(src.folder) / "tokenizer.json"
    if f is None or not f.is_file():
        raise UserError(f"the source model {src.label!r} has no tokenizer.json in its folder; "
                        f"pass --tokenizer with the tokenizer it was trained with")
    return str(f)


def _jsonable(obj):
    """``obj`` as JSON would read it back (tuples become lists), for comparisons."""
    return json.loads(json.dumps(obj))


def _saved_model_config(saved: dict, path: Path, now: ModelConfig) -> ModelConfig:
    """The run's recorded ModelConfig; a UserError naming the fields where it differs from what
    the preset gives now (e.g. after a preset was changed)."""
    if "model_config" not in saved:
        raise UserError(f"{str(path)!r} records no model configuration ('model_config'); it was "
                        f"made by an older version and cannot be resumed safely; use a new --out")
    diff = recorded_differences(saved["model_config"], now)
    if diff:
        raise UserError(f"the model this run was trained with differs from what preset "
                        f"{saved['train_config'].get('preset')!r} gives now; fields (recorded, "
                        f"now): {diff}. Resume with the code that made the run, or use a new --out")
    return now


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a metrics file; a line cut off by a crash is dropped."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
