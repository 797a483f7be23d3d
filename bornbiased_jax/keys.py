"""Seeds and key streams: the PRNG key is the seed.

Every random quantity in the project derives from an explicit ``jax.random`` key. A run splits one
integer seed into *named streams* (model init, shared embedding, probe inputs, data order) by
folding in a stable hash of the stream's name, so adding a stream never changes another one.
Parameters are keyed the same way by their path name (as in penzai), so the same seed gives the
same weights however the initialisation code is ordered.
"""

from __future__ import annotations

import zlib
from typing import Iterable

import jax
import numpy as np

from bornbiased_jax.defaults import SEED_LIMIT, SEED_RANGE
from bornbiased_jax.errors import UserError

# The model key of a seed is ``seed_key(seed)`` itself; these are the other named streams.
STREAMS = ("embed", "probe", "data", "bbm")  # "bbm": the Bigram-Backcopy generator


def name_hash(name: str) -> int:
    """A stable 31-bit hash of ``name`` (Python's ``hash`` is salted per process)."""
    return zlib.crc32(name.encode("utf-8")) & 0x7FFF_FFFF


def fold_in_name(key: jax.Array, name: str) -> jax.Array:
    """``key`` specialised to ``name``: independent of every other name, stable across runs."""
    return jax.random.fold_in(key, name_hash(name))


def seed_key(seed: int) -> jax.Array:
    """The model key of an integer seed: ``jax.random.key(seed)`` (typed threefry key).

    Seeds are not derived by splitting a parent key, so model 42 is the same model whether it
    was built alone or as one of 256 seeds in a sweep.
    """
    check_seed(seed)
    return jax.random.key(int(seed))


def check_seed(seed) -> int:
    """``seed`` as an int, or a UserError saying what a seed may be."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise UserError(f"a seed must be an integer, got {seed!r}")
    if not 0 <= int(seed) < SEED_LIMIT:
        raise UserError(f"a seed must lie in {SEED_RANGE}, got {seed}")
    return int(seed)


def seed_list(seeds: Iterable[int]) -> list[int]:
    """Any iterable of integer seeds (list, range, array, generator) as a validated list: read
    once, so a generator is not exhausted by a first pass."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise UserError(f"seeds must be an iterable of integers (e.g. [42, 43] or range(8)), "
                        f"got {seeds!r}")
    out = [check_seed(s) for s in seeds]
    if not out:
        raise UserError("the seed list is empty; give at least one seed")
    return out


def seed_keys(seeds: Iterable[int]) -> jax.Array:
    """Stacked model keys, shape (S,), for an iterable of integer seeds."""
    return jax.vmap(jax.random.key)(np.asarray(seed_list(seeds), dtype=np.uint32))


def stream_key(seed: int, stream: str) -> jax.Array:
    """The key of a named stream ('probe', 'data', ...) of an integer seed."""
    if stream not in STREAMS:
        raise UserError(f"unknown key stream {stream!r}; streams are {STREAMS}")
    return fold_in_name(seed_key(seed), f"stream/{stream}")
