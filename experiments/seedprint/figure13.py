"""Figure 13 (App. B.3.1): Kendall tau between independently initialised models on shared random
inputs, against the theoretical null N(0, sd_tau^2): the measurement (``python -m experiments
figure13``, :func:`main`) and its rule (:func:`figure13_claims`)."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.verdicts import DIFFERS, REPRODUCED, Claim

NAME = "figure13"
CPU = dict(model="llama-d128x4", models=72, n=500, seq_len=32, scaled=True, seed0=20_000,
           inputs=["gaussian", "tokens"])
PAPER = dict(model="llama2-nano", models=72, n=10_000, seq_len=1024, scaled=True, seed0=20_000,
             inputs=["gaussian", "tokens"])


def figure13_claims(d: dict) -> list[Claim]:
    """One row per input kind: reproduced when the taus of independent inits match N(0, sd^2):
    sd within 10 % of the null sd and |mean| < 0.5 null sd (all output dimensions)."""
    s = d["run"]["settings"]
    out = []
    for r in d["records"]:
        a, b = r["all_dims"], r["on_S"]
        ours = (f"{r['pairs']} pairs of {s['models']} inits (d = 128, 4 blocks, GPT-2 init), "
                f"n = {s['n']}, T = {s['seq_len']}: sd/null sd {a['sd_over_null_sd']:.2f}, mean "
                f"tau {a['mean']:+.3f} ({a['mean_over_null_sd']:+.1f} null sd), "
                f"{100 * a['frac_beyond_3sd']:.1f} % beyond 3 sd; on S: mean {b['mean']:+.3f}")
        ok = abs(a["sd_over_null_sd"] - 1) < 0.1 and abs(a["mean_over_null_sd"]) < 0.5
        why = "" if ok else (
            "Gaussian input embeddings are the same vectors for every model and reach the "
            "output through the residual stream, so unrelated inits are correlated"
            if r["input"] == "gaussian" else
            f"sd/null sd {a['sd_over_null_sd']:.2f}, mean {a['mean_over_null_sd']:+.1f} null sd")
        out.append(Claim(f"Figure 13 (B.3.1), {r['input']} inputs: tau of independent inits "
                         "vs N(0, sd_tau^2)", "~2,500 pairs, n = 10,000: 'closely matches a "
                         "Gaussian centred at zero'", ours, REPRODUCED if ok else DIFFERS, why,
                         "App. B.3.1"))
    return out


def summary(t: np.ndarray, sd: float) -> dict:
    from scipy import stats

    return {"count": int(t.size), "mean": float(t.mean()), "sd": float(t.std()),
            "sd_over_null_sd": float(t.std() / sd), "mean_over_null_sd": float(t.mean() / sd),
            "frac_beyond_3sd": float(np.mean(np.abs(t) > 3 * sd)),
            "ks_p_vs_null": float(stats.kstest(t / sd, "norm").pvalue)}


def main(argv: list[str]) -> None:
    """Figure 13 (App. B.3.1): Kendall tau between independently initialised models on shared random
    inputs, against the theoretical null N(0, sd_tau^2), sd_tau^2 = 2(2n+5)/(9n(n-1)).

    The paper: ~2,500 pairs of independent untrained models, 10,000 random inputs, the histogram
    "closely matches a Gaussian centred at zero". Unstated: the model count, the input type and
    whether the taus are restricted to the identity dimensions S. Here M models give M(M-1)/2
    pairs; every pair's tau on every output dimension is computed (one matrix product per
    dimension), for both input types, and the taus on each pair's S (Algorithm 1's top-m coset) are
    shown separately. If unrelated models were independent, both histograms would match the null.
    """
    import time

    import matplotlib.pyplot as plt
    from scipy import stats

    from bornbiased_jax.fingerprint.methods import identity_dims as D
    from bornbiased_jax.stats import kendall_null_sd
    from experiments.common.cli import parse, write
    from experiments.seedprint.pools import cpu_model, nano_model, pool

    args, s = parse(NAME, main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    cfg = cpu_model(s["scaled"]) if s["model"] == "llama-d128x4" else nano_model(s["scaled"])
    M, n = s["models"], s["n"]
    sd = kendall_null_sd(n)
    records, hists = [], {}
    iu = np.triu_indices(M, 1)
    for kind in s["inputs"]:
        F = pool(cfg, range(s["seed0"], s["seed0"] + M), kind, n, s["seq_len"],
                 cache=args.out / "cache")  # (M, n, d)
        d = F.shape[2]
        tau = np.stack([D.kendall_all_pairs(F[:, :, j]) for j in range(d)], -1)  # (M, M, d)
        all_t = tau[iu].ravel()
        m = D.default_size(d)
        tops = [set(D.top_m(F[a].mean(0), m)) for a in range(M)]
        on_S = np.concatenate([tau[a, b, sorted(tops[a] & tops[b])] for a, b in zip(*iu)])
        records.append({"input": kind, "pairs": len(iu[0]), "d_out": d, "n": n, "m": m,
                        "null_sd": sd, "all_dims": summary(all_t, sd),
                        "on_S": summary(on_S, sd)})
        hists[kind] = (all_t, on_S)
        print(records[-1], flush=True)
    fig, axes = plt.subplots(1, len(hists), figsize=(5.5 * len(hists), 3.8), squeeze=False)
    for ax, (kind, (all_t, on_S)) in zip(axes[0], hists.items()):
        lo, hi = min(-5 * sd, all_t.min()), max(5 * sd, all_t.max())
        bins = np.linspace(lo, hi, 80)
        ax.hist(all_t, bins=bins, density=True, alpha=0.6, label="all dimensions")
        ax.hist(on_S, bins=bins, density=True, histtype="step", lw=1.5, label="on S (top-m coset)")
        g = np.linspace(lo, hi, 400)
        ax.plot(g, stats.norm.pdf(g, 0, sd), "k--", lw=1, label=f"N(0, {sd:.4f}^2)")
        ax.set_title(f"{kind} inputs: {len(iu[0])} pairs of independent inits")
        ax.set_xlabel("Kendall tau across inputs (per output dimension)")
        ax.legend(fontsize=7)
    fig.suptitle(f"Figure 13: {cfg.name}, n = {n}, T = {s['seq_len']}", fontsize=9)
    fig.tight_layout()
    md = ["| input | pairs | taus | mean tau | sd tau | sd / null sd | frac |tau| > 3 null sd | "
          "mean tau on S | sd on S / null sd |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in records:
        a, b = r["all_dims"], r["on_S"]
        md.append(f"| {r['input']} | {r['pairs']} | {a['count']} | {a['mean']:+.4f} | "
                  f"{a['sd']:.4f} | {a['sd_over_null_sd']:.2f} | {a['frac_beyond_3sd']:.3f} | "
                  f"{b['mean']:+.4f} | {b['sd_over_null_sd']:.2f} |")
    md.append(f"\nnull sd = sqrt(2(2n+5)/(9n(n-1))) = {sd:.4f} at n = {n}; under the null "
              f"0.27 % of taus lie beyond 3 sd.")
    write(args, NAME, s, records, "\n".join(md) + "\n", fig, t0)
