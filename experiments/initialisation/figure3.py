"""Figure 3's rule (Finding 3.1): attention-only models flat, the others preferring a token,
judged against the null of the model's own unembedding where its record is given."""

from __future__ import annotations

import numpy as np
from scipy import stats

from bornbiased_jax.stats import format_log10_p
from bornbiased_jax.verdicts import DIFFERS, PARTLY, REPRODUCED, UNDERPOWERED, Claim
from experiments.initialisation.levels import ALPHA


def unembedding_null_p(k: int, null: dict) -> float:
    """P(a top-1 count >= k) under the simulated null of ``null`` (experiments/initialisation/
    unembedding_null.py: R top-1 counts of N isotropic final states through the model's final
    norm and unembedding), with the add-one rule (1 + #{null >= k}) / (R + 1): its smallest
    value is 1 / (R + 1)."""
    counts = null["records"]["top1_counts"]
    return (1 + sum(c >= k for c in counts)) / (len(counts) + 1)


def _null_text(null: dict) -> str:
    """'median 3, 95 % 4, 99 % 5, max 6 over R = 200' of the null's top-1 counts."""
    c = np.asarray(null["records"]["top1_counts"])
    q = np.quantile(c, [0.5, 0.95, 0.99])
    return (f"median {q[0]:g}, 95 % {q[1]:g}, 99 % {q[2]:g}, max {c.max()} over R = "
            f"{len(c)}")


