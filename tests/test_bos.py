"""Windows with a beginning-of-sequence token and document-aligned windows (data.make_blocks,
`bornbiased train --bos/--doc-aligned`), the constant learning-rate schedule, and `bornbiased
sinks --bos`."""

import dataclasses
import json
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from bornbiased_jax import data
from bornbiased_jax.cli import main
from bornbiased_jax.errors import UserError
from bornbiased_jax.training.config import TrainConfig, settings_differences

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# A document holding the BOS token's own string: read as plain text, so the BOS id is only
# where the pipeline puts it.
DOCS = [f"doc {i}: " + "alpha beta gamma " * (i % 5 + 1) for i in range(60)] + [
    "literal <|bos|> and <|endoftext|> in the text " * 3]


@pytest.fixture(scope="module")
def tok():
    return data.train_tokenizer(DOCS, 300, bos=True)


def test_bos_at_position_0_of_every_window_and_nowhere_else(tok):
    bos = data.bos_id(tok)
    assert bos == 1 and tok.token_to_id(data.EOT) == 0
    plain = data.make_blocks(DOCS, tok, seq_len=15, val_fraction=0.1)
    blocks = data.make_blocks(DOCS, tok, seq_len=15, val_fraction=0.1, bos=bos)
    for b in (blocks.train, blocks.val):
        assert b.shape[1] == 16 and len(b) > 3
        assert (b[:, 0] == bos).all() and (b[:, 1:] != bos).all()
    # without the option the literal string is the BOS token; with it, plain text
    assert (plain.train == bos).any() or (plain.val == bos).any()
    # the text after BOS is the stream (special strings as text) cut into 15-token pieces
    ids = data.token_ids(DOCS[:-6], tok, plain_specials=True)
    n = len(ids) // 15
    np.testing.assert_array_equal(blocks.train[:, 1:], ids[:n * 15].reshape(n, 15))


def test_doc_aligned_windows_start_at_document_starts(tok):
    bos = data.bos_id(tok)
    train_docs = DOCS[:-6]
    ids = data.token_ids(train_docs, tok)
    starts = data.document_starts(train_docs, tok)
    assert starts[0] == 0 and ids[starts[1] - 1] == 0  # each document follows an end-of-text
    aligned = data.make_blocks(DOCS, tok, seq_len=15, val_fraction=0.1, doc_aligned=True)
    fits = starts[starts + 16 <= len(ids)]
    assert len(aligned.train) == len(fits) > 40  # one per document with a whole block after it
    for row, s in zip(aligned.train, fits):
        np.testing.assert_array_equal(row, ids[s:s + 16])
    both = data.make_blocks(DOCS, tok, seq_len=15, val_fraction=0.1, bos=bos, doc_aligned=True)
    assert (both.train[:, 0] == bos).all()
    for row, s in zip(both.train, starts[starts + 15 <= len(ids)]):
        np.testing.assert_array_equal(row[1:], ids[s:s + 15])


def test_tokenizer_without_bos_is_a_clear_error():
    old = data.train_tokenizer(DOCS, 300)  # trained without --bos: as before, no BOS token
    assert old.token_to_id(data.BOS) is None
    with pytest.raises(UserError, match="--bos-token TOKEN"):
        data.bos_id(old)
    assert data.bos_id(old, data.EOT) == 0  # any token the tokenizer has can be named
    with pytest.raises(UserError, match="add --bos"):
        TrainConfig(preset="llama2-tiny", bos_token="<s>")


def test_constant_schedule_warms_up_then_holds_lr():
    from bornbiased_jax.training.optimizer import lr_schedule

    tc = TrainConfig(preset="llama2-tiny", steps=100, warmup=10, lr=1e-3, min_lr=1e-4,
                     schedule="constant")
    sched = lr_schedule(tc)
    for step, want in [(0, 0.0), (5, 5e-4), (10, 1e-3), (50, 1e-3), (100, 1e-3)]:
        assert np.isclose(float(sched(step)), want, rtol=1e-6, atol=1e-12), step


