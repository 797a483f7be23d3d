"""RESULTS.md's section on the matched leg's level along training (beyond the paper): pure
functions of the long cells' record (:mod:`experiments.lineage.level_long_law` computes what
the rows read).

Rules (each can fail; tests/test_level_long.py gives records that pass and fail them):

  * growth, per cell: each pair's largest K over its layer pairs (what the slack must cover)
    at the last checkpoint minus at the first, with a delete-one-model jackknife standard error
    over the cell's models (pairs share models); "grows" when the mean difference exceeds
    t_{0.975, M-1} standard errors, "shrinks" when it is below minus that, "no change detected"
    otherwise; the mean over layer pairs and each layer's difference are stated beside it;
  * late growth, per cell with a checkpoint after its first and at most a quarter of its last
    one's tokens: the same rule between the latest such checkpoint and the last;
  * the law: fitted on the first halves of the seeds, judged on the second halves at every
    cell and checkpoint (and on the different-text pairs) by the level rule; the row counts
    the (cell, checkpoint)s where the level is rejected and states the rule's power;
  * the attention test between unrelated trained seeds: its rejection rate at alpha over every
    pair of a cell at each checkpoint, by the level rule; the row counts the checkpoints where
    the level is rejected;
  * the level table's slack (fitted on models trained 0.26 M tokens, the default until the
    law) at each checkpoint, by the level rule; the row counts where it fails;
  * the held-out loss where a cell's checkpoints end: each seed's relative drop per doubling of
    tokens over the last two checkpoints; "plateaued" when the mean's 95 % interval lies below
    1 %, "still falling" when above, "undecided" otherwise; the row says whether the cell's
    schedule ended there (the budget, not a plateau, when the loss still falls);
  * the toolkit's law against this fit: the default (``defaults.MATCHED_SLACK_LAW``) is this
    record's fit when its constants agree to their stated digits and its slack is the fit's at
    every measured (tokens, width); else the row says the default is stale. Beyond what was
    measured (more tokens, wider or deeper models) the law is an extrapolation, which the row
    names.

Every row's verdict is "beyond the paper" (the paper has no such claim) or "measured"; the
rule's outcome is in the row.
"""

from __future__ import annotations

import math

import numpy as np

from bornbiased_jax.defaults import MATCHED_SLACK_LAW, MATCHED_TOKENS_ASSUMED
from bornbiased_jax.fingerprint.methods.trained_slack import (TOL, law_terms, law_units,
                                                             shapes_text)
from bornbiased_jax.stats import t_quantile
from bornbiased_jax.verdicts import BEYOND, MEASURED, Claim, table
from experiments.common.level_fit import SHORT_CELLS_SLACK, default_rates, k_decisive
from experiments.lineage import LONG_TITLE
from experiments.lineage.level_long_law import (PLATEAU, POWER_RATE, above_slack, judge,
                                                law_slack, loss_trend)


def _tokens(t: float) -> str:
    return f"{t / 1e6:.2f} M" if t < 1e9 else f"{t / 1e9:.2f} B"


def growth(first: list[dict], last: list[dict], stat: str | int = "max",
           q: float = 0.975) -> tuple[str, float, float, int]:
    """(state, mean difference, jackknife se, models) of a pair statistic between two
    checkpoints of the same pairs (module docstring): ``stat`` "max", each pair's K as the
    test reads it (``level_fit.k_decisive``: its largest over layer pairs, the smaller of its
    two directions'), what the slack must cover; "mean", the B direction's mean over layer
    pairs; or a layer's index, that layer's K (B direction). "grows" beyond t_{q, M-1}
    standard errors; ("no pairs", nan, nan, 0) without common pairs."""
    key = lambda p: (p["a"], p["b"])  # noqa: E731

    def value(p):
        if stat == "max":
            return float(k_decisive(p))
        Ks = [K for K, _, _ in p["dir_b"]]
        return float(np.mean(Ks) if stat == "mean" else Ks[stat])

    k0 = {key(p): value(p) for p in first}
    d = {key(p): value(p) - k0[key(p)] for p in last if key(p) in k0}
    if not d:
        return "no pairs", math.nan, math.nan, 0
    models = sorted({m for k in d for m in k})
    mean = float(np.mean(list(d.values())))
    loo = np.array([np.mean([v for k, v in d.items() if m not in k]) for m in models])
    M = len(models)
    se = float(np.sqrt((M - 1) / M * ((loo - loo.mean()) ** 2).sum())) if M > 2 else np.nan
    half = t_quantile(M - 1, q) * se if M > 2 else np.inf
    state = ("grows" if mean > half else "shrinks" if mean < -half else "no change detected")
    return state, mean, se, M


