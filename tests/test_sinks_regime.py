"""The sink-regime grid: its cells' validation and command lines, and the verdicts made of a
measured record (hand-made records; nothing is trained here)."""

import dataclasses

import pytest

from bornbiased_jax.cli import build_parser
from bornbiased_jax.commands.train import train_config
from bornbiased_jax.errors import UserError
from experiments.sinks import regime as sr


def _bbm(**kw):
    return dataclasses.replace(sr.CPU[0], **kw)


def test_the_grids_are_valid_and_cover_the_brief():
    cpu = sr.check_grid(sr.CPU)
    sr.check_grid(sr.PAPER)
    bbm = [c for c in cpu if c.is_bbm]
    text = [c for c in cpu if not c.is_bbm]
    assert {c.model_config().n_layers for c in bbm} == {1, 2, 3}
    assert {c.model_config().n_heads for c in bbm} == {1}
    assert {c.weight_decay for c in cpu} == {0.1, 0.5}
    assert {c.bos for c in text} == {True, False}
    assert {c.schedule for c in cpu} == {"constant"}
    # llama2-tiny's context is 128: the paper's lengths that fit, Gu et al.'s 64 among them
    assert bbm[0].lengths() == [32, 64, 128]


@pytest.mark.parametrize("cell", [sr.CPU[0], sr.CPU[-1], sr.PAPER[-1]])
def test_the_command_line_is_the_run_the_cell_checks_for(cell, tmp_path):
    """train_argv parsed by `bornbiased train` gives the TrainConfig that train_config()
    compares a run folder against (else a finished cell would be trained again, or refused)."""
    args = build_parser().parse_args(cell.train_argv(tmp_path / cell.name))
    assert train_config(args) == cell.train_config()
    assert args.corpus == list(cell.corpus) and str(args.out) == str(tmp_path / cell.name)


@pytest.mark.parametrize("bad, says", [
    ((), "at least one cell"),
    ((sr.CPU[0], sr.CPU[0]), "repeated"),
    ((_bbm(name="a/b"),), "plain folder name"),
    ((_bbm(name=""),), "plain folder name"),
    ((_bbm(bos=True),), "drop bos"),
    ((_bbm(save_every=400),), "must divide"),
    ((_bbm(seq_len=32),), "below Gu et al."),
    ((_bbm(seq_len=256),), "exceeds the maximum context"),
    ((_bbm(model_set=("n_layerz=1",)),), "unknown model setting"),
    ((_bbm(corpus=()),), "no corpus"),
])
def test_bad_grids_are_refused(bad, says):
    with pytest.raises(UserError, match=says):
        sr.check_grid(bad)


def _ck(step, rates, gu, alpha=0.5, T=(32, 64, 128)):
    """A measured checkpoint: eps-0.25 rates (rate, se) per length and Gu's (rate, se)."""
    return {"step": step, "val_loss": 1.0 - step / 1e4,
            "paper": [{"T": t, "rate": r, "se": se, "alpha_max": alpha}
                      for t, (r, se) in zip(T, rates)],
            "gu": {"rate": gu[0], "se": gu[1]}}


def _cell(name, cks, is_bbm=True):
    return {"name": name, "is_bbm": is_bbm, "checkpoints": cks, "train_seconds": 90,
            "model": {"n_layers": 1, "n_heads": 1, "d_model": 64},
            "settings": {"weight_decay": 0.5, "bos": False}}


ZERO = [(0.0, 0.0)] * 3
SINKS = [(0.9, 0.03), (0.95, 0.02), (0.6, 0.05)]


def test_a_cell_that_grew_sinks():
    s = sr.summarise(_cell("grew", [_ck(500, SINKS, (0.9, 0.03)), _ck(0, ZERO, (0.0, 0.0)),
                                    _ck(250, [(0.1, 0.03)] * 3, (0.05, 0.02))]))
    assert s["step"] == 500 and s["rates"][128] == (0.6, 0.05)
    assert s["formed"] and s["rising"] and s["grew_sinks"]
    assert s["first_step"] == 250  # 0.05 > 2 x 0.02


def test_a_rate_within_2_se_of_zero_at_one_length_is_not_formed():
    rates = SINKS[:2] + [(0.08, 0.04)]  # 0.08 is exactly 2 SE: not above
    s = sr.summarise(_cell("edge", [_ck(0, ZERO, (0.0, 0.0)), _ck(500, rates, (0.9, 0.03))]))
    assert s["rising"] and not s["formed"] and not s["grew_sinks"]


def test_sinks_present_from_initialisation_are_not_rising():
    s = sr.summarise(_cell("born", [_ck(0, SINKS, (0.9, 0.03)), _ck(500, SINKS, (0.95, 0.02))]))
    assert s["formed"] and not s["rising"] and not s["grew_sinks"]
    assert s["first_step"] == 0
    one = sr.summarise(_cell("one", [_ck(0, SINKS, (0.9, 0.03))]))
    assert not one["rising"]  # a single checkpoint cannot rise
    with pytest.raises(UserError, match="no measured checkpoint"):
        sr.summarise(_cell("none", []))


def test_no_sinks_anywhere():
    s = sr.summarise(_cell("flat", [_ck(0, ZERO, (0.0, 0.0)), _ck(500, ZERO, (0.0, 0.0))]))
    assert not s["formed"] and not s["rising"] and s["first_step"] is None


def test_markdown_and_figure_of_a_hand_made_record():
    rec = {"cells": [_cell("grew", [_ck(0, ZERO, (0.0, 0.0)), _ck(500, SINKS, (0.9, 0.03))]),
                     _cell("text", [_ck(0, ZERO, (0.0, 0.0)), _ck(500, ZERO, (0.0, 0.0))],
                           is_bbm=False)]}
    md = sr.markdown(rec)
    lines = md.splitlines()
    assert len(lines) == 4
    assert "| grew | 1 x 1, 64 | 0.5 | <s> | 500 |" in lines[2] and lines[2].endswith(
        "| 500 | yes | 90 |")
    assert "128: 0.600 ± 0.050" in lines[2] and "0.900 ± 0.030" in lines[2]
    assert "| text | 1 x 1, 64 | 0.5 | no | 500 |" in lines[3] and "| no | 90 |" in lines[3]
    fig = sr.figure(rec)
    assert len(fig.axes) == 3 and len(fig.axes[0].lines) == 2


def test_claims_name_the_cells_that_grew_sinks():
    """The RESULTS.md rows are computed from the record: a cell that grew sinks is named in the
    first row, one that did not goes to the second."""
    from experiments.sinks import regime as R

    def cell(name, rate):
        ck = lambda step, r: {"step": step, "paper": [{"T": 32, "rate": r, "se": 0.01,  # noqa: E731
                                                        "alpha_max": 0.5}],
                              "gu": {"rate": r, "se": 0.01}}
        return {"name": name, "checkpoints": [ck(0, 0.0), ck(100, rate)]}
    rec = {"records": {"cells": [cell("sinky", 0.4), cell("flat", 0.0)]}}
    grew, none = R.claims(rec)
    assert "sinky (step 100)" in grew.ours and "1 of 2 cells grew sinks (sinky)" in grew.why
    assert "flat" in none.ours and "never" in none.ours
