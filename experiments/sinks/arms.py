"""Sec. 6.2's arms where the baseline grows sinks: the positional-variance arms trained with
several seeds in the regime the grid found (:mod:`experiments.sinks.regime`).

The sink family on Python source (:mod:`experiments.sinks.measure`) never grew a
sink, so its Figure 12 verdicts are untestable. The regime grid found sinks at CPU scale in one
setting: the Bigram-Backcopy task (Guo et al.; ``<s>`` first in every sequence) on llama2-tiny
with 2 layers and 1 head, weight decay 0.5, a constant learning rate after warmup. Here every arm
of Sec. 6.2.1 (and the output gate, not from the paper) is trained in that regime from the same
initialisation seeds (one ``train --seeds`` run per arm and seed group: every seed on the same batches in the
same order), so arm-to-arm differences can be judged against seed-to-seed spread.

A :class:`~experiments.sinks.regime.Cell` per arm (:data:`CPU`, :data:`PAPER`); the
measurements (:mod:`experiments.sinks.arms_measure`) are per seed and checkpoint;
this module turns a saved record into per-arm seed statistics (:func:`seed_stats`), claims
(:func:`claims`), a table (:func:`markdown`) and figures, without running anything.

Seed-level inference: for every arm and quantity the record holds one number per seed (the mean
over evaluation sequences). An arm's difference from the baseline is the mean over seeds of the
paired difference (arm seed s minus baseline seed s: the same data order, and for the arms that
add no parameter, the same initial weights), with the standard error of that mean and a t
interval on n_seeds - 1 degrees of freedom. Window-level standard errors are reported beside
it but never decide a verdict.
"""

from __future__ import annotations

import dataclasses

from bornbiased_jax.stats import SeedMean, paired_mean, seed_mean
from experiments.artifacts import portable
from experiments.common.family import SINK_ARMS
from experiments.sinks.claims import (CONVERGENCE_CLAIMS, NEAR_ZERO, PAPER_TABLE7,
                                          SINK_CLAIMS)
from experiments.sinks.regime import Cell, _stdlib
from bornbiased_jax.verdicts import (BEYOND, DIFFERS, MEASURED, REPRODUCED, UNDERPOWERED,
                                     UNTESTABLE, Claim)

ARM_NAMES = tuple(SINK_ARMS)  # baseline, amplification, attenuation, headwise_rmsnorm, gate
# Seed groups: each is one `train --seeds` run per arm; an arm's seeds are all its groups' seeds.
SEED_GROUPS_CPU = ((0, 1, 2, 3), (4, 5, 6, 7))

# The grid's cell bbm-L2-wd0.5-lr3e-3 grew sinks by step 1,500 (Gu rate 0.47 at T = 64); the arms
# train twice as long so the baseline's sinks have settled, a checkpoint every 250 steps.
_BASE_CPU = Cell("baseline", (f"bbm:{_stdlib('textwrap.py')}",),
                 model_set=("n_layers=2", "n_heads=1"), weight_decay=0.5, lr=3e-3,
                 steps=3000, save_every=250, seeds=SEED_GROUPS_CPU[0])


def arm_cells(base: Cell, groups=None) -> tuple[Cell, ...]:
    """One cell per arm and seed group: ``base`` with the arm's model settings added and the
    group's seeds (same data and optimiser). The first group's cells are named after their
    arm, a later group's ``ARM-sA-B`` (its first and last seed); cells come group by group,
    the arms in :data:`ARM_NAMES` order within each (the baseline first)."""
    groups = groups or (base.seeds,)
    return tuple(dataclasses.replace(base, name=arm if k == 0 else f"{arm}-s{g[0]}-{g[-1]}",
                                     model_set=base.model_set + SINK_ARMS[arm], seeds=tuple(g))
                 for k, g in enumerate(groups) for arm in ARM_NAMES)


def arm_of(cell_name: str) -> str:
    """The arm a cell trains (``gate-s4-7`` -> ``gate``)."""
    return cell_name.split("-s")[0]


