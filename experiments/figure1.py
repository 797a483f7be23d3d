"""Figure 1: (a) rank-frequency of predicted tokens vs uniform sampling; (b) the pairwise cosine
similarity of last-token representations across random sequences (paper Sec. 1, 3)."""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments.common.cli import parse, write

from bornbiased_jax.presets import get_preset
from bornbiased_jax.probes.contraction import last_token_probe, pairwise_similarity
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.probes.token_preference import summarize
from bornbiased_jax.stats import format_log10_p, uniform_rank_frequency
from bornbiased_jax.sweep import sweep

NAME = "figure1"
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=64, num_seqs=1000)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=2000)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    cfg = get_preset(s["preset"])
    xs = probe_inputs("tokens", cfg, s["num_seqs"], s["seq_len"])
    out = sweep(last_token_probe(cfg), cfg, [s["seed"]], xs, progress=True)
    rec = summarize(out["top"][0], cfg.vocab_size, preset=cfg.name, seed=s["seed"],
                    seq_len=s["seq_len"], input="tokens")
    base = uniform_rank_frequency(rec.num_seqs, cfg.vocab_size, 50)
    U = out["hidden"][0][:, -1]
    sim = pairwise_similarity(U)
    Un = U / np.linalg.norm(U, axis=1, keepdims=True)
    C = (Un @ Un.T)[np.triu_indices(len(U), 1)]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    a.bar(range(1, 51), np.array(rec.top_counts[:50]) / rec.num_seqs, label="initialised model")
    a.plot(range(1, 51), base / rec.num_seqs, "r--", label="uniform sampling (expected)")
    a.set_yscale("log"); a.set_xlabel("rank"); a.set_ylabel("frequency"); a.legend(fontsize=8)
    a.set_title(f"(a) top-1 = {rec.top1_count / base[0]:.1f}x the uniform top-1")
    b.hist(C, bins=60, color="tab:blue")
    b.axvline(0, color="k", lw=0.8)
    b.set_xlabel("cosine similarity of last-token states (block outputs)")
    b.set_title(f"(b) mean {sim.mean:.3f} (random: 0)")
    fig.suptitle(f"{cfg.name} seed {s['seed']}, T={s['seq_len']}, N={s['num_seqs']}")
    fig.tight_layout()
    md = (f"| top-1 id | top-1 count | x uniform top-1 | p-value | mean pairwise cosine | log10 p |\n"
          f"|---:|---:|---:|---:|---:|---:|\n| {rec.top1_id} | {rec.top1_count} | "
          f"{rec.top1_count / base[0]:.1f} | {format_log10_p(rec.log10_p)} | {sim.mean:.3f} | "
          f"{sim.log10_p:.1f} |\n")
    write(args, NAME, s, {"token_preference": rec, "similarity": sim._asdict()}, md, fig, t0)
