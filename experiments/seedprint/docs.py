"""The measured statements of docs/seedprint.md, generated from the committed SeedPrint records
(so the page cannot drift from RESULTS.md): why the calibrated test's default statistic is
``spearman_all`` (``seedprint_power``'s record) and how the permutation test's Spearman and
Pearson versions compare on trained lineages, and what the renaming-robust aligned test does on
the same pools (``seedprint_trained``'s); and the statement of what Table 4a at the paper's
shape shows of the Gaussian-input confound (:func:`table4a_paper_scale_block`). The page also
shows the lineage benchmark's summary (``experiments.render.DOC_BLOCKS`` names the blocks made
from other studies' records).
Each block sits between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` in the page;
:func:`render` rewrites them (a block whose record is missing then says so)."""

from __future__ import annotations

import re

from bornbiased_jax.errors import UserError
from experiments import STUDY_OF
from experiments.seedprint.claims import EXCESS, table4a_cell

from bornbiased_jax.fingerprint.methods.result import ALPHA  # the paper's significance level
DOCS = "docs/seedprint.md"


def _calibrated_stats(rows: list[dict]) -> list[str]:
    names = {k.split("/")[1] for r in rows for k in r if k.startswith("calibrated/")}
    return sorted(names)


def statistic_choice(power: dict) -> str:
    """What ``seedprint_power`` measured of the calibrated test's statistics, and which of them
    is as powerful as any where the test is exact while rejecting least where it is not."""
    rows, s = power["records"], power["run"]["settings"]
    K = s["null_models"]
    floor = 1 / (K + 1)
    stats = _calibrated_stats(rows)

    def count(comparison, stat, rule):
        rs = [r for r in rows if r["comparison"] == comparison
              and f"calibrated/{stat}/exact" in r]
        return sum(rule(r[f"calibrated/{stat}/exact"]) for r in rs), len(rs)

    at_floor = {t: count("lineage", t, lambda p: p <= floor * (1 + 1e-9)) for t in stats}
    cross = {t: count("cross-seed", t, lambda p: p <= ALPHA) for t in stats}
    trained = {t: count("trained base", t, lambda p: p <= ALPHA) for t in stats}
    measured = [t for t in stats if at_floor[t][1] and trained[t][1]]
    frac = {t: at_floor[t][0] / at_floor[t][1] for t in measured}
    tb = {t: trained[t][0] / trained[t][1] for t in measured}
    best = [t for t in measured if frac[t] == max(frac.values()) and tb[t] == min(tb.values())]
    lines = [
        f"Measured (`seedprint_power`: {s['preset']} trained {s['steps']} steps, a checkpoint "
        f"every {s['save_every']}; n = {s['n']} {s['input']} inputs of length {s['fp_seq_len']}; "
        f"K = {K} fresh initialisations, so the smallest exact p is 1/{K + 1}; generated from "
        "results/records/seedprint/seedprint_power.json). Counts are over the checkpoints at "
        "which a statistic was computed:", "",
        "| statistic | initialisation as base: checkpoints at the smallest p | cross-seed "
        f"initialisation rejected (p <= {ALPHA}) | unrelated trained base rejected |",
        "|---|---:|---:|---:|"]
    for t in stats:
        lines.append(f"| `{t}` | {at_floor[t][0]}/{at_floor[t][1]} | {cross[t][0]}/{cross[t][1]} "
                     f"| {trained[t][0]}/{trained[t][1]} |")
    names = [f"`{t}`" for t in best]
    listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    lines += ["", (f"With an initialisation as base, {listed} "
                   + ("reaches" if len(best) == 1 else "reach")
                   + " the smallest p as often as any statistic and "
                   + ("rejects" if len(best) == 1 else "reject")
                   + " the unrelated trained base least often.") if best else
              "No statistic both reaches the smallest p most often with an initialisation as "
              "base and rejects the unrelated trained base least often."]
    return "\n".join(lines)


