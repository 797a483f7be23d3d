"""The any-pair verdict, for a pair whose initialisation is unknown: the permutation test (exact
for any pair, evaded by renamings) and the matched test (robust to renamings and rotations)
each at alpha / 2 (Bonferroni). Not run on a pair: ``registry.COMBINATIONS`` computes it from
the two legs' results wherever both ran.
"""

from __future__ import annotations

import numpy as np

from bornbiased_jax.fingerprint.result import LineageResult


def any_pair_p(p_permutation: float, p_matched: float) -> tuple[float, str]:
    """(p, the deciding leg) of the any-pair verdict: min(1, 2 min(p_perm, p_matched))."""
    legs = {"permutation": p_permutation, "matched": p_matched}
    leg = min(legs, key=legs.get)
    return min(1.0, 2 * legs[leg]), leg


def any_pair(perm: LineageResult, matched: LineageResult) -> LineageResult:
    """The any-pair verdict from its two legs: p = min(1, 2 min(p_perm, p_matched));
    ``details['decided_by']`` names the leg with the smaller p."""
    p, leg = any_pair_p(perm.p, matched.p)
    return LineageResult(
        "any_pair", {"bonferroni": p}, perm.alpha, perm.n, perm.d_out, np.arange(0),
        np.arange(0.0), "none", p, np.arange(0.0),
        {"decided_by": leg, "p_permutation": perm.p, "p_matched": matched.p},
        "each leg at alpha / 2; " + (matched.note or ""))
