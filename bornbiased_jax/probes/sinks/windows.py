"""Where a sink measurement's windows come from, for ``bornbiased sinks`` and the sink studies.

Two kinds of source:

  * generated Bigram-Backcopy sequences (``bbm:PATH[:triggers=K]``,
    :mod:`bornbiased_jax.bigram_backcopy`), each beginning with ``<s>``, drawn from the task's
    evaluation split (never training draws): :func:`generated`;
  * text token ids, read with a tokenizer, with or without a BOS token at position 0 of every
    window: :func:`text`; windows of each length are then cut by ``metric.bos_windows``.

:func:`for_model` is the command's choice among them for one model: the corpus (by default a
Bigram-Backcopy run's own task, else this Python's sources), the tokenizer (given, the run's
own, or a BPE trained on the text) and whether windows carry a BOS token (by default what the
training run did, or for a real model -- an HF folder or a GGUF file -- whether its tokenizer
adds one: ``hf.model_bos``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bornbiased_jax import bigram_backcopy, data
from bornbiased_jax.training import run_folder
from bornbiased_jax.errors import UserError


@dataclasses.dataclass
class Windows:
    """``ids``: text token ids (None for generated sequences); ``make``: T -> (n, T) windows of
    generated sequences (None for text); ``bos``: whether windows carry a BOS token and
    ``bos_id`` its id; ``corpus`` and ``tokenizer``: what was read and with what; ``extra``:
    further fields for the record; ``note``: one line saying all of it."""

    ids: np.ndarray | None
    make: Callable[[int], np.ndarray] | None
    bos: bool
    bos_id: int | None
    corpus: list[str]
    tokenizer: str
    note: str
    extra: dict = dataclasses.field(default_factory=dict)


def generated(spec: str, num_seqs: int, seed: int, vocab_size: int | None = None) -> Windows:
    """``num_seqs`` Bigram-Backcopy sequences of each length from task ``spec`` (split
    ``eval/T=<T>`` of ``seed``); a ``UserError`` if the task's alphabet and ``<s>`` exceed
    ``vocab_size`` (the model's vocabulary, when given)."""
    task = bigram_backcopy.load(spec)
    if vocab_size is not None and vocab_size < task.vocab_size:
        raise UserError(f"{spec} has {task.vocab_size} tokens (alphabet + <s>), more than "
                        f"the model's vocabulary {vocab_size}")
    return Windows(ids=None, bos=True,
                   make=lambda T: bigram_backcopy.eval_windows(task, T, num_seqs, seed),
                   bos_id=task.bos_id, corpus=[spec],
                   tokenizer="the Bigram-Backcopy character vocabulary",
                   extra={"bbm": task.describe()},
                   note=f"Bigram-Backcopy sequences of {spec} (split 'eval/T=<T>' of seed "
                        f"{seed}), <s> (id {task.bos_id}) at position 0 of each")


def text(docs: Sequence[str], tok, bos: bool, bos_token: str | None = None,
         corpus: Sequence[str] = (), tokenizer: str = "") -> Windows:
    """The token ids of ``docs`` read with ``tok`` (with ``bos``, special-token strings in the
    text stay plain text and windows start with the BOS token ``bos_token``, default
    ``data.BOS``)."""
    bos_id = data.bos_id(tok, bos_token) if bos else None
    ids = data.token_ids(docs, tok, plain_specials=bos)
    return Windows(ids=ids, make=None, bos=bos, bos_id=bos_id, corpus=list(corpus),
                   tokenizer=tokenizer, note=f"{len(ids):,} tokens of text; " + (
                       f"BOS token (id {bos_id}) + T-1 text tokens per window" if bos
                       else "no BOS token"))


def for_model(cfg, folder: Path | None, *, num_seqs: int, seed: int,
              corpus: Sequence[str] | None = None, bos: bool | None = None,
              bos_token: str | None = None, tokenizer: str | Path | None = None,
              bpe_vocab: int = 4096, corpus_max_mb: float = 4.0) -> Windows:
    """The windows to measure a model of config ``cfg`` on (``folder``: its training run, HF
    folder or GGUF file, or None). ``corpus`` defaults to the run's Bigram-Backcopy task if it
    trained on one, else ``python-stdlib``; ``bos`` (None: the run's own setting; for an HF
    folder or GGUF file, whether its tokenizer adds a BOS token, and that token; False for
    presets) and ``bos_token`` (default the run's, or the model's) apply to text; ``tokenizer`` defaults to the run's
    tokenizer.json, else a BPE of ``bpe_vocab`` tokens trained on the first ``corpus_max_mb``
    MiB of the text (``data.evaluation_tokenizer``)."""
    info = (run_folder.read_run_info(folder)
            if folder is not None and run_folder.is_run(folder) else {})
    tc = info.get("train_config", {})
    recorded = info.get("corpus") or []
    corpus = list(corpus or (recorded if bigram_backcopy.is_spec(recorded) else ["python-stdlib"]))
    if bigram_backcopy.is_spec(corpus):
        spec = bigram_backcopy.check_single(corpus)
        if bos is False or bos_token or tokenizer:
            raise UserError(f"{spec}: Bigram-Backcopy windows always begin with <s> and use "
                            f"the task's character vocabulary; drop --no-bos, --bos-token and "
                            f"--tokenizer")
        return generated(spec, num_seqs, seed, cfg.vocab_size)
    from_run = bos is None
    if bos_token and bos is False:
        raise UserError("--bos-token names the BOS token to prepend; add --bos")
    real = folder is not None and not run_folder.is_run(folder)
    where = "the run's setting" if not real else ""
    if real and (bos is None or bos_token is None):
        from bornbiased_jax.hf import model_bos

        adds, token, why = model_bos(folder)
        if bos is None:
            bos = adds
            where = f"the model's tokenizer adds one ({why})"
        if bos and bos_token is None:
            if token is None:
                raise UserError(f"{folder}: its tokenizer names no BOS token; give "
                                f"--bos-token TOKEN or --no-bos")
            bos_token = token
    bos = bool(tc.get("bos", False)) if bos is None else bos
    if bos_token and not bos:
        raise UserError("--bos-token names the BOS token to prepend; add --bos")
    docs = data.load_nonempty_corpus(corpus, max_bytes=int(corpus_max_mb * 2**20))
    tok, tok_note = data.evaluation_tokenizer(docs, cfg.vocab_size, path=tokenizer,
                                              model_folder=folder, bpe_vocab=bpe_vocab,
                                              bos=bos)
    w = text(docs, tok, bos, bos_token or tc.get("bos_token"), corpus, tok_note)
    where = where if from_run else "--bos" if bos else "--no-bos"
    if real and from_run and not bos:
        where = f"the model's tokenizer adds none ({why})"
    w.note = f"{tok_note}; {w.note}" + (f" ({where})" if bos or real else "")
    return w
