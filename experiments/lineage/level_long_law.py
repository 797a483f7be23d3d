"""The matched leg's slack as a law of training length (beyond the paper): pure functions of the
long cells' record (:mod:`experiments.lineage.level_long_measure`).

Per cell and checkpoint (:func:`step_summary`): the shared units K of every pair's suspect
layers (the B direction: each layer of one model with the layer of the other it chose), their
mean, high quantiles and maximum, K / F, per layer; what the two views share
(:func:`~bornbiased_jax.fingerprint.methods.unit_overlap.view_overlap`, means over pairs and
layers); the rejection rate at slack 0; and the slack fitted on the first half of the seeds
(:func:`experiments.common.level_fit.fit_slack`).

The law (:func:`fit_law`), fitted on the first halves only: the fitted slacks of every cell and
checkpoint regressed on log10 tokens by least squares, with one intercept per cell and one
common slope (cells differ in how many units their seeds share: text, width, depth; the law is
about how that number grows, which a single intercept would confound with the cells'
differences). Whether K grows is decided on the common slope (one-sided t at 95 %, on the
residual degrees of freedom), so a noisy cell with few checkpoints cannot turn growth into a
constant; a cell's checkpoints are the same seeds, not independent points, so the t test's
standard error is likely too small and it errs towards declaring growth, the conservative side;
where it grows, the slope used is the larger of the common slope and every cell's own
(a cell where K grows faster sets the size: with a few checkpoints per cell, slopes that differ
cannot be told apart reliably, and the F test of separate slopes against the common one is
reported, not relied on), the conservative choice for an extrapolation. The law then grows
with training, ceil(c + b log10 T) with c the smallest intercept that covers every fitted point
of every cell (an upper envelope of slope b); otherwise K does not grow detectably and that
term is the largest fitted slack, a constant. A second term
scales with the MLP width F: s = the largest fitted slack as a share of its cell's width, so
u(T, F) = max(ceil(c + b log10 T), ceil(s F)) (``fingerprint.methods.trained_slack``, whose
constants are this fit's).
Either way the law is judged on the held-out halves (:func:`judge`): at every cell and
checkpoint the rate among the other half's pairs at u(T), by the rule of
:mod:`experiments.common.level_rule` (one-sided jackknife t over the models), with the rule's
simulated power at that many models; the different-text pairs (each model of one corpus with
each of the other, held-out halves of both) are judged at the same u(T). Each cell's few
held-out models give that rule almost no power, so it is also applied once to every held-out
pair of every cell and checkpoint pooled (:func:`pool`), with its power stated for the two
bounds of how a pair's outcomes at its checkpoints depend on one another.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from bornbiased_jax.fingerprint.methods.result import ALPHA
from bornbiased_jax.fingerprint.methods.trained_slack import law_units, pareto
from bornbiased_jax.fingerprint.runner import rejection as SM
from experiments.common import level_rule as LR
from experiments.common.level_fit import (POWER_RATE, among, fit_slack,  # noqa: F401
                                          halves, judge_rate, k_max, k_table, pair_rows, rates)
from experiments.common.level_range import long_cells

# a held-out loss falling less than this share per doubling of tokens has plateaued
# (:func:`loss_trend`)
PLATEAU = 0.01
OVERLAP_KEYS = ("gate", "up", "both", "K", "gate_hi", "up_hi", "both_hi", "K_hi", "gate_any_hi")


def step_summary(step: dict, seeds: list[int], units: int) -> dict:
    """The statistics of one cell at one checkpoint (module docstring)."""
    pairs = step["pairs"]
    K = k_table(pairs)
    fit_seeds, held = halves(seeds)
    val = step.get("val_loss")
    over = {k: float(np.mean([o[k] for p in pairs for o in p["overlap"]]))
            for k in OVERLAP_KEYS} if pairs and "overlap" in pairs[0] else {}
    return {"step": step["step"], "tokens": step["tokens"],
            "val_loss": None if not val else float(np.mean(val)),
            "pairs": len(pairs), "K_mean": float(K.mean()), "K_q90": float(np.quantile(K, 0.9)),
            "K_q99": float(np.quantile(K, 0.99)), "K_max": int(K.max()),
            "K_over_F": float(K.mean() / units), "K_by_layer": K.mean(0).round(3).tolist(),
            "overlap": over, "rate_slack0": rates(pairs, 0)[str(ALPHA)],
            "fit_slack": fit_slack(among(pairs, fit_seeds)),
            "fit_pairs": len(among(pairs, fit_seeds)), "held_seeds": held,
            "attention": attention_level(pairs, len(seeds))}


def attention_rows(pairs: list[dict]) -> list[dict]:
    """The attention test's p of each pair (the larger of its two directions: neither model is
    an initialisation), as the rate functions read it."""
    return [{"a": p["a"], "b": p["b"], "attention": 10 ** max(p["attention"]["log10_p_a"],
                                                              p["attention"]["log10_p_b"])}
            for p in pairs if "attention" in p]


def attention_level(pairs: list[dict], models: int) -> dict | None:
    """The attention test's rejection rate at alpha over ``pairs`` of unrelated trained models,
    judged by the level rule (one-sided jackknife t over the ``models``), with the doubly
    matched heads' mean against the null's; None when no pair has the test."""
    rows = attention_rows(pairs)
    if not rows:
        return None
    r = SM.rate(rows, "attention", ALPHA)
    att = [p["attention"] for p in pairs if "attention" in p]
    return {"rate": r, "level": judge_rate(r, ALPHA, models),
            "K_mean": float(np.mean([max(a["K_total_a"], a["K_total_b"]) for a in att])),
            "null_mean": float(np.mean([a["null_mean"] for a in att])),
            "heads": int(att[0]["heads"]), "power": LR.power(POWER_RATE, ALPHA, models, 1)}


def summaries(record: dict) -> dict:
    """{cell: [step_summary, ...] in step order} of the record's cells."""
    return {name: [step_summary(st, c["seeds"], c["units"])
                   for _, st in sorted(c["steps"].items(), key=lambda kv: int(kv[0]))]
            for name, c in record["cells"].items()}


