"""A study's declaration: the experiments whose records it reads, the sections of RESULTS.md it
writes, each with its title, the command that measures it and the function that builds it from
the records. Each study package declares its own (``experiments/<package>/study.py``);
``experiments.STUDIES`` lists them in RESULTS.md's order and :mod:`experiments.render` iterates
them. A declaration imports nothing heavy: a section's builder imports the study's claims
modules when it runs.

Also the pieces the builders share: the run line of a section's records (:func:`run_line`), the
row of a claim whose record is missing (:func:`not_measured`) and a table's rows from
(experiment, claim, rule) specs (:func:`table_rows`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Outputs:
    """Where the GPU runs left their outputs, which the GPU sections read instead of records:
    the first window's logs (``gpu``) and the campaign's pieces (``campaign``)."""

    gpu: Path
    campaign: Path


@dataclasses.dataclass(frozen=True)
class Section:
    """One section of RESULTS.md, between ``<!-- name:begin -->`` and ``<!-- name:end -->``:
    its heading's ``title``, the ``command`` that measures it (None: it is read from the GPU
    runs' outputs) and ``build(records, outputs)``, its text from the records ({experiment:
    saved JSON}), or None when they are missing (the renderer then says how to measure it)."""

    name: str
    title: str
    build: Callable[[dict, Outputs], str | None]
    command: str | None = None


@dataclasses.dataclass(frozen=True)
class Study:
    """A study: ``name``, the folder of its records (results/records/<name>/<experiment>.json),
    the ``experiments`` whose records it reads, and its ``sections`` of RESULTS.md in order."""

    name: str
    experiments: tuple[str, ...]
    sections: tuple[Section, ...]

    def section(self, name: str) -> Section:
        return next(s for s in self.sections if s.name == name)


def run_line(records: dict, names) -> str:
    """Where the records ``names`` ran: each distinct 'device (machine), jax version', or '?'."""
    runs = [records[n]["run"] for n in names if n in records and records[n].get("run")]
    if not runs:
        return "?"
    devices = sorted({f"{r.get('device', '?')} ({r.get('machine', '?')}), jax {r.get('jax', '?')}"
                      for r in runs})
    return "; ".join(devices)


def not_measured(name: str, claim: str):
    """The row of ``claim`` when experiment ``name``'s record is missing: untestable, naming the
    record and the command that measures it."""
    from bornbiased_jax.verdicts import UNTESTABLE, Claim
    from experiments import STUDY_OF

    return Claim(claim, "-", f"no record (results/records/{STUDY_OF[name]}/{name}.json); "
                 f"`python -m experiments.{name}` measures it", UNTESTABLE, "not measured yet")


def table_rows(specs, records: dict) -> list[str]:
    """Table lines of ``specs`` ((experiment, claim prefix, function)): computed from the
    experiment's record, or a not-measured row named by the claim where it is missing."""
    lines = []
    for name, prefix, fn in specs:
        out = fn(records[name]) if name in records else not_measured(name, prefix)
        for c in out if isinstance(out, list) else [out]:
            lines.append("| " + " | ".join(c.cells()) + " |")
    return lines
