"""The Gemma 3 study (experiments/real_model/gemma3_claims.py): its verdict rules on hand-made records, each rule
shown both ways, and its RESULTS.md section."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.verdicts import UNDERPOWERED, BEYOND, DIFFERS, MEASURED, PARTLY, REPRODUCED
from experiments.real_model import gemma3_claims as C

L, H = 18, 4


def _sink(T, rate, se, alpha):
    return {"T": T, "n_seqs": 30, "eps": 0.25, "sink_rate": rate, "sink_rate_se": se,
            "alpha_LH": alpha.tolist(), "alpha_floor": 1 / T}


def sinks_record(no_bos_rate=0.0):
    strong = np.full((L, H), 0.05)
    strong[5, :] = 0.8   # a global layer: all four heads
    strong[2, 1] = 0.6   # one sliding head
    weak = np.full((L, H), 0.03)
    settings = {"corpus": ["python-stdlib"]}
    return {"records": {
        "bos": {"settings": settings, "results": [_sink(T, 0.86, 0.01, strong)
                                                  for T in (32, 512)]},
        "no_bos": {"settings": settings, "results": [_sink(T, no_bos_rate, 0.01, weak)
                                                     for T in (32, 512)]}}}


def test_sink_rules():
    rows = C.sinks_claims(sinks_record())
    assert rows[0].verdict == REPRODUCED and "holds at 2 of 2" in rows[0].why
    assert rows[1].verdict == BEYOND and "it does at 2 of 2 lengths" in rows[1].why
    assert rows[2].verdict == MEASURED
    assert "sink heads (mean alpha^1 > 0.25) in global layers 4 of 12, in sliding layers 1 " \
           "of 60" in rows[2].ours
    same = C.sinks_claims(sinks_record(no_bos_rate=0.86))
    assert "it does at 0 of 2 lengths" in same[1].why  # the <bos> rule can fail
    rec = sinks_record()
    rec["records"]["bos"]["results"][1]["sink_rate"] = 0.05
    assert C.sinks_claims(rec)[0].verdict == PARTLY


def _seed(seed, freq, log10_p, cos_end):
    curve = np.linspace(0.05, cos_end, L + 1)
    loo = curve + np.random.default_rng(seed).normal(0, 1e-3, (4, L + 1))
    return {"seed": seed, "top1_id": 7, "top1_count": int(freq * 100), "top1_freq": freq,
            "log10_p": log10_p, "distinct_tokens": 40, "block_mean_cos": curve.tolist(),
            "block_mean_cos_loo": loo.tolist()}


def init_record(no_qk=(0.10, -30.0, 0.9)):
    full = [_seed(s, 0.30 + 0.01 * s, -60.0, 0.95) for s in range(3)]
    qk = [_seed(s, no_qk[0] + 0.01 * s, no_qk[1], no_qk[2] + 0.001 * s) for s in range(3)]
    post = [_seed(s, 0.30 + 0.01 * s, 2.0, 0.95) for s in range(3)]
    return {"records": {"settings": {"seeds": [0, 1, 2], "num_seqs": 100, "seq_len": 64},
                        "arms": {"gemma3-270m": {"per_seed": full, "seconds": 1.0},
                                 "no-qk-norm": {"per_seed": qk, "seconds": 1.0},
                                 "no-post-norms": {"per_seed": post, "seconds": 1.0}}}}


def test_born_biased_rules_per_arm_and_the_arms_differences():
    rows = C.init_claims(init_record())
    biased = {r.claim.split("fresh ")[1].split(" prefers")[0]: r for r in rows
              if r.claim.startswith("Born biased")}
    assert biased["gemma3-270m"].verdict == REPRODUCED
    # no preference, but at N = 100 none of Table 1(b)'s size could be seen
    post_row = biased["gemma3-270m without post-norms"]
    assert post_row.verdict == UNDERPOWERED and "no preference of that size" in post_row.why
    fig2 = [r for r in rows if r.claim.startswith("Figure 2")]
    assert len(fig2) == 3 and all(r.verdict == REPRODUCED for r in fig2)  # rising curves
    diff = {r.claim: r for r in rows if r.claim.startswith("What ")}
    qk = next(r for c, r in diff.items() if "without QK-norm" in c)
    assert "it changes the top-1 frequency" in qk.why and "-0.200" in qk.ours
    post = next(r for c, r in diff.items() if "without post-norms" in c)
    assert "no change detected" in post.why
    same = C.init_claims(init_record(no_qk=(0.30, -60.0, 0.95)))
    assert "no change detected" in next(r for r in same if "without QK-norm" in r.claim
                                        and r.claim.startswith("What ")).why


def paper_n_record(counts=(3, 4, 3), n_qk=10_000, distinct=9_615):
    """The campaign's record at N = 10,000: full arm and a QK-norm arm, which may lag."""
    from bornbiased_jax.stats import bonferroni_log10_p

    def arm(n, counts):
        ks = [max(1, round(k * n / 10_000)) for k in counts]  # the same sizes at this N
        per = [{**_seed(s, k / n, bonferroni_log10_p(k, n, C.GEMMA3_VOCAB), 0.05),
                "top1_count": k, "distinct_tokens": round(distinct * n / 10_000)}
               for s, k in enumerate(ks)]
        return {"changes": {}, "num_seqs": n, "blocks": n // 1250, "per_seed": per,
                "blocks_seconds": 100.0}

    settings = {"preset": "gemma3-270m", "vocab_size": C.GEMMA3_VOCAB, "seeds": [0, 1, 2],
                "seq_len": 64, "num_seqs": min(n_qk, 10_000), "block": 1250}
    if n_qk < 10_000:
        settings["target_num_seqs"] = 10_000
    return {"run": {"command": "python -m experiments.paper_scale gemma3-init-n10k --so-far",
                    "settings": settings, "device": "cpu:0"},
            "records": {"gemma3-270m": arm(10_000, counts), "no-qk-norm": arm(n_qk, counts),
                        "no-post-norms": {"changes": {}, "num_seqs": 0, "blocks": 0,
                                          "per_seed": []}}}


