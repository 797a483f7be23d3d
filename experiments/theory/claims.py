"""The paper's propositions (Props. 2, 4, 5, Eq. 2, Table 1's test, the SeedPrint null): claims
from the saved record of ``bornbiased theory --json results/records/theory/theory.json``.

Each row is a closed form beside its Monte Carlo simulation through random networks built from
the model zoo's own blocks (:mod:`bornbiased_jax.theory.claims`). The verdict of a row compares
the paper's statement with the closed form ("holds", "corrected", "beyond the paper": the row's
note says why) and is "differs" whenever the simulation disagrees with the closed form: by more
than 4 standard errors plus the row's stated finite-width allowance (recomputed here from the
saved numbers, :meth:`theory.claims.TheoryClaim.finish`)."""

from __future__ import annotations

from bornbiased_jax.theory.claims import Z, TheoryClaim
from bornbiased_jax.verdicts import table

INTRO = (f"Each closed form is checked against a simulation through random networks built "
         f"from the model zoo's blocks (mean ± standard error over replicates); the simulation "
         f"agrees when it lies within {Z:g} SE plus the row's stated finite-width allowance, "
         f"and a row whose simulation disagrees is 'differs'. `pytest theory/` runs the same "
         f"checks as tests, with exact enumeration and hypothesis properties beside them.")


def claims(record: dict) -> list:
    """The RESULTS.md rows of a saved theory record."""
    return [TheoryClaim.from_json(r).row() for r in record["records"]]


def section(record: dict, command: str, where: str) -> str:
    run = record.get("run", {})
    fast = " (--fast: fewer replicates, wider SEs)" if run.get("fast") else ""
    return "\n".join([
        "## The paper's propositions: closed forms beside simulations (Secs. 3-5, App. A)", "",
        f"Generated from results/records/theory/theory.json (`{command}`{fast}; run on "
        f"{where}, {run.get('wall_seconds', '?')} s). " + INTRO, "",
        table(claims(record))])
