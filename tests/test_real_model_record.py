"""The real-model study is one driver over model records: the shipped records (SmolLM2, Gemma 3)
say what their committed records were made with, and a third model is a third record and no
new code -- here a tiny random GGUF written by the test, its record a JSON file, run end to end
through ``python -m experiments real_model RECORD --model FILE`` at tiny sizes (the
``bornbiased`` commands run in this process, as the driver types them)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from pathlib import Path

import pytest
from gguf_files import write_gguf

from experiments.real_model import command, measure, record

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "hf"


def test_the_shipped_records_are_the_committed_records_models():
    """Each shipped record names the file its committed records were measured on (name and
    sha256), the fetch script that gets it (the script's own sha256), and the records its
    study reads; descendants by kind as the rows count them."""
    for name, study in (("smollm2", "real_model"), ("gemma3", "gemma3")):
        rec = record.load(name)
        assert rec.study == study
        script = (ROOT / rec.fetch.split()[-1]).read_text()
        assert f"sha={rec.sha256}" in script and f"name={rec.file}" in script
        for exp in rec.experiments:
            saved = json.loads((ROOT / "results/records" / study / f"{exp}.json").read_text())
            model = saved["records"].get("model")
            assert model is None or (model["file"], model["sha256"]) == (rec.file, rec.sha256)
    smollm2, gemma3 = record.load("smollm2"), record.load("gemma3")
    assert smollm2.honest == ("lora", "full-ft", "int8", "int4-g32", "prune-50")
    assert gemma3.honest == ("lora", "int8", "int4-g32", "prune-50")
    assert gemma3.refused == ("rotated", "quarot-int4") and "init" in gemma3.steps
    assert smollm2.experiments == ("smollm2_sinks", "smollm2_token_preference",
                                   "smollm2_lineage")


def test_a_record_says_which_key_rule_made_its_suspects():
    """Suspects built now take keys.fold_in_name and their manifest entry says so; an entry
    without the rule (every committed suspect) was made by the earlier name hash, and the
    section's prose says so, naming the suspects where the rules are mixed."""
    from experiments.real_model import claims

    manifest = {"int8": {"what": "x"}, "renamed": {"what": "y", "key_rule": record.KEY_RULE},
                "rotated": {"what": "z", "refused": "no"}}
    assert record.key_rules(manifest) == {record.LEGACY_KEY_RULE: ["int8"],
                                          record.KEY_RULE: ["renamed"]}
    mixed = claims.key_rule_note({"m_lineage": {"records": {"suspects": manifest}}}, "m_lineage")
    assert mixed.startswith(" The suspects int8 of m_lineage took their random keys from the "
                            "earlier name hash")
    new = {"renamed": {"what": "y", "key_rule": record.KEY_RULE}}
    assert claims.key_rule_note({"m_lineage": {"records": {"suspects": new}}}, "m_lineage") == ""
    # both real models' committed descendants were rebuilt: every one by keys.fold_in_name
    for path in ("real_model/smollm2_lineage.json", "gemma3/gemma3_lineage.json"):
        committed = json.loads((ROOT / "results/records" / path).read_text())["records"]
        assert list(record.key_rules(committed["suspects"])) == [record.KEY_RULE], path
        assert claims.key_rule_note({"x": {"records": committed}}, "x") == ""


def test_a_record_with_unknown_fields_or_steps_is_refused(tmp_path):
    from bornbiased_jax.errors import UserError

    good = dataclasses.asdict(record.load("gemma3"))
    for bad, message in (({**good, "colour": "red"}, "unknown fields"),
                         ({**good, "steps": ["sinks", "dance"]}, "unknown steps"),
                         ({**good, "descendants": {"int8": {"kind": "odd"}}}, "kind")):
        (tmp_path / "r.json").write_text(json.dumps(bad))
        with pytest.raises(UserError, match=message):
            record.load(tmp_path / "r.json")
    with pytest.raises(UserError, match="no model record"):
        record.load("no-such-model")


def _tokenizer():
    from gguf_files import byte_level_bpe

    return byte_level_bpe()


def _in_process(args: list[str], log: Path) -> float:
    """``bornbiased ARGS`` as the driver runs it, in this process (no interpreter to start)."""
    from bornbiased_jax.cli import main

    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        rc = main(args)
    assert not rc, log.read_text()[-2000:]
    return 0.0


def test_a_third_model_is_a_record_and_no_code(tmp_path, monkeypatch, capsys):
    """A tiny random LLaMA-family GGUF (with a byte-level BPE tokenizer) and an unrelated fresh
    initialisation of its shape: its record (JSON) runs sinks, the sweep, its suspects and the
    lineage step, writes its records under RECORDS/<its study>/, and its section comes from
    the real-model rules with its own label, descendants and key rule."""
    import jax

    from bornbiased_jax import model as decoder
    from bornbiased_jax.hf import save_hf
    from bornbiased_jax.hf.configs import config_from_hf
    from bornbiased_jax.keys import seed_key

    # the llama_gqa fixture's shape (2 layers, d = 32), with room for a byte-level vocabulary
    cfg = dataclasses.replace(config_from_hf(FIXTURES / "llama_gqa"), vocab_size=320)
    init = jax.jit(decoder.init, static_argnums=0)
    save_hf(cfg, init(cfg, seed_key(0)), tmp_path / "base")
    gguf = write_gguf(tmp_path / "tiny.gguf", tmp_path / "base", "Q8_0", tokenizer=_tokenizer())
    save_hf(cfg, init(cfg, seed_key(1)), tmp_path / "unrelated")
    rec = {"name": "tiny", "study": "tiny_model", "label": "tiny LLaMA (Q8_0 GGUF)",
           "short": "the tiny LLaMA", "file": gguf.name, "sha256": measure.sha256(gguf),
           "steps": ["sinks", "sweep", "suspects", "lineage"],
           "out": str(tmp_path / "out"), "suspects": str(tmp_path / "suspects"),
           "sinks": {"": ["--seq-len", "16", "--num-seqs", "4", "--corpus-max-mb", "0.05"]},
           "sweep": {"num_seqs": 64, "seq_lens": [16]},
           "descendants": {"int8": {"kind": "honest"}, "renamed": {"kind": "renamed"}},
           "unrelated": [str(tmp_path / "unrelated")],
           "fingerprint": {"tests": ["permutation"],
                           "flags": {"num_seqs": 16, "seq_len": 16, "permutations": 999}}}
    (tmp_path / "tiny.json").write_text(json.dumps(rec))
    monkeypatch.setattr(measure, "run_cli", _in_process)
    records = tmp_path / "records"
    command.main([str(tmp_path / "tiny.json"), "--model", str(gguf), "--records", str(records)])
    text = capsys.readouterr().out
    text = text[text.index("## "):]  # after each step's line, the model's section

    saved = {p.stem: json.loads(p.read_text()) for p in (records / "tiny_model").glob("*.json")}
    assert sorted(saved) == ["tiny_lineage", "tiny_sinks", "tiny_token_preference"]
    assert all(re.fullmatch(r"python -m experiments real_model \S*/tiny\.json --model tiny\.gguf",
                            r["run"]["command"]) for r in saved.values())
    lineage = saved["tiny_lineage"]["records"]
    assert {n: s["key_rule"] for n, s in lineage["suspects"].items()} == {
        "int8": "fold_in_name", "renamed": "fold_in_name"}
    assert [n["name"] for n in lineage["negatives"]] == ["unrelated"]
    pairs = {p["suspect"]: p for p in lineage["tests"]["permutation"]["pairs"]}
    assert set(pairs) == {"int8", "renamed", "unrelated"}
    assert pairs["int8"]["p"]["permutation"] <= 0.01  # a quantized copy is found
    # its section: the real-model rules with the record's label, no legacy key-rule note
    assert text.startswith("## tiny LLaMA (Q8_0 GGUF)\n")
    assert "Generated from results/records/tiny_model/" in text and "name hash" not in text
    assert re.search(r"Attention sinks in a trained model .*\[tiny LLaMA \(Q8_0 GGUF\)\]", text)
    assert "honest edits found 1 of 1" in text and "| int8 | honest edit:" in text
