"""RESULTS.md's rows for the lineage benchmark's shape-changed descendants
(:mod:`experiments.lineage_bench.shapes`'s record), pure functions of it. Every row is beyond the
paper: its verdict is *beyond the paper*, and its why begins with its rule's outcome.

Rules (tests/test_lineage_bench_shapes.py gives records that pass and fail them):

  * found: *finds every positive* when the verdict's test finds every positive of every shape
    edit, else it *misses* (the row names the edits and how many);
  * level (:func:`level_outcome`): the verdict's rejections of the negatives (every other base's
    shape-changed suspects: same-data seeds) over all edits, at alpha. The negatives are the
    edits of a few ordered base pairs (in the record, 13 edits of each of 8 x 7 = 56), so they
    are not independent trials: their 95 % interval is the wider of the interval with the base
    pair as the trial and the jackknife over seeds (``fingerprint.runner.rejection.rate``'s
    ``per_pair`` and ``jackknife``, the rate and jackknife the main benchmark's negatives use;
    with no rejection the jackknife's interval is [0, 0], and the base pairs bound the rate).
    *Above its level* when the interval's lower end is above alpha, *holds its level* when its
    upper end is at most 5 alpha, *underpowered* in between (not above alpha, not bounded). The
    any-pair verdict's matched leg between two trained models applies the command's default
    slack: in records made before that default became the law of training length, the level
    table's slack, fitted on seeds that include these bases, and the level row is marked
    in-sample as the main benchmark marks its rows (:func:`claims.in_sample`); since, the law,
    fitted on other seeds, and the row says which slack it applied;
  * localised: the mean share of copied layers the matched test attributes to their origin,
    reported per edit (a measurement, with no threshold the paper could fix).
"""

from __future__ import annotations

from bornbiased_jax.fingerprint.runner import rejection as SM
from bornbiased_jax.verdicts import BEYOND, MEASURED, Claim
from experiments.lineage_bench.claims import in_sample, law_slacks, notes_for

ALPHA = 0.01
BOUND = 5 * ALPHA  # the rate the level rule must bound at 95 %
LABELS = {"any_pair": "any-pair verdict (BASE's initialisation unknown)",
          "matched_init": "matched test against BASE's initialisation (known)"}
OUTCOMES = {"above": "above its level: the rate is above alpha beyond its 95 % interval",
            "holds": f"holds its level: at most {BOUND:.0%} at 95 %",
            "underpowered": f"underpowered: not above alpha, but not bounded below {BOUND:.0%} "
                            f"at 95 %"}


def _share(x) -> str:
    return "-" if x is None else f"{x:.0%}"


def negatives_rate(pairs: list[dict], test: str, alpha: float = ALPHA) -> dict:
    """``rejection.rate`` of ``test`` over the record's negatives, a pair's models being the
    base (a) and the seed its suspect was made from (b)."""
    rows = [{"a": r["base"], "b": r["suspect_of"], test: r["p"][test]}
            for r in pairs if not r["positive"]]
    return SM.rate(rows, test, alpha)


def interval(rate: dict) -> tuple[float, float]:
    """The rate's 95 % interval for the level rule: the wider of the per-pair interval and the
    jackknife's at each end (the all-pairs one where the rate has neither)."""
    ends = [rate[k]["ci95"] for k in ("per_pair", "jackknife") if k in rate] or [rate["ci95"]]
    return min(lo for lo, _ in ends), max(hi for _, hi in ends)


def level_outcome(lo: float, hi: float, alpha: float = ALPHA) -> str:
    """'above' when the interval's lower end is above alpha, 'holds' when its upper end is at
    most 5 alpha, else 'underpowered'."""
    return "above" if lo > alpha else "holds" if hi <= 5 * alpha else "underpowered"


def _pct(ci) -> str:
    return f"{ci[0]:.1%}-{ci[1]:.1%}"


