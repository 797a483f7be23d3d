"""The real-model study's declaration (SmolLM2-135M-Instruct, the first model this toolkit did
not make, a GGUF): its records and its RESULTS.md section (:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.common.study import Experiment, Section, Study
from experiments.real_model import EXPERIMENTS, TITLE

COMMAND = "python -m experiments.real_model"
def section(records: dict, outputs=None) -> str | None:
    from experiments.real_model import claims

    return claims.section(records, claims.COMMAND)


STUDY = Study("real_model", (Experiment("real_model", "experiments.real_model.command:entry",
                                   cpu="real_model --model FILE", records=EXPERIMENTS),),
              (Section("real_model", TITLE, section, COMMAND),))
