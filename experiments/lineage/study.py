"""The lineage package's two declarations (:mod:`experiments.common.study`): the lineage study
(paper Sec. 5, 6.1.2 and App. B.3.3; four sections: the LLaMA-style and Qwen-style families,
each with App. B.1's init and with the released code's HF default) and the level study (the
matched leg's level between trained models per MLP width and depth, beyond the paper), whose
records have their own folder, results/records/lineage_level/."""

from __future__ import annotations

from experiments.common.study import Experiment, Section, Study, run_line
from experiments.lineage import (HFINIT_TITLE, LEVEL_TITLE, LINEAGE_TITLE, LONG_TITLE,
                                 QWEN2_HFINIT_TITLE, QWEN2_TITLE)

COMMAND = "python -m experiments.lineage"
QWEN2_COMMAND = "python -m experiments.lineage --arch qwen2"
LEVEL_COMMAND = "python -m experiments.lineage_level --measure"
LONG_COMMAND = "python -m experiments.lineage_level_long --measure"
_ARCH = ("figure11", "table4b", "table4c", "table5", "lineage_runs")
_QWEN2 = ("figure14", "table9", "table10", "table11", "table12", "lineage_qwen2_runs")
# the records of the one lineage command: each family (--arch, --init) its own
EXPERIMENTS = (*_ARCH, *_QWEN2, *(n + "_hfinit" for n in _ARCH + _QWEN2))
LINEAGE = Experiment("lineage", "experiments.lineage.command:entry", cpu="lineage",
                     paper="lineage --scale paper", records=EXPERIMENTS)


def _complete(records, names) -> bool:
    return all(n in records for n in names)


def lineage(records: dict, outputs=None) -> str | None:
    from experiments.lineage import claims

    if not _complete(records, claims.EXPERIMENTS):
        return None
    return claims.section(records).rstrip("\n")


def lineage_hfinit(records: dict, outputs=None) -> str | None:
    from experiments.lineage import claims

    if not _complete(records, claims.HFINIT_EXPERIMENTS):
        return None
    return claims.section(records, init="hf").rstrip("\n")


def lineage_qwen2(records: dict, outputs=None) -> str:
    """The Qwen-style repeat from its records; until all of them exist, a line saying that it
    has not been measured (with what is missing and the command), never older numbers."""
    from experiments.lineage import claims

    missing = [n for n in claims.QWEN2_EXPERIMENTS if n not in records]
    if not missing:
        return claims.section(records, "qwen2").rstrip("\n")
    return "\n".join([f"## {QWEN2_TITLE}", "",
                      f"Not measured yet: no records for {', '.join(missing)}. "
                      f"`{QWEN2_COMMAND}` trains the Qwen-style family (the "
                      "LLaMA-style family's data, seeds and schedule with the `qwen2-small` "
                      "preset; experiments/common/family.py) and measures it; an "
                      "interrupted run resumes from its checkpoints."])


def lineage_qwen2_hfinit(records: dict, outputs=None) -> str | None:
    from experiments.lineage import claims

    if not _complete(records, claims.QWEN2_HFINIT_EXPERIMENTS):
        return None
    return claims.section(records, "qwen2", init="hf").rstrip("\n")


def level(records: dict, outputs=None) -> str | None:
    from experiments.common.level_range import FAMILY_RECORD
    from experiments.lineage import level_claims

    if "lineage_level" not in records:
        return None
    return level_claims.section(records["lineage_level"], LEVEL_COMMAND,
                                run_line(records, ["lineage_level"]),
                                records.get("training", {}).get(FAMILY_RECORD))


STUDY = Study("lineage", (LINEAGE,), (
    Section("lineage", LINEAGE_TITLE, lineage, COMMAND),
    Section("lineage_hfinit", HFINIT_TITLE, lineage_hfinit, f"{COMMAND} --init hf"),
    Section("lineage_qwen2", QWEN2_TITLE, lineage_qwen2, QWEN2_COMMAND),
    Section("lineage_qwen2_hfinit", QWEN2_HFINIT_TITLE, lineage_qwen2_hfinit,
            f"{QWEN2_COMMAND} --init hf")))
def level_long(records: dict, outputs=None) -> str:
    """The slack along training: from its record, or a line saying it is not measured yet."""
    from experiments.lineage import level_long_claims

    return level_long_claims.section(records.get("lineage_level_long"), LONG_COMMAND,
                                     run_line(records, ["lineage_level_long"]))


LEVEL_STUDY = Study(
    "lineage_level",
    (Experiment("lineage_level", "experiments.lineage.level:main", cpu="lineage_level --measure"),
     Experiment("lineage_level_long", "experiments.lineage.level_long_measure:main",
                cpu="lineage_level_long --measure")),
    (Section("lineage_level", LEVEL_TITLE, level, LEVEL_COMMAND),
     Section("lineage_level_long", LONG_TITLE, level_long, LONG_COMMAND)))
