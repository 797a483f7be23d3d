"""The sweep engine: one probe, S seeds x N sequences, jitted once, chunked to fit memory.

A *probe* is written for one model and one input sequence: ``probe(params, x) -> pytree`` where
``x`` is a (T,) token array or a (T, d) embedding array. The engine

  1. builds each seed's parameters from ``jax.random.key(seed)`` inside the same compiled call
     that runs the probe, so they are temporaries of that call and never a stacked chunk that
     outlives it (with "map", the parameters of ``map_batch`` seeds exist at a time; a sweep
     cut into several sequence chunks builds each seed once per chunk); the embedding group is
     built once and shared when ``cfg.shared_embedding`` (the paper's protocol);
  2. batches sequences with ``vmap`` and seeds with one of three strategies:
       "vmap" - all seeds of a chunk at once (fastest on GPUs, memory-hungry on CPUs),
       "map"  - ``lax.map(..., batch_size=map_batch)``, a compiled loop over small vmapped groups
                (fastest measured on the 2-core CPU with map_batch=1; memory stays bounded),
       "loop" - a Python loop over seeds of one jitted per-seed function;
  3. runs each call's sequences through the model in batches of ``seq_batch`` (a compiled loop;
     on CPUs about 1,024 tokens per batch, so that a block's activations stay in cache), and a
     ``SplitProbe``'s head once over the whole call;
  4. shards the seed axis over ``devices`` with ``jax.shard_map`` when there are several (and
     the sequence axis too when there are fewer seeds than devices); the shared embeddings
     are placed on every device once;
  5. returns host numpy arrays with leading axes (S, N).

With several processes (``bornbiased_jax.distributed``; JAX's multi-controller runtime) the
devices are all processes' devices: each process builds only the seeds its own devices hold,
every process runs the same compiled calls, and the outputs are gathered into every process
(``multihost_utils.process_allgather``); the caller writes them from process 0. The plan is
process 0's, so that all processes run one program.

The plan and the per-seed call are :mod:`bornbiased_jax.sweep_plan`'s (importable from here).

:func:`run_probe` runs a probe over the sequences for ONE given parameter set (a trained
checkpoint, an import) with the same per-model call, planner, padding and output assembly.

Sizes (seed chunk, sequence chunk) are derived from a memory budget unless given (the probe's
working set per sequence from XLA's analysis of the compiled call), and cut the
seeds and sequences into equal chunks; the last chunk is padded, so that every call has one
shape and the sweep compiles once. The same seed gives the same result whatever the strategy,
chunking or device count: parameters are bitwise identical (threefry is vmap-invariant); probe
outputs are equal to float32 rounding (batched and unbatched matmuls may round differently),
which the tests bound.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from pathlib import Path
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from tqdm.auto import tqdm

from bornbiased_jax import distributed, model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_keys, seed_list
from bornbiased_jax.sweep_plan import (  # noqa: F401  (the engine's public names, one import)
    CPU_TOKENS_PER_BATCH, MEASURE_BATCH, STRATEGIES, Probe, SplitProbe, SweepPlan,
    activation_bytes, build_bytes, compiled_one, default_budget, param_bytes, plan_sweep,
    probe_working_set)
from bornbiased_jax.sweep_plan import init_seed_fn, run_one_fn, shared_params  # noqa: F401
from bornbiased_jax.sweep_identity import (probe_identity, requested_plan, open_state,  # noqa: F401
                                           sweep_identity, params_sha256)


class _Compiled:
    """The jitted call of one (cfg, probe, plan, devices): ``run(keys, xs)`` builds each seed's
    parameters from its key and runs the probe on ``xs`` in one compiled call, so the
    parameters are temporaries of that call (with "map", those of ``map_batch`` seeds at a
    time), never a stacked chunk that outlives it."""

    def __init__(self, cfg: ModelConfig, probe: Probe, plan: SweepPlan, devices):
        self.cfg, self.plan = cfg, plan
        init_seed = init_seed_fn(cfg)
        run_one = run_one_fn(probe, plan.seq_batch)

        def build_and_run(key, shared_params, xs):
            return run_one(init_seed(key), shared_params, xs)

        shared = jax.jit(lambda: shared_params(cfg))
        self.keys_sharding = self.seqs_sharding = None  # set when the mesh spans processes
        if plan.strategy == "loop":
            self.shared_params = shared()
            self.run_seed = jax.jit(build_and_run)
            return
        if plan.strategy == "vmap":
            run_local = jax.vmap(build_and_run, in_axes=(0, None, None))
        else:
            def run_local(keys, shared_params, xs):
                return jax.lax.map(lambda k: build_and_run(k, shared_params, xs), keys,
                                   batch_size=plan.map_batch)
        if plan.n_devices > 1:
            # Seeds are split over the mesh's first axis, sequences over its second (size 1
            # unless there are fewer seeds than devices). The shared embeddings are placed on
            # every device once, not copied from device 0 on each call.
            seed_dev = plan.n_devices // plan.seq_devices
            mesh = Mesh(np.asarray(devices).reshape(seed_dev, plan.seq_devices),
                        ("seeds", "seqs"))
            run_local = jax.shard_map(run_local, mesh=mesh,
                                      in_specs=(P("seeds"), P(), P("seqs")),
                                      out_specs=P("seeds", "seqs"))
            if mesh.is_multi_process:
                # Built on every device by one compiled call (a mesh spanning processes
                # cannot take a copy from one device); inputs are placed piece by piece, each
                # process its own devices' pieces, so each builds only its own seeds.
                shared = jax.jit(shared, out_shardings=NamedSharding(mesh, P()))()
                self.keys_sharding = NamedSharding(mesh, P("seeds"))
                self.seqs_sharding = NamedSharding(mesh, P("seqs"))
            else:
                shared = jax.device_put(shared(), NamedSharding(mesh, P()))
        else:
            shared = jax.device_put(shared(), devices[0])
        self.shared_params = shared
        self.run_many = jax.jit(run_local)

    def place_keys(self, keys):
        """The seed chunk's keys as the call takes them (a global array over the processes'
        devices, sharded along seeds, when the mesh spans processes)."""
        if self.keys_sharding is None:
            return keys
        return jax.random.wrap_key_data(distributed.global_array(
            jax.random.key_data(keys), self.keys_sharding))

    def run(self, keys, xs):
        """The probe's outputs (seeds, sequences, ...) of the models of ``keys`` on ``xs``."""
        if self.plan.strategy == "loop":
            outs = [self.run_seed(k, self.shared_params, xs) for k in keys]
            return jax.tree.map(lambda *a: jnp.stack(a), *outs)
        if self.seqs_sharding is not None:
            xs = distributed.global_array(xs, self.seqs_sharding)
        return self.run_many(self.place_keys(keys), self.shared_params, xs)


