"""The propositions study's declaration: its one experiment, ``bornbiased theory --json`` into
its record (:func:`main`), and its RESULTS.md section (:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.common.study import Experiment, Section, Study, run_line

TITLE = ("The paper's propositions: closed forms beside simulations (Secs. 3-5, App. A)")
COMMAND = "bornbiased theory --json results/records/theory/theory.json"


def section(records: dict, outputs=None) -> str | None:
    if "theory" not in records:
        return None
    from experiments.theory import claims as theory

    return theory.section(records["theory"], COMMAND, run_line(records, ["theory"]))


RECORD = "results/records/theory/theory.json"


def main(argv: list[str]) -> int:
    """The paper's propositions: closed forms beside simulations, the toolkit's own command
    ``bornbiased theory --json results/records/theory/theory.json`` (ARGS after it: its
    flags, e.g. --fast), whose record RESULTS.md's section renders."""
    from bornbiased_jax.cli import main as bornbiased

    if argv and argv[0] in ("-h", "--help"):
        print(f"usage: python -m experiments theory [ARGS]\n\n{main.__doc__}\n\n"
              "ARGS are bornbiased theory's:\n")
        return bornbiased(["theory", "--help"])
    return bornbiased(["theory", "--json", RECORD, *argv])


STUDY = Study("theory", (Experiment("theory", "experiments.theory.study:main", cpu="theory",
                                    records=("theory",)),),
              (Section("theory", TITLE, section, COMMAND),))
