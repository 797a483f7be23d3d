"""The GPU sections' declaration: the first GPU window's logs and the campaign's pieces, read
from the GPU runs' outputs (results/gpu/, results/campaign/) rather than from records
(:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.campaign import TITLE
from experiments.common.study import Section, Study

GPU_TITLE = "On a GPU: the first window"
def gpu_section(records: dict, outputs) -> str | None:
    from experiments.campaign import gpu_window

    return gpu_window.section(outputs.gpu)


def section(records: dict, outputs) -> str | None:
    from experiments.campaign import plan

    return plan.section(outputs.campaign)


STUDY = Study("campaign", (), (Section("gpu", GPU_TITLE, gpu_section),
                               Section("gpu_campaign", TITLE, section)))
