"""SeedPrint's three lineage tests on synthetic feature matrices (no models): planted
correlations are detected, independent data give uniform p-values, hand-computed values match,
bad input raises UserError.

Tolerances: uniformity is checked with a KS (or chi-square) test over R replicates at level
1e-3, i.e. the statistic must lie inside the 99.9 % band for R draws (R stated per test);
everything is seeded, so each test is deterministic.
"""

import math

import numpy as np
import pytest
from scipy import stats

from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint import (calibrated_test, exchangeable_p, official_test,
                                        paper_test)
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods.algorithm1 import null_taus
from bornbiased_jax.fingerprint.runner.compare import Settings
from bornbiased_jax.fingerprint.runner.tables import table_markdown
from bornbiased_jax.stats import kendall_null_sd


def planted(rng, n, d, cols, rho, shift):
    """Two independent N(0,1) (n, d) matrices, correlated with coefficient rho in ``cols``,
    whose means there are shifted by ``shift`` (so those columns are the extreme ones)."""
    A = rng.standard_normal((n, d))
    B = rng.standard_normal((n, d))
    B[:, cols] = rho * A[:, cols] + math.sqrt(1 - rho**2) * B[:, cols]
    A[:, cols] += shift
    B[:, cols] += shift
    return A, B


# --- planted correlation is detected -----------------------------------------------------------
def test_paper_detects_planted_correlation():
    rng = np.random.default_rng(0)
    A, B = planted(rng, 400, 64, np.arange(16), 0.3, 1.0)
    r = paper_test(A, B, m=16, rng=np.random.default_rng(1))
    assert set(r.dims) == set(range(16))
    # tau of a bivariate normal: (2/pi) arcsin(rho) = 0.194 for rho = 0.3; sd of a tau ~ 0.034
    assert abs(r.statistic - 2 / math.pi * math.asin(0.3)) < 4 * 0.034 / math.sqrt(16)
    assert all(r.verdicts.values()) and r.p_values["t_mean"] < 1e-4


def test_official_detects_planted_correlation_in_bottom_dims():
    rng = np.random.default_rng(0)
    A, B = planted(rng, 400, 64, np.arange(16), 0.3, -1.0)  # the most negative means
    r = official_test(A, B, k=16)
    assert set(r.dims) == set(range(16))
    assert r.p < 1e-6 and r.same_lineage
    # The same correlation in the *top* dims is invisible to the bottom-k selection.
    A, B = planted(rng, 400, 64, np.arange(16), 0.3, +1.0)
    assert not set(official_test(A, B, k=16).dims) & set(range(16))


@pytest.mark.parametrize("stat", ["spearman_all", "spearman_S", "tau_S", "residual_all"])
def test_calibrated_detects_planted_correlation(stat):
    rng = np.random.default_rng(0)
    A, B = planted(rng, 300, 32, np.arange(8), 0.3, 1.0)
    nulls = [rng.standard_normal((300, 32)) for _ in range(99)]
    r = calibrated_test(A, B, nulls, statistic_name=stat, m=8)
    assert r.p_values["exact"] == pytest.approx(1 / 100)  # above every null model
    assert r.p_values["gaussian_tail"] < 1e-6 and r.same_lineage


# --- independent data: p-values uniform ---------------------------------------------------------
def test_paper_pooled_p_uniform_on_independent_gaussians():
    """R = 150 replicates of independent N(0,1) data (where the Gaussian null is right): the
    pooled t and U p-values are uniform (KS at level 1e-3); the mean-of-10 p has mean 1/2
    (its replicate sd is < 0.3, so the mean of 150 lies within 4 * 0.3/sqrt(150) = 0.098)."""
    rng = np.random.default_rng(2)
    n, d, m, R = 60, 48, 24, 150
    ps = {"t_pooled": [], "u_pooled": [], "t_mean": [], "u_mean": []}
    for _ in range(R):
        A, B = rng.standard_normal((n, d)), rng.standard_normal((n, d))
        r = paper_test(A, B, m=m, rng=rng)
        for k in ps:
            ps[k].append(r.p_values[k])
    for k in ("t_pooled", "u_pooled"):
        assert stats.kstest(ps[k], "uniform").pvalue > 1e-3, k
    for k in ("t_mean", "u_mean"):
        assert abs(np.mean(ps[k]) - 0.5) < 0.098, k


