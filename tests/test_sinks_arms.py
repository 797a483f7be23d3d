"""The sink arms in the Bigram-Backcopy regime: their cells, the seed-level statistics and
verdict rules on hand-made records, and one tiny many-seed run trained and measured end to end."""

import dataclasses
import json

import numpy as np
import pytest
from scipy import stats

from bornbiased_jax.cli import build_parser, main
from bornbiased_jax.commands.train import train_config
from experiments.sinks import arms as A
from experiments.sinks.regime import check_grid
from bornbiased_jax.verdicts import (BEYOND, DIFFERS, MEASURED, REPRODUCED, UNDERPOWERED,
                                     UNTESTABLE)

TS = (32, 64, 128)


def test_the_arms_differ_only_by_their_model_setting():
    for cells in (A.CPU, A.PAPER):
        check_grid(cells)
        base = cells[0]
        assert base.name == "baseline" and [c.name for c in cells[:5]] == list(A.ARM_NAMES)
        for c in cells:
            arm = A.arm_of(c.name)
            extra = c.model_set[len(base.model_set):]
            assert c.model_set[:len(base.model_set)] == base.model_set
            assert dataclasses.replace(c, name="x", model_set=(), seeds=()) == \
                dataclasses.replace(base, name="x", model_set=(), seeds=())
            # attenuation's T is the model's context: the trained length
            assert c.model_config().max_seq_len == c.seq_len
            assert c.is_bbm and len(extra) == (0 if arm == "baseline" else 1)
    # CPU: every arm trains seeds 0-3 and 4-7 in two runs, the first named after the arm
    assert [c.name for c in A.CPU[5:]] == [f"{a}-s4-7" for a in A.ARM_NAMES]
    for arm in A.ARM_NAMES:
        seeds = [s for c in A.CPU if A.arm_of(c.name) == arm for s in c.seeds]
        assert seeds == list(range(8))
    assert A.CPU[0].train_config().init_seeds == (0, 1, 2, 3)
    assert A.PAPER[0].seeds == tuple(range(8)) and len(A.PAPER) == 5


@pytest.mark.parametrize("cell", [A.CPU[2], A.CPU[9], A.PAPER[4]])
def test_an_arms_command_line_is_the_run_it_checks_for(cell, tmp_path):
    args = build_parser().parse_args(cell.train_argv(tmp_path / cell.name))
    assert train_config(args) == cell.train_config()
    assert "--seeds" in cell.train_argv("x") and "--seed" not in cell.train_argv("x")


def test_seed_mean_is_the_t_interval():
    from bornbiased_jax.stats import paired_mean, seed_mean

    xs = [0.31, 0.52, 0.44, 0.40]
    m = seed_mean(xs)
    lo, hi = stats.t.interval(0.95, len(xs) - 1, loc=np.mean(xs), scale=stats.sem(xs))
    assert m.n == 4 and m.mean == pytest.approx(np.mean(xs))
    assert (m.lo, m.hi) == (pytest.approx(lo), pytest.approx(hi))
    assert np.isnan(seed_mean([0.3]).hi)
    # paired seed by seed: a shared per-seed offset cancels
    base = [1.0, 5.0, -3.0, 2.0]
    d = paired_mean([b + x for b, x in zip(base, xs)], base)
    assert d.mean == pytest.approx(m.mean) and d.se == pytest.approx(m.se)
    with pytest.raises(ValueError, match="one per seed"):
        paired_mean([1.0, 2.0], [1.0])


def _ck(step, rate, nll, gu=None, copy=1.0):
    """A measured checkpoint with the same eps-0.25 rate (SE 0.01) at every length."""
    return {"step": step, "nll": nll, "nll_se": 0.01, "copy_accuracy": copy,
            "bigram_accuracy": 0.5, "val_loss": nll,
            "paper": [{"T": T, "rate": rate, "se": 0.01, "rate_eps03": rate, "se_eps03": 0.01,
                       "alpha_max": 0.2 + rate} for T in TS],
            "gu": {"rate": rate if gu is None else gu, "se": 0.01}}


