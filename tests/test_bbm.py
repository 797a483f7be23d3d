"""The Bigram-Backcopy task (bornbiased_jax/bigram_backcopy.py): the trigger rule, the bigram
statistics, its seed streams, copy accuracy, bad input, and `bornbiased train --corpus bbm:PATH`
end to end."""

import json

import numpy as np
import pytest

from bornbiased_jax import bigram_backcopy, model
from bornbiased_jax.cli import main
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_key

SOURCE = "mississippi river"
# Its bigrams read cyclically (the last 'r' followed by the first 'm'), by hand:
#   m: i | i: s s p ' ' v | s: s s i i | p: p i | ' ': r | r: i m | v: e | e: r
# 'i' (5 of 17 characters) is the most frequent, so the one trigger is 'i'.
HAND = {"m": {"i": 1}, "i": {"s": 2, "p": 1, " ": 1, "v": 1}, "s": {"s": 2, "i": 2},
        "p": {"p": 1, "i": 1}, " ": {"r": 1}, "r": {"i": 1, "m": 1}, "v": {"e": 1},
        "e": {"r": 1}}


@pytest.fixture(scope="module")
def task():
    return bigram_backcopy.from_text(SOURCE, n_triggers=1)


def test_counts_and_triggers_of_a_hand_checked_source(task):
    assert task.alphabet == " eimprsv" and task.vocab_size == 9 and task.bos_id == 8
    assert [task.alphabet[i] for i in task.triggers] == ["i"]
    want = np.zeros((8, 8), int)
    for a, row in HAND.items():
        for b, n in row.items():
            want[task.alphabet.index(a), task.alphabet.index(b)] = n
    np.testing.assert_array_equal(task.bigram, want)
    assert task.unigram.tolist() == [1, 1, 5, 1, 2, 2, 4, 1]  # ' ' e i m p r s v
    # three triggers: i (5), s (4), then p and r (2 each): the lower code point, p
    three = bigram_backcopy.from_text(SOURCE, n_triggers=3)
    assert sorted(three.alphabet[i] for i in three.triggers) == ["i", "p", "s"]


def test_every_token_after_a_trigger_copies_the_token_before_it(task):
    seqs = task.generate(500, 64, bigram_backcopy.rng(0, "train"))
    assert seqs.shape == (500, 64) and seqs.dtype == np.int32
    assert (seqs[:, 0] == task.bos_id).all() and (seqs[:, 1:] != task.bos_id).all()
    prev, cur, nxt = seqs[:, :-2], seqs[:, 1:-1], seqs[:, 2:]  # column j: t = j + 1
    t = np.arange(1, 63)
    copy = task.is_trigger()[cur] & (t >= 2)
    assert copy.sum() > 1000  # the rule is exercised many times
    np.testing.assert_array_equal(nxt[copy], prev[copy])
    # a trigger at position 1 follows <s>: its successor is a bigram draw, never <s>
    assert task.is_trigger()[seqs[:, 1]].any()


def test_bigram_frequencies_match_the_source_within_binomial_error(task):
    """Transitions not governed by the copy rule are bigram draws: for each character a the
    successors' frequencies agree with n(a, b) / n(a) within 5 binomial standard errors
    sqrt(p (1 - p) / n_a) per cell (a cell beyond 5 SE has probability ~6e-7; 64 cells), and
    successors the source never shows do not occur. The first character after <s> follows the
    unigram frequencies, within the same bound."""
    S, L = 4000, 64
    seqs = task.generate(S, L, bigram_backcopy.rng(1, "train"))
    prev, nxt = seqs[:, 1:-1], seqs[:, 2:]
    t = np.arange(1, L - 1)
    drawn = ~(task.is_trigger()[prev] & (t >= 2))
    counts = np.zeros((8, 8))
    np.add.at(counts, (prev[drawn], nxt[drawn]), 1)
    p = task.transition
    n_a = counts.sum(1)
    assert (n_a > 400).all()  # every row is sampled (the trigger's from position 1 only)
    emp = counts / n_a[:, None]
    se = np.sqrt(p * (1 - p) / n_a[:, None])
    assert (np.abs(emp - p) <= 5 * se).all(), np.abs(emp - p) / np.maximum(se, 1e-12)
    assert (counts[p == 0] == 0).all()
    q = task.unigram / task.unigram.sum()
    first = np.bincount(seqs[:, 1], minlength=8) / S
    assert (np.abs(first - q) <= 5 * np.sqrt(q * (1 - q) / S)).all()


