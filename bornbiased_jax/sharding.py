"""Training state over the device mesh: logical axis names and one table of rules (maxtext-style).

Every dimension of every parameter has a *logical* name saying what it is (``vocab``,
``embed`` = d_model, ``qkv`` = heads x head_dim, ``mlp`` = d_ff, ...), read from the
parameter schema (``schema.py``) by the parameter's path. A table of *rules* maps logical
names to axes of the device mesh; model code never mentions devices. The training mesh has one axis,
``data`` (and, for a run of several seeds, a second axis ``seeds`` over which the seeds' states
are split: :func:`with_seed_axis`):

  * data parallelism (``RULES_DATA_PARALLEL``, no rules): every parameter and Adam moment is
    whole on every device; only the batch is split over ``data``;
  * FSDP (``RULES_FSDP``: ``embed -> data``): every matrix and its two Adam moments are split
    along d_model over the ``data`` devices, so a device holds 1/n of them, and XLA gathers
    each weight where the step needs it (GSPMD inserts the all-gathers and reduce-scatters).

A dimension whose size the mesh axis does not divide stays whole (every preset's d_model
divides a power-of-two mesh of up to 64 devices). Norm scales and biases are tiny and stay
replicated.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import optax
from jax.sharding import NamedSharding, PartitionSpec as P

from bornbiased_jax import schema

RULES_DATA_PARALLEL: tuple[tuple[str, str], ...] = ()
RULES_FSDP: tuple[tuple[str, str], ...] = ((schema.RESIDUAL, "data"),)


def logical_axes(path, ndim: int) -> tuple[str | None, ...]:
    """Logical names of a parameter's dimensions from its tree path (``schema.LEAVES``); a
    vector (a norm's gain, a bias) and an unknown parameter get no names: they stay whole on
    every device (a few KB each; splitting them saves nothing)."""
    keys = [str(getattr(k, "key", getattr(k, "name", k))) for k in path]
    found = schema.find(keys)
    if ndim < 2 or found is None or len(found.axes) != ndim:
        return (None,) * ndim
    return found.axes


def partition_spec(names: tuple[str | None, ...], shape: tuple[int, ...], rules,
                   mesh) -> P:
    """The mesh axes of a parameter: each logical name through ``rules``, kept only where the
    mesh axis divides the dimension (and each mesh axis used once)."""
    table, used, spec = dict(rules), set(), []
    for name, size in zip(names, shape):
        axis = table.get(name)
        if axis is not None and axis not in used and size % mesh.shape[axis] == 0:
            spec.append(axis)
            used.add(axis)
        else:
            spec.append(None)
    return P(*spec)


def param_shardings(params: Any, mesh, rules) -> Any:
    """A NamedSharding for each parameter (``params`` may hold arrays or ShapeDtypeStructs)."""
    return jax.tree_util.tree_map_with_path(
        lambda path, x: NamedSharding(mesh, partition_spec(
            logical_axes(path, len(x.shape)), tuple(x.shape), rules, mesh)), params)


def state_shardings(state: Any, optimizer: optax.GradientTransformation, mesh, rules) -> Any:
    """Shardings of a training state ``{'params', 'opt_state', 'step', 'data_position'}``:
    Adam's moments follow their parameters, counters and everything else are replicated."""
    params = param_shardings(state["params"], mesh, rules)
    replicated = NamedSharding(mesh, P())
    opt = optax.tree_map_params(optimizer, lambda _, s: s, state["opt_state"], params,
                                transform_non_params=lambda _: replicated)
    return {**jax.tree.map(lambda _: replicated, state), "params": params, "opt_state": opt}


def with_seed_axis(shardings: Any, axis: str = "seeds") -> Any:
    """Shardings of a state whose arrays gained a leading seed axis (a run of several seeds):
    that axis over the mesh axis ``axis`` (whole where the mesh has no such axis), the other
    dimensions as in ``shardings``."""
    return jax.tree.map(lambda s: NamedSharding(s.mesh, P(
        axis if axis in s.mesh.axis_names else None, *s.spec)), shardings)


def bytes_per_device(shapes: Any, shardings: Any) -> int:
    """Bytes one device holds of arrays ``shapes`` (ShapeDtypeStructs) laid out as
    ``shardings`` (the most any device holds, for uneven layouts)."""
    sizes = jax.tree.map(
        lambda x, s: math.prod(s.shard_shape(tuple(x.shape))) * x.dtype.itemsize,
        shapes, shardings)
    return int(sum(jax.tree.leaves(sizes)))
