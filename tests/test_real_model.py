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
    assert ("3 negatives: 1 trained from scratch (scratch: 30 steps, the descendants' data), 2 "
            "untrained initialisations; flagged 0 of 3, the false-positive rate below 0.71 over "
            "all and below 0.97 over the trained ones") in rows[1].why
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
    """A record's ``negatives`` list (what the study writes now: measure.negatives) decides
    the negatives' kinds; without it they are derived from the suspects' names and
    descriptions, as the first SmolLM2 record needs."""
    rec = _lineage({"scratch": 0.4, "preset:smollm2-135m@1": 0.3}, suspects=SCRATCH_WHAT)
    assert claims.negatives(rec["records"]) == [
        {"name": "scratch", "kind": "trained", "trained_steps": 30, "same_data": True},
        {"name": "preset:smollm2-135m@1", "kind": "init", "trained_steps": 0,
         "same_data": False}]
    assert claims.negatives(_lineage({"mystery": 0.4})["records"])[0]["kind"] == "unknown"
    written = measure.negatives(with_cousins=False)
    assert [n["name"] for n in written] == [*measure.UNRELATED_PRESETS, *measure.SCRATCH]
    from experiments.real_model import cousins as C

    def finished(f, tc):
        return f == C.FOLDER  # the first program trained, the second not
    monkey = pytest.MonkeyPatch()
    monkey.setattr("bornbiased_jax.training.run_folder.is_run", lambda f: True)
    monkey.setattr("bornbiased_jax.training.run_folder.finished", finished)
    try:
        cousins = measure.negatives()[len(written):]
    finally:
        monkey.undo()
    assert [n["name"] for n in cousins] == [f"cousins#{k}" for k in range(4)]
    assert all(n["kind"] == "trained" and n["same_data"] and n["trained_steps"] == 300
               for n in cousins)
    assert written[-1] == {"name": "scratch", "kind": "trained",
                           "trained_steps": measure.FULL_STEPS, "same_data": True,
                           "what": measure.SCRATCH["scratch"]}
    rec = _lineage({n["name"]: 0.4 for n in written}, negatives=written)
    assert claims.negatives(rec["records"]) == written
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


def test_section_says_what_is_missing():
    text = claims.section({"smollm2_sinks": {"records": {
        **_sinks([(0.8, 0.01)] * 3)["records"], "command": "bornbiased sinks M.gguf",
        "wall_seconds": 100.0}}}, claims.COMMAND)
    assert "Not measured yet: smollm2_lineage" in text and "`bornbiased sinks M.gguf` (100 s)" \
        in text


@pytest.mark.slow
def test_suspects_are_built_as_hf_folders_and_resumed(tmp_path, monkeypatch):
    model = write_gguf(tmp_path / "tiny.gguf", FIXTURES / "llama_gqa", "Q8_0")
    rng = np.random.default_rng(0)
    monkeypatch.setattr(measure, "_tune_blocks", lambda tok: rng.integers(0, 128, (16, 9)))
    monkeypatch.setitem(measure.TUNE, "steps", 2)
    monkeypatch.setattr(measure, "FULL_STEPS", 2)
    monkeypatch.setitem(measure.TUNE, "batch", 4)
    from bornbiased_jax.hf import gguf as gguf_module

    monkeypatch.setattr(gguf_module, "load_gguf_tokenizer", lambda m: None)
    folder = tmp_path / "suspects"
    manifest = measure.build_suspects(model, folder, log=lambda *_: None)
    assert set(manifest) == set(measure.DESCENDANTS) | set(measure.SCRATCH)
    cfg_rot, _ = load_hf(folder / "rotated")
    cfg_int8, _ = load_hf(folder / "int8")
    assert not cfg_rot.tie_embeddings and cfg_int8.n_layers == 2
    stamp = (folder / "int8" / "model.safetensors").stat().st_mtime_ns
    again = measure.build_suspects(model, folder, log=lambda *_: None)  # nothing rebuilt
    assert again == manifest
    assert (folder / "int8" / "model.safetensors").stat().st_mtime_ns == stamp
    assert json.loads((folder / "suspects.json").read_text()) == manifest
