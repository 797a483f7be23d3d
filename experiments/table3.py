"""Table 3: MLP0, MLP0 o MLP0 and Attn0 o MLP0 with ReLU: mean pairwise cosine of last-token
outputs across sequences, its significance, and Propositions 2 and 4 (paper Sec. 4.3)."""

import math
import time

import jax
import matplotlib.pyplot as plt
import numpy as np

from experiments._common import parse, write

from bornbiased_jax import layers, model
from bornbiased_jax.probes.contraction import pairwise_similarity
from bornbiased_jax.probes.inputs import GaussianEmbeds
from bornbiased_jax.sweep import sweep
from bornbiased_jax.theory import attn0, kernels, simulate
from bornbiased_jax.theory.binomial import format_log10_p

NAME = "table3"
CPU = dict(d=768, d_ff=3072, seq_len=128, num_seqs=400, seed=42)
PAPER = dict(d=768, d_ff=3072, seq_len=128, num_seqs=2000, seed=42)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    cfg = simulate.block_config(d=s["d"], n_layers=2, d_ff=s["d_ff"], activation="relu")
    full = simulate.block_config(d=s["d"], n_layers=1, block="attn_only", attention="attn0_full")

    def probe(params, x_Td):
        hid = model.forward(params, cfg, embeds_Td=x_Td, return_hidden=True).hidden
        h = hid[1]
        return {"h": h[-1], "mlp": hid[2][-1], "attn": layers.attention({}, full, h, None)[-1]}

    xs = GaussianEmbeds(jax.random.key(s["seed"]), s["num_seqs"], s["seq_len"], s["d"], 1.0)
    out = sweep(probe, cfg, [s["seed"]], xs, progress=True)
    closed = {"h": 1 / math.pi, "mlp": kernels.relu_iterates(2)[2],
              "attn": float(attn0.prop4_attn0_after_relu(s["seq_len"]))}
    paper = {"h": 0.31, "mlp": 0.49, "attn": 0.98}
    names = {"h": "h = MLP0(x)", "mlp": "y_MLP = MLP0(h)", "attn": "y_attn = Attn0(h)"}
    rows = []
    for k in ("h", "mlp", "attn"):
        sim = pairwise_similarity(out[k][0])
        rows.append({"setting": names[k], "paper": paper[k], "closed_form": closed[k],
                     "avg_sim": sim.mean, "log10_p": sim.log10_p})
    fig, ax = plt.subplots(figsize=(6, 3.8))
    x = np.arange(3)
    ax.bar(x - 0.25, [r["paper"] for r in rows], 0.25, color="0.7", label="paper")
    ax.bar(x, [r["closed_form"] for r in rows], 0.25, label="closed form")
    ax.bar(x + 0.25, [r["avg_sim"] for r in rows], 0.25, label="measured")
    ax.set_xticks(x, [r["setting"] for r in rows], fontsize=8)
    ax.set_title(f"Table 3 (d={s['d']}, T={s['seq_len']}, N={s['num_seqs']})"); ax.legend()
    md = ("| Experiment setting | paper | closed form | Avg. Sim | p-value |\n|---|---:|---:|---:|---:|\n"
          + "".join(f"| {r['setting']} | {r['paper']} | {r['closed_form']:.4f} | "
                    f"{r['avg_sim']:.4f} | {format_log10_p(r['log10_p'])} |\n" for r in rows))
    write(args, NAME, s, rows, md, fig, t0)
