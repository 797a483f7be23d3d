"""The aligned test: H0 "SUSPECT does not descend from BASE's initialisation", for a BASE whose
initialisation is known. SUSPECT's output coordinates are matched one-to-one to those of BASE's
initialisation, maximising the mean |Spearman rho| (``calibrated.aligned_spearman``, the
'spearman_aligned' statistic), and that statistic is ranked among the same for K fresh
initialisations of BASE's architecture (``calibrated.calibrated_test``): exact, unchanged by a
renamed (permuted, rescaled) residual basis, evaded by a rotation. The verdict's test where
BASE's initialisation is known and its MLP is not gated (``registry``).
"""

from __future__ import annotations

import dataclasses
import math

from bornbiased_jax.defaults import CALIBRATED_NULL_MODELS
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods import calibrated as C
from bornbiased_jax.fingerprint.methods.result import LineageResult


def check_settings(s) -> None:
    """A UserError when the aligned test cannot run with ``s`` (``compare.Settings``)."""
    if s.input != "tokens" or s.output == "logits":
        raise UserError("the aligned test needs token inputs (--input tokens) and residual "
                        "outputs (--feature normed or prenorm): it aligns residual "
                        "coordinates, which a renaming moves and token ids do not")
    need = math.ceil(1 / s.alpha - 1 - 1e-9)
    if s.null_models < need:
        raise UserError(
            f"{s.null_models} null models are too few for the aligned test at "
            f"alpha = {s.alpha}: its exact p is at least 1/(K+1) = "
            f"{1 / (s.null_models + 1):.3g}, so it could never reject; use "
            f"--null-models >= 1/alpha - 1 = {need} (the default is "
            f"{CALIBRATED_NULL_MODELS})")


def from_context(ctx) -> LineageResult:
    """The aligned test of one pair that ``compare`` prepared (``runner.context.Context``): the
    'spearman_aligned' statistic from BASE's initialisation against the null
    initialisations."""
    r = C.calibrated_test(ctx.init.F, ctx.F_B, iter(ctx.nulls.F),
                          statistic_name="spearman_aligned", alpha=ctx.settings.alpha)
    r.details["base_initialisation"] = ctx.init.label
    r.details["null_seeds"] = C.null_seeds_text(ctx.nulls.seeds)
    return dataclasses.replace(r, test="aligned")
