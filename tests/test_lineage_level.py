"""The level study across widths and depths (experiments/lineage/level.py) and its RESULTS.md
rules (experiments/lineage/level_claims.py) on hand-made pair statistics: the slack fitted on
the first half of the seeds, judged on the second, the rules passing and failing; the tokens
its cells were trained on (experiments/common/level_range.py), stated in the table and beside a
released model's own where a row applies the default slack to it."""

from __future__ import annotations

import numpy as np

import pytest

from bornbiased_jax.verdicts import BEYOND, UNTESTABLE
from experiments.common import level_range as LR
from experiments.common import level_fit
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
    rows = level_fit.pair_rows(pairs, u)
    assert all(np.mean([r["matched"] <= a for r in rows]) <= a for a in level.ALPHAS)
    rows = level_fit.pair_rows(pairs, u - 1)
    assert any(np.mean([r["matched"] <= a for r in rows]) > a for a in level.ALPHAS)


def test_rules_hold_fail_and_say_underpowered():
    # every trained pair shares 2 units: the fit and the held-out half agree; 24 seeds
    good = level.summarise({"settings": dict(level.DEFAULTS),
                            "cells": {"L2-F176": _cell(24, lambda a, b: 2)}})
    c = good["cells"]["L2-F176"]
    assert good["default_slack"] == c["fit_slack"] >= 1
    assert c["held_out"]["0.01"]["rejections"] == 0
    rows = LC.claims(good)
    # beyond the paper: the verdict says so, the why begins with the rule's outcome
    assert {r.verdict for r in rows} == {BEYOND}
    assert rows[0].why.startswith("holds its level: a rate not above alpha")  # the inits
    assert "not rejected" in rows[1].why
    strong = c["held_out_power"]["0.05"] >= LC.POWER_NEEDED
    assert rows[1].why.startswith("holds its level: " if strong else "underpowered: ")
    assert rows[-1].why.startswith("holds its level: " if strong else "underpowered: ")
    # the held-out half shares far more units than the fit half: the level fails there
    bad = level.summarise({"settings": dict(level.DEFAULTS), "cells": {"L2-F176": _cell(
        24, lambda a, b: 30 if a >= 12 and b >= 12 else 1)}})
    rows = LC.claims(bad)
    assert rows[1].verdict == BEYOND and rows[1].why.startswith("above its level: ")
    assert rows[-1].verdict == BEYOND and rows[-1].why.startswith(
        "above its level: held out, the level is rejected in L2-F176")
    # initialisations that reject (an invalid null): the init row fails
    broken = level.summarise({"settings": dict(level.DEFAULTS), "cells": {
        "L2-F176": _cell(24, lambda a, b: 1, init_K=40)}})
    assert LC.claims(broken)[0].why.startswith("above its level: the rate is above alpha")
    assert LC.claims({"cells": {}, "default_slack": 0})[-1].verdict == UNTESTABLE


def test_the_default_is_the_largest_fit_over_the_cells():
    out = level.summarise({"settings": dict(level.DEFAULTS), "cells": {
        "L2-F176": _cell(16, lambda a, b: 1),
        "L2-F344": _cell(16, lambda a, b: 3 if (a + b) % 2 else 0, units=344)}})
    fits = [c["fit_slack"] for c in out["cells"].values()]
    assert out["default_slack"] == max(fits) and len(set(fits)) == 2
    text = LC.section({"run": {"settings": dict(level.DEFAULTS)}, "records": {
        "summary": out}}, "python -m experiments.lineage_level --measure", "cpu")
    assert "MLP widths 176, 344, depths 2, training tokens not recorded" in text


def _level_record(cells: dict, train: dict | None = None) -> dict:
    """A level record of ``cells`` ({name: steps}), each with ``train`` when given, its summary
    the default slack 4 and no rows."""
    raw = {n: {"steps": st, **({"train": train} if train else {})} for n, st in cells.items()}
    return {"run": {"settings": dict(level.DEFAULTS)},
            "records": {"raw": {"cells": raw}, "summary": {"cells": {}, "default_slack": 4}}}


FAMILY = {"run": {"train_config": {"steps": 250, "batch_size": 16, "seq_len": 64},
                  "data": {"vocab_size": 2048}}}