def test_born_biased_at_table_1b_n_can_differ_reproduce_and_see_a_spread_preference():
    """At N = 10,000 over 262,144 tokens a preference of Table 1(b)'s weakest size (6 of
    10,000) reaches the critical count 4 with probability 0.85: top-1 counts of uniform size
    (3-4) differ, counts of the paper's size reproduce; fewer distinct arg-max tokens than
    uniform draws' show a spread preference; an arm still running is compared on the cosine
    only."""
    rows = C.init_claims(paper_n_record(), paper_n=True)
    born = [r for r in rows if r.claim.startswith("Born biased")]
    assert len(born) == 2 and all("[paper N: 3 seeds, N = 10,000" in r.claim for r in born)
    assert born[0].verdict == DIFFERS and "with probability 0.85 per row" in born[0].why
    spread = [r for r in rows if r.claim.startswith("A spread preference")]
    assert spread[0].ours == "collisions beyond uniform at 3 of 3 seeds"
    uniform = C.init_claims(paper_n_record(distinct=9_812), paper_n=True)
    assert next(r for r in uniform if r.claim.startswith("A spread")).ours.startswith(
        "collisions beyond uniform at 0 of 3")
    strong = C.init_claims(paper_n_record(counts=(8, 6, 9)), paper_n=True)
    assert next(r for r in strong if r.claim.startswith("Born biased")).verdict == REPRODUCED
    lagging = C.init_claims(paper_n_record(n_qk=5_000), paper_n=True)
    diff = next(r for r in lagging if r.claim.startswith("What "))
    assert "[N = 5,000 and 10,000, paper N]" in diff.claim
    assert "top-1" not in diff.ours and "compared once the arms share it" in diff.why
    qk = next(r for r in lagging if r.claim.startswith("Born biased") and "QK" in r.claim)
    assert qk.verdict == UNDERPOWERED  # power 0.58 at N = 5,000
    same = C.init_claims(paper_n_record(), paper_n=True)
    assert "distinct arg-max fraction" in next(r for r in same if r.claim.startswith("What ")).ours
    # the section places the rows after the CPU ones and says which arms are still to run
    text = C.section({"gemma3_init": init_record(),
                      "paper": {C.PAPER_N_RECORD: paper_n_record(n_qk=5_000)}}, C.COMMAND)
    assert text.index("[paper N: 3 seeds") > text.index("[3 seeds, N = 100")
    assert "no-qk-norm: N = 5,000 of 10,000" in text and C.PAPER_N_COMMAND in text
    assert "Table 1(b)'s N = 10,000: not measured yet" in C.section(
        {"gemma3_init": init_record()}, C.COMMAND)


def test_seeds_that_coincide_are_named_with_their_mechanism():
    """An arm whose seeds share arg-max token, count and distinct tokens is said to coincide
    (with the post-norms' mechanism for that arm); seeds that differ in any of the three are
    not."""
    per = [{"seed": s, "top1_id": 7, "top1_count": 3, "distinct_tokens": 9_808} for s in range(3)]
    note = C.coincide_note(per, "no-post-norms")
    assert "3 seeds coincide" in note and "last input token" in note
    assert "coincide" in C.coincide_note(per, "gemma3-270m")
    assert "last input token" not in C.coincide_note(per, "gemma3-270m")
    assert C.coincide_note([*per[:2], {**per[2], "distinct_tokens": 9_807}], "no-post-norms") == ""
    assert C.coincide_note([*per[:2], {**per[2], "top1_id": 8}], "no-post-norms") == ""
    assert C.coincide_note(per[:1], "no-post-norms") == ""


