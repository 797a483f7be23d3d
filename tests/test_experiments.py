"""The experiment scripts' own logic: Finding 2.2's favourite statistics and the verdict rules
with which experiments/run_all.py turns saved numbers into RESULTS.md rows."""

import numpy as np
import pytest

from experiments import run_all
from experiments.figure2_finding22 import favourite_stats, match_summary


def test_favourite_margin_and_ties():
    top = np.array([5, 5, 5, 5, 2, 2, 7])
    r = favourite_stats(top, 10, d_top=2)
    assert (r["favourite"], r["favourite_count"], r["runner_up"], r["runner_up_count"]) == (
        5, 4, 2, 2)
    assert r["margin"] == 2 and not r["tied"] and not r["match"]
    assert r["direction_top_rank"] == 2 and r["direction_top_count"] == 2
    # 4 vs 2 of 6: two-sided binomial p = 0.6875, far from unambiguous.
    assert r["margin_p"] == pytest.approx(0.6875) and not r["unambiguous"]
    tie = favourite_stats(np.array([3, 1, 3, 1]), 5, d_top=3)
    assert tie["tied"] and tie["favourite"] == 1 and tie["direction_top_rank"] == 1
    clear = favourite_stats(np.array([4] * 30 + [1] * 5), 8, d_top=4)
    assert clear["unambiguous"] and clear["match"]  # 30 vs 5: p = 1.5e-5


def _f22(matches, unambiguous, num_seqs=3000):
    per = [{"seed": i, "favourite": 1, "favourite_count": 30 if u else 5, "runner_up": 2,
            "runner_up_count": 5, "margin": 25 if u else 0, "tied": not u, "margin_p": 0.01,
            "unambiguous": u, "direction_top": 1 if m else 3, "direction_top_count": 1,
            "direction_top_rank": 1 if m else 4, "match": m, "block_mean_cos": [0.0, 0.1, 0.2]}
           for i, (m, u) in enumerate(zip(matches, unambiguous))]
    summary = match_summary(per)
    return {"run": {"settings": {"num_seqs": num_seqs}},
            "records": {"per_seed": per, "match_rate": summary["all"]["rate"],
                        "match_ci95": summary["all"]["ci95"], "summary": summary}}


def test_finding22_verdict_uses_models_with_an_unambiguous_favourite():
    # 9 of 10 unambiguous models match: 90 %, CI 55-100 % contains 76 % -> reproduced, even
    # though the ambiguous ones (all mismatches) pull the overall rate down to 9/14.
    row = run_all.finding22_row(_f22([True] * 9 + [False] * 5, [True] * 10 + [False] * 4))
    assert row[3].startswith("reproduced") and "9/10" in row[2] and "9/14" in row[2]
    # 1 of 10: CI 0.3-45 % excludes 76 % -> differs.
    row = run_all.finding22_row(_f22([True] + [False] * 9, [True] * 10))
    assert row[3].startswith("differs") and "1/10" in row[2]
    # No unambiguous favourite at all: no verdict either way.
    row = run_all.finding22_row(_f22([False] * 4, [False] * 4))
    assert row[3].startswith("undecided")


def test_verdict_rules_of_saved_results(tmp_path):
    from bornbiased_jax import io

    def save(name, records):
        io.write_json(tmp_path / name / f"{name}.json", {"run": {}, "records": records})

    save("table3", [{"setting": s, "paper": p, "closed_form": p, "avg_sim": a, "log10_p": -9}
                    for s, p, a in [("h", 0.31, 0.318), ("mlp", 0.49, 0.494),
                                    ("attn", 0.98, 0.984)]])
    save("figure5", {"ReLU MLP0": [0, 0.32, 0.5], "tanh MLP0": [0, 0.001, -0.002],
                     "ReLU MLP block (LN + residual)": [0, 0.1, 0.2]})
    save("figure4", [{"mean": x} for x in (0.0, 0.1, 0.15, 0.2)])
    rows = {r[0]: r[3] for r in run_all.rows_for(tmp_path)}
    assert rows == {"Table 3 / Prop. 4": "reproduced", "Figure 5 / Prop. 2": "reproduced",
                    "Figure 4 / Finding 4": "reproduced"}
    # The same rules turn against results that contradict the claims.
    save("table3", [{"setting": "h", "paper": 0.31, "closed_form": 0.318, "avg_sim": 0.25,
                     "log10_p": -9}])
    save("figure5", {"ReLU MLP0": [0, 0.32, 0.5], "tanh MLP0": [0, 0.1, 0.2],
                     "ReLU MLP block (LN + residual)": [0, 0.1, 0.2]})
    save("figure4", [{"mean": x} for x in (0.0, 0.2, 0.1, 0.05)])
    assert {r[3] for r in run_all.rows_for(tmp_path)} == {"differs"}


def test_run_all_keeps_sections_owned_by_other_generators():
    text = ("# old table\n| a |\n<!-- seedprint:begin -->\nSeedPrint rows\n"
            "<!-- seedprint:end -->\nstray text\n<!-- other:begin -->\nX\n<!-- other:end -->")
    assert run_all.kept_sections(text) == [
        "<!-- seedprint:begin -->\nSeedPrint rows\n<!-- seedprint:end -->",
        "<!-- other:begin -->\nX\n<!-- other:end -->"]
    assert run_all.kept_sections("# no sections\n") == []
