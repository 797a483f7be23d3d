"""The sweep engine's plan: what a probe is, and how a sweep of S seeds x N sequences is cut.

:func:`plan_sweep` chooses the strategy ("vmap", "map" or "loop" over seeds), the device layout
and the chunk sizes from a memory budget: each seed's parameters and its init's temporaries
(:func:`build_bytes`) and the probe's working set per sequence, measured from XLA's analysis of
the compiled per-seed call (:func:`probe_working_set`). :mod:`bornbiased_jax.sweep` runs the
plan; both use the per-seed call defined here (:func:`run_one_fn`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, Sequence

import jax
import numpy as np

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError

Probe = Callable[[dict, jax.Array], Any]


@dataclasses.dataclass(frozen=True, eq=False)
class SplitProbe:
    """A probe in two stages, both written for one model and one sequence:
    ``head(params, features(params, x))``.

    The engine runs ``features`` over cache-sized batches of sequences and ``head`` once over
    the whole chunk. Probes that end in the unembedding (``features`` = the final normed state,
    ``head`` = a (d, V) matmul) then read W_U once per chunk instead of once per batch: on a CPU
    that matmul is bound by reading W_U (103 MB for GPT-2's vocabulary at d = 512).
    Calling a SplitProbe runs both stages, so it is also a plain probe."""

    features: Probe
    head: Callable[[dict, Any], Any]

    def __call__(self, params, x):
        return self.head(params, self.features(params, x))


STRATEGIES = ("auto", "vmap", "map", "loop")
# Tokens that go through the model together on a CPU. Measured on a 2-core CPU
# (gpt2-rope-cpu, T = 64): batches of 512-2,048 tokens keep a block's activations (tokens x
# d_ff floats) in the caches and ran at 75-85 % of the 2048^2 matmul rate; batches of
# 16,000-33,000 tokens at 54-61 %.
CPU_TOKENS_PER_BATCH = 1024


@dataclasses.dataclass(frozen=True)
class SweepPlan:
    """How a sweep is cut: ``seed_chunk`` seeds per call (a multiple of the number of devices
    along seeds; with "vmap" their parameters exist at once), ``map_batch`` seeds run together
    inside ``lax.map``,
    ``seq_chunk`` sequences per call (split over ``seq_devices`` devices), of which ``seq_batch``
    go through the model together on each device (a compiled loop over sequence batches when
    ``seq_batch`` is smaller than a device's share)."""

    strategy: str
    seed_chunk: int
    seq_chunk: int
    map_batch: int
    n_devices: int
    seq_batch: int
    seq_devices: int = 1  # devices along the sequence axis (> 1 when seeds < devices)


def param_bytes(cfg: ModelConfig, per_seed: bool = True) -> int:
    """Bytes of float32 parameters of one seed (the seed-dependent group when ``per_seed``)."""
    shapes = (jax.eval_shape(lambda k: model.init_blocks(cfg, k), jax.random.key(0))
              if (per_seed and cfg.shared_embedding) else model.param_shapes(cfg))
    return sum(4 * math.prod(x.shape) for x in jax.tree.leaves(shapes))


@functools.lru_cache(maxsize=64)
def build_bytes(cfg: ModelConfig) -> int:
    """Bytes one seed needs while its parameters are built: the parameters plus the init's
    temporaries (random bits before they become weights), from XLA's analysis of the compiled
    one-seed init (the parameters alone where the backend gives no statistics). For
    gpt2-rope-cpu on a CPU the temporaries are about 1.3 times the parameters."""
    stats = jax.jit(init_seed_fn(cfg)).lower(jax.random.key(0)).compile().memory_analysis()
    return param_bytes(cfg) + (stats.temp_size_in_bytes if stats is not None else 0)


def activation_bytes(cfg: ModelConfig, T: int) -> int:
    """Rough float32 working set of one forward of one sequence (attention scores and
    probabilities, d- and d_ff-wide activations, one row of logits). Only a fallback for
    :func:`plan_sweep` without a probe, or a backend without compiled-memory statistics: a
    probe may need far more (full T x V logits are 103 MB per sequence at T = 512,
    V = 50,257), which :func:`probe_working_set` measures."""
    per_token = 8 * cfg.d_model + 3 * cfg.d_ff + 2 * cfg.n_heads * T
    return 4 * T * per_token + 4 * cfg.vocab_size


def default_budget(devices: Sequence[jax.Device]) -> int:
    """Per-device memory budget: 40 % of a GPU/TPU's memory, 2 GiB on CPU."""
    # Another process's devices report no memory statistics here: ask one of this process's.
    me = jax.process_index()
    devices = [d for d in devices if getattr(d, "process_index", me) == me] or devices
    stats = devices[0].memory_stats() if devices[0].platform != "cpu" else None
    if stats and "bytes_limit" in stats:
        return int(0.4 * stats["bytes_limit"])
    return 2 << 30


# Sequences per vmapped batch at which an accelerator's working set is measured (the real
# chunk is then extrapolated linearly; see probe_working_set).
MEASURE_BATCH = 8


def init_seed_fn(cfg: ModelConfig):
    """init_seed(key) -> one seed's parameters (its seed-dependent group when the embeddings
    are shared)."""
    if cfg.shared_embedding:
        return lambda key: model.init_blocks(cfg, key)
    return lambda key: model.init(cfg, key)


def shared_params(cfg: ModelConfig) -> dict:
    """The seed-independent embedding group (empty unless ``cfg.shared_embedding``)."""
    return (model.init_embeddings(cfg, model.embed_key(cfg, None)) if cfg.shared_embedding
            else {})


def run_one_fn(probe: Probe, seq_batch: int):
    """run_one(seed_params, shared_params, xs (n, ...)) -> the probe's outputs (n, ...) for one
    seed: ``features`` over batches of ``seq_batch`` sequences (a compiled loop when n is
    larger), a SplitProbe's ``head`` once over all n."""
    features, head = ((probe.features, probe.head) if isinstance(probe, SplitProbe)
                      else (probe, None))

    def run_one(seed_params, shared_params, xs):
        params = {**seed_params, **shared_params}
        one = lambda x: features(params, x)  # noqa: E731
        if seq_batch >= xs.shape[0]:
            out = jax.vmap(one)(xs)
        else:  # a compiled loop over batches of seq_batch sequences, vmapped in each batch
            out = jax.lax.map(one, xs, batch_size=seq_batch)
        return out if head is None else jax.vmap(lambda f: head(params, f))(out)

    return run_one


@functools.lru_cache(maxsize=32)
def compiled_one(probe: Probe, seq_batch: int):
    """The jitted per-model call ``run_one(seed_params, shared_params, xs)`` (see
    :func:`run_one_fn`). The planner's measurement and :func:`bornbiased_jax.sweep.run_probe`
    both use this one object, so a chunk of the measured size is compiled once, and models of
    one shape share it."""
    return jax.jit(run_one_fn(probe, seq_batch))


@functools.lru_cache(maxsize=16)
def _init_avals(cfg: ModelConfig) -> tuple:
    """(seed parameters, shared parameters) of ``cfg`` as shapes (an abstract init)."""
    seed = (jax.eval_shape(init_seed_fn(cfg), jax.random.key(0)) if cfg.shared_embedding
            else model.param_shapes(cfg))
    return seed, jax.eval_shape(lambda: shared_params(cfg))


def _avals_key(params) -> tuple:
    """A hashable stand-in for a tree of arrays (or shapes): its structure, shapes, dtypes."""
    leaves, treedef = jax.tree_util.tree_flatten(params)
    return treedef, tuple((tuple(x.shape), np.dtype(x.dtype).name) for x in leaves)


@functools.lru_cache(maxsize=64)
def _call_bytes(cfg: ModelConfig, probe: Probe, row_shape: tuple, row_dtype: str,
                seq_batch: int, n: int, params_key: tuple | None) -> int | None:
    """Temporaries + outputs of the per-seed call on n sequences, from XLA's analysis of the
    compiled call; None when the backend gives no statistics."""
    if params_key is None:
        avals = _init_avals(cfg)
    else:
        treedef, leaves = params_key
        avals = treedef.unflatten([jax.ShapeDtypeStruct(s, d) for s, d in leaves])
    fn = compiled_one(probe, seq_batch if seq_batch > 0 else n)
    xs = jax.ShapeDtypeStruct((n, *row_shape), np.dtype(row_dtype))
    stats = fn.lower(*avals, xs).compile().memory_analysis()
    return None if stats is None else stats.temp_size_in_bytes + stats.output_size_in_bytes


def probe_working_set(cfg: ModelConfig, probe: Probe, row_shape: tuple, row_dtype: str,
                      seq_batch: int, params=None) -> tuple[int, int] | None:
    """(fixed, per_sequence) bytes that one seed's probe call needs besides its parameters and
    inputs, from XLA's own analysis of the compiled call (temporaries + outputs).

    The per-seed call is compiled (not run) for n = b and n = 2 b sequences of ``row_shape``;
    the working set is then ``fixed + n * per_sequence``, linear in n. With ``seq_batch`` = b
    > 0 the features run in batches of b (the CPU plan): outputs and a SplitProbe's head grow
    with n, the features' batch does not. With ``seq_batch`` = -b the call vmaps all n
    sequences at once (the accelerator plan), so the features' activations grow with n too and
    are counted. ``params``: the (seed parameters, shared parameters) the call will get, or
    their shapes; by default those of an abstract ``init(cfg)``. None when the backend gives
    no statistics."""
    b = abs(seq_batch)
    key = None if params is None else _avals_key(params)
    sizes = [_call_bytes(cfg, probe, tuple(row_shape), np.dtype(row_dtype).name, seq_batch, n,
                         key) for n in (b, 2 * b)]
    if None in sizes:
        return None
    per_seq = math.ceil(max(0, sizes[1] - sizes[0]) / b)
    return max(0, sizes[0] - per_seq * b), max(1, per_seq)


def _mesh_shape(n_devices: int, n_seeds: int, strategy: str) -> tuple[int, int]:
    """(devices along seeds, devices along sequences): seeds take as many devices as they can
    fill (a divisor of the device count), sequences share the rest, so 2 seeds on 8 devices
    run as 2 x 4 instead of padding the seeds to 8."""
    if strategy == "loop" or n_seeds >= n_devices:
        return n_devices, 1
    seed_dev = max(d for d in range(1, n_seeds + 1) if n_devices % d == 0)
    return seed_dev, n_devices // seed_dev


def plan_sweep(cfg: ModelConfig, n_seeds: int, n_seqs: int, T: int, *, strategy: str = "auto",
               seed_chunk: int | None = None, seq_chunk: int | None = None,
               map_batch: int | None = None, seq_batch: int | None = None,
               memory_budget: int | None = None,
               devices: Sequence[jax.Device] | None = None, probe: Probe | None = None,
               row_shape: tuple | None = None, row_dtype=None, params=None) -> SweepPlan:
    """Choose strategy, device layout and chunk sizes; half the per-device budget for the
    seeds a call builds at once (each seed's parameters and its init's temporaries,
    :func:`build_bytes`: with "vmap" all of a device's seeds in the call, with "map"
    ``map_batch`` of them, with "loop" one; the seed chunk is sized as if all were built at
    once, so it is conservative for "map" and "loop"), half for the probe's working set.

    With ``probe`` (and the shape and dtype of one input row), the working set comes from
    XLA's analysis of the compiled per-seed call: first the call of the chunk an unlimited
    budget would give (taken when it fits), else :func:`probe_working_set`'s per-sequence
    extrapolation; the calls are compiled for the shapes of ``params`` (the (seed parameters,
    shared parameters) the call will get) or of an abstract init. Without a probe, the working
    set is the rough :func:`activation_bytes`. On CPUs the sequences of a call also go through
    the model in batches of about ``CPU_TOKENS_PER_BATCH`` tokens, so that a block's
    activations stay in cache (fewer sequences than two such batches go through as one)."""
    if strategy not in STRATEGIES:
        raise UserError(f"unknown strategy {strategy!r}; choose one of {STRATEGIES}")
    for name, v in (("seed_chunk", seed_chunk), ("seq_chunk", seq_chunk),
                    ("map_batch", map_batch), ("seq_batch", seq_batch),
                    ("memory_budget", memory_budget)):
        if v is not None and v < 1:
            raise UserError(f"{name} must be positive, got {v} (seed_chunk, seq_chunk, "
                            f"map_batch, seq_batch and memory_budget must be positive)")
    devices = list(devices or jax.devices())
    nd = len(devices)
    cpu = devices[0].platform == "cpu"
    if strategy == "auto":
        strategy = "map" if cpu else "vmap"
    budget = memory_budget or default_budget(devices)
    if map_batch is None:
        # Measured on a 2-core CPU (benchmarks/sweep_throughput.py): one seed at a time inside
        # lax.map with large sequence chunks ran fastest; wider groups only add batched-GEMM
        # overhead there. On accelerators map_batch only matters for strategy="map".
        map_batch = 1 if cpu else 8
    seed_dev, seq_dev = _mesh_shape(nd, n_seeds, strategy)
    if seed_chunk is None:
        fit = max(1, (budget // 2) // max(1, build_bytes(cfg)))
        seed_chunk = _balanced(n_seeds, fit * seed_dev, 1)
    seed_chunk = seed_dev * math.ceil(min(seed_chunk, n_seeds) / seed_dev)  # beyond S only pads
    local_seqs = math.ceil(n_seqs / seq_dev)  # sequences per device if one call took them all
    cpu_batch = max(1, CPU_TOKENS_PER_BATCH // T) if cpu else None
    if cpu_batch is not None and cpu_batch < local_seqs < 2 * cpu_batch:
        # Fewer than two batches: one batch of them all (under 2 x CPU_TOKENS_PER_BATCH
        # tokens, inside the range measured fast), not a batch and a ragged rest, which
        # lax.map runs as a second body: the program to trace and compile would double.
        cpu_batch = local_seqs
    if seq_chunk is None:
        parallel = {"vmap": seed_chunk // seed_dev, "map": min(map_batch, seed_chunk // seed_dev),
                    "loop": 1}[strategy]
        b0 = min(seq_batch or cpu_batch or MEASURE_BATCH, local_seqs)
        # Without a fixed batch (accelerators) a call vmaps its whole chunk: measure it so.
        measured = b0 if (seq_batch or cpu_batch) else -b0
        per_call = (budget // 2) // parallel
        multiple = min(cpu_batch or 1, local_seqs)
        # The chunk an unlimited budget would give (whole CPU batches, at most 512 sequences,
        # no more than there are: the clamp below), compiled at the size a run gives it.
        local = min(_balanced(local_seqs, 512, multiple), local_seqs)
        fixed, per_seq = 0, activation_bytes(cfg, T)
        fits = False
        if probe is not None:
            args = (cfg, probe, tuple(row_shape), np.dtype(row_dtype).name, measured)
            key = None if params is None else _avals_key(params)
            # That chunk's own call is compiled first: when its working set fits, it is the
            # plan (and run_probe reuses the compilation); otherwise the working set is
            # measured at b and 2 b sequences and extrapolated.
            whole = _call_bytes(*args, local, key)
            fits = whole is not None and whole <= per_call
            if not fits:
                fixed, per_seq = (probe_working_set(*args, params=params)
                                  or (fixed, per_seq))
        if not fits:
            most = max(1, min(512, max(0, per_call - fixed) // per_seq))
            # Whole CPU batches per call, unless even one batch does not fit.
            local = _balanced(local_seqs, most, min(cpu_batch or 1, local_seqs, most))
        seq_chunk = seq_dev * local
    seq_chunk = seq_dev * math.ceil(min(seq_chunk, seq_dev * local_seqs) / seq_dev)
    if seq_batch is None:
        seq_batch = cpu_batch or seq_chunk // seq_dev
    seq_batch = min(seq_batch, seq_chunk // seq_dev)
    return SweepPlan(strategy, int(seed_chunk), int(seq_chunk), int(map_batch), nd,
                     int(seq_batch), int(seq_dev))


def _balanced(n: int, most: int, multiple: int) -> int:
    """The chunk size that cuts n items into the fewest chunks of at most ``most`` (rounded up
    to ``multiple``) with the least padding: every call then has the same shape, so it compiles
    once, and the last chunk is padded by less than one chunk's worth of rounding."""
    most = max(multiple, most // multiple * multiple)
    n_chunks = math.ceil(n / most)
    return multiple * math.ceil(math.ceil(n / n_chunks) / multiple)
