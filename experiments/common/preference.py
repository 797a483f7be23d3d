"""Table 1(b)'s rule for a weak preference (paper Sec. 3), shared by the studies that judge one:
the initialisation study's LLaMA-2 rows and the Gemma 3 study's fresh networks.

The paper's LLaMA-2 rows are top-1 counts of 6-9 of N = 10,000 (0.06-0.09 %), every one called
significant (largest p 3.16e-2). A single row at the paper's weakest passes on its own only
about half the time even for a network as biased as the paper's (:func:`preference_power`), so
the rows' Bonferroni p-values are pooled by Fisher's method (conservative: a Bonferroni p is not
uniform under the null). A pooled p that is not significant is a finding only where a
preference of the paper's smallest size could have been seen: where each row's power against it
reaches :data:`POWER`; below, the rule says the rows are underpowered.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from bornbiased_jax.stats import (collisions_log10_p, critical_count, format_log10_p,
                                  preference_power, uniform_distinct)
from experiments.common.paper_values import paper_table1_range

# Table 1(b)'s LLaMA-2 rows are 6-9 of N = 10,000 (0.06-0.09 %; 1.2-1.8 sequences at N = 2,000)
PAPER_N_LLAMA = 10_000
LLAMA_ALPHA = 0.05  # the paper calls all six Table 1(b) rows significant; its largest p: 3.16e-2
POWER = 0.8  # a row's power against the paper's weakest preference below this: underpowered


def _count(r: dict) -> int:
    return r.get("top1_count", round(r["top1_freq"] * r["num_seqs"]))


def pooled_significance(rows: list[dict], name: str) -> tuple[str, float, str]:
    """Fisher's pooled p of the rows' Bonferroni p-values against :data:`LLAMA_ALPHA`: (state
    'holds' or 'fails', pooled p, text naming each row)."""
    cut = np.log10(LLAMA_ALPHA)
    sig = [r for r in rows if r["log10_p"] < cut]
    pooled = float(stats.combine_pvalues([min(1.0, 10 ** r["log10_p"]) for r in rows],
                                         method="fisher").pvalue)
    state = "holds" if pooled < LLAMA_ALPHA else "fails"
    listed = ", ".join(f"seed {r['seed']} T={r['seq_len']} {_count(r)}/{r['num_seqs']:,} "
                       f"p {format_log10_p(r['log10_p'])}" for r in rows)
    return state, pooled, (f"{name} preference (Bonferroni p of each row, pooled by Fisher's "
                           f"method, < {LLAMA_ALPHA}): {state}, pooled p {pooled:.2g}; "
                           f"{len(sig)} of {len(rows)} rows significant on their own ({listed})")


def llama_significance(llama: list[dict]) -> tuple[str | None, str]:
    """Finding 1.1's LLaMA-2 part: "a non-random preference" (Table 1(b): p-values 1.9e-6 to
    3.16e-2 at N = 10,000), judged on the rows measured at N >= 10,000 only: at N = 2,000 the
    paper's preferred token would be predicted 1.2-1.8 times, below the top-1 of uniform draws
    (about 3 of 2,000 over 32,000 tokens). Returns (state, text): 'holds' when the pooled p <
    0.05, 'fails' otherwise; state None (with the reason) when no row reaches that N."""
    at = [r for r in llama if r["num_seqs"] >= PAPER_N_LLAMA]
    if not at:
        lo, hi = paper_table1_range("b")
        return None, (f"LLaMA-2's significance is untestable below N = {PAPER_N_LLAMA:,} (the "
                      f"paper's rows are {lo * PAPER_N_LLAMA:.0f}-{hi * PAPER_N_LLAMA:.0f} of "
                      f"{PAPER_N_LLAMA:,}: {lo * 2000:.1f}-{hi * 2000:.1f} of N = 2,000)")
    state, _, text = pooled_significance(at, "LLaMA-2")
    return state, text.replace("preference (", f"preference at N = {PAPER_N_LLAMA:,} (", 1)


def weak_preference(rows: list[dict], vocab_size: int, name: str) -> tuple[str, str]:
    """Table 1(b)'s rule on any network's rows (one per seed, each with ``num_seqs``,
    ``log10_p``, ``top1_count``): 'holds' when the pooled p < :data:`LLAMA_ALPHA`; else 'fails'
    when every row's power (:func:`preference_power`) against the paper's weakest LLaMA-2
    preference (0.06 %) reaches :data:`POWER`, 'underpowered' when not. The text gives the
    critical count and the power at the rows' N and vocabulary."""
    state, _, text = pooled_significance(rows, name)
    lo, _ = paper_table1_range("b")
    n = min(r["num_seqs"] for r in rows)
    k = critical_count(n, vocab_size, LLAMA_ALPHA)
    power = preference_power(lo, n, vocab_size, LLAMA_ALPHA)
    text += (f"; power: a preference of Table 1(b)'s weakest size ({lo:.2%}) reaches the "
             f"critical count {k} (Bonferroni p < {LLAMA_ALPHA} over {vocab_size:,} tokens) "
             f"at N = {n:,} with probability {power:.2f} per row")
    if state == "fails" and power < POWER:
        state = "underpowered"
        text += f" (below {POWER}: no preference of that size could be seen)"
    return state, text


def spread_preference(rows: list[dict], vocab_size: int, alpha: float = 0.01) -> tuple[int, str]:
    """Beyond the paper: whether each row's arg-max tokens repeat more often than uniform draws'
    (:func:`~bornbiased_jax.stats.collisions_log10_p` of its ``distinct_tokens``), a preference
    spread over many tokens that no top-1 count shows. Returns (rows with p < ``alpha``,
    text)."""
    parts, hits = [], 0
    for r in rows:
        n = r["num_seqs"]
        mean, sd = uniform_distinct(n, vocab_size)
        lp = collisions_log10_p(r["distinct_tokens"], n, vocab_size)
        hits += lp < np.log10(alpha)
        parts.append(f"seed {r['seed']}: {r['distinct_tokens']:,} distinct of N = {n:,} "
                     f"(uniform draws {mean:,.1f} ± {sd:.2g}), p {format_log10_p(lp)}")
    return hits, (f"rule: a row's collisions (N minus its distinct arg-max tokens) beyond "
                  f"uniform draws' over {vocab_size:,} tokens, Poisson p below {alpha}; it "
                  f"holds at {hits} of {len(rows)} rows (" + "; ".join(parts) + ")")
