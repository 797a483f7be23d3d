"""Training data: local text corpora, a byte-level BPE tokenizer, fixed-length blocks, and a
data order that depends on the data seed alone.

Corpora are files or folders of text on disk (for code, the Python standard library's own sources:
``--corpus python-stdlib``; for prose, any folder such as Debian's ``fortunes`` once installed).
Documents are tokenised, joined with an end-of-text token, and cut into blocks of T + 1 tokens
(inputs and next-token targets). The last ``val_fraction`` of the documents (in sorted path
order) is held out for validation. Two options change how blocks are formed (both off by
default, so runs made without them keep their data):

  * ``bos_id`` (``train --bos``): every block is the beginning-of-sequence token followed by T
    text tokens, so a model's input window holds BOS + T - 1 text tokens and keeps its length
    T. The text is then encoded with its special-token strings read as plain text, so the BOS
    id occurs at position 0 of each block and nowhere else (:func:`bos_id` finds the id);
  * ``doc_aligned`` (``train --doc-aligned``): one block per document, starting at its first
    token and running on into the following documents (past the end-of-text token) when the
    document is shorter than the block; a document closer than a block to the end of the
    stream gives none. Without it the stream is cut into consecutive blocks wherever the
    documents fall.

A synthetic corpus (``bbm:PATH[:triggers=K]``, :mod:`bornbiased_jax.bigram_backcopy`) makes its
blocks itself.

The order of training blocks in epoch e is ``permutation(fold_in(data_key, e))`` with
``data_key = stream_key(data_seed, "data")``: two runs with different init seeds and the same
data seed see exactly the same batches in the same order (paper Table 4c), and a run resumed at
step s continues with the same batches an uninterrupted run would see.

On a connected machine with HF ``datasets`` installed,
``--corpus hf:NAME[@REVISION][:SPLIT[:CONFIG[:joined]]]`` streams a hub corpus (OpenWebText,
TinyStories, The Stack: field "text" or "content"; :func:`hf_documents`); ``@REVISION`` (a commit
hash, tag or branch of the dataset repository) pins the data, since a hub dataset can change
under an unpinned name. Or it can be exported to text files first, e.g.::

    from datasets import load_dataset
    ds = load_dataset("roneneldan/TinyStories", split="train[:1%]")
    with open("tinystories.txt", "w") as f:
        for row in ds: f.write(row["text"] + "\\n\\n")

and then passed as ``--corpus tinystories.txt``.

Text to measure a model on (``bornbiased sinks``) is read the same way; :func:`evaluation_tokenizer`
chooses its tokenizer (a given one, the model's own, or a BPE trained on that text).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import sysconfig
from pathlib import Path
from typing import Iterator, Sequence

import jax
import numpy as np

from bornbiased_jax.defaults import BOS_TOKEN as BOS
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import fold_in_name, stream_key

EOT = "<|endoftext|>"
# End-of-text tokens of real models' tokenizers, in the order they are looked for, when the
# tokenizer has no EOT: Gemma's "<eos>", LLaMA's "</s>".
EOT_FALLBACKS = ("<eos>", "</s>")


def eot_id(tokenizer) -> int | None:
    """The id of the token that ends each document: ``EOT`` if the tokenizer has it (every BPE
    trained here, GPT-2's, SmolLM2's), else the first of :data:`EOT_FALLBACKS` it has; None for
    a tokenizer with none of them."""
    for token in (EOT, *EOT_FALLBACKS):
        i = tokenizer.token_to_id(token)
        if i is not None:
            return int(i)
    return None
TEXT_SUFFIXES = {".py", ".txt", ".md", ".rst", ".c", ".h", ".json", ".toml", ".cfg", ".ini",
                 ".html", ".css", ".js", ".sh", ".tex", ""}
ALIASES = {"python-stdlib": lambda: Path(sysconfig.get_paths()["stdlib"])}


def resolve_corpus(spec: str) -> Path:
    """A path, or an alias ('python-stdlib')."""
    if spec in ALIASES:
        return ALIASES[spec]()
    return Path(spec)


def corpus_files(paths: Sequence[str | Path], max_bytes: int | None = None) -> list[Path]:
    """Text files under ``paths`` (files kept as given; folders walked, sorted, site-packages
    and caches skipped), stopping once ``max_bytes`` of files are collected.

    The cap counts each file's size on disk, including files that :func:`read_documents` later
    skips (binary, undecodable or empty), so a capped corpus can hold somewhat less text than
    ``max_bytes``. This rule fixes which files a recorded run read; changing it would change
    the data of runs that resume."""
    files: list[Path] = []
    total = 0
    for spec in paths:
        p = resolve_corpus(str(spec))
        if not p.exists():
            raise UserError(f"corpus path {str(p)!r} does not exist")
        found = [p] if p.is_file() else sorted(
            f for f in p.rglob("*") if f.is_file() and f.suffix in TEXT_SUFFIXES
            and not any(part in ("site-packages", "__pycache__", ".git") for part in f.parts))
        for f in found:
            files.append(f)
            total += f.stat().st_size
            if max_bytes is not None and total >= max_bytes:
                return files
    return files


def hf_documents(spec: str, max_bytes: int | None = None, text_field: str = "text") -> list[str]:
    """Documents from an HF ``datasets`` corpus named
    ``hf:NAME[@REVISION][:SPLIT[:CONFIG[:joined]]]`` (e.g. ``hf:roneneldan/TinyStories:train``;
    ``@REVISION``, a commit hash, tag or branch of the dataset repository, pins the data),
    streamed in order until ``max_bytes`` of text:
    one document per non-blank row, or, with ``joined``, all rows concatenated into one
    document, for corpora stored a line per row such as WikiText
    (``hf:Salesforce/wikitext:test:wikitext-2-raw-v1:joined``: the rows keep their newlines,
    so this is the text of ``wiki.test.raw``). Needs the ``datasets`` package and the data in
    its cache or a network; the tests stand a fake ``datasets`` module in for it."""
    fields = spec[len("hf:"):].split(":")
    name, split, config, mode = (fields + ["", "", ""])[:4]
    name, at, revision = name.partition("@")
    if not name or len(fields) > 4 or mode not in ("", "joined") or (at and not revision):
        raise UserError(f"corpus {spec!r}: expected hf:NAME[@REVISION][:SPLIT[:CONFIG[:joined]]]"
                        " (e.g. hf:Salesforce/wikitext:test:wikitext-2-raw-v1:joined)")
    try:
        import datasets
    except ImportError:
        raise UserError(f"corpus {spec!r} needs the HF 'datasets' package: pip install datasets"
                         ) from None
    pin = {"revision": revision} if revision else {}
    ds = datasets.load_dataset(name, config or None, split=split or "train", streaming=True, **pin)
    docs, total = [], 0
    for row in ds:
        text = row.get(text_field) or row.get("content") or ""
        if text.strip() or mode == "joined":
            docs.append(text)
            total += len(text.encode("utf-8"))
        if max_bytes is not None and total >= max_bytes:
            break
    return ["".join(docs)] if mode == "joined" else docs


def load_corpus(specs: Sequence[str], max_bytes: int | None = None) -> list[str]:
    """Documents of the corpus: files, folders, 'python-stdlib', or
    'hf:NAME[@REVISION][:SPLIT[:CONFIG[:joined]]]' (:func:`hf_documents`), in the order given,
    until ``max_bytes`` of UTF-8 text (every source counts bytes, so a cap shared by several
    sources means the same with non-ASCII text)."""
    docs: list[str] = []
    read = 0  # UTF-8 bytes of the documents so far
    for spec in specs:
        remaining = None if max_bytes is None else max_bytes - read
        if remaining is not None and remaining <= 0:
            break
        if str(spec).startswith("hf:"):
            new = hf_documents(str(spec), remaining)
        else:
            new = read_documents(corpus_files([spec], max_bytes=remaining))
        docs += new
        read += sum(len(d.encode("utf-8")) for d in new)
    return docs


def load_nonempty_corpus(specs: Sequence[str], max_bytes: int | None = None) -> list[str]:
    """:func:`load_corpus`, and a ``UserError`` when it yields no document."""
    docs = load_corpus(specs, max_bytes=max_bytes)
    if not docs:
        raise UserError(f"the corpus {specs} is empty: no readable, non-empty text files")
    return docs


def read_documents(files: Sequence[Path]) -> list[str]:
    """Each file's text (UTF-8; undecodable or binary files are skipped); empty files dropped."""
    docs = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if "\x00" not in text and text.strip():
            docs.append(text)
    return docs


