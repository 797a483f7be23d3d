"""Figure 7: inter-sequence cosine of last-token states after each block for the full, MLP-only
and attention-only models, on Gaussian inputs with the embedding's statistics (paper Sec. 4.3)."""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments.common.cli import parse, write

from bornbiased_jax.presets import get_preset
from bornbiased_jax.probes.contraction import inter_sequence_profile
from bornbiased_jax.probes.inputs import probe_inputs

NAME = "figure7"
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=64, num_seqs=400)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=2000)
MODES = {"full": "attn_mlp", "MLP-only": "mlp_only", "attention-only": "attn_only"}

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    base = get_preset(s["preset"])
    rows = {}
    fig, a7 = plt.subplots(figsize=(6, 4))
    for label, block in MODES.items():
        cfg = base.ablate(block=block)
        xs = probe_inputs("gaussian", cfg, s["num_seqs"], s["seq_len"])
        prof = inter_sequence_profile(cfg, [s["seed"]], xs, progress=True)
        blocks = prof["blocks"][0]
        rows[label] = [{"block": i, "mean": b.mean, "sd": b.sd, "log10_p": b.log10_p}
                       for i, b in enumerate(blocks)]
        m = np.array([b.mean for b in blocks])
        a7.plot(range(len(m)), m, "o-", label=label)
    a7.set_xlabel("block (0 = inputs)"); a7.set_ylabel("pairwise cosine, last token")
    a7.set_title(f"Figure 7: per-block contraction ({base.name})"); a7.legend(fontsize=8)
    L = base.n_layers
    md = ("| block | full | MLP-only | attention-only |\n|---:|---:|---:|---:|\n"
          + "".join(f"| {i} | " + " | ".join(f"{rows[k][i]['mean']:.4f}" for k in MODES) + " |\n"
                    for i in range(L + 1)))
    write(args, NAME, s, rows, md, fig, t0)
