"""The real-model study (experiments/real_model): its verdict rules on hand-made records that
make them pass and fail, its section, and its suspect builder end to end on a tiny GGUF."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gguf_files import write_gguf

from bornbiased_jax.hf import load_hf
from bornbiased_jax.verdicts import (BEYOND, DIFFERS, PARTLY, REPRODUCED, UNDERPOWERED,
                                     UNTESTABLE)
from experiments.real_model import claims, measure

FIXTURES = Path(__file__).parent / "fixtures" / "hf"


def _sink_result(T, rate, se, L=3, H=2, eps=0.25):
    alpha = [[0.9 if (l + h) % 2 else 0.05 for h in range(H)] for l in range(L)]
    alpha[0] = [0.05] * H  # layer 0 has no sink head
    return {"T": T, "n_seqs": 100, "eps": eps, "sink_rate": rate, "sink_rate_se": se,
            "sink_rate_of_mean_alpha": rate, "alpha_floor": 1 / T, "alpha_LH": alpha}


def _sinks(rates):
    return {"records": {"settings": {"corpus": ["python-stdlib"]}, "results": [
        _sink_result(T, r, se) for T, (r, se) in zip((32, 64, 128), rates)]}}


def test_sink_rule_passes_fails_and_splits():
    assert claims.sinks_claims(_sinks([(0.8, 0.01)] * 3))[0].verdict == REPRODUCED
    assert claims.sinks_claims(_sinks([(0.8, 0.01), (0.12, 0.02), (0.5, 0.01)]))[0].verdict \
        == PARTLY  # 0.12 - 1.96 x 0.02 < 0.10
    assert claims.sinks_claims(_sinks([(0.05, 0.01)] * 3))[0].verdict == DIFFERS
    where = claims.sinks_claims(_sinks([(0.8, 0.01)] * 3))[1]
    assert "in 2 of 3 layers (none in layers 0)" in where.ours


def test_token_preference_rule():
    rec = {"records": {"records": [
        {"seq_len": 64, "top1_id": 198, "top1_freq": 0.1, "num_seqs": 2000, "log10_p": -50.0},
        {"seq_len": 256, "top1_id": 7, "top1_freq": 0.002, "num_seqs": 2000, "log10_p": 0.0}],
        "token_text": {"198": "\n"}}}
    a, b = claims.token_preference_claims(rec)
    assert a.verdict == b.verdict == BEYOND
    assert a.why.startswith("a preference") and b.why.startswith("no preference detected")
    assert "'\\n'" in a.ours


def test_token_preference_quotes_the_paper_table(monkeypatch):
    """The paper's initialisation frequencies are read from the one table of Table 1's values
    (paper_values.PAPER_TABLE1), not retyped: nano 2.60-6.75 % (Table 1(a)), the 1.2B model
    3.95-10.20 % (Table 1(c)), and a changed table changes the row."""
    from experiments.common import paper_values

    rec = {"records": {"records": [
        {"seq_len": 64, "top1_id": 198, "top1_freq": 0.1, "num_seqs": 2000, "log10_p": -50.0}]}}
    row = claims.token_preference_claims(rec)[0]
    assert "nano 2.60-6.75 %, 1.2B 3.95-10.20 % at N = 2,000" in row.paper
    assert "LLaMA-2 nano 0.06-0.09 % at N = 10,000" in row.paper
    assert "5.20 %," not in row.paper  # the old, truncated quote
    assert paper_values.paper_table1_range("c") == (0.0395, 0.102)
    monkeypatch.setitem(paper_values.PAPER_TABLE1, ("c", 43, 1024), (20694, 0.12, "0.00"))
    assert "1.2B 3.95-12.00 %" in claims.token_preference_claims(rec)[0].paper
    with pytest.raises(KeyError):
        paper_values.paper_table1_range("d")


def _pairs(p_of: dict, test="permutation"):
    return [{"suspect": n, "p": {test: p}, "related": {test: p < 0.01}, "verdict_test": test}
            for n, p in p_of.items()]


def _lineage(p_of, negatives=None, suspects=None):
    rec = {"records": {"suspects": suspects or {}, "tests": {"auto": {
        "command": "bornbiased fingerprint M S", "wall_seconds": 120.0,
        "settings": {"n": 1000, "seq_len": 32, "input": "tokens"}, "pairs": _pairs(p_of)}}}}
    if negatives is not None:
        rec["records"]["negatives"] = negatives
    return rec


SCRATCH_WHAT = {"scratch": {"what": "a fresh init of the base's shape trained 30 steps on the "
                                    "same text (lr 0.001): same shape and data, no weight "
                                    "lineage"}}


def _trained(k, same_data=True, steps=500):
    return [{"name": f"neg{i}", "kind": "trained", "trained_steps": steps,
             "same_data": same_data} for i in range(k)]


def test_lineage_rule_passes_fails_and_splits():
    """Table 6 on a real model: every honest edit found and no negative flagged reproduces it
    only when the trained negatives bound the false-positive rate below 0.3 (11 of them,
    none flagged; 10 bound it below 0.31) and one shares the descendants' data. The first
    record's negatives (two untrained inits and one model trained 30 steps, derived from its
    suspects' descriptions) bound it below 0.71 over all, 0.97 over the trained one:
    consistent, underpowered, where the former rule said reproduced."""
    honest = {n: 1e-4 for n in claims.HONEST}
    unrelated = {n: 0.4 for n in claims.UNRELATED}
    renamed = {n: 0.5 for n in claims.RENAMED}
    rows = claims.lineage_claims(_lineage({**honest, **unrelated, **renamed},
                                          suspects=SCRATCH_WHAT))
    assert rows[0].verdict == UNTESTABLE and "no 7B weights" in rows[0].why
    assert rows[1].verdict == UNDERPOWERED and "renamed or rotated copies found 0 of 4" in rows[1].ours
    assert ("3 negatives: 1 trained from scratch (scratch: 30 steps, tokens not recorded, the "
            "descendants' data), 2 untrained initialisations; flagged 0 of 3, the false-positive "
            "rate below 0.71 over all and below 0.97 over the trained ones") in rows[1].why
    assert "not below 0.3 (11 trained negatives, none flagged, would bound it there)" in rows[1].why
    assert claims.negatives_needed() == 11
    eleven = {f"neg{i}": 0.4 for i in range(11)}
    ok = claims.lineage_claims(_lineage({**honest, **eleven}, _trained(11)))[1]
    assert ok.verdict == REPRODUCED and "below 0.28 over the trained ones" in ok.why
    ten = claims.lineage_claims(_lineage({**honest, **eleven}, _trained(10)))[1]
    assert ten.verdict == UNDERPOWERED and "below 0.31 over the trained ones" in ten.why
    other = claims.lineage_claims(_lineage({**honest, **eleven}, _trained(11, False)))[1]
    assert other.verdict == UNDERPOWERED
    assert "no trained negative shares the descendants' data" in other.why
    inits = [{"name": f"neg{i}", "kind": "init", "trained_steps": 0, "same_data": False}
             for i in range(11)]
    weak = claims.lineage_claims(_lineage({**honest, **eleven}, inits))[1]
    assert weak.verdict == UNDERPOWERED and "0 trained from scratch (none)" in weak.why
    flagged = claims.lineage_claims(_lineage({**honest, **eleven, "neg3": 1e-3},
                                             _trained(11)))[1]
    assert flagged.verdict == PARTLY and "unrelated called related 1 of 11" in flagged.ours
    flagged = claims.lineage_claims(_lineage({**honest, **unrelated, "scratch": 1e-3},
                                             suspects=SCRATCH_WHAT))[1]
    assert flagged.verdict == PARTLY and "unrelated called related 1 of 3" in flagged.ours
    missed = claims.lineage_claims(_lineage({**honest, "int8": 0.3, **unrelated}))[1]
    assert missed.verdict == PARTLY and "missed: int8" in missed.ours
    none = claims.lineage_claims(_lineage({**{n: 0.5 for n in claims.HONEST}, **unrelated}))[1]
    assert none.verdict == DIFFERS
    table = claims.pairs_table(_lineage({**honest, **unrelated}))
    assert "| int8 | honest edit | 0.0001 * |" in table
    assert "| neg0 | unrelated |" in claims.pairs_table(_lineage({**honest, **eleven},
                                                                  _trained(11)))
    both = _lineage({**honest, **unrelated})  # one run measuring two tests: a row for each
    for p in both["records"]["tests"]["auto"]["pairs"]:
        p["p"]["matched"] = 1e-9
    rows = claims.lineage_claims(both)
    assert [r.claim.split("by the ")[1].split(" ")[0] for r in rows[1:]] == ["permutation",
                                                                             "matched"]


def test_negatives_are_read_from_the_record_or_derived_from_it():
    """A record's ``negatives`` list (what the study writes now: measure.negatives, from the
    model record's unrelated sources, trained negatives and cousins) decides
    the negatives' kinds; without it they are derived from the suspects' names and
    descriptions, as the first SmolLM2 record needs."""
    rec = _lineage({"scratch": 0.4, "preset:smollm2-135m@1": 0.3}, suspects=SCRATCH_WHAT)
    assert claims.negatives(rec["records"]) == [
        {"name": "scratch", "kind": "trained", "trained_steps": 30, "same_data": True,
         "layers": None, "tokens": None},
        {"name": "preset:smollm2-135m@1", "kind": "init", "trained_steps": 0,
         "same_data": False, "layers": None, "tokens": 0}]
    assert claims.negatives(_lineage({"mystery": 0.4})["records"])[0]["kind"] == "unknown"
    smollm2 = claims.SMOLLM2
    written = measure.negatives(smollm2, with_cousins=False)
    assert [n["name"] for n in written] == [*smollm2.unrelated, *smollm2.trained_negatives]

    def finished(f, tc):
        return f == Path("runs/smollm2/cousins")  # the first program trained, the others not
    monkey = pytest.MonkeyPatch()
    monkey.setattr("bornbiased_jax.training.run_folder.is_run", lambda f: True)
    monkey.setattr("bornbiased_jax.training.run_folder.finished", finished)
    try:
        cousins = measure.negatives(smollm2)[len(written):]
    finally:
        monkey.undo()
    assert [n["name"] for n in cousins] == [f"cousins#{k}" for k in range(4)]
    assert all(n["kind"] == "trained" and n["same_data"] and n["trained_steps"] == 300
               and n["tokens"] == 300 * 16 * 64 for n in cousins)
    assert written[-1] == {"name": "scratch", "kind": "trained", "trained_steps": 30,
                           "same_data": True, "tokens": 30 * 8 * 64,
                           "what": measure.describe(smollm2, "scratch",
                                                    smollm2.trained_negatives["scratch"])}
    rec = _lineage({n["name"]: 0.4 for n in written}, negatives=written)
    assert [{k: v for k, v in n.items() if k != "layers"}
            for n in claims.negatives(rec["records"])] == [
        {**n, "tokens": n.get("tokens", 0)} for n in written]
    import json

    committed = json.loads((Path(__file__).resolve().parents[1] / "results/records/real_model/"
                            "smollm2_lineage.json").read_text())["records"]
    assert [(n["name"], n["kind"], n["trained_steps"], n["same_data"])
            for n in claims.negatives(committed)] == [
        ("preset:smollm2-135m@1", "init", 0, False), ("preset:smollm2-135m@2", "init", 0, False),
        ("scratch", "trained", 30, True)] + [
        (f"{program}#{k}", "trained", 300, True)  # the three cousins' programs, 4 seeds each
        for program, seeds in (("cousins", range(4)), ("cousins-b", range(4, 8)),
                               ("cousins-c", range(8, 12))) for k in seeds]
    # their depth as the matched test measured it, their tokens from their description: the
    # cousins 4 layers and 300 x 16 x 64 tokens; the inits and the scratch model the base's 30
    # layers, the scratch model 30 x 8 x 64 tokens (the record states them)
    assert {(n["kind"], n["trained_steps"], n["layers"], n["tokens"])
            for n in claims.negatives(committed)} == {
        ("init", 0, 30, 0), ("trained", 30, 30, 15_360), ("trained", 300, 4, 307_200)}


def _cousins(k, layers=4, steps=300, batch=16, seq=64):
    """k trained negatives described as the study describes its cousins (depth, steps, batch
    and sequence length in the description only)."""
    return [{"name": f"cousins#{i}", "kind": "trained", "trained_steps": steps,
             "same_data": True,
             "what": f"a {layers}-layer cousin of the base, seed {i}, trained from scratch "
                     f"{steps} steps of {batch} x {seq} tokens on Vim's help"}
            for i in range(k)]


def _study_record(negs, p_neg=0.4, n_read=None, layers=None):
    """A lineage record of the study's shape: the honest edits found, ``negs`` at ``p_neg``,
    the command's n = 32, each pair's n of the permutation test ``n_read`` (None: 32) and each
    negative's depth ``layers`` {name: L} as the matched test records it."""
    honest = {n: 1e-4 for n in claims.HONEST}
    rec = _lineage({**honest, **{n["name"]: p_neg for n in negs}}, negatives=negs)
    run = rec["records"]["tests"]["auto"]
    run["settings"]["n"] = 32
    for p in run["pairs"]:
        p["n"] = {"permutation": n_read or 32}
        if p["suspect"] in (layers or {}):
            p["layers"] = layers[p["suspect"]]
    return rec


