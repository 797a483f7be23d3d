"""The Bigram-Backcopy task (Guo et al., "Active-dormant attention heads"): a synthetic corpus in
which attention sinks form in small models.

Every sequence begins with a fixed ``<s>``. Its tokens are the characters of a source text
(any local text file), the vocabulary being the text's alphabet (its distinct characters, in
code-point order, ids 0..A-1) plus ``<s>`` (id A); there is no BPE and no padding (every
sequence has the same length). The first character after ``<s>`` is drawn from the source's
character frequencies. After that, the token at position t + 1 is

  * a copy of the token at position t - 1 when the token at t is a trigger and t >= 2 (the
    token before the trigger is a character, not ``<s>``);
  * otherwise drawn from the bigram statistics of the source: P(b | a) = n(a, b) / n(a), with
    n(a, b) the number of times b follows a in the source read cyclically (its last character
    followed by its first, so every character has a successor).

The triggers are the K most frequent characters of the source (ties: the lower code point
first), as in the reference code's fixed triggers; K = 3 by default. A source needs at least
K + 1 distinct characters (at least one character that is not a trigger); a K that does not
leave one is a ``UserError``, as is an empty or unreadable source.

Randomness: sequences are drawn with a numpy ``Generator`` (PCG64) seeded by the key data of
``keys.stream_key(seed, "bbm")`` with a split name folded in (:func:`rng`): "train" and "val"
for a training run (``seed`` = its ``data_seed``), "eval/T=<T>" for evaluation windows
(``bornbiased sinks``, the sink study), so evaluation sequences are never training sequences'
draws, and the generator's stream is independent of the data-order stream.

A corpus spec ``bbm:PATH[:triggers=K]`` names the task (:func:`parse_spec`); ``bornbiased
train --corpus bbm:PATH`` trains on it (:func:`make_blocks`) and :func:`copy_accuracy` measures
how well a model copies after triggers.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np

from bornbiased_jax.errors import UserError

PREFIX = "bbm:"
DEFAULT_TRIGGERS = 3
BOS = "<s>"


def is_spec(corpus) -> bool:
    """Whether a corpus list (or one spec) names the Bigram-Backcopy task."""
    specs = [corpus] if isinstance(corpus, (str, Path)) else list(corpus)
    return any(str(c).startswith(PREFIX) for c in specs)


def parse_spec(spec: str) -> tuple[Path, int]:
    """(source path, number of triggers) of ``bbm:PATH[:triggers=K]``."""
    body = str(spec)[len(PREFIX):]
    path, sep, opt = body.rpartition(":triggers=")
    if not sep:
        path, opt = body, str(DEFAULT_TRIGGERS)
    try:
        k = int(opt)
    except ValueError:
        k = None
    if not path or k is None:
        raise UserError(f"corpus {spec!r}: expected bbm:PATH[:triggers=K] with K an integer, "
                        f"e.g. bbm:/usr/lib/python3.11/this.py:triggers=3")
    return Path(path), k


@dataclasses.dataclass(frozen=True, eq=False)
class BigramBackcopy:
    """The task built from a source text: alphabet, triggers, unigram and bigram counts."""

    alphabet: str  # the source's distinct characters in code-point order (ids 0..A-1)
    triggers: tuple[int, ...]  # ids of the K most frequent characters
    unigram: np.ndarray  # (A,) int64 character counts
    bigram: np.ndarray  # (A, A) int64: bigram[a, b] = times b follows a (cyclically)

    @property
    def bos_id(self) -> int:
        return len(self.alphabet)

    @property
    def vocab_size(self) -> int:
        """Alphabet + ``<s>``."""
        return len(self.alphabet) + 1

    @property
    def transition(self) -> np.ndarray:
        """(A, A) float64: P(next = b | current = a)."""
        return self.bigram / self.bigram.sum(1, keepdims=True)

    def is_trigger(self) -> np.ndarray:
        """(vocab,) bool: which ids are triggers (``<s>`` is not)."""
        out = np.zeros(self.vocab_size, bool)
        out[list(self.triggers)] = True
        return out

    def describe(self) -> dict:
        """What run.json and results record about the task."""
        return {"alphabet": self.alphabet, "bos_id": self.bos_id,
                "triggers": [self.alphabet[i] for i in self.triggers],
                "trigger_ids": list(self.triggers), "source_chars": int(self.unigram.sum())}

    def generate(self, n: int, length: int, generator: np.random.Generator) -> np.ndarray:
        """(n, length) int32 sequences: ``<s>`` at position 0, then the rule of the module
        docstring. One uniform draw per sequence and position (copied positions included), so
        the draws at a position do not depend on which earlier ones were copies."""
        if length < 2:
            raise UserError(f"Bigram-Backcopy sequences need a length of at least 2 (<s> and "
                            f"one character), got {length}")
        out = np.empty((n, length), np.int32)
        out[:, 0] = self.bos_id
        uni_cdf = np.cumsum(self.unigram) / self.unigram.sum()
        cdf = np.cumsum(self.bigram, axis=1) / self.bigram.sum(1, keepdims=True)
        trig = self.is_trigger()
        out[:, 1] = (uni_cdf[None, :] <= generator.random(n)[:, None]).sum(1)
        for t in range(2, length):
            prev = out[:, t - 1]
            drawn = (cdf[prev] <= generator.random(n)[:, None]).sum(1)
            copy = trig[prev] & (t - 1 >= 2)
            out[:, t] = np.where(copy, out[:, t - 2], drawn)
        return out


def from_text(text: str, n_triggers: int = DEFAULT_TRIGGERS, name: str = "the source") -> \
        BigramBackcopy:
    """The task of a source text; a ``UserError`` unless it has at least ``n_triggers`` + 1
    distinct characters and ``n_triggers`` >= 1."""
    alphabet = "".join(sorted(set(text)))
    if isinstance(n_triggers, bool) or not isinstance(n_triggers, (int, np.integer)) \
            or n_triggers < 1:
        raise UserError(f"the number of triggers must be an integer >= 1, got {n_triggers!r}")
    if len(alphabet) < n_triggers + 1:
        raise UserError(f"{name} has {len(alphabet)} distinct character(s) and {len(text)} in "
                        f"all; {n_triggers} trigger(s) need at least {n_triggers + 1} distinct "
                        f"characters (one that is not a trigger): use a longer or more varied "
                        f"text, or fewer triggers (at most {max(len(alphabet) - 1, 0)})")
    index = {c: i for i, c in enumerate(alphabet)}
    ids = np.fromiter((index[c] for c in text), np.int64, len(text))
    A = len(alphabet)
    unigram = np.bincount(ids, minlength=A)
    bigram = np.bincount(ids * A + np.roll(ids, -1), minlength=A * A).reshape(A, A)
    order = sorted(range(A), key=lambda i: (-unigram[i], i))
    return BigramBackcopy(alphabet, tuple(sorted(order[:n_triggers])), unigram, bigram)


def load(spec: str) -> BigramBackcopy:
    """The task named by ``bbm:PATH[:triggers=K]`` (the source read as UTF-8)."""
    path, k = parse_spec(spec)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"corpus {spec!r}: cannot read the source text {str(path)!r} "
                        f"({type(e).__name__}: {e})") from None
    return from_text(text, k, name=f"the source text {str(path)!r}")


def rng(seed: int, split: str) -> np.random.Generator:
    """The numpy generator of ``split`` ("train", "val", "eval/T=64", ...) of a seed: PCG64
    seeded by the key data of ``fold_in_name(stream_key(seed, "bbm"), split)``."""
    import jax

    from bornbiased_jax.keys import fold_in_name, stream_key

    key = fold_in_name(stream_key(seed, "bbm"), split)
    return np.random.default_rng(np.asarray(jax.random.key_data(key), np.uint32).tolist())


def check_single(corpus) -> str:
    """The one ``bbm:`` spec of a corpus list; a ``UserError`` if it is mixed with others."""
    specs = [str(c) for c in corpus]
    if len(specs) != 1:
        raise UserError(f"a Bigram-Backcopy corpus (bbm:PATH) stands alone; got {specs}")
    return specs[0]


def make_blocks(spec: str, seq_len: int, n_train: int, val_fraction: float, data_seed: int):
    """``data.TokenBlocks`` of the task: ``n_train`` training sequences of T + 1 tokens
    (``<s>`` + T characters) from split "train" of ``data_seed``, and max(1, round(n_train x
    ``val_fraction``)) validation sequences from split "val"; with the task."""
    from bornbiased_jax.data import TokenBlocks

    task = load(spec)
    n_val = max(1, int(round(n_train * val_fraction)))
    train = task.generate(n_train, seq_len + 1, rng(data_seed, "train"))
    val = task.generate(n_val, seq_len + 1, rng(data_seed, "val"))
    return TokenBlocks(train, val, task.vocab_size), task


def eval_windows(spec_or_task, T: int, n: int, seed: int) -> np.ndarray:
    """``n`` evaluation sequences of length T (``<s>`` + T - 1 characters) from split
    "eval/T=<T>" of ``seed``: never a training run's draws."""
    task = load(spec_or_task) if isinstance(spec_or_task, str) else spec_or_task
    return task.generate(n, T, rng(seed, f"eval/T={T}"))