def fit_law(points: list[tuple]) -> dict:
    """The law from (tokens, fitted slack, MLP width[, cell]) points (module docstring; points
    without a cell are one cell): {"form": "constant" or "log-tokens", "slope", "slope_se",
    "slope_df", "cell_slopes", "heterogeneity_p", "slope_from", "intercept", "share",
    "share_units", "share_of", "points"}."""
    x = np.log10([p[0] for p in points])
    y = np.array([p[1] for p in points], dtype=float)
    cells = [p[3] if len(p) > 3 else "" for p in points]
    names = sorted(set(cells))
    top = max(points, key=lambda p: (p[1] / p[2], p[1]))
    out = {"points": len(points), "slope": 0.0, "slope_se": math.nan, "slope_df": 0,
           "cell_slopes": {}, "heterogeneity_p": math.nan, "slope_from": "common",
           "intercept": float(y.max()), "form": "constant", "share": top[1] / top[2],
           "share_units": int(top[1]), "share_of": int(top[2])}
    D = np.column_stack([x] + [[float(c == n) for c in cells] for n in names])
    df = len(y) - D.shape[1]
    if df < 1 or np.linalg.matrix_rank(D) < D.shape[1]:
        return out
    beta, *_ = np.linalg.lstsq(D, y, rcond=None)
    rss = float(((y - D @ beta) ** 2).sum())
    slope, se = float(beta[0]), math.sqrt(rss / df * np.linalg.inv(D.T @ D)[0, 0])
    own = {}
    for n in names:
        m = np.array([c == n for c in cells])
        if m.sum() > 2 and np.ptp(x[m]) > 0:
            f = stats.linregress(x[m], y[m])
            own[n] = {"slope": float(f.slope), "se": float(f.stderr), "df": int(m.sum() - 2),
                      "rss": float(((y[m] - f.intercept - f.slope * x[m]) ** 2).sum())}
    out["cell_slopes"] = {n: round(o["slope"], 4) for n, o in own.items()}
    sep_df = sum(o["df"] for o in own.values())
    if len(own) > 1 and len(own) == len(names) and sep_df > 0:
        rss_sep = sum(o["rss"] for o in own.values())
        F = (((rss - rss_sep) / (len(own) - 1)) / (rss_sep / sep_df) if rss_sep > 0 else
             math.inf if rss > 1e-12 else 0.0)
        out["heterogeneity_p"] = float(stats.f.sf(F, len(own) - 1, sep_df))
    # growth is decided on the common slope (every cell's checkpoints); where it grows, the
    # size is the steeper of the common slope and any cell's own (the conservative size)
    t = stats.t.ppf(0.95, df)
    grows = slope > 1e-9 and (se > 1e-12 and slope / se > t or se <= 1e-12)
    out["slope"], out["slope_se"], out["slope_df"] = slope, se, int(df)
    if not grows:
        return out
    steep = max(own, key=lambda n: own[n]["slope"], default=None)
    if steep is not None and len(names) > 1 and own[steep]["slope"] > slope + 1e-9:
        out["slope"], out["slope_se"], out["slope_df"] = (own[steep]["slope"], own[steep]["se"],
                                                          own[steep]["df"])
        out["slope_from"] = steep
    out["form"] = "log-tokens"
    out["intercept"] = float(np.max(y - out["slope"] * x))
    return out


