"""SeedPrint at initialisation and after short training (paper Sec. 5-6.1): its rules, one
module per artifact, pure functions from one experiment's saved record to
:class:`~bornbiased_jax.verdicts.Claim` rows: :mod:`~experiments.seedprint.figure13`,
:mod:`~experiments.seedprint.table4a`, :mod:`~experiments.seedprint.calibration_claims`,
:mod:`~experiments.seedprint.power_claims`, :mod:`~experiments.seedprint.trained_claims`,
:mod:`~experiments.seedprint.confound_claims` and :mod:`~experiments.seedprint.matched_claims`,
with what they share in :mod:`~experiments.seedprint.rates`.

This module names them all in one place, as the callers read them, and holds :data:`CLAIMS`,
the rows in RESULTS.md's order with the experiment each reads, and the section's
:data:`INTRO`.
"""

from __future__ import annotations

# every rule and constant, as callers import them from here
from experiments.seedprint.calibration_claims import (CALIBRATION_COLS,  # noqa: F401
                                                      calibration_claims)
from experiments.seedprint.confound_claims import confound_claims
from experiments.seedprint.figure13 import figure13_claims
from experiments.seedprint.matched_claims import (HELD_OUT_SEEDS, POWER_RATES,  # noqa: F401
                                                  held_out_by_checkpoint, matched_claims,
                                                  matched_held_out_claim,
                                                  matched_init_level_claim)
from experiments.seedprint.power_claims import POWER_COLS, power_claims  # noqa: F401
from experiments.seedprint.rates import TEST_LABELS, fpr_cell, over_alpha  # noqa: F401
from experiments.seedprint.table4a import (EXCESS, table4a_cell, table4a_claims,  # noqa: F401
                                           table4a_paper, table4a_paper_scale_claims)
from experiments.seedprint.trained_claims import (CONTINUATION_FPR,  # noqa: F401
                                                  INIT_BASE_FPR, RENAMED,
                                                  aligned_level_claims, renamed_claims,
                                                  trained_claims)

INTRO = ("CPU scale: LLaMA-style d = 128 or 256, 4 blocks, and the 12-block d = 768 shape at "
         "small n; each run's settings are in its record. Tests: 'paper' = Algorithm 1 with its "
         "Gaussian-matrix null (t: Student, mean of 10 null draws' p-values), 'official' = the "
         "released code (2 Phi-bar(z)), 'calibrated' = exchangeability with fresh "
         "initialisations, 'permutation' = the residual-basis permutation test, exact for any "
         "pair (beyond the paper; docs/seedprint.md). Pairs drawn from one pool share models: "
         "beside the Clopper-Pearson interval over all pairs (CP, too narrow) the trained-pair "
         "rows give the count over disjoint pairs and a jackknife-over-models interval (jk).")


# (experiment, claim prefix of its rows in RESULTS.md, claims function)
CLAIMS = [("figure13", "Figure 13", figure13_claims), ("table4a", "Table 4a", table4a_claims),
          ("seedprint_calibration", "False-positive rate at alpha = 0.01 on independent",
           calibration_claims),
          ("seedprint_power", "Table 4b/4c analog", power_claims),
          ("seedprint_trained", "False-positive rate at alpha = 0.01 on unrelated *trained*",
           trained_claims),
          ("seedprint_confound", "paper t test's false-positive rate", confound_claims),
          ("seedprint_matched", "Matched test's", matched_claims)]
