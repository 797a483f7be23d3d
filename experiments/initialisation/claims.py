"""The initialisation study's rules (paper Sec. 3-4), one module per artifact, each a set of
pure functions from the saved records of experiments/table1.py ... figure10.py to
:class:`~bornbiased_jax.verdicts.Claim` rows whose verdict follows the rule in its docstring:
:mod:`~experiments.initialisation.table1`, :mod:`~experiments.initialisation.figure1`,
:mod:`~experiments.initialisation.figure2` (Finding 2.2's statistics, Findings 2.2 and 2;
Figure 2's own rule is :mod:`experiments.common.contraction`'s),
:mod:`~experiments.initialisation.table2`, :mod:`~experiments.initialisation.figure3`, ...,
:mod:`~experiments.initialisation.figure10`, with the levels they share in
:mod:`~experiments.initialisation.levels`.

This module names them all in one place, as the callers read them, and holds :data:`CLAIMS`,
the rows in RESULTS.md's order with the experiment each reads.
"""

from __future__ import annotations

# every rule and constant, as callers import them from here
from bornbiased_jax.stats import uniform_rank_frequency  # noqa: F401
from experiments.initialisation.figure1 import (PAPER_FIGURE1A, PAPER_FIGURE1A_N,  # noqa: F401
                                                PAPER_FIGURE1A_PRESET, PAPER_FIGURE1A_T,
                                                figure1a_claim, paper_figure1a_frequencies)
from experiments.initialisation.figure2 import (FINDING2_PARTS, FINDING22_PAPER,  # noqa: F401
                                                UNAMBIGUOUS_P, favourite_stats, figure2_claim,
                                                finding2_claim, finding22_claim, match_summary,
                                                paper_interval_width)
from experiments.initialisation.figure3 import (figure3_claim, figure3_row,  # noqa: F401
                                                unembedding_null_p)
from experiments.initialisation.figure4 import (FIGURE4_DROP, figure4_claim,  # noqa: F401
                                                figure4_from_figure7)
from experiments.initialisation.figure5 import figure5_claim
from experiments.initialisation.figure6 import figure6_claim
from experiments.initialisation.figure7 import figure7_claim, mean_cosine_se  # noqa: F401
from experiments.initialisation.figure8 import (FIGURE8_PAPER_N, figure8_claim,  # noqa: F401
                                                sd_interval_factors)
from experiments.initialisation.figure9 import figure9_claim
from experiments.initialisation.figure10 import (FIGURE10_PAPER, figure10_claim,  # noqa: F401
                                                 figure10_rows)
from experiments.initialisation.levels import (ALPHA, DECISIVE_LOG10_P, LLAMA_ALPHA,  # noqa: F401
                                               PAPER_N, PAPER_N_LLAMA)
from experiments.initialisation.table1 import (decisive_count, llama_significance,  # noqa: F401
                                               seed_specificity, table1_claim)
from experiments.initialisation.table2 import table2_claim
from experiments.initialisation.table3 import table3_claim

# (experiment, the claim's name in RESULTS.md, claim function) in RESULTS.md's order
CLAIMS = [("table1", "Table 1 / Finding 1", table1_claim), ("figure1", "Figure 1a", figure1a_claim),
          ("figure2_finding22", "Finding 2.2", finding22_claim),
          ("figure2_finding22", "Figure 2 / Finding 2.1", figure2_claim),
          ("table2_figure3", "Table 2 / Findings 3.1-3.2", table2_claim),
          ("table2_figure3", "Figure 3 / Finding 3.1", figure3_claim),
          ("figure4", "Figure 4 / Finding 4", figure4_claim),
          ("figure6", "Figure 6 / Finding 4.1", figure6_claim),
          ("figure7", "Figure 7 / Finding 3.2a", figure7_claim),
          ("figure5", "Figure 5 / Prop. 2", figure5_claim),
          ("table3", "Table 3 / Prop. 4", table3_claim),
          ("figure8", "Figure 8 / Finding 5, Prop. 5", figure8_claim),
          ("figure9", "Figure 9 / Eq. 2", figure9_claim),
          ("figure10", "Figure 10 / Finding 1 (extended)", figure10_claim)]


def claim_specs(records: dict) -> list:
    """:data:`CLAIMS` with the rules that read a second record given it: Figure 3's the
    simulated null through the CPU-scale model's unembedding (the ``figure3_null`` record,
    experiments/figure3_null.py), when there is one."""
    f3 = figure3_row(records.get("figure3_null"), "python -m experiments.figure3_null")
    return [(name, prefix, f3 if fn is figure3_claim else fn) for name, prefix, fn in CLAIMS]