def detectable(se: float, M: int) -> float:
    """About the smallest difference :func:`growth`'s two-sided 95 % rule sees with probability
    0.8: (t_{0.975} + t_{0.8}) standard errors on M - 1 degrees of freedom (from the observed
    standard error); inf below 3 models."""
    return (t_quantile(M - 1) + t_quantile(M - 1, 0.8)) * se if M > 2 else np.inf


def unseen(state: str, se: float, M: int) -> str:
    """' (a rise of about 1.25 would be seen with probability 0.8)' where the rule found no
    growth and has the models to say; '' otherwise."""
    if state == "grows" or not np.isfinite(detectable(se, M)):
        return ""
    return f" (a rise of about {detectable(se, M):.2f} would be seen with probability 0.8)"


def growth_text(first: list[dict], last: list[dict]) -> str:
    """'largest K per pair +0.81 ± 0.46; mean over layer pairs +0.02 ± 0.28; by layer: 0 +0.82
    ± 0.46, 1 -0.78 ± 0.27' (differences, jackknife standard errors)."""
    if not first or not last:
        return "no pairs"
    L = len(first[0]["dir_b"])
    g = {s: growth(first, last, s) for s in ("max", "mean", *range(L))}
    return (f"each pair's K as the test reads it {g['max'][1]:+.2f} ± {g['max'][2]:.2f}"
            f"; mean over layer pairs {g['mean'][1]:+.2f} ± {g['mean'][2]:.2f}; by layer: "
            + ", ".join(f"{i} {g[i][1]:+.2f} ± {g[i][2]:.2f}" for i in range(L))
            + f" (differences, jackknife over {g['max'][3]} models)")


RULE = ("rule: each pair's K as the test reads it (its largest over layer pairs, the smaller of "
        "its two directions': the statistic the slack must cover; a mean over layers can hide "
        "the layer that shares most), the difference beyond t_0.975,{df} jackknife standard "
        "errors over the {M} models")


def late_growth(cell: dict):
    """(the checkpoint, :func:`growth`) between a cell's latest checkpoint with at most a
    quarter of its last one's tokens, if that is not its first, and its last; None
    otherwise."""
    steps = sorted(cell["steps"].values(), key=lambda st: st["step"])
    if len(steps) < 3:
        return None
    last = steps[-1]
    mid = [st for st in steps[1:-1] if 4 * st["tokens"] <= last["tokens"]]
    if not mid:
        return None
    return mid[-1], growth(mid[-1]["pairs"], last["pairs"])


def attention_above(att: list[dict]) -> str:
    """The clause naming the checkpoints where the attention test's observed rate among
    unrelated seeds is above alpha (not significantly, where the rule did not reject), the
    largest with its rate against the power's alternative; '' where none is."""
    from bornbiased_jax.fingerprint.methods.result import ALPHA

    above = [s for s in att if s["attention"]["rate"]["rate"] > ALPHA]
    if not above:
        return ""
    top = max(above, key=lambda s: s["attention"]["rate"]["rate"])
    r = top["attention"]["rate"]["rate"]
    return (f"; the observed rate is above alpha at {len(above)} of {len(att)} checkpoints, "
            f"the largest {r:.1%} at {_tokens(top['tokens'])} tokens"
            + (f", above the {POWER_RATE:.0%} the power is stated against" if r > POWER_RATE
               else "") + ": not rejected is not shown to hold")


def schedule_note(cell: dict) -> str:
    """'' when a cell's last checkpoint ends its schedule; else the clause saying that the end
    of its learning-rate decay is not measured yet."""
    last = max(st["step"] for st in cell["steps"].values())
    if last >= cell["schedule_steps"]:
        return ""
    return (f"; its last checkpoint is at step {last:,} of its {cell['schedule_steps']:,}-step "
            f"schedule, whose learning rate decays (cosine) to the end: K where the decay ends "
            f"is not measured yet, and between cells tokens are confounded with the schedule's "
            f"phase (a cell whose schedule ended is annealed at its last checkpoint)")