CPU = arm_cells(_BASE_CPU, SEED_GROUPS_CPU)
# On a GPU: eight seeds in one group, 3 layers, trained 10,000 steps (the same task and regime).
PAPER = arm_cells(dataclasses.replace(_BASE_CPU, model_set=("n_layers=3", "n_heads=1"),
                                      steps=10_000, save_every=500, seeds=tuple(range(8))))


def merge_groups(recs: list[dict]) -> dict:
    """One arm's record from its seed groups' records (as measured, in group order): the first
    group's settings and command, every group's cell name, the seeds of all groups, the sum of
    their training seconds. Seeds must not repeat."""
    seeds = [s for r in recs for s in r["seeds"]]
    ids = [s["seed"] for s in seeds]
    if len(set(ids)) != len(ids):
        raise ValueError(f"seed groups {[r['name'] for r in recs]} repeat seeds: {ids}")
    return {"name": arm_of(recs[0]["name"]), "groups": [r["name"] for r in recs],
            "command": recs[0]["command"], "settings": recs[0]["settings"],
            "model": recs[0]["model"], "lengths": recs[0]["lengths"],
            "num_seqs": recs[0]["num_seqs"],
            "train_seconds": sum(r.get("train_seconds") or 0 for r in recs), "seeds": seeds}


# ------------------------------------------------------------ seed statistics of a record --

def _last(seed_rec: dict) -> dict:
    return max(seed_rec["checkpoints"], key=lambda c: c["step"])


def final_values(arm: dict) -> dict[str, list[float]]:
    """Per quantity, one number per seed (in seed order) at the last checkpoint:
    ``rate@T`` (eps 0.25) and ``rate03@T`` (eps 0.3) for every length T, ``gu``,
    ``alpha_max@T``, ``nll`` (held-out), ``copy_accuracy``, ``bigram_accuracy``,
    ``rate_late@T``: the eps-0.25 rate averaged over the last LATE checkpoints (a sink that
    comes and goes between checkpoints is seen less noisily; reported, never a verdict), and
    ``nll_first_half``: the mean held-out NLL over the checkpoints after step 0 in the first half
    of training (the area under the early loss curve, the convergence measure)."""
    out: dict[str, list[float]] = {}

    def put(k, v):
        out.setdefault(k, []).append(float(v))

    for s in arm["seeds"]:
        last = _last(s)
        for r in last["paper"]:
            put(f"rate@{r['T']}", r["rate"])
            put(f"rate03@{r['T']}", r["rate_eps03"])
            put(f"alpha_max@{r['T']}", r["alpha_max"])
        put("gu", last["gu"]["rate"])
        put("nll", last["nll"])
        for k in ("copy_accuracy", "bigram_accuracy"):
            if last.get(k) is not None:
                put(k, last[k])
        late = sorted(s["checkpoints"], key=lambda c: c["step"])[-LATE:]
        for r in late[0]["paper"]:
            put(f"rate_late@{r['T']}", sum(next(x["rate"] for x in c["paper"] if x["T"] == r["T"])
                                           for c in late) / len(late))
        half = [c["nll"] for c in s["checkpoints"] if 0 < c["step"] <= last["step"] / 2]
        if half:
            put("nll_first_half", sum(half) / len(half))
    return out


def paired(arm: dict, base: dict, key: str) -> SeedMean:
    """The mean over seeds of (arm - baseline) for quantity ``key``, paired seed by seed over
    the seeds both records hold (at least two)."""
    common = sorted({s["seed"] for s in arm["seeds"]} & {s["seed"] for s in base["seeds"]})
    if len(common) < 2:
        raise ValueError(f"arm {arm['name']!r} shares {len(common)} seed(s) with the baseline: "
                         "cannot pair")

    def only(rec):
        by = {s["seed"]: s for s in rec["seeds"]}
        return dict(rec, seeds=[by[c] for c in common])

    return paired_mean(final_values(only(arm))[key], final_values(only(base))[key])


def seed_grew_sinks(arm: dict) -> list[bool]:
    """Per seed, the regime grid's rule (:func:`sinks_regime.summarise`): above 0 by 2 SE at
    every length and in Gu's setting at the last checkpoint, and Gu's rate risen above step 0's."""
    from experiments.sinks.regime import summarise

    return [summarise({"name": f"{arm['name']}#{s['seed']}", "checkpoints": s["checkpoints"]})
            ["grew_sinks"] for s in arm["seeds"]]


