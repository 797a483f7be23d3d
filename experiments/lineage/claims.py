"""The lineage study (paper Sec. 5, 6.1.2) and its Qwen-style repeat (App. B.3.3): claims and
the sections of RESULTS.md from the saved records of experiments/lineage.py (``--arch llama2``:
figure11, table4b, table4c, table5 and the family's run summaries ``lineage_runs``; ``--arch
qwen2``: figure14, table9, table10, table11, table12 and ``lineage_qwen2_runs``)."""

from __future__ import annotations

import math

from bornbiased_jax.stats import clopper_pearson, fmt_p, kendall_null_sd
from bornbiased_jax.verdicts import DIFFERS, PARTLY, REPRODUCED, UNTESTABLE, Claim
from bornbiased_jax.verdicts import table as claims_table
from experiments.artifacts import legend
# the sections' titles are the study's declaration's
from experiments.lineage import HFINIT_TITLE, LINEAGE_TITLE, QWEN2_HFINIT_TITLE, QWEN2_TITLE

from bornbiased_jax.defaults import BASELINE_THRESHOLD as THRESHOLD  # at or above: related
from bornbiased_jax.fingerprint.methods.result import ALPHA
from experiments.common.paper_values import PAPER_TABLE4B_8
TITLES = {"figure11": "Figure 11: seed-42 init vs checkpoints",
          "table4b": "Table 4b / 8: init vs own trained model",
          "table4c": "Table 4c: init s_i vs trained s_j", "table5": "Table 5: continued models",
          "figure14": "Figure 14: seed-42 init vs checkpoints (Qwen-style)",
          "table9": "Table 9: init vs init (Qwen-style)",
          "table10": "Table 10: init vs own trained model (Qwen-style)",
          "table11": "Table 11: init s_i vs trained s_j (Qwen-style)",
          "table12": "Table 12: continued models (Qwen-style)"}
BASELINES = [("Intrinsic", "intrinsic"), ("REEF", "reef"), ("PCS", "pcs"), ("ICS", "ics")]
def paper_marks(rec: dict) -> tuple:
    """The paper's correct (True) / wrong (False) marks of one pair: t, U, then the four
    baselines (None where the paper gives no value), read off its values as the paper marks
    them (p <= 0.01 says one lineage, a similarity >= 0.8 says one lineage)."""
    p, same = rec["paper"], rec["same_lineage"]
    return ((p["t"] <= ALPHA) == same, (p["u"] <= ALPHA) == same,
            *[((p[k] >= THRESHOLD) == same) if k in p else None for _, k in BASELINES])


def marks(rec: dict, kind: str) -> tuple:
    """Our correct (True) / wrong (False) marks of one pair: t, U, then the four baselines."""
    same = rec["same_lineage"]
    sp = rec["seedprint"][kind]
    return ((sp["paper/t_mean"] <= ALPHA) == same, (sp["paper/u_mean"] <= ALPHA) == same,
            *[(rec["baselines"][k] >= THRESHOLD) == same for _, k in BASELINES])


def _pcs_own_init(rec: dict) -> str:
    """'; PCS(own init) x' for a trained suspect; nothing for an initialisation (the record
    has no value, or NaN: there is no training to compare with)."""
    v = rec.get("pcs_own_init")
    return "" if v is None or not math.isfinite(v) else f"; PCS(own init) {v:.3f}"


def _why(rec: dict, kind: str, n: int) -> str:
    """The measurement behind a SeedPrint verdict that differs from the paper's."""
    sp = rec["seedprint"][kind]
    sd = kendall_null_sd(n)
    if rec["same_lineage"]:
        return (f"missed ({kind}): mean tau on S {sp['paper/mean_tau']:+.3f} "
                f"({sp['paper/mean_tau'] / sd:+.1f} null sd), |S| {sp['paper/S']}"
                + _pcs_own_init(rec))
    return (f"false lineage ({kind}): mean tau on S {sp['paper/mean_tau']:+.3f} = "
            f"{sp['paper/mean_tau'] / sd:+.1f} sd of tau under independence, while the "
            f"calibrated test (fresh inits as null) gives p {fmt_p(sp['calibrated/exact'])}: "
            f"unrelated models correlate on shared inputs")