@functools.lru_cache(maxsize=16)
def _compiled(cfg: ModelConfig, probe: Probe, plan: SweepPlan, devices: tuple) -> _Compiled:
    """Compiled functions are reused by later sweeps with the same model, probe and plan."""
    return _Compiled(cfg, probe, plan, devices)


def sweep(probe: Probe, cfg: ModelConfig, seeds: Sequence[int], inputs: jax.Array | np.ndarray,
          *, strategy: str = "auto", seed_chunk: int | None = None,
          seq_chunk: int | None = None, map_batch: int | None = None,
          seq_batch: int | None = None,
          memory_budget: int | None = None, devices: Sequence[jax.Device] | None = None,
          progress: bool = False, desc: str = "sweep", state=None,
          state_identity: dict | None = None, allow_version_change: bool = False):
    """Run ``probe`` for every seed on every input sequence.

    Args:
      probe: ``probe(params, x)`` for one model and one sequence ``x``, or a ``SplitProbe``.
      seeds: an iterable of integer seeds (read once); seed s is the model ``init(cfg, jax.random.key(s))``.
      inputs: (N, T) token ids or (N, T, d) input embeddings, shared by all seeds: an array or a
        lazy probe set from ``probes.inputs`` (anything with ``shape`` and first-axis slicing).
      state: a folder where each finished call's outputs are saved at once
        (:mod:`bornbiased_jax.resume`); the same call with the same folder resumes from the
        finished chunks with the saved plan, bitwise the uninterrupted result. A folder that
        holds another run's state is refused, naming the differences. Or the store that
        :func:`sweep_state` opened for the same arguments (a ValueError if they differ).
      state_identity: with ``state``, what the engine cannot see for itself: at least
        ``{"probe": name}`` (a probe is code; its name stands for it), and anything else that
        fixes the outputs.
    Returns:
      the probe's pytree with host numpy leaves of shape (S, N, ...).
    """
    seeds = seed_list(seeds)  # any iterable, read once; validates: non-empty, integers in range
    keys = seed_keys(seeds)
    inputs, N, T = check_inputs(cfg, inputs)
    devices = list(devices or jax.devices())
    requested = requested_plan(strategy=strategy, seed_chunk=seed_chunk, seq_chunk=seq_chunk,
                           map_batch=map_batch, seq_batch=seq_batch,
                           memory_budget=memory_budget)
    store = None
    if state is not None:
        store = open_state(state, sweep_identity(state_identity, cfg, seeds, inputs, devices,
                                              requested), "a sweep", allow_version_change)
    if store is not None and store.plan is not None:
        plan = SweepPlan(**store.plan)  # resume with the plan the first chunks were run with
    else:
        plan = plan_sweep(cfg, len(seeds), N, T, devices=devices, probe=probe,
                          row_shape=tuple(inputs.shape[1:]),
                          row_dtype=jnp.asarray(inputs[:1]).dtype, **requested)
    if jax.process_count() > 1:
        plan = _one_plan_for_all_processes(plan)
    if store is not None:
        store.set_plan(dataclasses.asdict(plan))
    compiled = None  # compiled on the first chunk that is not already saved

    def compute(s0: int, n0: int):
        # The last chunks of seeds and of sequences are padded with copies of their last
        # key / row, so every call has one shape (one compilation); padding is dropped.
        nonlocal compiled
        if compiled is None:
            compiled = _compiled(cfg, probe, plan, tuple(devices))
        k = _pad_rows(keys[s0:s0 + plan.seed_chunk], plan.seed_chunk)
        xs = _pad_rows(jnp.asarray(inputs[n0:min(n0 + plan.seq_chunk, N)]), plan.seq_chunk)
        return distributed.to_host(compiled.run(k, xs))

    return _run_chunks(compute, (len(seeds), N), (plan.seed_chunk, plan.seq_chunk), store,
                       progress=progress, desc=desc)


