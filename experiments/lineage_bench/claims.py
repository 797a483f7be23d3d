"""The lineage benchmark's verdict rules, table, ROC figure and RESULTS.md section.

Two rules per test, each able to fail:

  * holds its level: over the negatives of every weight-lineage edit pooled, the rejection rate
    at alpha is at most alpha; above alpha beyond its jackknife-over-seeds interval (the lower
    end above alpha) it fails; above alpha within the interval it is undecided (too few seeds
    to tell), which does not count as holding;
  * survives every edit: it finds every positive of every weight-lineage edit (TPR 1 at alpha
    for a test, at its 0.8 threshold for a baseline).

A test meeting both is 'valid and robust on this benchmark'; the section's last row names such
tests (or says that none is). A test whose level here is in-sample (:data:`IN_SAMPLE`: the
matched test with a trained base, whose slack was fitted on trained pairs of the same seeds, and
the any-pair verdict through its matched leg) is named with a footnote saying so: its "holds its
level" is not a held-out measurement. Distilled students share no weights with their teacher, so their
rates are shown apart and decide neither rule.

Two rows say what their test is here: 'paper' runs Algorithm 1's test on the benchmark's token
inputs, not on the algorithm's own inputs (isotropic Gaussian embeddings, Sec. 6.1.1); and the
Intrinsic baseline is degenerate on bases of two blocks (:func:`intrinsic_degenerate`).
"""

from __future__ import annotations

from experiments.artifacts import earlier_matched

from bornbiased_jax import plots
from bornbiased_jax.verdicts import BEYOND, Claim
from experiments.common.level_range import stale_slack
from experiments.lineage_bench import metrics as MT
from experiments.lineage_bench import EDITS, KNOWLEDGE_ONLY, TITLE

LABELS = {**{c: label for cols in MT.COLUMNS.values() for c, label in cols.items()}, "pcs": "PCS >= 0.8", "ics": "ICS >= 0.8",
          "reef": "REEF >= 0.8", "intrinsic": "Intrinsic >= 0.8",
          MT.DEFAULT_UNKNOWN_INIT: "default verdict, BASE's initialisation unknown (any-pair: "
                                   "permutation and matched, each at alpha / 2)"}
WEIGHT_EDITS = tuple(e for e in EDITS if e not in KNOWLEDGE_ONLY)


def _rate(cell: dict | None) -> str:
    if not cell:
        return "-"
    lo, hi = cell.get("jackknife", {}).get("ci95", cell["ci95"])
    return f"{cell['rejections']}/{cell['pairs']} [{lo:.3f}, {hi:.3f}]"


def level(summary: dict, test: str) -> str:
    """'above' when the pooled weight-lineage FPR is above alpha beyond its jackknife interval,
    'holds' when it is at most alpha, else 'undecided' (above alpha, within the interval: too
    few seeds to tell)."""
    cell = summary[test]["weight lineage"]["fpr"]
    lo = cell.get("jackknife", {}).get("ci95", cell["ci95"])[0]
    return "above" if lo > MT.ALPHA else "holds" if cell["rate"] <= MT.ALPHA else "undecided"


def level_ok(summary: dict, test: str) -> bool:
    return level(summary, test) == "holds"


def robust(summary: dict, test: str) -> list[str]:
    """The weight-lineage edits whose positives the test does not all find."""
    return [e for e in WEIGHT_EDITS if e in summary[test] and summary[test][e]["tpr"] < 1]


_FITTED = ("its slack for two trained models (the default count of units per layer pair) is "
           "the largest the level table fitted, whose cell L2-F176 is this family fitted on "
           "seeds 0-15, which include these bases, so this rate is not held out (the held-out "
           "rates are the section 'The matched leg's level between trained models, per width "
           "and depth')")
# Tests whose level on this benchmark is in-sample: the matched test's slack for two trained
# models was fitted on these seeds (the any-pair verdict carries it in its matched leg).
IN_SAMPLE = ("matched", MT.DEFAULT_UNKNOWN_INIT)
IN_SAMPLE_NOTE = ("its level here rests on a slack fitted on trained pairs of these "
                  "same seeds (its held-out level is the section 'The matched leg's level "
                  "between trained models, per width and depth')")
