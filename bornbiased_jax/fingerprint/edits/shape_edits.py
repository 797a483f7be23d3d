"""Edits that change a model's shape: the descendants auditors meet that are no longer the same
width, depth or vocabulary as their base. Each takes a parameter dict (nested dicts of arrays,
as ``model.init`` returns; kernels (in, out)) and its config, and returns (config, new
parameters) plus, for :func:`layer_origin` and :func:`vocab_origin`, where each layer and each
token id of the result came from. Inputs are never modified.

MLP width (gated or not; the MLP's biases follow their units):
  :func:`pad_mlp`          k new units; ``dead=False``: random gate/up columns and zero down
                           rows (function-preserving: the units are live but write nothing);
                           ``dead=True``: zero gate, up and down (a padded intermediate size,
                           function-preserving, the units constant);
  :func:`split_mlp_units`  k units each split in two, their down rows halved
                           (function-preserving);
  :func:`prune_mlp_width`  structured pruning: the units of least importance removed
                           (Minitron / Sheared-LLaMA style; importance :func:`unit_importance`:
                           ||W_up[:, i]|| x ||W_down[i, :]||, gated: x ||W_gate[:, i]||);
  :func:`mask_mlp_units`   the same units zeroed in place (masked pruning; the width stays).
Depth:
  :func:`drop_layers`      layers removed (ShortGPT);
  :func:`insert_identity`  a fresh block whose output projections are zero (function-preserving);
  :func:`depth_upscale`    SOLAR's depth up-scaling: layers [0, L - m) then [m, L);
  :func:`shift_layers`     an identity block at 0 and the last layer dropped (shapes unchanged).
The vocabulary's edits are :mod:`.vocab_edits`'.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import schema
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError


def host_copy(tree):
    return jax.tree.map(lambda a: np.array(a, dtype=np.asarray(a).dtype), tree)


def returns_jax(edit):
    """The edit with its parameters returned as ``jax.Array`` leaves, as every edit returns."""
    @functools.wraps(edit)
    def wrapped(*args, **kw):
        cfg, params = edit(*args, **kw)
        return cfg, jax.tree.map(jnp.asarray, params)
    return wrapped


def numpy_rng(key) -> np.random.Generator:
    return np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel())


def _layers(params: dict) -> list[str]:
    names = sorted((k for k in params if k.startswith("layers_")),
                   key=lambda k: int(k.removeprefix("layers_")))
    if not names:
        raise UserError("the parameter tree has no layers_<i>: not a decoder of this project")
    return names


def _check_mlp(cfg: ModelConfig) -> None:
    if not cfg.has_mlp:
        raise UserError(f"{cfg.name} has no MLP: its width cannot be edited")


# ------------------------------------------------------------------------------ MLP width
def _unit_columns(mlp: dict, index: np.ndarray) -> dict:
    """The MLP's parameters restricted (or re-ordered, repeated) to the units ``index``."""
    out = {}
    for name, p in mlp.items():
        out[name] = {}
        for leaf, a in p.items():
            if name == "down_proj":
                out[name][leaf] = a[index] if leaf == "kernel" else a  # down bias: per output
            else:
                out[name][leaf] = a[..., index]  # gate/up kernel (d, F), bias (F,)
    return out


def _with_mlp(params: dict, cfg: ModelConfig, edit) -> tuple[ModelConfig, dict]:
    p = host_copy(params)
    widths = set()
    for name in _layers(p):
        p[name]["mlp"] = edit(p[name]["mlp"], int(name.removeprefix("layers_")))
        widths.add(p[name]["mlp"]["down_proj"]["kernel"].shape[0])
    if len(widths) != 1:
        raise UserError(f"the edit left MLP widths {sorted(widths)}: every layer must keep one")
    return dataclasses.replace(cfg, d_ff=widths.pop()), p


