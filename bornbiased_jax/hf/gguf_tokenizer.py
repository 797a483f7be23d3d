"""A GGUF file's own tokenizer, rebuilt as a ``tokenizers.Tokenizer`` from its
``tokenizer.ggml.*`` metadata (:func:`load_gguf_tokenizer`), and whether it adds a
beginning-of-sequence token (:func:`gguf_bos`); re-exported by :mod:`.gguf`.

Byte-level BPE (``tokenizer.ggml.model`` = ``gpt2``) gets the pre-tokenizer that
``tokenizer.ggml.pre`` names in llama.cpp (:data:`PRE_TOKENIZERS`); control tokens are matched
whole. Gemma 3's SentencePiece vocabulary (``llama``, with byte fallback) is rebuilt as
transformers' GGUF loader rebuilds it; other SentencePiece files are refused: give
``--tokenizer``.
"""

from __future__ import annotations

import os

from bornbiased_jax.errors import UserError
from bornbiased_jax.hf.gguf_reader import field, open_reader

# llama.cpp's pre-tokenizer regexes (llama-vocab.cpp), by ``tokenizer.ggml.pre``. "gpt2" is
# GPT-2's own split (tokenizers' ByteLevel with use_regex); the others split first with their
# regex. SmolLM's splits every digit alone, then as GPT-2.
_GPT2 = None
_LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRE_TOKENIZERS = {"gpt2": (False, _GPT2), "default": (False, _GPT2),
                  "smollm": (True, _GPT2), "starcoder": (True, _GPT2),
                  "llama3": (False, _LLAMA3), "llama-v3": (False, _LLAMA3),
                  "llama-bpe": (False, _LLAMA3), "smaug-bpe": (False, _LLAMA3),
                  "qwen2": (False, _QWEN2), "deepseek-r1-qwen": (False, _QWEN2),
                  "dbrx": (False, _LLAMA3)}  # llama-vocab.cpp: "same as llama3"

# tokenizer.ggml.model's name of a SentencePiece vocabulary (llama.cpp's word for it)
SENTENCEPIECE = "llama"
_CONTROL = 3  # llama.cpp's token type of special tokens (<|im_start|>, <|endoftext|>, ...)



def load_gguf_tokenizer(path: str | os.PathLike):
    """The ``tokenizers.Tokenizer`` the file's ``tokenizer.ggml.*`` metadata describes (see the
    module docstring), or a UserError naming the key it cannot serve."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    reader = open_reader(path)
    kind = field(reader, "tokenizer.ggml.model")
    if kind is None:
        raise UserError(f"{path}: the file has no tokenizer (tokenizer.ggml.model); give "
                        f"--tokenizer tokenizer.json")
    if kind == SENTENCEPIECE:
        from bornbiased_jax import architectures

        arch = field(reader, "general.architecture")
        rebuilt = [a.gguf_arch for a in architectures.FAMILIES if a.gguf_spm_tokenizer]
        if arch in rebuilt:
            return _gemma_tokenizer(reader)
        raise UserError(f"{path}: tokenizer.ggml.model='llama' (a SentencePiece vocabulary) is "
                        f"rebuilt here for {', '.join(rebuilt)} files only, whose merge order "
                        f"is known (the vocabulary's own order); for {arch!r} give --tokenizer "
                        f"tokenizer.json")
    if kind != "gpt2":
        raise UserError(f"{path}: tokenizer.ggml.model={kind!r} is not supported: only "
                        f"byte-level BPE vocabularies ('gpt2') are rebuilt here; give "
                        f"--tokenizer tokenizer.json")
    pre = field(reader, "tokenizer.ggml.pre", "default")
    if pre not in PRE_TOKENIZERS:
        raise UserError(f"{path}: tokenizer.ggml.pre={pre!r} is not supported; supported: "
                        f"{', '.join(sorted(PRE_TOKENIZERS))}; give --tokenizer tokenizer.json")
    tokens = field(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges", [])]
    types = field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens)
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges,
                               fuse_unk=False))
    digits, split = PRE_TOKENIZERS[pre]
    steps = [pre_tokenizers.Digits(individual_digits=True)] if digits else []
    steps += ([pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)] if split is None
              else [pre_tokenizers.Split(Regex(split), behavior="isolated"),
                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tok.decoder = decoders.ByteLevel()
    control = [AddedToken(t, special=True, normalized=False)
               for t, k in zip(tokens, types) if int(k) == _CONTROL]
    tok.add_special_tokens(control)
    return tok


_USER_DEFINED = 4  # llama.cpp's token type of added, non-special tokens


def _gemma_tokenizer(reader):
    """Gemma's SentencePiece BPE with byte fallback, from ``tokenizer.ggml.tokens`` and
    ``token_type``, as transformers' GGUF loader builds it (``gemma_tokenizer`` in
    ``integrations/gguf/gguf_tokenizer_mapping.py`` and ``GemmaTokenizer``): tokens of two or
    more spaces, which the file stores as spaces, are spelled with U+2581 as the merges need;
    the file has no merges, so they are rebuilt from the vocabulary, best first in the order
    the tokens are listed (Gemma's scores do not follow its merge order), each token's splits
    into two vocabulary pieces longest left piece first; spaces become U+2581 (no prefix
    space); control tokens are special and user-defined ones whole, as llama.cpp matches them."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

    tokens = [("\u2581" * len(t) if " " in t and not t.strip() else t)
              for t in field(reader, "tokenizer.ggml.tokens")]
    types = field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for t in tokens:
        pairs = [(t[:k], t[k:]) for k in range(len(t) - 1, 0, -1)
                 if t[:k] in vocab and t[k:] in vocab]
        merges += pairs
    unk = tokens[field(reader, "tokenizer.ggml.unknown_token_id", 3)]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=True, unk_token=unk,
                               byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                     decoders.Fuse()])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, k in zip(tokens, types) if int(k) == _CONTROL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False)
                    for t, k in zip(tokens, types) if int(k) == _USER_DEFINED])
    return tok


def gguf_bos(path: str | os.PathLike) -> tuple[bool, int | None, str | None]:
    """(adds, id, string) of the file's beginning-of-sequence token: whether its tokenizer puts
    one before a text (``tokenizer.ggml.add_bos_token``; absent: llama.cpp's default, True for a
    SentencePiece vocabulary, False for byte-level BPE), and the token's id and string
    (``tokenizer.ggml.bos_token_id``; None when the file names none)."""
    reader = open_reader(path)
    kind = field(reader, "tokenizer.ggml.model")
    bos = field(reader, "tokenizer.ggml.bos_token_id")
    adds = field(reader, "tokenizer.ggml.add_bos_token", kind == SENTENCEPIECE)
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    text = None
    if bos is not None and tokens is not None and 0 <= int(bos) < len(tokens.data):
        text = bytes(tokens.parts[tokens.data[int(bos)]]).decode("utf-8", "replace")
    return bool(adds) and bos is not None, None if bos is None else int(bos), text