def test_cell_training_from_the_record_or_the_family_schedule():
    """A cell's training tokens come from its own recorded settings; where the level record
    holds only its steps, from the seed family's training record, but only when the steps are
    the family's (the schedule every cell shares): otherwise they are unknown."""
    own = {"steps": 100, "batch_size": 8, "seq_len": 32, "vocab_size": 512}
    got = LR.cells_training(_level_record({"A": 100}, own), FAMILY)
    assert got == {"A": {**own, "tokens": 100 * 8 * 32}}
    got = LR.cells_training(_level_record({"A": 250, "B": 500}), FAMILY)
    assert got["A"] == {"steps": 250, "batch_size": 16, "seq_len": 64, "vocab_size": 2048,
                        "tokens": 256_000}
    assert got["B"] is None  # another schedule: the family's batch and T do not apply
    assert LR.cells_training(_level_record({"A": 250})) == {"A": None}  # no family record
    assert LR.range_text(got) == "256,000 (where recorded)"
    assert LR.range_text({"A": {"tokens": 100}, "B": {"tokens": 2e9}}) == "100 to 2 billion"
    assert LR.range_text({"A": None}) is None
    assert LR.schedule_text({"A": got["A"]}) == (
        "250 steps of 16 x 64 tokens, 256,000 tokens per model, vocabulary 2,048")
    assert LR.schedule_text(got).startswith("A: 250 steps") and "B: training not recorded" in (
        LR.schedule_text(got))


def test_the_level_table_states_its_cells_training_tokens():
    """The tokens per cell, computed from the records, are in the section's text, in every
    cell's rows and in the slack row's measured range."""
    out = level.summarise({"settings": dict(level.DEFAULTS), "cells": {
        "L2-F176": _cell(16, lambda a, b: 1)}})
    rec = {"run": {"settings": dict(level.DEFAULTS)},
           "records": {"raw": {"cells": {"L2-F176": {"steps": 250}}}, "summary": out}}
    text = LC.section(rec, "python -m experiments.lineage_level --measure", "cpu", FAMILY)
    assert ("Training: 250 steps of 16 x 64 tokens, 256,000 tokens per model, vocabulary "
            "2,048 (steps from this record; the batch, T and vocabulary") in text
    rows = [line for line in text.splitlines() if line.startswith("| Matched leg")]
    assert len(rows) == 2 and all("32 seeds" not in r and "16 seeds trained 256,000 tokens each"
                                  in r for r in rows)
    assert "depths 2, models trained 256,000 tokens; beyond these an assumption" in text
    rec["records"]["raw"]["cells"]["L2-F176"]["train"] = {
        "steps": 250, "batch_size": 16, "seq_len": 64, "vocab_size": 2048}
    text = LC.section(rec, "python -m experiments.lineage_level --measure", "cpu")
    assert "vocabulary 2,048. A row elsewhere" in text  # its own settings: nothing borrowed


def test_the_level_cells_share_the_seed_familys_recorded_schedule():
    """The fallback's premise: every level cell trains with the seed family's steps, batch, T
    and vocabulary, which the committed training record holds (its tokens among them)."""
    import json
    from pathlib import Path

    from experiments.common import seed_family as SF
    from experiments.lineage import level_families as LF

    keys = ("steps", "batch_size", "grad_accum", "seq_len", "vocab_size")
    for tc in LF.CELLS.values():
        assert [getattr(tc, k) for k in keys] == [getattr(SF.RUN, k) for k in keys]
    assert SF.RECORD.stem == LR.FAMILY_RECORD
    record = json.loads((Path(__file__).resolve().parents[1] / SF.RECORD).read_text())
    assert {k: record["run"]["train_config"][k] for k in keys} == {
        k: getattr(SF.RUN, k) for k in keys}
    assert record["records"][0]["tokens"] == SF.RUN.steps * SF.RUN.batch_size * SF.RUN.seq_len


def test_a_row_applying_the_default_slack_puts_the_tables_range_beside_its_models_tokens():
    records = {"lineage_level": _level_record({"L2-F176": 250, "L2-F344": 250}),
               "training": {LR.FAMILY_RECORD: FAMILY}}
    note = LR.extrapolation(records, "SmolLM2-135M")
    assert note == ("its matched leg between two trained models applies the default slack (4 "
                    "units per layer pair), the largest the level table fitted, on cells of "
                    "models trained 256,000 tokens each; SmolLM2-135M was pretrained on 2 "
                    "trillion tokens (its model card), 7.8 million times as many as any cell's "
                    "models: the default is extrapolated to it, not measured there")
    assert "Gemma 3 270M was pretrained on 6 trillion tokens" in LR.extrapolation(
        records, "Gemma 3 270M")
    unknown = LR.extrapolation({"lineage_level": records["lineage_level"]}, "SmolLM2-135M")
    assert "cells whose training tokens are not recorded" in unknown
    assert "extrapolated to it" in unknown and "times as many" not in unknown
    assert "its record is missing here" in LR.extrapolation({}, "Gemma 3 270M")
    with pytest.raises(KeyError):
        LR.extrapolation(records, "a model with no stated pretraining")