def _rate(r: dict) -> str:
    return f"{r['rejections']}/{r['pairs']} ({r['rate']:.1%})"


def _ci(r: dict) -> str:
    """' [95 % CI 0.0%-12.3%]' from a rate's Clopper-Pearson interval, '' without one."""
    lo, hi = r.get("ci95", (None, None))
    return "" if lo is None else f" [95 % CI {lo:.1%}-{hi:.1%}]"


def _per_step(cell: dict) -> int:
    """Tokens per model per step, from a checkpoint's tokens and step."""
    st = next(iter(cell["steps"].values()))
    return st["tokens"] // st["step"]


def default_claim(name: str, cell: dict) -> Claim:
    """Whether the level table's slack holds its level among a cell's unrelated same-data
    seeds at each checkpoint (:func:`experiments.common.level_fit.default_rates`)."""
    rows = default_rates(cell)
    bad = [r for r in rows if r["level"]["rejected"]]
    return Claim(
        f"The level table's slack ({SHORT_CELLS_SLACK}, the default before the law) between "
        f"unrelated same-data seeds, {name}", "- (beyond the paper)",
        "; ".join(f"{_tokens(r['tokens'])} tokens: {_rate(r['rate'])} rejected at alpha = 0.01"
                  for r in rows), BEYOND,
        f"rule: the rate over every pair of the {len(cell['seeds'])} seeds by the level rule "
        f"(one-sided jackknife t over the models); rejected at {len(bad)} of {len(rows)} "
        f"checkpoints" + (f" ({', '.join(_tokens(r['tokens']) for r in bad)}): a constant "
                          f"slack fitted on short training does not hold its level there, which "
                          f"is why the default is a law of training length"
                          if bad else ": it holds its level at every checkpoint"))


def plateau_claim(name: str, t: dict, schedule: int) -> Claim:
    """Whether a cell's held-out loss has plateaued where its checkpoints end, and what ended
    its training (:func:`experiments.lineage.level_long_law.loss_trend`)."""
    why = (f"its schedule ended at step {t['to']:,}"
           + (" with the loss still falling: the budget stopped it, not a plateau"
              if t["state"] == "still falling" else "")
           if t["training"] == "ended" else f"under way: step {t['to']:,} of {schedule:,}")
    return Claim(
        f"Has the held-out loss plateaued? {name}", "- (beyond the paper)",
        f"validation loss {t['loss_from']:.3f} at {_tokens(t['tokens_from'])} tokens (step "
        f"{t['from']:,}) -> {t['loss_to']:.3f} at {_tokens(t['tokens_to'])} tokens (step "
        f"{t['to']:,}): down {t['drop']:.2%} ± {t['se']:.2%} per doubling of tokens (mean over "
        f"{t['seeds']} seeds ± its standard error)", BEYOND,
        f"rule: plateaued when the drop per doubling is below {PLATEAU:.0%} at its 95 % upper "
        f"bound (t over the seeds), still falling when above {PLATEAU:.0%} at its lower bound, "
        f"undecided otherwise; {t['state']}; {why}")


def cell_claims(name: str, cell: dict, rows: list[dict], law_rows: list[dict]) -> list[Claim]:
    shape = (f"F = {cell['units']:,}, {cell['layers']} layers, d = {cell['d_model']}, "
             f"{len(cell['seeds'])} seeds, {', '.join(cell['corpus'])}")
    steps = sorted(cell["steps"], key=int)
    along = "; ".join(
        f"{_tokens(s['tokens'])} tokens (step {s['step']:,}"
        + (f", val loss {s['val_loss']:.2f}" if s["val_loss"] is not None else "")
        + f"): K mean {s['K_mean']:.2f}, q99 {s['K_q99']:.0f}, max {s['K_max']}, K/F "
        f"{s['K_over_F']:.4f}, by layer {', '.join(f'{k:.2f}' for k in s['K_by_layer'])}; "
        f"rejected at slack 0 {_rate(s['rate_slack0'])}; fitted slack {s['fit_slack']}"
        for s in rows)
    out = [Claim(f"Shared units of unrelated same-data seeds along training, {name} [{shape}]",
                 "- (beyond the paper)", along, MEASURED,
                 f"K: doubly matched units per suspect layer and the base layer it chose, every "
                 f"pair of the cell's seeds at each checkpoint; slack fitted on the first half")]
    if len(steps) > 1:
        first, last = cell["steps"][steps[0]], cell["steps"][steps[-1]]
        state, d, se, M = growth(first["pairs"], last["pairs"])
        out.append(Claim(
            f"Does K grow with training? {name} [{_tokens(first['tokens'])} -> "
            f"{_tokens(last['tokens'])} tokens]", "- (beyond the paper)",
            f"mean K per layer {rows[0]['K_mean']:.2f} -> {rows[-1]['K_mean']:.2f}; "
            + growth_text(first["pairs"], last["pairs"]), BEYOND,
            RULE.format(df=M - 1, M=M) + f"; {state}" + unseen(state, se, M)))
        late = late_growth(cell)
        if late is not None:
            mid, (state, d, se, M) = late
            out.append(Claim(
                f"Does K still grow late in training? {name} [{_tokens(mid['tokens'])} -> "
                f"{_tokens(last['tokens'])} tokens]", "- (beyond the paper)",
                "over the last two doublings of tokens or more: "
                + growth_text(mid["pairs"], last["pairs"]), BEYOND,
                RULE.format(df=M - 1, M=M) + ", between the latest checkpoint at most a "
                f"quarter of the last one's tokens (and after the first) and the last; {state}"
                + unseen(state, se, M)
                + ("; the law's slope, fitted over every checkpoint, still extrapolates growth, "
                   "which is conservative if K has stopped growing" if state != "grows"
                   else "") + schedule_note(cell)))
    last_over = rows[-1]["overlap"]
    if last_over:
        o = last_over
        out.append(Claim(
            f"What the two views share, {name} at {_tokens(rows[-1]['tokens'])} tokens",
            "- (beyond the paper)",
            f"per layer of {cell['units']:,} units (means over pairs): reciprocal partners in "
            f"the gate view {o['gate']:.1f}, in the up view {o['up']:.1f}, in both "
            f"{o['both']:.1f}, the same unit in both (K) {o['K']:.2f}; partners with |r| > 0.5: "
            f"gate {o['gate_hi']:.1f}, up {o['up_hi']:.1f}, both {o['both_hi']:.1f}, of K "
            f"{o['K_hi']:.2f}; units correlated above 0.5 with some unit of the other model "
            f"(gate view) {o['gate_any_hi']:.1f}", MEASURED,
            "how many of the units that match in one view also match in the other: the "
            "double matching's share in keeping shared (universal) units out of K"))
    att = [s for s in rows if s.get("attention")]
    if att:
        bad = [s for s in att if s["attention"]["level"]["rejected"]]
        out.append(Claim(
            f"The attention test between unrelated same-data seeds, {name}",
            "- (beyond the paper)",
            "; ".join(f"{_tokens(s['tokens'])} tokens: {_rate(s['attention']['rate'])} rejected "
                      f"at alpha = 0.01; doubly matched heads {s['attention']['K_mean']:.1f} of "
                      f"{s['attention']['heads']} (null mean {s['attention']['null_mean']:.1f})"
                      for s in att), BEYOND,
            f"rule: the rate at alpha over every pair (the larger p of the two re-pairings) by "
            f"the level rule (one-sided jackknife t over the {len(cell['seeds'])} models); "
            f"rejected at {len(bad)} of {len(att)} checkpoints"
            + (f" ({', '.join(_tokens(s['tokens']) for s in bad)})" if bad else "")
            + f"; the rule flags a true rate of {POWER_RATE:.0%} with probability "
            f"{att[0]['attention']['power']:.2f}" + attention_above(att)
            + "; the test stays out of every verdict until its level holds"))
    trend = loss_trend(cell)
    if trend:
        out.append(plateau_claim(name, trend, cell["schedule_steps"]))
    out.append(default_claim(name, cell))
    rej = [r for r in law_rows if r["level"]["rejected"]]
    out.append(Claim(
        f"The law's slack held out, {name}", "- (beyond the paper)",
        "; ".join(f"{_tokens(r['tokens'])} tokens: slack {r['slack']}, largest held-out K "
                  f"{r['K_max']}, {_rate(r['rate'])} rejected{_ci(r['rate'])}"
                  for r in law_rows), BEYOND,
        ("rule: the held-out seeds' rate" if cell.get("in_fit", True) else
         "rule: the rate over every pair of the cell's seeds (the cell is not in the law's "
         "fit)") + f" at alpha = 0.01 (one-sided jackknife t over the "
        f"models; the 95 % Clopper-Pearson intervals count the pairs as independent, which "
        f"they are not: too narrow); rejected at {len(rej)} of {len(law_rows)} checkpoints"
        + (f" ({', '.join(_tokens(r['tokens']) for r in rej)})" if rej else "")
        + f"; the rule flags a true rate of {POWER_RATE:.0%} with probability "
        f"{law_rows[0]['power']:.2f} at this many held-out models" + margin_text(law_rows)
        if law_rows else ""))
    return out


def margin_text(law_rows: list[dict]) -> str:
    """How close the held-out pairs came to the slack: a pair can be called related only where
    its K exceeds the slack in some layer pair (else its p is 1)."""
    near = min(law_rows, key=lambda r: (r["slack"] - r["K_max"], r["tokens"]))
    opened = [r for r in law_rows if r["K_max"] > r["slack"]]
    gap = near["slack"] - near["K_max"]
    return (f"; a held-out pair can be called related only where its K (the smaller of its two "
            f"directions' largest) exceeds the slack: " + (
                f"at {len(opened)} of {len(law_rows)} checkpoints some pair's does (smallest "
                f"held-out p {min(r['p_min'] for r in opened):.2g})" if opened else
                f"no held-out pair's does at any checkpoint (every held-out p is 1); the "
                f"closest " + (f"reaches it at {_tokens(near['tokens'])} tokens" if gap == 0
                               else f"is {gap} unit{'' if gap == 1 else 's'} below it at "
                                    f"{_tokens(near['tokens'])} tokens")))


def claims(record: dict) -> list[Claim]:
    rec = record["records"]
    j = judge(rec)
    law = j["law"]
    out = []
    for name, cell in rec["cells"].items():
        out += cell_claims(name, cell, j["summaries"][name], j["cells"][name])
        if j["cross"].get(name):
            xs = j["cross"][name]
            rej = [r for r in xs if r["level"]["rejected"]]
            out.append(Claim(
                f"Unrelated seeds trained on different text: {name} against "
                f"{xs[0]['with']}, same step", "- (beyond the paper)",
                "; ".join(f"{_tokens(r['tokens'])} tokens: K mean {r['K_mean']:.2f}, max "
                          f"{r['K_max']}; at slack 0 {_rate(r['rate_slack0'])}; held out at "
                          f"the law's {r['slack']}: {_rate(r['rate'])}" for r in xs), BEYOND,
                f"rule: the level rule on the held-out halves of both cells; rejected at "
                f"{len(rej)} of {len(xs)} checkpoints"))
    if j.get("pooled"):
        out.append(pooled_claim(j["pooled"]))
    lo, hi = j["tokens_range"]
    at_hi = ", ".join(f"{law_slack(law, hi, w)} units at F = {w:,}" for w in j["widths"])
    form = ("a constant: K does not grow detectably with tokens (slope "
            f"{law['slope']:+.2f} ± {law['slope_se']:.2f} units per decade)"
            if law["form"] == "constant" else
            f"ceil({law['intercept']:.2f} + {law['slope']:.2f} log10 T) (slope "
            f"± {law['slope_se']:.2f}" + slope_source(law) + ")")
    form = (f"u(T, F) = max({form}, ceil({law['share']:.4f} F)), the width term the largest "
            f"fitted share ({law['share_units']} of {law['share_of']:,} units)")
    over = above_slack(j, rec)
    over_text = ("; the largest K of any pair exceeds the law's slack at "
                 + ", ".join(f"{o['cell']} at {_tokens(o['tokens'])} ({o['K_max']} > "
                             f"{o['slack']}; every pair of the cell there: {_rate(o['rate'])} "
                             f"called related)" for o in over)
                 + " (the slack is the smallest at which the fitted halves reject at most "
                   "alpha, not a bound on every pair's shared units)" if over else
                 "; no pair of a fitted cell shares more units in a layer pair than the law's "
                 "slack there")
    current = toolkit_is_fit(law, rec)
    by_tokens, wide = law_terms(MATCHED_TOKENS_ASSUMED, 1536, MATCHED_SLACK_LAW)
    assumed = (f"{max(by_tokens, 0)} units per layer pair (its tokens term) up to MLP width "
               f"{int((by_tokens + TOL) / MATCHED_SLACK_LAW['share']):,}, the width term beyond"
               f" ({wide} at MLP width 1,536)" if wide > by_tokens else
               f"{law_units(MATCHED_TOKENS_ASSUMED, 1536, MATCHED_SLACK_LAW)} units per layer "
               f"pair at MLP width 1,536")
    out.append(Claim(
        "The slack as a law of training length, and the default", "- (beyond the paper)",
        f"fitted on {law['points']} (cell, checkpoint) first halves: {form}; at "
        f"{_tokens(hi)} tokens: {at_hi}; the default (`bornbiased fingerprint`, two "
        f"trained models): the toolkit's law at --trained-tokens, else at "
        f"{MATCHED_TOKENS_ASSUMED / 1e12:g} T tokens assumed: {assumed}{over_text}", BEYOND,
        ("the toolkit's default is this fit" if current else
         "the toolkit's default (defaults.MATCHED_SLACK_LAW) is not this fit: stale, refit it")
        + f"; measured on {_tokens(lo)}-{_tokens(hi)} tokens per model, cell by cell: "
        f"{shapes_text(j['measured'])}; beyond these (models trained on billions or trillions "
        f"of tokens, or a width and a depth no one cell reached together at those tokens) the "
        f"slack is an extrapolation"))
    return out