def pearson_vs_spearman(trained: dict) -> str:
    """The permutation test's Spearman and Pearson versions on ``seedprint_trained``'s true
    lineages: rejections at alpha = 0.01 and the median z of each, per setting."""
    rows = [r for r in trained["records"] if r["kind"] == "power"]
    by = {}
    for r in rows:
        b = by.setdefault(r["setting"], {"s": 0, "p": 0, "n": 0, "zs": [], "zp": []})
        b["s"] += r["power"]["permutation"]["rejections"]
        b["p"] += r["power"]["permutation_pearson"]["rejections"]
        b["n"] += r["power"]["permutation"]["trials"]
        b["zs"].append(r["median_z"]["spearman"])
        b["zp"].append(r["median_z"]["pearson"])
    lines = ["Measured (`seedprint_trained`, generated from "
             "results/records/seedprint/seedprint_trained.json): the permutation test's two "
             f"statistics on true lineages, rejections at alpha = {ALPHA} over all checkpoints "
             "and the range of the median z over checkpoints.", "",
             "| lineage | Spearman | Pearson | median z, Spearman | median z, Pearson |",
             "|---|---:|---:|---|---|"]
    for setting, b in by.items():
        lines.append(f"| {setting} | {b['s']}/{b['n']} | {b['p']}/{b['n']} | "
                     f"{min(b['zs']):.1f}-{max(b['zs']):.1f} | "
                     f"{min(b['zp']):.1f}-{max(b['zp']):.1f} |")
    same = all(b["s"] == b["p"] for b in by.values())
    lines += ["", "The two reject the same number of trials in every setting, so power does not "
              "separate them at this scale." if same else "Their rejection counts differ (above)."]
    return "\n".join(lines)


def aligned_measured(trained: dict) -> str:
    """The aligned test on ``seedprint_trained``'s pools: its false-positive rate at alpha =
    0.01 per pool (with an initialisation or a trained model as base) and which tests find the
    renamed copies."""
    recs = trained["records"]
    fpr = [r for r in recs if r["kind"] == "fpr" and "aligned" in r["rates"]]
    power = [r for r in recs if r["kind"] == "power" and "aligned" in r["power"]]
    if not fpr:
        return ("Not measured yet: the committed seedprint_trained record predates the aligned "
                "test (`python -m experiments.seedprint_trained` measures it).")
    lines = ["Measured (`seedprint_trained`, generated from "
             "results/records/seedprint/seedprint_trained.json): rejections at alpha = "
             f"{ALPHA} of unrelated pairs, with the jackknife-over-models 95 % interval.", "",
             "| pool | base | aligned | permutation | calibrated (spearman_all) |",
             "|---|---|---:|---:|---:|"]
    for r in fpr:
        base = ("initialisation" if r["setting"].startswith("initialisation") or r["step"] == 0
                else "trained")
        cells = []
        for t in ("aligned", "permutation", "calibrated"):
            c = r["rates"][t][str(ALPHA)]
            jk = c.get("jackknife", {}).get("ci95")
            cells.append(f"{c['rejections']}/{c['pairs']}" + (
                f" [{jk[0]:.3f}, {jk[1]:.3f}]" if jk else ""))
        lines.append(f"| {r['setting']} (step {r['step']}) | {base} | " + " | ".join(cells)
                     + " |")
    if power:
        lines += ["", "True lineages, rejections at alpha = 0.01:", "",
                  "| lineage | step | aligned | permutation | calibrated | paper t |",
                  "|---|---:|---:|---:|---:|---:|"]
        for r in power:
            lines.append(f"| {r['setting']} | {r['step']} | " + " | ".join(
                f"{r['power'][t]['rejections']}/{r['power'][t]['trials']}"
                for t in ("aligned", "permutation", "calibrated", "paper")) + " |")
    return "\n".join(lines)


INIT_NAMES = {"gpt2init": "GPT-2-scaled (App. B.1)", "hfinit": "HF default (released code)"}


def _init_name(model: str) -> str:
    return next((v for k, v in INIT_NAMES.items() if model.endswith(k)), model)


