"""docs/seedprint.md's block on what the matched leg's slack between two trained models rests
on (``<!-- level-law -->``): every figure read from the long cells' record
(:mod:`experiments.lineage.level_long_law`), the level table's record and the toolkit's
constants, so that the page follows the record as cells and checkpoints come in."""

from __future__ import annotations

import math
import textwrap

from scipy import stats

from bornbiased_jax.defaults import (MATCHED_SLACK_LAW, MATCHED_SLACK_MEASURED,
                                     MATCHED_TOKENS_ASSUMED)
from bornbiased_jax.fingerprint.methods.trained_slack import (TOL, law_units, shapes_text,
                                                             tokens_text)
from experiments.common import level_rule
from experiments.common.level_fit import (POWER_RATE, SHORT_CELLS_SLACK, default_rates,
                                          halves, k_max)
from experiments.common.level_range import FAMILY_RECORD, _times, cells_training, range_text
from experiments.lineage import level_long as LL
from experiments.lineage.level_long_claims import late_growth
from experiments.lineage.level_long_law import PLATEAU, above_slack, in_fit, judge, loss_trend

# what a corpus of the long cells is, in words (experiments/lineage/level_long.py)
TEXTS = {"python-stdlib": "the Python standard library",
         "<node-docs>/*.md": "prose (Node.js and Vim documentation)",
         "<vim-docs>": "prose (Node.js and Vim documentation)"}
WIDE = 11_008  # a 7B model's MLP width, the width term's example
SMOLLM2_TOKENS = 2e12  # SmolLM2-135M's pretraining tokens (its model card)


def _text(cell: dict) -> str:
    names = dict.fromkeys(TEXTS.get(c, c) for c in cell["corpus"])
    return " and ".join(names)


def _list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _widest_at(law: dict, units_cap: int) -> int:
    """The widest MLP whose width term does not exceed the tokens term ``units_cap``."""
    return math.floor((units_cap + TOL) / law["share"])


