"""The matchings' jitted programs (``unit_matching``): reciprocal best partners of two views
and the layer screen's margins, each written so that XLA's CPU compiler runs it on every core.

Three rules, measured on a 2-core CPU (the same values either way): a product and the
reductions that follow it are separate programs (fused, the epilogue and reductions along both
axes ran on one core); an arg-max is a max and a min over the positions at the top (XLA's CPU
arg-max is a two-value reduction several times slower), and so is a check for ties; the left
factor of a product is a contiguous (units, rows) array (a transposed one runs on one core).
Two matchings run at once on :data:`WORKERS` threads: their reductions still take one core
each.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np

WORKERS = min(2, os.cpu_count() or 1)  # matchings computed at once (threads)


def rows_last(z: np.ndarray) -> np.ndarray:
    """(R, F) views as a contiguous float32 (F, R) array: the left factor of the products
    below in the layout XLA's CPU matmul runs on every core (a transposed left factor runs
    on one, about 2.5 times slower on 2 cores)."""
    return np.ascontiguousarray(np.asarray(z, np.float32).T)


def parallel(f, items) -> list:
    """[f(x) for x in items], on :data:`WORKERS` threads: XLA runs a reduction of the
    matchings on one core, so two matchings at once keep both cores of a small CPU busy."""
    items = list(items)
    if WORKERS < 2 or len(items) < 2:
        return [f(x) for x in items]
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(f, items))


def reciprocal_partners(zaT, zb, la, lb):
    """``unit_matching.partners`` of live units (``la``, ``lb``; each side has one): a dead
    unit's |r| is set to -1, below every live one, so that the arg-maxes and ties read live
    units alone, as if the dead ones were not there. ``zaT``: A's views (F_A, R). Three
    programs, not one (the module docstring): about twice as fast for 1,536 units."""
    c = _abs_r(zaT, zb, la, lb)  # (F_A, F_B)
    best_b, unique_b = _best(c, 1)  # for each unit of A, its best of B
    best_a, unique_a = _best(c, 0)  # for each unit of B, its best of A
    return _mutual(best_b, unique_b, best_a, unique_a, la, lb)


@jax.jit
def _abs_r(zaT, zb, la, lb):
    return jnp.where(la[:, None] & lb[None, :], jnp.abs(zaT @ zb), -1.0)


@functools.partial(jax.jit, static_argnums=1)
def _best(c, axis: int):
    """Along ``axis`` of c: the first position of the largest value and whether it is the
    only one at that value (the rest's largest is below it). Plain max and min reductions:
    XLA's CPU arg-max (a two-value reduction) and a count of the ties run several times
    slower."""
    top = c.max(axis, keepdims=True)
    pos = jax.lax.broadcasted_iota(jnp.int32, c.shape, axis)
    best = jnp.min(jnp.where(c == top, pos, c.shape[axis]), axis, keepdims=True)
    unique = jnp.where(pos == best, -jnp.inf, c).max(axis, keepdims=True) < top
    return jnp.squeeze(best, axis), jnp.squeeze(unique, axis)


@jax.jit
def _mutual(best_b, unique_b, best_a, unique_a, la, lb):
    # a best that ties with another is decided by the units' labels, which a relabelling
    # moves: such a unit takes no partner (exact ties need degenerate views, e.g. two rows)
    mutual = ((best_a[best_b] == jnp.arange(best_b.shape[0])) & unique_b & unique_a[best_b]
              & la & lb[best_b])
    return jnp.where(mutual, best_b, -1)


def margins(zaT, zb, L_B: int):
    """One row of ``unit_matching.screen``: A's screened units ``zaT`` (U, R) against B's
    ``L_B`` layers of one width ``zb`` (R, L_B F_B), F_B >= 2: per B layer the mean margin of each
    unit's best |r| over its second (a tie for the best leaves no margin, as a partition
    would). The product and the margins are two programs (see :func:`reciprocal_partners`)."""
    return _layer_margins(_product(zaT, zb), zaT.shape[1], L_B)


@jax.jit
def _product(x, y):
    return x @ y


@functools.partial(jax.jit, static_argnums=(1, 2))
def _layer_margins(c, R: int, L_B: int):
    c = (jnp.abs(c) / R).reshape(c.shape[0], L_B, -1)  # (U, L_B, F_B)
    top = c.max(-1, keepdims=True)
    # the runner-up: the largest value but the first at the top (a tie for the top is the
    # runner-up too), by max and min reductions, as in _best
    pos = jax.lax.broadcasted_iota(jnp.int32, c.shape, 2)
    first = jnp.min(jnp.where(c == top, pos, c.shape[-1]), -1, keepdims=True)
    second = jnp.where(pos == first, -jnp.inf, c).max(-1, keepdims=True)
    return (top - second)[..., 0].mean(0)
