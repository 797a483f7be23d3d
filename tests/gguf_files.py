"""Tiny GGUF files for the tests, written the way llama.cpp's ``convert_hf_to_gguf.py`` writes
an HF folder of a registered family: the family record's metadata keys, tensor names and
converter fix-ups (``bornbiased_jax.architectures``: ``gguf_metadata``, ``gguf_name``,
``to_gguf``, ``gguf_extra_tensors``: LLaMA's Q and K rows permuted for llama.cpp's RoPE, Gemma's
norm weights stored as 1 + w, Llama 3's ``rope_freqs``, Phi-3's LongRoPE factors), norms in F32
and matrices in the asked type (``gguf.quants``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, quants
from safetensors.numpy import load_file

from bornbiased_jax import architectures
from bornbiased_jax.hf.configs import config_from_hf


def write_gguf(path: Path, hf_folder: Path, qtype: str = "F32", *, arch: str | None = None,
               permute: bool = True, drop: tuple[str, ...] = (), extra=None,
               tokenizer=None) -> Path:
    """Write the HF folder ``hf_folder`` as the GGUF file ``path``.

    qtype: the type of every matrix (F32, F16 or one ``gguf.quants.quantize`` writes); norms
    and biases stay F32, as llama.cpp keeps them. arch: ``general.architecture`` (default the
    family's GGUF architecture, or the one its files are written as: Mistral's ``llama``).
    permute: apply the family's converter fix-ups (False leaves every tensor as HF holds it:
    LLaMA's Q/K rows unpermuted). drop: GGUF tensor names to leave out. extra: a function given
    the writer before the tensors, to add or change metadata. tokenizer: a byte-level
    ``tokenizers.Tokenizer`` whose vocabulary and merges go into ``tokenizer.ggml.*``.
    """
    cfg = config_from_hf(hf_folder)
    fam = architectures.get(cfg.architecture)
    name = arch or fam.gguf_arch or fam.gguf_as
    w = GGUFWriter(str(path), name)
    for key, value in fam.gguf_metadata(cfg).items():
        _add(w, f"{name}.{key}", value)
    if tokenizer is not None:
        _add_tokenizer(w, tokenizer)
    if extra is not None:
        extra(w)
    tensors = {fam.gguf_name(n): a for n, a in
               load_file(str(Path(hf_folder) / "model.safetensors")).items()}
    tensors.update(fam.gguf_extra_tensors(cfg))
    for gname, a in tensors.items():
        if gname in drop:
            continue
        a = np.asarray(a, np.float32)
        if permute:
            a = fam.to_gguf(gname, a, cfg)
        if a.ndim == 1 or qtype == "F32":
            w.add_tensor(gname, a)
        elif qtype == "F16":
            w.add_tensor(gname, a.astype(np.float16))
        else:
            q = GGMLQuantizationType[qtype]
            w.add_tensor(gname, quants.quantize(a, q), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def _add(w: GGUFWriter, key: str, value) -> None:
    """One metadata value with the type llama.cpp's converter gives it."""
    if isinstance(value, bool):
        w.add_bool(key, value)
    elif isinstance(value, int):
        w.add_uint32(key, value)
    elif isinstance(value, float):
        w.add_float32(key, value)
    elif isinstance(value, str):
        w.add_string(key, value)
    else:
        raise TypeError(f"{key}: no GGUF type for {value!r}")


def _add_tokenizer(w: GGUFWriter, tok) -> None:
    model = json.loads(tok.to_str())["model"]
    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt2")
    w.add_token_list([t for t, _ in vocab])
    w.add_token_types([3 if t.startswith("<|") else 1 for t, _ in vocab])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in model["merges"]])


def quantized_roundtrip(a: np.ndarray, qtype: str) -> np.ndarray:
    """What a GGUF of type ``qtype`` gives back for the float32 matrix ``a``."""
    if qtype == "F32":
        return a
    if qtype == "F16":
        return a.astype(np.float16).astype(np.float32)
    q = GGMLQuantizationType[qtype]
    return quants.dequantize(quants.quantize(np.asarray(a, np.float32), q), q)


def byte_level_bpe():
    """A tiny byte-level BPE tokenizer (128 tokens, a chat special token) trained on two lines,
    as a GGUF file's tokenizer is in the tests."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    text = ["the model is born biased toward some tokens", "def f(x): return x * 2"] * 20
    tok.train_from_iterator(text, trainers.BpeTrainer(
        vocab_size=128, special_tokens=["<|im_start|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok
