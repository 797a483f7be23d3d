"""Tables and the figure of a lineage comparison."""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from bornbiased_jax import plots
from bornbiased_jax.stats import kendall_null_sd
from bornbiased_jax.fingerprint.runner import registry
from bornbiased_jax.fingerprint.methods import trained_slack
from bornbiased_jax.fingerprint.methods.result import LineageResult
from bornbiased_jax.stats import fmt_p


def p_labels() -> dict[str, str]:
    """The tables' label of every p-value: the registered tests' and combinations'
    (``registry.p_labels``)."""
    return registry.p_labels()


class _Details(dict):
    def __missing__(self, key):
        return None


def _legend(text: str, r: LineageResult) -> str:
    """A registry legend with ``r``'s details (a missing one reads None)."""
    return text.format_map(_Details(r.details))


def rows(results: Mapping[str, LineageResult]) -> list[dict]:
    """One row per (test, p-value variant)."""
    labels = p_labels()
    out = []
    for name, r in results.items():
        for key, p in r.p_values.items():
            out.append({"test": name, "variant": labels.get(key, key), "p": p,
                        "n_dims": r.n_dims, "statistic": r.statistic,
                        "verdict": "same lineage" if p <= r.alpha else "unrelated"})
    return out


def _alphas(results: Mapping[str, LineageResult]) -> str:
    """The significance level(s) the results were judged at, e.g. '0.01'."""
    return ", ".join(f"{a:g}" for a in sorted({float(r.alpha) for r in results.values()}))


def table_markdown(results: Mapping[str, LineageResult]) -> str:
    head = f"| test | p-value | p | \\|S\\| | mean corr | verdict (alpha = {_alphas(results)}) |"
    lines = [head, "|---|---|---:|---:|---:|---|"]
    for row in rows(results):
        stat = "-" if not math.isfinite(row["statistic"]) else f"{row['statistic']:+.4f}"
        lines.append(f"| {row['test']} | {row['variant']} | {fmt_p(row['p'])} | "
                     f"{row['n_dims']} | {stat} | {row['verdict']} |")
    notes = [f"- {n}: {r.note}" for n, r in results.items() if r.note]
    legend = ("\n|S|: identity dimensions (the calibrated test's '_all' statistics, the aligned "
              "and the permutation test use all d_out). mean corr: mean Kendall tau on S "
              "(paper, official)")
    entries = [e for e in registry.ENTRIES if e.name in results]
    for e in entries:
        if e.legend:
            legend += ", " + _legend(e.legend, results[e.name])
    legend += "."
    for e in entries:
        if e.legend_note:
            legend += " " + _legend(e.legend_note, results[e.name])
    return "\n".join(lines) + legend + ("\n\nNotes:\n" + "\n".join(notes) if notes else "") + "\n"


def table_text(results: Mapping[str, LineageResult]) -> str:
    table = rows(results)
    w = max([11] + [len(row["test"]) for row in table])
    v = max([22] + [len(row["variant"]) for row in table])
    out = [f"{'test':<{w}} {'p-value':<{v}} {'p':>14} {'|S|':>5} {'mean corr':>10}  verdict"]
    for row in table:
        stat = "-" if not math.isfinite(row["statistic"]) else f"{row['statistic']:+.4f}"
        out.append(f"{row['test']:<{w}} {row['variant']:<{v}} {fmt_p(row['p']):>14} "
                   f"{row['n_dims']:>5} {stat:>10}  {row['verdict']}")
    return "\n".join(out)


def deciding_test(ran, recommended) -> str:
    """The test a verdict uses: the first of ``recommended`` (a name or names, in order of
    preference) that ran, else the first that ran."""
    recommended = (recommended,) if isinstance(recommended, str) else tuple(recommended)
    return next((t for t in recommended if t in ran), next(iter(ran)))


def verdict_line(results: Mapping[str, LineageResult], recommended, base: str,
                 suspect: str) -> str:
    """The one-line answer, from the first recommended test that ran, else from the first
    test."""
    name = deciding_test(results, recommended)
    r = results[name]
    key = next(iter(r.p_values))
    answer = (f"{suspect} is related to {base} (H0 of independence rejected)" if r.same_lineage
              else f"no evidence that {suspect} is related to {base}")
    rec = (recommended,) if isinstance(recommended, str) else tuple(recommended)
    why = "" if name in rec else f"; the recommended {' or '.join(rec)} test did not run"
    if r.details.get("stopped_because") == "nothing":  # the any-pair verdict's second stop
        why += "; the matched leg found nothing and the permutation leg stopped at its inputs"
    elif "decided_by" in r.details:  # a combination of tests (registry.COMBINATIONS)
        why += f"; decided by the {r.details['decided_by']} leg"
    units = registry.localising(results)
    descent = f"; {descent_summary(units)}" if units is not None and r.same_lineage else ""
    rule = next((x.details["slack_rule"] for x in results.values()
                 if x.details.get("slack_rule")), None)
    # the verdict rests on the matched leg's slack: the matched test's own verdict, a
    # combination's rejection that leg decided, or a combination's "no evidence" (the
    # matched leg's power depends on its slack)
    rests = name == "matched" or "decided_by" in r.details and (
        r.details["decided_by"] == "matched" or not r.same_lineage)
    if rule and rule["beyond"] and rests:
        # set by the law beyond where it was measured
        T = trained_slack.tokens_text(rule["tokens"])
        why += (f"; the matched leg's slack ({rule['slack']} units per layer pair, the law of "
                f"training length at {T} tokens per model, "
                f"{'as given' if rule['tokens_given'] else 'assumed'}) is extrapolated to "
                f"{' and '.join(rule['beyond'])}")
    return (f"verdict ({name} test, {p_labels().get(key, key)} p = {fmt_p(r.p)}, "
            f"alpha = {r.alpha:g}{why}): {answer}{descent}")