def lengths(arm: dict) -> list[int]:
    return [r["T"] for r in _last(arm["seeds"][0])["paper"]]


def shown_command(command: str) -> str:
    """A recorded command line as RESULTS.md shows it, without the recording machine's paths
    (:func:`experiments.artifacts.portable`: an interpreter's absolute path becomes ``python``
    and the standard library's folder ``<stdlib>``), for records saved before their paths
    were."""
    return portable(command)


# ------------------------------------------------------------------------------- claims --

LATE = 3  # checkpoints averaged in the late-training rate (reported beside the final one)
LOSS_FROM = 200  # the figure's training-loss panel starts here (the first steps dwarf the rest)
EQUIVALENCE = 0.01  # "equal perplexity": the paired NLL difference's 95 % interval inside ±1 %


def _gate_parts(base: dict) -> tuple[dict[int, SeedMean], SeedMean]:
    """The gate's two measurements: the seed-mean final sink rate per length, and the Gu rate's
    rise from step 0 (paired over seeds)."""
    fv = final_values(base)
    means = {T: seed_mean(fv[f"rate@{T}"]) for T in lengths(base)}
    rise = seed_mean([_last(s)["gu"]["rate"] - min(s["checkpoints"], key=lambda c: c["step"])
                      ["gu"]["rate"] for s in base["seeds"]])
    return means, rise


def baseline_gate(base: dict) -> tuple[bool, str]:
    """The validity gate over seeds: at every length the baseline's seed-mean sink rate (eps
    0.25) has its 95 % t interval above 0, and the Gu rate rose from step 0 (paired over seeds,
    interval above 0); with how many seeds grew sinks by the grid's per-run rule."""
    fv = final_values(base)
    means, rise = _gate_parts(base)
    ok = all(m.lo > 0 for m in means.values()) and rise.lo > 0
    grew = seed_grew_sinks(base)
    late = {T: seed_mean(fv[f"rate_late@{T}"]) for T in lengths(base)}
    txt = (", ".join(f"T={T}: {m.text(2)}" for T, m in means.items())
           + f" (seeds at T={max(means)}: "
           + ", ".join(f"{x:.2f}" for x in fv[f"rate@{max(means)}"]) + "; mean of the last "
           f"{LATE} checkpoints: " + ", ".join(f"T={T}: {m.text(2)}" for T, m in late.items())
           + ")"
           + f"; Gu rate {seed_mean(fv['gu']).text(2)}, risen from step 0 by {rise.text(2)}; "
           f"{sum(grew)} of {len(grew)} seeds grew sinks by the grid's per-run rule")
    return ok, txt


def claims(record: dict) -> list[Claim]:
    """RESULTS.md rows of the arms study (``record``: the saved experiment JSON), each verdict by
    a seed-level rule (95 % t intervals over seeds; differences paired seed by seed), each rule
    in its own function: the validity gate (:func:`gate_claim`), each arm's sinks
    (:func:`arm_sinks_claim`), convergence (:func:`convergence_claims`) and the Table-7
    analogue (:func:`table7_claim`). Where an interval is too wide to decide, the verdict is
    consistent, underpowered."""
    arms = record["records"]["arms"]
    if "baseline" not in arms:
        return [Claim("Sec. 6.2 arms in the sink regime", "-", "the baseline is not measured",
                      UNTESTABLE, "no baseline record", "Sec. 6.2")]
    gate = baseline_gate(arms["baseline"])[0]
    return ([gate_claim(arms["baseline"])]
            + [arm_sinks_claim(arm, arms[arm], arms["baseline"], gate)
               for arm in SINK_CLAIMS if arm in arms]
            + convergence_claims(arms)
            + [table7_claim(arm, arms) for arm in arms])