def train_tokenizer(docs: Sequence[str], vocab_size: int, bos: bool = False):
    """A byte-level BPE (GPT-2 style) trained on ``docs`` with HF ``tokenizers``. Its special
    tokens: ``EOT`` (id 0) and, with ``bos``, ``BOS`` (id 1) within the same ``vocab_size``.
    Without ``bos`` the BPE is the one runs made before the BOS option were trained with."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size,
                                  special_tokens=[EOT, BOS] if bos else [EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(docs, trainer=trainer)
    return tok


def load_tokenizer(path: str | Path):
    """The ``tokenizers.Tokenizer`` of a tokenizer.json, or of a GGUF model file (the one its
    metadata describes, ``hf.gguf.load_gguf_tokenizer``)."""
    from tokenizers import Tokenizer

    from bornbiased_jax.hf.gguf import is_gguf

    if Path(path).is_file() and is_gguf(path):
        from bornbiased_jax.hf.gguf import load_gguf_tokenizer

        return load_gguf_tokenizer(path)

    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises a bare Exception on bad files
        raise UserError(f"cannot load tokenizer {str(path)!r}: {e}") from None


def model_tokenizer_file(model_folder: str | Path | None) -> Path | None:
    """Where a model's own tokenizer is: a GGUF file is its own, a run or HF folder's is its
    tokenizer.json (which may not exist); None for no folder."""
    if model_folder is None:
        return None
    from bornbiased_jax.hf.gguf import is_gguf

    p = Path(model_folder)
    return p if p.is_file() and is_gguf(p) else p / "tokenizer.json"


def evaluation_tokenizer(docs: Sequence[str], max_vocab: int, *, path: str | Path | None = None,
                         model_folder: Path | None = None, bpe_vocab: int = 4096,
                         bos: bool = False):
    """The tokenizer to read evaluation text ``docs`` with, and a note saying which: the
    tokenizer.json at ``path`` if given, else ``model_folder``'s own tokenizer.json if it has one
    (a training run's; a GGUF file's own, ``model_folder`` being that file), else a byte-level
    BPE of min(``bpe_vocab``, ``max_vocab``) tokens trained on ``docs`` themselves (with the
    ``BOS`` token when ``bos``). A ``UserError`` if it has more tokens than ``max_vocab``, the
    model's vocabulary."""
    own = model_tokenizer_file(model_folder)
    if path:
        tok, note = load_tokenizer(path), f"tokenizer {path}"
    elif own is not None and own.is_file():
        tok, note = load_tokenizer(own), f"the model's own tokenizer {own}"
    else:
        tok = train_tokenizer(docs, min(bpe_vocab, max_vocab), bos=bos)
        note = (f"no tokenizer given: a byte-level BPE ({tok.get_vocab_size()} tokens) "
                f"trained on the evaluation corpus")
    if tok.get_vocab_size() > max_vocab:
        raise UserError(f"the tokenizer has {tok.get_vocab_size()} tokens, more than the "
                        f"model's vocabulary {max_vocab}")
    return tok, note


