"""Where does the paper's lineage test hold? The Gaussian-input confound against width and depth.

RESULTS.md measured the paper's tests calling nearly every pair of *independent*
initialisations related at d = 128 with GPT-2-scaled init, but 0/91 at the paper's own d = 768,
12-block shape. This sweep measures the false-positive rate of the paper's test (Algorithm 1:
Student t and Mann-Whitney U, mean of 10 Gaussian-null draws' p-values) and of the released
code's (2 Phi-bar(z)) on pairs of independent initialisations, over

    width d in {128, 256, 512, 768} x depth {4, 12} blocks x init {GPT-2 scaled, HF default}
    x n in {500, 2000} Gaussian input embeddings (the first 500 of the 2000 rows for n = 500),

LLaMA-style blocks (RMSNorm, SwiGLU d_ff = 8d/3, RoPE, head_dim 64 or 4 heads at d = 128).
Every model sees the same inputs (T tokens each, small on a CPU; the paper scale uses the
paper's T = 1024 and more models, for a GPU). M models per cell give M(M-1)/2 pairs; the rates
carry Clopper-Pearson, disjoint-pair and jackknife intervals
(:mod:`bornbiased_jax.fingerprint.runner.rejection`). ``python -m experiments.seedprint_confound``
runs it, cell by cell (features cached, so an interrupted sweep resumes where it stopped).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from bornbiased_jax import plots
from bornbiased_jax.presets import get_preset
from bornbiased_jax.files import progress
from bornbiased_jax.fingerprint.runner import rejection as SM
from experiments.seedprint.pools import paper_and_official, pool

CPU = dict(widths=[128, 256, 512, 768], depths=[4, 12], inits=["gpt2", "hf"], n=[500, 2000],
           seq_len=4, models=10, seed0=20_000)
PAPER = dict(widths=[128, 256, 512, 768], depths=[4, 12], inits=["gpt2", "hf"],
             n=[500, 2000, 10_000], seq_len=1024, models=40, seed0=20_000)
TESTS = ("paper", "paper_u", "official")


def model(d: int, layers: int, init: str):
    """LLaMA-style decoder of width d and ``layers`` blocks; 'gpt2': W_O, W_down at
    0.02/sqrt(2L) (App. B.1), 'hf': every matrix at 0.02. The embedding is shared across seeds:
    Gaussian inputs bypass it and normed outputs never read it (only its mean and std set the
    inputs' scale)."""
    heads = max(4, d // 64)
    return dataclasses.replace(
        get_preset("llama2-tiny"), name=f"llama-d{d}x{layers}-{init}init", d_model=d,
        n_layers=layers, n_heads=heads, head_dim=d // heads, n_kv_heads=None,
        d_ff=math.ceil(8 * d / 3 / 8) * 8, vocab_size=32_000, max_seq_len=128,
        scale_residual_init=(init == "gpt2"), shared_embedding=True)


def cells(s: dict) -> list[tuple[int, int, str]]:
    """(d, layers, init) from the cheapest to the most expensive, so partial runs cover most."""
    out = [(d, L, i) for d in s["widths"] for L in s["depths"] for i in s["inits"]]
    return sorted(out, key=lambda c: c[0] ** 2 * c[1])


def measure_cell(s: dict, d: int, layers: int, init: str, cache, log=progress) -> list[dict]:
    """The false-positive rates of one cell, one record per n; features cached in ``cache``."""
    cfg = model(d, layers, init)
    F = pool(cfg, range(s["seed0"], s["seed0"] + s["models"]), "gaussian", max(s["n"]),
             s["seq_len"], cache=cache)
    out = []
    pairs = SM.all_pairs(s["models"])
    for n in s["n"]:
        po = paper_and_official(F[:, :n], pairs)
        rows = [{"a": a, "b": b, "paper": po["paper"]["t_mean"][i],
                 "paper_u": po["paper"]["u_mean"][i], "official": po["official"]["two_phi_bar"][i]}
                for i, (a, b) in enumerate(pairs)]
        out.append({"d": d, "layers": layers, "init": init, "n": n, "T": s["seq_len"],
                    "models": s["models"], "rates": SM.rates(rows, TESTS),
                    "mean_tau_on_S": float(np.nanmean(po["paper_mean_tau"])),
                    "mean_S": float(np.mean(po["paper_S"]))})
        r = out[-1]["rates"]
        log(f"  d={d} L={layers} {init} n={n}: paper t {r['paper']['0.01']['rejections']}/"
            f"{len(rows)}, official {r['official']['0.01']['rejections']}/{len(rows)}")
    return out


def markdown(records: list[dict]) -> str:
    """One row per (cell, n): each test's rejections at alpha = 0.01 with both intervals."""
    md = ["False-positive rate at alpha = 0.01 of pairs of independent initialisations "
          "(Gaussian inputs): rejections/pairs [95 % Clopper-Pearson, as if the pairs were "
          "independent; jackknife over models].", "",
          "| d | blocks | init | n | T | paper t | paper U | official | mean tau on S |",
          "|---:|---:|---|---:|---:|---|---|---|---:|"]
    for r in records:
        cells_ = []
        for t in TESTS:
            x = r["rates"][t]["0.01"]
            jk = x.get("jackknife", {}).get("ci95", [float("nan")] * 2)
            cells_.append(f"{x['rejections']}/{x['pairs']} [{x['ci95'][0]:.2f}, "
                          f"{x['ci95'][1]:.2f}; jk {jk[0]:.2f}-{jk[1]:.2f}]")
        md.append(f"| {r['d']} | {r['layers']} | {r['init']} | {r['n']} | {r['T']} | "
                  + " | ".join(cells_) + f" | {r['mean_tau_on_S']:+.3f} |")
    return "\n".join(md) + "\n"


def figure(records: list[dict], s: dict):
    """The paper's and the released test's false-positive rate against width, a line per
    (depth, init, n)."""
    fig, axes = plots.figure(1, 2, figsize=(11, 4), squeeze=False)
    for ax, test in zip(axes[0], ("paper", "official")):
        for layers in s["depths"]:
            for init in s["inits"]:
                for n in s["n"]:
                    rs = sorted((r for r in records if r["layers"] == layers
                                 and r["init"] == init and r["n"] == n), key=lambda r: r["d"])
                    if rs:
                        ax.plot([r["d"] for r in rs],
                                [r["rates"][test]["0.01"]["rate"] for r in rs], marker="o",
                                label=f"{layers} blocks, {init} init, n = {n}")
        ax.axhline(0.01, color="k", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("width d")
        ax.set_ylabel("false-positive rate at alpha = 0.01")
        ax.set_title(f"{test} test on independent initialisations")
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def main(argv: list[str]) -> None:
    """Where does the paper's lineage test hold? The false-positive rate of the paper's and
    the released test on pairs of independent initialisations with Gaussian inputs, over
    width, depth, initialisation and n (what and why: this module's docstring). Features are
    cached per cell under ``--out``/cache, so an interrupted sweep resumes where it stopped;
    the report is rewritten after every cell."""
    import time

    from experiments.common.cli import parse, write

    args, s = parse("seedprint_confound", main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    records = []
    for d, layers, init in cells(s):
        records += measure_cell(s, d, layers, init, args.out / "cache")
        write(args, "seedprint_confound", s, records, markdown(records), figure(records, s), t0)