INITS = [{"name": f"preset:smollm2-135m@{i}", "kind": "init", "trained_steps": 0,
          "same_data": False, "what": "a fresh initialisation of the base's shape"}
         for i in (1, 2)]


def test_lineage_rows_state_the_negatives_depth_and_tokens_and_what_the_bound_covers():
    """Each row states every kind of negative's depth and training tokens, read from the
    record (the pairs' measured depth, the description's steps x batch x T), and the 95 %
    upper bounds of the false-positive rate its count gives. The rule weighs the number and
    kind of the negatives, not their depth or training: 13 briefly trained ones (12 of them 4
    layers deep) and two inits, none flagged, reproduce (the rule's own threshold: 11 trained,
    0.3), and that
    row says its bound is for unrelated models like them, not for ones trained as long as the
    base; too few, or one flagged, do not reproduce, and say nothing of such a bound."""
    scratch = {"name": "scratch", "kind": "trained", "trained_steps": 30, "same_data": True,
               "tokens": 15_360, "what": "a fresh init of the base's shape trained 30 steps"}
    negs = INITS + [scratch] + _cousins(12)
    depth = {n["name"]: 30 for n in INITS + [scratch]} | {f"cousins#{i}": 4 for i in range(12)}
    row = claims.lineage_claims(_study_record(negs, layers=depth))[1]
    assert row.verdict == REPRODUCED
    assert ("15 negatives: 13 trained from scratch (scratch: 30 layers, 30 steps, 15,360 tokens, "
            "the descendants' data; cousins#0 .. cousins#11 (12): 4 layers, 300 steps, 307,200 "
            "tokens each, the descendants' data), 2 untrained initialisations (30 layers, 0 "
            "tokens); flagged 0 of 15, the false-positive rate below 0.22 over all and below "
            "0.25 over the trained ones (95 % Clopper-Pearson)") in row.why
    assert row.why.startswith("every honest edit found, no negative flagged, and 13 trained "
                              "negatives (13 on the descendants' data) bound the "
                              "false-positive rate below 0.3: ")
    assert ("not their depth or training length, so the bound is for unrelated models like "
            "these negatives (4 or 30 layers, trained at most 307,200 tokens), not for "
            f"unrelated models trained longer, as the base was ({claims.BASE_TRAINING})"
            ) in row.why
    # other depths and training in the record: other text (nothing hard-coded)
    other = claims.lineage_claims(_study_record(
        INITS + _cousins(12, layers=8, steps=600, batch=32, seq=128)))[1]
    assert other.verdict == REPRODUCED
    assert "(12): 8 layers, 600 steps, 2,457,600 tokens each" in other.why
    assert "(8 layers, trained at most 2,457,600 tokens)" in other.why  # no pair's depth: the
    # description's; the inits' depth is then not recorded and not stated
    assert "2 untrained initialisations;" in other.why
    # a trained negative whose tokens the record lacks is said so, and the bound's reach too
    bare = dict(scratch, what="trained 30 steps")
    del bare["tokens"]
    row = claims.lineage_claims(_study_record(INITS + [bare] + _cousins(12), layers=depth))[1]
    assert "scratch: 30 layers, 30 steps, tokens not recorded, the descendants' data" in row.why
    assert "trained at most 307,200 tokens where recorded" in row.why
    # ten trained negatives cannot bound the rate below 0.3: underpowered, no bound's reach
    few = claims.lineage_claims(_study_record(INITS + _cousins(10), layers=depth))[1]
    assert few.verdict == UNDERPOWERED
    assert "cousins#0 .. cousins#9 (10): 4 layers, 300 steps, 307,200 tokens each" in few.why
    assert "below 0.26 over all and below 0.31 over the trained ones" in few.why
    assert "the bound is for" not in few.why
    flagged = claims.lineage_claims(_study_record(negs, p_neg=1e-3, layers=depth))[1]
    assert flagged.verdict == PARTLY and "4 layers, 300 steps, 307,200 tokens each" in flagged.why
    assert "the bound is for" not in flagged.why


