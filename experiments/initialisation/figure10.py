"""Figure 10 (paper Sec. 5): its record from one pass (the frequency of each predicted token and
of each hidden dimension holding the maximum of the final-layer last-token state;
``experiments/figure10.py`` at CPU scale and the campaign's paper-scale piece write it) and
its rule: both frequencies extremely non-uniform."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.stats import bonferroni_log10_p, format_log10_p, uniform_rank_frequency
from bornbiased_jax.verdicts import Claim
from experiments.initialisation.levels import ok_verdict


FIGURE10_PAPER = "both token and max-dimension frequencies extremely non-uniform"


def figure10_claim(d: dict) -> Claim:
    """Reproduced when both the top token's and the top max-dimension's Bonferroni p < 1e-5;
    the row gives each top count beside the largest count of uniform draws (its mean and 99th
    percentile, which at N << V is far above N/V)."""
    r = d["records"]
    ok = r["token_log10_p"] < -5 and r["dim_log10_p"] < -5
    return Claim("Figure 10 / Finding 1 (extended)", FIGURE10_PAPER,
                 f"{_figure10_effects(d)}token p {format_log10_p(r['token_log10_p'])}, "
                 f"max-dimension p {format_log10_p(r['dim_log10_p'])} (Bonferroni binomial)",
                 ok_verdict(ok), section="Sec. 5")


def _figure10_effects(d: dict) -> str:
    """'top token 34 of 1,250 (uniform draws' largest: 2.1 on average, 3 or less in 99 %), top
    max-dimension 157 of 1,250 (uniform: 6.9, 9 or less); ' from a Figure 10 record's counts
    (empty for a record without them)."""
    r, s = d["records"], d.get("run", {}).get("settings", {})
    if "token_top_counts" not in r or "num_seqs" not in s:
        return ""
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.stats import uniform_max_quantile

    N, vocab = s["num_seqs"], s.get("vocab_size") or get_preset(s["preset"]).vocab_size
    tok, dim, d_model = (int(r["token_top_counts"][0]), int(r["dim_counts_sorted"][0]),
                         len(r["dim_counts_sorted"]))

    def uniform(v):
        return uniform_rank_frequency(N, v, 1)[0], uniform_max_quantile(N, v)

    (et, qt), (ed, qd) = uniform(vocab), uniform(d_model)
    return (f"top token {tok:,} of {N:,} (uniform draws' largest: {et:.1f} on average, {qt} or "
            f"less in 99 %), top max-dimension {dim:,} of {N:,} (uniform: {ed:.1f}, {qd} or "
            f"less); ")


def figure10_rows(top_N, maxdim_N, vocab_size: int, d_model: int) -> dict:
    """The record's rows from each sequence's predicted token ``top_N`` and the hidden
    dimension holding the maximum of its final-layer last-token state ``maxdim_N``: the 100
    largest token counts, every dimension's count (sorted), and the Bonferroni binomial log10 p
    of the largest of each."""
    N = len(top_N)
    tok = np.sort(np.bincount(np.asarray(top_N), minlength=vocab_size))[::-1]
    dim = np.sort(np.bincount(np.asarray(maxdim_N), minlength=d_model))[::-1]
    return {"token_top_counts": tok[:100], "dim_counts_sorted": dim,
            "token_log10_p": bonferroni_log10_p(int(tok[0]), N, vocab_size),
            "dim_log10_p": bonferroni_log10_p(int(dim[0]), N, d_model)}


# --- the measurement: python -m experiments figure10 ----------------------------------------
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=64, num_seqs=1500)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=10_000)


def main(argv: list[str]) -> None:
    """Figure 10: the frequency of each predicted token (top) and of each hidden dimension
    holding the maximum of the final-layer last-token state (bottom) over random sequences
    (paper Sec. 5)."""
    import time

    import matplotlib.pyplot as plt

    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.contraction import last_token_probe
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.sweep import sweep
    from experiments.common.cli import parse, write

    args, s = parse("figure10", main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    cfg = get_preset(s["preset"])
    xs = probe_inputs("tokens", cfg, s["num_seqs"], s["seq_len"])
    out = sweep(last_token_probe(cfg), cfg, [s["seed"]], xs, progress=True)
    rows = figure10_rows(out["top"][0], np.argmax(out["hidden"][0][:, -1], axis=1),
                         cfg.vocab_size, cfg.d_model)
    tok, dim = rows["token_top_counts"], rows["dim_counts_sorted"]
    N = s["num_seqs"]
    fig, (a, b) = plt.subplots(2, 1, figsize=(7, 6))
    a.bar(range(1, 51), tok[:50] / N, color="tab:red")
    a.axhline(1 / cfg.vocab_size, color="k", ls="--", label="uniform 1/|V|")
    a.set_ylabel("token frequency"); a.set_yscale("log"); a.legend(fontsize=8)
    b.bar(range(1, cfg.d_model + 1), dim / N, color="tab:blue")
    b.axhline(1 / cfg.d_model, color="k", ls="--", label="uniform 1/d")
    b.set_xlabel("rank"); b.set_ylabel("max-dimension frequency"); b.legend(fontsize=8)
    fig.suptitle(f"Figure 10: {cfg.name} seed {s['seed']}, T={s['seq_len']}, N={N}")
    md = ("| | top count | x uniform | Bonferroni p |\n|---|---:|---:|---:|\n"
          f"| predicted token | {tok[0]} | {tok[0] / (N / cfg.vocab_size):.0f} | "
          f"{format_log10_p(rows['token_log10_p'])} |\n"
          f"| max hidden dimension | {dim[0]} | {dim[0] / (N / cfg.d_model):.0f} | "
          f"{format_log10_p(rows['dim_log10_p'])} |\n")
    write(args, "figure10", s, rows, md, fig, t0)
