"""SeedPrint calibration: how often does each test call two *independent* initialisations
related? False-positive rate at alpha = 0.01 with its exact (Clopper-Pearson) 95 % interval, for
each test x input type x initialisation (GPT-2-scaled residual init, App. B.1, vs the HF default
without scaling), on pools of independently initialised models that all see the same inputs.

A pool of M models gives M(M-1)/2 pairs; the calibrated test's null for pair (A, B) is the
M - 2 other models of the pool (independent of both), so with M = 101 its exact p reaches
1/100 = alpha. With that leave-two-out null the exact p's rejection rate is ~alpha *by
construction* (for each suspect B exactly one base has the largest statistic), so it checks
nothing; the Gaussian-tail p is not forced, and a second split is: pairs among the first 41
models against the other 60 as a fixed, disjoint null (K = 60, so the exact p's rate is read at
3/61 = 0.049 instead of 0.01; 'residual_all' on the pairs among the first 21 models only).
Pairs share models, so they are not independent trials: the intervals treat them as independent
and are therefore optimistic (too narrow). The paper and official tests run on a random subset
of pairs (their Kendall taus cost one scipy call per dimension).

The second part runs the paper's 12-layer d = 768 LLaMA shape with as many models as fit, at a
small n and T (stated in the output); there the pool is too small for the exact calibrated p to
reach alpha, so its Gaussian-tail p is reported. ``python -m experiments.seedprint_calibration``
runs it, pool by pool.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from bornbiased_jax import plots
from experiments.seedprint.pools import (calibrated_all_pairs, calibrated_disjoint,
                                                    cpu_model, false_positive_rate, fmt_fpr,
                                                    nano_model, paper_and_official, pairs_of,
                                                    pool)

CPU = dict(models=101, n=1000, seq_len=32, paper_pairs=500, inputs=["gaussian", "tokens"],
           nano_models=14, nano_n=128, nano_seq_len=16, seed0=10_000)
PAPER = dict(models=201, n=10_000, seq_len=1024, paper_pairs=2000,
             inputs=["gaussian", "tokens"], nano_models=101, nano_n=2000, nano_seq_len=256,
             seed0=10_000)
# The table's columns: each test's rate (and the calibrated test's disjoint-null rates).
COLUMNS = ["paper/t_mean", "paper/u_mean", "paper/t_pooled", "paper/u_pooled",
           "official/two_phi_bar", "calibrated/spearman_all/gaussian_tail",
           "calibrated/residual_all/gaussian_tail",
           "calibrated/spearman_all/disjoint_exact_at_3_61",
           "calibrated/residual_all/disjoint_exact_at_3_61",
           "calibrated/residual_all/disjoint_gaussian_tail"]


@dataclasses.dataclass(frozen=True)
class Pool:
    """One pool of the study: ``models`` fresh initialisations of ``cfg`` on ``n`` inputs of
    kind ``kind`` and length ``T``; ``paper_pairs``: how many pairs the paper and official tests
    run on (None: all)."""

    cfg: object
    kind: str
    n: int
    T: int
    models: int
    paper_pairs: int | None


def pools(s: dict) -> list[Pool]:
    """The study's pools in order: the d = 128 model (GPT-2-scaled, then HF init) with each
    input kind, then the paper's d = 768 shape (HF, then GPT-2-scaled init) with Gaussian inputs
    (the embeddings shared: in these RoPE models with an untied head, Gaussian inputs and
    normed outputs never touch them; learned absolute positions would)."""
    out = [Pool(cpu_model(scaled, shared_embedding=False), kind, s["n"], s["seq_len"],
                s["models"], s["paper_pairs"])
           for scaled in (True, False) for kind in s["inputs"]]
    out += [Pool(nano_model(scaled, shared_embedding=True), "gaussian",
                 s["nano_n"], s["nano_seq_len"], s["nano_models"], None)
            for scaled in (False, True)]
    return out


def measure_pool(p: Pool, s: dict, cache: Path | None = None) -> dict:
    """The record of pool ``p``: every test's false-positive rate on its pairs."""
    F = pool(p.cfg, range(s["seed0"], s["seed0"] + p.models), p.kind, p.n, p.T, cache=cache)
    row = one_pool(F, p.paper_pairs, K_ok=p.models - 2 >= 99)
    return {"model": p.cfg.name, "d": p.cfg.d_model, "layers": p.cfg.n_layers,
            "input": p.kind, "n": p.n, "T": p.T, **row}


