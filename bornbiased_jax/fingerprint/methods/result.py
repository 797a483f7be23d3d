"""The outcome of one lineage test: p-values, identity dimensions, correlations, verdict."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from bornbiased_jax.errors import UserError

ALPHA = 0.01  # paper Sec. 6.1.1: significance at p < 0.01


@dataclasses.dataclass
class LineageResult:
    """One test of H0 "the suspect does not descend from the base's initialisation".

    Attributes:
      test: the name of a registered test (``fingerprint.runner.registry``), or 'any_pair'.
      p_values: named p-values; the first is the test's primary one. Every p is a number in
        [0, 1]: a test that cannot be run (e.g. no identity dimensions) reports p = 1 and says
        why in ``note``.
      alpha: significance level; a p-value is significant when p <= alpha (for the continuous
        tests p < alpha and p <= alpha agree with probability 1; for the exact exchangeability
        p-value, p <= alpha is the rule with P(p <= alpha) <= alpha under H0).
      n, d_out: number of inputs and output dimension.
      dims: the dimensions the correlations were taken on (S for the paper and official tests,
        all or S for the calibrated test, depending on its statistic).
      taus: per-dimension correlations on ``dims`` (Kendall's tau for the paper and official
        tests; the calibrated statistic's correlations, see ``corr_kind``; empty for
        'residual_all', whose per-dimension values are not kept).
      corr_kind: 'kendall_tau' (paper, official, calibrated 'tau_S'), 'spearman_rho'
        (calibrated 'spearman_all', 'spearman_S') or 'pearson_r_residual' (calibrated
        'residual_all': Pearson's r after subtracting the common response).
      statistic: the test's summary statistic (mean tau, or the calibrated statistic).
      null: values of the null distribution, for plots (pooled null taus, or the null models'
        statistics); empty when the null is analytic.
      details: test-specific numbers (z-scores, trial counts, null moments, ...).
      note: why a p-value is a convention rather than a test, or other caveats; '' if none.
    """

    test: str
    p_values: dict[str, float]
    alpha: float
    n: int
    d_out: int
    dims: np.ndarray
    taus: np.ndarray
    corr_kind: str
    statistic: float
    null: np.ndarray
    details: dict
    note: str = ""

    @property
    def p(self) -> float:
        return next(iter(self.p_values.values()))

    @property
    def verdicts(self) -> dict[str, bool]:
        return {k: bool(v <= self.alpha) for k, v in self.p_values.items()}

    @property
    def same_lineage(self) -> bool:
        """Decision of the primary p-value."""
        return bool(self.p <= self.alpha)

    @property
    def n_dims(self) -> int:
        return int(len(self.dims))

    def to_json(self, max_null: int = 5000) -> dict:
        null = np.asarray(self.null)
        return {"test": self.test, "p_values": {k: float(v) for k, v in self.p_values.items()},
                "verdicts": self.verdicts, "same_lineage": self.same_lineage,
                "alpha": self.alpha, "n": self.n, "d_out": self.d_out,
                "n_dims": self.n_dims, "dims": [int(d) for d in self.dims],
                "corr_kind": self.corr_kind, "statistic": _num(self.statistic),
                "taus": [_num(t) for t in self.taus],
                "null_count": int(null.size), "null": [_num(v) for v in null[:max_null]],
                "details": {k: _num(v) for k, v in self.details.items()}, "note": self.note}


def _num(v):
    if isinstance(v, (np.floating, float)):
        v = float(v)
        return v if math.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    return v


def check_alpha(alpha) -> float:
    """``alpha`` as a float, or a UserError unless it is a significance level in (0, 1)."""
    if (isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (int, float, np.floating))
            or not 0 < alpha < 1):
        raise UserError(f"alpha = {alpha!r} must be a significance level in (0, 1), e.g. 0.01")
    return float(alpha)


def clip_p(p: float) -> float:
    """A p-value as a float in [0, 1] (NaN means 'no test': 1)."""
    p = float(p)
    return 1.0 if not math.isfinite(p) else min(1.0, max(0.0, p))


def check_int(name: str, value, lo: int, why: str = "", hi: int | None = None) -> None:
    """A UserError unless ``value`` is an integer in [lo, hi] (hi None: no upper bound)."""
    ok = (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
          and lo <= value and (hi is None or value <= hi))
    if not ok:
        rng = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise UserError(f"{name} = {value!r} must be an integer {rng}"
                        + (f" ({why})" if why else ""))
