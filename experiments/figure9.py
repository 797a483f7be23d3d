"""Figure 9 / Eq. 2: the standard deviation of the aggregated attention output o_i at each
position of a random pre-LayerNorm attention block (T = 32), vs the paper's 1/sqrt(i) and the
softmax-corrected curve (paper Sec. 4.4)."""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments._common import parse, write

from bornbiased_jax.config import get_preset
from bornbiased_jax.theory import attn0, simulate

NAME = "figure9"
CPU = dict(preset="gpt2-rope-nano", seq_len=32, num_seqs=64, reps=16)
PAPER = dict(preset="gpt2-rope-nano", seq_len=32, num_seqs=2000, reps=16)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    cfg = get_preset(s["preset"])
    T = s["seq_len"]
    var = simulate.attention_output_variance(T, d=cfg.d_model, n_heads=cfg.n_heads,
                                             n_seqs=s["num_seqs"], reps=s["reps"])
    sv = float(var.value_variance.mean)
    i = np.arange(1, T + 1)
    rel = np.sqrt(var.variance.mean / sv)
    corr = np.sqrt(attn0.softmax_variance_factor(T, float(var.score_std.mean)) / i)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(i, rel, "r--o", ms=3, label="measured std(o_i) / std(v)")
    ax.plot(i, 1 / np.sqrt(i), "b--", label="paper: 1/sqrt(i)")
    ax.plot(i, corr, "k-", lw=1, label=f"softmax-corrected (score std {float(var.score_std.mean):.2f})")
    ax.set_xlabel("position i"); ax.set_ylabel("relative std"); ax.legend(fontsize=8)
    ax.set_title(f"Figure 9 (d={cfg.d_model}, {cfg.n_heads} heads, T={T})")
    rows = {"measured": rel, "paper": 1 / np.sqrt(i), "corrected": corr,
            "se": var.variance.se / (2 * sv * rel), "score_std": float(var.score_std.mean)}
    md = ("| i | measured | 1/sqrt(i) | corrected |\n|---:|---:|---:|---:|\n"
          + "".join(f"| {k} | {rel[k - 1]:.4f} | {1 / np.sqrt(k):.4f} | {corr[k - 1]:.4f} |\n"
                    for k in (1, 2, 4, 8, 16, 32) if k <= T))
    write(args, NAME, s, rows, md, fig, t0)
