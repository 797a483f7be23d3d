"""The attention-sink study's declaration (paper Sec. 6.2): its experiments and its three
RESULTS.md sections, after training (Figure 12, Table 7), where sinks form at CPU scale, and the
arms trained with several seeds there (:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.common.study import Experiment, Section, Study, defined, run_line, scales
from experiments.sinks import COMMAND, TITLE

REGIME_TITLE = "Where attention sinks form at CPU scale (Sec. 6.2's precondition)"
ARMS_TITLE = "Sec. 6.2's arms where the baseline grows sinks (Bigram-Backcopy, several seeds)"
REGIME_COMMAND = "python -m experiments.sinks_regime"
ARMS_COMMAND = "python -m experiments.sinks_arms"


def section(records: dict, outputs=None) -> str | None:
    if "figure12_table7" not in records:
        return None
    from experiments.sinks import claims as sinks

    return sinks.section(records["figure12_table7"], records.get("sinks_init"))


def regime_section(records: dict, outputs=None) -> str | None:
    if "sinks_regime" not in records:
        return None
    from bornbiased_jax.verdicts import table
    from experiments.sinks import regime as sinks_regime

    rec = records["sinks_regime"]
    return "\n".join([
        f"## {REGIME_TITLE}", "",
        f"Generated from results/records/sinks/sinks_regime.json (`{REGIME_COMMAND}`; "
        f"run on {run_line(records, ['sinks_regime'])}). The section above found no sink in "
        "its baseline; this grid searched for a regime where a baseline grows them "
        f"(docs/sinks.md). Sink rate: eps {sinks_regime.PAPER_EPS} per sample at each length T; "
        "Gu: Gu et al.'s "
        f"setting (eps {sinks_regime.GU_EPS}, T = {sinks_regime.GU_T}, "
        f"{_num_seqs(rec['records']['cells'])} sequences).", "",
        table(sinks_regime.claims(rec)), "",
        "Every cell:", "", sinks_regime.markdown(rec["records"]).rstrip("\n"), "",
        ("The next section trains the five arms in the regime that grew sinks."
         if "sinks_arms" in records else
         "The five arms (baseline, amplification, attenuation, head-wise RMSNorm, output gate) "
         "have not yet been trained in this regime, so the paper's Sec. 6.2 claims are not "
         "tested here yet.")])


def _num_seqs(cells) -> str:
    """The cells' evaluation sequences per length (one number, or each distinct one)."""
    cells = cells.values() if isinstance(cells, dict) else cells
    return " or ".join(map(str, sorted({c["num_seqs"] for c in cells}))) or "?"


def arms_section(records: dict, outputs=None) -> str | None:
    if "sinks_arms" not in records:
        return None
    from bornbiased_jax.verdicts import table
    from experiments.artifacts import legend
    from experiments.sinks import arms as sinks_arms
    from experiments.sinks.regime import COPY_T

    rec = records["sinks_arms"]
    arms = rec["records"]["arms"]
    base = arms["baseline"]
    shown = sinks_arms.shown_command(base["command"])
    where = legend(shown)
    return "\n".join([
        f"## {ARMS_TITLE}", "",
        f"Generated from results/records/sinks/sinks_arms.json (`{ARMS_COMMAND}`; "
        f"run on {run_line(records, ['sinks_arms'])}). The baseline trains seeds "
        f"{', '.join(str(s['seed']) for s in base['seeds'])} in "
        f"{len(base.get('groups', [1]))} `train --seeds` run(s), all on the same batches in "
        f"the same order: `{shown}` (a later group differs only in `--seeds`"
        + (f"; {where}" if where else "") + "); each arm adds its `--model-set` "
        "(experiments/sinks/arms.py). Sink rates per "
        f"sample on {base['num_seqs']} evaluation draws per length; held-out NLL on "
        f"{base['num_seqs']} draws of {min(COPY_T, base['settings']['seq_len']) + 1} "
        "characters. Every number is a "
        "mean over seeds ± its standard error [95 % t interval on n - 1 degrees of freedom]; "
        "differences from the baseline are paired seed by seed; window-level standard errors "
        "decide nothing here, and alone they confirm nothing in the one-run-per-arm sink "
        "study above either (there an arm that agrees with the paper by them is consistent, "
        "underpowered).", "",
        table(sinks_arms.claims(rec)), "",
        "Every arm (final checkpoint):", "",
        sinks_arms.markdown(rec["records"]).rstrip("\n")])


_P = "experiments.sinks."
EXPERIMENT_TABLE = (
    Experiment("figure12_table7", _P + "command:entry", **scales(_P + "measure")),
    Experiment("sinks_init", _P + "at_init:main", **scales(_P + "at_init")),
    Experiment("sinks_regime", _P + "regime_measure:main",
               cpu=defined(_P + "regime_measure", "REGIME_CPU"),
               paper=defined(_P + "regime_measure", "REGIME_PAPER")),
    Experiment("sinks_arms", _P + "arms_measure:main",
               cpu=defined(_P + "arms_measure", "ARMS_CPU"),
               paper=defined(_P + "arms_measure", "ARMS_PAPER")))
STUDY = Study("sinks", EXPERIMENT_TABLE, (
    Section("sinks", TITLE, section, COMMAND),
    Section("sinks_regime", REGIME_TITLE, regime_section, REGIME_COMMAND),
    Section("sinks_arms", ARMS_TITLE, arms_section, ARMS_COMMAND)))
