"""The Monte Carlo comparison used by every tier-1 test.

|simulated - closed| <= Z * SE + allowance, where SE is the standard error over independent
replicates and the allowance is the known O(1/width) finite-width bias of a cosine (stated at the
call). ``max_rel`` also asserts the check has power: the tolerance must be a small fraction of
the closed form, so a formula off by more than that fraction (a few SE) fails.
"""

import numpy as np

Z = 4.0


def assert_mc(closed, mean, se, *, allowance=0.0, max_rel=None, max_abs=None, what=""):
    closed, mean, se = (np.asarray(x, np.float64) for x in (closed, mean, se))
    tol = Z * se + allowance
    assert np.all(np.abs(mean - closed) <= tol), (
        f"{what}: simulated {mean} vs closed form {closed}, tolerance {tol} (Z={Z} SE + {allowance})")
    if max_rel is not None:
        assert np.all(tol <= max_rel * np.abs(closed)), f"{what}: tolerance {tol} too loose"
    if max_abs is not None:
        assert np.all(tol <= max_abs), f"{what}: tolerance {tol} too loose"