def _arm(name, finals, nll=0.70, early=0.75, seeds=(0, 1, 2, 3)):
    """An arm whose seed k ends at sink rate finals[k] (step 400), with held-out NLL ``nll`` +
    k/1000 at the end and ``early`` + k/1000 at step 100 and 200."""
    return {"name": name, "command": "bornbiased train ...", "train_seconds": 10,
            "seeds": [{"seed": s, "train_loss": [[0, 3.0], [400, 0.7]], "checkpoints": [
                _ck(0, 0.0, 3.3), _ck(100, 0.0, early + k / 1000),
                _ck(200, f / 2, early + k / 1000), _ck(400, f, nll + k / 1000)]}
                for k, (s, f) in enumerate(zip(seeds, finals))]}


def _record(**arms):
    return {"run": {}, "records": {"arms": arms, "not_measured": []}}


def test_verdicts_when_the_baseline_grows_sinks():
    rec = _record(
        baseline=_arm("baseline", [0.48, 0.50, 0.45, 0.49]),
        attenuation=_arm("attenuation", [0.0, 0.0, 0.01, 0.0], nll=0.695),
        amplification=_arm("amplification", [0.20, 0.25, 0.22, 0.18], nll=0.80),
        headwise_rmsnorm=_arm("headwise_rmsnorm", [0.5, 0.5, 0.5, 0.5], early=0.72),
        gate=_arm("gate", [0.0, 0.0, 0.0, 0.0]))
    c = {x.claim: x for x in A.claims(rec)}
    gate = next(v for k, v in c.items() if k.startswith("Baseline develops"))
    assert gate.verdict == REPRODUCED and "4 of 4 seeds grew sinks" in gate.ours
    assert next(v for k, v in c.items() if k.startswith("attenuation: sinks")).verdict == REPRODUCED
    amp = next(v for k, v in c.items() if k.startswith("amplification: sinks"))
    assert amp.verdict == REPRODUCED and "lower than baseline at every length" in amp.why
    assert next(v for k, v in c.items() if k.startswith("gate: sinks")).verdict == BEYOND
    hw = next(v for k, v in c.items() if k.startswith("headwise_rmsnorm: sinks"))
    assert hw.verdict == BEYOND and "not lower" in hw.why
    conv = next(v for k, v in c.items() if k.startswith("convergence, headwise_rmsnorm"))
    assert conv.verdict == REPRODUCED and "-0.0300" in conv.ours  # 0.72 - 0.75, every seed
    t7 = {k.split(", ")[1]: v for k, v in c.items() if k.startswith("Table 7")}
    assert t7["baseline"].verdict == MEASURED
    assert t7["attenuation"].verdict == REPRODUCED and "better" in t7["attenuation"].why
    assert t7["amplification"].verdict == DIFFERS and "worse" in t7["amplification"].why
    assert t7["gate"].verdict == BEYOND


def test_verdicts_that_fail_or_cannot_decide():
    base = _arm("baseline", [0.48, 0.50, 0.45, 0.49])
    rec = _record(baseline=base,
                  attenuation=_arm("attenuation", [0.3, 0.35, 0.25, 0.3]),
                  amplification=_arm("amplification", [0.6, 0.55, 0.62, 0.58],
                                     early=0.78))
    c = {x.claim.split(",")[0]: x for x in A.claims(rec)}
    assert c["attenuation: sinks"].verdict == DIFFERS
    assert c["amplification: sinks"].verdict == DIFFERS and "higher" in c["amplification: sinks"].why
    # one seed far off: the interval reaches past the margin, neither near zero nor above it
    wide = _record(baseline=base, attenuation=_arm("attenuation", [0.0, 0.0, 0.0, 0.3]))
    att = next(x for x in A.claims(wide) if x.claim.startswith("attenuation: sinks"))
    assert att.verdict == UNDERPOWERED
    # no sinks in the baseline: every arm's sink claim is untestable
    flat = _record(baseline=_arm("baseline", [0.0] * 4), attenuation=_arm("attenuation", [0.0] * 4))
    rows = A.claims(flat)
    assert rows[0].verdict == UNTESTABLE  # the gate failed: a precondition, not a measurement
    assert rows[0].why == ("precondition failed: the baseline's sink rate is above 0 at no "
                           "length, and has not risen from step 0 (95 % t intervals over "
                           "seeds), so the arms' sink comparisons cannot be made")
    assert next(x for x in rows if x.claim.startswith("attenuation: sinks")).verdict == UNTESTABLE


