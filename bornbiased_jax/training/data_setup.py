"""The data and model of a run, set up before training: the corpus cut into blocks (text with
the run's tokenizer, or a Bigram-Backcopy task), the model configuration (the preset's, or the
source model's for a continuation) and run.json of a new run; on resume, the checks that the
settings, corpus and model are those the run was made with.

Every process reads the corpus; process 0's tokenizer is every process's, and all processes
must cut the same blocks (a ``UserError`` in every process otherwise).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax

from bornbiased_jax import bigram_backcopy, data, distributed, model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.sources import load_source
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.config import TrainConfig, model_config, settings_differences


@dataclasses.dataclass
class RunData:
    """A run's blocks, model configuration and run.json; ``fresh`` for a new run, whose
    ``tokenizer`` (None for a corpus without one) is written with run.json once the run is
    known to fit (``run_folder.write_new_run``)."""

    blocks: data.TokenBlocks
    cfg: ModelConfig
    run_info: dict
    fresh: bool
    tokenizer: object | None = None


def init_source(tc: TrainConfig):
    """The model ``tc.init_from`` names (None without one); a UserError if it cannot start a
    run: a fresh preset initialisation is not a source (use --preset and --seed)."""
    if tc.init_from is None:
        return None
    src = load_source(tc.init_from, shared_embedding=False)
    if src.kind == "preset":
        raise UserError(f"init_from {tc.init_from!r} is a fresh initialisation; train it with "
                        f"--preset and --seed instead")
    if src.seed is not None and tc.seed not in (0, src.seed):
        raise UserError(f"--seed {tc.seed} contradicts the source model's initialisation seed "
                        f"{src.seed}; leave --seed out (parameters come from the source)")
    return src


def fresh_data(tc: TrainConfig, corpus, source=None, tokenizer_path=None) -> RunData:
    """A new run's data on ``corpus``: its tokenizer (``tokenizer_path``'s, the source model's,
    or a BPE trained on the corpus by process 0), blocks, model configuration and run.json."""
    if bigram_backcopy.is_spec(corpus):
        if tokenizer_path is not None:
            raise UserError("a Bigram-Backcopy corpus (bbm:PATH) has its own character "
                            "vocabulary; drop --tokenizer")
        blocks, task = bbm_blocks(tc, corpus)
        cfg = run_model_config(tc, blocks, source)
        info = run_folder.fresh_run_info(tc, cfg, corpus, blocks.train, blocks.val,
                                         blocks.vocab_size, source)
        info["data"]["bbm"] = task.describe()
        return RunData(blocks, cfg, info, fresh=True)
    docs = run_folder.read_documents(corpus, tc)
    if source is not None and tokenizer_path is None:
        tokenizer_path = _source_tokenizer(source)
    tok = None
    if distributed.is_writer():  # process 0's tokenizer is every process's
        tok = (data.load_tokenizer(tokenizer_path) if tokenizer_path
               else data.train_tokenizer(docs, tc.vocab_size, bos=tc.bos))
    tok = _same_tokenizer(tok)
    blocks = text_blocks(tc, docs, tok)
    _check_same_data(blocks)
    cfg = run_model_config(tc, blocks, source)
    info = run_folder.fresh_run_info(tc, cfg, corpus, blocks.train, blocks.val,
                                     blocks.vocab_size, source)
    if tc.bos:
        info["data"]["bos_id"] = data.bos_id(tok, tc.bos_token)
    return RunData(blocks, cfg, info, fresh=True, tokenizer=tok)


def resumed_data(tc: TrainConfig, folder: str | Path, corpus, source=None) -> RunData:
    """The data of the run in ``folder``, resumed with settings ``tc`` on ``corpus``: a
    UserError naming the difference unless the settings, the data (its fingerprint) and the
    model configuration are those recorded in its run.json."""
    saved = run_folder.read_run_info(folder)
    diff = settings_differences(saved["train_config"], tc)
    if diff:
        raise UserError("the run in {} was made with different settings; resume with the "
                        "same ones or use a new --out. Differences (saved, now): {}"
                        .format(str(folder), diff))
    if bigram_backcopy.is_spec(corpus):
        blocks, _ = bbm_blocks(tc, corpus)
    else:
        tok = data.load_tokenizer(run_folder.tokenizer_path(folder))
        blocks = text_blocks(tc, run_folder.read_documents(corpus, tc), tok)
    if _fingerprint(blocks) != saved["data"]["fingerprint"]:
        raise UserError(f"the corpus {corpus} no longer gives the data this run was "
                        f"trained on (fingerprint mismatch); resume with the same corpus")
    _check_same_data(blocks)
    cfg = run_folder.saved_model_config(saved, run_folder.run_info_path(folder),
                                        run_model_config(tc, blocks, source))
    return RunData(blocks, cfg, saved, fresh=False)


def text_blocks(tc: TrainConfig, docs, tok) -> data.TokenBlocks:
    """Blocks of a text corpus, with the run's BOS and document alignment."""
    bos = data.bos_id(tok, tc.bos_token) if tc.bos else None
    return data.make_blocks(docs, tok, tc.seq_len, tc.val_fraction, bos=bos,
                            doc_aligned=tc.doc_aligned)


