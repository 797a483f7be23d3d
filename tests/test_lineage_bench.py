"""The lineage benchmark (experiments/lineage_bench/): its metrics against their definitions,
its verdict rules passing and failing on hand-made pair rows, the trained edits doing what they
claim on a tiny model, and the built suspects saved and loaded bitwise."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bornbiased_jax import model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.fingerprint.edits import downstream as E
from bornbiased_jax.keys import seed_key
from bornbiased_jax.verdicts import BEYOND
from experiments.lineage_bench import EDITS, KNOWLEDGE_ONLY
from experiments.lineage_bench import claims as CL
from experiments.lineage_bench import metrics as MT
from experiments.lineage_bench import suspects as S
from experiments.common.tune import tune


def test_auc_is_the_mann_whitney_statistic():
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1, 1, 30).round(1), rng.normal(0, 1, 40).round(1)  # with ties
    u = stats.mannwhitneyu(pos, neg, alternative="greater").statistic
    assert MT.auc(pos, neg) == pytest.approx(u / (30 * 40))
    assert MT.auc([2, 2], [1, 1]) == 1 and MT.auc([1], [1]) == 0.5
    assert math.isnan(MT.auc([], [1]))


def test_threshold_at_fpr_allows_at_most_that_share_above():
    neg = np.arange(200.0)
    t = MT.threshold_at_fpr(neg, 0.01)
    assert (neg > t).sum() == 2 and (neg > t - 1).sum() == 3
    assert MT.threshold_at_fpr([5.0], 0.01) == 5.0


def rows_of(p_related, p_unrelated, bases=4, baseline=0.5):
    """Every (base, suspect) pair of ``bases`` seeds and every edit; p-values by relatedness."""
    out = []
    for b, k, e in itertools.product(range(bases), range(bases), EDITS):
        p = p_related(e) if b == k else p_unrelated(b, k, e)
        out.append({"base": b, "seed": k, "edit": e, "related": b == k,
                    **{t: p for t in MT.TESTS},
                    **{t: (0.9 if b == k else baseline) for t in MT.BASELINES}})
    return out


def test_summary_counts_and_rules_pass():
    rows = rows_of(lambda e: 1e-4, lambda b, k, e: 0.5)
    s = MT.summarise(rows)
    w = s["permutation"]["weight lineage"]
    n_weight = len(EDITS) - len(KNOWLEDGE_ONLY)
    assert (w["tp"], w["positives"]) == (4 * n_weight, 4 * n_weight)
    assert w["fpr"]["rejections"] == 0 and w["fpr"]["pairs"] == 12 * n_weight
    assert w["auc"] == 1 and w["tpr_at_1pct"] == 1
    assert s["pcs"]["int8"]["tpr"] == 1  # similarity 0.9 >= 0.8
    cl = CL.claims(s)
    assert all(c.verdict == BEYOND for c in cl)
    assert cl[-1].ours.startswith("permutation (exact), aligned, trained base")
    assert "holds its level (FPR at most alpha); finds every positive" in cl[0].why


def test_valid_and_robust_footnotes_the_in_sample_level():
    """The matched test with a trained base (and the any-pair verdict through its matched leg)
    holds its level on the benchmark's own seeds, on which its slack was fitted: the last row
    names it with an in-sample footnote, the other tests without one; a test that fails a rule
    is not named at all, footnote or not."""
    rows = rows_of(lambda e: 1e-4, lambda b, k, e: 0.5)
    last = CL.claims(MT.summarise(rows))[-1]
    lab = CL.LABELS
    assert lab["matched"] + " [in-sample]" in last.ours
    assert lab[MT.DEFAULT_UNKNOWN_INIT] + " [in-sample]" in last.ours
    assert last.ours.startswith(lab["permutation"] + ", ")  # exact: no footnote
    assert last.ours.count("[in-sample]") == 2
    assert "[in-sample]: its level here rests on a slack fitted" in last.why
    table = CL.summary_table({"run": {"settings": {"bases": 4}},
                              "records": {"summary": MT.summarise(rows), "pairs": rows}})
    assert f"| {lab['matched']} |" in table
    assert "yes (in-sample level: slack fitted on these seeds) |" in table
    for r in rows:  # the matched test misses every renamed copy: it leaves the row
        if r["related"] and r["edit"].startswith("renamed"):
            r["matched"] = 0.5
    last = CL.claims(MT.summarise(rows))[-1]
    assert lab["matched"] not in last.ours and last.ours.count("[in-sample]") == 1
    for r in rows:
        if r["related"] and r["edit"].startswith("renamed"):
            r[MT.DEFAULT_UNKNOWN_INIT] = 0.5
    last = CL.claims(MT.summarise(rows))[-1]
    assert "[in-sample]" not in last.ours and "in-sample" not in last.why


def test_a_record_made_under_the_law_of_training_length_is_held_out_and_says_its_slack():
    """Pairs whose matched leg applied the command's default, the law of training length
    (fitted on other seeds: the long level cells), carry their slack: the matched rows are no
    longer in-sample, and their note names the slack and says the rate is held out."""
    rows = rows_of(lambda e: 1e-4, lambda b, k, e: 0.5)
    for r in rows:
        r["matched_slack"] = 58
    assert CL.in_sample(rows) == () and CL.law_slacks(rows) == [58]
    claims = CL.claims(MT.summarise(rows), rows)
    last = claims[-1]
    assert "[in-sample]" not in last.ours and "in-sample" not in last.why
    matched = next(c for c in claims if c.claim.endswith(CL.LABELS["matched"]))
    assert "the law of training length" in matched.why and "(58 units per layer pair here)" \
        in matched.why and "so this rate is held out" in matched.why
    # beside the default, the law at the benchmark models' own tokens (the seed family's 250
    # steps of 16 x 64 tokens; their continued descendants 800 steps more)
    from bornbiased_jax.fingerprint.methods.trained_slack import law_units

    assert CL.own_tokens() == (256_000, 256_000 + 800 * 16 * 64)
    own = sorted({law_units(t, CL._bench_width()) for t in CL.own_tokens()})
    assert (f"trained 256,000 tokens (the bases) to 1,075,200 (their continued descendants), "
            f"where the law gives {' to '.join(map(str, own))} units per layer pair") in matched.why
    table = CL.summary_table({"run": {"settings": {"bases": 4}},
                              "records": {"summary": MT.summarise(rows), "pairs": rows}})
    assert "in-sample" not in table


def test_rules_fail_on_misses_and_on_false_positives():
    # misses: the renamed copies are not found; false positives: every pair of seeds of
    # different parity is called related (8 of 12 ordered pairs, spread over all seeds)
    rows = rows_of(lambda e: 0.5 if e.startswith("renamed") else 1e-4,
                   lambda b, k, e: 1e-4 if (b + k) % 2 else 0.5, baseline=0.9)
    s = MT.summarise(rows)
    assert CL.robust(s, "aligned") == ["renamed", "renamed-ft"]
    fpr = s["aligned"]["weight lineage"]["fpr"]
    assert fpr["rate"] == pytest.approx(8 / 12)
    assert not CL.level_ok(s, "aligned")
    # rejections concentrated on one pair of 4 seeds: the jackknife cannot place the rate
    # above alpha, so the rule does not fail the test on them
    few = MT.summarise(rows_of(lambda e: 1e-4, lambda b, k, e: 1e-4 if {b, k} == {0, 1}
                               else 0.5))
    assert few["aligned"]["weight lineage"]["fpr"]["rate"] == pytest.approx(2 / 12)
    assert CL.level(few, "aligned") == "undecided" and not CL.level_ok(few, "aligned")
    assert "its level is not shown" in CL.claims(few)[1].why
    assert CL.level(s, "aligned") == "above"
    c = CL.claims(s)
    assert c[-1].ours == "no test" and c[-1].why.startswith("no test")
    assert "above its level" in c[0].why and "misses positives of: renamed, renamed-ft" in c[0].why
    # the distilled students decide neither rule
    rows = rows_of(lambda e: 0.5 if e == "distilled" else 1e-4, lambda b, k, e: 0.5)
    assert CL.robust(MT.summarise(rows), "aligned") == []


def test_rows_say_what_the_paper_test_and_intrinsic_are_here():
    """The 'paper' row runs Algorithm 1's test on token inputs, and says so; the Intrinsic row
    says when its score is degenerate: every score a multiple of 1/4 (each of its four
    correlations -1, 0 or +1, as with std profiles of 2 blocks), and not otherwise."""
    rows = rows_of(lambda e: 1e-4, lambda b, k, e: 0.5)  # Intrinsic 0.9 / 0.5: continuous
    by = {c.claim: c for c in CL.claims(MT.summarise(rows), rows)}
    paper = by["Lineage benchmark: paper (Algorithm 1's test, token inputs)"]
    assert "not on the algorithm's isotropic Gaussian embeddings" in paper.why
    assert CL.intrinsic_degenerate(rows) is None
    assert "degenerate" not in by["Lineage benchmark: Intrinsic >= 0.8"].why
    for r in rows:  # two-point correlations: every score -1, -0.5, 0, 0.5 or 1
        r["intrinsic"] = 1.0 if (r["base"] + r["seed"]) % 3 else 0.5
    c = {c.claim: c for c in CL.claims(MT.summarise(rows), rows)}[
        "Lineage benchmark: Intrinsic >= 0.8"]
    assert "degenerate on these bases: each of its four correlations rests on 2 points" in c.why
    n_weight = len(EDITS) - len(KNOWLEDGE_ONLY)
    half, n_pos, n_neg = 2 * n_weight, 4 * n_weight, 12 * n_weight  # seeds 0, 3: 0.5
    assert (f"(positives 1: {half}/{n_pos}, 0.5: {half}/{n_pos}; negatives 1: "
            f"{8 * n_weight}/{n_neg}, 0.5: {4 * n_weight}/{n_neg})") in c.why
    assert CL.claims(MT.summarise(rows))[-2].why.count("degenerate") == 0  # no pairs given
    record = {"run": {"settings": {"bases": 4}}, "records": {"summary": MT.summarise(rows),
                                                             "pairs": rows}}
    table = CL.summary_table(record)
    assert "degenerate (2 blocks: each correlation rests on 2 points)" in table
    assert "| paper (Algorithm 1's test, token inputs) |" in table


def test_scores_equal_but_for_rounding_tie():
    """Two scores that differ only by floating-point rounding are a tie, not an ordering: a
    positive's correlation of 0.9999999999999999 beside a negative's 1.0 (and 0.5 beside
    0.49999999999999994) counts a half, so a score proportional between positives and
    negatives has AUC exactly 0.5; a genuine difference still orders."""
    pos = [MT.score({"intrinsic": v}, "intrinsic") for v in (0.9999999999999999, 0.5)]
    neg = [MT.score({"intrinsic": v}, "intrinsic") for v in (1.0, 0.49999999999999994)]
    assert MT.auc(pos, neg) == 0.5
    assert MT.auc([0.9999999999999999], [1.0]) == 0.0  # unrounded: an ordering
    assert MT.auc(pos[:1], neg[:1]) == 0.5  # rounded: a tie
    assert MT.auc([1.0, 0.5], [0.9999, 0.4999]) == 0.75
    # distinct statistics 1e-10 apart (REEF's values reach that) stay distinct
    assert MT.score({"reef": 0.8784966792}, "reef") > MT.score({"reef": 0.8784966785}, "reef")
    # p-values: -log10 scores equal up to rounding tie too
    assert MT.score({"aligned": 1e-4}, "aligned") == MT.score({"aligned": 1e-4 * (1 + 1e-15)},
                                                            "aligned")


def test_markdown_and_roc_figure_from_rows():
    rows = rows_of(lambda e: 1e-4, lambda b, k, e: 0.5)
    md = CL.markdown(MT.summarise(rows))
    assert "| int8 | 4/4 (1.00)" in md and "| weight lineage |" in md
    fig = CL.roc_figure(rows)
    assert len(fig.axes[0].lines) == len(MT.TESTS) + len(MT.BASELINES) + 1  # + the 1 % line


# ------------------------------------------------------------------------------------ the edits
CFG = get_preset("llama2-tiny")


@pytest.fixture(scope="module")
def base():
    return jax.tree.map(np.asarray, jax.jit(model.init, static_argnums=0)(CFG, seed_key(3)))


@pytest.fixture(scope="module")
def blocks():
    rng = np.random.default_rng(0)
    return (np.cumsum(rng.integers(1, 3, (64, 17)), axis=1) % 32).astype(np.int32)


def _loss(p, blocks):
    p = jax.tree.map(jnp.asarray, p)
    lg = jax.vmap(lambda x: model.forward(p, CFG, x).logits)(blocks[:, :-1])
    return float(-np.take_along_axis(np.asarray(jax.nn.log_softmax(lg)),
                                     blocks[:, 1:, None], -1).mean())


def test_full_fine_tune_learns(base, blocks):
    ft = tune(base, CFG, blocks, steps=30, lr=3e-3, batch=8)
    assert _loss(ft, blocks) < _loss(base, blocks) - 0.5


def test_lora_changes_only_adapted_kernels_by_rank_r(base, blocks):
    merged = tune(base, CFG, blocks, mode="lora", steps=5, lr=1e-2, batch=8, rank=2)
    flat_b = dict(jax.tree_util.tree_leaves_with_path(base))
    for path, leaf in jax.tree_util.tree_leaves_with_path(merged):
        delta = np.asarray(leaf, np.float64) - np.asarray(flat_b[path], np.float64)
        role = E.parameter_role([getattr(k, "key", str(k)) for k in path])
        if np.abs(delta).max() == 0:
            continue
        assert role == "kernel", jax.tree_util.keystr(path)
        assert np.linalg.matrix_rank(delta, tol=1e-6 * np.abs(delta).max()) <= 2


def test_distillation_moves_the_student_toward_the_teacher(base, blocks):
    student = jax.tree.map(np.asarray, jax.jit(model.init, static_argnums=0)(CFG, seed_key(4)))
    teacher = jax.tree.map(jnp.asarray, base)

    def kl(p):
        p = jax.tree.map(jnp.asarray, p)
        lt = jax.nn.log_softmax(jax.vmap(lambda x: model.forward(teacher, CFG, x).logits)(
            blocks[:, :-1]))
        ls = jax.nn.log_softmax(jax.vmap(lambda x: model.forward(p, CFG, x).logits)(
            blocks[:, :-1]))
        return float((np.exp(lt) * (lt - ls)).sum(-1).mean())
    out = tune(student, CFG, blocks, mode="distill", teacher=base, steps=30, lr=3e-3, batch=8)
    assert kl(out) < 0.5 * kl(student)


def test_pure_edits_and_the_saved_suspect_round_trip(base, blocks, tmp_path):
    kw = dict(continued=base, ft=base, blocks=blocks, seed=0, init_of=None)
    for edit, fn in (("int8", E.quantize_int8), ("prune-2:4", E.prune_2_4),
                     ("int4-g32", lambda p: E.quantize_int4(p, 32))):
        got = S.build(edit, base, CFG, **kw)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(fn(base))):
            np.testing.assert_array_equal(a, b)
    renamed = S.build("renamed", base, CFG, **kw)
    S.save(tmp_path / "r.npz", renamed)
    back = S.load(tmp_path / "r.npz", base)
    assert jax.tree.structure(back) == jax.tree.structure(base)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(renamed)):
        np.testing.assert_array_equal(a, np.asarray(b))
    with pytest.raises(ValueError, match="unknown edit"):
        S.build("nope", base, CFG, **kw)


def test_results_section_from_a_record():
    from experiments.lineage_bench import study

    rows = rows_of(lambda e: 1e-4, lambda b, k, e: 0.5)
    settings = {"bases": 4, "n": 100, "seq_len": 8, "null_models": 9}
    record = {"run": {"settings": settings, "device": "cpu", "wall_seconds": 1.0},
              "records": {"summary": MT.summarise(rows), "pairs": rows}}
    text = study.section({"lineage_bench": record})
    assert text.startswith(f"## {study.TITLE}")
    assert "| Lineage benchmark: valid and robust | - | permutation (exact)" in text
    assert "| int8 | 4/4 (1.00)" in text


def test_a_base_cache_of_other_settings_is_measured_again(tmp_path):
    """The shapes benchmark reuses a base's cached pairs only when they were measured with the
    command's settings and the matched test's screen as they are now: a cache from another
    MATCHED_SEQS, screen or statistic (or an older cache without an identity) is not read."""
    import copy
    import json

    from experiments.lineage_bench.shapes import cached_pairs, identity

    ident, f = identity(), tmp_path / "pairs-s0.json"
    assert cached_pairs(f, ident) is None  # no file
    pairs = [{"base": 0, "edit": "pad-mlp", "p": {"matched": 1e-9}}]
    f.write_text(json.dumps({"identity": ident, "pairs": pairs}))
    assert cached_pairs(f, ident) == pairs
    other = copy.deepcopy(ident)
    other["settings"]["matched_seqs"] += 8
    assert cached_pairs(f, other) is None
    other = copy.deepcopy(ident)
    other["screen"]["units"] *= 2
    assert cached_pairs(f, other) is None
    f.write_text(json.dumps(pairs))  # a cache written before caches kept their identity
    assert cached_pairs(f, ident) is None


def test_the_any_pair_row_counts_what_its_stop_for_nothing_did():
    """The any-pair row says how many negatives and positives the stop for a matched leg that
    found nothing shortened, and how many positives it cost: a positive whose full
    permutation leg is at most alpha / 2 while its first sequences' is not."""
    from experiments.lineage_bench.claims import stops_note

    def row(related, matched, first, full):
        return {"related": related, "matched": matched, "permutation_first": first,
                "permutation": full}
    pairs = [row(False, 1.0, 0.3, 0.4), row(False, 1.0, 0.004, 0.001), row(False, 0.5, 0.3, 0.3),
             row(True, 0.0, 0.3, 0.001), row(True, 1.0, 0.2, 0.001), row(True, 1.0, 0.2, 0.5)]
    note = stops_note(pairs)
    assert "for 1 of 3 negatives and 2 of 3 positives" in note
    assert note.endswith("found by the permutation leg on all n): 1")
    assert stops_note([{k: v for k, v in r.items() if k != "permutation_first"}
                       for r in pairs]) is None


