"""What the authors' released SeedPrints code runs by default (notes Sec. 2.2, "variant C").

  1. Identity dimensions: the bottom-k (most *negative* mean output) of each model, k = 400 at
     d_out = 768 (``buffer_k``; scaled with d_out here), intersected ("coset" mode): S.
  2. Each model's outputs on S are normalised row by row: softmax(F[:, S] / 10) ("softmax_T10").
  3. tau_s = Kendall's tau per column of S; statistic: mean tau.
  4. "Analytical" null: the |S| taus are treated as independent, each with the permutation sd
     sigma = sqrt(2(2n+5) / (9n(n-1))), so z = mean tau / (sigma / sqrt(|S|)), and
     p = 2 * Phi-bar(z), clipped to 1.

What that p means: 2 * Phi-bar(z) is the two-sided formula without the absolute value. It only
rejects for positive z (a one-sided test) but doubles the one-sided p, so at alpha = 0.01 the
test's size is alpha / 2 = 0.005 when its null holds, and p = 1 for every z <= 0 (half of all
unrelated pairs under that null). The exact one-sided value Phi-bar(z) is reported too. The
softmax over S also couples the columns (each row sums to one), which the independence
assumption of step 4 ignores; with temperature 10 and O(1) outputs the coupling is weak.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods.result import ALPHA, LineageResult, check_alpha
from bornbiased_jax.stats import kendall_null_sd

TEMPERATURE = 10.0


def official_test(F_A: np.ndarray, F_B: np.ndarray, k: int | None = None, *,
                  temperature: float = TEMPERATURE, alpha: float = ALPHA) -> LineageResult:
    """The released code's default test on features ``F_A`` (base) and ``F_B`` (suspect).

    Returns p-values 'two_phi_bar' (the code's 2 * Phi-bar(z), primary) and 'one_sided'
    (Phi-bar(z))."""
    n, d_out = D.check_features(F_A, F_B)
    alpha = check_alpha(alpha)
    k = D.check_size("k", D.default_size(d_out) if k is None else k, d_out)
    S = D.coset(F_A, F_B, k, largest=False)
    notes = []
    taus = np.zeros(0)
    if len(S) >= 2:
        taus = D.kendall_per_dim(D.softmax_rows(F_A[:, S], temperature),
                                 D.softmax_rows(F_B[:, S], temperature), np.arange(len(S)))
        if np.isnan(taus).any():
            notes.append(f"{int(np.isnan(taus).sum())} columns are constant after the softmax "
                         f"and have no Kendall tau; they are dropped")
            S, taus = S[~np.isnan(taus)], taus[~np.isnan(taus)]
    sigma = kendall_null_sd(n)
    if len(taus) == 0:
        notes.append(f"|S| = {len(S)}: a softmax over fewer than two dimensions is constant, so "
                     f"there is no correlation to test; p = 1 by convention")
        z = np.nan
        p_two, p_one = 1.0, 1.0
    else:
        z = float(taus.mean() / (sigma / math.sqrt(len(taus))))
        p_one = float(np.exp(special.log_ndtr(-z)))
        p_two = float(min(1.0, np.exp(math.log(2) + special.log_ndtr(-z))))
    details = {"k": k, "temperature": temperature, "z": z, "kendall_null_sd": sigma,
               "log10_p_two_phi_bar": min(0.0, math.log10(2) + special.log_ndtr(-z) / math.log(10))
               if np.isfinite(z) else 0.0}
    return LineageResult("official", {"two_phi_bar": p_two, "one_sided": p_one}, alpha, n,
                         d_out, S, taus, "kendall_tau",
                         float(taus.mean()) if len(taus) else np.nan, np.zeros(0), details,
                         "; ".join(notes))


def from_context(ctx) -> LineageResult:
    """The released code's test of one pair that ``compare`` prepared
    (``runner.context.Context``)."""
    return official_test(ctx.F_A, ctx.F_B, ctx.settings.k, alpha=ctx.settings.alpha)