def law_slack(law: dict, tokens: float, units: int) -> int:
    """u(T, F): the law's slack at ``tokens`` and MLP width ``units``, a whole number of units
    (the toolkit's formula, ``trained_slack.law_units``; a constant law has slope 0)."""
    return law_units(tokens, units, law)


def judge(record: dict) -> dict:
    """The law fitted on the first halves and judged on the held-out halves at every cell and
    checkpoint, and on the different-text pairs: {"law", "cells": {cell: [{"step", "tokens",
    "slack", "rate", "level", "power"}]}, "cross": {...}, "tokens_range", "widths", "depths",
    "measured"} ("measured": each fitted cell's most tokens, MLP width and depth, the cells no
    other covers).
    A cell outside the fit (:func:`in_fit`) is judged on every pair of its seeds."""
    summ = summaries(record)
    points = [(s["tokens"], s["fit_slack"], record["cells"][name]["units"], name)
              for name, rows in summ.items() if in_fit(record["cells"][name]) for s in rows]
    law = fit_law(points)
    cells, cross = {}, {}
    for name, c in record["cells"].items():
        held = halves(c["seeds"])[1] if in_fit(c) else list(c["seeds"])
        rows = []
        for s in summ[name]:
            st = c["steps"][str(s["step"])]
            u = law_slack(law, s["tokens"], c["units"])
            held_pairs = among(st["pairs"], held)
            r = rates(held_pairs, u)[str(ALPHA)]
            rows.append({"step": s["step"], "tokens": s["tokens"], "slack": u, "rate": r,
                         "level": judge_rate(r, ALPHA, len(held)),
                         "power": LR.power(POWER_RATE, ALPHA, len(held), 1),
                         "K_max": k_max(held_pairs),
                         "p_min": min((x["matched"] for x in pair_rows(held_pairs, u)),
                                      default=1.0)})
            if "cross" in st:
                other = record["cells"].get(st["cross"]["with"])
                o_held = halves(other["seeds"])[1] if other else []
                pairs = [p for p in st["cross"]["pairs"] if p["a"] in o_held and p["b"] in held]
                if pairs:
                    rc = rates(pairs, u)[str(ALPHA)]
                    models = len(set(o_held) | set(held))
                    cross.setdefault(name, []).append({
                        "step": s["step"], "tokens": s["tokens"], "slack": u, "rate": rc,
                        "with": st["cross"]["with"], "level": judge_rate(rc, ALPHA, models),
                        "rate_slack0": rates(st["cross"]["pairs"], 0)[str(ALPHA)],
                        "K_mean": float(k_table(st["cross"]["pairs"]).mean()),
                        "K_max": int(k_table(st["cross"]["pairs"]).max())})
        cells[name] = rows
    fitted = {n: c for n, c in record["cells"].items() if in_fit(c)}
    tokens = [s["tokens"] for n, rows in summ.items() if n in fitted for s in rows]
    pooled = pool(record, law)
    measured = pareto(long_cells(fitted))
    return {"law": law, "summaries": summ, "cells": cells, "cross": cross, "measured": measured,
            "pooled": pooled,
            "tokens_range": [min(tokens), max(tokens)] if tokens else None,
            "widths": sorted({c["units"] for c in fitted.values()}),
            "depths": sorted({c["layers"] for c in fitted.values()})}


