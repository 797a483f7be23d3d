"""Tables and figures of the token-preference job: Table 1 (markdown/terminal) and Figure 1a."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Sequence

from bornbiased_jax.plots import figure
from bornbiased_jax.probes.token_preference import TokenPreference
from bornbiased_jax.stats import format_log10_p, uniform_rank_frequency

PLOT_RANKS = 30


def table1_markdown(records: Sequence[TokenPreference]) -> str:
    """Table 1 layout: one block per model, rows seed x length, p-value from its log10."""
    by_model = defaultdict(list)
    for r in records:
        by_model[r.preset].append(r)
    lines = []
    for preset, rows in by_model.items():
        r0 = rows[0]
        lines += [f"**{preset}** (N = {r0.num_seqs} sequences, |V| = {r0.vocab_size}, "
                  f"inputs: {r0.input})", "",
                  "| Seed | SeqLen | Top-1 ID | Top-1 Freq. (%) | x uniform top-1 | p-value | log10 p |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            base = uniform_rank_frequency(r.num_seqs, r.vocab_size, 1)[0]
            seed = "-" if r.seed is None else r.seed  # an imported model: no seed known
            lines.append(f"| {seed} | {r.seq_len} | {r.top1_id} | {100 * r.top1_freq:.2f}% | "
                         f"{r.top1_count / base:.1f} | {format_log10_p(r.log10_p)} | "
                         f"{r.log10_p:.1f} |")
        lines.append("")
    lines.append("p-value: Bonferroni-corrected binomial tail min(1, V P(X >= k)), X ~ Bin(N, 1/V), "
                 "computed in log space (App. B.2). 'x uniform top-1': the top-1 count over the "
                 "expected top-1 count of N uniform draws (Figure 1a's baseline).")
    return "\n".join(lines) + "\n"


def figure1a(records: Sequence[TokenPreference], max_panels: int = 6):
    """Rank-frequency bars of the top predicted tokens against the uniform baseline."""
    recs = list(records)[:max_panels]
    ncol = min(3, len(recs))
    nrow = math.ceil(len(recs) / ncol)
    fig, axes = figure(nrow, ncol, figsize=(4.6 * ncol, 3.4 * nrow), squeeze=False)
    for ax, r in zip(axes.flat, recs):
        k = min(PLOT_RANKS, len(r.top_counts))
        ranks = range(1, k + 1)
        freq = [c / r.num_seqs for c in r.top_counts[:k]]
        base = uniform_rank_frequency(r.num_seqs, r.vocab_size, k) / r.num_seqs
        ax.bar(ranks, freq, color="tab:blue", label="initialised model")
        ax.plot(ranks, base, "r--", lw=1.5, label="uniform sampling (expected)")
        ax.set_yscale("log")
        ax.set_xlabel("rank of predicted token")
        ax.set_ylabel("frequency")
        ax.set_title(f"{r.preset} seed {r.seed}, T={r.seq_len}\n"
                     f"top-1 id {r.top1_id}: {r.top1_count / r.num_seqs / base[0]:.1f}x baseline",
                     fontsize=9)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(recs):]:
        ax.axis("off")
    fig.suptitle("Next-token preference on random sequences at initialisation (Figure 1a)")
    fig.tight_layout()
    return fig