def sweep_state(state: str | Path, cfg: ModelConfig, seeds: Sequence[int], inputs, *,
                state_identity: dict, devices: Sequence[jax.Device] | None = None,
                allow_version_change: bool = False, **plan_settings):
    """The :class:`~bornbiased_jax.resume.ChunkStore` that ``sweep(probe, cfg, seeds, inputs,
    state=state, state_identity=state_identity, **plan_settings)`` would open, opened now: a
    command opens all of its states before any work (a state of other settings is refused
    before anything is computed) and passes each to :func:`sweep` as ``state``.
    ``plan_settings``: sweep's ``strategy``, ``seed_chunk``, ``seq_chunk``, ``map_batch``,
    ``seq_batch``, ``memory_budget``."""
    seeds = seed_list(seeds)
    inputs, _, _ = check_inputs(cfg, inputs)
    ident = sweep_identity(state_identity, cfg, seeds, inputs, list(devices or jax.devices()),
                            requested_plan(**plan_settings))
    return open_state(state, ident, "a sweep", allow_version_change)


def _run_chunks(compute, lead: tuple[int, ...], sizes: tuple[int, ...], store, *,
                progress: bool, desc: str):
    """The chunk loop of :func:`sweep` (``lead`` = (S, N)) and :func:`run_probe` (``lead`` =
    (N,)): the leading axes cut into chunks of ``sizes``, in order (seeds outer), each read
    back from ``store`` when it is saved there, else computed by ``compute(*first indices)``
    (a result padded to ``sizes``) and saved at once under ``(first seed, first sequence)``
    (first seed 0 for one model). Freed heap pages go back to the OS after each seed chunk.
    Returns the outputs' tree with leading shape ``lead``."""
    out = _Outputs(lead)
    starts = list(itertools.product(*(range(0, n, c) for n, c in zip(lead, sizes))))
    with tqdm(total=len(starts), initial=store.n_done if store is not None else 0, desc=desc,
              disable=not progress, unit="chunk") as bar:
        for i, start in enumerate(starts):
            index = tuple(slice(a, min(a + c, n)) for a, c, n in zip(start, sizes, lead))
            key = (0,) * (2 - len(start)) + start
            if store is not None and store.done(key):
                out.put(index, store.load(key), padded=False)
            else:
                t0 = time.perf_counter()
                out.put(index, compute(*start))
                if store is not None:
                    store.save(key, out.get(index), time.perf_counter() - t0)
                bar.update(1)
            if len(lead) == 2 and (i + 1 == len(starts) or starts[i + 1][0] != start[0]):
                _release_freed_memory()
    return out.tree


