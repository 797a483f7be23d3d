"""The matched leg's level along training: the overlap of two models' views, the law of the
slack in training length fitted on hand-made K tables (growing, flat), its held-out judgement,
the growth rule, and the section; each rule shown passing and failing."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from bornbiased_jax.fingerprint.methods.unit_overlap import view_overlap
from bornbiased_jax.verdicts import BEYOND
from experiments.lineage import level_long as LL
from experiments.lineage import level_long_claims as LC
from experiments.lineage import level_long_law as LW

F = 344


def _std(z):
    z = z - z.mean(0)
    return (z / z.std(0)).astype(np.float32)


def test_view_overlap_of_a_copy_an_unrelated_model_and_shared_gate_units():
    """A copy shares every unit in both views (K = F, all correlated); unrelated random views
    share about one; units shared in the gate view only are counted there and kept out of K."""
    rng = np.random.default_rng(0)
    R, n = 480, 64
    g, u = _std(rng.normal(size=(R, n))), _std(rng.normal(size=(R, n)))
    same = view_overlap((g, u), (g, u))
    assert same["K"] == n and same["K_hi"] == n and same["gate_any_hi"] == n
    g2, u2 = _std(rng.normal(size=(R, n))), _std(rng.normal(size=(R, n)))
    other = view_overlap((g, u), (g2, u2))
    assert other["K"] <= 4 and other["gate_hi"] == 0 and other["gate_any_hi"] == 0
    # B's gate units 0-31 are A's 0-31 under a shift of labels (noise added), up views unrelated
    shared = g2.copy()
    shared[:, (np.arange(32) + 5) % 32] = _std(g[:, :32] + 0.3 * rng.normal(size=(R, 32)))
    o = view_overlap((g, u), (shared, u2))
    assert o["gate_hi"] >= 30 and o["up_hi"] == 0 and o["K_hi"] == 0 and o["K"] <= 4


def test_the_long_cells_keep_geometric_checkpoints_and_share_a_tokenizer():
    for name, c in LL.CELLS.items():
        keep = c.run.keep_steps
        assert keep[-1] == c.run.steps and all(b / a <= 2 for a, b in zip(keep, keep[1:]))
        if c.device == "cpu":
            assert keep[0] == 250 and c.run.save_every == 250
        else:  # a GPU window's cell: a checkpoint at each kept step, kept steps x2 apart
            assert set(keep) <= set(range(0, c.run.steps + 1, c.run.save_every))
    assert LL.CELLS["L2-F344-long"].run.steps == 100 * 250  # two decades beyond 250 steps
    assert {c.run.steps for n, c in LL.CELLS.items() if n != "L2-F344-long"} >= {2500}
    prose = LL.CELLS["L2-F344-prose"]
    assert prose.tokenizer_of == "L2-F344-long" and not set(prose.run.seeds) & set(
        LL.CELLS["L2-F344-long"].run.seeds)  # other initialisations, not the code cell's
    assert "--tokenizer runs/level-long/L2-F344-long/tokenizer.json" in LL.command(
        "L2-F344-prose")
    assert "--keep-steps 250,500,1000,2000,4000,8000,16000,25000" in LL.command("L2-F344-long")


def _pair(a, b, Ks, attention_log10_p=-0.5):
    """A pair whose suspect layers share Ks units (equal widths, no dead unit)."""
    return {"a": a, "b": b, "dir_a": [[k, F, F] for k in Ks], "dir_b": [[k, F, F] for k in Ks],
            "to_b": list(range(len(Ks))), "to_a": list(range(len(Ks))),
            "overlap": [dict.fromkeys(LW.OVERLAP_KEYS, 1.0) for _ in Ks],
            "attention": {"K_total_a": 2, "K_total_b": 3, "log10_p_a": attention_log10_p,
                          "log10_p_b": attention_log10_p - 0.2, "heads": 8, "null_mean": 2.0,
                          "K_per_layer": [1, 2]}}


def test_a_pairs_k_is_the_smaller_of_its_directions_largest_as_the_test_reads_it():
    """The matched test's p is the larger of its two directions', and a direction's p is 1
    exactly when no layer's K exceeds the slack: a pair whose A direction shares 9 units and B
    direction at most 5 has p = 1 at slack 5, so its K (k_decisive) is 5, not 9; above 5 in
    both directions it can be called related."""
    import math

    from experiments.common.level_fit import k_decisive, k_max, log_p

    lopsided = {**_pair(0, 1, [5, 2]), "dir_a": [[9, F, F], [1, F, F]]}
    assert k_decisive(lopsided) == 5 and math.exp(log_p(lopsided, 5)) == 1.0
    assert math.exp(log_p(lopsided, 4)) < 1.0
    assert k_max([lopsided, _pair(1, 2, [3, 3])]) == 5 and k_max([]) == 0


def _record(k_of_step, seeds=range(8), layers=2, at=(250, 1000, 4000)):
    """A long-cell record whose pairs share ``k_of_step(step, a, b)`` units in layer 0."""
    steps = {}
    for step in at:
        pairs = [_pair(a, b, [k_of_step(step, a, b)] + [0] * (layers - 1))
                 for i, a in enumerate(seeds) for b in list(seeds)[i + 1:]]
        steps[str(step)] = {"step": step, "tokens": step * 1024, "val_loss": [3.0] * len(seeds),
                            "pairs": pairs}
    cells = {"L2-F344-long": {"units": F, "layers": layers, "d_model": 128,
                              "seeds": list(seeds), "schedule_steps": 25000,
                              "corpus": ["python-stdlib"], "steps": steps}}
    return {"settings": {}, "cells": cells}


def test_the_law_is_constant_when_k_is_flat_and_grows_when_k_grows():
    F = 344
    flat = LW.fit_law([(2.6e5, 2, F), (1e6, 3, F), (4e6, 2, F), (1.6e7, 3, F), (2.6e7, 2, F)])
    assert flat["form"] == "constant" and LW.law_slack(flat, 1e12, F) == 3
    growing_points = [(2.6e5, 2, F), (1e6, 4, F), (4e6, 6, F), (1.6e7, 8, F), (2.6e7, 9, F)]
    growing = LW.fit_law(growing_points)
    assert growing["form"] == "log-tokens" and growing["slope"] == pytest.approx(3.5, abs=0.3)
    # an upper envelope: it covers every fitted point, and extrapolates by its slope
    for t, u, f in growing_points:
        assert LW.law_slack(growing, t, f) >= u
    assert LW.law_slack(growing, 2.6e9, F) >= LW.law_slack(growing, 2.6e7, F) + 6


def test_the_law_fits_one_intercept_per_cell_and_takes_the_steepest_slope():
    """Two cells that grow alike at different levels: one slope per decade, not the flatter
    pooled one a single intercept would give; a cell that grows faster than the common slope
    sets the law's slope (the conservative extrapolation), and the envelope covers every
    point of every cell."""
    t = [2.5e5 * 4 ** i for i in range(5)]
    high = [(x, 10 + 2 * i, F, "a") for i, x in enumerate(t)]
    low = [(x, 0 + 2 * i, F, "b") for i, x in enumerate(t)]
    law = LW.fit_law(high + low)
    assert law["form"] == "log-tokens" and law["slope_from"] == "common"
    assert law["slope"] == pytest.approx(2 / math.log10(4), rel=1e-6)
    assert law["heterogeneity_p"] == 1.0
    pooled = LW.fit_law([(x, u, f) for x, u, f, _ in high + low])  # one intercept
    assert pooled["form"] == "constant"  # the cells' gap swamps the growth
    for x, u, f, _ in high + low:
        assert LW.law_slack(law, x, f) >= u
    steep = [(x, 10 + 4 * i, F, "a") for i, x in enumerate(t)]
    law = LW.fit_law(steep + low)
    assert law["slope_from"] == "a" and law["slope"] == pytest.approx(4 / math.log10(4))
    assert set(law["cell_slopes"]) == {"a", "b"} and 0 <= law["heterogeneity_p"] < 0.05
    row = next(c for c in LC.claims({"records": _record(lambda s, a, b: 1)})
               if c.claim.startswith("The slack as"))
    assert "steepest" not in row.ours  # one cell: no cells' slopes to report


def test_a_noisy_cell_cannot_turn_growth_into_a_constant_and_equal_slacks_do_not_grow():
    """Growth is decided on the common slope: two cells growing a unit per checkpoint and a
    third with three noisy points still give a growing law (the noisy cell's steep slope only
    sizes it); every fitted slack equal is a constant, whatever the rounding of the fit."""
    t = [2.5e5 * 2 ** i for i in range(5)]
    two = [(x, 4 + i, F, c) for c in "ab" for i, x in enumerate(t)]
    noisy = [(t[0], 0, F, "c"), (t[1], 12, F, "c"), (t[2], 4, F, "c")]
    law = LW.fit_law(two + noisy)
    assert law["form"] == "log-tokens"
    assert LW.law_slack(law, 3.6e13, F) >= LW.law_slack(LW.fit_law(two), 3.6e13, F)
    for k in range(1, 40):
        flat = [(x, k, F, c) for c in "ab" for x in t]
        assert LW.fit_law(flat)["form"] == "constant"


def test_the_laws_width_term_is_the_largest_fitted_share_of_the_width():
    """u(T, F) = max(ceil(c + b log10 T), ceil(s F)): s is the largest fitted slack over its
    cell's width, so a wide model's slack is at least that share of its width, and the cell
    that set s gets its own fitted slack back."""
    law = LW.fit_law([(2.6e5, 2, 176), (1e6, 3, 176), (2.6e5, 4, 344), (1e6, 12, 344)])
    assert (law["share_units"], law["share_of"]) == (12, 344)
    assert law["share"] == pytest.approx(12 / 344)
    assert LW.law_slack(law, 1e6, 344) >= 12
    assert LW.law_slack(law, 2.6e5, 11008) == math.ceil(12 / 344 * 11008)  # 384
    # the toolkit's formula, by hand: the larger of the tokens term and the width term
    for t, f in [(2.6e5, 176), (1e6, 344), (1e12, 1536), (3.6e13, 11008)]:
        b = 0.0 if law["form"] == "constant" else law["slope"]  # this one: constant
        by_tokens = math.ceil(law["intercept"] + b * math.log10(t) - 1e-4)
        assert LW.law_slack(law, t, f) == max(0, by_tokens, math.ceil(12 / 344 * f - 1e-4))


def test_judge_holds_on_flat_pairs_and_is_rejected_where_the_held_out_half_shares_more():
    # every pair shares 6 units in layer 0 with one pair in three: the slack fitted on the
    # first half covers it
    flat = _record(lambda s, a, b: 6 if (a + b) % 3 == 0 else 1)
    j = LW.judge(flat)
    assert j["law"]["form"] == "constant"
    assert not any(r["level"]["rejected"] for r in j["cells"]["L2-F344-long"])
    # the held-out seeds (4-7) share 12 units at the last checkpoint only: rejected there
    late = _record(lambda s, a, b: 12 if s == 4000 and a >= 4 else 1)
    rows = LW.judge(late)["cells"]["L2-F344-long"]
    assert [r["level"]["rejected"] for r in rows] == [False, False, True]
    claims = LC.claims({"records": late})
    held = next(c for c in claims if c.claim.startswith("The law's slack held out"))
    assert "rejected at 1 of 3 checkpoints (4.10 M)" in held.why and held.verdict == BEYOND
    assert "with probability 0.01 at this many held-out models" in held.why  # 4 models: weak


def test_growth_rule_sees_growth_and_no_change():
    grow = _record(lambda s, a, b: {250: 1, 1000: 3, 4000: 6}[s] + (a * b) % 2)
    c = grow["cells"]["L2-F344-long"]["steps"]
    state, d, se, M = LC.growth(c["250"]["pairs"], c["4000"]["pairs"])
    # the rule's statistic is each pair's largest K over its layer pairs (layer 0 here)
    assert state == "grows" and d == pytest.approx(5.0) and M == 8
    assert LC.growth(c["250"]["pairs"], c["4000"]["pairs"], "mean")[1] == pytest.approx(2.5)
    flat = _record(lambda s, a, b: 1 + (a * b + s // 250) % 2)
    c = flat["cells"]["L2-F344-long"]["steps"]
    assert LC.growth(c["250"]["pairs"], c["4000"]["pairs"])[0] == "no change detected"


def test_growth_is_read_where_the_slack_must_cover_it_not_in_the_mean_over_layers():
    """One layer's shared units grow while the others' fall as much: the mean over layers is
    flat, each pair's largest K grows, and the row says so with each layer's difference."""
    def ks(step, a, b):
        x = (a * b) % 2
        return {250: [1, 4 + x, 4], 1000: [5, 2, 2], 4000: [9 + x, 0, 0]}[step]

    steps = {str(s): {"step": s, "tokens": s * 1024, "val_loss": [3.0] * 8,
                      "pairs": [_pair(a, b, ks(s, a, b)) for a in range(8)
                                for b in range(a + 1, 8)]} for s in (250, 1000, 4000)}
    rec = {"settings": {}, "cells": {"L3-F344-long": {
        "units": F, "layers": 3, "d_model": 128, "seeds": list(range(8)),
        "schedule_steps": 4000, "corpus": ["python-stdlib"], "steps": steps}}}
    first, last = steps["250"]["pairs"], steps["4000"]["pairs"]
    assert LC.growth(first, last, "mean")[:2] == ("no change detected", 0.0)
    assert LC.growth(first, last)[:2] == ("grows", 5.0)
    row = next(x for x in LC.claims({"records": rec}) if x.claim.startswith("Does K grow"))
    assert "mean over layer pairs +0.00" in row.ours and "by layer: 0 +8.21" in row.ours
    assert row.why.endswith("; grows")


def test_the_plateau_rule_tells_a_falling_loss_from_a_flat_one_and_says_what_ended_training():
    rec = _record(lambda s, a, b: 1)
    cell = rec["cells"]["L2-F344-long"]
    rng = np.random.default_rng(0)
    # falling 5 % per doubling of tokens (1,000 -> 4,000 steps: two doublings), seed noise 0.2 %
    cell["steps"]["1000"]["val_loss"] = list(4.0 + rng.normal(0, 0.008, 8))
    cell["steps"]["4000"]["val_loss"] = list(4.0 * 0.95 ** 2 + rng.normal(0, 0.008, 8))
    t = LW.loss_trend(cell)
    assert t["state"] == "still falling" and t["drop"] == pytest.approx(0.05, abs=0.005)
    assert t["training"] == "under way" and (t["from"], t["to"]) == (1000, 4000)
    row = next(c for c in LC.claims({"records": rec}) if c.claim.startswith("Has the held-out"))
    assert "still falling; under way: step 4,000 of 25,000" in row.why
    # flat within noise: plateaued; at the schedule's end the row names the schedule
    cell["steps"]["4000"]["val_loss"] = list(4.0 + rng.normal(0, 0.008, 8))
    cell["schedule_steps"] = 4000
    t = LW.loss_trend(cell)
    assert t["state"] == "plateaued" and t["training"] == "ended"
    assert "budget" not in LC.plateau_claim("c", t, 4000).why
    # a drop near the threshold that the seeds cannot place: undecided
    cell["steps"]["4000"]["val_loss"] = list(4.0 * 0.99 ** 2 + rng.normal(0, 0.08, 8))
    assert LW.loss_trend(cell)["state"] == "undecided"
    # still falling at the schedule's end: the budget stopped it
    cell["steps"]["4000"]["val_loss"] = list(4.0 * 0.9 ** 2 + rng.normal(0, 0.008, 8))
    assert "the budget stopped it, not a plateau" in LC.plateau_claim(
        "c", LW.loss_trend(cell), 4000).why
    del cell["steps"]["1000"]["val_loss"], cell["steps"]["250"]["val_loss"]
    assert LW.loss_trend(cell) is None


def test_the_law_row_names_pairs_whose_k_exceeds_the_slack_and_whether_they_were_called():
    flat = _record(lambda s, a, b: 0)
    row = next(c for c in LC.claims({"records": flat}) if c.claim.startswith("The slack as"))
    assert LW.above_slack(LW.judge(flat), flat) == []
    assert "no pair of a fitted cell shares more units in a layer pair than" in row.ours
    # one held-out pair shares far more at the last checkpoint: above the slack, called related
    odd = _record(lambda s, a, b: 40 if (s, a, b) == (4000, 6, 7) else 0)
    j = LW.judge(odd)
    over = LW.above_slack(j, odd)
    assert [(o["tokens"], o["K_max"]) for o in over] == [(4000 * 1024, 40)]
    assert over[0]["slack"] < 40 and over[0]["rate"]["rejections"] == 1
    row = next(c for c in LC.claims({"records": odd}) if c.claim.startswith("The slack as"))
    assert (f"exceeds the law's slack at L2-F344-long at 4.10 M (40 > {over[0]['slack']}; "
            f"every pair of the cell there: 1/28 (3.6%) called related)") in row.ours


def test_the_pooled_held_out_rule_holds_on_flat_pairs_fails_where_the_held_out_half_shares_more():
    from experiments.common import level_rule as LR

    flat = _record(lambda s, a, b: 1 + (a + b) % 2)
    pl = LW.judge(flat)["pooled"]
    # 8 seeds: the held-out half's 4 models, 6 pairs at each of 3 checkpoints
    assert pl["blocks"] == [(4, 3)] and pl["models"] == 4 and pl["rate"]["pairs"] == 18
    assert not pl["level"]["rejected"]
    assert pl["power"]["independent"] == LR.power(LW.POWER_RATE, 0.01, 4, 3)
    assert pl["power"]["persistent"] <= pl["power"]["independent"]
    # the held-out half shares 30 units in every pair from 1,000 steps on: rejected
    odd = _record(lambda s, a, b: 30 if s >= 1000 and a >= 4 and b >= 4 else 1)
    pl = LW.judge(odd)["pooled"]
    assert pl["rate"]["rejections"] == 12 and pl["level"]["rejected"]
    row = LC.pooled_claim(pl)
    assert "12/18" in row.ours and row.why.startswith(
        "rule: the level rule (one-sided jackknife t over the 4 models); rejected")


def test_power_pooled_over_pools_of_models_is_the_single_pools_and_grows_with_pools():
    from experiments.common import level_rule as LR

    assert LR.power_blocks(0.05, 0.01, [(8, 5)]) == LR.power(0.05, 0.01, 8, 5)
    inc, pair_of = LR._design_blocks([(3, 2), (2, 1)])
    # 3 pairs x 2 checkpoints + 1 pair; no row joins models of two pools
    assert inc.shape == (7, 5) and pair_of.tolist() == [0, 1, 2, 0, 1, 2, 3]
    assert not inc[:6, 3:].any() and inc[6].tolist() == [0, 0, 0, 1, 1]
    assert LR.power_blocks(0.05, 0.01, [(8, 5)] * 3) > LR.power(0.05, 0.01, 8, 5)


def test_late_growth_tells_k_that_stopped_growing_from_k_that_still_grows():
    at = (250, 500, 1000, 2000, 4000)
    stops = _record(lambda s, a, b: min(s // 250, 4) + (a * b + s // 250) % 2, at=at)
    mid, (state, d, se, M) = LC.late_growth(stops["cells"]["L2-F344-long"])
    assert mid["step"] == 1000 and state == "no change detected" and M == 8
    row = next(c for c in LC.claims({"records": stops})
               if c.claim.startswith("Does K still grow late"))
    assert "[1.02 M -> 4.10 M tokens]" in row.claim and "seen with probability 0.8" in row.why
    grows = _record(lambda s, a, b: s // 250 + (a * b) % 2, at=at)
    assert LC.late_growth(grows["cells"]["L2-F344-long"])[1][0] == "grows"
    # without a checkpoint after the first at a quarter of the last one's tokens: no row
    assert LC.late_growth(_record(lambda s, a, b: 1, at=(250, 1000, 4000))["cells"]
                          ["L2-F344-long"]) is not None
    assert LC.late_growth(_record(lambda s, a, b: 1, at=(250, 2000, 4000))["cells"]
                          ["L2-F344-long"]) is None
    assert LC.late_growth(_record(lambda s, a, b: 1, at=(250, 500, 1000))["cells"]
                          ["L2-F344-long"]) is None


def test_the_law_row_names_the_default_and_the_extrapolation():
    # three checkpoints cannot show growth (t on 1 df); five can
    few = _record(lambda s, a, b: {250: 2, 1000: 5, 4000: 9}[s] if (a + b) % 2 else 0)
    law = next(c for c in LC.claims({"records": few}) if c.claim.startswith("The slack as"))
    assert "a constant: K does not grow detectably" in law.ours
    grow = _record(lambda s, a, b: {250: 2, 500: 5, 1000: 8, 2000: 11, 4000: 14}[s]
                   if (a + b) % 2 else 0, at=(250, 500, 1000, 2000, 4000))
    law = next(c for c in LC.claims({"records": grow}) if c.claim.startswith("The slack as"))
    from bornbiased_jax.fingerprint.methods.trained_slack import law_terms, law_units

    # the toolkit's default, whatever this record's fit, with the term that sets it
    by_tokens, wide = law_terms(36e12, 1536)
    assert "u(T, F) = max(ceil(" in law.ours
    assert (f"36 T tokens assumed: {by_tokens} units per layer pair (its tokens term) up to "
            f"MLP width" in law.ours and f"the width term beyond ({wide} at MLP width 1,536)"
            in law.ours) if wide > by_tokens else \
        f"36 T tokens assumed: {law_units(36e12, 1536)} units" in law.ours
    # this made-up record's fit is not the toolkit's law: the row says the default is stale
    assert "is not this fit: stale" in law.why and "an extrapolation" in law.why
    flat = _record(lambda s, a, b: 1)
    law = next(c for c in LC.claims({"records": flat}) if c.claim.startswith("The slack as"))
    assert "a constant" in law.ours and "stale" in law.why
    # with a wider cell beside it, the slack at the longest training is stated per width
    wide = _record(lambda s, a, b: 9 if (a + b) % 2 else 0)
    wide["cells"]["L2-F1536-long"] = {**wide["cells"]["L2-F344-long"], "units": 1536}
    law = next(c for c in LC.claims({"records": wide}) if c.claim.startswith("The slack as"))
    j = LW.judge(wide)
    per = [LW.law_slack(j["law"], 4_096_000, w) for w in (344, 1536)]
    assert per[0] < per[1] and (f"at 4.10 M tokens: {per[0]} units at F = 344, {per[1]} units "
                                f"at F = 1,536;") in law.ours


def test_the_law_row_says_the_toolkits_default_is_the_records_fit():
    """The committed long record's fit is defaults.MATCHED_SLACK_LAW (the toolkit's law): the
    row says so; the law covers the level table's slack at its cells' tokens and widths."""
    import json
    from pathlib import Path

    from bornbiased_jax.defaults import MATCHED_SLACK_LAW, MATCHED_SLACK_MEASURED
    from bornbiased_jax.fingerprint.methods.trained_slack import law_units
    from experiments.common.level_fit import SHORT_CELLS_SLACK

    root = Path(__file__).resolve().parents[1] / "results/records/lineage_level"
    rec = json.loads((root / "lineage_level_long.json").read_text())["records"]
    j = LW.judge(rec)
    assert LC.toolkit_is_fit(j["law"], rec)
    law = next(c for c in LC.claims({"records": rec}) if c.claim.startswith("The slack as"))
    assert law.why.startswith("the toolkit's default is this fit")
    # where the law was measured, cell by cell: the long cells in its fit at their most tokens
    # and the level table's cells, whose fitted slack the law covers at their tokens and widths
    from experiments import render
    from experiments.common.level_range import cells_training, measured_cells

    records = render.load_records(root.parents[0])
    assert list(MATCHED_SLACK_MEASURED) == measured_cells(records)
    assert max(c["tokens"] for c in MATCHED_SLACK_MEASURED) == j["tokens_range"][1]
    summary = records["lineage_level"]["records"]["summary"]
    assert SHORT_CELLS_SLACK == summary["default_slack"]
    training = cells_training(records["lineage_level"], records["training"]["seed_family"])
    for name, c in summary["cells"].items():
        assert law_units(training[name]["tokens"], c["units"],
                         MATCHED_SLACK_LAW) >= c["fit_slack"]


def test_the_default_slack_row_holds_where_k_stays_below_it_and_fails_where_it_grows():
    """The default slack's rate among every pair of a cell at each checkpoint, by the level
    rule: pairs sharing 1 unit hold it everywhere; pairs that all share 12 units from 1,000
    steps on reject it there and the row says a rejection is no evidence of lineage there."""
    flat = LC.default_claim("L2-F344-long", _record(lambda s, a, b: 1)["cells"]["L2-F344-long"])
    assert "holds its level at every checkpoint" in flat.why and "0/28" in flat.ours
    late = _record(lambda s, a, b: 12 if s >= 1000 else 1)["cells"]["L2-F344-long"]
    row = LC.default_claim("L2-F344-long", late)
    assert "rejected at 2 of 3 checkpoints (1.02 M, 4.10 M)" in row.why
    assert "why the default is a law of training length" in row.why
    assert "28/28 (100.0%)" in row.ours
    # one pair in 28 above the slack is within the rule's noise: not a rejection
    one = _record(lambda s, a, b: 12 if (a, b) == (0, 1) else 1)["cells"]["L2-F344-long"]
    assert "holds its level" in LC.default_claim("L2-F344-long", one).why
    assert any(c.claim.startswith("The level table's slack (4, the default before the law)")
               for c in LC.claims({"records": _record(lambda s, a, b: 1)}))


def test_the_attention_tests_level_between_trained_seeds_holds_or_is_rejected():
    rec = _record(lambda s, a, b: 1)
    row = next(c for c in LC.claims({"records": rec}) if c.claim.startswith("The attention"))
    assert "rejected at 0 of 3 checkpoints" in row.why and "0/28 (0.0%) rejected" in row.ours
    # every pair at p 0.001 at the last checkpoint: rejected there
    for p in rec["cells"]["L2-F344-long"]["steps"]["4000"]["pairs"]:
        p["attention"]["log10_p_a"] = p["attention"]["log10_p_b"] = -3.0
    row = next(c for c in LC.claims({"records": rec}) if c.claim.startswith("The attention"))
    assert "rejected at 1 of 3 checkpoints (4.10 M)" in row.why


def test_a_pair_record_reads_mlp_units_and_attention_heads():
    """pair_record on two fresh llama2-tiny initialisations and on a copy: the matched views'
    statistics, the overlap per suspect layer, and the attention test's doubly matched heads
    (all of them for the copy)."""
    import jax

    from bornbiased_jax.fingerprint.methods import matched as M
    from bornbiased_jax.model import init as init_params
    from bornbiased_jax.presets import get_preset
    from experiments.lineage.level_long_measure import pair_record

    cfg = get_preset("llama2-tiny")
    tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, (8, 68))
    models = []
    for seed in (0, 1):
        params = init_params(cfg, jax.random.key(seed))
        models.append((M.preactivations(params, cfg, tokens), params, cfg))
    other = pair_record(0, 1, models[0], models[1])
    copy = pair_record(0, 0, models[0], models[0])
    heads = copy["attention"]["heads"]
    assert copy["attention"]["K_total_a"] == heads and other["attention"]["K_total_a"] < heads
    assert copy["overlap"][0]["K"] == cfg.d_ff and other["overlap"][0]["K"] < 10
    assert len(other["dir_b"]) == cfg.n_layers


def test_the_section_says_when_nothing_is_measured_and_tables_k_over_f():
    text = LC.section(None, "python -m experiments.lineage_level_long --measure", "?")
    assert "Not measured yet" in text and "--train" in text
    rec = {"run": {}, "records": _record(lambda s, a, b: 1)}
    text = LC.section(rec, "cmd", "cpu")
    assert "| 0.26 M | 0.0015 (0.50) |" in text and "steps 250, 1000, 4000 of 25,000" in text


def test_a_long_cells_corpus_globs_are_expanded_before_training(tmp_path):
    """The prose cell's corpus is globs (Node.js's API docs, Vim's help): expanded to the files
    they match, in order; a glob that matches nothing is refused by name."""
    from bornbiased_jax.errors import UserError
    from experiments.common import family

    for name in ("b.md", "a.md"):
        (tmp_path / name).write_text("text")
    assert family.expand([str(tmp_path / "*.md"), "python-stdlib"], "prose") == [
        str(tmp_path / "a.md"), str(tmp_path / "b.md"), "python-stdlib"]
    with pytest.raises(UserError, match="corpus 'prose': nothing matches"):
        family.expand([str(tmp_path / "*.txt")], "prose")


def test_the_figure_draws_mean_and_largest_k_and_the_laws_slack_per_cell():
    rec = _record(lambda s, a, b: {250: 1, 1000: 3, 4000: 6}[s] + (a * b) % 2)
    fig = LC.figure({"records": rec})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and len(ax.lines) == 3  # one cell: mean, max, the law
    mean, top, law = (line.get_ydata() for line in ax.lines)
    assert list(ax.lines[0].get_xdata()) == [256_000, 1_024_000, 4_096_000]
    assert (np.diff(mean) > 0).all() and (top >= mean).all()
    j = LW.judge(rec)
    assert list(law) == [r["slack"] / F for r in j["cells"]["L2-F344-long"]]


def test_the_smollm2_shaped_cell_is_a_gpu_cell_of_smollm2s_whole_shape():
    """SmolLM2's hardest same-data negatives: its preset at full depth and its own tokenizer,
    trained only when named (never one of the CPU stages), in bfloat16."""
    c = LL.CELLS["L30-F1536-smollm2"]
    assert c.device == "gpu" and c.trained_where_measured and c.run.bf16
    assert c.run.preset == "smollm2-135m" and not c.run.model_set and len(c.run.seeds) >= 4
    assert "L30-F1536-smollm2" not in dict(LL.STAGES) and LL.GPU_CELLS == ("L30-F1536-smollm2",)
    assert [s for s, _ in LL.stages()] == [s for s, _ in LL.STAGES]
    assert LL.stages(["L30-F1536-smollm2"]) == [("L30-F1536-smollm2", c.run.steps)]
    cmd = LL.command("L30-F1536-smollm2")
    assert f"--tokenizer {LL.SMOLLM2_TOKENIZER}" in cmd and "--bf16" in cmd
    assert c.run.steps * c.run.batch_size * c.run.seq_len >= 4 * 4_096_000  # 4x the CPU cells
    from experiments.campaign.plan import pieces

    piece = next(p for p in pieces() if p.name == "smollm2-shaped-negatives")
    argv = list(piece.command)
    assert piece.backend == "gpu" and argv[argv.index("--cells") + 1] == "L30-F1536-smollm2"
    assert float(argv[argv.index("--train-seconds") + 1]) < piece.timeout_s - 120  # time to measure


def _tiny_gpu_cell(tmp_path):
    from bornbiased_jax.training.config import TrainConfig

    corpus = tmp_path / "text"
    corpus.mkdir(exist_ok=True)
    for k in range(4):
        (corpus / f"m{k}.py").write_text("".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n"
                                                 for i in range(100 * k, 100 * k + 100)))
    run = TrainConfig(preset="llama2-tiny", seeds=(0, 1, 2, 3), seq_len=16, batch_size=4, steps=6,
                      warmup=1, vocab_size=300, corpus_max_mb=1.0, save_every=1, eval_every=1,
                      eval_batches=1, log_every=1, keep_last=1, keep_every=None,
                      keep_steps=(2, 4, 6), model_set=("d_model=32", "n_heads=2", "n_kv_heads=2",
                                                       "d_ff=48", "n_layers=2"))
    return LL.LongCell(run, (str(corpus),), device="gpu")


@pytest.mark.slow
def test_a_gpu_cell_trained_under_a_time_limit_is_measured_where_trained_and_read_back(
        tmp_path, monkeypatch):
    """A GPU window's cell: a time limit stops training and keeps its checkpoints, and the next
    call resumes; --measure reads the kept steps and the latest checkpoint and writes each one's
    pair statistics, the cell's entry and provenance to --cache; a machine without the
    checkpoints reads them back from the committed folder, leaving out (and saying so) files of
    other settings, of another definition of the cell, and of another training run; where some
    checkpoints are here and others committed, both are read (the committed of the same run)."""
    import json
    import shutil

    from experiments.lineage import level_long_measure as LM

    monkeypatch.setitem(LL.CELLS, "T-gpu", _tiny_gpu_cell(tmp_path))
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    s = dict(LM.DEFAULTS, n=8, seq_len=16, seqs=8, t_views=16)
    said, quiet = [], (lambda m: None)
    LL.ensure("T-gpu", runs, stop_at=3, progress=False)
    LL.train_stages(["T-gpu"], runs, log=said.append, seconds=0.5)  # stopped while starting
    assert said[-1] == "T-gpu: stopped at the time limit, at step 3" and LL.reached("T-gpu",
                                                                                     runs) == 3
    assert LM.kept_steps("T-gpu", runs) == [2, 3]  # the kept step and the latest
    got = LM.measure(["T-gpu"], runs, cache, s=s, log=quiet)
    entry = got["cells"]["T-gpu"]
    assert sorted(entry["steps"], key=int) == ["2", "3"] and entry["in_fit"] is False
    assert entry["provenance"]["reached"] == 3 and entry["provenance"]["device"].startswith("cpu")
    said.clear()
    LL.train_stages(["T-gpu"], runs, log=said.append, seconds=600)  # resumed, to the end
    assert said[-1] == "T-gpu: at step 6" and LM.kept_steps("T-gpu", runs) == [2, 4, 6]
    got = LM.measure(["T-gpu"], runs, cache, s=s, log=quiet)
    entry = got["cells"]["T-gpu"]
    assert sorted(entry["steps"], key=int) == ["2", "4", "6"] and len(entry["steps"]["6"]["pairs"]) == 6
    saved = json.loads((cache / "T-gpu@6.json").read_text())
    assert saved["cell"]["seeds"] == [0, 1, 2, 3] and saved["cell"]["units"] == 48
    assert saved["provenance"]["reached"] == 6
    # elsewhere: no checkpoints, the committed files of the run that reached furthest
    committed = tmp_path / "committed"
    shutil.copytree(cache, committed)
    logged = []
    away = LM.measure(["T-gpu"], tmp_path / "none", None, s=s, gpu_records=committed,
                      log=logged.append)
    steps = away["cells"]["T-gpu"]["steps"]  # and @3, measured when the run had reached 3
    assert {k: v for k, v in steps.items() if k != "3"} == entry["steps"] and "3" in steps
    other = json.loads((committed / "T-gpu@4.json").read_text())
    other["provenance"] = {**other["provenance"], "run": "another", "reached": 2}
    (committed / "T-gpu@8.json").write_text(json.dumps(other))
    bad = json.loads((committed / "T-gpu@2.json").read_text())
    bad["cell"]["seeds"] = [0, 1]
    (committed / "T-gpu@10.json").write_text(json.dumps(bad))
    logged.clear()
    away = LM.measure(["T-gpu"], tmp_path / "none", None, s=s, gpu_records=committed,
                      log=logged.append)
    assert sorted(away["cells"]["T-gpu"]["steps"], key=int) == ["2", "3", "4", "6"]
    assert any("T-gpu@10.json: made by another definition" in m for m in logged)
    assert any("steps [8] of another training run (another) left out" in m for m in logged)
    assert LM.measure(["T-gpu"], tmp_path / "none", None, s=dict(s, probe_seed=9),
                      gpu_records=committed, log=quiet)["cells"] == {}
    # here and committed: the local steps measured, the committed steps of the same run added
    shutil.rmtree(runs / "T-gpu" / "checkpoints" / "2")
    both = LM.measure(["T-gpu"], runs, None, s=s, gpu_records=committed, log=quiet)
    assert sorted(both["cells"]["T-gpu"]["steps"], key=int) == ["2", "3", "4", "6"]
    assert both["cells"]["T-gpu"]["steps"]["4"] == entry["steps"]["4"]


def test_a_measurement_of_some_cells_keeps_the_others_in_the_record(tmp_path):
    """--measure on a machine with some cells' checkpoints (or with --cells) keeps the record's
    other cells when they were measured with the same settings; other settings replace it."""
    import json

    from experiments.lineage import level_long_measure as LM

    old = _record(lambda s, a, b: 1)
    old["cells"]["L2-F344-prose"] = old["cells"]["L2-F344-long"]
    path = tmp_path / "rec.json"
    path.write_text(json.dumps({"run": {}, "records": old}))
    new = {"settings": old["settings"], "cells": {"L2-F344-prose": {"steps": {}}}}
    kept = LM.keep_unmeasured(new, path)
    assert list(kept["cells"]) == ["L2-F344-long", "L2-F344-prose"]
    assert kept["cells"]["L2-F344-prose"] == {"steps": {}}
    other = {"settings": {"n": 1}, "cells": {"L2-F344-prose": {"steps": {}}}}
    assert LM.keep_unmeasured(other, path) == other
    assert LM.keep_unmeasured(new, tmp_path / "none.json") == new


def test_the_cells_tokenizer_file_must_be_here(tmp_path, monkeypatch):
    from bornbiased_jax.errors import UserError

    cell = _tiny_gpu_cell(tmp_path)
    monkeypatch.setitem(LL.CELLS, "T-gpu", LL.LongCell(cell.run, cell.corpus,
                                                       tokenizer_file=tmp_path / "no.json",
                                                       device="gpu"))
    with pytest.raises(UserError, match="reads the tokenizer .*no.json, which is not on this"):
        LL.ensure_inputs("T-gpu", tmp_path)


def test_smollm2s_row_states_its_shaped_negatives_or_how_to_measure_them():
    """Beside SmolLM2's lineage rows: the long cell of its whole shape, per checkpoint its tokens,
    K and the default law's slack (at F = 1,536), and the pairs called related at that slack;
    the rule is the margin (largest K at most the slack), which 40 shared units keep and
    150 break; the rate is counted at the law's slack, not at 0 (where 40 units reject); a
    sentence with the GPU window's command while it is not measured; nothing for a model
    without such a cell."""
    from bornbiased_jax.verdicts import Claim
    from experiments.common import level_range as LR

    def records(k):
        rec = _record(lambda s, a, b: k, seeds=range(4), layers=30, at=(128_000, 1_024_000))
        c = rec["cells"].pop("L2-F344-long")
        rec["cells"]["L30-F1536-smollm2"] = {**c, "units": 1536, "d_model": 576,
                                              "in_fit": False, "provenance": {
                                                  "device": "gpu: NVIDIA H200", "reached": 1000,
                                                  "run": "abc", "measured": "x"}}
        return {"lineage_level_long": {"records": rec}}

    def whole(recs):
        return LR.shaped_negatives(recs, "SmolLM2-135M", "S")[0]

    from bornbiased_jax.fingerprint.methods.trained_slack import law_units

    u0, u1 = law_units(131_072_000, 1536), law_units(1_048_576_000, 1536)  # the default's
    assert u0 > 40 and u1 < 150  # the margin 40 shared units keep and 150 break
    quiet = whole(records(40))
    assert isinstance(quiet, Claim) and quiet.verdict == BEYOND
    assert f"it stays at or below at every checkpoint, by {u1 - 40} units at the last" \
        in quiet.why
    assert "F 1,536" in quiet.why
    assert "131,072,000 tokens (step 128,000): K per layer pair mean 1.33, largest 40 (as the " \
           f"test reads it); the law's slack {u0}; called related 0 of 6 pairs" in quiet.ours
    assert "too narrow" in quiet.ours and "not in the law's fit" in quiet.why
    assert "with probability 0.00" in quiet.why and "measured on gpu: NVIDIA H200" in quiet.why
    from experiments.common.level_fit import rates

    at0 = rates(records(40)["lineage_level_long"]["records"]["cells"]["L30-F1536-smollm2"]
                   ["steps"]["128000"]["pairs"], 0)["0.01"]
    assert at0["rejections"] == 6  # the same pairs at slack 0: all called related
    loud = whole(records(150))
    assert "it exceeds the slack at 131,072,000, 1.04858 billion tokens" in loud.why
    assert "called related 6 of 6" in loud.ours
    todo = whole({})
    assert isinstance(todo, str) and "not measured yet" in todo and "--train-seconds" in todo
    assert LR.shaped_negatives(records(2), "Gemma 3 270M", "G") is None


def test_smollm2s_width_cell_is_judged_on_its_held_out_half():
    """The CPU cell at SmolLM2's width (in the law's fit): its row counts only the held-out
    half's pairs (seeds 3-5 of 6: 3 pairs), so a fitted seed's shared units cannot break or
    keep the margin; while unmeasured, a sentence with the background command."""
    from bornbiased_jax.verdicts import Claim
    from experiments.common import level_range as LR

    def records(k_of):
        rec = _record(lambda s, a, b: k_of(a, b), seeds=range(6), at=(250, 2500))
        c = rec["cells"].pop("L2-F344-long")
        rec["cells"]["L2-F1536-long"] = {**c, "units": 1536, "d_model": 576}
        return {"lineage_level_long": {"records": rec}}

    width = LR.shaped_negatives(records(lambda a, b: 200 if a < 3 else 1), "SmolLM2-135M",
                                "S")[1]
    assert isinstance(width, Claim) and "width (d 576, 9 heads, 3 KV heads" in width.claim
    assert "called related 0 of 3 pairs" in width.ours and "largest 1 (as the test reads it);" \
        in width.ours
    assert "the held-out half's 3 seeds (the law was fitted on the other 3)" in width.why
    assert "it stays at or below at every checkpoint" in width.why
    # its fitted half shares 200 units: no margin of the law over the cell's own fit to state
    assert "the cell's own fitted half needs" not in width.why
    quiet = LR.shaped_negatives(records(lambda a, b: 1), "SmolLM2-135M", "S")[1]
    from bornbiased_jax.fingerprint.methods.trained_slack import law_terms

    t, w = law_terms(2500 * 1024, 1536)
    assert (f"the cell's own fitted half needs a slack of 0 there, the law's (its "
            f"{'width' if w > t else 'tokens'} term) lies {max(t, w)} above it") in quiet.why
    held = LR.shaped_negatives(records(lambda a, b: 200 if a >= 3 else 1), "SmolLM2-135M",
                               "S")[1]
    assert "it exceeds the slack" in held.why and "called related 3 of 3" in held.ours
    todo = LR.shaped_negatives({}, "SmolLM2-135M", "S")[1]
    assert isinstance(todo, str) and "not measured yet" in todo
    assert "lineage_level_long --train` (resumable)" in todo


def test_a_cell_outside_the_fit_is_judged_on_every_pair_and_leaves_the_law_alone():
    """A GPU cell ("in_fit": false) does not move the law or its measured range, and is judged
    on all its seeds' pairs: held out entirely."""
    base = _record(lambda s, a, b: 9 if (a + b) % 2 else 0)
    j0 = LW.judge(base)
    both = _record(lambda s, a, b: 9 if (a + b) % 2 else 0)
    both["cells"]["L30-F1536-smollm2"] = {**_record(lambda s, a, b: 200, seeds=range(4))[
        "cells"]["L2-F344-long"], "units": 1536, "layers": 30, "in_fit": False}
    j = LW.judge(both)
    assert j["law"] == j0["law"] and j["widths"] == [F] and j["depths"] == [2]
    rows = j["cells"]["L30-F1536-smollm2"]
    assert all(r["rate"]["pairs"] == 6 and r["level"]["rejected"] for r in rows)
    assert all(r["rate"]["pairs"] == 6 for r in j["cells"]["L2-F344-long"])  # 4 held-out seeds


