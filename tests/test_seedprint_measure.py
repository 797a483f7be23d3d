"""Rates over many model pairs (bornbiased_jax/fingerprint/runner/rejection.py): counts,
the disjoint-pair and jackknife intervals on hand-made rows, and the four tests on one planted pair."""

import math

import numpy as np
import pytest

from bornbiased_jax.fingerprint.runner import rejection as SM


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


def test_rows_repeating_a_pair_are_counted_per_pair():
    """Rows that repeat one pair of models (edits or checkpoints of the same two) add the
    interval with the pair as the trial, at the rate observed: wider than the one over all rows,
    and not blind, as the jackknife is, to a rate of no rejections; rows of distinct pairs add
    nothing."""
    from bornbiased_jax.stats import clopper_pearson

    once = rows_of(6, {(0, 1)})
    assert "per_pair" not in SM.rate(once, "permutation", 0.01)
    repeated = [dict(r) for r in once for _ in range(10)]  # every pair 10 times: 150 rows
    r = SM.rate(repeated, "permutation", 0.01)
    assert (r["rejections"], r["pairs"], r["per_pair"]["pairs"]) == (10, 150, 15)
    assert r["per_pair"]["ci95"] == pytest.approx(list(clopper_pearson(1, 15)))
    assert r["per_pair"]["ci95"][1] > r["ci95"][1]
    # one of a pair's 10 rows rejected: an effective count of 1/10 of a pair
    some = [dict(row, permutation=0.0 if (row["a"], row["b"], i) == (0, 1, 0) else 1.0)
            for row in once for i in range(10)]
    r = SM.rate(some, "permutation", 0.01)
    assert r["per_pair"]["ci95"] == pytest.approx(list(clopper_pearson(0.1, 15)))
    none = SM.rate([dict(row, permutation=1.0) for row in repeated], "permutation", 0.01)
    assert none["jackknife"]["ci95"] == [0.0, 0.0]
    assert none["per_pair"]["ci95"][1] == pytest.approx(clopper_pearson(0, 15)[1])


def test_four_tests_on_a_planted_pair_and_an_unrelated_one():
    rng = np.random.default_rng(0)
    n, d = 300, 16
    A = rng.standard_normal((n, d))
    related = 0.7 * A + 0.3 * rng.standard_normal((n, d))
    bank = SM.NullBank.build([rng.standard_normal((n, d)) for _ in range(99)], n, d)
    p = SM.pair_p_values(A, related, bank, permutations=999)
    four = ("paper", "official", "calibrated", "permutation")
    assert all(p[t] <= 0.01 for t in four)
    q = SM.pair_p_values(A, rng.standard_normal((n, d)), bank, permutations=999)
    assert all(q[t] > 0.01 for t in four)
    # the related pair with its columns renamed (moved, some negated): only 'aligned'
    # still finds it, at the smallest p of K = 99 null models, with the same statistic
    renamed = related[:, np.roll(np.arange(d), 5)] * rng.choice([-1.0, 1.0], d)  # no fixed point
    r = SM.pair_p_values(A, renamed, bank, permutations=999)
    assert p["aligned"] == r["aligned"] == pytest.approx(1 / 100)
    assert r["permutation"] > 0.01 and r["calibrated"] > 0.01
    assert q["aligned"] > 0.01


def test_pool_statistics_on_a_planted_pair():
    """experiments/seedprint/pools.py on a synthetic pool of 12 'models' (n = 200 inputs, d = 16):
    the spearman_all matrix is the mean per-dimension Spearman rho, the leave-two-out exact p
    of the one related pair is the smallest attainable, and the disjoint null does not force a
    rejection count."""
    from scipy import stats

    from experiments.seedprint import pools as SP

    rng = np.random.default_rng(0)
    F = rng.standard_normal((12, 200, 16))
    F[1] = F[0] + 0.3 * rng.standard_normal((200, 16))  # model 1 descends from model 0
    S = SP.spearman_all_matrix(F)
    want = np.mean([stats.spearmanr(F[0][:, j], F[3][:, j])[0] for j in range(16)])
    assert S[0, 3] == pytest.approx(want, abs=1e-5) and S[3, 0] == pytest.approx(want, abs=1e-5)
    assert np.allclose(SP.spearman_all_matrix(F, 4), S[:, :4], atol=1e-6)
    for stat in ("spearman_all", "residual_all"):
        pe, pg = SP.calibrated_all_pairs(F, stat)
        assert pe[0, 1] == pytest.approx(1 / 11) and pe[1, 0] == pytest.approx(1 / 11)
        assert pg[0, 1] < 1e-6 and np.isnan(pe[2, 2])
        others = pe[2:, 2:][~np.eye(10, dtype=bool)]
        assert 0.2 < others.mean() < 0.8  # unrelated pairs: p spread over (0, 1]
    de, dg = SP.calibrated_disjoint(F, 4, "spearman_all")  # pairs of models 0-3, null 4-11
    assert len(de) == 6 and de[0] == pytest.approx(1 / 9)  # (0, 1) beats all 8 null models
    r = SP.false_positive_rate(de[1:], alpha=0.2)
    assert r["pairs"] == 5 and r["ci95"][0] <= r["fpr"] <= r["ci95"][1]
    assert SP.pairs_of(12, None, rng) == SM.all_pairs(12)
    sub = SP.pairs_of(12, 10, np.random.default_rng(1))
    assert len(sub) == 10 and sub == sorted(sub) and set(sub) <= set(SM.all_pairs(12))



def test_seedprint_pools_draw_each_seeds_own_embedding_unless_told():
    """Unrelated models in a SeedPrint pool are whole independent initialisations: each seed
    draws its own embedding (a shared draw would feed every model the same token vectors, a
    dependence the lineage tests detect). Only the Gaussian-input calibration pools share it
    (Gaussian inputs and normed outputs never touch the embedding)."""
    import jax

    from bornbiased_jax import keys, model
    from experiments.seedprint import calibration as CAL
    from experiments.seedprint.pools import cpu_model, nano_model

    for scaled in (True, False):
        for cfg in (cpu_model(scaled), nano_model(scaled)):
            assert not cfg.shared_embedding
            a, b = (np.asarray(jax.random.key_data(model.embed_key(cfg, keys.seed_key(s))))
                    for s in (42, 2000))
            assert not np.array_equal(a, b)
        assert nano_model(scaled, shared_embedding=True).shared_embedding
    s = {**CAL.CPU, "inputs": ["gaussian", "tokens"]}
    shared = [p for p in CAL.pools(s) if p.cfg.shared_embedding]
    assert shared and all(p.kind == "gaussian" for p in shared)
