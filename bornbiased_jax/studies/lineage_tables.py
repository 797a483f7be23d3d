"""The four experiments of the lineage study (paper Sec. 5-6.1) on a :class:`Study`: Figure 11
(the seed-42 init against every checkpoint of its own run and of the seed-123 run) and Tables
4b, 4c and 5 (every SeedPrint test and the four baselines per pair, beside the paper's values),
each returning (records, markdown); :func:`run_all` runs them and writes their outputs. The
command lines are experiments/figure11.py, table4b.py, table4c.py, table5.py and lineage.py."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy import stats

from bornbiased_jax.fingerprint import dims as D
from bornbiased_jax.studies import family
from bornbiased_jax.studies.lineage import TITLES
from bornbiased_jax.studies.lineage_measure import (BASES, CONTINUED, RUNS, Study, pairs_figure,
                                                    pairs_table)
from bornbiased_jax.studies.outputs import write

LINEAGE, BASELINE = "base-s42", "base-s123"


def figure11(study: Study) -> tuple[dict, str]:
    study.require(LINEAGE, BASELINE)
    m = study.s["fig11_m"]
    init = study.spec(LINEAGE, 0)
    records = {"m": m, "inputs": {}}
    for kind in study.s["inputs"]:
        F0 = study.features(init, kind)
        M = D.top_m(F0.mean(0), m)
        curves = {}
        for run_, steps in ((LINEAGE, study.steps(LINEAGE)),
                            (BASELINE, [0] + study.steps(BASELINE))):
            rows = []
            for step in steps:
                taus = D.kendall_per_dim(F0, study.features(study.spec(run_, step), kind), M)
                rows.append({"step": step, "mean": float(np.mean(taus)),
                             "std": float(np.std(taus, ddof=1)), "taus": taus.tolist()})
            curves[run_] = rows
        # Is the lineage shifted upward at every checkpoint? One-sided Mann-Whitney of the two
        # tau distributions (50 vs 50) at each common checkpoint step.
        base_by_step = {r["step"]: r for r in curves[BASELINE]}
        shift = []
        for r in curves[LINEAGE]:
            b = base_by_step.get(r["step"])
            if b is not None:
                shift.append({"step": r["step"], "diff": r["mean"] - b["mean"],
                              "p_u": float(stats.mannwhitneyu(r["taus"], b["taus"],
                                                              alternative="greater").pvalue)})
        records["inputs"][kind] = {"dims": M.tolist(), "curves": curves, "shift": shift,
                                   "kendall_null_sd": D.kendall_null_sd(study.s["n"])}
    lines = [f"Kendall tau (mean +- std over the init's top-{m} dims) of the seed-42 init vs "
             "each checkpoint; one-sided U-test p that the seed-42 taus exceed the seed-123 "
             "taus at that step.", "",
             "| inputs | step | seed-42 run | seed-123 run | difference | U p |",
             "|---|---:|---:|---:|---:|---:|"]
    for kind, rec in records["inputs"].items():
        base_by_step = {r["step"]: r for r in rec["curves"][BASELINE]}
        sh = {x["step"]: x for x in rec["shift"]}
        for r in rec["curves"][LINEAGE]:
            b = base_by_step[r["step"]]
            lines.append(f"| {kind} | {r['step']} | {r['mean']:+.3f} +- {r['std']:.3f} | "
                         f"{b['mean']:+.3f} +- {b['std']:.3f} | {sh[r['step']]['diff']:+.3f} | "
                         f"{sh[r['step']]['p_u']:.2g} |")
    return records, "\n".join(lines) + "\n"


def figure11_figure(records: dict):
    import matplotlib.pyplot as plt

    kinds = list(records["inputs"])
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.2 * len(kinds), 3.6), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        rec = records["inputs"][kind]
        for (run_, label, c) in ((LINEAGE, "seed-42 run (same lineage)", "C0"),
                                 (BASELINE, "seed-123 run (baseline)", "C3")):
            rows = rec["curves"][run_]
            x = np.array([r["step"] for r in rows], float)
            y = np.array([r["mean"] for r in rows])
            e = np.array([r["std"] for r in rows])
            ax.plot(x, y, "o-", color=c, label=label, ms=3)
            ax.fill_between(x, y - e, y + e, color=c, alpha=0.2)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xlabel("training step")
        ax.set_ylabel(f"Kendall tau vs seed-42 init (top-{records['m']} dims)")
        ax.set_title(f"Figure 11 analogue, {kind} inputs", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


# seed: (t, U, Intrinsic, REEF, PCS, ICS) of Tables 4b and 8
TABLE4B_PAPER = {42: (2.20e-8, 6.28e-8, -0.021, 0.375, 0.580, 0.196),
         123: (7.09e-6, 1.37e-5, 0.149, 0.369, 0.581, 0.188),
         1000: (5.58e-4, 2.81e-3, -0.252, 0.381, 0.581, 0.188),
         2000: (4.00e-10, 1.27e-9, -0.337, 0.331, 0.581, 0.188)}


def table4b(study: Study) -> tuple[list[dict], str]:
    study.require(*BASES)
    records = []
    for run_ in BASES:
        seed = int(run_.split("-s")[1])
        init, final = study.spec(run_, 0), study.spec(run_)
        rec = study.compare(init, final, origin=init)
        rec.update(pair=f"s{seed} init vs s{seed} base", seed=seed, same_lineage=True,
                   paper=dict(zip(("t", "u", "intrinsic", "reef", "pcs", "ics"),
                                  TABLE4B_PAPER[seed])))
        records.append(rec)
        print(rec["pair"], rec["seedprint"], rec["baselines"], flush=True)
    md = pairs_table("Init vs its own trained model (one lineage: ✓ = p <= 0.01 or "
                     "similarity >= 0.8).", records, lambda r: True)
    return records, md


# (init seed, trained seed): (t, U) of Table 4c
TABLE4C_PAPER = {(123, 1000): (0.385, 0.486), (1000, 2000): (0.035, 0.096),
                 (42, 123): (0.426, 0.337), (2000, 42): (0.388, 0.287)}


def table4c(study: Study) -> tuple[list[dict], str]:
    study.require(*BASES)
    records = []
    for (i, j), (t, u) in TABLE4C_PAPER.items():
        rec = study.compare(study.spec(f"base-s{i}", 0), study.spec(f"base-s{j}"),
                            origin=study.spec(f"base-s{j}", 0))
        rec.update(pair=f"s{i} init vs s{j} base", seeds=[i, j], same_lineage=False,
                   paper={"t": t, "u": u})
        records.append(rec)
        print(rec["pair"], rec["seedprint"], rec["baselines"], flush=True)
    md = pairs_table("Init of one seed vs the trained model of another (different lineages: "
                     "✓ = p > 0.01 or similarity < 0.8).", records, lambda r: False)
    return records, md


ROLE = {"prose": "TinyStoriesV2_cleaned", "code": "the_stack"}
# run: (t, U, Intrinsic, REEF, PCS, ICS) of Table 5
TABLE5_PAPER = {"cont-prose-s1000": (0.0, 7.77e-89, 1.000, 0.759, 0.999, 0.996),
         "cont-prose-s123": (0.943, 0.902, 0.950, 0.658, 0.332, 0.012),
         "cont-code-s1000": (0.0, 3.09e-69, 0.489, 0.557, 0.585, 0.123),
         "cont-code-s123": (0.732, 0.831, 0.445, 0.580, 0.301, 0.026)}


def table5(study: Study) -> tuple[list[dict], str]:
    study.require("base-s1000", *CONTINUED)
    base = study.spec("base-s1000")
    records = []
    for name in CONTINUED:
        _, shift, s = name.split("-")
        seed = int(s[1:])
        rec = study.compare(base, study.spec(name), origin=study.spec(f"base-s{seed}", 0))
        rec.update(pair=f"{shift} ({seed})", run=name, shift=shift, role=ROLE[shift],
                   seed=seed, same_lineage=seed == 1000,
                   paper=dict(zip(("t", "u", "intrinsic", "reef", "pcs", "ics"),
                                  TABLE5_PAPER[name])))
        records.append(rec)
        print(rec["pair"], rec["seedprint"], rec["baselines"], flush=True)
    md = pairs_table("Base: the seed-1000 model after pretraining; targets continued on another "
                     "corpus (✓ = correct verdict: p <= 0.01 / similarity >= 0.8 for the "
                     "seed-1000 descendants, the opposite for the seed-123 distractors).",
                     records, lambda r: r["same_lineage"])
    return records, md


EXPERIMENTS = {"figure11": figure11, "table4b": table4b, "table4c": table4c, "table5": table5}


def run_all(study: Study, out_root: Path, scale: str, names=tuple(EXPERIMENTS),
            records: Path | None = None) -> None:
    """Run the experiments on ``study`` and write each one's JSON, md and PNG (and its record
    under ``records``, when given)."""
    for name in names:
        t0 = time.time()
        recs, md = EXPERIMENTS[name](study)
        fig = (figure11_figure(recs) if name == "figure11"
               else pairs_figure(recs, TITLES[name]))
        write(argparse.Namespace(out=out_root / name, scale=scale, records=records), name,
              study.s, recs, md, fig, t0)


def runs_record(runs: Path, fam: family.Family, scale: str) -> dict:
    """The ``lineage_runs`` record: the family's settings and each run's summary (tokens, steps,
    train time, final validation loss), for RESULTS.md's family table."""
    pre = fam.pretrain
    out = []
    for name in RUNS:
        out.append(family.summary(name, runs) if family.finished(name, runs, fam)
                   else {"run": name, "finished": False})
    return {"run": {"experiment": "lineage_runs", "scale": scale, "runs_dir": str(runs)},
            "records": {"family": {"preset": pre.preset, "model_set": list(pre.model_set),
                                   "steps": pre.steps, "batch_size": pre.batch_size,
                                   "seq_len": pre.seq_len,
                                   "corpora": {"base": family.corpus("base", fam),
                                               "prose": fam.corpora["prose"],
                                               "code": fam.corpora["code"]}},
                        "runs": out}}