def pair_claims(name: str, d: dict) -> list[Claim]:
    """Tables 4b, 4c, 5 (Qwen-style: 9-12), one row per pair, from our correct/wrong marks
    beside the paper's (:func:`marks`, :func:`paper_marks`):

    * reproduced when they are equal everywhere: SeedPrint's t and U for every input kind, and
      the baselines (Intrinsic, REEF, PCS, ICS) where the paper gives them;
    * partly reproduced when SeedPrint's t and U marks equal the paper's for every input kind
      but a baseline's mark does not: the row says that SeedPrint's part holds and which
      baselines differ, with their values and the paper's;
    * differs when a SeedPrint mark differs (whatever the baselines), with the columns that
      differ and the measurement behind them.

    A note is added where the calibrated test errs."""
    n = d["run"]["settings"]["n"]
    out = []
    for r in d["records"]:
        p = r["paper"]
        want_all = paper_marks(r)
        paper = f"t {fmt_p(p['t'])}, U {fmt_p(p['u'])}"
        if "pcs" in p:
            paper += (f"; Intrinsic {p['intrinsic']:.3f}, REEF {p['reef']:.3f}, PCS "
                      f"{p['pcs']:.3f}, ICS {p['ics']:.3f}")
        ours, bad, base_bad, notes = [], [], [], []  # bad: every column that differs
        seedprint_differs = False
        cols = ["t", "U"] + [b for b, _ in BASELINES]
        for i, (kind, sp) in enumerate(r["seedprint"].items()):
            ours.append(f"{kind}: t {fmt_p(sp['paper/t_mean'])}, U {fmt_p(sp['paper/u_mean'])}, "
                        f"official {fmt_p(sp['official/two_phi_bar'])}, calibrated "
                        f"{fmt_p(sp['calibrated/exact'])}")
            got = marks(r, kind)  # the baselines' marks do not depend on the input kind
            for j, (want, have) in enumerate(zip(want_all, got)):
                if want is not None and want != have and j < 2:
                    bad.append(f"{cols[j]} ({kind})")
                    seedprint_differs = True
                elif want is not None and want != have and i == 0:
                    key = BASELINES[j - 2][1]
                    why = f"{cols[j]} {r['baselines'][key]:.3f} vs the paper's {p[key]:.3f}" \
                        if key in p else f"{cols[j]} {r['baselines'][key]:.3f}"
                    if key == "pcs":
                        why += (f" (without the gains {r['pcs_no_norms']:.3f}: training moved "
                                f"the weights less than in the paper)" if r["same_lineage"]
                                else f" (without the gains {r['pcs_no_norms']:.3f})")
                    bad.append(why)
                    base_bad.append(why)
            if want_all[0] and not got[0]:
                bad.append(_why(r, kind, n))
                seedprint_differs = True
            if (sp["calibrated/exact"] <= ALPHA) != r["same_lineage"]:
                notes.append(f"the calibrated test errs here ({kind}: p "
                             f"{fmt_p(sp['calibrated/exact'])}, z {sp['calibrated/z']:+.2f}"
                             + ("" if sp["calibrated/exact_valid"] else
                                "; its null is not exact for a trained base") + ")")
        b = r["baselines"]
        ours.append("Intrinsic {:.3f}, REEF {:.3f}, PCS {:.3f}, ICS {:.3f}; PCS without gains "
                    "{:.3f}".format(b["intrinsic"], b["reef"], b["pcs"], b["ics"],
                                    r["pcs_no_norms"]) + _pcs_own_init(r))
        if seedprint_differs:
            verdict, why = DIFFERS, "; ".join(dict.fromkeys(bad))
        elif base_bad:
            verdict = PARTLY
            why = (f"holds: SeedPrint (t and U give the paper's marks for "
                   f"{' and '.join(r['seedprint'])} inputs); does not hold: the baselines whose "
                   f"mark (similarity >= {THRESHOLD} says one lineage) is not the paper's: "
                   + "; ".join(dict.fromkeys(base_bad)))
        else:
            verdict, why = REPRODUCED, ""
        if notes:
            why += (". Note: " if why else "Note: ") + "; ".join(notes)
        out.append(Claim(f"{TITLES[name].split(':')[0]}: {r['pair']}", paper, "; ".join(ours),
                         verdict, why, "App. B.3.3" if name in QWEN2_TABLES else "Sec. 6.1.2"))
    return out


