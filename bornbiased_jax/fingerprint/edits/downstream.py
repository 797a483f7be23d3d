"""The edits a downstream user, or a thief, applies to a released model: what a lineage test
must see through. Each acts on a plain parameter dict (nested dicts of arrays, as
``model.init`` returns) and returns a NEW dict of ``jax.Array`` leaves; inputs are never
modified. Kernels are (in, out) as everywhere in the project.

  LoRA          :func:`init_lora`, :func:`lora_merge` (W' = W + s A B, A (in, r), B (r, out)),
                :func:`lora_trainable_mask` (train the adapters with the base frozen);
  quantization  :func:`quantize_int8`, :func:`quantize_int4`: weight-only round trips
                (quantize, then dequantize to float32); :func:`quarot_int4`: a randomized
                Hadamard rotation of the residual stream, then int4 (QuaRot's weight path);
  pruning       :func:`prune_magnitude` (unstructured), :func:`prune_2_4` (2:4 structured);
  merging       :func:`average`, :func:`task_arithmetic`;
  obfuscation   function-preserving re-parametrisations (:mod:`.obfuscation`): the
                residual-basis permutation, MLP hidden units, attention heads, norm gains;
                (:mod:`.rotation`) residual rotations and sign flips, MLP unit scales, V/O maps.

Which parameters an edit touches. Every leaf of the tree has a role in the parameter schema
(``schema.parameter_role``, re-exported here), which raises a ``UserError`` naming a path it
does not know, so a new kind of parameter cannot be skipped silently. Quantization and pruning act on the blocks' 2-D
projection kernels (``layers_<i>/{attn,mlp}/*_proj/kernel``); with ``embeddings=True`` also on
the embedding group: ``embed/embedding`` (V, d), ``pos_embed/embedding`` and ``lm_head/kernel``
(d, V), which common weight-only schemes leave in float. Norm gains, biases and the head-wise
norm are never quantized or pruned. The merges are element-wise, so they apply alike to every
leaf of any tree whose structure and shapes agree.

Quantization is symmetric with scale s = max|w| / qmax over a channel or group: int8 per output
channel (a kernel's column; an embedding table's row, i.e. per token, which is the output
channel of a tied unembedding), codes in [-127, 127]; int4 per group of ``group_size``
consecutive weights along the input axis of each output channel, codes in [-7, 7] (the code
-8 is left unused, so the grid is symmetric and max|w| lands on a code). When ``group_size``
does not divide the input width, the last group of each channel is shorter. The dequantized
weight k max|w| / qmax is computed in float64 and rounded once to float32, so each group's
extreme maps back exactly to +-max|w|; hence a second round trip changes nothing, bitwise.
Written by hand because the round trip is a few lines of numpy and ``qwix`` (JAX's
quantization library) fits neither the project nor this grid: it is not a dependency; its
per-array ``qwix.quantize`` takes the scale max|w| / (qmax + 0.5), not the max|w| / qmax whose
error bound s / 2 the tests check; and its model-level path (``quantize_model``) intercepts
Flax module calls instead of rewriting a parameter dict.

The function-preserving obfuscations are :mod:`bornbiased_jax.fingerprint.edits.obfuscation`'s.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits.rotation import (check_rotatable, randomized_hadamard,
                                                       rotate_residual)
from bornbiased_jax.fingerprint.edits.tree import Path, leaves, map_roles
from bornbiased_jax.schema import parameter_role  # noqa: F401  (part of this API)
from bornbiased_jax.keys import fold_in_name

# The LoRA targets: the usual seven; "attn/gate_proj" (the optional output gate) on request.
LORA_TARGETS = ("attn/q_proj", "attn/k_proj", "attn/v_proj", "attn/o_proj",
                "mlp/gate_proj", "mlp/up_proj", "mlp/down_proj")
_LORA_ALLOWED = LORA_TARGETS + ("attn/gate_proj",)


def _input_axis(role: str, embeddings: bool) -> int | None:
    """The input (contracted) axis of a quantizable / prunable matrix, or None to keep it."""
    if role == "kernel":
        return 0
    if embeddings and role == "head":
        return 0
    if embeddings and role == "embedding":
        return 1  # a table (n, d) is read as the unembedding W_E^T (d, n): rows are channels
    return None


def _on_matrices(params: dict, embeddings: bool, edit_io: Callable[[np.ndarray, str], np.ndarray]
                 ) -> dict:
    """``edit_io`` on every selected matrix, laid out (in, out); other leaves unchanged."""
    def fn(path, role, leaf):
        axis = _input_axis(role, embeddings)
        if axis is None:
            return leaf
        w = np.asarray(leaf)
        if w.ndim != 2:
            raise UserError(f"parameter {'/'.join(path)} should be a matrix, has shape {w.shape}")
        return edit_io(w, "/".join(path)) if axis == 0 else edit_io(w.T, "/".join(path)).T
    return map_roles(params, fn)


# --- LoRA -----------------------------------------------------------------------------------------
def _lora_modules(params: dict, targets: Iterable[str]) -> dict[Path, tuple[int, int]]:
    """{(layers_<i>, attn|mlp, name): kernel shape (in, out)} of the kernels named by
    ``targets`` (each in ``_LORA_ALLOWED``), in tree order."""
    wanted = set(targets)
    for t in wanted - set(_LORA_ALLOWED):
        raise UserError(f"unknown LoRA target {t!r}; allowed: {', '.join(_LORA_ALLOWED)}")
    return {p[:-1]: np.shape(x) for p, role, x in leaves(params)
            if role == "kernel" and "/".join(p[1:-1]) in wanted}


def init_lora(params: dict, cfg: ModelConfig, rank: int, key: jax.Array,
              targets: Iterable[str] | None = None, b_std: float = 0.0) -> dict:
    """LoRA adapters {layers_<i>: {attn|mlp: {name: {"A": (in, r), "B": (r, out)}}}}.

    A ~ U(-1/sqrt(in), 1/sqrt(in)) (PEFT's default), B = 0, so merging a fresh adapter is the
    identity; ``b_std`` > 0 draws B ~ N(0, b_std^2) instead (a stand-in for a trained
    adapter). ``targets``: names among "attn/{q,k,v,o}_proj", "mlp/{gate,up,down}_proj" and
    "attn/gate_proj" (the output gate); None: those of ``LORA_TARGETS`` the model has; a named
    target the model lacks is a ``UserError``. Each adapter's key is ``key`` folded with its
    path, so adding a target never changes another adapter."""
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise UserError(f"the LoRA rank must be a positive integer, got {rank!r}")
    if not (isinstance(b_std, (int, float)) and math.isfinite(b_std) and b_std >= 0):
        raise UserError(f"b_std must be a finite number >= 0, got {b_std!r}")
    d = np.shape(params.get("embed", {}).get("embedding", np.zeros((0, 0))))[1]
    if d != cfg.d_model:
        raise UserError(f"these parameters have d_model={d}, the config {cfg.name} "
                        f"{cfg.d_model}; give the config the parameters were built with")
    modules = _lora_modules(params, LORA_TARGETS if targets is None else tuple(targets))
    for t in () if targets is None else tuple(targets):
        if not any("/".join(m[1:]) == t for m in modules):
            raise UserError(f"LoRA target {t!r} matches no kernel of {cfg.name}")
    adapters: dict = {}
    for mod, (n_in, n_out) in modules.items():
        if rank > min(n_in, n_out):
            raise UserError(f"LoRA rank {rank} exceeds min(in, out) = {min(n_in, n_out)} of "
                            f"{'/'.join(mod)}/kernel ({n_in}, {n_out})")
        ka, kb = jax.random.split(fold_in_name(key, "/".join(mod)))
        bound = 1.0 / math.sqrt(n_in)
        A = jax.random.uniform(ka, (n_in, rank), jnp.float32, -bound, bound)
        B = b_std * jax.random.normal(kb, (rank, n_out), jnp.float32)
        adapters.setdefault(mod[0], {}).setdefault(mod[1], {})[mod[2]] = {"A": A, "B": B}
    return adapters


def lora_merge(params: dict, adapters: dict, scale: float = 1.0) -> dict:
    """W' = W + scale A B at every adapted kernel (``scale`` is PEFT's alpha / r). Pure jnp,
    so differentiable and jit-able in ``adapters``. An adapter at a path that is no targetable
    kernel of ``params``, or whose shapes do not fit it, is a ``UserError``."""
    pairs: dict[Path, dict] = {}

    def collect(tree, path):
        if set(tree) == {"A", "B"}:
            pairs[path] = tree
            return
        for k, v in tree.items():
            if not hasattr(v, "items"):
                raise UserError(f"LoRA adapter entry {'/'.join(path + (str(k),))} is not in an "
                                f"{{'A': (in, r), 'B': (r, out)}} pair")
            collect(v, path + (str(k),))
    collect(adapters, ())
    kernels = _lora_modules(params, _LORA_ALLOWED)
    for mod, ab in pairs.items():
        if mod not in kernels:
            raise UserError(f"LoRA adapter at {'/'.join(mod) or '<root>'} matches no targetable "
                            f"kernel of these parameters; adapters sit at layers_<i>/<target>, "
                            f"targets {', '.join(_LORA_ALLOWED)}")
        (n_in, n_out), sa, sb = kernels[mod], np.shape(ab["A"]), np.shape(ab["B"])
        if len(sa) != 2 or len(sb) != 2 or (sa[0], sb[1], sb[0]) != (n_in, n_out, sa[1]):
            raise UserError(f"LoRA adapter at {'/'.join(mod)}: A {sa} and B {sb} do not fit "
                            f"the kernel ({n_in}, {n_out}); need A (in, r) and B (r, out)")

    def fn(path, role, leaf):
        ab = pairs.get(path[:-1]) if role == "kernel" else None
        if ab is None:
            return leaf
        delta = jnp.matmul(ab["A"], ab["B"], precision=jax.lax.Precision.HIGHEST)
        return leaf + (scale * delta).astype(jnp.asarray(leaf).dtype)
    return map_roles(params, fn)


def lora_trainable_mask(params: dict, adapters: dict) -> dict:
    """The mask of the joint tree {"params": params, "lora": adapters}: False on the base,
    True on the adapters. Freeze the base with labels rather than ``optax.masked`` alone
    (which passes unmasked gradients through unchanged)::

        labels = jax.tree.map(lambda m: "lora" if m else "frozen", mask)
        tx = optax.multi_transform({"lora": optax.adam(1e-3), "frozen": optax.set_to_zero()},
                                   labels)
        loss(joint) = f(lora_merge(joint["params"], joint["lora"], scale))
    """
    return {"params": jax.tree.map(lambda _: False, params),
            "lora": jax.tree.map(lambda _: True, adapters)}


# --- weight-only quantization ---------------------------------------------------------------------
def _fake_quant(w_io: np.ndarray, qmax: int, group: int | None) -> np.ndarray:
    """Quantize-dequantize a matrix (in, out): scale max|w| / qmax per output column, or per run
    of ``group`` consecutive input rows of each column (the last run shorter if need be)."""
    w = np.asarray(w_io, np.float64)
    n_in, n_out = w.shape
    g = n_in if group is None else min(group, n_in)
    n_groups = -(-n_in // g)
    w_Ggo = np.pad(w, ((0, n_groups * g - n_in), (0, 0))).reshape(n_groups, g, n_out)
    absmax_G1o = np.abs(w_Ggo).max(1, keepdims=True)  # zero padding leaves it unchanged
    safe = np.where(absmax_G1o > 0, absmax_G1o, 1.0)
    k_Ggo = np.clip(np.rint(w_Ggo * qmax / safe), -qmax, qmax)
    deq = (k_Ggo * absmax_G1o / qmax).reshape(n_groups * g, n_out)[:n_in]  # k*max exact in f64
    return deq.astype(np.float32)


def quantize_int8(params: dict, *, embeddings: bool = False) -> dict:
    """Round trip through int8, symmetric, one scale per output channel, codes [-127, 127];
    float32 out. ``embeddings``: also the embedding tables and the LM head."""
    return _on_matrices(params, embeddings, lambda w, _: _fake_quant(w, 127, None))


def quantize_int4(params: dict, group_size: int = 128, *, embeddings: bool = False) -> dict:
    """Round trip through int4, symmetric, one scale per ``group_size`` consecutive weights
    along the input axis of each output channel, codes [-7, 7]; float32 out."""
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) \
            or group_size < 1:
        raise UserError(f"group_size must be a positive integer (e.g. 32 or 128), "
                        f"got {group_size!r}")
    return _on_matrices(params, embeddings, lambda w, _: _fake_quant(w, 7, int(group_size)))


def quarot_int4(params: dict, cfg: ModelConfig, key: jax.Array, group_size: int = 128
                ) -> tuple[ModelConfig, dict]:
    """QuaRot-style weight quantization, an honest edit: the residual stream rotated by a
    randomized Hadamard matrix (``rotation.randomized_hadamard``, gains folded, a tied head
    untied: ``rotation.rotate_residual``), then every block matrix through :func:`quantize_int4`.
    Returns (config, params): the config is untied when ``cfg`` was tied. QuaRot's online
    Hadamard rotations of activations (inside the MLP and attention) change no weight of this
    decoder and are not modelled; its effect on lineage tests is the residual rotation's. A
    model with sandwich norms is refused before any matrix is built (``rotation``'s module
    docstring says why)."""
    check_rotatable(cfg, "QuaRot's residual rotation")
    cfg_r, rotated = rotate_residual(params, cfg, randomized_hadamard(cfg.d_model, key),
                                     untie=True)
    return cfg_r, quantize_int4(rotated, group_size)


# --- magnitude pruning ----------------------------------------------------------------------------
def prune_magnitude(params: dict, sparsity: float = 0.5, *, embeddings: bool = False) -> dict:
    """Per matrix, the floor(sparsity n) weights of least |w| set to 0 (ties: earlier index
    first), n its size: unstructured magnitude pruning, ``sparsity`` in [0, 1]."""
    if isinstance(sparsity, bool) or not isinstance(sparsity, (int, float, np.floating)) \
            or not 0 <= sparsity <= 1:
        raise UserError(f"sparsity must be a fraction in [0, 1], got {sparsity!r}")

    def prune(w, _):
        flat = np.array(w).ravel()  # a copy: the input is never written
        k = math.floor(sparsity * flat.size)
        flat[np.argsort(np.abs(flat), kind="stable")[:k]] = 0
        return flat.reshape(w.shape)
    return _on_matrices(params, embeddings, prune)


def prune_2_4(params: dict, *, embeddings: bool = False) -> dict:
    """2:4 structured sparsity: in every run of 4 consecutive weights along the input axis of
    an output channel, the 2 of least |w| set to 0 (ties: earlier index first). The input
    width must be a multiple of 4."""
    def prune(w, name):
        n_in, n_out = w.shape
        if n_in % 4:
            raise UserError(f"2:4 pruning needs an input width divisible by 4; {name} has "
                            f"{n_in} (shape as (in, out): {w.shape})")
        w_g4o = np.asarray(w).reshape(n_in // 4, 4, n_out)
        smallest = np.argsort(np.abs(w_g4o), axis=1, kind="stable")[:, :2]
        keep = np.ones(w_g4o.shape, bool)
        np.put_along_axis(keep, smallest, False, axis=1)
        return np.where(keep, w_g4o, 0).reshape(n_in, n_out).astype(w.dtype)
    return _on_matrices(params, embeddings, prune)


# --- merging --------------------------------------------------------------------------------------
def _zip(trees: Sequence[dict], fn: Callable[[list], Any], path: Path = ()) -> Any:
    """``fn`` of the leaves at each path of trees of equal structure and shapes."""
    if all(hasattr(t, "items") for t in trees):
        keys = list(trees[0])
        for i, t in enumerate(trees[1:], 1):
            if set(t) != set(keys):
                raise UserError(f"model {i} differs from model 0 at {'/'.join(path) or '<root>'}:"
                                f" keys {sorted(map(str, t))} vs {sorted(map(str, keys))}")
        return {k: _zip([t[k] for t in trees], fn, path + (str(k),)) for k in keys}
    where = "/".join(path) or "<root>"
    if any(hasattr(t, "items") for t in trees):
        raise UserError(f"the models differ at {where}: a dict in one, an array in another")
    shapes = [np.shape(t) for t in trees]
    if len(set(shapes)) > 1:
        raise UserError(f"the models differ in the shape of {where}: {shapes}")
    return fn([jnp.asarray(t) for t in trees])


def average(params_list: Sequence[dict]) -> dict:
    """The element-wise mean of models of one architecture (a "model soup" of fine-tunes)."""
    trees = list(params_list)
    if not trees:
        raise UserError("average needs at least one model")
    return _zip(trees, lambda xs: sum(xs[1:], xs[0]) / len(xs))


def task_arithmetic(base: dict, finetunes: Sequence[dict], weights: Sequence[float]) -> dict:
    """base + sum_i weights[i] (finetunes[i] - base), element-wise (task vectors)."""
    fts, ws = list(finetunes), [float(w) for w in weights]
    if not fts or len(fts) != len(ws):
        raise UserError(f"task_arithmetic needs one weight per fine-tune and at least one "
                        f"fine-tune; got {len(fts)} fine-tunes and {len(ws)} weights")
    if not all(math.isfinite(w) for w in ws):
        raise UserError(f"task_arithmetic weights must be finite, got {ws}")

    def combine(xs):
        b = xs[0]
        return b + sum((w * (x - b) for w, x in zip(ws, xs[1:])), jnp.zeros_like(b))
    return _zip([base] + fts, combine)
