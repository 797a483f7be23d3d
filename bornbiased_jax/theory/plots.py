"""Theory curves over simulated points: Figure 5, Table 3, Figure 8, Figure 9."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bornbiased_jax.io import save_figure  # noqa: E402
from bornbiased_jax.theory import attn0, kernels, simulate  # noqa: E402


def figure5(reps: int = 24):
    L = 6
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    layers_ = np.arange(L + 1)
    ax.plot(layers_, kernels.relu_iterates(L), "b-", label="ReLU MLP0: arc-cosine recurrence")
    ax.axhline(0, color="r", ls="--", label="tanh MLP0: 0 (odd activation)")
    for act, color in [("relu", "b"), ("tanh", "r")]:
        sim = simulate.mlp0_inter_similarity(act, L, reps=reps)
        ax.errorbar(layers_, sim.mean, yerr=2 * sim.se, fmt="o", color=color, ms=4,
                    label=f"{act} MLP0 simulated (d=1024, +-2 SE)")
    ax.set_xlabel("number of MLP0 blocks l")
    ax.set_ylabel("mean inter-sequence cosine")
    ax.set_title("Proposition 2 / Figure 5")
    ax.legend(fontsize=7)
    return fig


def table3(reps: int = 24):
    T = 128
    p4 = simulate.prop4_similarities(T, d=512, d_ff=2048, reps=reps)
    names = ["h = MLP0(x)", "MLP0(h)", "Attn0(h)"]
    closed = [1 / math.pi, kernels.relu_iterates(2)[2], float(attn0.prop4_attn0_after_relu(T))]
    paper = [0.31, 0.49, 0.98]
    sims = [p4["h"], p4["mlp0_mlp0"], p4["attn0_mlp0"]]
    x = np.arange(3)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.bar(x - 0.25, paper, 0.25, label="paper (Table 3)", color="0.7")
    ax.bar(x, closed, 0.25, label="closed form (Prop. 2, 4)", color="tab:blue")
    ax.bar(x + 0.25, [float(s.mean) for s in sims], 0.25,
           yerr=[2 * float(s.se) for s in sims], label="simulated (+-2 SE)", color="tab:orange")
    ax.set_xticks(x, names)
    ax.set_ylabel("mean inter-sequence cosine (last token)")
    ax.set_title(f"Table 3: Attn0 amplifies MLP0's contraction (T = {T})")
    ax.legend(fontsize=7)
    return fig


def figure8(n_layers: int = 8, softmax_reps: int = 4):
    fig, ax = plt.subplots(figsize=(6, 4))
    ls = np.arange(n_layers + 1)
    for T, color in [(16, "r"), (512, "b")]:
        exact = [0.0 if n == 0 else attn0.attn0_intra_exact(T, n) for n in ls]
        exact[0] = 1.0 / T  # the diagonal only: i.i.d. inputs
        ax.plot(ls, exact, "-", color=color, label=f"T={T}: exact finite-T Attn0")
        ax.plot(ls[1:], attn0.paper_prop5_approximation(T, ls[1:] + 1), ":", color=color,
                label=f"T={T}: paper approx. 1-(1-1/T)/L^2, L = layers+1")
        sim = simulate.attn0_intra_similarity(T, n_layers, d=1024 if T == 16 else 128,
                                              n_seqs=64 if T == 16 else 8)
        ax.plot(ls, sim.mean, "s", color=color, mfc="none", ms=6, label=f"T={T}: Attn0 simulated")
        soft = simulate.softmax_intra_similarity(T, n_layers, n_seqs=8 if T == 16 else 2,
                                                 reps=softmax_reps)
        ax.errorbar(ls, soft.mean, yerr=2 * soft.se, fmt="o", color=color, ms=4,
                    label=f"T={T}: softmax attention (d=768) simulated")
    ax.set_xlabel("number of attention layers")
    ax.set_ylabel("mean intra-sequence cosine")
    ax.set_title("Proposition 5 / Figure 8")
    ax.legend(fontsize=6)
    return fig


def figure9(T: int = 32, reps: int = 16):
    var = simulate.attention_output_variance(T, reps=reps)
    s_std = float(var.score_std.mean)
    sv = float(var.value_variance.mean)
    i = np.arange(1, T + 1)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.errorbar(i, np.sqrt(var.variance.mean / sv), yerr=var.variance.se / sv, fmt="o", ms=3,
                color="r", label="softmax attention, simulated std of o_i / std of v")
    ax.plot(i, 1 / np.sqrt(i), "b--", label="paper: 1/sqrt(i) (uniform weights)")
    ax.plot(i, np.sqrt(attn0.softmax_variance_factor(T, s_std) / i), "k-", lw=1,
            label=f"corrected: sqrt(E[sum_j A_ij^2]), score std {s_std:.2f}")
    ax.set_xlabel("position i")
    ax.set_ylabel("relative std of attention output")
    ax.set_title("Eq. 2 / Figure 9 (d = 768, 12 heads)")
    ax.legend(fontsize=7)
    return fig


def write_all(out: Path, fast: bool = False) -> list[Path]:
    reps = 8 if fast else 24
    figs = {"figure5.png": figure5(reps), "table3.png": table3(reps),
            "figure8.png": figure8(6 if fast else 8, 2 if fast else 4),
            "figure9.png": figure9(reps=reps)}
    paths = []
    for name, fig in figs.items():
        paths.append(save_figure(fig, Path(out) / name))
        plt.close(fig)
    return paths
