"""Figure 4: mean and standard deviation of the inter-sequence cosine of last-token states after
each MLP block of the MLP-only model, on Gaussian inputs with the embedding's statistics
(paper Sec. 4.2)."""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments.common.cli import parse, write

from bornbiased_jax.presets import get_preset
from bornbiased_jax.probes.contraction import inter_sequence_profile
from bornbiased_jax.probes.inputs import probe_inputs

NAME = "figure4"
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=64, num_seqs=400)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=2000)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    cfg = get_preset(s["preset"]).ablate(block="mlp_only")
    xs = probe_inputs("gaussian", cfg, s["num_seqs"], s["seq_len"])
    blocks = inter_sequence_profile(cfg, [s["seed"]], xs, progress=True)["blocks"][0]
    rows = [{"block": i, "mean": b.mean, "sd": b.sd, "log10_p": b.log10_p}
            for i, b in enumerate(blocks)]
    m, sd = np.array([b.mean for b in blocks]), np.array([b.sd for b in blocks])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(range(len(m)), m, "o-", color="tab:green", label="mean")
    ax.fill_between(range(len(m)), m - sd, m + sd, color="tab:green", alpha=0.2,
                    label="+- sd of pairwise cosines")
    ax.set_xlabel("MLP blocks (0 = inputs)"); ax.set_ylabel("pairwise cosine, last token")
    ax.set_title(f"Figure 4: MLP-only {cfg.name}, T={s['seq_len']}, N={s['num_seqs']}")
    ax.legend(fontsize=8)
    md = ("| block | mean | sd |\n|---:|---:|---:|\n"
          + "".join(f"| {r['block']} | {r['mean']:.4f} | {r['sd']:.4f} |\n" for r in rows))
    write(args, NAME, s, rows, md, fig, t0)
