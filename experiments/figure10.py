"""Figure 10: the frequency of each predicted token (top) and of each hidden dimension holding
the maximum of the final-layer last-token state (bottom) over random sequences (paper Sec. 5)."""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments.common.cli import parse, write

from bornbiased_jax.presets import get_preset
from bornbiased_jax.probes.contraction import last_token_probe
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.stats import format_log10_p
from bornbiased_jax.sweep import sweep
from experiments.initialisation.figure10 import figure10_rows

NAME = "figure10"
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=64, num_seqs=1500)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=10_000)


if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
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
    write(args, NAME, s, rows, md, fig, t0)