def test_seed_streams_are_reproducible_and_split_apart(task):
    a = task.generate(8, 32, bigram_backcopy.rng(3, "train"))
    np.testing.assert_array_equal(a, task.generate(8, 32, bigram_backcopy.rng(3, "train")))
    assert not np.array_equal(a, task.generate(8, 32, bigram_backcopy.rng(3, "val")))
    assert not np.array_equal(a, task.generate(8, 32, bigram_backcopy.rng(4, "train")))
    assert not np.array_equal(a, bigram_backcopy.eval_windows(task, 32, 8, 3))
    np.testing.assert_array_equal(bigram_backcopy.eval_windows(task, 32, 8, 3),
                                  task.generate(8, 32, bigram_backcopy.rng(3, "eval/T=32")))


def test_copy_accuracy_scores_the_rule(task):
    seqs = task.generate(50, 40, bigram_backcopy.rng(5, "val"))
    perfect = np.zeros_like(seqs)
    perfect[:, 1:] = seqs[:, :-1]  # at every position, the token before
    out = bigram_backcopy.score_predictions(perfect, seqs, task)
    t = np.arange(40)
    want_n = int((task.is_trigger()[seqs] & (t >= 2) & (t < 39)).sum())
    assert out["copy_accuracy"] == 1.0 and out["copy_positions"] == want_n > 0
    # "repeat" is wrong
    assert bigram_backcopy.score_predictions(seqs, seqs, task)["copy_accuracy"] < 0.5
    # the bigram part: the most frequent successor of each character (e.g. 'v' -> 'e')
    best = np.argmax(task.bigram, 1)
    guess = np.where(seqs < 8, best[np.minimum(seqs, 7)], 0)
    assert bigram_backcopy.score_predictions(guess, seqs, task)["bigram_accuracy"] == 1.0
    # a model: copy_accuracy is score_predictions of its argmax next-token predictions
    cfg = get_preset("llama2-tiny")
    params = model.init(cfg, seed_key(0))
    pred = np.stack([np.asarray(model.forward(params, cfg, s).logits.argmax(-1)) for s in seqs])
    assert bigram_backcopy.copy_accuracy(params, cfg, task, seqs, batch=16) == \
        bigram_backcopy.score_predictions(pred, seqs, task)


@pytest.mark.parametrize("text, k, match", [
    ("aaaa", 1, "1 distinct character.*need at least 2"),
    ("", 1, "0 distinct"),
    ("abc", 3, "3 trigger.*at least 4 distinct.*at most 2"),
    ("abc", 0, "integer >= 1"),
])
def test_bad_source_or_trigger_count(text, k, match):
    with pytest.raises(UserError, match=match):
        bigram_backcopy.from_text(text, k)


def test_bad_specs(tmp_path):
    with pytest.raises(UserError, match=r"bbm:PATH\[:triggers=K\]"):
        bigram_backcopy.parse_spec("bbm:x.txt:triggers=two")
    assert bigram_backcopy.parse_spec("bbm:a/b.txt") == (tmp_path.__class__("a/b.txt"), 3)
    with pytest.raises(UserError, match="cannot read the source text"):
        bigram_backcopy.load(f"bbm:{tmp_path / 'missing.txt'}")


def _train(src, out, *extra):
    return ["train", "--preset", "llama2-tiny", "--corpus", f"bbm:{src}:triggers=2",
            "--out", str(out), "--steps", "2", "--warmup", "1", "--seq-len", "32",
            "--batch-size", "4", "--corpus-max-mb", "0.01", "--eval-every", "2",
            "--eval-batches", "1", "--no-progress", *extra]