def figure3_claim(d: dict, null: dict | None = None) -> Claim:
    """Figure 3 from the same runs as Table 2, by the paper's statements: the
    attention-only model's top-1 preference is flat ("as uniform sampling"); the full and
    MLP-only models' are strong; and the full model's "far exceeding" the others: its top-1
    count above MLP-only's (one-sided Fisher exact p <= 0.01 on the record's N).

    A top-1 count is judged against ``null`` when given: the top-1 counts of N isotropic final
    states through the model's own final norm and unembedding, simulated R times
    (:func:`unembedding_null_p`; usable when R >= 99, so that p <= 0.01 is attainable, and
    N is the record's). Uniform sampling over the vocabulary is not that null: the rows of a
    random unembedding differ, so even states with no common direction give a top-1 count
    above the uniform one, and a count significant against uniform sampling (Bonferroni
    binomial p <= 0.01) may be no more than that. Without a usable null the uniform test
    decides only what it can: a count not significant against it is flat (a wider null would
    not make it significant); a significant attention-only count is not decided; the full and
    MLP-only counts are judged by it, as the row says. With the null: flat when the
    attention-only count's null p > 0.01, strong when the full and MLP-only counts' are
    <= 0.01; the row states the attention-only count against the null's quantiles and the
    full model's count.

    Four parts: attention-only flat, the full model strong, MLP-only strong, the full model
    above MLP-only. The last holds when the full model's count is significantly above
    MLP-only's, fails when significantly below, and is not decided otherwise (or without N).
    Reproduced when all four hold; partly reproduced when some hold and some fail (the row
    says which); differs when none holds; consistent, underpowered when none fails but one is
    not decided (the attention-only count significant against uniform sampling with no usable
    null, the full model's not significantly above or below MLP-only's, or no N)."""
    m = {r["mode"]: r for r in d["records"]}
    modes = ("full model", "MLP-only", "self-attention-only")
    lim = np.log10(ALPHA)
    n = d.get("run", {}).get("settings", {}).get("num_seqs")
    R = len(null["records"]["top1_counts"]) if null else 0
    usable = bool(null) and n is not None and null["records"].get("num_seqs") == n and \
        1 / (R + 1) <= ALPHA
    ours = ", ".join(f"{k}: top-1 {100 * m[k]['top1_freq']:.2f}% (p "
                     f"{format_log10_p(m[k]['top1_log10_p'])})" for k in modes)
    exceed = reverse = None
    if n:
        kf, km = (round(m[k]["top1_freq"] * n) for k in ("full model", "MLP-only"))
        table = [[kf, n - kf], [km, n - km]]
        exceed = float(stats.fisher_exact(table, alternative="greater").pvalue)
        reverse = float(stats.fisher_exact(table, alternative="less").pvalue)
        ours += f"; full above MLP-only: Fisher p {exceed:.2g} (N = {n:,})"
    ours += f" (Bonferroni binomial against uniform sampling, alpha {ALPHA})"
    why, undecided = [], []
    holds, fails = [], []  # the parts, by name
    if usable:
        k = {x: round(m[x]["top1_freq"] * n) for x in modes}
        p = {x: unembedding_null_p(k[x], null) for x in modes}
        med = float(np.median(null["records"]["top1_counts"]))
        ours += (f"; against the model's own unembedding (isotropic final states, the null's "
                 f"top-1 of {n:,}: {_null_text(null)}): "
                 + ", ".join(f"{x} {k[x]} (p {p[x]:.2g}, {k[x] / med:.2g}x the null's median)"
                             for x in reversed(modes)))
        flat = p[modes[2]] > ALPHA
        strong = [x for x in modes[:2] if p[x] <= ALPHA]
        if not flat:
            why.append(f"attention-only not flat: {k[modes[2]]} of {n:,} is beyond the "
                       f"unembedding's null (p {p[modes[2]]:.2g}; the null's median "
                       f"{med:g}), against the full model's {k[modes[0]]}")
        else:
            why.append(f"attention-only flat through its own unembedding: {k[modes[2]]} of "
                       f"{n:,} within the null (p {p[modes[2]]:.2g}; the null's median "
                       f"{med:g}), the full model's {k[modes[0]]}")
        why += [f"{x} not beyond the null (p {p[x]:.2g})" for x in modes[:2]
                if x not in strong]
        if not flat and len(strong) == 2:
            why.append("MLP-only and the full model beyond it")
        (holds if flat else fails).append("attention-only flat")
    else:
        flat = m[modes[2]]["top1_log10_p"] > lim
        strong = [x for x in modes[:2] if m[x]["top1_log10_p"] <= lim]
        if not flat:
            undecided.append("the attention-only top-1 is significant against uniform sampling, "
                             "which a random unembedding makes anticonservative, and no "
                             "simulated null through the model's unembedding is at hand")
        else:
            holds.append("attention-only flat")
        why += [f"{x} not significant" for x in modes[:2] if x not in strong]
        if null and not usable:
            why.append(f"the simulated null is not usable here (R = {R}, N "
                       f"{null['records'].get('num_seqs')} vs the record's {n})")
    for x in modes[:2]:
        (holds if x in strong else fails).append(f"{x} strong")
    if exceed is None:
        undecided.append("no N recorded to compare the full model's top-1 with MLP-only's")
    elif exceed <= ALPHA:
        holds.append("full above MLP-only")
    elif reverse <= ALPHA:
        fails.append("full above MLP-only")
        why.append(f"the full model's top-1 below MLP-only's (Fisher p {reverse:.2g})")
    else:
        undecided.append(f"the full model's top-1 neither significantly above MLP-only's "
                         f"('far exceeding': Fisher p {exceed:.2g}) nor below it")
    if fails:
        verdict = PARTLY if holds else DIFFERS
        why.insert(0, f"holds: {', '.join(holds) or 'none'}; fails: {', '.join(fails)}")
        why += undecided
    elif undecided:
        verdict = UNDERPOWERED
        why += undecided
    else:
        verdict = REPRODUCED
    return Claim("Figure 3 / Finding 3.1", "attention-only flat (as uniform sampling); MLP-only "
                 "and full strong preference, the full model's far exceeding", ours,
                 verdict, "; ".join(why), "Sec. 4.1")


def figure3_row(null: dict | None, command: str):
    """Figure 3's rule (:func:`figure3_claim`) with ``null`` (a figure3_null record, or None),
    as a function of the Table 2 / Figure 3 record; without a null the row adds that
    ``command`` simulates the null through the model's own unembedding."""
    def row(d: dict) -> Claim:
        c = figure3_claim(d, null)
        if null is None:
            c.why = ((c.why + "; ") if c.why else "") + (
                f"`{command}` simulates the null through the model's own unembedding")
        return c
    return row