def test_the_docs_block_follows_the_record():
    """docs/seedprint.md's block on what the slack rests on is read from the record: K growing
    along training gives a log-tokens law with its growth and slopes stated, flat K a constant;
    cells not measured to their last stage are listed as under way; no record, a sentence."""
    from experiments.lineage import level_long_docs as D

    growing = {"lineage_level_long": {"records": _record(
        lambda s, a, b: int(round(2 * math.log10(s))) + (a + b) % 3, seeds=range(8),
        at=(250, 500, 1000, 2000, 4000))}}
    text = " ".join(D.block(growing).split())
    assert "8 seeds of a 2-layer LLaMA with F = 344, d = 128, on the Python standard library, " \
           "trained to 4.10 M tokens per model so far (L2-F344-long)" in text
    assert "whether K grows is decided on the common slope" in text
    assert "The extrapolation is a point estimate" in text
    assert "L2-F344-long (on a CPU) measured to step 4,000 of 25,000" in text
    assert "L12-F344-long (on a CPU) not measured yet, to step 2,500" in text
    flat = {"lineage_level_long": {"records": _record(lambda s, a, b: (a + b) % 3,
                                                      at=(250, 500, 1000, 2000, 4000))}}
    text = " ".join(D.block(flat).split())
    assert "K does not grow detectably" in text and "point estimate" not in text
    assert "keeps its level at every checkpoint" in text
    assert "Not measured yet" in D.block({})