def figure11_claims(d: dict) -> list[Claim]:
    """Per input kind: reproduced when the lineage's mean tau is above the seed-123 baseline at
    every checkpoint with a one-sided U-test p <= 0.01 at every one; partly when above at every
    checkpoint but not significant at some; differs otherwise."""
    out = []
    for kind, rec in d["records"]["inputs"].items():
        sh = rec["shift"]
        above = sum(x["diff"] > 0 for x in sh)
        signif = sum(x["p_u"] <= ALPHA for x in sh)
        last = rec["curves"]["base-s42"][-1]
        base = rec["curves"]["base-s123"]
        ours = (f"{kind}: lineage above the seed-123 baseline at {above}/{len(sh)} checkpoints "
                f"(U p <= 0.01 at {signif}); final step {last['step']}: seed-42 "
                f"{last['mean']:+.3f} +- {last['std']:.3f}, seed-123 {base[-1]['mean']:+.3f} "
                f"+- {base[-1]['std']:.3f}; seed-123 init {base[0]['mean']:+.3f} (null sd of "
                f"tau {rec['kendall_null_sd']:.3f})")
        ok = above == len(sh) and signif == len(sh)
        verdict, why = ((REPRODUCED, "") if ok else
                        (PARTLY, "shifted up but not significant at every checkpoint")
                        if above == len(sh) else (DIFFERS, f"above at {above}/{len(sh)}"))
        out.append(Claim(f"Figure 11 ({kind} inputs): seed-42 init vs checkpoints",
                         "same-lineage taus small but systematically above the seed-123 baseline",
                         ours, verdict, why, "Sec. 5"))
    return out


QWEN2_TABLES = ("table9", "table10", "table11", "table12")


def _separates(k: int, n: int) -> tuple[bool, float]:
    """Whether ``k`` rejections among ``n`` checkpoints of another lineage are within what a
    test at level ALPHA allows: the exact (Clopper-Pearson) 95 % interval of the rejection
    rate reaches down to ALPHA (its lower bound <= ALPHA; equivalently, the one-sided exact
    binomial test of rate <= ALPHA does not reject at 2.5 %). Returns (within, lower bound)."""
    lo, _ = clopper_pearson(k, n)
    return lo <= ALPHA, lo