def block(records: dict) -> str:
    """The block's text (module docstring); a sentence naming the command where the long
    cells' record is missing."""
    long = records.get("lineage_level_long")
    if long is None:
        return ("Not measured yet: no record results/records/lineage_level/"
                "lineage_level_long.json (`python -m experiments lineage_level_long --train`, "
                "then `--measure`).")
    rec = long["records"]
    j = judge(rec)
    law, summ = j["law"], j["summaries"]
    fitted = {n: c for n, c in rec["cells"].items() if in_fit(c)}
    d = MATCHED_SLACK_LAW
    u = law_units(MATCHED_TOKENS_ASSUMED, 1, d)
    out = [f"With T assumed ({MATCHED_TOKENS_ASSUMED / 1e12:g} T tokens) the default slack for "
           f"two released models is {u} units per layer pair at MLP widths up to "
           f"{_widest_at(d, u):,}, ceil(s F) beyond ({law_units(MATCHED_TOKENS_ASSUMED, WIDE, d)}"
           f" at F = {WIDE:,})."]
    cells = [f"{len(c['seeds'])} seeds of a {c['layers']}-layer LLaMA with F = {c['units']:,}, "
             f"d = {c['d_model']}, on {_text(c)}, trained to "
             f"{tokens_text(max(s['tokens'] for s in summ[n]))} tokens per model so far "
             f"({n})" for n, c in fitted.items()]
    level = records.get("lineage_level")
    short = ""
    if level is not None:
        sc = level["records"]["summary"]["cells"].values()
        widths = sorted({c["units"] for c in sc})
        depths = sorted({c["layers"] for c in sc})
        trained = range_text(cells_training(level, records.get("training", {})
                                            .get(FAMILY_RECORD)))
        short = (f", and the level table's cells (MLP widths {widths[0]:,}-{widths[-1]:,}, "
                 f"depths {_list([str(x) for x in depths])}, trained "
                 f"{trained or 'an unrecorded number of'} tokens each), whose "
                 f"fitted slacks (at most {level['records']['summary']['default_slack']}) the "
                 f"law covers")
    out.append(f"Measured: the long cells ({'; '.join(cells)}){short}.")
    trends = {n: loss_trend(c) for n, c in fitted.items()}
    said = [f"{n} {t['state']} ({t['drop']:.1%} per doubling of tokens at "
            f"{tokens_text(t['tokens_to'])}, "
            f"{'its schedule ended' if t['training'] == 'ended' else 'under way'})"
            for n, t in trends.items() if t]
    if said:
        out.append(f"Their held-out loss where the measured checkpoints end (plateaued below "
                   f"{PLATEAU:.0%} per doubling): " + "; ".join(said) + ".")
    grow = []
    for n, rows in summ.items():
        pick = [rows[0], rows[len(rows) // 2], rows[-1]] if len(rows) > 2 else rows
        grow.append(f"{n}: " + ", ".join(f"{s['K_mean']:.2f} at {tokens_text(s['tokens'])}"
                                          for s in pick)
                    + f" (the largest K of any pair {', '.join(str(s['K_max']) for s in pick)})")
    out.append("Mean K per layer pair at each cell's first, middle and last checkpoint: "
               + "; ".join(grow) + ".")
    late = {n: late_growth(c) for n, c in rec["cells"].items()}
    late = {n: x for n, x in late.items() if x is not None}
    if late:
        out.append("Late in training (from the latest checkpoint at a quarter of the last "
                   "one's tokens to the last), each pair's K as the test reads it (its largest "
                   "over "
                   "layer pairs, the smaller of its two directions'): "
                   + "; ".join(f"{n}: {x[1][0]} ({x[1][1]:+.2f} ± {x[1][2]:.2f} from "
                               f"{tokens_text(x[0]['tokens'])})" for n, x in late.items())
                   + (": the law's slope, fitted over every checkpoint, still extrapolates "
                      "growth, which is conservative if K has stopped growing."
                      if all(x[1][0] != "grows" for x in late.values()) else "."))
    running = [f"{n} (step {max(st['step'] for st in c['steps'].values()):,} of "
               f"{c['schedule_steps']:,})" for n, c in fitted.items()
               if max(st["step"] for st in c["steps"].values()) < c["schedule_steps"]]
    if running:
        ended = len(running) < len(fitted)
        out.append(f"Still training: {_list(running)}, before the annealing end of a cosine "
                   f"learning-rate schedule" + (
                       "; the other cells' last checkpoints end their schedules, so between "
                       "cells tokens and the schedule's phase are confounded." if ended else
                       "."))
    fails = []
    for n, c in fitted.items():
        bad = [r for r in default_rates(c) if r["level"]["rejected"]]
        if bad:
            fails.append(f"{n}: " + ", ".join(f"{r['rate']['rate']:.0%} at "
                                              f"{tokens_text(r['tokens'])}" for r in bad))
    out.append(f"A constant slack fitted on short training (the level table's "
               f"{SHORT_CELLS_SLACK}) " + (
                   "calls unrelated pairs related beyond its level: " + "; ".join(fails) + "."
                   if fails else "keeps its level at every checkpoint measured so far."))
    for n, xs in j["cross"].items():
        last = xs[-1]
        rej = sum(r["level"]["rejected"] for r in xs)
        out.append(f"Seeds of {n} against seeds of {last['with']} (different text): mean K "
                   f"per layer pair {last['K_mean']:.2f} at {tokens_text(last['tokens'])}; "
                   f"judged on both cells' held-out halves at the law's slack, the level is "
                   f"rejected at {rej} of {len(xs)} checkpoints ("
                   f"{sum(r['rate']['rejections'] for r in xs)} of "
                   f"{sum(r['rate']['pairs'] for r in xs)} pair tests called related).")
    if law["form"] == "constant":
        out.append(f"The law is fitted with one intercept per cell; K does not grow detectably "
                   f"on the common slope ({law['slope']:+.2f} ± {law['slope_se']:.2f} units per "
                   f"decade), so the tokens term is the largest fitted slack, a constant.")
    else:
        own = law["cell_slopes"]
        size = ("the common slope's" if law["slope_from"] == "common" else
                f"the steepest cell's ({law['slope_from']}, {law['slope']:.1f} ± "
                f"{law['slope_se']:.1f})")
        others = ", ".join(f"{n} {b:.1f}" for n, b in own.items() if n != law["slope_from"])
        het = law.get("heterogeneity_p")
        out.append(f"The law is fitted with one intercept per cell; whether K grows is decided "
                   f"on the common slope, one-sided t at 95 % (a cell's checkpoints are the "
                   f"same seeds, not independent points, so the t test errs towards declaring "
                   f"growth: the conservative side for the level); its size is {size}"
                   + (f"; the other cells' own slopes: {others}" if others else "")
                   + (f"; an F test of separate slopes against one gives p {het:.2f}"
                      if het == het and het is not None else "") + ".")
    judged = []
    for n, rows in j["cells"].items():
        c = rec["cells"][n]
        held = halves(c["seeds"])[1] if in_fit(c) else c["seeds"]
        rej = sum(r["level"]["rejected"] for r in rows)
        hits = sum(r["rate"]["rejections"] for r in rows)
        pairs = sum(r["rate"]["pairs"] for r in rows)
        judged.append(f"{n}: rejected at {rej} of {len(rows)} checkpoints ({hits} of {pairs} "
                      f"held-out pair tests called related; {len(held)} held-out models, "
                      f"power {level_rule.power(POWER_RATE, 0.01, len(held), 1):.3f} against "
                      f"a {POWER_RATE:.0%} rate)")
    out.append("Judged on the held-out halves at every checkpoint, by the level rule (low power "
               "at these few models): " + "; ".join(judged) + ".")
    pl = j.get("pooled")
    if pl:
        out.append(f"Pooled over every cell and checkpoint ({pl['models']} held-out models), "
                   f"{pl['rate']['rejections']} of {pl['rate']['pairs']} held-out pair tests "
                   f"are called related; the level is "
                   + ("rejected" if pl["level"]["rejected"] else "not rejected")
                   + f", by a rule that flags a true {POWER_RATE:.0%} rate with probability "
                   f"{pl['power']['persistent']:.2f} to {pl['power']['independent']:.2f} "
                   f"(each pair's outcome the same at every checkpoint, or independent along "
                   f"training)." + near_text(j))
    over = above_slack(j, rec)
    if over:
        out.append("The slack is a calibration, not a bound on every pair: the largest K of "
                   "any pair exceeds it at " + ", ".join(
                       f"{o['cell']} at {tokens_text(o['tokens'])} ({o['K_max']} > "
                       f"{o['slack']}; {o['rate']['rejections']} of {o['rate']['pairs']} of "
                       f"the cell's pairs called related there)" for o in over)
                   + ": the p-value, P(K >= K_obs - slack), weighs the units above the slack "
                     "against chance matches.")
    width_sets = [f"{n} at {tokens_text(r['tokens'])}" for n, rows in j["cells"].items()
                  for r in rows if r["slack"] == math.ceil(law["share"] * rec["cells"][n]["units"]
                                                           - TOL)
                  and r["slack"] > math.ceil(law["intercept"] + law["slope"]
                                             * math.log10(r["tokens"]) - TOL)]
    if width_sets:
        out.append(f"The width term ({law['share_units']} of {law['share_of']:,} units) sets the "
                   f"slack at {len(width_sets)} of the (cell, checkpoint)s, so those test the "
                   f"largest fitted share more than the growth.")
    out.append(width_text(rec, summ))
    m = MATCHED_SLACK_MEASURED
    top = max(c["tokens"] for c in m)
    out.append(f"Extrapolated: every model trained longer than {tokens_text(top)} tokens, "
               f"which is every released model (SmolLM2-135M saw "
               f"{tokens_text(SMOLLM2_TOKENS)}, {_times(SMOLLM2_TOKENS / top)} as many); and "
               f"every model that no one measured cell matches or exceeds in tokens, MLP width "
               f"and depth together (measured, cell by cell: {shapes_text(m)}; the width of one "
               f"cell and the depth of another do not combine), which the verdict line names.")
    if law["form"] != "constant" and law["slope_df"] > 0:
        hi = law["slope"] + stats.t.ppf(0.95, law["slope_df"]) * law["slope_se"]
        # the envelope refitted at that slope: the smallest intercept covering every point
        points = [(math.log10(r["tokens"]), r["fit_slack"]) for n, rows in summ.items()
                  if n in fitted for r in rows]
        c_hi = max(y - hi * x for x, y in points)
        u_hi = math.ceil(c_hi + hi * math.log10(MATCHED_TOKENS_ASSUMED) - TOL)
        out.append(f"The extrapolation is a point estimate: at the slope's one-sided 95 % upper "
                   f"bound ({hi:.1f} per decade) the tokens term at "
                   f"{MATCHED_TOKENS_ASSUMED / 1e12:g} T tokens would be {u_hi}, not "
                   f"{law_slack_tokens(law)}.")
    todo = under_way(rec)
    if todo:
        out.append("Cells under way: " + "; ".join(todo) + ".")
    return textwrap.fill(" ".join(out), 100, break_on_hyphens=False, break_long_words=False)


def near_text(j: dict) -> str:
    """How close the held-out pairs came to the law's slack: a pair can be called related only
    where its K exceeds the slack in some layer pair."""
    rows = [(n, r) for n, rs in j["cells"].items() for r in rs]
    if not rows:
        return ""
    opened = [(n, r) for n, r in rows if r["K_max"] > r["slack"]]
    if opened:
        return (f" Some held-out pair's K exceeds the slack in some layer pair at "
                f"{len(opened)} of the {len(rows)} (cell, checkpoint)s.")
    n, near = min(rows, key=lambda x: (x[1]["slack"] - x[1]["K_max"], x[1]["tokens"]))
    gap = near["slack"] - near["K_max"]
    close = (f"reaches it, {n} at {tokens_text(near['tokens'])}" if gap == 0 else
             f"{gap} unit{'' if gap == 1 else 's'} below it, is {n} at "
             f"{tokens_text(near['tokens'])}")
    return (f" No held-out pair's K (the smaller of its two directions' largest) exceeds the "
            f"slack at any (cell, checkpoint), where alone a pair can be called related "
            f"(elsewhere its p is 1): the 0 says that the law's slack is at or above every "
            f"held-out pair's shared units; the closest {close}.")


def width_text(rec: dict, summ: dict) -> str:
    """What sets the default for wide models: the width term, independent of T below the
    tokens term's reach, against what the widest fitted cell's seeds share."""
    d = MATCHED_SLACK_LAW
    u = law_units(MATCHED_TOKENS_ASSUMED, 1, d)
    cells = {n: c for n, c in rec["cells"].items() if in_fit(c) and summ.get(n)}
    if not cells:
        return ""
    n = max(cells, key=lambda n: (cells[n]["units"], -cells[n]["layers"]))
    c, last = cells[n], summ[n][-1]
    top = k_max(c["steps"][str(last["step"])]["pairs"])
    return (f"Above MLP width {_widest_at(d, u):,} the width term sets the default at any T up "
            f"to the assumed {MATCHED_TOKENS_ASSUMED / 1e12:g} T (SmolLM2-135M's F = 1,536: "
            f"{law_units(MATCHED_TOKENS_ASSUMED, 1536, d)}; Gemma 3 "
            f"270M's F = 2,048: {law_units(MATCHED_TOKENS_ASSUMED, 2048, d)}): it takes the "
            f"largest share fitted on a narrow cell to hold at every width, an assumption; the "
            f"widest cell ({n}, F = {c['units']:,}) fitted a slack of {last['fit_slack']} at "
            f"{tokens_text(last['tokens'])} tokens, its pairs' largest K {top}, where "
            f"the width term gives {law_units(last['tokens'], c['units'], d)}.")


def law_slack_tokens(law: dict) -> int:
    """The fit's tokens term at the assumed tokens."""
    return math.ceil(law["intercept"] + law["slope"] * math.log10(MATCHED_TOKENS_ASSUMED) - TOL)


def under_way(rec: dict) -> list[str]:
    """The long cells (experiments/lineage/level_long.py) not yet measured to their last stage's
    step: what each is and how far it is."""
    last = {}
    for cell, step in LL.STAGES:
        last[cell] = max(step, last.get(cell, 0))
    out = []
    for cell, spec in LL.CELLS.items():
        stop = last.get(cell, spec.run.steps)
        c = rec["cells"].get(cell)
        done = max((int(s) for s in c["steps"]), default=0) if c else 0
        if done < stop:
            where = "a GPU's cell" if spec.device == "gpu" else "on a CPU"
            out.append(f"{cell} ({where}) measured to step {done:,} of {stop:,}" if done else
                       f"{cell} ({where}) not measured yet, to step {stop:,}")
    return out
