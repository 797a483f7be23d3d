"""The one-model edits by name: every derivative of a released model that needs nothing but
its weights (no data, no training, no second model), one :class:`Derivative` each, for every
consumer that builds suspects (the lineage benchmark, the real-model study, tests).

    cfg2, params2 = derive("quarot-int4", params, cfg, key)

Adding such an edit is its function (in :mod:`.edits`, :mod:`.obfuscation` or
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
from bornbiased_jax.fingerprint import edits as E
from bornbiased_jax.fingerprint.obfuscation import obfuscate, permute_mlp_hidden
from bornbiased_jax.fingerprint.rotation import (flip_residual_signs, random_orthogonal,
                                                 rotate_residual, scale_mlp_units)

Apply = Callable[[dict, ModelConfig, jax.Array], tuple[ModelConfig, dict]]


@dataclasses.dataclass(frozen=True)
class Derivative:
    what: str  # one line, as a record or a table says it
    apply: Apply  # (params, cfg, key) -> (cfg, params); cfg changes only when a head is untied
    function_preserving: bool  # the logits are unchanged up to float rounding


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
        "basis: fingerprint.obfuscation.obfuscate)",
        lambda p, cfg, key: (cfg, obfuscate(p, cfg, key)), True),
    "signs-units": Derivative(
        "residual sign flips and signed per-unit SwiGLU scales (rotation module)",
        _signs_units, True),
    "rotated": Derivative(
        "the residual stream rotated by a Haar-random orthogonal matrix, gains folded, head "
        "untied",
        lambda p, cfg, key: rotate_residual(p, cfg, random_orthogonal(cfg.d_model, key),
                                            untie=True), True),
    "quarot-int4": Derivative(
        "QuaRot-style: randomized Hadamard rotation, then int4 (groups of 32)",
        lambda p, cfg, key: E.quarot_int4(p, cfg, key, group_size=32), False),
}


def derive(name: str, params: dict, cfg: ModelConfig, key: jax.Array
           ) -> tuple[ModelConfig, dict]:
    """The derivative ``name`` of (cfg, params), randomised by ``key`` where it is random."""
    if name not in DERIVATIVES:
        raise UserError(f"unknown derivative {name!r}; the registered ones are "
                        f"{', '.join(DERIVATIVES)}")
    return DERIVATIVES[name].apply(params, cfg, key)
