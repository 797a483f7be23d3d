"""The any-pair verdict, for a pair whose initialisation is unknown: the permutation test (exact
for any pair, evaded by renamings) and the matched test (robust to renamings and rotations)
each at alpha / 2 (Bonferroni). Not run on a pair: ``registry.COMBINATIONS`` computes it from
the two legs' results wherever both ran.
"""

from __future__ import annotations

import numpy as np

from bornbiased_jax.fingerprint.tests.result import LineageResult


def any_pair_p(p_permutation: float, p_matched: float) -> tuple[float, str]:
    """(p, the deciding leg) of the any-pair verdict: min(1, 2 min(p_perm, p_matched))."""
    legs = {"permutation": p_permutation, "matched": p_matched}
    leg = min(legs, key=legs.get)
    return min(1.0, 2 * legs[leg]), leg


def decided_by_matched(matched: LineageResult) -> bool:
    """Whether the matched leg alone decides the verdict: 2 p_matched <= alpha rejects
    whatever the permutation leg says. ``compare`` runs the matched leg first (it reads only
    the first ``matched_seqs`` sequences) and, where it decides, stops the permutation leg at
    those sequences instead of all n: the verdict at alpha is the one the full run gives."""
    return 2 * matched.p <= matched.alpha


def any_pair(perm: LineageResult, matched: LineageResult) -> LineageResult:
    """The any-pair verdict from its two legs: p = min(1, 2 min(p_perm, p_matched));
    ``details['decided_by']`` names the leg with the smaller p. Where the permutation leg
    stopped early (``details['stopped_at']``: the matched leg decided,
    :func:`decided_by_matched`), p = 2 p_matched: the stopped leg's p is shown, not combined,
    so that p stays a p-value (P(p <= t) <= t for every t: the event is 2 p_matched <= t, or
    p_matched > alpha / 2 with the full permutation leg's 2 p_perm <= t)."""
    stopped = perm.details.get("stopped_at") is not None
    p, leg = (min(1.0, 2 * matched.p), "matched") if stopped else any_pair_p(perm.p, matched.p)
    note = ("each leg at alpha / 2; the permutation leg stopped at the matched leg's "
            f"{perm.n} inputs once the matched leg decided (2 p_matched <= alpha), its p shown, "
            "not combined" if stopped else "each leg at alpha / 2")
    return LineageResult(
        "any_pair", {"bonferroni": p}, perm.alpha, perm.n, perm.d_out, np.arange(0),
        np.arange(0.0), "none", p, np.arange(0.0),
        {"decided_by": leg, "p_permutation": perm.p, "p_matched": matched.p,
         **({"stopped_at": perm.n} if stopped else {})},
        "; ".join(x for x in (note, matched.note) if x))
