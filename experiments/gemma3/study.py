"""The Gemma 3 study's declaration (Gemma 3 270M, the second real model and a new architecture
family): its records and its RESULTS.md section (:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.common.study import Experiment, Section, Study
from experiments.gemma3 import EXPERIMENTS, TITLE

COMMAND = "python -m experiments.gemma3"
def section(records: dict, outputs=None) -> str | None:
    from experiments.gemma3 import claims

    return claims.section(records, claims.COMMAND)


STUDY = Study("gemma3", (Experiment("gemma3", "experiments.gemma3.command:entry",
                                   cpu="gemma3 --model FILE", records=EXPERIMENTS),),
              (Section("gemma3", TITLE, section, COMMAND),))
