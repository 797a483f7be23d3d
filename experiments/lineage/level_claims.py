"""RESULTS.md's level table of the matched leg between two trained models, per MLP width and
depth (:mod:`experiments.lineage.level`'s record): the rows and their rules, pure functions of
the record (and of the seed family's training record, for how long the cells were trained:
``common.level_range``). Every row is beyond the paper: its verdict is *beyond the paper*, and
its why begins with its rule's outcome (:func:`outcome`, worded by :data:`OUTCOME_TEXT`: *holds*
'holds its level', *fails* 'above its level', *underpowered*).

Rules (each can fail; tests/test_lineage_level.py gives records that pass and fail them):

  * initialisations: the rejection rate of the pairs of a cell's initialisations at alpha,
    where the null law is exact, is judged by ``common.level_rule`` (one-sided jackknife t
    over the cell's models): *holds* when not rejected, *fails* when rejected;
  * trained pairs, held out: at the default slack (the largest cell's fit), the rate among
    the second half of a cell's seeds at alpha and at alpha / 2, by the same rule: *fails*
    when rejected; when not, *holds* (a level not rejected on held-out seeds of that cell)
    where the rule's simulated power at that cell's size flags a true rate of
    :data:`POWER_RATE` with probability :data:`POWER_NEEDED`, else *underpowered*; the row
    states the power;
  * the slack as a count: *holds* when every cell's held-out level holds at the one default
    count; the row names the widths, depths and training tokens measured (an assumption
    beyond them; the real-model rows that apply the default say so beside their model's
    training tokens: ``common.level_range.extrapolation``).
"""

from __future__ import annotations

from bornbiased_jax.verdicts import BEYOND, UNTESTABLE, Claim
from experiments.common import level_range as LR
from experiments.lineage import LEVEL_TITLE as TITLE

# A held-out level 'holds' only where the rule would have flagged a true rate of POWER_RATE
# (five times alpha) with probability POWER_NEEDED; a level not rejected by a weaker rule is
# 'underpowered'.
POWER_RATE, POWER_NEEDED = 0.05, 0.8
# how a row's why begins, per outcome of its rule (the verdict itself is 'beyond the paper')
OUTCOME_TEXT = {"holds": "holds its level", "fails": "above its level",
                "underpowered": "underpowered"}


def outcome(rejected: bool, power: float | None = None) -> str:
    """A level rule's outcome: 'fails' when the level is rejected; else 'holds', or, where the
    rule's ``power`` to flag :data:`POWER_RATE` is below :data:`POWER_NEEDED`,
    'underpowered'."""
    if rejected:
        return "fails"
    return "underpowered" if power is not None and power < POWER_NEEDED else "holds"


def _rate(r: dict) -> str:
    lo, hi = r["ci95"]
    return f"{r['rejections']}/{r['pairs']} ({r['rate']:.1%}, 95 % CI {lo:.1%}-{hi:.1%})"


def _power(c: dict) -> str:
    return ", ".join(f"{float(rt):.0%}: {p:.2f}" for rt, p in c["held_out_power"].items())


def cell_claims(name: str, c: dict, default: int, training: dict | None = None) -> list[Claim]:
    """The two rows of one cell; ``training``: how its models were trained
    (``level_range.cells_training``), None where the records do not say."""
    trained = ("" if training is None else
               f" trained {LR.tokens_text(training['tokens'])} tokens each")
    shape = (f"F = {c['units']:,}, {c['layers']} layers, d = {c['d_model']}, {c['seeds']} seeds"
             f"{trained}, {c['rows_per_model']:,} rows")
    init = c["init"]["0.01"]
    init_o = outcome(c["init_level"]["rejected"])
    out = [Claim(f"Matched leg at initialisation, {name} [{shape}]",
                 "- (beyond the paper)",
                 f"{_rate(init)} of the pairs of initialisations rejected at alpha = 0.01 "
                 f"(exact null law, the initialisation's units re-paired)",
                 BEYOND, f"{OUTCOME_TEXT[init_o]}: " + (
                     "the rate is above alpha beyond the rule's t bound" if init_o == "fails"
                     else "a rate not above alpha (one-sided jackknife t over the models)"),
                 "beyond")]
    held = c["held_out"]
    bad = [a for a, j in c["held_out_level"].items() if j["rejected"]]
    power = c["held_out_power"].get(str(POWER_RATE), 0.0)
    held_o = outcome(bool(bad), power)
    s0 = c["trained_slack0"]["0.01"]
    out.append(Claim(
        f"Matched leg between trained same-data seeds, {name} [{shape}]", "- (beyond the paper)",
        f"at slack 0: {_rate(s0)} of all pairs rejected; fitted on the first half of the seeds "
        f"({c['fit_pairs']} pairs): {c['fit_slack']} units per layer pair; held out (the other "
        f"half, {c['held_out_pairs']} pairs) at the default {default}: "
        f"{_rate(held['0.01'])} at alpha = 0.01, {_rate(held['0.005'])} at alpha / 2; shared "
        f"units per layer K: mean {c['mean_K']:.2f}, max {c['max_K']}",
        BEYOND,
        f"{OUTCOME_TEXT[held_o]}: " +
        (f"the held-out rate is above alpha beyond the rule's t bound at alpha = "
         f"{', '.join(bad)}" if bad else
         "a level not rejected on the held-out seeds of this cell" + (
             "" if held_o == "holds" else f", but the rule would flag a true rate of "
             f"{POWER_RATE:.0%} only with probability {power:.2f}")) +
        f"; the rule flags a true held-out rate of {_power(c)} (rate: probability, simulated "
        f"at {c['held_out_pairs']} pairs of independent outcomes)", "beyond"))
    return out