def figure14_claims(d: dict) -> list[Claim]:
    """Figure 14 (Qwen-style; the paper shows no numbers, only that every checkpoint gives
    p < 0.01), per input kind, a rule that looks at both lineages. The test calls a checkpoint
    related when its t and U p-values against the seed-42 init are both <= 0.01, as the paper
    reads them.

    * Related lineage: every checkpoint of the seed-42 run must be called related; the steps
      where it is not are listed.
    * Unrelated lineage: the same decision on the seed-123 run's checkpoints (its init
      counted) must not call them related beyond the test's level: the k of n called related
      must have a 95 % Clopper-Pearson interval whose lower bound is <= 0.01
      (:func:`_separates`; 0/n and 1/n of 11 pass, 2/11 or more do not). The checkpoints of
      one run share its init and the probe inputs, so they are not independent trials; the
      interval treats them as such, and a count far beyond the bound (all of them, say) is
      what the rule is for.

    Reproduced when both hold. Differs otherwise: when the related checkpoints are missed
    (with their steps), and when the unrelated lineage is called related beyond the level,
    since then a p < 0.01 does not single out the lineage and the figure's reading (p < 0.01
    marks the same lineage) is contradicted by our measurement; the row says how many
    unrelated checkpoints were called related. That is not 'untestable': no precondition of
    the run failed (both runs trained and were measured); what fails is the test the claim is
    about. Without checkpoints of the other lineage the test's level cannot be checked:
    untestable."""
    out = []
    for kind, rec in d["records"]["inputs"].items():
        own, other = rec["curves"]["base-s42"], rec["curves"]["base-s123"]
        hit = [r["step"] for r in own if max(r["paper_t"], r["paper_u"]) <= ALPHA]
        false = [r["step"] for r in other if max(r["paper_t"], r["paper_u"]) <= ALPHA]
        either = [r["step"] for r in other if min(r["paper_t"], r["paper_u"]) <= ALPHA]
        worst = max(own, key=lambda r: max(r["paper_t"], r["paper_u"]))
        sh = rec["shift"]
        ours = (f"{kind}: seed-42 run: t and U p <= 0.01 at {len(hit)}/{len(own)} checkpoints "
                f"(largest p {fmt_p(max(worst['paper_t'], worst['paper_u']))} at step "
                f"{worst['step']}); seed-123 run (another lineage, its init counted): t and U p "
                f"<= 0.01 at {len(false)}/{len(other)} checkpoints (t or U at {len(either)}/"
                f"{len(other)}); Kendall taus of the lineage above the seed-123 run's at "
                f"{sum(x['diff'] > 0 for x in sh)}/{len(sh)} checkpoints")
        missed = [r["step"] for r in own if r["step"] not in hit]
        claim = f"Figure 14 ({kind} inputs): seed-42 init vs checkpoints (Qwen-style)"
        if not other:
            out.append(Claim(claim, "p < 0.01 at every checkpoint", ours, UNTESTABLE,
                             "no checkpoint of another lineage to check the test's level on",
                             "App. B.3.3"))
            continue
        within, lo = _separates(len(false), len(other))
        reasons = [f"p > 0.01 at steps {missed}"] if missed else []
        if not within:
            reasons.append(
                f"the test does not separate the lineages here: it also calls {len(false)}/"
                f"{len(other)} checkpoints of the seed-123 run (another lineage) related, "
                f"beyond its level (95 % Clopper-Pearson interval of that rate from "
                f"{lo:.2f} > 0.01)")
        why = "; ".join(reasons)
        if within and false:
            why += ((". Note: " if why else "Note: ") + "the paper test (t and U p <= 0.01) "
                    f"also calls {len(false)}/{len(other)} checkpoints of the seed-123 run "
                    f"related, within its level (95 % Clopper-Pearson interval from {lo:.3f} "
                    "<= 0.01)")
        out.append(Claim(claim, "p < 0.01 at every checkpoint", ours,
                         DIFFERS if reasons else REPRODUCED, why, "App. B.3.3"))
    return out


def runs_table(runs: list[dict]) -> list[str]:
    """The family's runs (``lineage_runs``'s summaries) as markdown lines."""
    lines = ["| run | corpus | from | steps | tokens | train time (s) | final val loss |",
             "|---|---|---|---:|---:|---:|---:|"]
    for s in runs:
        name = s["run"]
        if not s.get("finished", True):
            lines.append(f"| {name} | | | not finished | | | |")
            continue
        src = s["init_from"]["label"] if s.get("init_from") else "init"
        kind = name.split("-")[1] if name.startswith("cont-") else "base"
        lines.append(f"| {name} | {kind} ({len(s['corpus'])} path(s)) | {src} | "
                     f"{s['steps']} | {s['tokens']:,} | {s['train_seconds']} | "
                     f"{s['final_val_loss']:.3f} |")
    return lines


# architecture -> (record names of its claims, in order; its runs record; the section's title)
ARCHS = {
    "llama2": (["figure11", "table4b", "table4c", "table5"], "lineage_runs", LINEAGE_TITLE),
    "qwen2": (["figure14", "table9", "table10", "table11", "table12"], "lineage_qwen2_runs",
              QWEN2_TITLE),
}


# The family's initialisation: the records of the GPT-2-scaled family (App. B.1's init, the
# default) have the plain names, those of the HF-init family (the released code's init,
# ``--init hf``) the suffix; each row names the init it was measured with.
HFINIT = "_hfinit"
INITS = {"gpt2": ("", "GPT-2-scaled init"), "hf": (HFINIT, "HF init")}


def _claims_of(name: str, d: dict) -> list[Claim]:
    if name == "figure11":
        return figure11_claims(d)
    if name == "figure14":
        return figure14_claims(d)
    return pair_claims(name, d)