def _init_sentence(model: str, g: dict | None, t: dict | None) -> str:
    """What one init's Gaussian-input (``g``) and token-input (``t``) counts show (cells of
    :func:`claims.table4a_cell`; None when the record has no pairs of that kind)."""
    from bornbiased_jax.stats import clopper_pearson

    def said(c, kind):
        if c is None:
            return f"no {kind}-input pairs"
        if c["n"] == 0:
            return f"no tested {kind}-input pair (S empty for all {c['rows']})"
        return f"{c['k']} of {c['n']} {kind}-input pairs"

    def tested(c):
        return c is not None and c["n"] > 0

    def excess(c):
        return tested(c) and c["bound"] < EXCESS

    head = (f"with the {_init_name(model)} init the paper's test calls {said(g, 'Gaussian')} "
            f"and {said(t, 'token')} related")
    if not tested(g) and not tested(t):
        return f"{head}: no pair was tested"
    bounds = "; ".join(f"P <= {c['bound']:.2g} for the {kind} count" for c, kind in
                       ((g, "Gaussian"), (t, "token")) if excess(c))
    level = f" ({bounds}, were the test at its level)"
    if excess(g) and tested(t) and not excess(t):
        return f"{head}{level}: the Gaussian-input confound reaches the paper's own shape"
    if excess(g) and excess(t):
        return f"{head}{level}: it fails with both input kinds, not only with Gaussian inputs"
    if excess(t) and tested(g):
        return f"{head}{level}: it fails with token inputs and not beyond chance with Gaussian ones"
    if excess(g) or excess(t):
        return f"{head}{level}; without tested pairs of the other kind the kinds cannot be compared"
    upper = [f"{c['k']} of {c['n']} {kind} pairs leave rates up to "
             f"{clopper_pearson(c['k'], c['n'])[1]:.2f} possible"
             for c, kind in ((g, "Gaussian"), (t, "token")) if tested(c)]
    return (f"{head}, no more than a test at its level could by chance: the confound is not "
            f"shown at this n and T ({'; '.join(upper)}, 95 % upper bounds)")


def table4a_paper_scale_block(paper: dict) -> str:
    """docs/seedprint.md's statement of what Table 4a at the paper's width and depth shows about the
    Gaussian-input confound, from the paper-scale records (``paper``: {name: record}). Per
    init and input kind: how many of the four unrelated pairs each test calls related at
    alpha = 0.01 (the paper's test: t or U p <= 0.01 on a non-empty S; a pair with an empty S
    is not tested). A count is more than chance when a test at its level (each pair at most
    2 alpha) could reach it only with probability below 0.05 by Markov's bound, which holds
    for pairs that share models (with four pairs: 2 or more; ``claims.table4a_cell``). The
    confound "reaches" the paper's shape for an init whose Gaussian-input count is more than
    chance while its token-input count (tested) is not; the other outcomes are said as they
    are, a count within chance with the Clopper-Pearson bound its pairs allow."""
    d = (paper or {}).get("table4a")
    if d is None:
        return ("Table 4a at the paper's width and depth (12 blocks, d = 768; n = 2,000, "
                "T = 256) has no record yet: `python -m experiments.paper_scale table4a` "
                "measures it (resumable).")
    st, recs = d["run"]["settings"], d["records"]
    if not recs:
        return "The Table 4a [paper scale] record holds no pairs."
    embedding = {False: "; each seed its own embedding draw",
                 True: "; one embedding draw shared by every seed"}.get(
                     st.get("shared_embedding"), "")
    lines = [f"Table 4a at the paper's width and depth ({st['layers']} blocks, {st['heads']} "
             f"heads, d = {st['d_model']}; n = {st['n']:,}, T = {st['seq_len']}{embedding}; "
             "generated from results/records/paper/seedprint/table4a.json) on the paper's "
             "unrelated pairs, pairs called related at alpha = 0.01:", "",
             "| init | inputs | paper's test (t or U) | released code | permutation (exact) |",
             "|---|---|---:|---:|---:|"]
    cells = {}
    for model, kind in dict.fromkeys((r["model"], r["input"]) for r in recs):
        c = cells[model, kind] = table4a_cell(
            [r for r in recs if r["model"] == model and r["input"] == kind])
        paper_col = f"{c['k']}/{c['n']}" if c["n"] else f"untested (S empty for {c['rows']})"
        perm = "-" if c["permutation"] is None else f"{c['permutation']}/{c['rows']}"
        lines.append(f"| {_init_name(model)} | {kind} | {paper_col} | "
                     f"{c['official']}/{c['rows']} | {perm} |")
    inits = list(dict.fromkeys(m for m, _ in cells))
    said = [_init_sentence(m, cells.get((m, "gaussian")), cells.get((m, "tokens")))
            for m in inits]
    big = (paper or {}).get("table4a_n10k")
    more = _larger_n_sentence(big) if big is not None and big["records"] else ""
    lines += ["", "So " + "; ".join(said) + "." + more + (
        " The paper's T = 1,024 remains a GPU setting." if more else
        " The paper's n = 10,000 and T = 1,024 remain GPU settings.")]
    return "\n".join(lines)


