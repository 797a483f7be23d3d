"""The lineage benchmark's shape-changed descendants: their RESULTS.md rules
(experiments/lineage_bench/shapes_claims.py) passing and failing on hand-made pair rows, the
negatives' interval counting the base pairs, not the edits of one pair, as its trials."""

import pytest

from bornbiased_jax.stats import clopper_pearson
from bornbiased_jax.verdicts import BEYOND, MEASURED
from experiments.lineage_bench import shapes as SH
from experiments.lineage_bench import shapes_claims as SC
from experiments.lineage_bench.claims import NOTES


def pairs_of(bases: int, p_negative=lambda b, k, e: 0.5, p_positive=lambda b, e: 1e-6):
    """Every (base, suspect of seed k, shape edit) row as the record holds it: positives
    (k = base) at ``p_positive``, negatives at ``p_negative``, the same p for every test."""
    rows = []
    for b in range(bases):
        for k in range(bases):
            for e in SH.EDITS:
                p = p_positive(b, e) if b == k else p_negative(b, k, e)
                rows.append({"base": b, "suspect_of": k, "edit": e, "positive": b == k,
                             "p": {t: p for t in ("permutation", "matched", "matched_init",
                                                  "any_pair")},
                             "localised": {"matched": 1.0, "matched_init": 1.0}})
    return rows


def claims_of(pairs):
    return SC.claims(SH.summarise({"pairs": pairs}), pairs)


def test_dependent_negatives_count_their_base_pairs_not_their_edits():
    """13 edits of each of 56 ordered base pairs, none rejected: as if the 728 were
    independent, the interval (0 %-0.5 %) would bound the rate below 5 % and the level would
    hold; with the base pair as the trial (0 of 56: up to 6.4 %) it does not, so the row is
    underpowered."""
    pairs = pairs_of(8)
    rate = SC.negatives_rate(pairs, "any_pair")
    assert (rate["rejections"], rate["pairs"]) == (0, 56 * 13)
    assert rate["per_pair"]["pairs"] == 56
    naive, per_pair = rate["ci95"], rate["per_pair"]["ci95"]
    assert per_pair == pytest.approx(list(clopper_pearson(0, 56)))
    assert per_pair[1] > naive[1] and per_pair[1] == pytest.approx(0.0638, abs=1e-4)
    assert rate["jackknife"]["ci95"] == [0.0, 0.0]  # no rejections: the jackknife is blind
    assert SC.level_outcome(*naive) == "holds"  # what the naive interval would have said
    lo, hi = SC.interval(rate)
    assert (lo, hi) == (0.0, per_pair[1]) and SC.level_outcome(lo, hi) == "underpowered"
    rows = claims_of(pairs)
    neg = [c for c in rows if c.claim.startswith("Shape-changed descendants of other")]
    assert len(neg) == 2 and {c.verdict for c in neg} == {BEYOND}
    assert all(c.why.startswith("underpowered: not above alpha, but not bounded below 5%")
               for c in neg)
    assert "0/728 rejected at alpha = 0.01: 13 edits of 56 ordered base pairs (95 % CI " \
           "0.0%-6.4% with the base pair as the trial" in neg[0].ours
    assert "0.0%-0.5% were the 728 independent" in neg[0].ours


def test_the_level_holds_with_enough_base_pairs_and_fails_above_alpha():
    # 16 bases: 240 ordered base pairs, none rejected, bound the rate below 5 % (1.5 %)
    many = claims_of(pairs_of(16))
    assert many[1].why.startswith("holds its level: at most 5% at 95 %")
    # one rejection, one edit of one base pair: still bounded; the interval is the wider of
    # the per-pair and the jackknife one at each end
    one = pairs_of(16, lambda b, k, e: 1e-4 if (b, k, e) == (0, 1, SH.EDITS[0]) else 0.5)
    rate = SC.negatives_rate(one, "any_pair")
    lo, hi = SC.interval(rate)
    assert lo == min(rate["per_pair"]["ci95"][0], rate["jackknife"]["ci95"][0])
    assert hi == max(rate["per_pair"]["ci95"][1], rate["jackknife"]["ci95"][1])
    assert SC.level_outcome(lo, hi) == "holds"
    # every negative of half the base pairs rejected (the seeds of odd sum): above alpha
    above = claims_of(pairs_of(8, lambda b, k, e: 1e-4 if (b + k) % 2 else 0.5))
    assert above[1].why.startswith("above its level: the rate is above alpha")
    assert above[3].verdict == BEYOND and above[3].why.startswith("above its level")


def test_found_rows_and_the_in_sample_mark():
    """The found rows say whether every positive of every edit is found (naming misses); the
    any-pair verdict's level row, whose matched leg's default slack was fitted on seeds that
    include these bases, is marked in-sample as the main benchmark marks its rows; the matched
    test against BASE's initialisation (slack 0) is not."""
    rows = claims_of(pairs_of(8))
    assert [c.verdict for c in rows] == [BEYOND] * 4 + [MEASURED]
    assert rows[0].why == "finds every positive of every edit"
    assert rows[0].ours.startswith("104/104 over 13 edits of 8 bases: ")
    assert rows[1].claim.endswith("(BASE's initialisation unknown) [in-sample]")
    assert rows[1].why.endswith("; [in-sample]: " + NOTES["any_pair"])
    assert "in-sample" not in rows[3].claim + rows[3].why
    missed = claims_of(pairs_of(8, p_positive=lambda b, e: 0.5 if (b, e) == (3, "drop-layer")
                                else 1e-6))
    assert missed[0].why == "misses drop-layer (1)" and missed[0].verdict == BEYOND