def test_lineage_verdict_says_why_and_its_reach_without_a_base():
    from experiments.common.pretrained import lineage_verdict

    neg = [{"name": f"m{i}", "kind": "trained", "trained_steps": 5, "same_data": True,
            "layers": 2, "tokens": 640} for i in range(11)]
    verdict, why = lineage_verdict(3, 3, neg, [])
    assert verdict == REPRODUCED
    assert "m0 .. m10 (11): 2 layers, 5 steps, 640 tokens each" in why
    assert why.endswith("(2 layers, trained at most 640 tokens), not for unrelated models "
                        "trained longer")
    assert lineage_verdict(3, 3, neg[:10], [])[0] == UNDERPOWERED
    assert lineage_verdict(2, 3, neg, [])[0] == PARTLY
    assert lineage_verdict(0, 3, neg, [])[0] == DIFFERS


def test_the_rows_state_the_n_the_p_values_were_read_from():
    """Where every pair's permutation leg stopped at the matched leg's 8 sequences, the
    permutation and any-pair rows say n = 8 for every pair, not the command's 32; where some
    did, the command's n leads and the stopped ones are counted; where none did, n = 32."""
    from experiments.common.pretrained import inputs_text

    negs = INITS + _cousins(12)
    rec = _study_record(negs, n_read=8)
    run = rec["records"]["tests"]["auto"]
    for p in run["pairs"]:
        p["p"]["matched"] = 1.0 if p["suspect"] in [n["name"] for n in negs] else 0.0
    pairs = len(run["pairs"])
    text = inputs_text(run, "permutation")
    assert text == (f"n = 8 for every one of the {pairs} pairs, not the command's 32: the "
                    f"permutation leg stopped at the matched leg's sequences (for the "
                    f"{len(claims.HONEST)} whose matched leg decided the any-pair verdict alone "
                    f"and {len(negs)} whose matched leg found nothing (p = 1))")
    rows = claims.lineage_claims(rec)
    perm = next(r for r in rows if "by the permutation" in r.claim)
    assert text in perm.why and "n = 32" not in perm.why
    matched = next(r for r in rows if "by the matched" in r.claim)
    assert "n = 32, T = 32" in matched.why  # the matched leg read the command's n
    # some pairs stopped: the command's n leads
    run["pairs"][0]["n"]["permutation"] = 32
    assert inputs_text(run, "permutation").startswith(f"n = 32 (8 for the ")
    assert inputs_text(run, "permutation").endswith(f"of {pairs} pairs, where the permutation "
                                                    f"leg stopped)")
    for p in run["pairs"]:
        p["n"]["permutation"] = 32
    assert inputs_text(run, "permutation") == "n = 32"


