"""The real-model studies' declarations (:mod:`experiments.common.study`): one driver for every
model record (:mod:`experiments.real_model.record`), and a study with its RESULTS.md section
for each shipped record that has one: SmolLM2-135M-Instruct, the first model this toolkit did
not make (a GGUF), and Gemma 3 270M, the second and a new architecture family. Their records
go to results/records/<the record's study>/."""

from __future__ import annotations

from experiments.common.study import Experiment, Section, Study
from experiments.real_model.record import load

SMOLLM2, GEMMA3 = load("smollm2"), load("gemma3")
COMMAND = "python -m experiments.real_model"
GEMMA3_COMMAND = "python -m experiments.gemma3"


def section(records: dict, outputs=None) -> str | None:
    from experiments.real_model import claims

    return claims.section(records, claims.COMMAND)


def gemma3_section(records: dict, outputs=None) -> str | None:
    from experiments.real_model import gemma3_claims

    return gemma3_claims.section(records, gemma3_claims.COMMAND)


STUDY = Study("real_model", (Experiment("real_model", "experiments.real_model.command:entry",
                                        cpu="real_model [RECORD] --model FILE",
                                        records=SMOLLM2.experiments),),
              (Section("real_model", SMOLLM2.title, section, COMMAND),))
GEMMA3_STUDY = Study("gemma3", (Experiment("gemma3", "experiments.real_model.command:gemma3",
                                           cpu="gemma3 --model FILE",
                                           records=GEMMA3.experiments),),
                     (Section("gemma3", GEMMA3.title, gemma3_section, GEMMA3_COMMAND),))
