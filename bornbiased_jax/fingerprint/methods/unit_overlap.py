"""What two models' MLP units share in each view, the diagnostic behind the matched test's level
between trained models (beyond the paper).

The matched test counts K, the units whose reciprocal best partner is the same unit in the gate
view and in the up view (:mod:`.unit_matching`). Unrelated models trained on similar data share
*universal* units (Gurnee et al., 2024: 1-5 % of GPT-2's neurons fire on the same inputs across
seeds), which correlate across the two models in one view or both. :func:`view_overlap` says,
for one layer pair, how many units are matched in the gate view, in the up view, in both, and
how many of those agree (K), overall and among partners correlated above a threshold: whether
the double matching is what keeps universal units out of K.
"""

from __future__ import annotations

import numpy as np

from bornbiased_jax.fingerprint.methods.unit_matching import live, partners

THRESHOLD = 0.5  # |r| above which two units are called correlated


def _best_r(za: np.ndarray, zb: np.ndarray) -> np.ndarray:
    """For each unit of A, its largest |Pearson r| with any unit of B (standardised views: r is
    the mean product)."""
    if za.shape[1] == 0 or zb.shape[1] == 0:
        return np.zeros(za.shape[1])
    return np.abs(za.T.astype(np.float64) @ zb.astype(np.float64) / len(za)).max(axis=1)


def _partner_r(za: np.ndarray, zb: np.ndarray, m: np.ndarray) -> np.ndarray:
    """|r| of each unit of A with its partner ``m`` in B (0 where it has none)."""
    r = np.zeros(za.shape[1])
    i = np.flatnonzero(m >= 0)
    r[i] = np.abs(np.einsum("ri,ri->i", za[:, i].astype(np.float64),
                            zb[:, m[i]].astype(np.float64)) / len(za))
    return r


def view_overlap(views_a, views_b, threshold: float = THRESHOLD) -> dict:
    """Counts for one layer pair from its (gate, up) standardised views (R, F_A), (R, F_B):

      * ``units``: F_A; ``gate``, ``up``: A's units with a reciprocal best partner in that
        view; ``both``: with one in both views; ``K``: those whose two partners are the same
        unit of B (the matched test's count);
      * ``gate_hi``, ``up_hi``: A's units whose partner in that view correlates above
        ``threshold``; ``both_hi``: above it in both views; ``K_hi``: of K, those;
      * ``gate_any_hi``: A's units correlated above ``threshold`` with some unit of B in the
        gate view (whether or not they are reciprocal partners).
    """
    (ga, ua), (gb, ub) = views_a, views_b
    g = partners(ga, gb, live(ga), live(gb))
    u = partners(ua, ub, live(ua), live(ub))
    rg, ru = _partner_r(ga, gb, g), _partner_r(ua, ub, u)
    both = (g >= 0) & (u >= 0)
    agree = both & (g == u)
    hi = (rg > threshold) & (ru > threshold)
    return {"units": int(ga.shape[1]), "gate": int((g >= 0).sum()), "up": int((u >= 0).sum()),
            "both": int(both.sum()), "K": int(agree.sum()),
            "gate_hi": int((rg > threshold).sum()), "up_hi": int((ru > threshold).sum()),
            "both_hi": int((both & hi).sum()), "K_hi": int((agree & hi).sum()),
            "gate_any_hi": int((_best_r(ga, gb) > threshold).sum())}