def copy_accuracy(params, cfg, task: BigramBackcopy, seqs: np.ndarray,
                  batch: int = 64) -> dict:
    """How often a model's most likely next token after a trigger is the copy the rule
    demands, on sequences ``seqs`` (S, T) of the task (:func:`score_predictions` of the
    model's argmax predictions)."""
    seqs = np.asarray(seqs, np.int32)
    if seqs.ndim != 2 or seqs.shape[1] < 3:
        raise UserError(f"expected sequences of shape (S, T) with T >= 3, got {seqs.shape}")
    if cfg.vocab_size < task.vocab_size:
        raise UserError(f"the model's vocabulary ({cfg.vocab_size}) is smaller than the task's "
                        f"({task.vocab_size})")
    pred = np.concatenate([np.asarray(_argmax_program()(params, cfg, seqs[i:i + batch]))
                           for i in range(0, len(seqs), batch)])
    return score_predictions(pred, seqs, task)


@functools.lru_cache(maxsize=None)
def _argmax_program():
    """``(params, cfg, seqs (S, T)) -> the most likely next token at every position``, jitted
    with the config static and the parameters an argument: compiled once per config and shape,
    so every checkpoint of a run reuses it (jax is imported on first use)."""
    import jax

    from bornbiased_jax import model

    return jax.jit(lambda p, c, t: jax.vmap(lambda s: model.forward(p, c, s).logits.argmax(-1))(t),
                   static_argnums=1)