NOTES = {"paper": "Algorithm 1's test on the benchmark's token inputs, not on the algorithm's "
                  "isotropic Gaussian embeddings (Sec. 6.1.1)",
         "matched": _FITTED, MT.DEFAULT_UNKNOWN_INIT: "in its matched leg, " + _FITTED,
         "attention": "a column only, no leg of any verdict: it reads the heads' weights (the "
                      "spectra of their QK and OV circuits), its null is exact only where one "
                      "model is an initialisation, and its level between trained models, measured "
                      "on the long level cells' unrelated same-data seeds, is not rejected "
                      "there by a rule of low power, though the observed rate exceeds alpha "
                      "at some checkpoints (up to several times alpha)",
         "attention_init": "a column only, no leg of any verdict: BASE's initialisation's heads "
                           "against the suspect's, its null exact"}


def _bench_width() -> int:
    """The widest MLP of the benchmarks' models: the seed family's (llama2-tiny's d_ff), padded
    by a sixteenth in the shape benchmark (fingerprint.edits.derivatives' pad-mlp); the matched
    leg's default slack is set at the widths of each pair, and at the assumed tokens the width
    term is below the tokens term for all of them (a test checks)."""
    from bornbiased_jax.presets import get_preset

    F = get_preset("llama2-tiny").d_ff
    return F + max(1, F // 16)


def law_slacks(pairs: list[dict] | None) -> list[int]:
    """The slacks a record's matched leg applied between two trained models where it applied
    `bornbiased fingerprint`'s default, the law of training length (its pairs carry
    ``matched_slack``); [] for a record made before (the level table's constant slack)."""
    return sorted({p["matched_slack"] for p in pairs or [] if "matched_slack" in p})


def in_sample(pairs: list[dict] | None) -> tuple[str, ...]:
    """The tests whose level on a record's pairs is in-sample: :data:`IN_SAMPLE` where the
    matched slack was the level table's (fitted on these seeds); none where it was the law of
    training length (fitted on the long level cells: other seeds of another width, trained
    on other data lengths)."""
    return () if law_slacks(pairs) else IN_SAMPLE


def own_tokens(root=None) -> tuple[int, int] | None:
    """The tokens per model of the benchmarks' trained models, from the seed family's
    committed training record under ``root`` (the records' folder): the bases', and their
    continued descendants' most (the bases' tokens and the continuation's); None without it.
    (Read from the record, not the family's training settings, so that rendering imports no
    training code.)"""
    import json

    from experiments.artifacts import RECORDS, record_path

    path = record_path(RECORDS if root is None else root, "seed_family", "training")
    if not path.is_file():
        return None
    rec = json.loads(path.read_text())
    tc = rec["run"]["train_config"]
    base = tc["steps"] * tc["batch_size"] * tc["seq_len"]
    return base, base + max((c["tokens"] for c in rec.get("continued", [])), default=0)


def own_tokens_note() -> str:
    """What the law gives at the benchmark models' own tokens, beside the default's."""
    from bornbiased_jax.fingerprint.methods.trained_slack import law_units

    own = own_tokens()
    if own is None:
        return ""
    lo, hi = own
    u = sorted({law_units(t, _bench_width()) for t in (lo, hi)})
    return (f"; the benchmark's models were trained {lo:,} tokens (the bases) to {hi:,} (their "
            f"continued descendants), where the law gives "
            f"{' to '.join(map(str, u))} units per layer pair: this rate is at the default, "
            f"for models whose tokens are not given, not at their own (--trained-tokens)")


def margin_note(pairs: list[dict] | None, slacks: list[int]) -> str:
    """How far the record's unrelated pairs' shared units lie below the slack it applied (the
    largest K of any negative in any layer pair, from ``matched_K``): where far, the false-
    positive rate at that slack cannot test the slack's level; '' for a record without K."""
    neg = [max(p["matched_K"]) for p in pairs or []
           if not p.get("related", p.get("positive", True)) and p.get("matched_K")]
    if not neg or not slacks or max(neg) >= min(slacks):
        return ""
    top, u = max(neg), min(slacks)
    return (f"; its unrelated pairs share at most {top} doubly matched units in any layer pair, "
            f"{u - top} below the slack, above which alone a pair can be called related: the "
            f"level holds here with room to spare, which cannot show whether the slack is "
            f"tight, nor test it where it is extrapolated; the true-positive rate shows what "
            f"the slack costs the descendants")


def notes_for(pairs: list[dict] | None) -> dict[str, str]:
    """:data:`NOTES`, the matched leg's note saying which slack the record applied."""
    from bornbiased_jax.defaults import MATCHED_TOKENS_ASSUMED

    slacks = law_slacks(pairs)
    if not slacks:
        return dict(NOTES)
    law = (f"its slack for two trained models is the command's default, the law of training "
           f"length at the tokens it assumes when none are given "
           f"({', '.join(map(str, slacks))} units per layer pair here), fitted on other seeds "
           f"(the long level cells), so this rate is held out" + own_tokens_note()
           + margin_note(pairs, slacks) + stale_slack(slacks, MATCHED_TOKENS_ASSUMED,
                                                     _bench_width()))
    return {**NOTES, "matched": law, MT.DEFAULT_UNKNOWN_INIT: "in its matched leg, " + law}


def intrinsic_degenerate(pairs: list[dict] | None) -> str | None:
    """What the Intrinsic baseline's scores show when they are degenerate, else None: every
    score a multiple of 1/4, i.e. each of its four correlations (Q, K, V, O) -1, 0 or +1, as
    the Pearson r of two std profiles of 2 points (2 blocks) always is (0 for a constant
    profile): the row gives how the weight-lineage pairs' scores fall among those values,
    positives and negatives apart."""
    rows = [r for r in pairs or [] if "intrinsic" in r and r["edit"] not in KNOWLEDGE_ONLY]
    if not rows or any(abs(4 * r["intrinsic"] - round(4 * r["intrinsic"])) > 1e-6
                       for r in rows):
        return None

    def spread(related):
        vals = [round(r["intrinsic"], 2) for r in rows if r["related"] == related]
        counts = {v: vals.count(v) for v in sorted(set(vals), reverse=True)}
        return ", ".join(f"{v:g}: {k}/{len(vals)}" for v, k in counts.items())
    return ("degenerate on these bases: each of its four correlations rests on 2 points (the "
            "bases have 2 blocks) and is -1, 0 or +1, the sign of the two profiles' change "
            "from one block to the next, so the score takes multiples of 1/4 only (positives "
            f"{spread(True)}; negatives {spread(False)})")


MATCHED_COLUMNS = ("matched", "matched_eps0", "matched_init", "any_pair")


def stops_note(pairs: list[dict] | None, alpha: float = 0.01) -> str | None:
    """What the any-pair verdict's stop for a matched leg that found nothing did on the
    benchmark's pairs (``any_pair.stop_reason``, ``stop_holds``): how many negatives and
    positives it stopped at the matched leg's sequences, and how many positives it cost (the
    permutation leg on all n at most alpha / 2, on the first sequences not); None for a
    record without the first sequences' permutation p."""
    if not pairs or any("permutation_first" not in r for r in pairs):
        return None

    from bornbiased_jax.fingerprint.methods.any_pair import stops_for_nothing

    def stops(r):
        return stops_for_nothing(r["matched"], r["permutation_first"], alpha)
    neg = [r for r in pairs if not r["related"]]
    pos = [r for r in pairs if r["related"]]
    lost = sum(stops(r) and 2 * r["permutation"] <= alpha for r in pos)
    return (f"its permutation leg stopped at the matched leg's sequences because that leg "
            f"found nothing (p = 1) for {sum(map(stops, neg))} of {len(neg)} negatives and "
            f"{sum(map(stops, pos))} of {len(pos)} positives; positives that stop cost (found "
            f"by the permutation leg on all n): {lost}")


def claims(summary: dict, pairs: list[dict] | None = None, statistic_note: str = ""
           ) -> list[Claim]:
    """The rows of every test by the two rules (module docstring); ``pairs`` (the record's
    pair rows), when given, let the Intrinsic row say whether it is degenerate
    (:func:`intrinsic_degenerate`)."""
    out = []
    good = []
    notes = notes_for(pairs)
    sample = in_sample(pairs)
    degenerate = intrinsic_degenerate(pairs)
    if degenerate:
        notes["intrinsic"] = degenerate
    for t in summary:
        pooled = summary[t]["weight lineage"]
        missed = robust(summary, t)
        lv = level(summary, t)
        if lv == "holds" and not missed:
            good.append(LABELS.get(t, t) + (" [in-sample]" if t in sample else ""))
        dist = summary[t].get("distilled")
        ours = (f"FPR {_rate(pooled['fpr'])}; TPR {pooled['tp']}/{pooled['positives']}; AUC "
                f"{pooled['auc']:.3f}; TPR at 1 % FPR {pooled['tpr_at_1pct']:.2f}"
                + (f"; distilled students found {dist['tp']}/{dist['positives']}" if dist
                   else ""))
        why = {"holds": "holds its level (FPR at most alpha)",
               "above": "above its level beyond the jackknife interval",
               "undecided": "FPR above alpha but within its jackknife interval over "
                            "seeds: its level is not shown"}[lv]
        why += ("; finds every positive of every weight-lineage edit" if not missed else
                "; misses positives of: " + ", ".join(missed))
        if t in notes:
            why += "; " + notes[t]
        if statistic_note and t in MATCHED_COLUMNS:
            why += "; " + statistic_note
        if t == "any_pair" and stops_note(pairs):
            why += "; " + stops_note(pairs)
        out.append(Claim(f"Lineage benchmark: {LABELS.get(t, t)}", "-", ours, BEYOND, why,
                         "beyond the paper"))
    why = ("tests that hold their level and find every weight-lineage edit"
           if good else "no test both holds its level and finds every edit")
    if any(g.endswith("[in-sample]") for g in good):
        why += "; [in-sample]: " + IN_SAMPLE_NOTE
    out.append(Claim("Lineage benchmark: valid and robust", "-",
                     ", ".join(good) if good else "no test", BEYOND, why, "beyond the paper"))
    return out


def markdown(summary: dict) -> str:
    """Per test x edit: found/positives at alpha = 0.01 (AUC); then FPR per test."""
    tests = list(summary)
    head = "| edit | " + " | ".join(LABELS.get(t, t) for t in tests) + " |"
    lines = ["True positives at alpha = 0.01 (baselines: at their 0.8 threshold), with the AUC "
             "of the edit's positives against its negatives.", "", head,
             "|---|" + "---|" * len(tests)]
    for e in (*EDITS, "weight lineage"):
        cells = []
        for t in tests:
            c = summary[t].get(e)
            cells.append("-" if c is None else f"{c['tp']}/{c['positives']} ({c['auc']:.2f})")
        lines.append(f"| {e} | " + " | ".join(cells) + " |")
    lines += ["", "False positives over the weight-lineage negatives (jackknife 95 % interval) "
              "and TPR at 1 % FPR:", "", "| test | FPR | TPR at 1 % FPR |", "|---|---|---|"]
    for t in tests:
        p = summary[t]["weight lineage"]
        lines.append(f"| {LABELS.get(t, t)} | {_rate(p['fpr'])} | {p['tpr_at_1pct']:.2f} |")
    return "\n".join(lines) + "\n"


def roc_figure(rows: list[dict]):
    """ROC of every test over the weight-lineage pairs (false-positive rate on a log axis)."""
    import numpy as np

    fig, ax = plots.figure(1, 1, figsize=(6, 5))
    weight = [r for r in rows if r["edit"] not in KNOWLEDGE_ONLY]
    for t in (*MT.TESTS, *MT.BASELINES):
        pos = np.sort([MT.score(r, t) for r in weight if r["related"]])
        neg = np.array([MT.score(r, t) for r in weight if not r["related"]])
        cuts = np.unique(np.concatenate([pos, neg]))[::-1]
        fpr = [float((neg >= c).mean()) for c in cuts]
        tpr = [float((pos >= c).mean()) for c in cuts]
        ax.plot([1e-3, *fpr], [0.0, *tpr], label=LABELS.get(t, t), drawstyle="steps-post")
    ax.set_xscale("log")
    ax.set_xlim(1e-3, 1)
    ax.axvline(0.01, color="k", ls=":", lw=1)
    ax.set_xlabel("false-positive rate (other bases' suspects)")
    ax.set_ylabel("true-positive rate (a base's own suspects)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def section(record: dict, command: str, run_line: str) -> str:
    s = record["run"]["settings"]
    lines = [f"## {TITLE}", "",
             f"Generated from results/records/lineage_bench/lineage_bench.json (`{command}`, "
             f"run on {run_line}). Bases: the first {s['bases']} seeds of the 32-seed llama2-tiny "
             f"family (trained on identical data in one program); every edit of "
             f"experiments/lineage_bench/suspects.py applied to each; each base tested against "
             f"its own suspects (positives) and every other base's (negatives); SeedPrint "
             f"features on n = {s['n']} token sequences of T = {s['seq_len']}, calibrated "
             f"null K = {s['null_models']}.", "",
             "| claim | paper | ours | verdict |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(c.cells()) + " |"
              for c in claims(record["records"]["summary"], record["records"].get("pairs"),
                              earlier_matched(record["records"]))]
    lines += ["", markdown(record["records"]["summary"]).rstrip("\n")]
    return "\n".join(lines)


def summary_table(record: dict) -> str:
    """docs/seedprint.md's summary of the benchmark: per test its FPR, what it finds, AUC, TPR at 1 % FPR
    and whether it is valid and robust here (generated from the record by
    ``experiments.render.write``)."""
    summary, pairs = record["records"]["summary"], record["records"].get("pairs")
    degenerate = intrinsic_degenerate(pairs)
    renamed = ("renamed", "renamed-ft")
    lines = ["| test | FPR at 0.01 (unrelated) | weight-lineage copies found | renamed copies "
             "found | AUC | TPR at 1 % FPR | valid and robust here |",
             "|---|---|---:|---:|---:|---:|---|"]
    for t in summary:
        p = summary[t]["weight lineage"]
        ren = [summary[t][e] for e in renamed if e in summary[t]]
        lv, missed = level(summary, t), robust(summary, t)
        lines.append(
            f"| {LABELS.get(t, t)} | {p['fpr']['rejections']}/{p['fpr']['pairs']} | "
            f"{p['tp']}/{p['positives']} | {sum(c['tp'] for c in ren)}/"
            f"{sum(c['positives'] for c in ren)} | {p['auc']:.2f} | {p['tpr_at_1pct']:.2f} | "
            + (("yes (in-sample level: slack fitted on these seeds)" if t in in_sample(pairs)
                else "yes") if lv == "holds" and not missed else
               "no: " + "; ".join(x for x in (
                   {"above": "above its level", "undecided": "level not shown"}.get(lv, ""),
                   f"misses {len(missed)} edit(s)" if missed else "",
                   "degenerate (2 blocks: each correlation rests on 2 points)"
                   if t == "intrinsic" and degenerate else "") if x)) + " |")
    s = record["run"]["settings"]
    lines += ["", f"({s['bases']} bases x {len(EDITS)} edits; 'paper' runs Algorithm 1's test "
                  f"on token inputs, not the algorithm's Gaussian embeddings; generated from "
                  f"results/records/lineage_bench/lineage_bench.json by `python -m "
                  f"experiments.run_all --no-run`.)"]
    return "\n".join(lines)
