"""The rule of the width/depth confound (``python -m experiments seedprint_confound``,
:mod:`experiments.seedprint.confound`): the paper's and the released code's false-positive
rate on independent initialisations over width, depth, initialisation and n."""

from __future__ import annotations

from bornbiased_jax.verdicts import DIFFERS, PARTLY, REPRODUCED, Claim
from experiments.seedprint.rates import TEST_LABELS, over_alpha


def confound_claims(d: dict) -> list[Claim]:
    """Rows of the seedprint_confound record: the paper's and the released code's
    false-positive rate on pairs of independent initialisations, Gaussian inputs, over width,
    depth, init and n. Reproduced (the test holds its level) in a cell unless its rate is above
    alpha beyond both its jackknife interval and the exact interval of its disjoint pairs
    (:func:`over_alpha`); the row lists the cells where it is."""
    recs = d["records"]
    s = d["run"]["settings"]
    out = []
    for t in ("paper", "official"):
        bad = [r for r in recs if over_alpha(r["rates"][t]["0.01"], 0.01)]
        cells = [f"d {r['d']}x{r['layers']} {r['init']} n {r['n']}: "
                 f"{r['rates'][t]['0.01']['rejections']}/{r['rates'][t]['0.01']['pairs']}"
                 for r in recs]
        why = (f"above alpha (beyond its jackknife and disjoint-pair intervals) in {len(bad)} "
               f"of {len(recs)} cells: " + ", ".join(
            f"d {r['d']}x{r['layers']} {r['init']} n {r['n']}" for r in bad)
            if bad else "at or below alpha in every cell")
        verdict = REPRODUCED if not bad else (PARTLY if len(bad) < len(recs) else DIFFERS)
        out.append(Claim(
            f"{TEST_LABELS[t]} test's false-positive rate at 0.01 on independent inits across "
            f"width, depth and init (Gaussian inputs)",
            "implicit: p > 0.01 for unrelated models (Table 4a)",
            f"{s['models']} models per cell ({s['models'] * (s['models'] - 1) // 2} pairs), "
            f"T = {s['seq_len']}: " + "; ".join(cells), verdict, why, "Sec. 6.1, Table 4a"))
    return out