def pooled_claim(pl: dict) -> Claim:
    """The law's slack held out, every cell and checkpoint pooled (level_long_law.pool)."""
    r, pw = pl["rate"], pl["power"]
    return Claim(
        "The law's slack held out, every cell and checkpoint pooled", "- (beyond the paper)",
        f"{_rate(r)} held-out pair tests called related at alpha = 0.01, over "
        f"{pl['models']} held-out models of {pl['cells']} cells (models x checkpoints: "
        f"{', '.join(f'{m} x {c}' for m, c in pl['blocks'])}); some held-out pair's K (the "
        f"smaller of its two directions' largest) exceeds the slack at {len(pl['open'])} of the "
        f"{pl['checkpoints']} (cell, "
        f"checkpoint)s" + (f" ({', '.join(f'{n} at {_tokens(t)}' for n, t in pl['open'])})"
                           if pl["open"] else "") + ", elsewhere every held-out p is 1", BEYOND,
        f"rule: the level rule (one-sided jackknife t over the {pl['models']} models); "
        + ("rejected: the law does not hold its level on held-out seeds" if
           pl["level"]["rejected"] else "not rejected")
        + f"; the rule flags a true rate of {POWER_RATE:.0%} with probability "
        f"{pw['independent']:.2f} if a pair's outcomes at its checkpoints are independent, "
        f"{pw['persistent']:.2f} if each pair's is the same at every checkpoint (the truth "
        f"lies between: a pair's K is correlated along training)"
        + ("; no held-out pair's K exceeds the slack anywhere, so the 0 says that the law's "
           "slack is at or above every held-out pair's shared units, not more"
           if not pl["open"] else ""))


def slope_source(law: dict) -> str:
    """', the steepest cell's (L2-F344-long), cells' own slopes 6.31, 1.66; separate slopes
    against one: F test p 0.17' (or the common slope's), '' for one cell."""
    own = law.get("cell_slopes") or {}
    if len(own) < 2:
        return ""
    src = ("the common slope over cells" if law.get("slope_from", "common") == "common" else
           f"the steepest cell's ({law['slope_from']})")
    p = law.get("heterogeneity_p")
    return (f", {src}; cells' own slopes {', '.join(f'{n} {b:.2f}' for n, b in own.items())}"
            + (f"; separate slopes against one: F test p {p:.2f}" if p == p and p is not None
               else ""))


