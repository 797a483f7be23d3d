"""Table 4a: initialisations with different seeds (42, 123, 1000, 2000), the paper's four pairs,
every test, beside the paper's p-values (all > 0.01 there: "distinct seeds yield distinct
fingerprints"). Both initialisations are run: GPT-2-scaled residual init (App. B.1, the preset
default) and the HF default without scaling (the authors' code). Gaussian input embeddings
(Algorithm 1). The calibrated test's null: K fresh initialisations (seeds from 1,000,000 on)
shared by the four pairs."""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments.common.cli import parse, write
from experiments.seedprint.pools import cpu_model, nano_model, pool

from bornbiased_jax.fingerprint.methods import calibrated as C
from bornbiased_jax.fingerprint.methods.algorithm1 import paper_test
from bornbiased_jax.fingerprint.runner.compare import null_seeds
from bornbiased_jax.fingerprint.methods.official import official_test
from bornbiased_jax.stats import fmt_p
from experiments.common.paper_values import PAPER_TABLE4A

NAME = "table4a"
PAIRS = [(42, 2000), (123, 42), (1000, 123), (2000, 1000)]
PAPER_P = PAPER_TABLE4A
CPU = dict(model="llama-d128x4", n=1000, seq_len=32, null_models=99)
PAPER = dict(model="llama2-nano", n=10_000, seq_len=1024, null_models=200)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    seeds = [42, 123, 1000, 2000]
    records = []
    for scaled in (True, False):
        cfg = cpu_model(scaled) if s["model"] == "llama-d128x4" else nano_model(scaled)
        nseeds = null_seeds(s["null_models"], seeds)
        F = pool(cfg, seeds + nseeds, "gaussian", s["n"], s["seq_len"])
        own, nulls = dict(zip(seeds, F[:4])), list(F[4:])
        for a, b in PAIRS:
            p = paper_test(own[a], own[b], rng=np.random.default_rng(0))
            o = official_test(own[a], own[b])
            cr = C.calibrated_test(own[a], own[b], nulls, statistic_name="residual_all")
            cs = C.calibrated_test(own[a], own[b], nulls, statistic_name="spearman_all")
            records.append({"model": cfg.name, "pair": f"s{a} vs s{b}",
                            "paper_reported_t": PAPER_P[(a, b)][0],
                            "paper_reported_u": PAPER_P[(a, b)][1],
                            **{f"paper/{k}": v for k, v in p.p_values.items()},
                            "paper/S": p.n_dims, "paper/mean_tau": p.statistic,
                            "official/two_phi_bar": o.p, "official/S": o.n_dims,
                            "official/mean_tau": o.statistic,
                            "calibrated/residual_all/exact": cr.p,
                            "calibrated/residual_all/gaussian_tail": cr.p_values["gaussian_tail"],
                            "calibrated/spearman_all/exact": cs.p})
            print(records[-1], flush=True)
    cols = ["paper/t_mean", "paper/u_mean", "paper/t_pooled", "official/two_phi_bar",
            "calibrated/residual_all/exact", "calibrated/spearman_all/exact"]
    md = ["p-values of unrelated pairs (a correct test gives p > 0.01). Paper: LLaMA-style "
          "12L/768d, its Table 4a.", "",
          "| model | pair | paper t (reported) | paper U (reported) | |S| | mean tau on S | "
          + " | ".join(cols) + " |", "|---|---|---:|---:|---:|---:|" + "---:|" * len(cols)]
    for r in records:
        md.append(f"| {r['model']} | {r['pair']} | {r['paper_reported_t']} | "
                  f"{r['paper_reported_u']} | {r['paper/S']} | {r['paper/mean_tau']:+.3f} | "
                  + " | ".join(fmt_p(r[c]) for c in cols) + " |")
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for i, c in enumerate(cols):
        ax.scatter(np.arange(len(records)) + 0.1 * i, [max(r[c], 1e-300) for r in records],
                   label=c, s=14)
    ax.set_yscale("log")
    ax.axhline(0.01, color="k", ls="--", lw=1)
    ax.set_xticks(range(len(records)), [f"{r['model'][-8:]}\n{r['pair']}" for r in records],
                  fontsize=6)
    ax.set_ylabel("p-value (unrelated pairs)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    write(args, NAME, s, records, "\n".join(md) + "\n", fig, t0)