def test_without_post_norms_a_fresh_gemma3_predicts_its_last_input_token():
    """The mechanism the no-post-norms row cites: with its post-norms off, a fresh Gemma 3 (the
    test-size preset, its embedding scaled by sqrt(d_model) and tied to the head) predicts its
    last input token on every sequence, for every seed; with them on, on none."""
    import dataclasses

    import jax
    import jax.numpy as jnp

    from bornbiased_jax import model
    from bornbiased_jax.keys import seed_key
    from bornbiased_jax.presets import get_preset

    base = get_preset("gemma3-tiny")
    xs = jax.random.randint(jax.random.key(3), (32, 24), 0, base.vocab_size)
    for post_norms, expected in ((False, 1.0), (True, 0.0)):
        cfg = dataclasses.replace(base, post_norms=post_norms)
        for seed in (0, 1):
            p = model.init(cfg, seed_key(seed))
            top = jax.vmap(lambda t: model.forward(p, cfg, t).logits[-1].argmax())(xs)
            assert float(jnp.mean(top == xs[:, -1])) == expected, (post_norms, seed)


def test_the_vocabulary_constant_is_the_presets():
    from bornbiased_jax.presets import get_preset

    assert C.GEMMA3_VOCAB == get_preset("gemma3-270m").vocab_size


def lineage_record(p_unrelated=0.5):
    def pair(name, p):
        return {"suspect": name, "p": {"any_pair": p, "permutation": p}, "related": p < 0.01,
                "verdict_test": "any_pair"}
    pairs = [pair(n, 1e-9) for n in C.HONEST + C.RENAMED[:1]] + [pair(C.RENAMED[1], 0.3)] + [
        pair(n, p_unrelated) for n in C.UNRELATED]
    return {"records": {"suspects": {"rotated": {"what": "rotated", "refused": "because"},
                                     "lora": {"what": "a LoRA"}},
                        "tests": {"auto": {"command": "bornbiased fingerprint ...",
                                           "wall_seconds": 10.0, "pairs": pairs,
                                           "settings": {"n": 100, "seq_len": 32,
                                                        "input": "tokens"}}}}}


def test_lineage_rules():
    """SmolLM2's rule (common.pretrained.lineage_verdict): every honest edit found and no
    negative flagged is 'reproduced' only when the negatives bound the false-positive rate;
    two untrained initialisations cannot, so the rows say 'consistent, underpowered'."""
    rows = C.lineage_claims(lineage_record())
    assert [r.verdict for r in rows[:2]] == [UNDERPOWERED, UNDERPOWERED]
    assert "2 untrained initialisations" in rows[0].why and "not below 0.3" in rows[0].why
    assert "renamed copies found 1 of 2" in rows[0].ours
    assert rows[-1].verdict == MEASURED and rows[-1].why == "because"
    flagged = C.lineage_claims(lineage_record(p_unrelated=1e-4))
    assert flagged[0].verdict == PARTLY


def test_the_section_lists_every_record_and_says_what_is_missing():
    records = {"gemma3_sinks": sinks_record(), "gemma3_init": init_record()}
    records["gemma3_sinks"]["records"]["bos"].update(command="bornbiased sinks g.gguf",
                                                     wall_seconds=12.0)
    text = C.section(records, C.COMMAND)
    assert text.startswith(f"## {C.TITLE}")
    assert "`bornbiased sinks g.gguf` (12 s)" in text
    assert "Not measured yet: gemma3_lineage" in text
    assert C.section({}, C.COMMAND) is None


def test_pairs_table_marks_a_leg_that_stopped_early():
    """A p read from fewer inputs than the command's n (the permutation leg stopped at the
    matched leg's sequences: that leg decided, or found nothing) carries its n and a footnote; a record without per-test n is shown as
    before."""
    rec = lineage_record()
    plain = C.pairs_table(rec)
    assert "(n = " not in plain
    pairs = rec["records"]["tests"]["auto"]["pairs"]
    pairs[0]["n"] = {"any_pair": 16, "permutation": 16}
    pairs[-1]["n"] = {"any_pair": 100, "permutation": 100}
    table = C.pairs_table(rec)
    first = next(line for line in table.splitlines() if line.startswith(f"| {C.HONEST[0]} "))
    assert first.count("(n = 16)") == 2
    last = next(line for line in table.splitlines() if line.startswith(f"| {C.UNRELATED[-1]} "))
    assert "(n = " not in last
    assert table.splitlines()[-1].startswith("(n = 16): the test read only")
    from experiments.common.pretrained import inputs_text

    run = rec["records"]["tests"]["auto"]
    assert inputs_text(run, "permutation") == (
        f"n = 100 (16 for the 1 whose matched leg decided the any-pair verdict alone, of "
        f"{len(pairs)} pairs, where the permutation leg stopped)")
    # a leg stopped because the matched leg found nothing is counted apart
    pairs[-1]["n"] = {"any_pair": 16, "permutation": 16}
    pairs[-1]["p"]["matched"] = 1.0
    assert inputs_text(run, "permutation") == (
        f"n = 100 (16 for the 1 whose matched leg decided the any-pair verdict alone and 1 whose "
        f"matched leg found nothing (p = 1), of {len(pairs)} pairs, where the permutation leg "
        f"stopped)")
    assert inputs_text(run, "matched") == "n = 100"  # no matched_seqs in the settings
    run["settings"]["matched_seqs"] = 8
    assert inputs_text(run, "matched") == ("n = 8 (the matched leg reads the first 8 of the "
                                           "command's 100)")
