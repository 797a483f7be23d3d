"""The parameter schema: every kind of leaf a model's parameter tree can hold, written once.

A parameter path (``layers_3/attn/q_proj/kernel``; ``model.py`` builds the tree) matches one
pattern of ``LEAVES``, where ``layers_<i>`` stands for any block. Each pattern says:

  * ``role``: what an edit does with the leaf ('embedding', 'head' (the untied unembedding),
    'norm' (a gain or bias in the residual basis: before a sublayer, after it with Gemma's
    sandwich norms, or the final one), 'head_norm' (the head-wise gain gamma (H, K)),
    'qk_norm' (the gain of queries and keys: per head, in a head's basis, or over the whole
    projection), 'kernel' or
    'bias' (of a block's projection));
  * ``axes``: the logical name of each dimension (kernels are (in, out)): ``vocab``,
    ``position``, ``embed`` (= d_model: the residual stream's basis, ``RESIDUAL``), ``qkv``
    (heads x head_dim), ``mlp`` (d_ff), ``heads``, ``head_dim``;
  * ``reads``: for a matrix that reads a norm's output, that norm (``attn_norm`` and
    ``mlp_norm`` of the same block, or ``final_norm``): scaling the norm's gain by c and the
    matrix's input rows by 1/c leaves the function unchanged;
  * ``what``: a phrase for messages, which tells the two ``gate_proj`` apart (the attention's
    output gate reads ``attn_norm`` and writes heads; the MLP's gate reads ``mlp_norm`` and
    writes hidden units).

Everything that walks a parameter tree looks a leaf up here: the edits' roles
(``fingerprint/edits/tree.py``), the residual axis of a permutation or rotation
(``fingerprint/methods/permutation.py``, ``fingerprint/edits/rotation.py``), the norms and their
readers (``fingerprint/edits/obfuscation.py``), the logical axes of sharding (``sharding.py``). A path that
matches no pattern is a ``UserError`` naming it, so a new kind of parameter cannot be skipped
silently; a new architecture's parameters are added here (``tests/test_schema.py`` walks every
preset's tree against this table).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

import numpy as np

from bornbiased_jax.errors import UserError

RESIDUAL = "embed"  # the logical name of the residual stream's basis (d_model)
LAYER = "layers_<i>"


@dataclasses.dataclass(frozen=True)
class Leaf:
    """One kind of parameter: its path pattern and what it is (see the module docstring)."""

    pattern: str
    role: str
    axes: tuple[str, ...]
    reads: str | None = None
    what: str = ""

    @property
    def residual_axis(self) -> int | None:
        """The axis indexing residual coordinates, or None (a head's or a unit's basis)."""
        return self.axes.index(RESIDUAL) if RESIDUAL in self.axes else None


def _norm(at: str, what: str) -> tuple[Leaf, ...]:
    return (Leaf(f"{at}/scale", "norm", (RESIDUAL,), what=f"{what}'s gain"),
            Leaf(f"{at}/bias", "norm", (RESIDUAL,), what=f"{what}'s bias (LayerNorm)"))


def _proj(at: str, axes: tuple[str, str], reads: str | None, what: str,
          bias_axis: str) -> tuple[Leaf, ...]:
    return (Leaf(f"{at}/kernel", "kernel", axes, reads, what),
            Leaf(f"{at}/bias", "bias", (bias_axis,), what=f"{what}'s bias"))


_B = LAYER
LEAVES: tuple[Leaf, ...] = (
    Leaf("embed/embedding", "embedding", ("vocab", RESIDUAL), what="the token embedding W_E"),
    Leaf("pos_embed/embedding", "embedding", ("position", RESIDUAL),
         what="the learned positions"),
    Leaf("lm_head/kernel", "head", (RESIDUAL, "vocab"), "final_norm",
         "the untied unembedding W_U"),
    *_norm("final_norm", "the final norm"),
    *_norm(f"{_B}/attn_norm", "the attention's pre-norm"),
    *_norm(f"{_B}/mlp_norm", "the MLP's pre-norm"),
    *_norm(f"{_B}/attn_post_norm", "the attention's post-norm (sandwich norms)"),
    *_norm(f"{_B}/mlp_post_norm", "the MLP's post-norm (sandwich norms)"),
    *_proj(f"{_B}/attn/q_proj", (RESIDUAL, "qkv"), "attn_norm", "the query projection", "qkv"),
    *_proj(f"{_B}/attn/k_proj", (RESIDUAL, "qkv"), "attn_norm", "the key projection", "qkv"),
    *_proj(f"{_B}/attn/v_proj", (RESIDUAL, "qkv"), "attn_norm", "the value projection", "qkv"),
    *_proj(f"{_B}/attn/gate_proj", (RESIDUAL, "qkv"), "attn_norm",
           "the attention's output gate", "qkv"),
    *_proj(f"{_B}/attn/o_proj", ("qkv", RESIDUAL), None, "the attention's output projection",
           RESIDUAL),
    Leaf(f"{_B}/attn/head_norm/scale", "head_norm", ("heads", "head_dim"),
         what="the head-wise RMSNorm's gain"),
    Leaf(f"{_B}/attn/q_norm/scale", "qk_norm", ("head_dim",), what="the QK-norm's query gain"),
    Leaf(f"{_B}/attn/k_norm/scale", "qk_norm", ("head_dim",), what="the QK-norm's key gain"),
    Leaf(f"{_B}/attn/q_proj_norm/scale", "qk_norm", ("qkv",),
         what="the QK-norm's query gain over the whole projection"),
    Leaf(f"{_B}/attn/k_proj_norm/scale", "qk_norm", ("qkv",),
         what="the QK-norm's key gain over the whole projection"),
    *_proj(f"{_B}/mlp/gate_proj", (RESIDUAL, "mlp"), "mlp_norm", "the MLP's gate", "mlp"),
    *_proj(f"{_B}/mlp/up_proj", (RESIDUAL, "mlp"), "mlp_norm", "the MLP's up projection",
           "mlp"),
    *_proj(f"{_B}/mlp/down_proj", ("mlp", RESIDUAL), None, "the MLP's down projection",
           RESIDUAL),
)
_BY_PATTERN = {leaf.pattern: leaf for leaf in LEAVES}
# The norms some matrix reads, in block order ("attn_norm", "mlp_norm"), and "final_norm".
BLOCK_NORMS_READ = tuple(dict.fromkeys(
    leaf.reads for leaf in LEAVES if leaf.reads and leaf.pattern.startswith(LAYER)))
_LAYER_RE = re.compile(r"layers_\d+")


def pattern_of(path: Sequence[str]) -> str:
    """``layers_3/attn/q_proj/kernel`` -> ``layers_<i>/attn/q_proj/kernel``."""
    p = [str(k) for k in path]
    if p and _LAYER_RE.fullmatch(p[0]):
        p[0] = LAYER
    return "/".join(p)


def find(path: Sequence[str]) -> Leaf | None:
    """The schema's entry for a parameter path, or None."""
    return _BY_PATTERN.get(pattern_of(path))