def test_gate_says_where_the_baseline_has_sinks():
    """A baseline with sinks at T = 32 only (every seed) fails the gate: untestable, naming the
    lengths with and without sinks; the same baseline with sinks at every length passes it."""
    base = _arm("baseline", [0.48, 0.50, 0.45, 0.49])
    assert A.gate_claim(base).verdict == REPRODUCED
    for s in base["seeds"]:
        for ck in s["checkpoints"]:
            for row in ck["paper"]:
                if row["T"] != 32:
                    row["rate"] = 0.0
    c = A.gate_claim(base)
    assert c.verdict == UNTESTABLE
    assert c.why.startswith("precondition failed: the baseline's sink rate is above 0 only at "
                            "T = 32, not at T = 64, 128, and has risen from step 0")
    arm = A.arm_sinks_claim("attenuation", _arm("attenuation", [0.0] * 4), base, False)
    assert arm.verdict == UNTESTABLE and "fails the validity gate" in arm.why


def test_shown_command_drops_the_machines_paths():
    """RESULTS.md shows a recorded command without the recording machine's interpreter and
    standard-library paths, also for a record saved before its paths were made portable."""
    from experiments import render
    from experiments.sinks import study as sinks_study

    cmd = ("/root/.pyenv/versions/3.11.7/bin/python3.11 -m experiments.sinks_arms --corpus "
           "bbm:/root/.pyenv/versions/3.11.7/lib/python3.11/textwrap.py:triggers=3 --steps 10")
    assert A.shown_command(cmd) == ("python -m experiments.sinks_arms --corpus "
                                    "bbm:<stdlib>/textwrap.py:triggers=3 --steps 10")
    assert A.shown_command("/work/main/.venv/bin/python -m x") == "python -m x"
    plain = "bornbiased train --corpus python-stdlib --out runs/a"
    assert A.shown_command(plain) == plain
    records = render.load_records()
    raw = records["sinks_arms"]["records"]["arms"]["baseline"]["command"]
    section = sinks_study.arms_section(records)
    assert A.shown_command(raw) in section
    assert "/lib/python3" not in section and "/bin/python" not in section


def test_pairing_uses_the_seeds_both_arms_have():
    base = _arm("baseline", [0.5, 0.4, 0.3, 0.2])
    gate = _arm("gate", [0.1, 0.1, 0.1], seeds=(1, 2, 9))
    d = A.paired(gate, base, "rate@64")  # seeds 1 and 2: 0.1 - 0.4, 0.1 - 0.3
    assert d.n == 2 and d.mean == pytest.approx(-0.25)
    with pytest.raises(ValueError, match="cannot pair"):
        A.paired(_arm("gate", [0.1, 0.1], seeds=(2, 9)), base, "rate@64")


def test_seed_groups_merge_into_one_arm():
    g1 = dict(_arm("gate", [0.1, 0.2]), lengths=[32], num_seqs=3, settings={}, model={})
    g2 = dict(_arm("gate-s4-7", [0.3], seeds=(4,)), lengths=[32], num_seqs=3, settings={},
              model={})
    m = A.merge_groups([g1, g2])
    assert m["name"] == "gate" and m["groups"] == ["gate", "gate-s4-7"]
    assert [s["seed"] for s in m["seeds"]] == [0, 1, 4] and m["train_seconds"] == 20
    assert A.final_values(m)["rate@64"] == [0.1, 0.2, 0.3]
    with pytest.raises(ValueError, match="repeat seeds"):
        A.merge_groups([g1, g1])


