"""The propositions study's declaration: the record of ``bornbiased theory --json`` and its
RESULTS.md section (:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.common.study import Section, Study, run_line

TITLE = ("The paper's propositions: closed forms beside simulations (Secs. 3-5, App. A)")
COMMAND = "bornbiased theory --json results/records/theory/theory.json"


def section(records: dict, outputs=None) -> str | None:
    if "theory" not in records:
        return None
    from experiments.theory import claims as theory

    return theory.section(records["theory"], COMMAND, run_line(records, ["theory"]))


STUDY = Study("theory", ("theory",), (Section("theory", TITLE, section, COMMAND),))