def test_official_one_sided_p_uniform_on_independent_gaussians():
    """R = 300 replicates: Phi-bar(z) is uniform (KS, level 1e-3); the code's 2 Phi-bar(z) is
    min(1, 2 Phi-bar(z)) and equals 1 in about half the replicates (binomial sd 0.029)."""
    rng = np.random.default_rng(3)
    one, two = [], []
    for _ in range(300):
        A, B = rng.standard_normal((100, 48)), rng.standard_normal((100, 48))
        r = official_test(A, B, k=24)
        one.append(r.p_values["one_sided"])
        two.append(r.p_values["two_phi_bar"])
    one, two = np.asarray(one), np.asarray(two)
    assert stats.kstest(one, "uniform").pvalue > 1e-3
    np.testing.assert_allclose(two, np.minimum(1, 2 * one))
    assert abs(np.mean(two == 1.0) - 0.5) < 4 * 0.029


@pytest.mark.parametrize("stat", ["spearman_all", "residual_all"])
def test_calibrated_exact_p_uniform_under_exchangeability(stat):
    """R = 300 replicates with K = 19 exchangeable null models sharing an input-driven component
    with the suspect: the exact p takes the values j/20 with probability 1/20 each (chi-square
    with 19 df at level 1e-3)."""
    rng = np.random.default_rng(4)
    K, R = 19, 300
    counts = np.zeros(K + 1)
    for _ in range(R):
        x = rng.standard_normal((50, 16))
        models = x + rng.standard_normal((K + 1, 50, 16))
        B = x + rng.standard_normal((50, 16))
        r = calibrated_test(models[0], B, list(models[1:]), statistic_name=stat)
        counts[round(r.p * (K + 1)) - 1] += 1
    assert stats.chisquare(counts).pvalue > 1e-3


def test_shared_input_confound_fools_gaussian_null_not_calibrated():
    """Unrelated 'models' that both respond to the shared input (F = x_shared + own noise) are
    positively correlated. The paper's Gaussian null calls them related; the calibrated null,
    made of other models that see the same inputs, does not (exact p, K = 99)."""
    rng = np.random.default_rng(5)
    n, d = 300, 32
    x = rng.standard_normal((n, d))  # the shared input's contribution
    pool = [x + rng.standard_normal((n, d)) + rng.normal(0, 1, d) for _ in range(101)]
    paper = paper_test(pool[0], pool[1], m=16, rng=rng)
    assert paper.p_values["t_mean"] < 1e-6  # a false positive: these models are unrelated
    for stat in ("spearman_all", "residual_all"):
        calib = calibrated_test(pool[0], pool[1], pool[2:], statistic_name=stat)
        assert calib.p > 0.01 and not calib.same_lineage


# --- hand-computed values -------------------------------------------------------------------------
def test_official_hand_computed():
    """n = 4, d = k = 2. With two columns the softmax's first column is
    sigmoid((x0 - x1)/10), increasing in x0 - x1, and the second is 1 minus it, so both columns'
    tau equal tau(x0 - x1 of A, x0 - x1 of B). Differences (1, 2, 3, 4) and (1, 3, 2, 4): 6 pairs,
    1 discordant, tau = (5 - 1)/6 = 2/3. sigma^2 = 2(2*4 + 5)/(9*4*3) = 26/108,
    z = (2/3) / (sigma / sqrt 2), p = 2 Phi-bar(z) = erfc(z / sqrt 2)."""
    A = np.array([[1.0, 0], [2, 0], [3, 0], [4, 0]])
    B = np.array([[1.0, 0], [3, 0], [2, 0], [4, 0]])
    r = official_test(A, B, k=2)
    np.testing.assert_allclose(r.taus, [2 / 3, 2 / 3])
    sigma = math.sqrt(26 / 108)
    z = (2 / 3) / (sigma / math.sqrt(2))
    assert r.details["z"] == pytest.approx(z)
    assert r.p == pytest.approx(math.erfc(z / math.sqrt(2)))  # 2 Phi-bar(z)
    assert r.p == pytest.approx(0.05467, abs=1e-4)