def bos_id(tokenizer, token: str | None = None) -> int:
    """The id of the beginning-of-sequence token ``token`` (default ``BOS``) in ``tokenizer``;
    a ``UserError`` saying how to name one if the tokenizer has no such token."""
    token = BOS if token is None else token
    i = tokenizer.token_to_id(token)
    if i is None:
        raise UserError(f"the tokenizer has no beginning-of-sequence token {token!r}: name the "
                        f"BOS token of this tokenizer with --bos-token TOKEN (e.g. '<s>' for a "
                        f"Llama tokenizer), or leave --tokenizer out so that a BPE with {BOS!r} "
                        f"is trained")
    return int(i)


def token_chunks(docs: Sequence[str], tokenizer, eot: int | None = None,
                 chunk: int = 4096, plain_specials: bool = False) -> Iterator[np.ndarray]:
    """int32 token ids of ``chunk`` documents at a time, each document followed by ``eot``
    unless it is None. Arrays per chunk, not one Python list: a corpus of billions of tokens
    (the paper-scale families) would need ~30 bytes per token as Python ints and ~120 as
    ``tokenizers`` Encodings held all at once. With ``plain_specials`` a special token's string
    inside the text (e.g. a literal "<|bos|>") is encoded as ordinary text, not as that token."""
    tail = [] if eot is None else [eot]
    before = tokenizer.encode_special_tokens
    tokenizer.encode_special_tokens = bool(plain_specials)
    try:
        for i in range(0, len(docs), chunk):
            encs = tokenizer.encode_batch(list(docs[i:i + chunk]))
            yield np.fromiter(itertools.chain.from_iterable(e.ids + tail for e in encs),
                              np.int32)
    finally:
        tokenizer.encode_special_tokens = before


def token_ids(docs: Sequence[str], tokenizer, chunk: int = 4096,
              plain_specials: bool = False) -> np.ndarray:
    """(N,) int32: ``docs`` tokenised and joined, each followed by the end-of-text token when
    the tokenizer has one (``plain_specials``: see :func:`token_chunks`)."""
    eot = eot_id(tokenizer)
    return np.concatenate([np.zeros(0, np.int32),
                           *token_chunks(docs, tokenizer, eot, chunk, plain_specials)])