def descent_summary(r: LineageResult) -> str:
    """How much of SUSPECT descends from BASE, from a matched test's localised rows: the
    SUSPECT layers whose own p is at most alpha / L (Bonferroni over its L layers) and the
    doubly matched units of those layers."""
    d = r.details
    L, F = len(d["K_per_layer"]), d["units"]
    return (f"{d['attributed_layers']} of {L} SUSPECT layers descend from BASE layers (own "
            f"p <= alpha / {L}), {d['attributed_units']:,} of {L * F:,} MLP units doubly "
            f"matched")


def localised_markdown(r: LineageResult) -> str:
    """The matched test's localised table: for each SUSPECT layer, the BASE layer the screen
    chose, the screen's mean best |r| of the pair, the doubly matched units K of F and log10
    p."""
    d = r.details
    lines = ["| SUSPECT layer | BASE layer | screen | K | of F | log10 p |",
             "|---:|---:|---:|---:|---:|---:|"]
    for l, (la, scr, K, lp) in enumerate(zip(d["base_layer_of"], d["screen"], d["K_per_layer"],
                                             d["log10_p_per_layer"])):
        lines.append(f"| {l} | {la} | {scr:.3f} | {K:,} | {d['units']:,} | {lp:.1f} |")
    return "\n".join(lines) + "\n"


def summary_markdown(summary: list[dict], base: str, recommended: str) -> str:
    """One row per suspect: each test's primary p-value and the verdict of the recommended
    test (or of the first test when it did not run)."""
    tests = list(dict.fromkeys(t for row in summary for t in row["p"]))
    lines = [f"# SeedPrint: {len(summary)} suspects against {base}", "",
             "| suspect | " + " | ".join(f"{t} p" for t in tests) + " | verdict |",
             "|---|" + "---:|" * len(tests) + "---|"]
    for row in summary:
        name = deciding_test(row["related"], recommended)
        lines.append(f"| {row['suspect']} | " + " | ".join(
            fmt_p(row["p"][t]) if t in row["p"] else "-" for t in tests) + " | "
            + ("related" if row["related"][name] else "no evidence") + f" ({name}) |")
    return "\n".join(lines) + "\n"


def figure(results: Mapping[str, LineageResult], title: str = ""):
    """One panel per test: the observed correlations against that test's null."""
    fig, axes = plots.figure(1, len(results), figsize=(4.6 * len(results), 3.6), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        what = registry.entry(name).null_label if name in registry.names() else ""
        if what:
            null = np.asarray(r.null)
            ax.hist(null, bins=min(40, max(5, null.size // 5)), density=True, color="0.7",
                    label=f"null: {null.size} {what}")
            ax.axvline(r.statistic, color="tab:red", lw=2, label="base vs suspect")
            ax.set_xlabel(f"statistic ({r.details.get('statistic_name')})")
        else:
            taus = np.asarray(r.taus)
            sd = kendall_null_sd(r.n)
            lo = min([-4 * sd] + list(taus) + list(np.asarray(r.null)))
            hi = max([4 * sd] + list(taus) + list(np.asarray(r.null)))
            bins = np.linspace(lo, hi, 40)
            if np.asarray(r.null).size:
                ax.hist(r.null, bins=bins, density=True, color="0.7",
                        label="Gaussian-matrix null (pooled)")
            grid = np.linspace(lo, hi, 200)
            ax.plot(grid, np.exp(-grid**2 / (2 * sd**2)) / (sd * math.sqrt(2 * math.pi)), "k--",
                    lw=1, label="N(0, sd_tau^2)")
            if taus.size:
                ax.hist(taus, bins=bins, density=True, alpha=0.6, color="tab:red",
                        label=f"tau on S (|S| = {taus.size})")
            ax.set_xlabel("Kendall tau per identity dimension")
        ax.set_title(f"{name}: p = {fmt_p(r.p)}")
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig
