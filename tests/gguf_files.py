"""Tiny GGUF files for the tests, written the way llama.cpp's ``convert_hf_to_gguf.py`` writes
an HF LLaMA / Qwen2 / Gemma 3 folder: its metadata keys, its tensor names, LLaMA's Q and K rows
permuted for llama.cpp's RoPE, Gemma's norm weights stored as 1 + w, norms in F32 and matrices
in the asked type (``gguf.quants``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, quants
from safetensors.numpy import load_file

from bornbiased_jax.hf.configs import config_from_hf
from bornbiased_jax.hf.gguf import _gguf_name, permute_rope_rows


def write_gguf(path: Path, hf_folder: Path, qtype: str = "F32", *, arch: str | None = None,
               permute: bool = True, drop: tuple[str, ...] = (), extra=None,
               tokenizer=None) -> Path:
    """Write the HF folder ``hf_folder`` as the GGUF file ``path``.

    qtype: the type of every matrix (F32, F16 or one ``gguf.quants.quantize`` writes); norms
    and biases stay F32, as llama.cpp keeps them. arch: ``general.architecture`` (default the
    folder's model_type). permute: apply llama.cpp's Q/K row permutation (LLaMA only). drop:
    GGUF tensor names to leave out. extra: a function given the writer before the tensors,
    to add or change metadata. tokenizer: a byte-level ``tokenizers.Tokenizer`` whose
    vocabulary and merges go into ``tokenizer.ggml.*``.
    """
    hf = json.loads((Path(hf_folder) / "config.json").read_text())
    cfg = config_from_hf(hf_folder)
    kind = hf["model_type"]
    gemma = kind == "gemma3_text"
    w = GGUFWriter(str(path), arch or ("gemma3" if gemma else kind))
    w.add_block_count(cfg.n_layers)
    w.add_context_length(cfg.max_seq_len)
    w.add_embedding_length(cfg.d_model)
    w.add_feed_forward_length(cfg.d_ff)
    w.add_head_count(cfg.n_heads)
    w.add_head_count_kv(cfg.resolved_n_kv_heads)
    w.add_key_length(cfg.resolved_head_dim)
    w.add_value_length(cfg.resolved_head_dim)
    w.add_rope_dimension_count(cfg.resolved_head_dim)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    if gemma:  # what convert_hf_to_gguf.py's Gemma3Model writes; the rest is llama.cpp's
        w.add_sliding_window(cfg.sliding_window)  # (pattern 6, local base 10,000, scalar = K)
    if tokenizer is not None:
        _add_tokenizer(w, tokenizer)
    if extra is not None:
        extra(w)
    for name, a in load_file(str(Path(hf_folder) / "model.safetensors")).items():
        gname = _gguf_name(name, kind)
        if gname in drop:
            continue
        a = np.asarray(a, np.float32)
        if gemma and gname.endswith("norm.weight"):
            a = a + np.float32(1)  # convert_hf_to_gguf.py: data_torch + norm_shift
        if kind == "llama" and permute and (".attn_q." in gname or ".attn_k." in gname):
            a = permute_rope_rows(a, cfg.n_heads if ".attn_q." in gname
                                  else cfg.resolved_n_kv_heads)
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