def loss_trend(cell: dict) -> dict | None:
    """Whether a cell's held-out loss has plateaued where its measured checkpoints end: each
    seed's relative drop in validation loss between the last two checkpoints, per doubling of
    tokens; "plateaued" when the mean drop's two-sided 95 % interval (t over the seeds) lies
    below :data:`PLATEAU`, "still falling" when it lies above, "undecided" otherwise; and
    whether the cell's schedule ended there ("ended") or goes on ("under way"). None with fewer
    than two checkpoints holding a validation loss."""
    held = sorted((st for st in cell["steps"].values() if st.get("val_loss")),
                  key=lambda st: st["step"])
    if len(held) < 2:
        return None
    a, b = held[-2], held[-1]
    la, lb = np.asarray(a["val_loss"], float), np.asarray(b["val_loss"], float)
    drop = (la - lb) / la / math.log2(b["tokens"] / a["tokens"])
    n = len(drop)
    mean = float(drop.mean())
    se = float(drop.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    half = float(stats.t.ppf(0.975, n - 1)) * se if n > 1 else math.inf
    state = ("still falling" if mean - half > PLATEAU else
             "plateaued" if mean + half < PLATEAU else "undecided")
    return {"from": a["step"], "to": b["step"], "tokens_from": a["tokens"],
            "tokens_to": b["tokens"], "loss_from": float(la.mean()), "loss_to": float(lb.mean()),
            "drop": mean, "se": se, "seeds": n, "state": state,
            "training": "ended" if b["step"] >= cell["schedule_steps"] else "under way"}


def pool(record: dict, law: dict) -> dict | None:
    """The law's slack held out, pooled: every held-out pair (the second half of each fitted
    cell's seeds, every seed of a cell outside the fit) at every checkpoint at the law's slack
    there, one rate judged by the level rule with the jackknife over all those models (each
    cell's its own: no pair across cells), and the rule's power against a
    :data:`POWER_RATE` rate when a pair's outcomes are independent across checkpoints and
    when each pair's is the same at every one (the bounds of how they depend); "open": the
    (cell, tokens) where some held-out pair's K exceeds the slack in some layer (elsewhere every
    held-out p is 1: no pair there could be called related); None without held-out pairs."""
    rows, blocks, open_ = [], [], []
    for i, (name, c) in enumerate(record["cells"].items()):
        held = halves(c["seeds"])[1] if in_fit(c) else list(c["seeds"])
        steps = [st for _, st in sorted(c["steps"].items(), key=lambda kv: int(kv[0]))]
        for st in steps:
            u = law_slack(law, st["tokens"], c["units"])
            # models of different cells are different models: their ids apart by cell
            rows += [{**r, "a": 1000 * i + r["a"], "b": 1000 * i + r["b"]}
                     for r in pair_rows(among(st["pairs"], held), u)]
            if k_max(among(st["pairs"], held)) > u:
                open_.append((name, st["tokens"]))
        if len(held) > 1 and steps:
            blocks.append((len(held), len(steps)))
    if not rows:
        return None
    r = SM.rate(rows, "matched", ALPHA)
    models = sum(m for m, _ in blocks)
    return {"rate": r, "level": judge_rate(r, ALPHA, models), "models": models,
            "cells": len(blocks), "blocks": blocks, "open": open_,
            "checkpoints": sum(c for _, c in blocks),
            "power": {dep: LR.power_blocks(POWER_RATE, ALPHA, blocks, dependence=dep)
                      for dep in ("independent", "persistent")}}


def above_slack(j: dict, record: dict) -> list[dict]:
    """The (cell, checkpoint)s where some pair of a fitted cell shares more units than the
    law's slack there, its K as the test reads it (``level_fit.k_decisive``; ``j``:
    :func:`judge`'s result): {"cell", "tokens", "K_max", "slack", "rate"} ("rate": every pair
    of the cell's at alpha at that slack). The
    slack is the smallest at which the first halves' pairs reject at most alpha, not a bound on
    every pair's K: a K a unit or two above it is not significant against chance matches, so
    such pairs need not be called related."""
    out = []
    for n, rows in j["summaries"].items():
        if not in_fit(record["cells"][n]):
            continue
        for s, r in zip(rows, j["cells"][n]):
            pairs = record["cells"][n]["steps"][str(s["step"])]["pairs"]
            if k_max(pairs) > r["slack"]:
                out.append({"cell": n, "tokens": s["tokens"], "K_max": k_max(pairs),
                            "slack": r["slack"], "rate": rates(pairs, r["slack"])[str(ALPHA)]})
    return out


def in_fit(cell: dict) -> bool:
    """Whether a cell's first half enters the law's fit: every CPU cell; a GPU cell (its
    record entry says ``"in_fit": false``) is judged on all its seeds instead, out of sample,
    and the law's measured range (tokens, widths, depths) stays the fitted cells'."""
    return cell.get("in_fit", True)