def claims(summary: dict, training: dict | None = None) -> list[Claim]:
    """The table's rows; ``training``: {cell: how its models were trained, or None}
    (``level_range.cells_training``; None: not known)."""
    cells = summary["cells"]
    default = summary["default_slack"]
    training = training or {name: None for name in cells}
    out = [c for name, cell in cells.items()
           for c in cell_claims(name, cell, default, training.get(name))]
    widths = sorted({c["units"] for c in cells.values()})
    depths = sorted({c["layers"] for c in cells.values()})
    fits = ", ".join(f"{n}: {c['fit_slack']}" for n, c in cells.items())
    bad = [n for n, c in cells.items() if any(j["rejected"] for j in c["held_out_level"].values())]
    weak = [n for n, c in cells.items()
            if c["held_out_power"].get(str(POWER_RATE), 0.0) < POWER_NEEDED]
    slack_o = "fails" if bad else "underpowered" if weak else "holds"
    tokens = LR.range_text(training)
    out.append(Claim(
        "The slack as a count of units (the default for two trained models)",
        "- (beyond the paper)",
        f"fitted per cell: {fits}; the default, the largest: {default} units per layer pair",
        UNTESTABLE if not cells else BEYOND,
        "no cell measured" if not cells else f"{OUTCOME_TEXT[slack_o]}: " +
        (f"held out, the level is rejected in {', '.join(bad)}" if bad else
         f"a level not rejected at the one count in every cell measured: MLP widths "
         f"{', '.join(f'{w:,}' for w in widths)}, depths {', '.join(map(str, depths))}, "
         + (f"models trained {tokens} tokens" if tokens else "training tokens not recorded")
         + "; beyond these an assumption" + (
             f"; too few held-out pairs to flag a {POWER_RATE:.0%} rate reliably in "
             f"{', '.join(weak)}" if weak else "")), "beyond"))
    return out


def section(record: dict, command: str, run_line: str, family: dict | None = None) -> str:
    """The section from the level record; ``family``: the seed family's training record, for
    how long the cells were trained where the level record does not say
    (``level_range.cells_training``)."""
    s = record["run"]["settings"]
    summary = record["records"]["summary"]
    training = LR.cells_training(record, family)
    borrowed = any("train" not in c
                   for c in record["records"].get("raw", {}).get("cells", {}).values())
    lines = [f"## {TITLE}", "",
             f"Generated from results/records/lineage_level/lineage_level.json (`{command}`, "
             f"run on {run_line}). Cells: seeds trained on identical data in one program "
             f"(experiments/lineage/level_families.py; L2-F176 is the 32-seed llama2-tiny "
             f"family), every pair of a cell's final models and of its initialisations; the "
             f"matched leg as `bornbiased fingerprint` runs it (the first {s['seqs']} of its "
             f"probe sequences, T = {min(s['seq_len'], s['t_views'])}, layers matched across "
             f"depths, units as reciprocal best partners). Slack: fitted on the first half of "
             f"each cell's seeds, judged on the second half. Training: "
             f"{LR.schedule_text(training)}"
             + (" (steps from this record; the batch, T and vocabulary, which it does not "
                "hold, from the seed family's training record, "
                "results/records/training/seed_family.json, whose schedule every cell shares: "
                "experiments/lineage/level_families.py)" if borrowed else "")
             + ". A row elsewhere that applies the default slack to a model trained longer "
               "states that model's tokens beside these.", "",
             "| claim | paper | ours | verdict |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(c.cells()) + " |" for c in claims(summary, training)]
    return "\n".join(lines)
