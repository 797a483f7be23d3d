"""The parameter tree every edit walks: a map over leaves that knows each leaf's role
(``schema.parameter_role``, which refuses a path the schema lacks, so a new kind of parameter
cannot be skipped silently by an edit)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import jax.numpy as jnp

from bornbiased_jax.schema import parameter_role

Path = tuple[str, ...]


def map_roles(params: dict, fn: Callable[[Path, str, Any], Any]) -> dict:
    """A new nested dict with ``fn(path, role, leaf)`` at every leaf (as a jax.Array)."""
    def walk(tree, path):
        if hasattr(tree, "items"):
            return {k: walk(v, path + (str(k),)) for k, v in tree.items()}
        return jnp.asarray(fn(path, parameter_role(path), tree))
    return walk(params, ())


def leaves(params: dict, path: Path = ()) -> Iterable[tuple[Path, str, Any]]:
    """(path, role, leaf) of every leaf, in tree order."""
    for k, v in params.items():
        if hasattr(v, "items"):
            yield from leaves(v, path + (str(k),))
        else:
            yield path + (str(k),), parameter_role(path + (str(k),)), v


def layer_index(path: Path) -> int:
    return int(path[0].removeprefix("layers_"))
