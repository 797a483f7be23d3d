"""Figure 10 (paper Sec. 5): its record from one pass (the frequency of each predicted token and
of each hidden dimension holding the maximum of the final-layer last-token state;
``experiments/figure10.py`` at CPU scale and the campaign's paper-scale piece write it) and
its rule: both frequencies extremely non-uniform."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.stats import bonferroni_log10_p, format_log10_p, uniform_rank_frequency
from bornbiased_jax.verdicts import Claim
from experiments.initialisation.levels import ok_verdict


FIGURE10_PAPER = "both token and max-dimension frequencies extremely non-uniform"


def figure10_claim(d: dict) -> Claim:
    """Reproduced when both the top token's and the top max-dimension's Bonferroni p < 1e-5;
    the row gives each top count beside the largest count of uniform draws (its mean and 99th
    percentile, which at N << V is far above N/V)."""
    r = d["records"]
    ok = r["token_log10_p"] < -5 and r["dim_log10_p"] < -5
    return Claim("Figure 10 / Finding 1 (extended)", FIGURE10_PAPER,
                 f"{_figure10_effects(d)}token p {format_log10_p(r['token_log10_p'])}, "
                 f"max-dimension p {format_log10_p(r['dim_log10_p'])} (Bonferroni binomial)",
                 ok_verdict(ok), section="Sec. 5")


def _figure10_effects(d: dict) -> str:
    """'top token 34 of 1,250 (uniform draws' largest: 2.1 on average, 3 or less in 99 %), top
    max-dimension 157 of 1,250 (uniform: 6.9, 9 or less); ' from a Figure 10 record's counts
    (empty for a record without them)."""
    r, s = d["records"], d.get("run", {}).get("settings", {})
    if "token_top_counts" not in r or "num_seqs" not in s:
        return ""
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.stats import uniform_max_quantile

    N, vocab = s["num_seqs"], s.get("vocab_size") or get_preset(s["preset"]).vocab_size
    tok, dim, d_model = (int(r["token_top_counts"][0]), int(r["dim_counts_sorted"][0]),
                         len(r["dim_counts_sorted"]))

    def uniform(v):
        return uniform_rank_frequency(N, v, 1)[0], uniform_max_quantile(N, v)

    (et, qt), (ed, qd) = uniform(vocab), uniform(d_model)
    return (f"top token {tok:,} of {N:,} (uniform draws' largest: {et:.1f} on average, {qt} or "
            f"less in 99 %), top max-dimension {dim:,} of {N:,} (uniform: {ed:.1f}, {qd} or "
            f"less); ")


def figure10_rows(top_N, maxdim_N, vocab_size: int, d_model: int) -> dict:
    """The record's rows from each sequence's predicted token ``top_N`` and the hidden
    dimension holding the maximum of its final-layer last-token state ``maxdim_N``: the 100
    largest token counts, every dimension's count (sorted), and the Bonferroni binomial log10 p
    of the largest of each."""
    N = len(top_N)
    tok = np.sort(np.bincount(np.asarray(top_N), minlength=vocab_size))[::-1]
    dim = np.sort(np.bincount(np.asarray(maxdim_N), minlength=d_model))[::-1]
    return {"token_top_counts": tok[:100], "dim_counts_sorted": dim,
            "token_log10_p": bonferroni_log10_p(int(tok[0]), N, vocab_size),
            "dim_log10_p": bonferroni_log10_p(int(dim[0]), N, d_model)}