def test_exchangeable_p_toy():
    """s = 5 against null (1..6): two null values >= 5, so p = (1 + 2)/(6 + 1) = 3/7; the
    Gaussian tail uses the null's mean 3.5 and sd sqrt(3.5)."""
    exact, gauss, z = exchangeable_p(5.0, np.arange(1, 7))
    assert exact == pytest.approx(3 / 7)
    assert z == pytest.approx(1.5 / math.sqrt(3.5))
    assert gauss == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)))
    assert exchangeable_p(10.0, np.arange(1, 7))[0] == pytest.approx(1 / 7)
    assert exchangeable_p(0.0, np.arange(1, 7))[0] == 1.0


def test_paper_null_matches_closed_form():
    """The Gaussian null's |S| has mean m^2/d_out (hypergeometric) and its taus have the
    permutation sd: checked on 40 draws (tolerances from the draw counts)."""
    rng = np.random.default_rng(6)
    n, d, m = 200, 64, 32
    draws = [null_taus(n, d, m, rng) for _ in range(40)]
    sizes = np.array([len(t) for t in draws])
    mean_S, var_S = m * m / d, m * (m / d) * (1 - m / d) * (d - m) / (d - 1)
    assert abs(sizes.mean() - mean_S) < 4 * math.sqrt(var_S / 40)
    taus = np.concatenate(draws)
    sd = kendall_null_sd(n)
    assert abs(taus.mean()) < 4 * sd / math.sqrt(taus.size)
    assert abs(taus.std() / sd - 1) < 4 / math.sqrt(2 * taus.size)


# --- degenerate cases ---------------------------------------------------------------------------
def test_empty_identity_dims_give_p_one_with_a_note():
    rng = np.random.default_rng(7)
    A, B = rng.standard_normal((50, 10)), rng.standard_normal((50, 10))
    A[:, 0] += 5
    B[:, 1] += 5
    r = paper_test(A, B, m=1, rng=rng)
    assert r.n_dims == 0 and set(r.p_values.values()) == {1.0} and "empty" in r.note
    assert not r.same_lineage
    A[:, 9] -= 5
    B[:, 8] -= 5
    o = official_test(A, B, k=1)
    assert o.p == 1.0 and not o.same_lineage and o.note


def test_single_identity_dim_and_empty_null_draws():
    rng = np.random.default_rng(8)
    A, B = planted(rng, 100, 10, np.array([0]), 0.9, 5.0)
    r = paper_test(A, B, m=1, rng=rng)
    assert r.n_dims == 1 and all(0 <= p <= 1 for p in r.p_values.values())
    empty = paper_test(A, B, m=1, null_draws=[np.zeros(0)] * 10)
    assert set(empty.p_values.values()) == {1.0} and "null" in empty.note


# --- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("test", [paper_test, official_test])
def test_errors(test):
    rng = np.random.default_rng(9)
    A = rng.standard_normal((20, 8))
    with pytest.raises(UserError, match="output dimensions differ"):
        test(A, rng.standard_normal((20, 9)))
    with pytest.raises(UserError, match="n >= 3"):
        test(A[:2], A[:2])
    with pytest.raises(UserError, match=r"in \[1, d_out = 8\]"):
        test(A, A, 9)
    with pytest.raises(UserError, match=r"in \[1, d_out = 8\]"):
        test(A, A, 0)