def test_the_committed_benchmarks_find_every_descendant_at_the_laws_slack():
    """Both benchmarks' committed records were measured at the command's default between two
    trained models, the law of training length at the assumed tokens (each pair carries the
    slack it applied, the one the law gives today for the family's 176-unit layers): the
    any-pair verdict finds every weight-lineage descendant and every shape-changed one (the
    distilled students, which share no weights, apart) and calls no unrelated base's suspect
    related."""
    import json
    from pathlib import Path

    from bornbiased_jax.defaults import MATCHED_TOKENS_ASSUMED
    from bornbiased_jax.fingerprint.methods.trained_slack import law_units

    root = Path(__file__).resolve().parents[1] / "results/records/lineage_bench"
    law = law_units(MATCHED_TOKENS_ASSUMED, 176)
    main = json.loads((root / "lineage_bench.json").read_text())["records"]["pairs"]
    assert {p["matched_slack"] for p in main} == {law}
    pos = [p for p in main if p["related"] and p["edit"] != "distilled"]
    assert len(pos) == 128 and all(p["any_pair"] <= 0.01 for p in pos)
    assert not any(p["any_pair"] <= 0.01 for p in main if not p["related"])
    shapes = json.loads((root / "lineage_bench_shapes.json").read_text())["records"]["pairs"]
    assert {p["matched_slack"] for p in shapes} == {law}
    assert all(p["p"]["any_pair"] <= 0.01 for p in shapes if p["positive"])
    assert not any(p["p"]["any_pair"] <= 0.01 for p in shapes if not p["positive"])
