"""How the SeedPrint rows write a measured false-positive rate and judge it against alpha,
shared by the trained-pair, confound and matched rows: a rate's cell with its intervals
(:func:`fpr_cell`) and whether it is above alpha beyond the intervals that allow for pairs that
share models (:func:`over_alpha`); the tests' labels."""

from __future__ import annotations

TEST_LABELS = {"paper": "paper t", "official": "official", "calibrated": "calibrated",
               "permutation": "permutation", "permutation_pearson": "permutation (Pearson)",
               "aligned": "aligned"}


def fpr_cell(r: dict) -> str:
    """'3/496 (0.006) [CP 0.001-0.018; disjoint 0/16; jk 0.000-0.013]'."""
    text = (f"{r['rejections']}/{r['pairs']} ({r['rate']:.3f}) [CP {r['ci95'][0]:.3f}-"
            f"{r['ci95'][1]:.3f}")
    if "disjoint" in r:
        text += f"; disjoint {r['disjoint']['rejections']}/{r['disjoint']['pairs']}"
    if "jackknife" in r:
        lo, hi = r["jackknife"]["ci95"]
        text += f"; jk {lo:.3f}-{hi:.3f}"
    return text + "]"


def over_alpha(r: dict, alpha: float) -> bool:
    """The rate is above alpha beyond both intervals that can be trusted with shared models:
    the jackknife's and the disjoint pairs' (where present)."""
    lo = r.get("jackknife", {}).get("ci95", r["ci95"])[0]
    lo_d = r.get("disjoint", {}).get("ci95", [lo])[0]
    return min(lo, lo_d) > alpha if "disjoint" in r else lo > alpha
