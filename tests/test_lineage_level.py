"""The level study across widths and depths (experiments/lineage/level.py) and its RESULTS.md
rules (experiments/lineage/level_claims.py) on hand-made pair statistics: the slack fitted on
the first half of the seeds, judged on the second, the rules passing and failing."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.verdicts import DIFFERS, HOLDS, UNDERPOWERED
from experiments.lineage import level
from experiments.lineage import level_claims as LC


def _pair(a: int, b: int, K: int, n: int = 176, m: int = 40, layers: int = 2) -> dict:
    stats = [[K, n, m]] * layers
    return {"a": a, "b": b, "dir_a": stats, "dir_b": stats, "to_b": list(range(layers)),
            "to_a": list(range(layers))}


def _cell(seeds: int, trained_K, init_K=0, units: int = 176) -> dict:
    """Every pair of ``seeds`` models; trained_K(a, b) gives a pair's K per layer."""
    pairs = [(a, b) for a in range(seeds) for b in range(a + 1, seeds)]
    return {"units": units, "layers": 2, "d_model": 64, "seeds": list(range(seeds)),
            "rows_per_model": 960, "steps": 250,
            "init": [_pair(a, b, init_K, units) for a, b in pairs],
            "trained": [_pair(a, b, trained_K(a, b), units) for a, b in pairs]}


def test_partial_law_p_of_a_pair_and_the_fitted_slack():
    """K = 3 of m = 40 prescribed among n = 176 is rare (mean 0.23): at slack 0 such pairs
    reject; the fit is the smallest count that brings the fit half to alpha and alpha / 2."""
    p = _pair(0, 1, 3)
    assert level.log_p(p, 0) < np.log(0.005)
    assert level.log_p(p, 3) == 0.0  # K - slack <= 0: p = 1
    pairs = [_pair(a, b, 3 if (a + b) % 3 == 0 else 0)
             for a in range(16) for b in range(a + 1, 16)]
    u = level.fit_slack(pairs)
    assert 0 < u <= 3
    rows = level._rows(pairs, u)
    assert all(np.mean([r["matched"] <= a for r in rows]) <= a for a in level.ALPHAS)
    rows = level._rows(pairs, u - 1)
    assert any(np.mean([r["matched"] <= a for r in rows]) > a for a in level.ALPHAS)


def test_rules_hold_fail_and_say_underpowered():
    # every trained pair shares 2 units: the fit and the held-out half agree; 24 seeds
    good = level.summarise({"settings": dict(level.DEFAULTS),
                            "cells": {"L2-F176": _cell(24, lambda a, b: 2)}})
    c = good["cells"]["L2-F176"]
    assert good["default_slack"] == c["fit_slack"] >= 1
    assert c["held_out"]["0.01"]["rejections"] == 0
    rows = LC.claims(good)
    assert rows[0].verdict == HOLDS  # the initialisations
    assert rows[1].verdict in (HOLDS, UNDERPOWERED) and "not rejected" in rows[1].why
    assert rows[1].verdict == (HOLDS if c["held_out_power"]["0.05"] >= LC.POWER_NEEDED
                               else UNDERPOWERED)
    # the held-out half shares far more units than the fit half: the level fails there
    bad = level.summarise({"settings": dict(level.DEFAULTS), "cells": {"L2-F176": _cell(
        24, lambda a, b: 30 if a >= 12 and b >= 12 else 1)}})
    rows = LC.claims(bad)
    assert rows[1].verdict == DIFFERS and "above its level" in rows[1].why
    assert rows[-1].verdict == DIFFERS
    # initialisations that reject (an invalid null): the init row fails
    broken = level.summarise({"settings": dict(level.DEFAULTS), "cells": {
        "L2-F176": _cell(24, lambda a, b: 1, init_K=40)}})
    assert LC.claims(broken)[0].verdict == DIFFERS


def test_the_default_is_the_largest_fit_over_the_cells():
    out = level.summarise({"settings": dict(level.DEFAULTS), "cells": {
        "L2-F176": _cell(16, lambda a, b: 1),
        "L2-F344": _cell(16, lambda a, b: 3 if (a + b) % 2 else 0, units=344)}})
    fits = [c["fit_slack"] for c in out["cells"].values()]
    assert out["default_slack"] == max(fits) and len(set(fits)) == 2
    text = LC.section({"run": {"settings": dict(level.DEFAULTS)}, "records": {
        "summary": out}}, "python -m experiments.lineage_level --measure", "cpu")
    assert "MLP widths 176, 344, depths 2" in text
