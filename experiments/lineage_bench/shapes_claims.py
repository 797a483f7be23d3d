"""RESULTS.md's rows for the lineage benchmark's shape-changed descendants
(:mod:`experiments.lineage_bench.shapes`'s record), pure functions of it.

Rules (tests/test_lineage_bench.py gives summaries that pass and fail them):

  * found: *holds* when the verdict's test finds every positive of every shape edit, *differs*
    when it misses any (the row names them);
  * level: the verdict's rejections of the negatives (every other base's shape-changed
    suspects: same-data seeds) over all edits, judged by its Clopper-Pearson interval as if the
    pairs were independent: *differs* when its lower bound is above alpha, *holds* when its
    upper bound is at most 5 alpha, *consistent, underpowered* in between;
  * localised: the mean share of copied layers the matched test attributes to their origin,
    reported per edit (a measurement, with no threshold the paper or the issue could fix).
"""

from __future__ import annotations

from bornbiased_jax.stats import clopper_pearson
from bornbiased_jax.verdicts import DIFFERS, HOLDS, MEASURED, UNDERPOWERED, Claim

ALPHA = 0.01
LABELS = {"any_pair": "any-pair verdict (BASE's initialisation unknown)",
          "matched_init": "matched test against BASE's initialisation (known)"}


def _share(x) -> str:
    return "-" if x is None else f"{x:.0%}"


def claims(summary: dict) -> list[Claim]:
    out = []
    for t, label in LABELS.items():
        missed = {e: r[t] for e, r in summary.items() if r[t]["found"] < r[t]["positives"]}
        found = sum(r[t]["found"] for r in summary.values())
        pos = sum(r[t]["positives"] for r in summary.values())
        out.append(Claim(
            f"Shape-changed descendants found: {label}", "- (beyond the paper)",
            f"{found}/{pos} over {len(summary)} edits of 8 bases: " + "; ".join(
                f"{e} {r[t]['found']}/{r[t]['positives']}" for e, r in summary.items()),
            DIFFERS if missed else HOLDS,
            ("misses " + ", ".join(f"{e} ({m['positives'] - m['found']})"
                                   for e, m in missed.items())) if missed else
            "every positive of every edit found"))
        fp = sum(r[t]["false"] for r in summary.values())
        neg = sum(r[t]["negatives"] for r in summary.values())
        lo, hi = clopper_pearson(fp, neg)
        verdict = DIFFERS if lo > ALPHA else HOLDS if hi <= 5 * ALPHA else UNDERPOWERED
        out.append(Claim(
            f"Shape-changed descendants of other same-data seeds (negatives): {label}",
            "- (beyond the paper)",
            f"{fp}/{neg} rejected at alpha = {ALPHA} (95 % CI {lo:.1%}-{hi:.1%}, pairs as if "
            f"independent)", verdict,
            {DIFFERS: "the rate is above alpha", HOLDS: f"at most {5 * ALPHA:.0%} at 95 %",
             UNDERPOWERED: f"not above alpha, but not bounded below {5 * ALPHA:.0%}"}[verdict]))
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
