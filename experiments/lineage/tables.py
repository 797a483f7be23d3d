"""The experiments of the lineage study (paper Sec. 5-6.1 and its Qwen-style repeat, App.
B.3.3) on a :class:`Study`, each returning (records, markdown):

  * checkpoints (Figure 11; Figure 14 for Qwen): the seed-42 init against every checkpoint of
    its own run and of the seed-123 run, Kendall taus and the paper test's p per checkpoint;
  * init pairs (Table 9, Qwen only: LLaMA's Table 4a is the SeedPrint section's);
  * own (Tables 4b, 10), cross (Tables 4c, 11), continued (Tables 5, 12): every SeedPrint test
    and the four baselines per pair, beside the paper's values.

:class:`PaperTables` holds one architecture's published values and the names of our records of
them (``LLAMA2``, ``QWEN2``); :func:`run_all` runs an architecture's experiments and writes their
outputs. The command lines are experiments/lineage.py (``--arch``) and, for the LLaMA-style
tables one at a time, experiments/figure11.py, table4b.py, table4c.py and table5.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy import stats

from bornbiased_jax import plots
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods.algorithm1 import paper_test
from bornbiased_jax.files import progress
from bornbiased_jax.stats import kendall_null_sd
from experiments import artifacts
from experiments.common import family
from experiments.common.paper_values import (PAPER_TABLE4B_8, PAPER_TABLE4C, PAPER_TABLE5,
                                             PAPER_TABLE9, PAPER_TABLE10, PAPER_TABLE11,
                                             PAPER_TABLE12)
from experiments.lineage.claims import TITLES
from experiments.lineage.measure import (
    BASES,
    CONTINUED,
    RUNS,
    Study,
    pairs_figure,
    pairs_table,
)

LINEAGE, BASELINE = "base-s42", "base-s123"


class PaperTables(NamedTuple):
    """One architecture's lineage tables in the paper: p-values (t, U) and, where the paper
    gives them, the baselines' similarities (Intrinsic, REEF, PCS, ICS); ``names`` maps each
    experiment (checkpoints, init_pairs, own, cross, continued, runs) to its record's name."""

    arch: str
    names: dict
    own: dict        # seed: (t, U[, Intrinsic, REEF, PCS, ICS])
    cross: dict      # (init seed, trained seed): (t, U)
    continued: dict  # run: (t, U, Intrinsic, REEF, PCS, ICS)
    init_pairs: dict  # (seed a, seed b): (t, U)


LLAMA2 = PaperTables(
    "llama2",
    {"checkpoints": "figure11", "own": "table4b", "cross": "table4c", "continued": "table5",
     "runs": "lineage_runs"},
    own=PAPER_TABLE4B_8, cross=PAPER_TABLE4C, continued=PAPER_TABLE5,
    init_pairs={})

QWEN2 = PaperTables(
    "qwen2",
    {"checkpoints": "figure14", "init_pairs": "table9", "own": "table10", "cross": "table11",
     "continued": "table12", "runs": "lineage_qwen2_runs"},
    own=PAPER_TABLE10, cross=PAPER_TABLE11, continued=PAPER_TABLE12,
    init_pairs=PAPER_TABLE9)

ARCHS = {t.arch: t for t in (LLAMA2, QWEN2)}
PAPER_KEYS = ("t", "u", "intrinsic", "reef", "pcs", "ics")