def one_pool(F: np.ndarray, paper_pairs: int | None, K_ok: bool) -> dict:
    """Rates of every test on the pairs of one pool's features F (M, n, d); ``K_ok``: the pool
    is large enough for the calibrated test's exact p to reach alpha."""
    M = F.shape[0]
    rng = np.random.default_rng(1)
    pairs = pairs_of(M, paper_pairs, rng)
    po = paper_and_official(F, pairs)
    row = {"M": M, "pairs_paper_official": len(pairs),
           "paper_mean_tau_on_S": float(np.nanmean(po["paper_mean_tau"])),
           "paper_mean_S": float(np.mean(po["paper_S"])),
           "official_mean_tau_on_S": float(np.nanmean(po["official_mean_tau"]))}
    for test in ("paper", "official"):
        for key, ps in po[test].items():
            row[f"{test}/{key}"] = false_positive_rate(ps)
    iu = np.triu_indices(M, 1)
    for stat in ("spearman_all", "residual_all"):
        pe, pg = calibrated_all_pairs(F, stat)
        if K_ok:
            row[f"calibrated/{stat}/exact"] = false_positive_rate(pe[iu])
        row[f"calibrated/{stat}/gaussian_tail"] = false_positive_rate(pg[iu])
        row[f"calibrated/{stat}/exact_p_mean"] = float(np.mean(pe[iu]))
        if M > 60:
            # residual_all costs one pass over the null per pair: 21 pair models (210 pairs)
            n_pair = M - 60 if stat == "spearman_all" else min(M - 60, 21)
            de, dg = calibrated_disjoint(np.concatenate([F[:n_pair], F[M - 60:]]), n_pair,
                                         stat)
            row[f"calibrated/{stat}/disjoint_exact_at_3_61"] = false_positive_rate(
                de, alpha=3 / 61)
            row[f"calibrated/{stat}/disjoint_gaussian_tail"] = false_positive_rate(dg)
            row[f"calibrated/{stat}/disjoint_exact_p_mean"] = float(de.mean())
    row["_paper_t_mean_ps"] = po["paper"]["t_mean"]
    row["_cal_exact_ps"] = pe[iu].tolist()
    return row


def markdown(records: list[dict]) -> str:
    """One row per pool: each test's false-positive rate with its interval."""
    md = ["FPR at alpha = 0.01 of independent initialisations: rate [95 % Clopper-Pearson] "
          "(rejections/pairs). Expected for a calibrated test: 0.01 (0.049 for the "
          "'disjoint_exact_at_3_61' columns: exact p <= 3/61 against a disjoint null of 60 "
          "models). The leave-two-out exact p of the calibrated test is omitted: its rate is "
          "~0.01 by construction.", "",
          "| model | input | n, T | pool M | mean tau on S (paper) | " + " | ".join(COLUMNS)
          + " |", "|---|---|---|---:|---:|" + "---|" * len(COLUMNS)]
    for r in records:
        cells = [fmt_fpr(r[c]) if c in r else "n/a (pool too small)" for c in COLUMNS]
        md.append(f"| {r['model']} | {r['input']} | {r['n']}, {r['T']} | {r['M']} | "
                  f"{r['paper_mean_tau_on_S']:+.3f} | " + " | ".join(cells) + " |")
    return "\n".join(md) + "\n"


def figure(records: list[dict]):
    """Histograms of the paper test's p-values and of the calibrated test's exact p-values."""
    fig, axes = plots.figure(1, 2, figsize=(10, 3.8))
    for r in records:
        lab = f"{r['model']} {r['input']}"
        axes[0].hist(np.log10(np.maximum(r["_paper_t_mean_ps"], 1e-300)), bins=40,
                     histtype="step", label=lab)
        axes[1].hist(r["_cal_exact_ps"], bins=20, histtype="step", density=True, label=lab)
    axes[0].axvline(-2, color="k", ls="--")
    axes[0].set_xlabel("log10 p (paper t-test, mean of 10 trials)")
    axes[0].set_ylabel("pairs of independent inits")
    axes[1].set_xlabel("exact p (calibrated, residual_all)")
    axes[1].set_ylabel("density (uniform = 1)")
    axes[0].legend(fontsize=6)
    fig.suptitle("SeedPrint on independent initialisations (every pair is unrelated)")
    fig.tight_layout()
    return fig


def main(argv: list[str]) -> None:
    """SeedPrint calibration: how often does each test call two *independent*
    initialisations related? Every test's false-positive rate at alpha = 0.01 on pools of fresh
    initialisations (what and why: this module's docstring). The report is rewritten after
    every pool; features are cached under ``--out``/cache."""
    import time

    from experiments.common.cli import parse, write

    args, s = parse("seedprint_calibration", main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    records = []
    for p in pools(s):
        records.append(measure_pool(p, s, cache=args.out / "cache"))
        print({k: v for k, v in records[-1].items() if not k.startswith("_")}, flush=True)
        write(args, "seedprint_calibration", s, records, markdown(records), figure(records), t0)
