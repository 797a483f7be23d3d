"""The significance levels and the paper's N that several of the Sec. 3-4 rules share, and the
verdict of a rule that either holds or not."""

from __future__ import annotations

from bornbiased_jax.verdicts import DIFFERS, REPRODUCED
# Table 1(b)'s N and level, owned by its rule (experiments/common/preference.py)
from experiments.common.preference import LLAMA_ALPHA, PAPER_N_LLAMA  # noqa: F401

ALPHA = 0.01  # significance level of the "is there a preference" rules
PAPER_N = 2000  # the N that the paper's Table 1(a), (c) p-values imply (`bornbiased theory`)
DECISIVE_LOG10_P = -10  # "decisive": a Bonferroni p below 1e-10 at the paper's N


def ok_verdict(ok: bool) -> str:
    """Reproduced when a rule holds, differs when not."""
    return REPRODUCED if ok else DIFFERS
