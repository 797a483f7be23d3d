"""The lineage benchmark's numbers from its pair rows: per test and edit, the true-positive
rate at alpha, the false-positive rate over the negatives with intervals that allow for shared
models, the AUC, and the true-positive rate at a 1 % false-positive rate.

Decisions: a SeedPrint test rejects when its p-value is at most ``ALPHA``; a baseline calls a
pair related when its similarity reaches its 0.8 threshold (REEF's, used by the paper for all
four). Scores for the ROC: -log10 p for the tests (ties at the smallest attainable p stay ties,
counted half in the AUC), the similarity for the baselines. The negatives of an edit are the
other bases' suspects of that edit; TPR at 1 % FPR takes its threshold from all weight-lineage
negatives pooled (the score exceeded by at most 1 % of them), so every edit is read against one
operating point. False-positive rates carry a Clopper-Pearson interval over all negatives (as
if independent: too narrow) and a jackknife over seeds (a seed left out removes every pair in
which it is the base or the suspect's origin: ``fingerprint.runner.rejection.rate``).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from bornbiased_jax.defaults import BASELINE_THRESHOLD as THRESHOLD  # at or above: related
from bornbiased_jax.fingerprint.methods.result import ALPHA
from experiments.lineage_bench import EDITS, KNOWLEDGE_ONLY

# The benchmark's columns of each registered test (``registry.ENTRIES``), with their labels,
# in the order of the records; a test registered since says here why it has none
# (``EXCLUDED``; tests/test_registry.py checks that every test has one or the other).
COLUMNS = {"permutation": {"permutation": "permutation (exact)"},
           "aligned": {"aligned": "aligned, trained base",
                       "aligned_init": "aligned, base's init (exact; default, ungated MLPs)"},
           "calibrated": {"calibrated": "calibrated (spearman_all)"},
           "paper": {"paper": "paper (Algorithm 1's test, token inputs)"},
           "official": {"official": "released code"},
           "matched": {"matched": "matched (trained base, default slack)"},
           "matched_init": {"matched_init": "matched, base's init (conservative, default)"},
           "attention": {"attention": "attention (trained base, heads re-paired)",
                         "attention_init": "attention, base's init (exact)"}}
EXCLUDED: dict[str, str] = {}
# 'any_pair' (``registry.COMBINATIONS``) is what `bornbiased fingerprint` answers when BASE's
# initialisation is unknown (two HF folders or GGUF files): the permutation and matched tests
# each at alpha / 2.
DEFAULT_UNKNOWN_INIT = "any_pair"
TESTS = tuple(c for cols in COLUMNS.values() for c in cols) + (DEFAULT_UNKNOWN_INIT,)
BASELINES = ("pcs", "ics", "reef", "intrinsic")


# Scores are compared after rounding to this many decimals: two that differ only by
# floating-point rounding (a baseline's correlation of 0.9999999999999999 beside 1.0, its
# 0.49999999999999994 beside 0.5) are the same score, a tie, not an ordering.
SCORE_DECIMALS = 12


def score(row: dict, test: str) -> float:
    """A pair's score for ``test``, larger meaning more related: a baseline's statistic, or
    -log10 of a test's p-value; rounded to :data:`SCORE_DECIMALS` decimals."""
    if test in BASELINES:
        return round(float(row[test]), SCORE_DECIMALS)
    return round(-math.log10(max(float(row[test]), 1e-300)), SCORE_DECIMALS)


def decides(row: dict, test: str) -> bool:
    return row[test] >= THRESHOLD if test in BASELINES else row[test] <= ALPHA


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(score of a positive > score of a negative) + P(tie) / 2 (the Mann-Whitney U / mn)."""
    pos, neg = np.asarray(pos, float), np.asarray(neg, float)
    if not len(pos) or not len(neg):
        return math.nan
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def threshold_at_fpr(neg: Sequence[float], fpr: float) -> float:
    """The smallest threshold t with #{neg > t} <= fpr * #neg (a score above t is called
    related)."""
    neg = np.sort(np.asarray(neg, float))[::-1]
    allowed = int(math.floor(fpr * len(neg)))
    return float(neg[allowed]) if allowed < len(neg) else -math.inf


def _as_pairs(rows: Sequence[dict], test: str) -> list[dict]:
    """Rows as ``rejection.rate`` reads them: a = base seed, b = the suspect's origin seed, and
    the decision as a p-value (0 related, 1 not), so its jackknife leaves a seed out."""
    return [{"a": r["base"], "b": r["seed"], test: 0.0 if decides(r, test) else 1.0}
            for r in rows]


def summarise(rows: Sequence[dict], tests: Sequence[str] = TESTS + BASELINES) -> dict:
    """{test: {edit: {tpr, tp, positives, fpr: rate(...), auc, tpr_at_1pct}}, test: {...
    'weight lineage' pooled}}."""
    # imports JAX: not when RESULTS.md renders
    from bornbiased_jax.fingerprint.runner import rejection as SM

    weight = [r for r in rows if r["edit"] not in KNOWLEDGE_ONLY]
    out = {}
    for t in tests:
        pooled_neg = [score(r, t) for r in weight if not r["related"]]
        cut = threshold_at_fpr(pooled_neg, 0.01)
        per = {}
        for edit in (*EDITS, "weight lineage"):
            rs = weight if edit == "weight lineage" else [r for r in rows if r["edit"] == edit]
            pos = [r for r in rs if r["related"]]
            neg = [r for r in rs if not r["related"]]
            if not pos:
                continue
            per[edit] = {
                "tp": int(sum(decides(r, t) for r in pos)), "positives": len(pos),
                "tpr": float(np.mean([decides(r, t) for r in pos])),
                "fpr": SM.rate(_as_pairs(neg, t), t, 0.5) if neg else None,
                "auc": auc([score(r, t) for r in pos], [score(r, t) for r in neg]),
                "tpr_at_1pct": float(np.mean([score(r, t) > cut for r in pos]))}
        out[t] = per
    return out
