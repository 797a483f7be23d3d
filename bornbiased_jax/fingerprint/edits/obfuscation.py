"""Function-preserving obfuscations: re-parametrisations that leave a model's logits unchanged
(to float32 rounding) while moving every weight, the cheap way to hide a copy from a lineage
test that compares coordinate j with coordinate j. Like :mod:`.downstream`, each acts on a plain
parameter dict and returns a new one.

  :func:`permute_mlp_hidden`, :func:`permute_heads`, :func:`rescale_norms` (with
  :func:`norm_names`), the residual-basis permutation (:func:`permute_residual`), and all
  of them at once, :func:`obfuscate`.

Obfuscations and tied embeddings. Permutations of the residual basis, of MLP hidden units
(per layer) and of attention heads (per layer; with grouped K/V heads, a K/V head moves with
its G query heads, and query heads may be permuted within their group; the order inside a head
is kept, so RoPE's pairs of coordinates are untouched) are exact for every architecture here.
A norm gain g scaled by c != 0 per coordinate (and a LayerNorm bias too) is compensated by
dividing the rows of the kernels that read the norm's output by c (``schema.Leaf.reads``):
attention q/k/v (and the output gate), MLP gate/up, and the LM head after the final norm. With tied embeddings the
unembedding is W_E^T, whose rows are also the input embeddings, so the final norm cannot be
compensated: :func:`rescale_norms` refuses it and :func:`obfuscate` leaves it unscaled.
"""

from __future__ import annotations

import math
import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import schema
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits.tree import layer_index, map_roles
from bornbiased_jax.keys import fold_in_name
from bornbiased_jax.schema import residual_axis