def test_calibrated_errors():
    rng = np.random.default_rng(10)
    A = rng.standard_normal((20, 8))
    with pytest.raises(UserError, match="statistic"):
        calibrated_test(A, A, [A], statistic_name="pearson")
    with pytest.raises(UserError, match="output dimensions differ"):
        calibrated_test(A, A, [rng.standard_normal((20, 9))])
    with pytest.raises(UserError, match="K >= 1"):
        calibrated_test(A, A, [])
    few = calibrated_test(A, A, [A] * 5)
    assert "never reject" in few.note


@pytest.mark.parametrize("field, value, allowed", [
    ("alpha", 0.0, r"in \(0, 1\)"), ("alpha", 1.5, r"in \(0, 1\)"),
    ("alpha", float("nan"), r"in \(0, 1\)"), ("alpha", True, r"in \(0, 1\)"),
    ("n", 2, ">= 3"), ("seq_len", 0, ">= 1"), ("m", 0, ">= 1"), ("k", -3, ">= 1"),
    ("null_models", 0, ">= 1"), ("trials", 0, ">= 1"), ("trials", 2.5, ">= 1"),
    ("probe_seed", -1, r"in \[0, 4294967295\]"), ("probe_seed", 2**32, r"in \[0, 4294967295\]"),
    ("input", "images", "choose one of"), ("output", "attn", "choose one of"),
    ("statistic", "pearson", "choose one of"), ("tests", ("paper", "mine"), "choose among")])
def test_settings_reject_out_of_range_values(field, value, allowed):
    """Each setting out of its range raises a UserError naming the setting and what is allowed."""
    with pytest.raises(UserError, match=allowed):
        Settings(**{field: value})
    Settings(alpha=0.05, m=2, k=3, trials=1, null_models=1, probe_seed=2**32 - 1)  # in range


def test_alpha_outside_zero_one_is_rejected_by_every_test():
    A = np.random.default_rng(13).standard_normal((20, 8))
    for run in (lambda a: paper_test(A, A, alpha=a), lambda a: official_test(A, A, alpha=a),
                lambda a: calibrated_test(A, A, null_stats=[0.0], alpha=a)):
        with pytest.raises(UserError, match=r"alpha = 1 must be a significance level in \(0, 1\)"):
            run(1)


def test_report_states_the_alpha_and_null_draws_actually_used():
    rng = np.random.default_rng(14)
    A, B = planted(rng, 60, 12, [0, 1, 2], 0.5, 3.0)
    results = {"paper": paper_test(A, B, trials=3, alpha=0.05, rng=rng),
               "calibrated": calibrated_test(A, B, null_stats=rng.normal(0, 0.1, 30),
                                             alpha=0.05)}
    md = table_markdown(results)
    assert "verdict (alpha = 0.05)" in md and "0.01" not in md.splitlines()[0]
    assert "p-values of 3 Gaussian null draws" in md and "10 Gaussian" not in md
    assert "calibrated statistic (spearman_all)" in md
    only_calibrated = table_markdown({"calibrated": results["calibrated"]})
    assert "Gaussian null draws" not in only_calibrated  # no paper test, no word on its draws


def test_dense_kendall_equals_scipy_tau_b_with_ties():
    """The many-columns-at-once tau-b (small n) equals scipy's, ties and constants included."""
    rng = np.random.default_rng(11)
    A, B = rng.standard_normal((120, 6)), rng.standard_normal((120, 6))
    A[:, 1], B[:, 1] = np.round(A[:, 1]), np.round(2 * B[:, 1])  # many ties
    A[:, 2] = 3.0  # constant: no tau
    ours = D.kendall_per_dim(A, B, np.arange(6))
    ref = np.array([stats.kendalltau(A[:, j], B[:, j]).statistic for j in range(6)])
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-15)
    assert np.isnan(ours[2]) and np.isnan(ref[2])


def test_kendall_all_pairs_equals_scipy():
    rng = np.random.default_rng(12)
    X = rng.standard_normal((5, 90))
    X[1] = np.round(X[1])
    T = D.kendall_all_pairs(X, pair_block=1000)
    for a in range(5):
        for b in range(5):
            assert T[a, b] == pytest.approx(stats.kendalltau(X[a], X[b]).statistic, abs=1e-6)
