"""Figure 11 (Sec. 5, Finding 7): the seed-42 initialisation f against every checkpoint f' of
the seed-42 run (its own lineage) and of the seed-123 run (the uncorrelated baseline, same data
and order). M = the top-m dimensions of the init's mean output (m = 50, from the init only); for
each j in M, Kendall's tau over the n random inputs of (f(x)_j, f'(x)_j); mean +- std over M per
checkpoint. Both input kinds: random token ids (Sec. 5's "setup of Table 1") and Gaussian input
embeddings (Algorithm 1). The paper's claim: the seed-42 curve lies systematically above the
seed-123 baseline, the two distributions overlapping."""

import time

import numpy as np
from scipy import stats

from experiments._common import write
from experiments.lineage_common import parse_args

from bornbiased_jax.fingerprint import dims as D
from bornbiased_jax.studies.lineage_measure import Study

NAME = "figure11"
LINEAGE, BASELINE = "base-s42", "base-s123"


def run(study: Study) -> tuple[dict, str]:
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


def figure(records: dict):
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


def main(argv=None) -> None:
    args, s = parse_args(NAME, __doc__, argv)
    t0 = time.time()
    records, md = run(Study.from_args(args, s))
    write(args, NAME, s, records, md, figure(records), t0)


if __name__ == "__main__":
    main()
