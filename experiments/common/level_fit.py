"""The matched leg's level from saved pair statistics (beyond the paper): a pair's log p at a
slack, the slack fitted on half of a cell's seeds, the rates at it on the other half and their
judgement by :mod:`experiments.common.level_rule`. Pure functions of the statistics that
:mod:`experiments.lineage.level` measures (``pair_stats``: per direction and layer [K, n, m]),
so the level's rows render without the models."""

from __future__ import annotations

import math

import numpy as np

from bornbiased_jax.fingerprint.methods.rencontres import fisher_log_p, partial_rencontres_log_sf
from bornbiased_jax.fingerprint.methods.result import ALPHA
from bornbiased_jax.fingerprint.runner import rejection as SM

ALPHAS = (ALPHA, ALPHA / 2)  # the matched test alone; its leg of the any-pair verdict
# The level table's slack: the largest fitted over its cells (models trained 0.26 M tokens
# each; its record's summary "default_slack", which a test ties to this), the toolkit's default
# for two trained models until the law of training length replaced it
SHORT_CELLS_SLACK = 4


def log_p(stats: dict, slack: int, direction: str = "both") -> float:
    """The matched test's log p of a pair from its :func:`pair_stats` at ``slack``."""
    def one(d):
        return fisher_log_p(np.array([partial_rencontres_log_sf(n, m, K - slack)
                                      for K, n, m in stats[f"dir_{d}"]]))
    if direction == "both":
        return max(one("a"), one("b"))
    return one(direction)


POWER_RATE = 0.05  # the held-out rate the level rule's power is stated against (five x alpha)


def k_table(pairs: list[dict]) -> np.ndarray:
    """K of every pair (rows) and suspect layer (columns), the B direction."""
    return np.array([[K for K, _, _ in p["dir_b"]] for p in pairs], dtype=float).reshape(
        len(pairs), -1)


def k_decisive(pair: dict) -> int:
    """A pair's K as the matched test reads it: the smaller of its two directions' largest K
    over layer pairs. A direction's p is 1 exactly when no layer's K exceeds the slack, and the
    pair's p is the larger of the two directions', so the pair can be called related only where
    this exceeds the slack."""
    return min(max((K for K, _, _ in pair[f"dir_{d}"]), default=0) for d in "ab")


def k_max(pairs: list[dict]) -> int:
    """The largest :func:`k_decisive` of any pair; 0 for no pairs."""
    return max((k_decisive(p) for p in pairs), default=0)


def pair_rows(pairs, slack: int, direction: str = "both") -> list[dict]:
    return [{"a": p["a"], "b": p["b"], "matched": math.exp(log_p(p, slack, direction))}
            for p in pairs]


def among(pairs, seeds) -> list:
    s = set(seeds)
    return [p for p in pairs if p["a"] in s and p["b"] in s]


def halves(seeds: list[int]) -> tuple[list[int], list[int]]:
    """(fit seeds, held-out seeds): the first and the second half."""
    h = len(seeds) // 2
    return list(seeds[:h]), list(seeds[h:])


def fit_slack(pairs) -> int:
    """The smallest slack u >= 0 at which at most a share a of ``pairs`` reject at a, for
    a = alpha and a = alpha / 2."""
    worst = max((K for p in pairs for K, _, _ in p["dir_a"] + p["dir_b"]), default=0)
    for u in range(worst + 1):
        rows = pair_rows(pairs, u)
        if all(np.mean([r["matched"] <= a for r in rows]) <= a for a in ALPHAS):
            return u
    return worst


def rates(pairs, slack: int, direction: str = "both") -> dict:
    rows = pair_rows(pairs, slack, direction)
    return {str(a): SM.rate(rows, "matched", a) for a in ALPHAS}


def summarise(out: dict) -> dict:
    """Per cell: the initialisations' rates (exact direction), the trained pairs' rate at
    slack 0, the fitted slack on the first half of the seeds; the default slack (the largest
    fit); per cell the held-out rates at it; and the mean K of trained pairs (the shared units
    the slack must cover)."""
    from experiments.common import level_rule as LR

    cells_out = {}
    for name, c in out["cells"].items():
        fit_seeds, held = halves(c["seeds"])
        cells_out[name] = {
            "units": c["units"], "layers": c["layers"], "d_model": c["d_model"],
            "seeds": len(c["seeds"]), "rows_per_model": c["rows_per_model"],
            "init": rates(c["init"], 0, "a"),
            "trained_slack0": rates(c["trained"], 0),
            "fit_slack": fit_slack(among(c["trained"], fit_seeds)),
            "fit_pairs": len(among(c["trained"], fit_seeds)),
            "held_out_pairs": len(among(c["trained"], held)),
            "mean_K": float(np.mean([K for p in c["trained"] for K, _, _ in p["dir_b"]])),
            "max_K": int(max(K for p in c["trained"] for K, _, _ in p["dir_b"]))}
    default = max(c["fit_slack"] for c in cells_out.values())
    for name, c in out["cells"].items():
        _, held = halves(c["seeds"])
        r = rates(among(c["trained"], held), default)
        cells_out[name]["held_out"] = r
        cells_out[name]["held_out_power"] = {
            str(rt): LR.power(rt, ALPHA, len(held), 1) for rt in (0.02, 0.03, 0.05, 0.08)}
        init = cells_out[name]["init"][str(ALPHA)]
        cells_out[name]["init_level"] = judge_rate(init, ALPHA, len(c["seeds"]))
        cells_out[name]["held_out_level"] = {
            str(a): judge_rate(r[str(a)], a, len(held)) for a in ALPHAS}
    return {"cells": cells_out, "default_slack": default, "settings": out["settings"]}


def judge_rate(rate: dict, alpha: float, models: int) -> dict:
    from experiments.common import level_rule as LR

    se = rate.get("jackknife", {}).get("se", 0.0)
    rejected, z = LR.level_rejected(rate["rate"], se, alpha, models)
    return {"rejected": bool(rejected), "z": z}


def default_rates(cell: dict, slack: int = SHORT_CELLS_SLACK) -> list[dict]:
    """Per checkpoint of a cell: the matched leg's rejection rate at alpha = 0.01 over every
    pair of its seeds at ``slack`` (default: the level table's, :data:`SHORT_CELLS_SLACK`),
    judged by the level rule (one-sided jackknife t over the models)."""
    out = []
    for step in sorted(cell["steps"], key=int):
        s = cell["steps"][step]
        r = rates(s["pairs"], slack)["0.01"]
        out.append({"step": s["step"], "tokens": s["tokens"], "rate": r,
                    "level": judge_rate(r, 0.01, len(cell["seeds"]))})
    return out
