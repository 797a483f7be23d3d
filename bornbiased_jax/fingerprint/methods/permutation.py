"""A lineage test that is exact for any pair of models: the residual-basis permutation test.

Beyond the paper. H0: "B was trained (or drawn) independently of A". No assumption on how either
was trained: both may be initialisations, trained checkpoints or imports.

Why it is exact. The residual stream has no preferred basis. The initialisation draws its
coordinates i.i.d.; RMSNorm and LayerNorm act alike on every coordinate; AdamW (like SGD,
Adafactor, Muon) updates coordinates alike. So for a permutation pi of the d_model residual
coordinates, the model piA (embedding columns, learned positions, norm gains and biases, the input
side of every Q/K/V/gate/up projection, the output side of every O/down projection and their
biases, the LM head's rows: all permuted together, :func:`~bornbiased_jax.fingerprint.edits.obfuscation.permute_residual`) has the same law as
A. Under H0, (piA, B) has the law of (A, B) for every fixed pi, and for any statistic s the values
s(A, B), s(pi_1 A, B), ..., s(pi_K A, B) with pi_k drawn uniformly are exchangeable, so

    p = (1 + #{k : s(pi_k A, B) >= s(A, B)}) / (K + 1)

satisfies P(p <= alpha) <= alpha, whatever the architecture, the training or the inputs.

Why it costs nothing. With token inputs (the same random ids for both models), piA's final hidden
state on every input is A's with its coordinates permuted, F_piA = F_A[:, pi] (checked by
building piA's weights in tests/test_permutation.py). With C_ij = corr(F_A[:, i], F_B[:, j])
over the n inputs (one d x d matrix product), s(piA, B) = mean_j C[pi(j), j]: K = 9,999 null
draws cost K x d additions, and the whole test two forward passes.

Limits (also in ``bornbiased fingerprint --help``):
  * Gaussian input embeddings are refused: there piA's features are pi . A(pi^-1 x), one forward
    pass of A per null draw, not a column permutation.
  * Logits are refused: vocabulary ids are not exchangeable in a trained model (token 0 is not
    token 1), so permuting logit columns does not give a model with A's law.
  * Parameters with a fixed residual-basis structure (sinusoidal positions, a fixed outlier
    dimension) would break the invariance; none of this project's architectures has one.
  * The statistic compares coordinate j of A with coordinate j of B. A suspect whose residual
    basis was deliberately permuted (a cheap, function-preserving edit) evades it: the test
    then finds no evidence, it does not wrongly accuse. A permutation-invariant statistic would
    need another null and is not implemented.
  * Two presets built with ``--shared-embedding`` share their embedding matrix and so are not
    independent: the test rightly finds them related.

Statistics (``STATISTICS``; measured power does not separate them at CPU scale, so the
default is the one robust to outliers, docs/seedprint.md):
  'spearman' - C is Spearman's rho (ranks standardised per column): robust to the few
               outsized coordinates trained models grow;
  'pearson'  - C is Pearson's r;
  'spearman_abs' - C is |Spearman's rho|: blind to residual sign flips (a function-preserving
               renaming of RMSNorm models, ``rotation.flip_residual_signs``), still exact (the
               null permutes the same matrix).
The null's exact mean and variance over all d! permutations (Hoeffding's combinatorial
theorem) give a z and a normal-tail p ('normal'), an approximation that can go below the exact
p's floor 1/(K + 1); the exact p is primary.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from bornbiased_jax.defaults import PERMUTATION_DRAWS as DEFAULT_PERMUTATIONS
from bornbiased_jax.defaults import PERMUTATION_STATISTIC as DEFAULT_STATISTIC
from bornbiased_jax.defaults import PERMUTATION_STATISTICS as STATISTICS
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods.result import ALPHA, LineageResult, check_alpha

RESIDUAL_OUTPUTS = ("normed", "prenorm")


def check_applicable(input_kind: str, output: str) -> None:
    """A UserError unless the permutation test is exact for these inputs and outputs."""
    if output not in RESIDUAL_OUTPUTS:
        raise UserError(f"the permutation test needs residual-stream features (--feature normed "
                        f"or prenorm), not {output!r}: vocabulary ids are not exchangeable in a "
                        f"trained model, so permuting logit columns breaks its null; use "
                        f"--feature normed, or the calibrated test for logits")
    if input_kind != "tokens":
        raise UserError(f"the permutation test needs token inputs (--input tokens), not "
                        f"{input_kind!r}: with Gaussian input embeddings x the permuted model's "
                        f"features are pi . A(pi^-1 x), one forward pass of the base per null "
                        f"draw rather than a column permutation; use --input tokens")


def check_draws(K: int, alpha: float) -> int:
    """K null permutations, refused when the exact p (>= 1/(K+1)) could never reach alpha."""
    alpha = check_alpha(alpha)
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise UserError(f"the number of permutations must be a positive integer, got {K!r}")
    need = math.ceil(1 / alpha - 1 - 1e-9)
    if K < need:
        raise UserError(f"{K} permutations are too few for alpha = {alpha}: the exact p is at "
                        f"least 1/(K+1) = {1 / (K + 1):.3g}, so the test could never reject; "
                        f"use K >= 1/alpha - 1 = {need} (the default is {DEFAULT_PERMUTATIONS})")
    return int(K)


def cross_correlation(F_A: np.ndarray, F_B: np.ndarray, statistic: str = DEFAULT_STATISTIC
                      ) -> np.ndarray:
    """C (d, d): C[i, j] = correlation over the n inputs of A's output i and B's output j.

    A constant column (no variance) correlates 0 with everything."""
    if statistic not in STATISTICS:
        raise UserError(f"unknown permutation statistic {statistic!r}; choose one of "
                        f"{STATISTICS}")
    n, _ = D.check_features(F_A, F_B)
    zA, zB = standardised(F_A, statistic), standardised(F_B, statistic)
    C = (zA.T @ zB) / n
    return np.abs(C) if statistic.endswith("_abs") else C


def standardised(F_nd: np.ndarray, statistic: str = DEFAULT_STATISTIC) -> np.ndarray:
    """Columns standardised to mean 0, variance 1 (of their ranks for 'spearman'), float64:
    C = z_A^T z_B / n."""
    if statistic in ("spearman", "spearman_abs"):
        return D.RankedFeatures.of(F_nd).z_nd.astype(np.float64)
    return _standardise(F_nd)


def _standardise(F_nd: np.ndarray) -> np.ndarray:
    F = np.asarray(F_nd, dtype=np.float64)
    F = F - F.mean(0)
    sd = F.std(0)
    return np.divide(F, sd, out=np.zeros_like(F), where=sd > 0)


def matched_statistic(C: np.ndarray, perm: np.ndarray | None = None) -> float:
    """s(piA, B) = mean_j C[pi(j), j] (pi = identity when ``perm`` is None)."""
    d = C.shape[0]
    rows = np.arange(d) if perm is None else np.asarray(perm)
    return float(C[rows, np.arange(d)].mean())


def null_statistics(C: np.ndarray, K: int, rng: np.random.Generator,
                    block: int = 1 << 22) -> np.ndarray:
    """s(pi_k A, B) for K permutations pi_k drawn uniformly and independently, (K,)."""
    d = C.shape[0]
    out = np.empty(K)
    cols = np.arange(d)
    step = max(1, block // d)
    for k0 in range(0, K, step):
        k1 = min(K, k0 + step)
        perms = rng.permuted(np.broadcast_to(cols, (k1 - k0, d)), axis=1)
        out[k0:k1] = C[perms, cols].mean(1)
    return out


def null_moments(C: np.ndarray) -> tuple[float, float]:
    """Exact mean and variance of mean_j C[pi(j), j] over all d! permutations (Hoeffding 1951):
    mean = C.., var = sum_ij (C_ij - C_i. - C_.j + C..)^2 / (d^2 (d - 1))."""
    d = C.shape[0]
    if d < 2:
        return float(C.mean()), 0.0
    resid = C - C.mean(1, keepdims=True) - C.mean(0, keepdims=True) + C.mean()
    return float(C.mean()), float((resid ** 2).sum() / (d * d * (d - 1)))


def permutation_test(F_A: np.ndarray, F_B: np.ndarray, *, statistic: str = DEFAULT_STATISTIC,
                     permutations: int = DEFAULT_PERMUTATIONS, alpha: float = ALPHA,
                     rng: np.random.Generator | None = None) -> LineageResult:
    """The residual-basis permutation test of suspect ``F_B`` against base ``F_A``.

    Args:
      F_A, F_B: (n, d_model) residual-stream features ('normed' or 'prenorm') of the two models
        on the same token inputs.
      statistic: one of ``STATISTICS``.
      permutations: K null draws (at least 1/alpha - 1).
      rng: numpy generator of the permutations (default: seeded with 0, reproducible).
    Returns:
      p-values 'exact' (primary) and 'normal' (Hoeffding moments, normal tail).
    """
    n, d = D.check_features(F_A, F_B)
    if d < 2:
        raise UserError(f"the permutation test needs at least 2 residual coordinates, got {d}")
    return test_of_correlation(cross_correlation(F_A, F_B, statistic), n, statistic=statistic,
                               permutations=permutations, alpha=alpha, rng=rng)


def test_of_correlation(C: np.ndarray, n: int, *, statistic: str = DEFAULT_STATISTIC,
                        permutations: int = DEFAULT_PERMUTATIONS, alpha: float = ALPHA,
                        rng: np.random.Generator | None = None) -> LineageResult:
    """The permutation test from C = :func:`cross_correlation` (computed once per pair; many
    pairs can reuse each model's standardised features), for n inputs."""
    alpha = check_alpha(alpha)
    K = check_draws(permutations, alpha)
    d = C.shape[0]
    s = matched_statistic(C)
    null = null_statistics(C, K, rng or np.random.default_rng(0))
    exact = (1 + int(np.sum(null >= s))) / (K + 1)
    mean, var = null_moments(C)
    if var > 0:
        z = (s - mean) / math.sqrt(var)
        normal = float(np.exp(special.log_ndtr(-z)))
    else:
        z, normal = float("nan"), exact
    details = {"K": K, "statistic_name": statistic, "z": z, "null_mean": mean,
               "null_sd": math.sqrt(var), "min_exact_p": 1 / (K + 1),
               "mean_offdiagonal": float((C.sum() - np.trace(C)) / (d * (d - 1)))}
    return LineageResult("permutation", {"exact": exact, "normal": normal}, alpha, n, d,
                         np.arange(d), np.diag(C).copy(), f"{statistic}_matched", s, null,
                         details, "")



def check_settings(s) -> None:
    """A UserError when the permutation test cannot run with ``s`` (``compare.Settings``)."""
    check_applicable(s.input, s.output)
    check_draws(s.permutations, s.alpha)
    if s.permutation_statistic not in STATISTICS:
        raise UserError(f"unknown permutation statistic {s.permutation_statistic!r}; "
                        f"choose one of {STATISTICS}")


def from_context(ctx) -> LineageResult:
    """The permutation test of one pair that ``compare`` prepared (``runner.context.Context``)."""
    s = ctx.settings
    return permutation_test(ctx.F_A, ctx.F_B, statistic=s.permutation_statistic,
                            permutations=s.permutations, alpha=s.alpha,
                            rng=np.random.default_rng(s.probe_seed))
