"""The trained families' old address: they are defined in :mod:`experiments.common.family`,
shared by the lineage and the attention-sink studies. This module keeps the path that the
committed RESULTS.md sections of both studies cite and re-exports every public name; code
imports :mod:`experiments.common.family` itself."""

from experiments.common.family import *  # noqa: F401,F403
