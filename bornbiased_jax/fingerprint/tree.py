"""The parameter tree every edit walks: a name for the role of each leaf, and a map over
leaves that knows it (:func:`parameter_role` refuses a path it does not know, so a new kind
of parameter cannot be skipped silently by an edit)."""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Sequence

import jax.numpy as jnp

from bornbiased_jax.errors import UserError

Path = tuple[str, ...]

_ATTN_PROJ = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj")  # gate: the output gate
_MLP_PROJ = ("gate_proj", "up_proj", "down_proj")
_KNOWN = ("embed/embedding, pos_embed/embedding, lm_head/kernel, final_norm/{scale,bias}, "
          "layers_<i>/{attn_norm,mlp_norm,attn_post_norm,mlp_post_norm}/{scale,bias}, "
          "layers_<i>/attn/{head_norm,q_norm,k_norm}/scale, "
          "layers_<i>/attn/{q,k,v,o,gate}_proj/{kernel,bias}, "
          "layers_<i>/mlp/{gate,up,down}_proj/{kernel,bias}")


def parameter_role(path: Sequence[str]) -> str:
    """'embedding', 'head' (lm_head/kernel), 'norm' (a residual-stream norm: before or, with
    Gemma's sandwich norms, after a sublayer, or the final one), 'head_norm', 'qk_norm' (Gemma's
    per-head norm of queries and keys, in a head's basis), 'kernel' or 'bias' (of a block's
    projection) for a parameter path; a ``UserError`` naming any other path."""
    p = tuple(path)
    if p in (("embed", "embedding"), ("pos_embed", "embedding")):
        return "embedding"
    if p == ("lm_head", "kernel"):
        return "head"
    if len(p) == 2 and p[0] == "final_norm" and p[1] in ("scale", "bias"):
        return "norm"
    if len(p) >= 3 and re.fullmatch(r"layers_\d+", p[0]):
        if len(p) == 3 and p[1] in ("attn_norm", "mlp_norm", "attn_post_norm",
                                    "mlp_post_norm") and p[2] in ("scale", "bias"):
            return "norm"
        if len(p) == 4 and p[1:] == ("attn", "head_norm", "scale"):
            return "head_norm"
        if len(p) == 4 and p[1] == "attn" and p[2] in ("q_norm", "k_norm") and p[3] == "scale":
            return "qk_norm"
        if len(p) == 4 and p[3] in ("kernel", "bias") and (
                (p[1] == "attn" and p[2] in _ATTN_PROJ) or (p[1] == "mlp" and p[2] in _MLP_PROJ)):
            return p[3]
    raise UserError(f"no edit rule for parameter {'/'.join(p)}; the edits know {_KNOWN}")


def _map(params: dict, fn: Callable[[Path, str, Any], Any]) -> dict:
    """A new nested dict with ``fn(path, role, leaf)`` at every leaf (as a jax.Array)."""
    def walk(tree, path):
        if hasattr(tree, "items"):
            return {k: walk(v, path + (str(k),)) for k, v in tree.items()}
        return jnp.asarray(fn(path, parameter_role(path), tree))
    return walk(params, ())


def _leaves(params: dict, path: Path = ()) -> Iterable[tuple[Path, str, Any]]:
    """(path, role, leaf) of every leaf, in tree order."""
    for k, v in params.items():
        if hasattr(v, "items"):
            yield from _leaves(v, path + (str(k),))
        else:
            yield path + (str(k),), parameter_role(path + (str(k),)), v


def _layer(path: Path) -> int:
    return int(path[0].removeprefix("layers_"))
