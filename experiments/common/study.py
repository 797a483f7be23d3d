"""A study's declaration: its experiments (each a name, the entry that measures it, its CPU- and
paper-scale settings, the records it writes), the sections of RESULTS.md it writes, each with
its title, the command that measures it and the function that builds it from the records. Each
study package declares its own (``experiments/<package>/study.py``); ``experiments.STUDIES``
lists them in RESULTS.md's order, :mod:`experiments.render` iterates them and ``python -m
experiments NAME`` runs the experiment NAME of whichever study declares it. A declaration
imports nothing heavy: an experiment's entry and a section's builder import the study's
measurement and claims modules when they run.

Also the pieces the builders share: the run line of a section's records (:func:`run_line`), the
row of a claim whose record is missing (:func:`not_measured`) and a table's rows from
(experiment, claim, rule) specs (:func:`table_rows`).
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Callable, Union

# an experiment's settings at one scale: the dict its ``--scale`` picks, a function that
# returns that dict (settings the toolkit holds, read only when asked), or the arguments of
# ``python -m experiments`` that measure it at that scale (a command without a settings dict)
Settings = Union[dict, Callable[[], dict], str, None]


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment of a study, run as ``python -m experiments NAME [ARGS]``.

    ``measure``: its entry, a function of the command's arguments (a list of strings) or its
    'module:function' path, imported only when it runs; it returns None or an exit status.
    ``cpu`` and ``paper``: its settings at CPU scale and at the paper's (:data:`Settings`;
    ``paper`` None where there is no paper-scale variant). ``records``: the records it writes
    under results/records/<study>/ (None: one, named as the experiment; () none: a command that
    trains, drives or renders)."""

    name: str
    measure: Union[str, Callable[[list], object]]
    cpu: Settings = None
    paper: Settings = None
    records: Union[tuple, None] = None

    @property
    def writes(self) -> tuple[str, ...]:
        """The names of the records it writes."""
        return (self.name,) if self.records is None else tuple(self.records)

    def entry(self) -> Callable[[list], object]:
        """Its measuring function, imported."""
        if callable(self.measure):
            return self.measure
        module, _, function = self.measure.partition(":")
        return getattr(importlib.import_module(module), function)

    def run(self, argv: list) -> int:
        """Run it on the command's arguments ``argv``; its exit status."""
        status = self.entry()(list(argv))
        return 0 if status is None else int(status)

    def settings(self, scale: str) -> dict | str | None:
        """Its settings at ``scale`` ('cpu' or 'paper'), a function's dict read."""
        s = self.cpu if scale == "cpu" else self.paper
        return s() if callable(s) else s

    @property
    def summary(self) -> str:
        """The first paragraph of its entry's docstring, on one line (imports the entry)."""
        doc = (self.entry().__doc__ or "").strip().split("\n\n")[0]
        return " ".join(doc.split())


@dataclasses.dataclass(frozen=True)
class Outputs:
    """Where the GPU runs left their outputs, which the GPU sections read instead of records:
    the first window's logs (``gpu``) and the campaign's pieces (``campaign``)."""

    gpu: Path
    campaign: Path


def defined(module: str, name: str, key: str | None = None) -> Callable[[], dict]:
    """Settings a module holds (``module.NAME``, or ``module.NAME[key]``), read when asked: an
    :class:`Experiment`'s ``cpu`` or ``paper`` without importing its module when the studies are
    declared."""
    def read() -> dict:
        value = getattr(importlib.import_module(module), name)
        return dict(value if key is None else value[key])

    read.__qualname__ = f"{module}.{name}" + ("" if key is None else f"[{key!r}]")
    return read


def scales(module: str, key: str | None = None) -> dict:
    """``cpu`` and ``paper`` of an experiment whose module holds them as ``CPU`` and ``PAPER``
    (:func:`defined`): ``Experiment(name, entry, **scales(module))``."""
    return {"cpu": defined(module, "CPU", key), "paper": defined(module, "PAPER", key)}


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
    """A study: ``name``, the folder of its records (results/records/<name>/<record>.json), its
    ``experiments`` (:class:`Experiment`, the table ``python -m experiments NAME`` looks a name
    up in) and its ``sections`` of RESULTS.md in order."""

    name: str
    experiments: tuple[Experiment, ...]
    sections: tuple[Section, ...]

    @property
    def records(self) -> tuple[str, ...]:
        """The records its experiments write, which its sections read, in order."""
        return tuple(r for e in self.experiments for r in e.writes)

    def experiment(self, name: str) -> Experiment | None:
        return next((e for e in self.experiments if e.name == name), None)

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