def _gaussian_marks(rec: dict) -> str:
    """'right' / 'wrong' / 'right by one of t and U only': whether the paper's test (t and U)
    gives the pair's true relation with Gaussian inputs."""
    t, u = marks(rec, "gaussian")[:2]
    return "right" if t and u else "wrong" if not (t or u) else "right by one of t and U only"


def init_sentence(name: str, here: dict, other: dict | None, init: str) -> dict[str, str]:
    """Row label -> a sentence saying whether the row's Gaussian-input verdict survives the
    change of initialisation, from the same experiment's record measured on the family with
    the other init (``other``; None when it was not measured). For a pair (Tables 4b, 4c, 5):
    the Gaussian-input marks of the paper's test (t and U right or wrong about the pair's
    true relation) under both inits: the same marks survive, other marks do not. For Figure 11's
    Gaussian row: its verdict under both inits. With ``other`` not measured, every
    Gaussian-input row says so. Rows of another input kind get none."""
    mine, theirs = INITS[init][1], INITS["hf" if init == "gpt2" else "gpt2"][1]
    if other is None:
        labels = [c.claim for c in _claims_of(name, here) if "(gaussian" in c.claim]
        recs = here.get("records")
        if isinstance(recs, list):
            labels += [f"{TITLES[name].split(':')[0]}: {r['pair']}" for r in recs
                       if isinstance(r, dict) and "pair" in r
                       and "gaussian" in r.get("seedprint", {})]
        return {label: f"Not measured with the {theirs}: whether this Gaussian-input verdict "
                       "survives the change of init is not known" for label in labels}
    out = {}
    if name in ("figure11", "figure14"):
        ours = {c.claim: c for c in _claims_of(name, here) if "(gaussian" in c.claim}
        alt = {c.claim: c for c in _claims_of(name, other) if "(gaussian" in c.claim}
        for label, c in ours.items():
            if label in alt:
                same = alt[label].verdict == c.verdict
                out[label] = (f"with the {theirs}: {alt[label].verdict} ({alt[label].ours}); "
                              f"the Gaussian-input verdict "
                              + ("survives the change of init" if same else
                                 f"does not survive the change of init ({c.verdict} with the "
                                 f"{mine})"))
        return out
    alt = {r["pair"]: r for r in other["records"]}
    for r in here["records"]:
        a = alt.get(r["pair"])
        if "gaussian" not in r["seedprint"]:
            continue
        label = f"{TITLES[name].split(':')[0]}: {r['pair']}"
        if a is None or "gaussian" not in a["seedprint"]:
            out[label] = (f"Not measured with the {theirs}: whether this Gaussian-input "
                          "verdict survives the change of init is not known")
            continue
        m, ma = _gaussian_marks(r), _gaussian_marks(a)
        sp = a["seedprint"]["gaussian"]
        nums = f"t {fmt_p(sp['paper/t_mean'])}, U {fmt_p(sp['paper/u_mean'])}"
        out[label] = (f"Gaussian inputs with the {theirs}: {nums}, the paper's test {ma} about "
                      f"this pair ({m} with the {mine}): the Gaussian-input verdict "
                      + ("survives the change of init" if m == ma else
                         "does not survive the change of init"))
    return out