def run_probe(probe: Probe, cfg: ModelConfig, params: dict, inputs, *,
              seq_chunk: int | None = None, seq_batch: int | None = None,
              memory_budget: int | None = None, progress: bool = False, desc: str = "probe",
              state=None, state_identity: dict | None = None,
              allow_version_change: bool = False):
    """Run ``probe`` on every input sequence for ONE given parameter set (a trained checkpoint,
    an imported model; fresh initialisations of many seeds are :func:`sweep`'s).

    ``state``, ``state_identity``: as for :func:`sweep` (the parameters' SHA-256 is part of the
    identity, so a state never resumes with another model; an opened store is
    :func:`probe_state`'s).

    The same per-model call as a sweep's (``features`` in batches of ``seq_batch`` sequences,
    a ``SplitProbe``'s head once per call), planned by :func:`plan_sweep` for one model on
    this process's first device, compiled once per (probe, plan) and reused for every model
    of that shape.

    Args:
      probe: ``probe(params, x)`` for one model and one sequence ``x``, or a ``SplitProbe``.
      params: the model's parameters (all of them, embeddings included).
      inputs: (N, T) token ids or (N, T, d) input embeddings: an array or a lazy probe set.
    Returns:
      the probe's pytree with host numpy leaves of shape (N, ...).
    """
    inputs, N, T = check_inputs(cfg, inputs)
    device = jax.local_devices()[0]
    requested = dict(seq_chunk=seq_chunk, seq_batch=seq_batch, memory_budget=memory_budget)
    store = None
    if state is not None:
        store = open_state(state, probe_identity(state_identity, cfg, params, inputs, device,
                                              requested), "run_probe", allow_version_change)
    if store is not None and store.plan is not None:
        plan = SweepPlan(**store.plan)
    else:
        plan = plan_sweep(cfg, 1, N, T, strategy="loop", seed_chunk=1, devices=[device],
                          probe=probe, row_shape=tuple(inputs.shape[1:]),
                          row_dtype=jnp.asarray(inputs[:1]).dtype, params=(params, {}),
                          **requested)
    if store is not None:
        store.set_plan(dataclasses.asdict(plan))
    fn = compiled_one(probe, plan.seq_batch)

    def compute(n0: int):
        xs = _pad_rows(jnp.asarray(inputs[n0:min(n0 + plan.seq_chunk, N)]), plan.seq_chunk)
        return jax.device_get(fn(params, {}, xs))

    return _run_chunks(compute, (N,), (plan.seq_chunk,), store, progress=progress, desc=desc)


