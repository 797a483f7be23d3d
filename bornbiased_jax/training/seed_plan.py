"""The seed-group memory planner: how many of a run's seeds one step trains at once.

When S seeds' working sets do not fit the memory budget at once, each step runs the seeds in
groups, one after another, from the one compiled program (:func:`plan_seed_groups`, from XLA's
memory analysis of the compiled step); where even the seeds' state does not fit, the run is
refused with the number of seeds that would (:func:`seed_group_size`). :func:`group_order`
says which seeds each group trains.
"""

from __future__ import annotations

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from bornbiased_jax.errors import UserError
from bornbiased_jax.training.step import (abstract_state, batch_sharding, make_train_step,
                                          resolve_seed_batching, seeds_along)


def default_memory_budget(devices) -> int:
    """Bytes of one device that training may plan for: 90 % of an accelerator's memory (the
    bytes XLA's allocator may use); on a CPU a quarter of the host's memory, shared by this
    process's CPU devices (``--memory-budget-gib`` sets it)."""
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
    batching: str = "vmap"  # how a group's seeds go through the step: 'vmap' or 'map'

    @property
    def n_groups(self) -> int:
        return self.n_seeds // self.seeds_along // self.group_size

    def describe(self) -> str:
        if self.n_groups == 1:
            how = "" if self.n_seeds == 1 else f", {self.batching} over seeds"
            return f"{self.n_seeds} seed(s) in one program{how}"
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
                     most: int | None = None, seed_batching: str = "auto"):
    """(SeedPlan, the step for it). One seed: no plan. Several: the step is compiled
    for groups of one seed per device, and XLA's memory analysis of it gives the whole state
    (every seed's parameters and moments, resident throughout) and one seed's working set of
    a step (its activations, gradients and their scratch) per device; :func:`seed_group_size`
    chooses the group, of at most ``most`` seeds per device when given (``--seed-chunk``). With
    ``seed_batching`` 'map' (``step.resolve_seed_batching``; 'auto' on a CPU) a group's seeds
    run one after another inside the step, so a group needs one seed's working set at a time:
    the group is the largest (of at most ``most``) whose compiled step, by XLA's memory
    analysis, fits the budget. A UserError, before
    any training, if even one seed per device at a time does not fit."""
    n = len(tc.init_seeds)
    along = seeds_along(mesh)
    batching = resolve_seed_batching(seed_batching, mesh)
    abstract = (abstract_state(cfg, tc, optimizer, state_sharding),
                jax.ShapeDtypeStruct((tc.grad_accum, tc.batch_size // tc.grad_accum,
                                      tc.seq_len + 1), jnp.int32, sharding=batch_sharding(mesh)),
                jax.ShapeDtypeStruct((), jnp.int32, sharding=NamedSharding(mesh, P())))

    def compile_for(g):
        return make_train_step(cfg, tc, optimizer, mesh, state_sharding, g,
                               batching).lower(*abstract).compile()

    if n == 1:  # nothing to plan: compiled at its first call
        return (SeedPlan(n, along, 1, None, None, None),
                make_train_step(cfg, tc, optimizer, mesh, state_sharding, 1))
    one = compile_for(1)
    budget = budget or default_memory_budget(mesh.devices.ravel())
    sizes = _compiled_bytes(one)
    if sizes is None:  # the backend gives no statistics: unplanned, as many as allowed
        per = n // along
        g = max(d for d in range(1, min(per, most or per) + 1) if per % d == 0)
        return (SeedPlan(n, along, g, None, None, None, batching),
                one if g == 1 else compile_for(g))
    if batching == "map":
        # One seed's working set at a time whatever the group, so the largest group whose
        # compiled step (state, the group's outputs, scratch) fits the budget; g = 1 is
        # checked by the same rule as vmap's.
        seed_group_size(n, along, *sizes, budget, 1)
        per = n // along
        for g in sorted((d for d in range(2, min(per, most or per) + 1) if per % d == 0),
                        reverse=True):
            step = compile_for(g)
            used = _compiled_bytes(step)
            if used is None or sum(used) <= budget:
                return SeedPlan(n, along, g, budget, *sizes, batching), step
        return SeedPlan(n, along, 1, budget, *sizes, batching), one
    g = seed_group_size(n, along, *sizes, budget, most)
    plan = SeedPlan(n, along, g, budget, *sizes, batching)
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
            f"--memory-budget-gib")
    return max(d for d in range(1, min(per, most or per) + 1)
               if per % d == 0 and state_bytes + d * step <= budget)


def group_order(n_seeds: int, mesh: Mesh, group_size: int) -> list[np.ndarray]:
    """The seed positions (indices into ``init_seeds``) that each group of a step trains, in
    the order its metrics come back: with d devices along 'seeds', each holding n_seeds / d
    consecutive seeds, group i takes seeds [i g, (i + 1) g) of every device's share."""
    d = seeds_along(mesh)
    per = n_seeds // d
    return [np.asarray([k * per + i * group_size + j for k in range(d)
                        for j in range(group_size)]) for i in range(per // group_size)]
