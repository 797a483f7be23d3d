"""The rule of SeedPrint's calibration (``python -m experiments seedprint_calibration``,
:mod:`experiments.seedprint.calibration`): every test's false-positive rate at alpha = 0.01 on
pools of independent initialisations."""

from __future__ import annotations

from bornbiased_jax.fingerprint.methods.result import ALPHA
from bornbiased_jax.verdicts import DIFFERS, REPRODUCED, Claim


def _rate(r: dict) -> str:
    lo, hi = r["ci95"]
    return f"{r['fpr']:.3f} [{lo:.3f}, {hi:.3f}]"


CALIBRATION_COLS = [("paper t", "paper/t_mean"), ("paper U", "paper/u_mean"),
                    ("official", "official/two_phi_bar"),
                    ("calibrated tail", "calibrated/residual_all/gaussian_tail"),
                    ("calibrated exact, disjoint null (expect 0.049)",
                     "calibrated/residual_all/disjoint_exact_at_3_61")]


def calibration_claims(d: dict) -> list[Claim]:
    """The paper's implicit claim: its tests hold their level on unrelated models. Reproduced
    when no paper or official test's false-positive rate is above alpha = 0.01 beyond its 95 %
    interval (lower bound > alpha) in any pool; differs otherwise, naming the pools. The
    calibrated test's rate is said to be at its nominal level where every interval of its
    Gaussian-tail rate contains alpha."""
    parts, over = [], []
    cal_ok = True
    for r in d["records"]:
        cells = [f"{lab} {_rate(r[k])}" for lab, k in CALIBRATION_COLS if k in r]
        pool = f"{r['model']} {r['input']}"
        parts.append(f"{pool} (n = {r['n']}, T = {r['T']}, {r['M']} models): " + ", ".join(cells))
        for lab, k in CALIBRATION_COLS[:3]:
            if k in r and r[k]["ci95"][0] > ALPHA:
                over.append(f"{lab} {r[k]['fpr']:.2f} ({pool})")
        k = "calibrated/residual_all/gaussian_tail"
        cal_ok &= k not in r or r[k]["ci95"][0] <= ALPHA <= r[k]["ci95"][1]
    cal = ("the calibrated test's tail rate holds alpha in every pool" if cal_ok else
           "the calibrated test's tail rate misses alpha in some pool")
    why = (f"FPR above alpha beyond its interval: {'; '.join(over)}; {cal}" if over else cal)
    return [Claim("False-positive rate at alpha = 0.01 on independent inits (95 % "
                  "Clopper-Pearson)", "implicit: 'reliable null', Table 4a/4c p > 0.01",
                  "; ".join(parts), DIFFERS if over else REPRODUCED, why, "Sec. 6.1")]
