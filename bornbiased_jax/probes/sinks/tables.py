"""Tables and figures of the sink metric: rate vs length (Figure 12's axes), per-layer heatmaps."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from bornbiased_jax.plots import figure
from bornbiased_jax.probes.sinks.metric import SinkResult


def sinks_markdown(results: Sequence[SinkResult], name: str) -> str:
    """One row per length: both sink rates, the mean alpha^1 and its 1/T floor, the top head."""
    eps = results[0].eps
    rows = [f"Sink metric of {name} (eps = {eps}): alpha^1 = (1/T) sum_i A[i, 1], "
            f"including i = 1 (floor 1/T).\n",
            "| T | sequences | sink rate (per sequence, mean +- SE) | sink rate of mean alpha "
            "| mean alpha^1 | floor 1/T | max head alpha^1 (layer, head) |",
            "|---|---|---|---|---|---|---|"]
    for r in results:
        a = r.alpha_LH
        l, h = np.unravel_index(int(a.argmax()), a.shape)
        rows.append(f"| {r.T} | {r.n_seqs} | {r.rate:.3f} +- {r.rate_se:.3f} | "
                    f"{r.rate_of_mean_alpha:.3f} | {a.mean():.4f} | {1 / r.T:.4f} | "
                    f"{a.max():.4f} ({l}, {h}) |")
    return "\n".join(rows) + "\n"


def rate_vs_length(results: Sequence[SinkResult], name: str):
    """Sink rate (per-sequence mean +- 2 SE, and of mean alpha) against T, log2 axis."""
    fig, ax = figure(figsize=(6, 4))
    T = [r.T for r in results]
    ax.errorbar(T, [r.rate for r in results], yerr=[2 * r.rate_se for r in results], fmt="o-",
                capsize=3, label="per sequence, mean +- 2 SE")
    ax.plot(T, [r.rate_of_mean_alpha for r in results], "s--", label="of alpha averaged first")
    ax.set_xscale("log", base=2)
    ax.set_xticks(T, [str(t) for t in T])
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("sequence length T")
    ax.set_ylabel(f"sink rate (alpha^1 > {results[0].eps})")
    ax.set_title(f"Attention sinks, {name}")
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def alpha_heatmaps(results: Sequence[SinkResult], name: str):
    """alpha^1 (layers x heads) at each length, one panel per T, shared colour scale [0, 1]."""
    n = len(results)
    fig, axes = figure(1, n, figsize=(2.6 * n + 1, 3.2), squeeze=False)
    im = None
    for ax, r in zip(axes[0], results):
        im = ax.imshow(r.alpha_LH, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        L, H = r.alpha_LH.shape
        ax.set_title(f"T = {r.T}")
        ax.set_xlabel("head")
        ax.set_xticks(range(H))
        ax.set_yticks(range(L))
        for (l, h), v in np.ndenumerate(r.alpha_LH):
            if v > r.eps:
                ax.text(h, l, "S", ha="center", va="center", color="red", fontsize=7)
    axes[0][0].set_ylabel("layer")
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="alpha^1 (S: sink head)")
    fig.suptitle(f"Mean attention mass on the first token, {name}", y=1.05)
    return fig
