"""The GPU sections' declaration: the first GPU window's logs and the campaign's pieces, read
from the GPU runs' outputs (results/gpu/, results/campaign/) rather than from records
(:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.campaign import TITLE
from experiments.common.study import Experiment, Section, Study

GPU_TITLE = "On a GPU: the first window"
def gpu_section(records: dict, outputs) -> str | None:
    from experiments.campaign import gpu_window

    return gpu_window.section(outputs.gpu)


def section(records: dict, outputs) -> str | None:
    from experiments.campaign import report

    return report.section(outputs.campaign)


# the driver, and the Sec. 3-4 pieces it runs (each writes paper-scale records under
# results/records/paper/, which the other studies' sections read: no record of its own)
EXPERIMENT_TABLE = (
    Experiment("campaign", "experiments.campaign.command:main", cpu="campaign --budget 480",
               paper="campaign --budget 36000", records=()),
    Experiment("paper_scale", "experiments.campaign.paper_scale:main",
               paper="paper_scale PIECE", records=()))
STUDY = Study("campaign", EXPERIMENT_TABLE, (Section("gpu", GPU_TITLE, gpu_section),
                                             Section("gpu_campaign", TITLE, section)))