def negatives_claim(t: str, pairs: list[dict], edits: int) -> Claim:
    """The level row of the verdict ``t`` (module docstring)."""
    r = negatives_rate(pairs, t)
    lo, hi = interval(r)
    outcome = level_outcome(lo, hi)
    base_pairs = r.get("per_pair", {}).get("pairs", r["pairs"])
    sample = "; ".join(x for x in (
        f"{_pct(r['per_pair']['ci95'])} with the base pair as the trial"
        if "per_pair" in r else "",
        f"{_pct(r['jackknife']['ci95'])} by the jackknife over seeds"
        if "jackknife" in r else "",
        f"{_pct(r['ci95'])} were the {r['pairs']} independent") if x)
    held_in, notes = t in in_sample(pairs), notes_for(pairs)
    return Claim(
        f"Shape-changed descendants of other same-data seeds (negatives): {LABELS[t]}"
        + (" [in-sample]" if held_in else ""), "- (beyond the paper)",
        f"{r['rejections']}/{r['pairs']} rejected at alpha = {ALPHA}: {edits} edits of "
        f"{base_pairs} ordered base pairs (95 % CI {sample})", BEYOND,
        OUTCOMES[outcome] + f" (the wider of the intervals with the base pair as the trial "
        f"and by the jackknife: {_pct((lo, hi))})"
        + (f"; [in-sample]: {notes[t]}" if held_in else
           f"; {notes[t]}" if law_slacks(pairs) and t in notes else ""))


def claims(summary: dict, pairs: list[dict]) -> list[Claim]:
    """The rows of the record's ``summary`` (per edit and verdict) and ``pairs`` (per base and
    suspect: the level rows read them)."""
    out = []
    bases = len({r["base"] for r in pairs})
    for t, label in LABELS.items():
        missed = {e: r[t] for e, r in summary.items() if r[t]["found"] < r[t]["positives"]}
        found = sum(r[t]["found"] for r in summary.values())
        pos = sum(r[t]["positives"] for r in summary.values())
        out.append(Claim(
            f"Shape-changed descendants found: {label}", "- (beyond the paper)",
            f"{found}/{pos} over {len(summary)} edits of {bases} bases: " + "; ".join(
                f"{e} {r[t]['found']}/{r[t]['positives']}" for e, r in summary.items()),
            BEYOND,
            ("misses " + ", ".join(f"{e} ({m['positives'] - m['found']})"
                                   for e, m in missed.items())) if missed else
            "finds every positive of every edit"))
        out.append(negatives_claim(t, pairs, len(summary)))
    out.append(Claim(
        "Where a shape-changed copy descends from: layers attributed to their origin",
        "- (beyond the paper)",
        "; ".join(f"{e}: {_share(r['localised_matched_init'])} (known init), "
                  f"{_share(r['localised_matched'])} (unknown)"
                  for e, r in summary.items() if r["localised_matched"] is not None),
        MEASURED, "the mean share of the copied layers whose chosen BASE layer is their origin"))
    return out


def markdown(summary: dict) -> str:
    lines = ["| edit | any-pair found | any-pair false | matched_init found | matched_init false "
             "| layers localised (unknown / known init) |", "|---|---:|---:|---:|---:|---|"]
    for e, r in summary.items():
        a, m = r["any_pair"], r["matched_init"]
        lines.append(f"| {e} | {a['found']}/{a['positives']} | {a['false']}/{a['negatives']} | "
                     f"{m['found']}/{m['positives']} | {m['false']}/{m['negatives']} | "
                     f"{_share(r['localised_matched'])} / "
                     f"{_share(r['localised_matched_init'])} |")
    return "\n".join(lines) + "\n"


def figure(summary: dict):
    """Per edit: the share of positives each verdict finds, and of copied layers localised."""
    import numpy as np

    from bornbiased_jax import plots

    edits = list(summary)
    x = np.arange(len(edits))
    fig, ax = plots.figure(1, 1, figsize=(max(6, 0.7 * len(edits)), 3.6))
    for i, (key, label) in enumerate((("any_pair", "any-pair found"),
                                      ("matched_init", "matched_init found"))):
        ax.bar(x + (i - 1) * 0.27, [summary[e][key]["found"] / max(1, summary[e][key]["positives"])
                                    for e in edits], 0.27, label=label)
    ax.bar(x + 0.27, [summary[e]["localised_matched"] or 0 for e in edits], 0.27,
           label="layers localised (unknown init)")
    ax.set_xticks(x, edits, rotation=45, ha="right")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
