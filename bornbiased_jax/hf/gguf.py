"""llama.cpp GGUF files as models: the architecture from the metadata, the weights dequantized
to float32 (or bfloat16), and the file's own tokenizer.

    cfg, params = load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    tok = load_gguf_tokenizer("SmolLM2-135M-Instruct.Q4_1.gguf")   # a tokenizers.Tokenizer
    save_hf(cfg, params, "exports/smollm2")                        # opens with transformers

The file is read with llama.cpp's own Python package ``gguf`` (``GGUFReader`` maps the file;
``gguf.quants.dequantize`` is llama.cpp's reference dequantizer), one tensor at a time, so a
7B Q4 file needs the host memory of its float copy and no more. A GGUF is read by the family
record of its ``general.architecture`` (:mod:`bornbiased_jax.architectures`: :data:`SUPPORTED_ARCHITECTURES`),
mapped onto that family's HF layout, and goes through the same checks and converters as an
HF folder:

  * the metadata (``{arch}.*`` keys, and the RoPE factors some files keep as tensors) becomes
    an HF ``config.json`` dict (:func:`read_gguf_config`, the record's ``gguf_config``) and so
    a :class:`ModelConfig` (``configs.config_from_hf``);
  * the record undoes its converter's fix-ups (``from_gguf``): LLaMA's Q and K rows reordered
    for llama.cpp's RoPE of adjacent pairs, Gemma 3's norm gains stored as 1 + w. A model
    loaded with a fix-up left undone still runs, and badly: the parity tests catch it;
  * a file without ``output.weight`` has a tied head (``tie_embeddings``).

Weight types: :data:`SUPPORTED_TYPES` (float, the legacy block quants and the K-quants);
anything else (the IQ/TQ codebook types, MXFP4, ...) is refused naming the tensor and type.
Another ``general.architecture`` is refused naming it.

The tokenizer (:func:`load_gguf_tokenizer`, in :mod:`.gguf_tokenizer`) is rebuilt from
``tokenizer.ggml.*``: byte-level
BPE (``tokenizer.ggml.model`` = ``gpt2``) with the pre-tokenizer that ``tokenizer.ggml.pre``
names in llama.cpp (:data:`PRE_TOKENIZERS`); control tokens (``<|im_start|>``, ...) are
matched whole. Gemma 3's SentencePiece vocabulary (``llama``, with byte fallback) is rebuilt as
transformers' GGUF loader rebuilds it (:func:`_gemma_tokenizer`); other SentencePiece files are
refused: give ``--tokenizer``. :func:`gguf_bos` says whether the file's tokenizer adds a BOS
token (``tokenizer.ggml.add_bos_token``; llama.cpp's default for SentencePiece: yes).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from bornbiased_jax import architectures
from bornbiased_jax.architectures.base import GGUFMeta
from bornbiased_jax.architectures.llama import permute_rope_rows, unpermute_rope_rows  # noqa: F401
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf.gguf_reader import (MAGIC, SUPPORTED_TYPES, field, open_reader,  # noqa: F401
                                           dequantized, is_gguf)
# the file's tokenizer (a module of its own), found here with the rest of a GGUF's API
from bornbiased_jax.hf.gguf_tokenizer import (PRE_TOKENIZERS, gguf_bos,  # noqa: F401
                                              load_gguf_tokenizer)

__all__ = ["load_gguf", "load_gguf_tokenizer", "read_gguf_config", "gguf_metadata",
           "check_gguf", "is_gguf", "SUPPORTED_TYPES", "SUPPORTED_ARCHITECTURES",
           "unpermute_rope_rows"]

# general.architecture of every family record that reads GGUF files
SUPPORTED_ARCHITECTURES = tuple(a.gguf_arch for a in architectures.FAMILIES if a.gguf_arch)
_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}

def gguf_metadata(path: str | os.PathLike) -> dict:
    """Every metadata key of the file but the tokenizer's long arrays (tokens, merges, types,
    scores), with its value; for a look at a file and for chat templates."""
    reader = open_reader(path)
    long = {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type",
            "tokenizer.ggml.scores"}
    return {k: (f"<{len(f.data)} entries>" if k in long else f.contents())
            for k, f in reader.fields.items() if not k.startswith("GGUF.")}


def _model_name(p: Path) -> str:
    return p.name[:-len(".gguf")] if p.name.lower().endswith(".gguf") else p.name


def _tensor_names(reader) -> dict:
    return {t.name: t for t in reader.tensors}


def read_gguf_config(path: str | os.PathLike, reader=None) -> dict:
    """The HF ``config.json`` dict the file's metadata describes, for
    ``configs.config_from_hf``, read by the family record of its ``general.architecture``; a
    UserError naming the key and family for what has no counterpart here (another
    architecture, scaled or partial RoPE, experts, soft-capping, ...)."""
    reader = reader or open_reader(path)
    return family_of(path, reader).gguf_config(_meta(path, reader))


def family_of(path, reader) -> architectures.Architecture:
    """The family record reading the file (by ``general.architecture``)."""
    return architectures.by_gguf(field(reader, "general.architecture"), path)


def _meta(path, reader) -> GGUFMeta:
    fam = family_of(path, reader)
    return GGUFMeta(path, reader, fam.gguf_arch, fam.name)


_LAST_CHECKED: dict = {}  # the last file checked: {(path, inode, size, times): _checked's answer}


def _checked(p: Path):
    """(reader, config, model_type, {GGUF name: TensorSpec}) of the file, after every check
    that needs no tensor decoded: the metadata, the tensor names, shapes and types. A command
    asks this of one file several times (its config, its check, its load); parsing the header
    of a real model's file (a vocabulary of tens of thousands of strings) takes seconds, so the
    answer for the last file is kept while its path, inode, size and times stay the same."""
    try:
        st = p.stat()
        key = (str(p.resolve()), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        return _check_file(p)  # a missing file: open_reader's error
    if key not in _LAST_CHECKED:
        answer = _check_file(p)
        _LAST_CHECKED.clear()
        _LAST_CHECKED[key] = answer
    return _LAST_CHECKED[key]


def _check_file(p: Path):
    from bornbiased_jax.hf import check_name_map, listed
    from bornbiased_jax.hf.configs import config_from_hf
    from bornbiased_jax.hf.names import tensor_specs

    reader = open_reader(p)
    fam = family_of(p, reader)
    hf = fam.gguf_config(_meta(p, reader))
    try:
        cfg = config_from_hf(hf, name=_model_name(p))
    except UserError as e:
        raise UserError(f"{p}: {e}") from None
    kind = cfg.architecture
    specs = tensor_specs(cfg, kind)
    check_name_map(cfg, specs)
    tensors = _tensor_names(reader)
    want = {fam.gguf_name(s.hf_name): s for s in specs}
    missing = [n for n in want if n not in tensors]
    if missing:
        raise UserError(f"{p}: tensor(s) missing from the file: {listed(missing)}; the "
                        f"{fam.name} model its metadata describes needs them")
    extra = [n for n in tensors if n not in want and n not in fam.gguf_consumed]
    if extra:
        raise UserError(f"{p}: unexpected tensor(s) in the file: {listed(extra)}; the "
                        f"{fam.name} model its metadata describes has no such parameters")
    for n, s in want.items():
        shape = tuple(int(x) for x in reversed(tensors[n].shape))
        if shape != s.hf_shape:
            raise UserError(f"{p}: tensor {n} has shape {shape}, expected {s.hf_shape} for the "
                            f"{fam.name} model its metadata describes")
        if tensors[n].tensor_type.name not in SUPPORTED_TYPES:
            raise UserError(f"{p}: tensor {n} has type {tensors[n].tensor_type.name}, which is "
                            f"not supported; supported types: {', '.join(SUPPORTED_TYPES)}")
    return reader, cfg, fam, {n: (tensors[n], s) for n, s in want.items()}


def load_gguf(path: str | os.PathLike, dtype=jnp.float32) -> tuple[ModelConfig, dict]:
    """(config, params) of the GGUF file ``path``, as :func:`bornbiased_jax.hf.load_hf` gives
    them for an HF folder: the config named after the file (``shared_embedding=False``) and
    the parameter dict of ``model.init``'s structure, in ``dtype`` (float32 or bfloat16)."""
    from bornbiased_jax.hf import checked_dtype_name, nest
    from bornbiased_jax.hf.names import to_ours

    p = Path(path)
    jdtype = _DTYPES[checked_dtype_name(dtype)]
    _, cfg, fam, want = _checked(p)
    flat = {}
    for n, (t, s) in want.items():  # one tensor at a time: decoded, fixed up, sent, converted
        a = fam.from_gguf(n, dequantized(p, t), cfg)
        for path_, out in zip(s.paths, to_ours(s, jnp.asarray(a))):
            flat[path_] = out.astype(jdtype)
    return cfg, nest(flat)


def gguf_token_strings(path: str | os.PathLike) -> list[str] | None:
    """The file's token strings by id (``tokenizer.ggml.tokens``), or None when it has none."""
    tokens = field(open_reader(path), "tokenizer.ggml.tokens")
    return None if tokens is None else list(tokens)


def check_gguf(path: str | os.PathLike) -> ModelConfig:
    """The config of the file, after every check :func:`load_gguf` makes before it decodes a
    tensor (metadata, tensor names, shapes and types), without decoding one."""
    return _checked(Path(path))[1]