@returns_jax
def pad_mlp(params: dict, cfg: ModelConfig, k: int, key, *, dead: bool = False
            ) -> tuple[ModelConfig, dict]:
    """k units added to every MLP layer after the F existing ones. ``dead``: zero gate, up and
    down (constant units, as padded intermediate sizes leave); else gate and up columns drawn
    with the std of the layer's own columns and zero down rows (live units writing nothing).
    Both function-preserving."""
    _check_mlp(cfg)
    if k < 1:
        raise UserError(f"pad_mlp adds k >= 1 units, got {k}")
    rng = numpy_rng(key)

    def edit(mlp, _):
        out = {}
        for name, p in mlp.items():
            out[name] = {}
            for leaf, a in p.items():
                if name == "down_proj":
                    out[name][leaf] = (np.concatenate([a, np.zeros((k, a.shape[1]), a.dtype)])
                                       if leaf == "kernel" else a)
                elif leaf == "kernel" and not dead:
                    new = rng.normal(0, float(a.std()), (a.shape[0], k)).astype(a.dtype)
                    out[name][leaf] = np.concatenate([a, new], axis=1)
                else:
                    out[name][leaf] = np.concatenate([a, np.zeros(a.shape[:-1] + (k,), a.dtype)],
                                                     axis=-1)
        return out
    return _with_mlp(params, cfg, edit)


@returns_jax
def split_mlp_units(params: dict, cfg: ModelConfig, k: int, key) -> tuple[ModelConfig, dict]:
    """k units of every layer (drawn at random) each split in two: the copy appended after the
    F units with the same gate and up columns, the down rows of both halved (the unit's output
    is their sum: function-preserving)."""
    _check_mlp(cfg)
    F = cfg.d_ff
    if not 1 <= k <= F:
        raise UserError(f"split_mlp_units splits 1 <= k <= F = {F} units, got {k}")
    rng = numpy_rng(key)

    def edit(mlp, _):
        chosen = rng.choice(F, k, replace=False)
        out = _unit_columns(mlp, np.concatenate([np.arange(F), chosen]))
        down = out["down_proj"]["kernel"]
        down[chosen] *= 0.5
        down[F:] *= 0.5
        return out
    return _with_mlp(params, cfg, edit)


def unit_importance(mlp: dict) -> np.ndarray:
    """A unit's importance for structured pruning: ||W_up[:, i]|| x ||W_down[i, :]||, times
    ||W_gate[:, i]|| in a gated MLP (the norm product that bounds the unit's output)."""
    s = (np.linalg.norm(mlp["up_proj"]["kernel"], axis=0)
         * np.linalg.norm(mlp["down_proj"]["kernel"], axis=1))
    if "gate_proj" in mlp:
        s = s * np.linalg.norm(mlp["gate_proj"]["kernel"], axis=0)
    return s


def _least_important(mlp: dict, frac: float) -> np.ndarray:
    F = mlp["down_proj"]["kernel"].shape[0]
    n = int(round(frac * F))
    if not 0 < n < F:
        raise UserError(f"pruning a share {frac} of {F} units removes {n}: it must remove at "
                        f"least one unit and keep at least one")
    return np.sort(np.argsort(unit_importance(mlp), kind="stable")[:n])


@returns_jax
def prune_mlp_width(params: dict, cfg: ModelConfig, frac: float) -> tuple[ModelConfig, dict]:
    """Structured width pruning: in every layer the ``frac`` share of units of least
    :func:`unit_importance` removed, the others kept in their order (not
    function-preserving)."""
    _check_mlp(cfg)

    def edit(mlp, _):
        drop = _least_important(mlp, frac)
        keep = np.setdiff1d(np.arange(mlp["down_proj"]["kernel"].shape[0]), drop)
        return _unit_columns(mlp, keep)
    return _with_mlp(params, cfg, edit)


@returns_jax
def mask_mlp_units(params: dict, cfg: ModelConfig, frac: float) -> tuple[ModelConfig, dict]:
    """Masked pruning: the units :func:`prune_mlp_width` would remove zeroed in place (gate,
    up and down; biases of those units too), the width unchanged (not function-preserving:
    the zeroed units' outputs are gone; the units are constant, dead in every view)."""
    _check_mlp(cfg)

    def edit(mlp, _):
        drop = _least_important(mlp, frac)
        out = host_copy(mlp)
        for name, p in out.items():
            for leaf, a in p.items():
                if name == "down_proj":
                    if leaf == "kernel":
                        a[drop] = 0
                else:
                    a[..., drop] = 0
        return out
    return _with_mlp(params, cfg, edit)


