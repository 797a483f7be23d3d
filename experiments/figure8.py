"""Figure 8 / Proposition 5: intra-sequence cosine after each of L stacked attention blocks,
standard causal softmax attention (pre-LayerNorm, W_V, W_O, no residual) vs Attn0, for T = 16 and
T = 512, against the exact finite-T Attn0 closed form (paper Sec. 4.4)."""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments._common import parse, write

from bornbiased_jax.config import get_preset
from bornbiased_jax.probes.contraction import intra_sequence_probe
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sweep import sweep
from bornbiased_jax.theory import attn0

NAME = "figure8"
CPU = dict(preset="gpt2-rope-nano", n_layers=12, seq_lens=[16, 512], num_seqs=[200, 24], seed=42)
PAPER = dict(preset="gpt2-rope-nano", n_layers=12, seq_lens=[16, 512], num_seqs=[2000, 2000],
             seed=42)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    base = get_preset(s["preset"]).ablate(block="attn_only", residual=False,
                                          n_layers=s["n_layers"])
    rows = {}
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for T, N, color in zip(s["seq_lens"], s["num_seqs"], ["r", "b"]):
        # Both curves keep the block's pre-LayerNorm (it re-normalises every position between
        # layers); the dotted exact curve is Attn0 composed without normalisation (Prop. 5).
        for kind, cfg in [("softmax", base), ("Attn0", base.ablate(attention="attn0_causal"))]:
            xs = probe_inputs("gaussian", cfg, N, T)
            out = sweep(intra_sequence_probe(cfg), cfg, [s["seed"]], xs, progress=True)[0]
            m, sd = out.mean(0), out.std(0)
            rows[f"T={T} {kind}"] = {"mean": m, "sd": sd}
            style = "-" if kind == "softmax" else "--"
            ax.plot(range(len(m)), m, style, color=color, label=f"T={T} {kind}")
            ax.fill_between(range(len(m)), m - sd, m + sd, color=color, alpha=0.1)
        exact = [1 / T] + [attn0.attn0_intra_exact(T, n) for n in range(1, s["n_layers"] + 1)]
        rows[f"T={T} exact Attn0"] = {"mean": np.array(exact)}
        ax.plot(range(len(exact)), exact, ":", color="k", lw=1)
    ax.set_xlabel("attention blocks"); ax.set_ylabel("mean intra-sequence cosine")
    ax.set_title(f"Figure 8 (d={base.d_model}, {base.n_heads} heads, pre-LN blocks;\n"
                 f"dotted: exact Attn0 without normalisation)", fontsize=10)
    ax.legend(fontsize=7)
    keys = list(rows)
    md = ("| blocks | " + " | ".join(keys) + " |\n|---:|" + "---:|" * len(keys) + "\n"
          + "".join(f"| {l} | " + " | ".join(f"{rows[k]['mean'][l]:.4f}" for k in keys) + " |\n"
                    for l in range(s["n_layers"] + 1)))
    write(args, NAME, s, rows, md, fig, t0)