def _larger_n_sentence(d: dict) -> str:
    """What the same pairs show at a larger n (``table4a_n10k``'s record: one init and input
    kind at n = 10,000), by the rule of :func:`table4a_paper_scale_block`: more than chance
    when a test at its level reaches the count with probability below 0.05 (Markov's bound),
    else the Clopper-Pearson bound its pairs allow."""
    from bornbiased_jax.stats import clopper_pearson

    st, recs, run = d["run"]["settings"], d["records"], d["run"]
    out = []
    for model, kind in dict.fromkeys((r["model"], r["input"]) for r in recs):
        c = table4a_cell([r for r in recs if r["model"] == model and r["input"] == kind])
        head = (f" At n = {st['n']:,} (T = {st['seq_len']}; results/records/paper/seedprint/"
                f"table4a_n10k.json, computed on {run.get('device', '?')} in "
                f"{run.get('matmul_precision', 'full')} float32 precision), with the "
                f"{_init_name(model)} init and {kind} inputs, the paper's test calls "
                f"{c['k']} of {c['n']} pairs related and the released code {c['official']} of "
                f"{c['rows']}")
        if not c["n"]:
            out.append(f"{head}: no pair was tested.")
        elif c["bound"] < EXCESS:
            out.append(f"{head} (P <= {c['bound']:.2g} were the test at its level): the "
                       f"confound appears with n at this init.")
        else:
            out.append(f"{head}, no more than a test at its level could by chance: a larger n "
                       f"does not bring the confound out at this init ({c['k']} of {c['n']} "
                       f"leave rates up to {clopper_pearson(c['k'], c['n'])[1]:.2f} possible, "
                       f"95 % upper bound).")
    return "".join(out)


BLOCKS = {"statistic-choice": ("seedprint_power", statistic_choice),
          "permutation-statistic": ("seedprint_trained", pearson_vs_spearman),
          "aligned-measured": ("seedprint_trained", aligned_measured)}


def render(text: str, records: dict, blocks: dict | None = None, page: str = DOCS) -> str:
    """``text`` (the page) with every block of ``blocks`` (default: this page's) regenerated
    from ``records``, or saying that its record is missing; a UserError unless the page has
    each block exactly once. A block whose experiment is None gets every record (and says
    itself what is missing)."""
    for name, (exp, fn) in (BLOCKS if blocks is None else blocks).items():
        body = fn(records) if exp is None else fn(records[exp]) if exp in records else (
            f"Not measured yet: no record results/records/{STUDY_OF.get(exp, 'seedprint')}/"
            f"{exp}.json (`python -m experiments.{exp}` measures it).")
        text, n = re.subn(rf"<!-- {name}:begin -->.*?<!-- {name}:end -->",
                          lambda m: f"<!-- {name}:begin -->\n{body}\n<!-- {name}:end -->",
                          text, flags=re.S)
        if n != 1:
            raise UserError(f"{page} has {n} '{name}' blocks; it needs exactly one "
                            f"(<!-- {name}:begin --> ... <!-- {name}:end -->)")
    return text
