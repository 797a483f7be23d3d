"""The any-pair verdict, for a pair whose initialisation is unknown: the permutation test (exact
for any pair, evaded by renamings) and the matched test (robust to renamings and rotations)
each at alpha / 2 (Bonferroni). Not run on a pair: ``registry.COMBINATIONS`` computes it from
the two legs' results wherever both ran.

``compare`` runs the matched leg first (it reads only the first ``matched_seqs`` sequences) and
stops the permutation leg at those sequences, instead of all n, in two cases
(:func:`stop_reason`, :func:`stop_holds`): where the matched leg decides alone (2 p_matched <=
alpha: 'related' whatever the permutation leg says), and where it found nothing (p_matched = 1
as computed: no tested layer pair shares more doubly matched units than the slack allows, or so
few more that the combined p rounds to 1 -- what unrelated trained models give) unless the
permutation leg's p on those sequences is already at most alpha / 2. A stopped leg's p is
shown, not combined: the any-pair p is then min(1, 2 p_matched), never below the Bonferroni p
of the two full legs (whatever decides the stop), so it stays a p-value; the second stop can
only keep a verdict 'no evidence'. Its price is power where the matched leg finds nothing and
the permutation leg would reach alpha / 2 on all n sequences but not on the first ones
(measured in RESULTS.md and docs/seedprint.md: no such descendant in the benchmarks);
``--no-sequential`` reads all n.
"""

from __future__ import annotations

import numpy as np

from bornbiased_jax.fingerprint.methods.result import LineageResult

STOPS = {"decided": "the matched leg decided the verdict alone (2 p_matched <= alpha)",
         "nothing": "the matched leg found nothing (p_matched = 1: no layer pair shares more "
                    "doubly matched units than the slack allows, or too few more to move the "
                    "combined p) and the permutation leg's p on those inputs is above "
                    "alpha / 2"}


# each stop's rule, as a pair record keeps it (a record of another rule is measured again)
RULES = {"decided": "2 p_matched <= alpha",
         "nothing": "p_matched >= 1 and 2 p_permutation(first inputs) > alpha"}


def any_pair_p(p_permutation: float, p_matched: float, alpha: float | None = None,
               p_permutation_first: float | None = None) -> tuple[float, str]:
    """(p, the deciding leg) of the any-pair verdict: min(1, 2 min(p_perm, p_matched)); with
    ``alpha``, as ``bornbiased fingerprint`` gives it from the full legs' p-values: min(1,
    2 p_matched) where the permutation leg would have stopped (:func:`stop_reason`; a stop
    for 'nothing' holds unless ``p_permutation_first``, the permutation p on the matched
    leg's sequences, is at most alpha / 2; where it is not given, the full leg's p stands in,
    and the verdict at alpha is 'related' at least as often as the command's)."""
    first = p_permutation if p_permutation_first is None else p_permutation_first
    if alpha is not None and (_reason(p_matched, alpha) == "decided"
                              or stops_for_nothing(p_matched, first, alpha)):
        return min(1.0, 2 * p_matched), "matched"
    legs = {"permutation": p_permutation, "matched": p_matched}
    leg = min(legs, key=legs.get)
    return min(1.0, 2 * legs[leg]), leg


def stops_for_nothing(p_matched: float, p_permutation_first: float, alpha: float) -> bool:
    """Whether the permutation leg stops because the matched leg found nothing, from the two
    p-values (the permutation leg's on the matched leg's inputs): :func:`stop_reason` and
    :func:`stop_holds` in one."""
    return _reason(p_matched, alpha) == "nothing" and 2 * p_permutation_first > alpha


def _reason(p_matched: float, alpha: float) -> str | None:
    if 2 * p_matched <= alpha:
        return "decided"
    if p_matched >= 1.0:
        return "nothing"
    return None


def decided_by_matched(matched: LineageResult) -> bool:
    """Whether the matched leg alone decides the verdict: 2 p_matched <= alpha rejects
    whatever the permutation leg says."""
    return _reason(matched.p, matched.alpha) == "decided"


def stop_reason(matched: LineageResult) -> str | None:
    """Why the permutation leg stops at the matched leg's sequences (a key of :data:`STOPS`),
    or None where it reads all n: 'decided' (:func:`decided_by_matched`), 'nothing'
    (p_matched = 1; the stop stands unless :func:`stop_holds` calls it off)."""
    return _reason(matched.p, matched.alpha)


def stop_holds(reason: str, leg: LineageResult) -> bool:
    """Whether a stop for ``reason`` stands given the permutation leg's result on the matched
    leg's inputs: always where the matched leg decided; where it found nothing, unless that
    p is already at most alpha / 2 (then both legs read all n: the evidence the stop would
    leave unread is the permutation leg's)."""
    return reason != "nothing" or 2 * leg.p > leg.alpha


def any_pair(perm: LineageResult, matched: LineageResult) -> LineageResult:
    """The any-pair verdict from its two legs: p = min(1, 2 min(p_perm, p_matched));
    ``details['decided_by']`` names the leg with the smaller p. Where the permutation leg
    stopped early (``details['stopped_at']``, why in ``details['stopped_because']``:
    :func:`stop_reason`), p = min(1, 2 p_matched): the stopped leg's p is shown, not
    combined, so that p stays a p-value (P(p <= t) <= t for every t: p is never below the
    Bonferroni p of the two full legs)."""
    stopped = perm.details.get("stopped_at") is not None
    p, leg = (min(1.0, 2 * matched.p), "matched") if stopped else any_pair_p(perm.p, matched.p)
    why = STOPS.get(perm.details.get("stopped_because", "decided"), "")
    note = (f"each leg at alpha / 2; the permutation leg stopped at the matched leg's "
            f"{perm.n} inputs because {why}: its p shown, not combined" if stopped
            else "each leg at alpha / 2")
    return LineageResult(
        "any_pair", {"bonferroni": p}, perm.alpha, perm.n, perm.d_out, np.arange(0),
        np.arange(0.0), "none", float("nan"), np.arange(0.0),  # no correlation of its own
        {"decided_by": leg, "p_permutation": perm.p, "p_matched": matched.p,
         **({"stopped_at": perm.n,
             "stopped_because": perm.details.get("stopped_because", "decided")}
            if stopped else {})},
        "; ".join(x for x in (note, matched.note) if x))