def leaf(path: Sequence[str]) -> Leaf:
    """The schema's entry for a parameter path; a ``UserError`` naming a path it lacks."""
    found = find(path)
    if found is None:
        raise UserError(f"no schema entry for parameter {'/'.join(map(str, path))}; the "
                        f"schema (bornbiased_jax/schema.py) knows "
                        f"{', '.join(_BY_PATTERN)}")
    return found


def parameter_role(path: Sequence[str]) -> str:
    """The role of a parameter path ('embedding', 'head', 'norm', 'head_norm', 'qk_norm',
    'kernel', 'bias'); a ``UserError`` naming a path the schema lacks."""
    return leaf(path).role


def residual_axis(path: Sequence[str]) -> int | None:
    """The axis of parameter ``path`` that indexes residual coordinates, or None."""
    return leaf(path).residual_axis


def writes_residual(path: Sequence[str]) -> bool:
    """Whether a block's kernel adds to the residual stream (its output axis is residual:
    o_proj, down_proj)."""
    found = leaf(path)
    return found.role == "kernel" and found.axes[-1] == RESIDUAL


def norm_read_by(path: Sequence[str]) -> str | None:
    """The norm whose output parameter ``path`` reads, as a path (``layers_3/attn_norm``,
    ``final_norm``), or None; a block's pre-norm, which a model without pre-norms (OLMo 2's
    block, ``pre_norms=False``) lacks: its matrices read the stream itself."""
    reads = leaf(path).reads
    if reads is None or reads == "final_norm":
        return reads
    return f"{path[0]}/{reads}"


def logical_axes(path: Sequence[str]) -> tuple[str, ...]:
    """The logical name of each dimension of parameter ``path`` (``RESIDUAL`` = d_model)."""
    return leaf(path).axes


def norm_gain(cfg, scale) -> np.ndarray:
    """The gain a norm's ``scale`` parameter applies, float64: 1 + w with Gemma's
    ``norm_unit_offset`` (``layers.Norm``), else the scale itself."""
    g = np.asarray(scale, np.float64)
    return g + 1.0 if cfg.norm_unit_offset else g


def norm_scale(cfg, gain: np.ndarray) -> np.ndarray:
    """The ``scale`` parameter applying ``gain`` (the inverse of :func:`norm_gain`), float64."""
    g = np.asarray(gain, np.float64)
    return g - 1.0 if cfg.norm_unit_offset else g