def test_table_and_figure_of_a_record():
    rec = _record(baseline=_arm("baseline", [0.48, 0.50, 0.45, 0.49]),
                  gate=_arm("gate", [0.0] * 4))
    md = A.markdown(rec["records"]).splitlines()
    assert len(md) == 4 and md[2].startswith("| baseline | 4 | 0.48 ± 0.01")
    assert md[2].count("|") == md[0].count("|") and "0.48, 0.50, 0.45, 0.49" in md[2]
    fig = A.figure(rec["records"])
    assert len(fig.axes) == 4 and len(fig.axes[3].lines) == 8  # one loss curve per seed


@pytest.mark.slow
def test_a_tiny_many_seed_arm_is_trained_measured_and_reused(tmp_path):
    from experiments.sinks.arms_measure import run_arm

    src = tmp_path / "src.txt"
    src.write_text("the quick brown fox jumps over the lazy dog. " * 40)
    cell = dataclasses.replace(A.CPU[2], corpus=(f"bbm:{src}:triggers=2",), seq_len=64,
                               batch_size=2, steps=2, save_every=2, warmup=1,
                               corpus_max_mb=0.01, seeds=(3, 5))
    # trained here, in-process (run_arm would start the same command as a subprocess), so
    # run_arm finds it finished and only measures
    assert main(cell.train_argv(tmp_path / "runs" / cell.name)) == 0
    logs = []
    rec = run_arm(cell, tmp_path / "runs", log=logs.append)
    assert not any(m.startswith("bornbiased train") for m in logs)
    assert [s["seed"] for s in rec["seeds"]] == [3, 5]
    assert rec["model"]["attn_output_transform"] == "sqrt_i_over_T"
    for s in rec["seeds"]:
        assert [c["step"] for c in s["checkpoints"]] == [0, 2]
        for c in s["checkpoints"]:
            assert [r["T"] for r in c["paper"]] == [32, 64]
            assert 0 <= c["gu"]["rate"] <= 1 and np.isfinite(c["nll"])
            assert c["copy_positions"] > 0
    # the two seeds are different models (different initialisations)
    assert rec["seeds"][0]["checkpoints"][0]["nll"] != rec["seeds"][1]["checkpoints"][0]["nll"]
    saved = json.loads((tmp_path / "runs" / cell.name / "arms.json").read_text())
    assert saved["seeds"] == json.loads(json.dumps(rec["seeds"]))
    again = run_arm(cell, tmp_path / "runs", train_runs=False, log=logs.append)
    assert again == saved and "measured before" in logs[-1]
    assert run_arm(dataclasses.replace(cell, name="never"), tmp_path / "runs",
                   train_runs=False, log=logs.append) is None


def test_training_loss_is_kept_as_means_over_bins():
    from experiments.sinks.arms_measure import TRAIN_LOSS_EVERY, _binned_loss

    m = [{"step": s, "loss": float(s)} for s in range(5, 2 * TRAIN_LOSS_EVERY + 1, 5)]
    m.append({"step": 20, "val_loss": 9.0})
    got = _binned_loss(m)
    first = [float(s) for s in range(5, TRAIN_LOSS_EVERY + 1, 5)]
    assert got[0] == [TRAIN_LOSS_EVERY, pytest.approx(sum(first) / len(first))]
    assert [g[0] for g in got] == [TRAIN_LOSS_EVERY, 2 * TRAIN_LOSS_EVERY]