def test_section_says_what_is_missing():
    text = claims.section({"smollm2_sinks": {"records": {
        **_sinks([(0.8, 0.01)] * 3)["records"], "command": "bornbiased sinks M.gguf",
        "wall_seconds": 100.0}}}, claims.COMMAND)
    assert "Not measured yet: smollm2_lineage" in text and "`bornbiased sinks M.gguf` (100 s)" \
        in text


@pytest.mark.slow
def test_suspects_are_built_as_hf_folders_and_resumed(tmp_path, monkeypatch):
    import dataclasses

    model = write_gguf(tmp_path / "tiny.gguf", FIXTURES / "llama_gqa", "Q8_0")
    rng = np.random.default_rng(0)
    monkeypatch.setattr(measure, "tune_blocks", lambda rec, tok: rng.integers(0, 128, (16, 9)))
    rec = dataclasses.replace(claims.SMOLLM2, tune={**claims.SMOLLM2.tune, "steps": 2,
                                                    "batch": 4})
    monkeypatch.setattr(measure, "tokenizer", lambda m: None)
    folder = tmp_path / "suspects"
    manifest = measure.build_suspects(rec, model, folder, log=lambda *_: None)
    assert set(manifest) == set(rec.descendants) | set(rec.trained_negatives)
    assert {m["key_rule"] for m in manifest.values()} == {"fold_in_name"}
    cfg_rot, _ = load_hf(folder / "rotated")
    cfg_int8, _ = load_hf(folder / "int8")
    assert not cfg_rot.tie_embeddings and cfg_int8.n_layers == 2
    stamp = (folder / "int8" / "model.safetensors").stat().st_mtime_ns
    again = measure.build_suspects(rec, model, folder, log=lambda *_: None)  # nothing rebuilt
    assert again == manifest
    assert (folder / "int8" / "model.safetensors").stat().st_mtime_ns == stamp
    assert json.loads((folder / "suspects.json").read_text()) == manifest