def test_rows_measured_under_an_earlier_fit_of_the_law_say_so():
    """The benchmarks' and the real models' rows state the slack they applied; where the
    toolkit's default (refitted as the long cells come in) now gives another at the same tokens
    and width, the row says it was measured under an earlier fit and what the default gives."""
    from bornbiased_jax.defaults import MATCHED_TOKENS_ASSUMED
    from bornbiased_jax.fingerprint.methods.trained_slack import law_units
    from experiments.common import level_range as LR
    from experiments.lineage_bench import claims as BC

    now = law_units(MATCHED_TOKENS_ASSUMED, BC._bench_width())
    # every benchmark model's slack is the tokens term at the assumed tokens (not its width)
    assert now == law_units(MATCHED_TOKENS_ASSUMED, 1)
    assert LR.stale_slack([now], MATCHED_TOKENS_ASSUMED, BC._bench_width()) == ""
    old = BC.notes_for([{"matched_slack": now - 3}])["matched"]
    assert f"measured under an earlier fit of the law: the toolkit's default now gives {now} " \
           f"units per layer pair there" in old
    assert "earlier fit" not in BC.notes_for([{"matched_slack": now}])["matched"]
    rule = {"slack": 40, "tokens": 2e12, "tokens_given": True}
    text = LR.law_extrapolation({}, "SmolLM2-135M", rule)
    assert f"now gives {law_units(2e12, 1536)} units per layer pair there (at 2 trillion tokens, MLP " \
           f"width 1,536)" in text
    rule["slack"] = law_units(2e12, 1536)
    assert "earlier fit" not in LR.law_extrapolation({}, "SmolLM2-135M", rule)