def score_predictions(pred: np.ndarray, seqs: np.ndarray, task: BigramBackcopy) -> dict:
    """Next-token predictions ``pred`` (S, T; pred[:, t] predicts seqs[:, t + 1]) scored on
    the task: ``copy_accuracy`` over every position t >= 2 holding a trigger (t < T - 1), whether
    pred[t] = seqs[t - 1], the copy the rule demands; ``bigram_accuracy`` over the positions
    1 <= t < T - 1 holding a character that is not a trigger, whether pred[t] is that
    character's most frequent successor in the source (the best guess there), for comparison.
    With the numbers of positions each is taken over (an accuracy is None with none)."""
    pred, seqs = np.asarray(pred), np.asarray(seqs)
    trig = task.is_trigger()[seqs]
    at_copy = trig.copy()
    at_copy[:, :2] = False  # the rule copies from position t - 1 >= 1 only
    at_copy[:, -1] = False  # the last position's successor is not in the sequence
    want_copy = np.zeros_like(seqs)
    want_copy[:, 1:] = seqs[:, :-1]
    at_bigram = ~trig & (seqs != task.bos_id)
    at_bigram[:, 0] = False
    at_bigram[:, -1] = False
    best = np.append(np.argmax(task.bigram, axis=1), -1)  # <s> has no bigram successor
    n_copy, n_bigram = int(at_copy.sum()), int(at_bigram.sum())
    return {"copy_accuracy": float((pred == want_copy)[at_copy].mean()) if n_copy else None,
            "copy_positions": n_copy,
            "bigram_accuracy": float((pred == best[seqs])[at_bigram].mean())
            if n_bigram else None,
            "bigram_positions": n_bigram}
