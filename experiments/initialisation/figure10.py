"""Figure 10's record (paper Sec. 5): the frequency of each predicted token and of each hidden
dimension holding the maximum of the final-layer last-token state, from one pass over random
sequences; ``experiments/figure10.py`` (CPU scale) and the campaign's paper-scale piece write it."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.stats import bonferroni_log10_p


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