def test_old_run_json_reads_as_no_bos():
    tc = TrainConfig(preset="llama2-tiny")
    saved = json.loads(json.dumps(dataclasses.asdict(tc)))
    for k in ("bos", "bos_token", "doc_aligned"):
        del saved[k]  # a run recorded before these settings existed
    assert settings_differences(saved, tc) == {}
    assert settings_differences(saved, dataclasses.replace(tc, bos=True)) == {
        "bos": (False, True)}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    for name in ["textwrap.py", "bisect.py", "heapq.py", "colorsys.py", "fnmatch.py"]:
        shutil.copy(STDLIB / name, d / name)
    return d


def _train(corpus, out, *extra):
    return ["train", "--preset", "llama2-tiny", "--corpus", str(corpus), "--out", str(out),
            "--steps", "2", "--warmup", "1", "--seq-len", "32", "--batch-size", "4",
            "--bpe-vocab", "256", "--eval-every", "2", "--eval-batches", "1", "--no-progress",
            *extra]


@pytest.mark.slow
def test_train_with_bos_end_to_end_and_sinks_follow_the_run(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_train(corpus, out, "--bos", "--doc-aligned")) == 0
    info = json.loads((out / "run.json").read_text())
    assert info["train_config"]["bos"] is True and info["train_config"]["doc_aligned"] is True
    tok = data.load_tokenizer(out / "tokenizer.json")
    assert info["data"]["bos_id"] == data.bos_id(tok) == 1
    from bornbiased_jax.training.config import TrainConfig as TC
    from bornbiased_jax.training.loop import Run

    run = Run(TC(preset="llama2-tiny", seq_len=32, batch_size=4, steps=2, warmup=1,
                 vocab_size=256, bos=True), [str(corpus)], tmp_path / "fresh",
              tokenizer_path=str(out / "tokenizer.json"))
    for b in (run.blocks.train, run.blocks.val):
        assert (b[:, 0] == 1).all() and (b[:, 1:] != 1).all()
    # resume must keep the setting
    rc = main(_train(corpus, out))
    assert rc == 2 and "'bos': (True, False)" in capsys.readouterr().err
    # bornbiased sinks on the run: BOS windows by default (its run.json), --no-bos without
    s1, s2 = tmp_path / "s1", tmp_path / "s2"
    assert main(["sinks", str(out), "--corpus", str(corpus), "--seq-len", "16",
                 "--num-seqs", "3", "--out", str(s1)]) == 0
    assert main(["sinks", str(out), "--corpus", str(corpus), "--seq-len", "16",
                 "--num-seqs", "3", "--no-bos", "--out", str(s2)]) == 0
    r1 = json.loads((s1 / "sinks.json").read_text())["run"]
    r2 = json.loads((s2 / "sinks.json").read_text())["run"]
    assert (r1["bos_prepended"], r1["bos_id"], r2["bos_prepended"]) == (True, 1, False)
    assert "BOS token (id 1)" in (s1 / "sinks.md").read_text()


def test_bos_with_a_tokenizer_without_one_is_refused(corpus, tmp_path, capsys):
    tokfile = tmp_path / "tok.json"
    tokfile.write_text(data.train_tokenizer(data.load_corpus([str(corpus)]), 256).to_str())
    out = tmp_path / "bad"
    assert main(_train(corpus, out, "--bos", "--tokenizer", str(tokfile))) == 2
    err = capsys.readouterr().err
    assert "no beginning-of-sequence token '<|bos|>'" in err and "--bos-token" in err
    assert not out.exists()
    assert main(["sinks", "preset:llama2-tiny@0", "--bos", "--tokenizer", str(tokfile),
                 "--corpus", str(corpus), "--seq-len", "16", "--num-seqs", "2",
                 "--out", str(tmp_path / "s")]) == 2
    assert "--bos-token" in capsys.readouterr().err