def test_late_rate_averages_the_last_checkpoints():
    arm = _arm("baseline", [0.4, 0.4, 0.4, 0.4])
    fv = A.final_values(arm)
    # checkpoints 100, 200, 400 end with rates 0, 0.2, 0.4 (LATE = 3)
    assert A.LATE == 3 and fv["rate_late@64"] == [pytest.approx(0.2)] * 4
    assert fv["rate@64"] == [0.4] * 4


def test_a_run_for_some_arms_keeps_the_other_arms_measurements(tmp_path, monkeypatch):
    """``--arms X`` trains and measures X only; the record still holds every other arm
    measured before with the same settings (never retrained); a saved record made with other
    settings, or none, leaves that cell under not_measured."""
    from bornbiased_jax import files
    from experiments.sinks import arms_measure as M

    def record(cell, rate, settings=None):
        return dict(_arm(cell.name, [rate] * len(cell.seeds), seeds=cell.seeds), model={},
                    lengths=list(TS), num_seqs=100,
                    settings=settings or json.loads(json.dumps(dataclasses.asdict(cell))))

    def saved(cell, arm, settings=None):
        files.write_json(tmp_path / cell.name / "arms.json", record(cell, 0.4, settings))

    by_name = {c.name: c for c in A.CPU}
    saved(by_name["baseline"], "baseline")
    saved(by_name["baseline-s4-7"], "baseline")
    saved(by_name["attenuation"], "attenuation", settings={"steps": -1})  # stale settings
    asked = []
    monkeypatch.setattr(M, "run_arm", lambda cell, root, train_runs, log: asked.append(
        cell.name) or record(cell, 0.1))
    rec = M.run_arms(A.CPU, tmp_path, only=["gate"], log=lambda m: None)
    assert asked == ["gate", "gate-s4-7"]  # only the arm asked for is trained
    assert set(rec["arms"]) == {"baseline", "gate"}
    assert [s["seed"] for s in rec["arms"]["baseline"]["seeds"]] == list(range(8))
    assert "attenuation" in rec["not_measured"] and "amplification-s4-7" in rec["not_measured"]
    # and the grid of the regime search does the same
    from experiments.sinks import regime as sr
    from experiments.sinks import regime_measure as RM

    cell = sr.CPU[0]
    files.write_json(tmp_path / "regime" / cell.name / "regime.json", {
        "name": cell.name, "settings": json.loads(json.dumps(dataclasses.asdict(cell))),
        "checkpoints": [_ck(0, 0.0, 3.0), _ck(100, 0.3, 1.0)]})
    monkeypatch.setattr(RM, "run_cell", lambda c, root, log: asked.append(c.name) or {
        "name": c.name, "checkpoints": [_ck(0, 0.0, 3.0), _ck(100, 0.0, 1.0)]})
    grid = RM.run_grid(sr.CPU, tmp_path / "regime", only=[sr.CPU[1].name], log=lambda m: None)
    assert asked[-1] == sr.CPU[1].name and asked.count(cell.name) == 0
    assert [c["name"] for c in grid["cells"]] == [cell.name, sr.CPU[1].name]
    assert grid["grid"] == [c.name for c in sr.CPU]
    assert [s["grew_sinks"] for s in grid["summary"]] == [True, False]


def test_amplification_near_zero_is_named_lower_only_when_it_is():
    """Amplification's "not zero" fails when the rate's interval lies below the near-zero
    margin at every length; the row calls the arm lower than the baseline only when the paired
    difference says so."""
    base = _arm("baseline", [0.48, 0.50, 0.45, 0.49])
    zero = A.arm_sinks_claim("amplification", _arm("amplification", [0.0] * 4), base, True)
    assert zero.verdict == DIFFERS and zero.why.startswith("lower than baseline but below")
    low = _arm("baseline", [0.020, 0.021, 0.019, 0.020])
    same = A.arm_sinks_claim("amplification", _arm("amplification", [0.020, 0.019, 0.021,
                                                                      0.020]), low, True)
    assert same.verdict == DIFFERS
    assert same.why == "below 0.05 at every length (zero, not 'not zero')"
