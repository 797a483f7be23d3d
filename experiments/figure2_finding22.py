"""Figure 2 and Finding 2.2: inter-sequence contraction of last-token states per block, and
whether the contraction direction's top token is the model's favourite token (paper Sec. 4)."""

import time

import matplotlib.pyplot as plt
import numpy as np

from _common import parse, write

from bornbiased_jax import model
from bornbiased_jax.config import get_preset
from bornbiased_jax.probes.contraction import direction_top_token, inter_sequence_profile
from bornbiased_jax.probes.inputs import probe_inputs
from scipy import stats

NAME = "figure2_finding22"
CPU = dict(preset="gpt2-rope-cpu", seeds=list(range(12)), seq_len=64, num_seqs=300)
PAPER = dict(preset="gpt2-rope-nano", seeds=list(range(100)), seq_len=1024, num_seqs=2000)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    cfg = get_preset(s["preset"])
    xs = probe_inputs("tokens", cfg, s["num_seqs"], s["seq_len"])
    prof = inter_sequence_profile(cfg, s["seeds"], xs, progress=True)
    emb = model.init_embeddings(cfg, model.embed_key(cfg, None))  # shared across seeds
    W_U = np.asarray(model.unembedding(emb, cfg))
    rows, hits = [], 0
    for i, seed in enumerate(s["seeds"]):
        counts = np.bincount(prof["top"][i], minlength=cfg.vocab_size)
        fav = int(np.argmax(counts))
        d_top = direction_top_token(prof["direction"][i], W_U)
        hits += d_top == fav
        rows.append({"seed": seed, "favourite": fav, "favourite_count": int(counts[fav]),
                     "direction_top": d_top, "match": d_top == fav,
                     "block_mean_cos": [b.mean for b in prof["blocks"][i]]})
    k, n = hits, len(s["seeds"])
    ci = stats.binomtest(k, n).proportion_ci(0.95)
    means = np.array([r["block_mean_cos"] for r in rows])
    fig, ax = plt.subplots(figsize=(6, 4))
    L = means.shape[1] - 1
    ax.errorbar(range(L + 1), means.mean(0), yerr=means.std(0), fmt="o-",
                label=f"mean +- sd over {n} seeds")
    ax.set_xlabel("block (0 = embeddings)"); ax.set_ylabel("mean pairwise cosine, last token")
    ax.set_title(f"Figure 2: {cfg.name}, T={s['seq_len']}, N={s['num_seqs']}")
    ax.legend()
    md = ("| block | mean cosine (over seeds) | sd |\n|---:|---:|---:|\n"
          + "".join(f"| {l} | {means[:, l].mean():.3f} | {means[:, l].std():.3f} |\n"
                    for l in range(L + 1))
          + f"\nFinding 2.2: the contraction direction's top token is the favourite token in "
            f"{k}/{n} models ({100 * k / n:.0f} %, 95 % CI {100 * ci.low:.0f}-{100 * ci.high:.0f} %;"
            f" paper: 76 % of 100).\n")
    write(args, NAME, s, {"per_seed": rows, "match_rate": k / n,
                          "match_ci95": [ci.low, ci.high]}, md, fig, t0)