def probe_state(state: str | Path, cfg: ModelConfig, params: dict, inputs, *,
                state_identity: dict, allow_version_change: bool = False,
                seq_chunk: int | None = None, seq_batch: int | None = None,
                memory_budget: int | None = None):
    """The store that :func:`run_probe` with these arguments would open, opened now (see
    :func:`sweep_state`)."""
    inputs, _, _ = check_inputs(cfg, inputs)
    requested = dict(seq_chunk=seq_chunk, seq_batch=seq_batch, memory_budget=memory_budget)
    ident = probe_identity(state_identity, cfg, params, inputs, jax.local_devices()[0],
                            requested)
    return open_state(state, ident, "run_probe", allow_version_change)


def check_inputs(cfg: ModelConfig, inputs) -> tuple[Any, int, int]:
    """(inputs, N, T): ``inputs`` as an array-like with ``shape`` and first-axis slicing; a
    UserError unless they are (N, T) tokens or (N, T, d) embeddings with N >= 1 and T within
    the model's context."""
    if not hasattr(inputs, "shape"):
        inputs = np.asarray(inputs)
    if len(inputs.shape) not in (2, 3) or inputs.shape[0] < 1:
        raise UserError(f"inputs must be (N, T) tokens or (N, T, d) embeddings with N >= 1, "
                        f"got shape {tuple(inputs.shape)}")
    N, T = int(inputs.shape[0]), int(inputs.shape[1])
    model.check_seq_len(cfg, T)
    return inputs, N, T


class _Outputs:
    """Host arrays of leading shape ``lead`` (seeds and/or sequences) for a probe's pytree,
    allocated from the first call's result and filled call by call, padding dropped."""

    def __init__(self, lead: tuple[int, ...]):
        self.lead, self.tree = lead, None

    def put(self, index: tuple[slice, ...], res, padded: bool = True) -> None:
        """Write the real part of one call's result ``res`` (leading axes padded, unless
        ``padded`` is False) at ``index``."""
        k = len(self.lead)
        if self.tree is None:
            self.tree = jax.tree.map(lambda a: np.empty(self.lead + a.shape[k:], a.dtype), res)
        real = tuple(slice(0, sl.stop - sl.start) for sl in index)
        jax.tree.map(lambda o, a: o.__setitem__(index, a[real] if padded else a),
                     self.tree, res)

    def get(self, index: tuple[slice, ...]):
        """The outputs written at ``index`` (copies)."""
        return jax.tree.map(lambda o: np.array(o[index]), self.tree)


def _one_plan_for_all_processes(plan: SweepPlan) -> SweepPlan:
    """Process 0's plan (each process measured its own; one program needs one plan). The
    'loop' strategy runs seeds on one device and is refused: it cannot spread them."""
    if plan.strategy == "loop":
        raise UserError(f"strategy 'loop' runs every seed on one device; with "
                        f"{jax.process_count()} processes use 'map' or 'vmap', which spread "
                        f"the seeds over all processes' devices")
    sizes = ("seed_chunk", "seq_chunk", "map_batch", "n_devices", "seq_batch", "seq_devices")
    got = distributed.same_on_all_processes(tuple(getattr(plan, f) for f in sizes))
    return dataclasses.replace(plan, **dict(zip(sizes, got)))


def _pad_rows(a: jax.Array, n: int) -> jax.Array:
    """``a`` extended to n rows with copies of its last row."""
    pad = n - a.shape[0]
    return jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]) if pad else a


def _release_freed_memory() -> None:
    """Return freed heap pages to the OS between seed chunks (glibc only; a no-op elsewhere).

    glibc keeps freed pages in per-thread arenas; trimming them keeps the resident set between
    chunks near the sweep's working set (measured for 256 seeds of gpt2-rope-cpu, 16 sequences
    of 16 tokens: 476-652 MB after each chunk with it, 655-737 MB without; the sweep's peak,
    664 and 749 MB, is flat in the number of seeds either way)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _load_libc():
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - raises AttributeError off glibc
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _load_libc()