@pytest.mark.slow
def test_train_on_bigram_backcopy_end_to_end(tmp_path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("the quick brown fox jumps over the lazy dog. " * 20)
    out = tmp_path / "run"
    assert main(_train(src, out, "--schedule", "constant")) == 0
    info = json.loads((out / "run.json").read_text())
    task = bigram_backcopy.load(f"bbm:{src}:triggers=2")
    assert info["corpus"] == [f"bbm:{src}:triggers=2"]
    assert info["data"]["bbm"]["alphabet"] == task.alphabet
    assert info["data"]["bbm"]["triggers"] == [" ", "o"]
    assert info["data"]["vocab_size"] == info["model_config"]["vocab_size"] == 29
    assert info["train_config"]["schedule"] == "constant"
    assert info["data"]["n_train_blocks"] == int(0.01 * 2**20) // 33
    assert not (out / "tokenizer.json").exists()
    assert main(_train(src, out, "--schedule", "constant", "--resume")) == 0  # same data
    from bornbiased_jax.training.loop import Run
    from bornbiased_jax.training.config import TrainConfig

    run = Run(TrainConfig(preset="llama2-tiny", seq_len=32, batch_size=4, steps=2, warmup=1,
                          corpus_max_mb=0.01), [f"bbm:{src}:triggers=2"], tmp_path / "r2")
    for blocks in (run.blocks.train, run.blocks.val):
        assert (blocks[:, 0] == task.bos_id).all() and (blocks[:, 1:] < task.bos_id).all()
    # the sink measurement on the run defaults to its own task, with <s> first
    sinks = tmp_path / "sinks"
    assert main(["sinks", str(out), "--seq-len", "16", "--num-seqs", "3", "--out",
                 str(sinks)]) == 0
    rec = json.loads((sinks / "sinks.json").read_text())["run"]
    assert rec["bos_prepended"] is True and rec["bos_id"] == task.bos_id
    assert rec["corpus"] == [f"bbm:{src}:triggers=2"]


def test_train_bigram_backcopy_bad_input(tmp_path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("abab")
    for extra, match in [((), "2 distinct character.*2 trigger"),
                         (("--bos",), "always begin with <s>")]:
        out = tmp_path / "bad"
        assert main(_train(src, out, *extra)) == 2
        assert match.split(".*")[0] in capsys.readouterr().err
        assert not out.exists()


def test_sink_study_windows_of_a_bigram_backcopy_family_and_of_a_bos_run(tmp_path):
    """The study's evaluation (experiments/sinks/measure.windows_of): a family whose base corpus
    is bbm: is measured on generated sequences with <s> first (never training draws); a text
    family's windows carry the BOS token when the baseline run was trained with --bos."""
    from bornbiased_jax import data
    from bornbiased_jax.probes.perplexity import perplexity
    from bornbiased_jax.training.config import TrainConfig
    from experiments.common import family
    from experiments.sinks.measure import windows_of

    src = tmp_path / "src.txt"
    src.write_text(SOURCE)
    s = dict(lengths=[16], num_seqs=5, ppl_windows=4, ppl_T=16, shift_mb=1.0)
    tc = TrainConfig(preset="llama2-tiny", data_seed=7)
    w = windows_of(s, tc, [f"bbm:{src}:triggers=1"], tmp_path / "none", None)
    win = w["make"](16)
    assert w["bos"] and win.shape == (5, 16) and (win[:, 0] == 8).all()
    task = bigram_backcopy.from_text(SOURCE, 1)
    np.testing.assert_array_equal(win, bigram_backcopy.eval_windows(task, 16, 5, 7))
    kw = w["ppl"](w["held"], 1)
    assert kw["windows"].shape == (4, 17) and (kw["windows"][:, 0] == 8).all()
    cfg = get_preset("llama2-tiny")
    out = perplexity(model.init(cfg, seed_key(0)), cfg, **kw)
    assert out["windows"] == 4 and np.isfinite(out["log_ppl"])
    # a text family whose baseline trained with --bos
    fam = family.smoke_family(tmp_path / "fam")
    base = tmp_path / "base"
    base.mkdir()
    docs = data.load_corpus(family.corpus("base", fam))
    tok = data.train_tokenizer(docs, 300, bos=True)
    (base / "tokenizer.json").write_text(tok.to_str())
    tcb = TrainConfig(preset="llama2-tiny", bos=True, seq_len=16)
    w = windows_of(dict(s, shift_mb=0.01), tcb, family.corpus("base", fam),
                  base / "tokenizer.json", fam)
    assert w["bos"] and w["bos_id"] == 1 and "with the BOS token (id 1)" in w["note"]
    kw = w["ppl"](w["held"], 1)
    assert kw["bos"] == 1 and "windows" not in kw
    w0 = windows_of(dict(s, bos=False), tcb, family.corpus("base", fam), base / "tokenizer.json",
                   fam)
    assert not w0["bos"] and w0["bos_id"] is None