def gate_claim(base: dict) -> Claim:
    """The validity gate (:func:`baseline_gate`): reproduced when the baseline's seed-mean sink
    rate is above 0 at every length and has risen from step 0, else untestable (the
    precondition of the arms' sink comparisons failed; the row says at which lengths the
    interval is above 0 and at which not, and whether the rate rose)."""
    gate, gate_txt = baseline_gate(base)
    return Claim("Baseline develops sinks (validity gate), Bigram-Backcopy regime, "
                 f"{len(base['seeds'])} seeds", "high sink rate at all lengths 32-512 "
                 "(Figure 12)", gate_txt, REPRODUCED if gate else UNTESTABLE,
                 "rate above 0 at every length and rising (95 % t intervals over seeds)"
                 if gate else _gate_failed(base), "Sec. 6.2.1")


def _gate_failed(base: dict) -> str:
    """Why the gate failed: the lengths where the baseline's seed-mean rate has its interval
    above 0 and those where not, and whether the rate rose from step 0."""
    means, rise = _gate_parts(base)
    Ts = list(means)
    at = [T for T, m in means.items() if m.lo > 0]
    where = (f"only at T = {', '.join(map(str, at))}, not at T = "
             f"{', '.join(str(T) for T in Ts if T not in at)}" if 0 < len(at) < len(Ts)
             else "at every length" if at else "at no length")
    return (f"precondition failed: the baseline's sink rate is above 0 {where}, and "
            f"{'has' if rise.lo > 0 else 'has not'} risen from step 0 (95 % t intervals over "
            "seeds), so the arms' sink comparisons cannot be made")


def arm_sinks_claim(arm: str, a: dict, base: dict, gate: bool) -> Claim:
    """An arm's sinks, untestable without the gate:

    * attenuation, "near zero at every length": reproduced when the seed-mean rate's interval
      lies below ``sinks.NEAR_ZERO`` at every length, differs when it lies above it at some;
    * amplification, "significantly lower than baseline, not zero": reproduced when the paired
      difference from the baseline is below 0 at every length and the arm's rate above 0 at
      some; differs when the difference is above 0 at some length or the rate below
      NEAR_ZERO at every length;
    * head-wise RMSNorm and the gate: beyond the paper, lower than the baseline or not.
    """
    Ts = lengths(base)
    fv = final_values(a)
    rate = {T: seed_mean(fv[f"rate@{T}"]) for T in Ts}
    diff = {T: paired(a, base, f"rate@{T}") for T in Ts}
    txt = ("; ".join(f"T={T}: {rate[T].text(2)} (minus baseline {diff[T].mean:+.2f} "
                     f"[{diff[T].lo:+.2f}, {diff[T].hi:+.2f}])" for T in Ts)
           + f"; differences paired over {diff[Ts[0]].n} seeds")
    lower = all(d.hi < 0 for d in diff.values())
    near_zero = all(r.hi < NEAR_ZERO for r in rate.values())
    if not gate:
        verdict, why = UNTESTABLE, ("the baseline fails the validity gate (no sinks at "
                                    "every length, rising, in this regime)")
    elif arm == "attenuation":
        far = any(r.lo > NEAR_ZERO for r in rate.values())
        verdict = REPRODUCED if near_zero else DIFFERS if far else UNDERPOWERED
        why = (f"below {NEAR_ZERO} at every length" if near_zero else
               f"above {NEAR_ZERO} at some length" if far else
               f"intervals reach above {NEAR_ZERO} but not all of them lie above it")
    elif arm == "amplification":
        nonzero = any(r.lo > 0 for r in rate.values())
        higher = any(d.lo > 0 for d in diff.values())
        verdict = (REPRODUCED if lower and nonzero else
                   DIFFERS if higher or near_zero else UNDERPOWERED)
        why = ("lower than baseline at every length, above 0 at some" if lower and nonzero
               else "higher than baseline at some length" if higher
               else f"lower than baseline but below {NEAR_ZERO} at every length (zero, "
               "not 'not zero')" if near_zero and lower else
               f"below {NEAR_ZERO} at every length (zero, not 'not zero')" if near_zero else
               "not lower than baseline at every length by its interval")
    else:
        verdict = BEYOND
        why = ("lower than baseline at every length" if lower else
               "not lower than baseline at every length by its interval") + (
            f"; below {NEAR_ZERO} at every length" if near_zero else "")
    return Claim(f"{arm}: sinks, Bigram-Backcopy regime, {len(a['seeds'])} seeds",
                 SINK_CLAIMS[arm], txt, verdict, why, "Sec. 6.2.1")


