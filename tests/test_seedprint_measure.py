"""Rates over many model pairs (studies/seedprint_measure.py): counts, the disjoint-pair and
jackknife intervals on hand-made rows, and the four tests on one planted pair."""

import math

import numpy as np
import pytest

from bornbiased_jax.studies import seedprint_measure as SM


def rows_of(M, rejected):
    """Rows of all pairs of M models; the pairs in ``rejected`` get p = 0, others p = 1."""
    return [{"a": a, "b": b, "permutation": 0.0 if (a, b) in rejected else 1.0}
            for a, b in SM.all_pairs(M)]


def test_rate_counts_and_disjoint_pairs():
    rows = rows_of(6, {(0, 1), (0, 2), (3, 4)})
    r = SM.rate(rows, "permutation", 0.01)
    assert (r["rejections"], r["pairs"]) == (3, 15) and r["rate"] == pytest.approx(0.2)
    # disjoint pairs: (0, 1), (2, 3), (4, 5); only (0, 1) is rejected
    assert (r["disjoint"]["rejections"], r["disjoint"]["pairs"]) == (1, 3)
    assert r["ci95"][0] < 0.2 < r["ci95"][1]


def test_jackknife_equals_its_definition():
    rows = rows_of(5, {(0, 1), (0, 2), (0, 3), (0, 4)})  # every rejection shares model 0
    r = SM.rate(rows, "permutation", 0.01)
    loo = []
    for m in range(5):
        keep = [row["permutation"] == 0 for row in rows if m not in (row["a"], row["b"])]
        loo.append(np.mean(keep))
    loo = np.array(loo)
    se = math.sqrt(4 / 5 * ((loo - loo.mean()) ** 2).sum())
    assert r["jackknife"]["se"] == pytest.approx(se)
    # rejections concentrated on one model: the jackknife interval is wider than the
    # all-pairs binomial one would be for independent pairs (its sd sqrt(p(1-p)/N))
    assert se > math.sqrt(0.4 * 0.6 / 10)


def test_four_tests_on_a_planted_pair_and_an_unrelated_one():
    rng = np.random.default_rng(0)
    n, d = 300, 16
    A = rng.standard_normal((n, d))
    related = 0.7 * A + 0.3 * rng.standard_normal((n, d))
    bank = SM.NullBank.build([rng.standard_normal((n, d)) for _ in range(99)], n, d)
    p = SM.pair_p_values(A, related, bank, permutations=999)
    assert all(p[t] <= 0.01 for t in SM.TESTS)
    q = SM.pair_p_values(A, rng.standard_normal((n, d)), bank, permutations=999)
    assert all(q[t] > 0.01 for t in SM.TESTS)