def toolkit_is_fit(law: dict, rec: dict) -> bool:
    """Whether the toolkit's law (``defaults.MATCHED_SLACK_LAW``) is ``law``, this record's
    fit: its constants within their stated digits and the same slack at every measured
    (tokens, width)."""
    d = MATCHED_SLACK_LAW
    close = (abs(d["intercept"] - law["intercept"]) < 5e-6
             and d.get("form", "log-tokens") == law["form"]
             and (abs(d["slope"] - law["slope"]) < 5e-6 if law["form"] == "log-tokens" else True))
    same = all(law_units(st["tokens"], c["units"], d) == law_units(st["tokens"], c["units"], law)
               for c in rec["cells"].values() for st in c["steps"].values())
    return bool(close and abs(d["share"] - law["share"]) < 1e-9 and same)


def k_over_f_table(record: dict) -> str:
    """K / F against tokens seen, one column per cell (the section's figure as a table)."""
    j = judge(record["records"])
    cols = list(j["summaries"])
    tokens = sorted({s["tokens"] for rows in j["summaries"].values() for s in rows})
    by = {(n, s["tokens"]): s for n, rows in j["summaries"].items() for s in rows}
    lines = ["| tokens per model | " + " | ".join(cols) + " |",
             "|---|" + "---|" * len(cols)]
    for t in tokens:
        lines.append(f"| {_tokens(t)} | " + " | ".join(
            f"{by[(n, t)]['K_over_F']:.4f} ({by[(n, t)]['K_mean']:.2f})" if (n, t) in by else "-"
            for n in cols) + " |")
    return "\n".join(lines)


def figure(record: dict):
    """K / F against tokens seen per model (log scale), one line per cell, with the law's slack
    over the width (dashed) at the same tokens: where the line stays below the dashes the
    slack covers the mean pair."""
    from bornbiased_jax import plots

    j = judge(record["records"])
    fig, ax = plots.figure(1, 1, figsize=(6, 4))
    for name, rows in j["summaries"].items():
        units = record["records"]["cells"][name]["units"]
        t = [s["tokens"] for s in rows]
        line, = ax.plot(t, [s["K_over_F"] for s in rows], "o-", label=f"{name}: mean K / F")
        ax.plot(t, [s["K_max"] / units for s in rows], "^:", color=line.get_color(),
                label=f"{name}: max K / F")
        ax.plot(t, [r["slack"] / units for r in j["cells"][name]], "--", color=line.get_color(),
                label=f"{name}: the law's slack / F")
    ax.set_xscale("log")
    ax.set_xlabel("tokens seen per model")
    ax.set_ylabel("doubly matched units per layer / F")
    ax.set_title("Unrelated same-data seeds: shared MLP units along training", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def section(record: dict | None, command: str, run_line: str) -> str:
    if record is None:
        return "\n".join([f"## {LONG_TITLE}", "",
                          f"Not measured yet: `python -m experiments.lineage_level_long "
                          f"--train` trains the long cells (resumable, about 20 CPU-hours), "
                          f"then `{command}` measures every kept checkpoint."])
    cells = record["records"]["cells"]
    lines = [f"## {LONG_TITLE}", "",
             f"Generated from results/records/lineage_level/lineage_level_long.json "
             f"(`{command}`, run on {run_line}). Cells: seeds trained on identical data in one "
             f"program with checkpoints at geometric steps (experiments/lineage/level_long.py); "
             f"the matched leg as `bornbiased fingerprint` runs it. Checkpoints measured so "
             f"far: " + "; ".join(
                 f"{n}: steps {', '.join(sorted(c['steps'], key=int))} of "
                 f"{c['schedule_steps']:,}, {_per_step(c):,} tokens a step"
                 + ("" if c.get("in_fit", True) else ", not in the law's fit")
                 for n, c in cells.items()) + ".", "",
             table(claims(record)), "",
             "K / F (mean K per layer in brackets) against tokens seen per model (`--measure` "
             "also draws it, with each pair's largest K and the law's slack over F, in "
             "results/lineage_level/lineage_level_long.png):", "",
             k_over_f_table(record)]
    return "\n".join(lines)