def test_a_row_whose_record_applied_the_law_states_its_slack_and_where_it_was_measured():
    """A real model's lineage record made since the slack became the law of training length
    carries the rule per pair: the row states the slack at the tokens it used, the tokens the
    law was measured up to (the long record) and the model's own."""
    from bornbiased_jax.fingerprint.methods.trained_slack import law_units

    u = law_units(36e12, 1536)  # the toolkit's default at SmolLM2's width: not stale
    rule = {"slack": u, "tokens": 36e12, "tokens_given": False, "beyond": ["..."]}
    lineage = {"records": {"tests": {"auto": {"pairs": [{"suspect": "lora", "slack": u,
                                                         "slack_rule": rule}]}}}}
    long = {"records": {"cells": {"L2-F344-long": {"units": 344, "layers": 2, "steps": {
        "250": {"tokens": 256_000}, "4000": {"tokens": 4_096_000}}}}}}
    from bornbiased_jax.fingerprint.methods.trained_slack import law_terms

    note = LR.extrapolation({"lineage_level_long": long}, "SmolLM2-135M", lineage)
    by_tokens, by_width = law_terms(36e12, 1536)
    term = (f", set by its width term, ceil(0.0349 x 1,536), above its tokens term's "
            f"{by_tokens}" if by_width > by_tokens else "")
    assert note.startswith(
        "its matched leg between two trained models applies the law of training "
        f"length's slack ({u} units per layer pair at 36 trillion tokens per model, "
        f"assumed: the most any public model card states{term}), fitted on unrelated "
        "same-data models trained up to 4,096,000 tokens each (MLP width 344 x 2 "
        "layers to 4.10 M tokens, cell by cell; the level along training); "
        "SmolLM2-135M was pretrained on 2 trillion tokens (its model card), 488 thousand "
        "times as many: the slack is extrapolated to it, not measured there")
    # a slack set by the width term says so, and that no cell this wide was measured
    assert (("at these tokens the slack is its width term's" in note
             and note.endswith("the widest cell measured (MLP width 344, 2 layers, 4,096,000 "
                               "tokens per model); the share is not measured at this model's "
                               "width, depth or tokens"))
            if by_width > by_tokens else note.endswith("not measured there"))
    assert "their record is missing here" in LR.extrapolation({}, "SmolLM2-135M", lineage)
    # a record made before the law: the level table's sentence
    old = {"records": {"tests": {"auto": {"pairs": [{"suspect": "lora"}]}}}}
    assert "applies the default slack" in LR.extrapolation({}, "SmolLM2-135M", old)


def test_the_real_models_default_slack_rows_state_the_range_from_the_committed_records():
    """In RESULTS.md's SmolLM2 and Gemma 3 sections, the rows of the tests that apply the
    default slack between two trained models (the any-pair verdict and the matched test) put
    the level table's training tokens beside the model's; the other tests' rows do not."""
    from pathlib import Path

    from experiments import render
    from experiments.real_model import gemma3_claims as G
    from experiments.real_model import claims as R

    records = render.load_records(Path(render.__file__).resolve().parents[1] / render.RECORDS)
    # the long cells where the law was measured, each with its tokens (MLP width 344 x 2 layers
    # to 8.19 M tokens, ...): the toolkit's own record of them
    from bornbiased_jax.defaults import MATCHED_SLACK_MEASURED
    from bornbiased_jax.fingerprint.methods.trained_slack import shapes_text

    top, shapes = max(c["tokens"] for c in MATCHED_SLACK_MEASURED), shapes_text(
        MATCHED_SLACK_MEASURED)
    assert shapes.startswith("MLP width 344 x 2 layers to ") and "1,536 x 2 layers" in shapes
    for section, model in ((R.section(records, R.COMMAND), "SmolLM2-135M was pretrained on 2"),
                           (G.section(records, G.COMMAND), "Gemma 3 270M was pretrained on 6")):
        rows = [line for line in section.splitlines() if line.startswith("| Table 6's question")]
        # records made before the law name the level table's cells; since, the long cells
        noted = [r for r in rows if ("models trained 256,000 tokens each; " + model in r
                                     or (f"trained up to {top:,} tokens each ({shapes}, cell "
                                         f"by cell; the level along training); ") + model in r)]
        assert len(noted) == 2
        assert all(r.split(" | ")[0].split(", by the ")[1].startswith(("any", "matched"))
                   for r in noted)