def bbm_blocks(tc: TrainConfig, corpus):
    """(blocks, task) of a Bigram-Backcopy corpus (``bigram_backcopy.make_blocks``): as many training
    sequences of T + 1 tokens as ``corpus_max_mb`` MiB holds at one token per byte."""
    spec = bigram_backcopy.check_single(corpus)
    if tc.bos or tc.doc_aligned:
        raise UserError(f"{spec}: Bigram-Backcopy sequences always begin with <s> and "
                        f"have no documents; drop --bos, --bos-token and --doc-aligned")
    n_train = max(1, int(tc.corpus_max_mb * 2**20) // (tc.seq_len + 1))
    blocks, task = bigram_backcopy.make_blocks(spec, tc.seq_len, n_train, tc.val_fraction, tc.data_seed)
    _check_same_data(blocks)
    return blocks, task


def run_model_config(tc: TrainConfig, blocks: data.TokenBlocks, source=None) -> ModelConfig:
    """The preset's configuration for the blocks' vocabulary, or the source model's."""
    if source is None:
        return model_config(tc, blocks.vocab_size)
    cfg = source.cfg
    if cfg.vocab_size != blocks.vocab_size:
        raise UserError(f"the tokenizer has {blocks.vocab_size} tokens but the source "
                        f"model {tc.init_from!r} has a vocabulary of {cfg.vocab_size}; "
                        f"use the source's own tokenizer")
    model.check_seq_len(cfg, tc.seq_len)
    return cfg


def _fingerprint(blocks: data.TokenBlocks) -> str:
    return run_folder.data_fingerprint(blocks.train, blocks.val)


def _same_tokenizer(tok):
    """Process 0's tokenizer in every process (BPE training need not tie-break alike)."""
    if jax.process_count() == 1:
        return tok
    from tokenizers import Tokenizer

    text = distributed.broadcast_bytes(tok.to_str().encode() if tok is not None else None)
    return Tokenizer.from_str(text.decode())


def _check_same_data(blocks: data.TokenBlocks) -> None:
    """A UserError in every process unless all processes' corpora give the same blocks."""
    odd = distributed.processes_differing(_fingerprint(blocks).encode())
    if odd:
        raise UserError(f"processes {odd} read a different corpus than process 0 (data "
                        f"fingerprint mismatch); every host must see the same files")


def _source_tokenizer(src) -> str:
    """The tokenizer.json in a source model's folder (a GGUF source: the file itself)."""
    f = data.model_tokenizer_file(src.folder)
    if f is None or not f.is_file():
        raise UserError(f"the source model {src.label!r} has no tokenizer.json in its folder; "
                        f"pass --tokenizer with the tokenizer it was trained with")
    return str(f)
