"""The matched test against BASE's initialisation: H0 "SUSPECT does not descend from BASE's
initialisation", for a gated-MLP BASE whose initialisation is known. SUSPECT's MLP units are
matched to those of BASE's initialisation by their gate and by their up pre-activations
(``matched.matched_test``) with no slack and no null models: exact (conservative, a discrete p)
for any SUSPECT, unchanged by renamings and rotations. The verdict's test where BASE's
initialisation is known and its MLP is gated (``registry``).
"""

from __future__ import annotations

import dataclasses

from bornbiased_jax.fingerprint.methods import matched as M
from bornbiased_jax.fingerprint.methods.result import LineageResult


def from_context(ctx) -> LineageResult:
    """The matched test of SUSPECT against BASE's *initialisation* (``runner.context.Context``'s
    ``init.views``): exact for any SUSPECT (slack 0; under H0 SUSPECT is independent of that
    initialisation, whose gate and up rows are independent), unchanged by renamings and
    rotations of SUSPECT, and with no null models to compute. The test the verdict uses for a
    gated MLP whose initialisation is known."""
    s = ctx.settings
    res = M.matched_test(ctx.init.views, ctx.views.B, alpha=s.alpha, slack=0, exact=True,
                         init="base")
    return dataclasses.replace(
        res, test="matched_init",
        note=f"exact: SUSPECT against BASE's initialisation {ctx.init.label}")