def convergence_claims(arms: dict) -> list[Claim]:
    """Convergence: the mean held-out NLL over the first half's checkpoints minus the
    baseline's, paired over seeds. Head-wise RMSNorm (the companion paper's claim) is
    reproduced when its interval is below 0 and differs when above 0; other arms are beyond the
    paper."""
    out = []
    for arm, paper_txt in CONVERGENCE_CLAIMS.items():
        if arm not in arms or "nll_first_half" not in final_values(arms[arm]):
            continue
        d = paired(arms[arm], arms["baseline"], "nll_first_half")
        txt = (f"mean held-out NLL over the first half's checkpoints minus baseline's: "
               f"{d.text(4)}")
        if arm == "headwise_rmsnorm":
            verdict = REPRODUCED if d.hi < 0 else DIFFERS if d.lo > 0 else UNDERPOWERED
            why = ("faster: below baseline" if d.hi < 0 else "slower: above baseline"
                   if d.lo > 0 else "interval contains 0")
        else:
            verdict, why = BEYOND, ("below baseline" if d.hi < 0 else "above baseline"
                                    if d.lo > 0 else "interval contains 0")
        out.append(Claim(f"convergence, {arm}, {d.n} seeds paired", paper_txt, txt, verdict,
                         why, "Sec. 6.2"))
    return out


def table7_claim(arm: str, arms: dict) -> Claim:
    """The Table-7 analogue, "comparable or better" (amplification, attenuation): reproduced
    when the paired final NLL difference's interval lies below 0 or inside ±EQUIVALENCE of the
    baseline's NLL, differs when above 0; the baseline is the reference; other arms are beyond
    the paper."""
    base = arms["baseline"]
    m = seed_mean(final_values(arms[arm])["nll"])
    acc = final_values(arms[arm]).get("copy_accuracy")
    acc_txt = "" if not acc else f"; copy accuracy {seed_mean(acc).text(3)}"
    if arm == "baseline":
        return Claim(f"Table 7 analogue (held-out NLL), baseline, {len(base['seeds'])} seeds",
                     "WikiText-2 21.33 / C4 30.36 (perplexity)",
                     f"NLL {m.text(4)}{acc_txt}", MEASURED, "reference", "Table 7")
    bnll = seed_mean(final_values(base)["nll"])
    d = paired(arms[arm], base, "nll")
    margin = EQUIVALENCE * bnll.mean
    better, worse = d.hi < 0, d.lo > 0
    equal = -margin < d.lo and d.hi < margin
    wt2 = PAPER_TABLE7.get(arm)
    why = ("better than baseline" if better else "worse than baseline" if worse else
           f"equal within ±{EQUIVALENCE:.0%} of the baseline's NLL" if equal else
           f"interval contains 0 but reaches beyond ±{EQUIVALENCE:.0%}")
    verdict = (BEYOND if wt2 is None else DIFFERS if worse else
               REPRODUCED if better or equal else UNDERPOWERED)
    paper_txt = ("not in the paper" if wt2 is None else
                 f"WikiText-2 {wt2[0]} / C4 {wt2[1]} (baseline 21.33 / 30.36): comparable "
                 "or better")
    return Claim(f"Table 7 analogue (held-out NLL), {arm}, {len(arms[arm]['seeds'])} "
                 f"seeds ({d.n} paired)", paper_txt,
                 f"NLL {m.text(4)}, minus baseline {d.text(4)}{acc_txt}", verdict,
                 why, "Table 7")


# ------------------------------------------------------------------ tables and figures --

