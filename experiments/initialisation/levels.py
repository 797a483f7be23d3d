"""The significance levels and the paper's N that several of the Sec. 3-4 rules share, and the
verdict of a rule that either holds or not."""

from __future__ import annotations

from bornbiased_jax.verdicts import DIFFERS, REPRODUCED

ALPHA = 0.01  # significance level of the "is there a preference" rules
PAPER_N = 2000  # the N that the paper's Table 1(a), (c) p-values imply (`bornbiased theory`)
# Table 1(b)'s LLaMA-2 rows are 6-9 of N = 10,000 (0.06-0.09 %; 1.2-1.8 sequences at N = 2,000)
PAPER_N_LLAMA = 10_000
LLAMA_ALPHA = 0.05  # the paper calls all six Table 1(b) rows significant; its largest p: 3.16e-2
DECISIVE_LOG10_P = -10  # "decisive": a Bonferroni p below 1e-10 at the paper's N


def ok_verdict(ok: bool) -> str:
    """Reproduced when a rule holds, differs when not."""
    return REPRODUCED if ok else DIFFERS