# ----------------------------------------------------------------------------------- depth
def _relayer(params: dict, cfg: ModelConfig, origin: list) -> tuple[ModelConfig, dict]:
    """A model whose layer j is BASE's layer ``origin[j]`` (a copy), or the given layer dict."""
    p = host_copy(params)
    names = _layers(p)
    blocks = [p[n] for n in names]
    for n in names:
        del p[n]
    for j, o in enumerate(origin):
        p[f"layers_{j}"] = host_copy(blocks[o]) if isinstance(o, (int, np.integer)) else o
    if not origin:
        raise UserError("the edit would leave no layer")
    # each copied layer keeps its attention type (and RoPE); a new block attends to everything
    return cfg.relayered([o if isinstance(o, (int, np.integer)) else None for o in origin]), p


@returns_jax
def drop_layers(params: dict, cfg: ModelConfig, layers) -> tuple[ModelConfig, dict]:
    """The layers ``layers`` removed, the others renumbered in order (ShortGPT)."""
    bad = [l for l in layers if not 0 <= l < cfg.n_layers]
    if bad:
        raise UserError(f"no layer {bad} in a model of {cfg.n_layers} layers")
    return _relayer(params, cfg, [l for l in range(cfg.n_layers) if l not in set(layers)])


def identity_block(params: dict, cfg: ModelConfig, key) -> dict:
    """A fresh block shaped like layer 0: projections drawn N(0, init_std^2) except the
    attention's and the MLP's output projections (o_proj, down_proj), which are zero, so the
    block adds nothing to the residual stream; norm gains 1, biases 0."""
    rng = numpy_rng(key)
    template = host_copy(params[_layers(params)[0]])

    def fill(path, a):
        if path[-1] == "scale":
            return np.ones_like(a)
        if path[-1] == "bias" or schema.writes_residual((_layers(params)[0],) + path):
            return np.zeros_like(a)
        return rng.normal(0, cfg.init_std, a.shape).astype(a.dtype)
    return jax.tree_util.tree_map_with_path(
        lambda kp, a: fill(tuple(getattr(k, "key", str(k)) for k in kp), a), template)


@returns_jax
def insert_identity(params: dict, cfg: ModelConfig, at: int, key) -> tuple[ModelConfig, dict]:
    """:func:`identity_block` inserted before layer ``at`` (function-preserving)."""
    if not 0 <= at <= cfg.n_layers:
        raise UserError(f"insert at 0..{cfg.n_layers}, got {at}")
    origin = list(range(cfg.n_layers))
    return _relayer(params, cfg, origin[:at] + [identity_block(params, cfg, key)] + origin[at:])


@returns_jax
def depth_upscale(params: dict, cfg: ModelConfig, m: int) -> tuple[ModelConfig, dict]:
    """SOLAR's depth up-scaling: two copies stacked, the first without its last m layers and
    the second without its first m (2L - 2m layers)."""
    L = cfg.n_layers
    if not 0 <= m < L:
        raise UserError(f"depth up-scaling removes 0 <= m < L = {L} layers per copy, got {m}")
    return _relayer(params, cfg, list(range(L - m)) + list(range(m, L)))


@returns_jax
def shift_layers(params: dict, cfg: ModelConfig, key) -> tuple[ModelConfig, dict]:
    """An identity block at 0 and the last layer dropped: the same depth and widths, every
    layer one place later (not function-preserving: the last layer is gone)."""
    return _relayer(params, cfg, [identity_block(params, cfg, key)]
                    + list(range(cfg.n_layers - 1)))


def layer_origin(cfg: ModelConfig, edit: str, **kw) -> list[int | None]:
    """For each layer of the edited model, BASE's layer it is a copy of (None: a new block)."""
    L = cfg.n_layers
    if edit == "drop":
        return [l for l in range(L) if l not in set(kw["layers"])]
    if edit == "insert":
        return list(range(kw["at"])) + [None] + list(range(kw["at"], L))
    if edit == "upscale":
        return list(range(L - kw["m"])) + list(range(kw["m"], L))
    if edit == "shift":
        return [None] + list(range(L - 1))
    return list(range(L))