def markdown(records: dict) -> str:
    """Per arm: seeds, sink rate by length (eps 0.25; seed mean ± SE [95 % t interval]), Gu's
    rate, held-out NLL, copy accuracy, and the seeds' individual rates at the longest length."""
    arms = records["arms"]
    if not arms:
        return "No arm measured.\n"
    Ts = lengths(next(iter(arms.values())))
    rows = ["| arm | seeds | " + " | ".join(f"sink rate T={T}" for T in Ts)
            + " | Gu rate (T=64, eps 0.3) | held-out NLL | copy acc. | per seed at "
            f"T={Ts[-1]} | T={Ts[-1]}, last {LATE} checkpoints | train s |",
            "|---|---:|" + "---|" * (len(Ts) + 6)]
    for name, a in arms.items():
        fv = final_values(a)
        cells = [seed_mean(fv[f"rate@{T}"]).text(2) for T in Ts]
        acc = fv.get("copy_accuracy")
        rows.append(f"| {name} | {len(a['seeds'])} | " + " | ".join(cells)
                    + f" | {seed_mean(fv['gu']).text(2)} | {seed_mean(fv['nll']).text(4)} | "
                    + ("" if not acc else seed_mean(acc).text(3)) + " | "
                    + ", ".join(f"{x:.2f}" for x in fv[f"rate@{Ts[-1]}"])
                    + f" | {seed_mean(fv[f'rate_late@{Ts[-1]}']).text(2)}"
                    + f" | {a.get('train_seconds', '')} |")
    return "\n".join(rows) + "\n"


def figure(records: dict):
    """Four panels, one colour per arm (seed mean, thick; every seed, thin): Figure 12 (sink rate
    vs length, eps 0.25 and 0.3), the emergence of Gu's rate over checkpoints, held-out NLL
    over checkpoints, and the training loss."""
    from bornbiased_jax.plots import plt

    fig, axes = plt.subplots(1, 4, figsize=(21, 4.6))
    for k, (name, a) in enumerate(records["arms"].items()):
        c = f"C{k % 10}"
        Ts = lengths(a)
        fv = final_values(a)
        for key, ls, lab in (("rate", "-", f"{name} (eps 0.25)"), ("rate03", ":", None)):
            ms = [seed_mean(fv[f"{key}@{T}"]) for T in Ts]
            axes[0].errorbar(Ts, [m.mean for m in ms], yerr=[m.half_width for m in ms],
                             color=c, ls=ls, marker="o", capsize=3, label=lab)
        for s in a["seeds"]:
            cks = sorted(s["checkpoints"], key=lambda x: x["step"])
            steps = [x["step"] for x in cks]
            axes[1].plot(steps, [x["gu"]["rate"] for x in cks], color=c, lw=0.6, alpha=0.45)
            axes[2].plot(steps[1:], [x["nll"] for x in cks[1:]], color=c, lw=0.6, alpha=0.45)
            late = [(st, x) for st, x in s.get("train_loss", []) if st >= LOSS_FROM]
            if late:
                axes[3].plot(*zip(*late), color=c, lw=0.6, alpha=0.45)
        cks0 = sorted(a["seeds"][0]["checkpoints"], key=lambda x: x["step"])
        steps = [x["step"] for x in cks0]
        for ax, get, skip in ((axes[1], lambda x: x["gu"]["rate"], 0),
                              (axes[2], lambda x: x["nll"], 1)):
            per_step = [[get(sorted(s["checkpoints"], key=lambda x: x["step"])[i])
                         for s in a["seeds"]] for i in range(skip, len(steps))]
            ax.plot(steps[skip:], [sum(v) / len(v) for v in per_step], color=c, lw=2,
                    label=name)
    axes[0].set_xscale("log", base=2)
    Ts = lengths(next(iter(records["arms"].values())))
    axes[0].set_xticks(Ts, [str(t) for t in Ts])
    axes[0].set(xlabel="sequence length T", ylabel="sink rate", ylim=(-0.03, 1.03),
                title="Figure 12 analogue: final checkpoint\n(seed mean, 95 % t interval; "
                      "dotted: eps 0.3)")
    axes[1].set(xlabel="step", ylabel="Gu sink rate (T = 64, eps 0.3)", ylim=(-0.03, 1.03),
                title="Emergence (thin: each seed)")
    axes[2].set(xlabel="step", ylabel="held-out NLL (nats/char)", title="Held-out loss")
    axes[3].set(xlabel="step", ylabel="training loss (mean over 50 steps)",
                title=f"Training loss from step {LOSS_FROM} (each seed)")
    for ax in axes[:3]:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[3].grid(alpha=0.3)
    fig.suptitle("Sec. 6.2 arms in the Bigram-Backcopy sink regime")
    fig.tight_layout()
    return fig
