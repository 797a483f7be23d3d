"""One training step of every seed of a run, as one jitted program: the loss, the state and
its initialisation, the device mesh and the state's and batch's shardings, the train and
evaluation steps.

Seeds. A run trains S initialisation seeds (``TrainConfig.init_seeds``; S = 1 for a
single-seed run) with one jitted step: parameters and Adam moments carry a leading seed axis,
and the per-seed step (gradient, clipping, AdamW) is vmapped over it, every seed on the same
batch. The seed axis is split over a ``seeds`` axis of the device mesh (as many devices as
divide both S and the device count), the batch over the remaining ``data`` devices
(:func:`training_mesh`). A step may train the seeds in groups, one after another, from one
compiled program (``group_size``; ``seed_plan`` chooses it from the memory the step needs).
A seed's numbers do not depend on the other seeds; with groups of more than one seed they
depend on the group size only through the summation order of XLA's batched matrix products
(float32 rounding), and a group of one runs the per-seed step unbatched, exactly as a
single-seed run.

The state (:func:`init_state`) holds parameters, Adam moments, the step and the data
position, and no RNG key. ``fsdp`` shards parameters and Adam moments over the ``data``
devices (``sharding.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from bornbiased_jax import distributed, model, sharding
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_keys
from bornbiased_jax.training.config import SEED_BATCHING, TrainConfig


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


def seeds_along(mesh: Mesh) -> int:
    """The number of devices along the mesh's 'seeds' axis."""
    return mesh.shape["seeds"] if "seeds" in mesh.axis_names else 1


def resolve_seed_batching(seed_batching: str, mesh: Mesh) -> str:
    """'vmap' or 'map' for ``seed_batching`` on ``mesh``: 'auto' is 'map' on a CPU (measured
    on 2 cores: one program of 4 or 16 seeds trained them 1.23-1.27x as fast as as many
    single-seed runs one after another, 'vmap' 0.67-0.74x; benchmarks/results/
    train_seeds_cpu.md) and 'vmap' on accelerators; 'map' needs the seeds on one device along
    the mesh's 'seeds' axis."""
    if seed_batching not in SEED_BATCHING:
        raise UserError(f"unknown seed batching {seed_batching!r}; choose one of "
                        f"{SEED_BATCHING}")
    cpu = mesh.devices.ravel()[0].platform == "cpu"
    if seed_batching == "auto":
        seed_batching = "map" if cpu and seeds_along(mesh) == 1 else "vmap"
    if seed_batching == "map" and seeds_along(mesh) > 1:
        raise UserError(f"seed batching 'map' loops over seeds on one device, but the mesh "
                        f"spreads them over {seeds_along(mesh)} devices; use 'vmap' (or auto)")
    return seed_batching


def make_train_step(cfg: ModelConfig, tc: TrainConfig, optimizer, mesh: Mesh,
                    state_sharding=None, group_size: int | None = None,
                    seed_batching: str = "vmap"):
    """(state, blocks (A, B/A, T+1), group) -> (state, metrics): one optimiser step of the
    seeds of group ``group`` (``seed_plan.group_order``; ``group_size`` seeds of each device's
    share, default all of them). A group's seeds go through the step batched by ``vmap``
    (each matrix product batched over them) or one after another in a compiled loop
    (``seed_batching='map'``: ``lax.map``, each seed's products unbatched, one seed's
    working set at a time). Gradients are averaged over the A micro-batches by a scan;
    the micro-batch axis B/A is sharded over the mesh's 'data' axis; the state is laid out
    as ``state_sharding`` (default :func:`state_shardings`), and is donated: the group's
    seeds are updated in place. Step and data position advance with the last group. Metrics
    ('loss', 'grad_norm') hold one number per seed of the group."""
    n_seeds = len(tc.init_seeds)
    along = seeds_along(mesh)
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
    elif seed_batching == "map":
        if along > 1:
            raise ValueError("seed batching 'map' needs one device along the mesh's 'seeds'")

        def seeds_step(params, opt_state, blocks):
            return jax.lax.map(lambda po: one_seed(po[0], po[1], blocks), (params, opt_state))
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


def abstract_state(cfg: ModelConfig, tc: TrainConfig, optimizer, state_sharding: dict) -> dict:
    """The stacked training state as ``jax.ShapeDtypeStruct`` leaves laid out as
    ``state_sharding``: what a compiled step takes and a checkpoint is read into (nothing is
    built)."""
    shapes = jax.eval_shape(lambda: init_state(cfg, tc, optimizer))
    return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                        shapes, state_sharding)