def _check_perms(perms: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    """``perms`` as an int array of ``shape`` whose last axis holds permutations."""
    p = np.asarray(perms)
    if p.shape != shape or not np.issubdtype(p.dtype, np.integer) or not np.array_equal(
            np.sort(p, axis=-1), np.broadcast_to(np.arange(shape[-1]), shape)):
        raise UserError(f"{what} must be integer permutations of shape {shape}, got shape "
                        f"{p.shape}, dtype {p.dtype}")
    return p


def permute_mlp_hidden(params: dict, cfg: ModelConfig, perm_LF: Any) -> dict:
    """New hidden unit j of layer l's MLP is old unit perm_LF[l, j] (perm_LF (L, F)): the
    output columns (and biases) of gate_proj and up_proj and the input rows of down_proj are
    permuted together; down_proj's bias lives in the residual basis and stays."""
    if not cfg.has_mlp:
        raise UserError(f"{cfg.name} has no MLP (block={cfg.block!r}); nothing to permute")
    perm = _check_perms(perm_LF, (cfg.n_layers, cfg.d_ff), "the MLP permutations perm_LF")

    def fn(path, role, leaf):
        if role not in ("kernel", "bias") or path[1] != "mlp":
            return leaf
        p = perm[layer_index(path)]
        if path[2] == "down_proj":
            return np.take(np.asarray(leaf), p, axis=0) if role == "kernel" else leaf
        return np.take(np.asarray(leaf), p, axis=-1)
    return map_roles(params, fn)


def permute_heads(params: dict, cfg: ModelConfig, kv_perm_LN: Any,
                  group_perm_LNG: Any | None = None) -> dict:
    """Permute attention heads, per layer, keeping the grouping of grouped-query attention.

    New K/V head n of layer l is old head kv_perm_LN[l, n], and new query head (n, g) (head
    n G + g, which reads K/V head n) is old query head (kv_perm_LN[l, n], group_perm_LNG[l, n,
    g]); None keeps each group's order. Moved: q/k/v/o kernels and biases (o_proj by its input
    rows), the head-wise norm's rows, the output gate's columns and a QK-norm's gains over the
    whole projection (OLMo 2's; a per-head gain is shared and stays); the coordinates inside a
    head keep their order, so RoPE acts as before."""
    if not cfg.has_attn_params:
        raise UserError(f"{cfg.name} has no attention heads (block={cfg.block!r}, "
                        f"attention={cfg.attention!r}); nothing to permute")
    L, H, N, K = cfg.n_layers, cfg.n_heads, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    G = H // N
    kv = _check_perms(kv_perm_LN, (L, N), "the K/V head permutations kv_perm_LN")
    grp = (np.broadcast_to(np.arange(G), (L, N, G)) if group_perm_LNG is None else
           _check_perms(group_perm_LNG, (L, N, G), "the in-group permutations group_perm_LNG"))
    head_LH = (kv[:, :, None] * G + grp).reshape(L, H)  # new head h reads old head head_LH[l, h]
    q_cols = (head_LH[:, :, None] * K + np.arange(K)).reshape(L, H * K)
    kv_cols = (kv[:, :, None] * K + np.arange(K)).reshape(L, N * K)

    def fn(path, role, leaf):
        if path[1] != "attn" or role not in ("kernel", "bias", "head_norm", "qk_norm"):
            return leaf
        w, l = np.asarray(leaf), layer_index(path)
        if role == "head_norm":
            return w[head_LH[l]]  # gamma (H, K)
        if role == "qk_norm":  # a gain over the whole projection moves with its heads (OLMo 2);
            if path[2] == "q_proj_norm":  # one (K,) shared by the heads stays (Gemma 3, Qwen3)
                return w[q_cols[l]]
            return w[kv_cols[l]] if path[2] == "k_proj_norm" else w
        if path[2] == "o_proj":
            return w[q_cols[l]] if role == "kernel" else w  # rows = heads; bias in residual basis
        cols = kv_cols[l] if path[2] in ("k_proj", "v_proj") else q_cols[l]
        return np.take(w, cols, axis=-1)  # q (and gate) by head, k and v by K/V head
    return map_roles(params, fn)


def norm_names(params: dict, cfg: ModelConfig) -> list[str]:
    """The norms :func:`rescale_norms` can scale, those a matrix reads (``schema.Leaf.reads``):
    "layers_<i>/attn_norm", ..., and "final_norm" unless the embeddings are tied."""
    names = [f"{k}/{n}" for k, v in params.items() if re.fullmatch(r"layers_\d+", str(k))
             for n in schema.BLOCK_NORMS_READ if v.get(n)]
    if params.get("final_norm") and not cfg.tie_embeddings:
        names.append("final_norm")
    return names


def rescale_norms(params: dict, cfg: ModelConfig, scales: dict[str, Any]) -> dict:
    """Each named norm's gain (and LayerNorm bias) times c (d,), finite and non-zero, the rows
    of the kernels reading its output divided by c: ``scales`` = {norm name: c}, names from
    :func:`norm_names`. With tied embeddings "final_norm" is refused (see the module doc).
    ``rotation.rotate_residual`` folds the gains g into their readers as c = 1/g."""
    allowed = norm_names(params, cfg)
    c_by = {}
    for name, c in scales.items():
        if name == "final_norm" and cfg.tie_embeddings:
            raise UserError("cannot rescale final_norm of a model with tied embeddings: its "
                            "reader W_E^T is also the input embedding, so no compensation "
                            "preserves the function; rescale the blocks' norms only")
        if name not in allowed:
            raise UserError(f"no norm {name!r} to rescale; this model has: {', '.join(allowed)}")
        c = np.asarray(c, np.float64)
        if c.shape != (cfg.d_model,) or not np.all(np.isfinite(c)) or np.any(c == 0):
            raise UserError(f"the scale of {name} must be ({cfg.d_model},) finite and "
                            f"non-zero, got shape {c.shape}")
        c_by[name] = c

    def fn(path, role, leaf):
        if role == "norm" and "/".join(path[:-1]) in c_by:  # y = c (n g + b)
            c = c_by["/".join(path[:-1])]
            if path[-1] == "scale":  # the gain c g (Gemma: c (1 + w) = 1 + w')
                return schema.norm_scale(cfg, c * schema.norm_gain(cfg, leaf)).astype(leaf.dtype)
            return (np.asarray(leaf) * c).astype(leaf.dtype)
        reader_of = schema.norm_read_by(path)
        if reader_of in c_by:  # (c y) (W / c[:, None]) = y W
            return (np.asarray(leaf) / c_by[reader_of][:, None]).astype(leaf.dtype)
        return leaf
    return map_roles(params, fn)


def obfuscate(params: dict, cfg: ModelConfig, key: jax.Array, log_scale_std: float = 0.5
              ) -> dict:
    """All the obfuscations at once, drawn from ``key``: every scalable norm rescaled by
    c = exp(N(0, log_scale_std^2)) per coordinate, heads permuted (K/V heads and query heads
    within groups), MLP hidden units permuted, then the residual basis permuted. The
    function is preserved up to float32 rounding."""
    if not (isinstance(log_scale_std, (int, float)) and 0 <= log_scale_std < math.inf):
        raise UserError(f"log_scale_std must be a finite number >= 0, got {log_scale_std!r}")
    ks = {n: fold_in_name(key, n) for n in ("scale", "kv", "group", "mlp", "residual")}
    names = norm_names(params, cfg)
    z = np.asarray(jax.random.normal(ks["scale"], (len(names), cfg.d_model)), np.float64)
    out = rescale_norms(params, cfg, {n: np.exp(log_scale_std * z[i])
                                      for i, n in enumerate(names)})
    L = cfg.n_layers

    def perms(k, shape):  # independent uniform permutations along the last axis
        rows = jnp.broadcast_to(jnp.arange(shape[-1]), shape)
        return np.asarray(jax.random.permutation(k, rows, axis=-1, independent=True))
    if cfg.has_attn_params:
        N = cfg.resolved_n_kv_heads
        out = permute_heads(out, cfg, perms(ks["kv"], (L, N)),
                            perms(ks["group"], (L, N, cfg.n_groups)))
    if cfg.has_mlp:
        out = permute_mlp_hidden(out, cfg, perms(ks["mlp"], (L, cfg.d_ff)))
    res = permute_residual(out, perms(ks["residual"], (1, cfg.d_model))[0])
    return jax.tree.map(jnp.asarray, res)


# --- the residual basis: each parameter's residual axis from the schema -----------------------
def permute_residual(params: dict, perm: np.ndarray) -> dict:
    """The parameters of piA: every residual-basis axis indexed by ``perm``, so that piA's
    residual coordinate j is A's coordinate perm[j] (F_piA = F_A[:, perm])."""
    perm = np.asarray(perm)

    def walk(tree, path):
        if isinstance(tree, dict) or hasattr(tree, "items"):
            return {k: walk(v, path + (str(k),)) for k, v in tree.items()}
        axis = residual_axis(path)
        if axis is None:
            return tree
        if tree.shape[axis] != perm.size:
            raise UserError(f"parameter {'/'.join(path)} has {tree.shape[axis]} entries on its "
                            f"residual axis, the permutation {perm.size}")
        return np.take(np.asarray(tree), perm, axis=axis)

    return walk(params, ())