def document_starts(docs: Sequence[str], tokenizer, plain_specials: bool = False) -> np.ndarray:
    """(D,) int64: where each document begins in :func:`token_ids` of ``docs``."""
    eot = 0 if eot_id(tokenizer) is None else 1
    before = tokenizer.encode_special_tokens
    tokenizer.encode_special_tokens = bool(plain_specials)
    try:
        lengths = [len(e.ids) + eot for i in range(0, len(docs), 4096)
                   for e in tokenizer.encode_batch(list(docs[i:i + 4096]))]
    finally:
        tokenizer.encode_special_tokens = before
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def cut_blocks(ids: np.ndarray, block: int, bos: int | None = None,
               starts: np.ndarray | None = None) -> np.ndarray:
    """Blocks of ``block`` tokens from the token stream ``ids``: consecutive pieces, or, given
    ``starts`` (document starts), one piece from each start that has a whole piece after it;
    with ``bos`` each block is ``bos`` followed by ``block - 1`` tokens of the stream."""
    text = block - (bos is not None)
    if starts is None:
        n = len(ids) // text
        rows = ids[: n * text].reshape(n, text)
    else:
        starts = np.asarray(starts)
        starts = starts[starts + text <= len(ids)]
        rows = ids[starts[:, None] + np.arange(text)]
    if bos is not None:
        rows = np.concatenate([np.full((len(rows), 1), bos, rows.dtype), rows], axis=1)
    return np.ascontiguousarray(rows, dtype=np.int32)


@dataclasses.dataclass
class TokenBlocks:
    """Blocks of T + 1 token ids for training and validation."""

    train: np.ndarray  # (n_train, T + 1) int32
    val: np.ndarray  # (n_val, T + 1) int32
    vocab_size: int


def split_documents(docs: Sequence[str],
                    val_fraction: float) -> tuple[Sequence[str], Sequence[str]]:
    """(training, validation) documents: the last ``max(1, round(len(docs) * val_fraction))``
    documents are held out for validation. The one rule for every reader of a run's held-out
    text; changing it would change the data of recorded runs."""
    if not docs:
        raise UserError("the corpus is empty: no readable, non-empty text files were found")
    if not 0 < val_fraction < 1:
        raise UserError(f"val_fraction must lie in (0, 1), got {val_fraction}")
    n_val_docs = max(1, int(round(len(docs) * val_fraction)))
    if len(docs) - n_val_docs < 1:
        raise UserError(f"the corpus has {len(docs)} document(s); need at least 2 to hold out "
                         f"validation text")
    return docs[:-n_val_docs], docs[-n_val_docs:]


def make_blocks(docs: Sequence[str], tokenizer, seq_len: int,
                val_fraction: float = 0.05, bos: int | None = None,
                doc_aligned: bool = False) -> TokenBlocks:
    """Tokenise, join with end-of-text, hold out the last documents, cut into T + 1 blocks
    (with ``bos``, the id of the BOS token, each block is BOS + T text tokens; with
    ``doc_aligned`` each block starts at a document start: the module docstring)."""
    train_docs, val_docs = split_documents(docs, val_fraction)
    if eot_id(tokenizer) is None:
        raise UserError(f"the tokenizer has no end-of-text token ({EOT!r}, "
                        f"{', '.join(map(repr, EOT_FALLBACKS))}) to separate documents with")
    plain = bos is not None

    def blocks(ds: Sequence[str]) -> np.ndarray:
        ids = token_ids(ds, tokenizer, plain_specials=plain)
        starts = document_starts(ds, tokenizer, plain) if doc_aligned else None
        return cut_blocks(ids, seq_len + 1, bos, starts)

    train, val = blocks(train_docs), blocks(val_docs)
    if len(train) == 0 or len(val) == 0:
        raise UserError(f"the corpus is too small for blocks of {seq_len + 1} tokens "
                         f"({len(train)} training, {len(val)} validation blocks)")
    return TokenBlocks(train, val, tokenizer.get_vocab_size())


def data_key(data_seed: int) -> jax.Array:
    return stream_key(data_seed, "data")


@functools.lru_cache(maxsize=4)
def epoch_order(data_seed: int, epoch: int, n_blocks: int) -> np.ndarray:
    """The permutation of training blocks in ``epoch`` (depends on the data seed only)."""
    key = fold_in_name(data_key(data_seed), f"epoch/{epoch}")
    return np.asarray(jax.random.permutation(key, n_blocks))


def batch_indices(data_seed: int, position: int, batch: int, n_blocks: int) -> np.ndarray:
    """Block ids of the ``batch`` blocks starting at global data position ``position``."""
    out = []
    while len(out) < batch:
        epoch, offset = divmod(position, n_blocks)
        order = epoch_order(data_seed, epoch, n_blocks)
        take = order[offset: offset + batch - len(out)]
        out.extend(take.tolist())
        position += len(take)
    return np.asarray(out)
