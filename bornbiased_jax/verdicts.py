"""Verdicts as data: the closed vocabulary every results table uses, and the row type.

A :class:`Claim` is one row of a results table: the paper's claim, where it is in the paper,
the paper's value, ours, a verdict from :data:`VERDICTS` and why. The studies
(``experiments/``) compute claims from their saved records with pure functions, and
one renderer (:mod:`experiments.render`) writes them into RESULTS.md.

The vocabulary and what each word means are :data:`VERDICTS`, also printed at the top of
RESULTS.md.
"""

from __future__ import annotations

import dataclasses

REPRODUCED = "reproduced"
UNDERPOWERED = "consistent, underpowered"
PARTLY = "partly reproduced"
DIFFERS = "differs"
UNTESTABLE = "untestable"
HOLDS = "holds"
CORRECTED = "corrected"
BEYOND = "beyond the paper"
MEASURED = "measured"

VERDICTS = {
    REPRODUCED: "the paper's claim holds in our measurement, by a stated rule that could have "
                "failed and with the precision to fail",
    UNDERPOWERED: "our measurement contains the paper's value but is too imprecise to confirm "
                  "it (e.g. a 95 % interval wider than the paper's own)",
    PARTLY: "one part of a compound claim holds and another does not (the row says which)",
    DIFFERS: "our measurement contradicts the paper's claim or value (the row says by how much)",
    UNTESTABLE: "the claim cannot be tested with this run (a precondition failed, e.g. the "
                "baseline has no sinks at this scale)",
    HOLDS: "a closed-form statement of the paper checked exactly and by simulation",
    CORRECTED: "the paper's statement is wrong; the row gives the correct one",
    BEYOND: "a claim or quantity the paper does not state, tested or measured here (the row "
            "says which and how it came out)",
    MEASURED: "a reference or control value the paper gives nothing to compare with",
}


def check(verdict: str) -> str:
    """``verdict`` if it is one of :data:`VERDICTS`; a ``ValueError`` naming them otherwise."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r} is not one of {list(VERDICTS)}")
    return verdict


@dataclasses.dataclass
class Claim:
    """One row: ``claim`` (what is claimed, with the paper's figure or table), ``paper`` (the
    paper's value), ``ours`` (our value), ``verdict`` (one of :data:`VERDICTS`), ``why`` (the
    measurement or rule behind the verdict; may be empty), ``section`` (where in the paper)."""

    claim: str
    paper: str
    ours: str
    verdict: str
    why: str = ""
    section: str = ""

    def __post_init__(self):
        check(self.verdict)

    @property
    def verdict_text(self) -> str:
        return self.verdict + (f": {self.why}" if self.why else "")

    def cells(self) -> list[str]:
        return [self.claim, self.paper, self.ours, self.verdict_text]


def table(claims: list[Claim], ours: str = "ours") -> str:
    """The markdown table of ``claims``: claim | paper | ours | verdict."""
    lines = [f"| claim | paper | {ours} | verdict |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(c.cells()) + " |" for c in claims]
    return "\n".join(lines)


def vocabulary_markdown() -> str:
    """The vocabulary as a markdown list, for the top of RESULTS.md."""
    return "\n".join(f"- **{v}**: {d}." for v, d in VERDICTS.items())