def survival_summary(records: dict, arch: str = "llama2") -> str:
    """One paragraph over the pair tables of ``arch`` measured under both inits: of the pairs
    with Gaussian inputs, in how many the paper's test's marks (right or wrong about the
    pair's true relation) survive the change of init, and what that count hides: the
    survivors split into true lineages found under both and unrelated pairs called related
    under both, each with the range of its t and U p-values and of its mean tau on S (in sd of
    tau under independence) under the GPT-2-scaled init and under the HF init, so a false
    lineage that survives only just (p from 1e-40 to 0.004) reads as such; then the pairs
    whose marks do not survive."""
    names = [n for n in ARCHS[arch][0] if n not in ("figure11", "figure14")]
    tables = ", ".join(TITLES[n].split(":")[0].replace("Table ", "") for n in names)
    same_true, same_false, moved = [], [], []
    for name in names:
        other = {r["pair"]: r for r in records.get(name + HFINIT, {}).get("records", [])}
        if name not in records:
            continue
        n = records[name]["run"]["settings"]["n"]
        for r in records[name]["records"]:
            a = other.get(r["pair"])
            if a is None or "gaussian" not in r["seedprint"] or "gaussian" not in a["seedprint"]:
                continue
            label = f"{TITLES[name].split(':')[0]}: {r['pair']}"
            if _gaussian_marks(r) != _gaussian_marks(a):
                moved.append(label)
                continue
            sd = kendall_null_sd(n)
            eff = [(x["seedprint"]["gaussian"]["paper/t_mean"],
                    x["seedprint"]["gaussian"]["paper/u_mean"],
                    x["seedprint"]["gaussian"]["paper/mean_tau"] / sd) for x in (r, a)]
            (same_true if r["same_lineage"] else same_false).append(eff)

    def span(vals, fmt):
        lo, hi = min(vals), max(vals)
        return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}..{fmt(hi)}"

    def effects(group):
        p = lambda v: fmt_p(v)  # noqa: E731
        t = lambda v: f"{v:+.1f}"  # noqa: E731
        return "; ".join(
            f"{init}: t {span([e[i][0] for e in group], p)}, U {span([e[i][1] for e in group], p)}"
            f", mean tau on S {span([e[i][2] for e in group], t)} sd"
            for i, init in ((0, INITS['gpt2'][1]), (1, INITS['hf'][1])))

    n_all = len(same_true) + len(same_false) + len(moved)
    text = (f"Gaussian-input pairs measured under both inits (Tables {tables}): the paper's "
            f"test's marks survive the change of init in {len(same_true) + len(same_false)} "
            f"of {n_all}")
    parts = []
    if same_true:
        parts.append(f"{len(same_true)} true lineage{'s' if len(same_true) > 1 else ''} "
                     f"found under both ({effects(same_true)})")
    if same_false:
        parts.append(f"{len(same_false)} unrelated pair{'s' if len(same_false) > 1 else ''} "
                     f"called related under both ({effects(same_false)})")
    text += (": " + "; and ".join(parts)) if parts else ""
    if moved:
        text += (f". They do not in {', '.join(moved)} (each row gives its marks under "
                 f"both)")
    return text + "."


def claims(records: dict, arch: str = "llama2", init: str = "gpt2") -> list[Claim]:
    """Every claim of one architecture's lineage records measured on the family with ``init``
    (each row's name says which), with, for the Gaussian-input rows, whether the verdict
    survives the other init (:func:`init_sentence`) where the other family was measured."""
    names, _, _ = ARCHS[arch]
    suffix, label = INITS[init]
    other_suffix = INITS["hf" if init == "gpt2" else "gpt2"][0]
    out = []
    for name in names:
        rows = _claims_of(name, records[name + suffix])
        said = init_sentence(name, records[name + suffix], records.get(name + other_suffix),
                             init)
        for c in rows:
            if c.claim in said:
                c.why = f"{c.why}. {said[c.claim]}" if c.why else said[c.claim]
            c.claim = f"{c.claim} [{label}]"
        out += rows
    return out