def figure11(study: Study) -> tuple[dict, str]:
    """Figure 11 (Figure 14 for the Qwen-style family): per input kind and checkpoint of the
    seed-42 run and of the seed-123 run, the Kendall taus of the seed-42 init's top-m dims,
    the one-sided U-test that the lineage's taus exceed the baseline's, and the paper test's
    t and U p-values (mean over its null draws) of the seed-42 init against the checkpoint."""
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
                F = study.features(study.spec(run_, step), kind)
                taus = D.kendall_per_dim(F0, F, M)
                pt = paper_test(F0, F, trials=study.s["trials"], rng=np.random.default_rng(0))
                rows.append({"step": step, "mean": float(np.mean(taus)),
                             "std": float(np.std(taus, ddof=1)), "taus": taus.tolist(),
                             "paper_t": pt.p_values["t_mean"], "paper_u": pt.p_values["u_mean"],
                             "paper_S": pt.n_dims})
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
                                   "kendall_null_sd": kendall_null_sd(study.s["n"])}
    lines = [f"Kendall tau (mean +- std over the init's top-{m} dims) of the seed-42 init vs "
             "each checkpoint; one-sided U-test p that the seed-42 taus exceed the seed-123 "
             "taus at that step; the paper test's t / U p (Algorithm 1) of the seed-42 init vs "
             "the checkpoint of each run.", "",
             "| inputs | step | seed-42 run | seed-123 run | difference | U p | paper t / U "
             "(seed-42 run) | paper t / U (seed-123 run) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for kind, rec in records["inputs"].items():
        base_by_step = {r["step"]: r for r in rec["curves"][BASELINE]}
        sh = {x["step"]: x for x in rec["shift"]}
        for r in rec["curves"][LINEAGE]:
            b = base_by_step[r["step"]]
            lines.append(f"| {kind} | {r['step']} | {r['mean']:+.3f} +- {r['std']:.3f} | "
                         f"{b['mean']:+.3f} +- {b['std']:.3f} | {sh[r['step']]['diff']:+.3f} | "
                         f"{sh[r['step']]['p_u']:.2g} | {r['paper_t']:.2g} / {r['paper_u']:.2g} "
                         f"| {b['paper_t']:.2g} / {b['paper_u']:.2g} |")
    return records, "\n".join(lines) + "\n"


def figure11_figure(records: dict, title: str = "Figure 11"):
    kinds = list(records["inputs"])
    fig, axes = plots.figure(1, len(kinds), figsize=(5.2 * len(kinds), 3.6), squeeze=False)
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
        ax.set_title(f"{title} analogue, {kind} inputs", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _paper(values: tuple) -> dict:
    return dict(zip(PAPER_KEYS, values))


def _measure(study: Study, pairs: list, intro: str, expect_same) -> tuple[list[dict], str]:
    """Compare each (base, suspect, origin, fields) of ``pairs`` (:meth:`Study.compare`, then
    ``fields`` added to the record) and tabulate them after ``intro``."""
    records = []
    for base, suspect, origin, fields in pairs:
        rec = study.compare(base, suspect, origin=origin)
        rec.update(fields)
        records.append(rec)
        study.log(f"{rec['pair']} {rec['seedprint']} {rec['baselines']}")
    return records, pairs_table(intro, records, expect_same)


def table9(study: Study, paper: PaperTables = QWEN2) -> tuple[list[dict], str]:
    """Init vs init of another seed (Table 9; LLaMA's Table 4a is measured with many more
    pairs by experiments/table4a.py). The paper's and the released test are symmetric in the
    two models and draw their null with a fixed seed here, so a reversed pair (s1000 vs s123
    after s123 vs s1000) repeats their p-values; the paper's reversed rows differ by the draw
    of its random null. Only the calibrated test (the base's null) differs."""
    study.require(*BASES)
    pairs = [(study.spec(f"base-s{i}", 0), study.spec(f"base-s{j}", 0), None,
              dict(pair=f"s{i} init vs s{j} init", seeds=[i, j], same_lineage=False,
                   paper=_paper(values)))
             for (i, j), values in paper.init_pairs.items()]
    return _measure(study, pairs, "Initialisations of two seeds (different lineages: ✓ = p > "
                    "0.01 or similarity < 0.8).", lambda r: False)


def table4b(study: Study, paper: PaperTables = LLAMA2) -> tuple[list[dict], str]:
    """Each seed's init vs its own trained model (Tables 4b/8; Table 10 for Qwen)."""
    study.require(*BASES)
    pairs = []
    for run_ in BASES:
        seed = int(run_.split("-s")[1])
        init = study.spec(run_, 0)
        pairs.append((init, study.spec(run_), init,
                      dict(pair=f"s{seed} init vs s{seed} base", seed=seed, same_lineage=True,
                           paper=_paper(paper.own[seed]))))
    return _measure(study, pairs, "Init vs its own trained model (one lineage: ✓ = p <= 0.01 "
                    "or similarity >= 0.8).", lambda r: True)


def table4c(study: Study, paper: PaperTables = LLAMA2) -> tuple[list[dict], str]:
    """One seed's init vs another seed's trained model, same data and order (Table 4c; Table
    11 for Qwen, with its own pairs)."""
    study.require(*BASES)
    pairs = [(study.spec(f"base-s{i}", 0), study.spec(f"base-s{j}"), study.spec(f"base-s{j}", 0),
              dict(pair=f"s{i} init vs s{j} base", seeds=[i, j], same_lineage=False,
                   paper=_paper(values)))
             for (i, j), values in paper.cross.items()]
    return _measure(study, pairs, "Init of one seed vs the trained model of another (different "
                    "lineages: ✓ = p > 0.01 or similarity < 0.8).", lambda r: False)


ROLE = {"prose": "TinyStoriesV2_cleaned", "code": "the_stack"}


def table5(study: Study, paper: PaperTables = LLAMA2) -> tuple[list[dict], str]:
    """The seed-1000 base vs models continued on shifted corpora from the seed-1000 base (its
    lineage) and the seed-123 base (distractors) (Table 5; Table 12 for Qwen)."""
    study.require("base-s1000", *CONTINUED)
    base = study.spec("base-s1000")
    pairs = []
    for name in CONTINUED:
        _, shift, s = name.split("-")
        seed = int(s[1:])
        pairs.append((base, study.spec(name), study.spec(f"base-s{seed}", 0),
                      dict(pair=f"{shift} ({seed})", run=name, shift=shift, role=ROLE[shift],
                           seed=seed, same_lineage=seed == 1000,
                           paper=_paper(paper.continued[name]))))
    return _measure(study, pairs, "Base: the seed-1000 model after pretraining; targets "
                    "continued on another corpus (✓ = correct verdict: p <= 0.01 / similarity "
                    ">= 0.8 for the seed-1000 descendants, the opposite for the seed-123 "
                    "distractors).", lambda r: r["same_lineage"])


# experiment -> the function measuring it (each takes the study and the PaperTables)
KINDS = {"checkpoints": lambda study, paper: figure11(study), "init_pairs": table9,
         "own": table4b, "cross": table4c, "continued": table5}
# record name -> (experiment kind, PaperTables): figure11, table4b, ..., figure14, table9, ...
EXPERIMENTS = {name: (kind, t) for t in ARCHS.values() for kind, name in t.names.items()
               if kind != "runs"}


def experiment_names(arch: str = "llama2") -> list[str]:
    """The measured experiments of an architecture, in the order :func:`run_all` runs them."""
    return [n for n, (_, t) in EXPERIMENTS.items() if t.arch == arch]


def run_all(study: Study, out_root: Path, scale: str, arch: str = "llama2", names=None,
            records: Path | None = None, command: str = "python -m experiments.lineage",
            log=progress, suffix: str = "") -> None:
    """Run the experiments of ``arch`` (all, or ``names``) on ``study`` and write each one's
    JSON, md and PNG into ``out_root/<name><suffix>`` (and its record ``<name><suffix>`` under
    ``records``, when given; the HF-init family's suffix is ``claims.HFINIT``), each recording
    ``command`` (the command line that ran them); ``log`` gets each one's table."""
    for name in names or experiment_names(arch):
        kind, paper = EXPERIMENTS[name]
        t0 = time.time()
        recs, md = KINDS[kind](study, paper)
        fig = (figure11_figure(recs, TITLES[name].split(":")[0]) if kind == "checkpoints"
               else pairs_figure(recs, TITLES[name]))
        artifacts.write(name + suffix, study.s, recs, md, fig, t0, out=out_root / (name + suffix),
                        scale=scale, records_root=records, command=command)
        log(md)


def runs_record(runs: Path, fam: family.Family, scale: str, arch: str = "llama2",
                suffix: str = "") -> dict:
    """The ``lineage_runs`` record (``lineage_qwen2_runs`` for Qwen): the family's settings and
    each run's summary (tokens, steps, train time, final validation loss), for RESULTS.md's
    family table."""
    pre = fam.pretrain
    out = []
    for name in RUNS:
        out.append(family.summary(name, runs) if family.finished(name, runs, fam)
                   else {"run": name, "finished": False})
    name = ARCHS[arch].names["runs"] + suffix
    return {"run": {"experiment": name, "scale": scale, "runs_dir": str(runs), "arch": arch},
            "records": {"family": {"preset": pre.preset, "model_set": list(pre.model_set),
                                   "steps": pre.steps, "batch_size": pre.batch_size,
                                   "seq_len": pre.seq_len,
                                   "corpora": {"base": family.corpus("base", fam),
                                               "prose": fam.corpora["prose"],
                                               "code": fam.corpora["code"]}},
                        "runs": out}}
