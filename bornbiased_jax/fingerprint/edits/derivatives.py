"""The one-model edits by name: every derivative of a released model that needs nothing but
its weights (no data, no training, no second model), one :class:`Derivative` each, for every
consumer that builds suspects (the lineage benchmark, the real-model study, tests).

    cfg2, params2 = derive("quarot-int4", params, cfg, key)

Adding such an edit is its function (in :mod:`.downstream`, :mod:`.obfuscation` or
:mod:`.rotation`) and one entry in :data:`DERIVATIVES`. Edits that train (fine-tunes, LoRA,
distillation) or combine models (merges) take data or other models and are built by the studies
that own them.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import numpy as np

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits import downstream as E
from bornbiased_jax.fingerprint.edits import shape_edits as S
from bornbiased_jax.fingerprint.edits import vocab_edits as VE
from bornbiased_jax.fingerprint.edits.obfuscation import obfuscate, permute_mlp_hidden
from bornbiased_jax.fingerprint.edits.rotation import (flip_residual_signs, random_orthogonal,
                                                       rotate_residual, scale_mlp_units)

Apply = Callable[[dict, ModelConfig, jax.Array], tuple[ModelConfig, dict]]


@dataclasses.dataclass(frozen=True)
class Derivative:
    what: str  # one line, as a record or a table says it
    apply: Apply  # (params, cfg, key) -> (cfg, params); cfg changes with a head untied or a shape
    function_preserving: bool  # the logits are unchanged up to float rounding (of the old ids)
    # (cfg) -> for each layer of the result, BASE's layer it copies (None: a new block);
    # None: layer l is layer l
    layers: Callable[[ModelConfig], list] | None = None
    # (cfg, key) -> for each id of the result's vocabulary, BASE's id (-1: a new token), the
    # map a tokenizer is remapped by; None: the vocabulary is unchanged
    vocab: Callable[[ModelConfig, jax.Array], np.ndarray] | None = None
    # the residual stream is rotated (``rotation.rotate_residual``), which a model with
    # sandwich norms refuses
    rotates: bool = False

    def layer_origin(self, cfg: ModelConfig) -> list:
        return self.layers(cfg) if self.layers is not None else list(range(cfg.n_layers))

    def vocab_origin(self, cfg: ModelConfig, key: jax.Array) -> np.ndarray:
        return (self.vocab(cfg, key) if self.vocab is not None
                else np.arange(cfg.vocab_size))


def _signs_units(params: dict, cfg: ModelConfig, key: jax.Array) -> tuple[ModelConfig, dict]:
    """Residual sign flips, then the MLP units permuted with a signed log-normal scale each
    (gated MLPs only: ``rotation.scale_mlp_units`` refuses the others)."""
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel())
    L, F = cfg.n_layers, cfg.d_ff
    perm = np.stack([rng.permutation(F) for _ in range(L)])
    scale = np.exp(rng.normal(0, 0.5, (L, F))) * rng.choice([-1, 1], (L, F))
    p = flip_residual_signs(params, cfg, rng.choice([-1, 1], cfg.d_model))
    return cfg, scale_mlp_units(permute_mlp_hidden(p, cfg, perm), cfg, scale)


def _same_cfg(fn: Callable[[dict], dict]) -> Apply:
    return lambda params, cfg, key: (cfg, fn(params))


DERIVATIVES: dict[str, Derivative] = {
    "int8": Derivative("weight-only int8, one scale per output channel",
                       _same_cfg(E.quantize_int8), False),
    "int4-g32": Derivative("weight-only int4, groups of 32 input rows",
                           _same_cfg(lambda p: E.quantize_int4(p, 32)), False),
    "int4-g128": Derivative("weight-only int4, groups of 128 input rows",
                            _same_cfg(lambda p: E.quantize_int4(p, 128)), False),
    "prune-50": Derivative("unstructured magnitude pruning to 50 % sparsity",
                           _same_cfg(lambda p: E.prune_magnitude(p, 0.5)), False),
    "prune-2:4": Derivative("2:4 structured magnitude pruning", _same_cfg(E.prune_2_4), False),
    "renamed": Derivative(
        "every permutation-type renaming at once (norm gains, heads, MLP units, residual "
        "basis: fingerprint.edits.obfuscation.obfuscate)",
        lambda p, cfg, key: (cfg, obfuscate(p, cfg, key)), True),
    "signs-units": Derivative(
        "residual sign flips and signed per-unit SwiGLU scales (rotation module)",
        _signs_units, True),
    "rotated": Derivative(
        "the residual stream rotated by a Haar-random orthogonal matrix, gains folded, head "
        "untied",
        lambda p, cfg, key: rotate_residual(p, cfg, random_orthogonal(cfg.d_model, key),
                                            untie=True), True, rotates=True),
    "quarot-int4": Derivative(
        "QuaRot-style: randomized Hadamard rotation, then int4 (groups of 32)",
        lambda p, cfg, key: E.quarot_int4(p, cfg, key, group_size=32), False, rotates=True),
}


def _rotate_after(edit: Apply) -> Apply:
    """``edit``, then a Haar-random rotation of the residual stream (gains folded, head
    untied): a shape change hidden behind a renaming."""
    def apply(params, cfg, key):
        k1, k2 = jax.random.split(key)
        cfg2, p2 = edit(params, cfg, k1)
        return rotate_residual(p2, cfg2, random_orthogonal(cfg2.d_model, k2), untie=True)
    return apply


# The shape-changing edits (fingerprint.edits.shape_edits): sizes relative to the model's own, so
# that one entry serves every model; which layer and which id each part of the result copies
# is stated (``layers``, ``vocab``), for the localised verdict's score.
SHAPES: dict[str, Derivative] = {
    "pad-mlp": Derivative(
        "MLP width padded: 1/16 more units per layer (at least 1), random gate/up columns, "
        "zero down rows",
        lambda p, cfg, key: S.pad_mlp(p, cfg, max(1, cfg.d_ff // 16), key), True),
    "pad-mlp-dead": Derivative(
        "MLP width padded by 1/16 (at least 1) constant units: zero gate, up and down (a "
        "padded intermediate size)",
        lambda p, cfg, key: S.pad_mlp(p, cfg, max(1, cfg.d_ff // 16), key, dead=True), True),
    "split-units": Derivative(
        "1/16 of the MLP units (at least 1) each split in two, down rows halved",
        lambda p, cfg, key: S.split_mlp_units(p, cfg, max(1, cfg.d_ff // 16), key), True),
    "pad-rotated": Derivative(
        "MLP width padded by 1/16 (live units writing nothing), then the residual stream "
        "rotated (gains folded, head untied)",
        _rotate_after(lambda p, cfg, key: S.pad_mlp(p, cfg, max(1, cfg.d_ff // 16), key)), True,
        rotates=True),
    "prune-width-25": Derivative(
        "structured MLP width pruning: the 25 % of units of least ||up|| x ||down|| (x ||gate||) "
        "removed", lambda p, cfg, key: S.prune_mlp_width(p, cfg, 0.25), False),
    "mask-units-25": Derivative(
        "masked MLP pruning: the same 25 % of units zeroed in place",
        lambda p, cfg, key: S.mask_mlp_units(p, cfg, 0.25), False),
    "drop-layer": Derivative(
        "one layer dropped (layer L // 2; ShortGPT)",
        lambda p, cfg, key: S.drop_layers(p, cfg, [cfg.n_layers // 2]), False,
        layers=lambda cfg: S.layer_origin(cfg, "drop", layers=[cfg.n_layers // 2])),
    "insert-identity": Derivative(
        "an identity block inserted before layer L // 2 (a fresh block whose output "
        "projections are zero)",
        lambda p, cfg, key: S.insert_identity(p, cfg, cfg.n_layers // 2, key), True,
        layers=lambda cfg: S.layer_origin(cfg, "insert", at=cfg.n_layers // 2)),
    "depth-upscale": Derivative(
        "SOLAR-style depth up-scaling: layers [0, L - m) then [m, L), m = L // 4",
        lambda p, cfg, key: S.depth_upscale(p, cfg, cfg.n_layers // 4), False,
        layers=lambda cfg: S.layer_origin(cfg, "upscale", m=cfg.n_layers // 4)),
    "layer-shift-rotated": Derivative(
        "an identity block at 0 and the last layer dropped (same shapes, every layer one place "
        "later), then the residual stream rotated",
        _rotate_after(S.shift_layers), False,
        layers=lambda cfg: S.layer_origin(cfg, "shift"), rotates=True),
    "vocab-extend": Derivative(
        "the vocabulary extended by 64 tokens (mean embedding plus noise); the old ids' logits "
        "unchanged", lambda p, cfg, key: VE.extend_vocab(p, cfg, 64, key), True,
        vocab=lambda cfg, key: VE.vocab_origin(cfg, "extend", k=64)),
    "vocab-truncate": Derivative(
        "the vocabulary cut to its first 7/8 of ids; the kept ids' logits unchanged",
        lambda p, cfg, key: VE.truncate_vocab(p, cfg, cfg.vocab_size * 7 // 8), True,
        vocab=lambda cfg, key: VE.vocab_origin(cfg, "truncate", keep=cfg.vocab_size * 7 // 8)),
    "vocab-permute": Derivative(
        "the vocabulary's ids permuted (embedding rows and head columns; the tokenizer "
        "remapped alike: the same function of text)",
        VE.permute_vocab, True,
        vocab=lambda cfg, key: VE.vocab_origin(cfg, "permute", key)),
}
DERIVATIVES.update(SHAPES)


def derive(name: str, params: dict, cfg: ModelConfig, key: jax.Array
           ) -> tuple[ModelConfig, dict]:
    """The derivative ``name`` of (cfg, params), randomised by ``key`` where it is random."""
    if name not in DERIVATIVES:
        raise UserError(f"unknown derivative {name!r}; the registered ones are "
                        f"{', '.join(DERIVATIVES)}")
    return DERIVATIVES[name].apply(params, cfg, key)