def section(records: dict, arch: str = "llama2", init: str = "gpt2") -> str:
    """The lineage section of RESULTS.md for ``arch`` (without its marker lines) from the
    records ``{name: saved JSON}`` of its experiments and its runs record, measured on the
    family with ``init`` (``INITS``)."""
    names, runs_name, title = ARCHS[arch]
    suffix = INITS[init][0]
    if init == "hf":
        title = HFINIT_TITLES[arch]
    info = records[names[-1] + suffix]["run"]
    s = info["settings"]
    fam = records[runs_name + suffix]["records"]["family"]
    corpora = fam["corpora"]
    named = f"base = {corpora['base']}, prose = {corpora['prose']}, code = {corpora['code']}"
    where = legend(named)
    command = ("python -m experiments.lineage" + ("" if arch == "llama2" else f" --arch {arch}")
               + (" --init hf" if init == "hf" else ""))
    if init == "hf":
        init_text = ("Initialisation: the released code's (HF default: every weight N(0, 0.02), "
                     "no 1/sqrt(2L) on W_O and W_down; its null initialisations too); "
                     "everything else as the GPT-2-scaled family of the section "
                     + ("above" if arch == "llama2" else "'" + ARCHS[arch][2] + "'") + ". ")
    else:
        hf_command = ("python -m experiments.lineage" + ("" if arch == "llama2" else
                                                        f" --arch {arch}") + " --init hf")
        init_text = ("Initialisation: App. B.1's GPT-2-scaled residual init (W_O and W_down "
                     "scaled by 1/sqrt(2L)); the released code uses the HF default instead, "
                     + ("and the section below measures the same family with it. "
                        if all(n + HFINIT in records for n in names) else
                        f"which this {'' if arch == 'llama2' else 'Qwen-style '}family has not "
                        f"been measured with (`{hf_command}` trains and measures it). "))
    lines = [f"## {title}", "",
             f"Generated from the records of `{command}` ({info['scale']} "
             # the committed RESULTS.md names the family's old address, kept by
             # experiments/lineage/family.py (now experiments/common/family.py)
             f"scale, {info['device']}). Family (experiments/lineage/family.py): "
             f"`{fam['preset']}` with {tuple(fam['model_set'])}, seeds 42/123/1000/2000, one "
             f"data seed (the same batches in the same order), {fam['steps']} steps of "
             f"{fam['batch_size']} x {fam['seq_len']} tokens; the seed-1000 and seed-123 bases "
             f"continued on a prose corpus (TinyStories' role) and a code corpus (The Stack's "
             f"role). Corpora: {named}" + (f" ({where})" if where else "") + ". " + init_text,
             "",
             f"SeedPrint: n = {s.get('n')} random inputs of T = {s.get('seq_len')} "
             f"({', '.join(s.get('inputs', []))}); 'paper' = Algorithm 1 (top-m, m = 0.52 "
             f"d_out; t and U: mean of {s.get('trials')} Gaussian-null draws), 'official' = the "
             f"released code, 'calibrated' = K = {s.get('null_models')} fresh initialisations "
             f"as the null (exact when the base is an initialisation, not for a continued "
             f"model's trained base). "
             f"Baselines: REEF on {s.get('reef_windows')} held-out base-corpus windows of "
             f"{s.get('reef_seq_len')} tokens, ICS on the {s.get('ics_tokens')} least frequent "
             f"tokens, threshold 0.8. Kendall-tau curves: the init's top-{s.get('fig11_m')} "
             "dims. Verdict of a pair: 'reproduced' when our correct/wrong marks equal the "
             "paper's (t and U for both input kinds, the baselines the paper gives); 'partly "
             "reproduced' when SeedPrint's t and U marks equal the paper's and only a "
             "baseline's differ; 'differs' when a SeedPrint mark differs; the row names the "
             "columns that differ and the measurement behind them. "
             + ("" if arch == "llama2" else
                "Figure 14: reproduced only when the test calls every checkpoint of the seed-42 "
                "run related and those of the seed-123 run (another lineage) no more often than "
                "its level 0.01 allows (95 % Clopper-Pearson interval). ")
             + "PCS(own init) = the trained model vs its "
             "own initialisation (" + (f"paper: {_pcs_own():.2f}" if arch == "llama2" else
                                       f"the paper gives it for its LLaMA-style models only: "
                                       f"{_pcs_own():.2f}") + ").",
             ""] + ([survival_summary(records, arch), ""] if init == "hf" else []) + [
             claims_table(claims(records, arch, init)), "", "The family's runs:", ""]
    lines += runs_table(records[runs_name + suffix]["records"]["runs"])
    return "\n".join(lines) + "\n"


HFINIT_TITLES = {"llama2": HFINIT_TITLE, "qwen2": QWEN2_HFINIT_TITLE}
EXPERIMENTS = ARCHS["llama2"][0] + [ARCHS["llama2"][1]]
HFINIT_EXPERIMENTS = [n + HFINIT for n in EXPERIMENTS]
QWEN2_EXPERIMENTS = ARCHS["qwen2"][0] + [ARCHS["qwen2"][1]]
QWEN2_HFINIT_EXPERIMENTS = [n + HFINIT for n in QWEN2_EXPERIMENTS]


def _pcs_own() -> float:
    """PCS of a trained model against its own initialisation, as Table 8 prints it (0.580 or
    0.581 for every seed)."""
    return min(v[4] for v in PAPER_TABLE4B_8.values())
