"""llama.cpp GGUF files as models: the architecture from the metadata, the weights dequantized
to float32 (or bfloat16), and the file's own tokenizer.

    cfg, params = load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    tok = load_gguf_tokenizer("SmolLM2-135M-Instruct.Q4_1.gguf")   # a tokenizers.Tokenizer
    save_hf(cfg, params, "exports/smollm2")                        # opens with transformers

The file is read with llama.cpp's own Python package ``gguf`` (``GGUFReader`` maps the file;
``gguf.quants.dequantize`` is llama.cpp's reference dequantizer), one tensor at a time, so a
7B Q4 file needs the host memory of its float copy and no more. A GGUF is mapped onto the HF
LLaMA / Qwen2 layout (:mod:`.names`) and goes through the same checks and converters as an
HF folder:

  * the metadata (``general.architecture`` and ``{arch}.*`` keys) becomes an HF ``config.json``
    dict (:func:`read_gguf_config`) and so a :class:`ModelConfig` (``configs.config_from_hf``);
  * llama.cpp's converter reorders the rows of every LLaMA Q and K projection (its RoPE rotates
    adjacent pairs, HF's rotates halves: ``convert_hf_to_gguf.py``'s ``permute``); they are put
    back here (:func:`unpermute_rope_rows`). Qwen2 files are written unpermuted. A model loaded
    with the rows left permuted still runs, and badly: the parity test against transformers
    catches it;
  * a file without ``output.weight`` has a tied head (``tie_embeddings``).

Weight types: :data:`SUPPORTED_TYPES` (float, the legacy block quants and the K-quants);
anything else (the IQ/TQ codebook types, MXFP4, ...) is refused naming the tensor and type.
Architectures: llama, qwen2 and gemma3; anything else is refused naming
``general.architecture``. Gemma 3's norm gains are stored as 1 + w (llama.cpp's converter adds
the 1 that Gemma's RMSNorm adds at run time); they are read back as w, our ``scale``.

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

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf.gguf_reader import MAGIC, _field, _reader, is_gguf  # noqa: F401
# the file's tokenizer (a module of its own), found here with the rest of a GGUF's API
from bornbiased_jax.hf.gguf_tokenizer import (PRE_TOKENIZERS, gguf_bos,  # noqa: F401
                                              load_gguf_tokenizer)

__all__ = ["load_gguf", "load_gguf_tokenizer", "read_gguf_config", "gguf_metadata",
           "check_gguf", "is_gguf", "SUPPORTED_TYPES", "SUPPORTED_ARCHITECTURES",
           "unpermute_rope_rows"]

SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "gemma3")
# general.architecture -> the HF model_type its tensors map onto
_MODEL_TYPE = {"llama": "llama", "qwen2": "qwen2", "gemma3": "gemma3_text"}
# Types dequantized by gguf.quants (llama.cpp's reference code): F32 and F16 are read as they
# are, the others block by block.
SUPPORTED_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                   "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}

def gguf_metadata(path: str | os.PathLike) -> dict:
    """Every metadata key of the file but the tokenizer's long arrays (tokens, merges, types,
    scores), with its value; for a look at a file and for chat templates."""
    reader = _reader(path)
    long = {"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type",
            "tokenizer.ggml.scores"}
    return {k: (f"<{len(f.data)} entries>" if k in long else f.contents())
            for k, f in reader.fields.items() if not k.startswith("GGUF.")}


def _model_name(p: Path) -> str:
    return p.name[:-len(".gguf")] if p.name.lower().endswith(".gguf") else p.name


def _tensor_names(reader) -> dict:
    return {t.name: t for t in reader.tensors}


def read_gguf_config(path: str | os.PathLike, reader=None) -> dict:
    """The HF ``config.json`` dict the file's metadata describes (``model_type`` llama, qwen2
    or gemma3_text), for ``configs.config_from_hf``; a UserError naming the key for what has no
    counterpart here (another architecture, scaled or partial RoPE, experts, soft-capping, a
    layer pattern other than Gemma's)."""
    reader = reader or _reader(path)
    arch = _field(reader, "general.architecture")
    if arch in ("gemma", "gemma2", "gemma3n"):
        raise UserError(f"{path}: general.architecture={arch!r} is not supported; supported: "
                        f"{', '.join(SUPPORTED_ARCHITECTURES)} ({arch} differs from gemma3: "
                        + {"gemma": "no QK-norm nor sandwich norms",
                           "gemma2": "logit soft-capping, no QK-norm",
                           "gemma3n": "per-layer embeddings, AltUp and more"}[arch] + ")")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise UserError(f"{path}: general.architecture={arch!r} is not supported; supported: "
                        f"{', '.join(SUPPORTED_ARCHITECTURES)}")

    def need(key):
        v = _field(reader, f"{arch}.{key}")
        if v is None:
            raise UserError(f"{path}: metadata key {arch}.{key} is missing; a {arch} GGUF "
                            f"needs it")
        return v

    for key in ("expert_count", "expert_used_count"):
        if _field(reader, f"{arch}.{key}", 0):
            raise UserError(f"{path}: {arch}.{key}={_field(reader, f'{arch}.{key}')} is not "
                            f"supported: mixture-of-experts models are not implemented")
    scaling = _field(reader, f"{arch}.rope.scaling.type", "none")
    if scaling not in ("none", None):
        raise UserError(f"{path}: {arch}.rope.scaling.type={scaling!r} is not supported: only "
                        f"unscaled RoPE is implemented; scaled variants change the angles")
    d, n_heads = int(need("embedding_length")), int(need("attention.head_count"))
    n_kv = int(_field(reader, f"{arch}.attention.head_count_kv", n_heads))
    head_dim = int(_field(reader, f"{arch}.attention.key_length", d // n_heads))
    if int(_field(reader, f"{arch}.attention.value_length", head_dim)) != head_dim:
        raise UserError(f"{path}: {arch}.attention.value_length differs from key_length; "
                        f"heads here have one head_dim")
    rot = int(_field(reader, f"{arch}.rope.dimension_count", head_dim))
    if rot != head_dim:
        raise UserError(f"{path}: {arch}.rope.dimension_count={rot} is not supported: RoPE "
                        f"rotates every dimension of a head here ({head_dim})")
    tensors = _tensor_names(reader)
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    vocab = _field(reader, f"{arch}.vocab_size") or (len(tokens.data) if tokens else None)
    if vocab is None:
        vocab = int(tensors["token_embd.weight"].shape[1]) if "token_embd.weight" in tensors \
            else None
    if vocab is None:
        raise UserError(f"{path}: no vocabulary size ({arch}.vocab_size, tokenizer.ggml.tokens "
                        f"or token_embd.weight)")
    hf = {"model_type": _MODEL_TYPE[arch], "vocab_size": int(vocab), "hidden_size": d,
          "num_hidden_layers": int(need("block_count")), "num_attention_heads": n_heads,
          "num_key_value_heads": n_kv, "head_dim": head_dim,
          "intermediate_size": int(need("feed_forward_length")),
          "max_position_embeddings": int(_field(reader, f"{arch}.context_length", 2048)),
          "rms_norm_eps": float(need("attention.layer_norm_rms_epsilon")),
          "rope_theta": float(_field(reader, f"{arch}.rope.freq_base", 10000.0)),
          "hidden_act": "silu", "tie_word_embeddings": "output.weight" not in tensors}
    if arch == "llama":
        hf["attention_bias"] = "blk.0.attn_q.bias" in tensors
        hf["mlp_bias"] = "blk.0.ffn_up.bias" in tensors
    if arch == "gemma3":
        hf.update(_gemma3_config(path, reader, hf))
    return hf


def _gemma3_config(path, reader, hf: dict) -> dict:
    """Gemma 3's fields that its GGUF metadata holds (``gemma3.attention.sliding_window``,
    ``gemma3.rope.freq_base`` of the global layers) and those it leaves out, which llama.cpp's
    gemma3 graph hard-codes as transformers' Gemma3TextConfig does: the sliding layers' RoPE
    base 10,000, every 6th layer global, query_pre_attn_scalar = head_dim (d / heads for the
    27B model, 62 blocks, as llama.cpp computes it), no soft-capping, GELU (tanh)."""
    from bornbiased_jax.hf.config_rules import GEMMA3_LOCAL_THETA, GEMMA3_PATTERN

    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        v = _field(reader, f"gemma3.{key}")
        if v:
            raise UserError(f"{path}: gemma3.{key}={v} is not supported: logit soft-capping "
                            f"(Gemma 2's) is not implemented, and Gemma 3 has none")
    n = hf["num_hidden_layers"]
    pattern = _field(reader, "gemma3.attention.sliding_window_pattern", GEMMA3_PATTERN)
    if isinstance(pattern, list):  # per layer: True where the layer is sliding
        types = ["sliding_attention" if bool(x) else "full_attention" for x in pattern]
    elif isinstance(pattern, int) and not isinstance(pattern, bool) and pattern >= 1:
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention"
                 for i in range(n)]
    else:
        raise UserError(f"{path}: gemma3.attention.sliding_window_pattern={pattern!r} is not "
                        f"a layer pattern (a period or one flag per layer)")
    window = _field(reader, "gemma3.attention.sliding_window")
    if window is None:
        raise UserError(f"{path}: metadata key gemma3.attention.sliding_window is missing; a "
                        f"gemma3 GGUF needs it")
    d, heads = hf["hidden_size"], hf["num_attention_heads"]
    scalar = d // heads if n == 62 else hf["head_dim"]
    return {"hidden_activation": "gelu_pytorch_tanh", "sliding_window": int(window),
            "layer_types": types, "query_pre_attn_scalar": scalar,
            "rope_local_base_freq": GEMMA3_LOCAL_THETA,
            "final_logit_softcapping": None, "attn_logit_softcapping": None}


def unpermute_rope_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's ``permute`` of a LLaMA Q or K projection (rows, or a bias): within
    each of ``n_heads`` heads its rows [x_0, y_0, x_1, y_1, ...] (pairs rotated together) go
    back to HF's [x_0, x_1, ..., y_0, y_1, ...] (halves rotated together)."""
    half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def permute_rope_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's ``permute`` (the inverse of :func:`unpermute_rope_rows`), for writing
    GGUF files in tests."""
    half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, 2, half, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


# HF block tensor -> llama.cpp's name. One HF name means two things: LLaMA's
# post_attention_layernorm is the norm before the MLP (GGUF ffn_norm), Gemma's the norm after
# attention (post_attention_norm; its pre-MLP norm is pre_feedforward_layernorm).
_BLOCK_NAMES = (("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"),
                ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
                ("self_attn.o_proj", "attn_output"), ("mlp.gate_proj", "ffn_gate"),
                ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down"))
_LLAMA_NAMES = _BLOCK_NAMES + (("post_attention_layernorm", "ffn_norm"),)
_GEMMA3_NAMES = _BLOCK_NAMES + (
    ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm"),
    ("post_attention_layernorm", "post_attention_norm"),
    ("pre_feedforward_layernorm", "ffn_norm"), ("post_feedforward_layernorm", "post_ffw_norm"))


def _gguf_name(hf_name: str, kind: str = "llama") -> str:
    """The GGUF tensor name of an HF LLaMA/Qwen2 (or, with ``kind`` gemma3_text, Gemma 3)
    tensor name."""
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "lm_head.weight": "output.weight",
             "model.norm.weight": "output_norm.weight"}
    if hf_name in fixed:
        return fixed[hf_name]
    _, _, i, *rest = hf_name.split(".")
    rest = ".".join(rest)
    for hf, gg in _GEMMA3_NAMES if kind == "gemma3_text" else _LLAMA_NAMES:
        if rest.startswith(hf + "."):
            return f"blk.{i}.{gg}{rest[len(hf):]}"
    raise AssertionError(f"no GGUF name for {hf_name}")


def _dequantized(path, t) -> np.ndarray:
    """float32 numpy array of GGUF tensor ``t`` in torch's (out, in) order."""
    from gguf import quants

    kind = t.tensor_type.name
    if kind not in SUPPORTED_TYPES:
        raise UserError(f"{path}: tensor {t.name} has type {kind}, which is not supported; "
                        f"supported types: {', '.join(SUPPORTED_TYPES)}")
    shape = tuple(int(n) for n in reversed(t.shape))
    try:
        a = (np.asarray(t.data, np.float32) if kind in ("F32", "F16")
             else quants.dequantize(np.asarray(t.data), t.tensor_type))
        return np.asarray(a, np.float32).reshape(shape)
    except (ValueError, TypeError) as e:
        raise UserError(f"{path}: tensor {t.name} ({kind}, shape {shape}) does not decode "
                        f"({e}); the file is truncated or corrupt") from None


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
        return _check_file(p)  # a missing file: _reader's error
    if key not in _LAST_CHECKED:
        answer = _check_file(p)
        _LAST_CHECKED.clear()
        _LAST_CHECKED[key] = answer
    return _LAST_CHECKED[key]


def _check_file(p: Path):
    from bornbiased_jax.hf import _check_name_map, _listed
    from bornbiased_jax.hf.configs import config_from_hf
    from bornbiased_jax.hf.names import tensor_specs

    reader = _reader(p)
    hf = read_gguf_config(p, reader)
    try:
        cfg = config_from_hf(hf, name=_model_name(p))
    except UserError as e:
        raise UserError(f"{p}: {e}") from None
    kind = hf["model_type"]
    specs = tensor_specs(cfg, kind)
    _check_name_map(cfg, specs)
    tensors = _tensor_names(reader)
    want = {_gguf_name(s.hf_name, kind): s for s in specs}
    missing = [n for n in want if n not in tensors]
    if missing:
        raise UserError(f"{p}: tensor(s) missing from the file: {_listed(missing)}; the {kind} "
                        f"model its metadata describes needs them")
    extra = [n for n in tensors if n not in want]
    if extra:
        raise UserError(f"{p}: unexpected tensor(s) in the file: {_listed(extra)}; the {kind} "
                        f"model its metadata describes has no such parameters (rope_freqs "
                        f"means scaled RoPE, which is not implemented)")
    for n, s in want.items():
        shape = tuple(int(x) for x in reversed(tensors[n].shape))
        if shape != s.hf_shape:
            raise UserError(f"{p}: tensor {n} has shape {shape}, expected {s.hf_shape} for the "
                            f"{kind} model its metadata describes")
        if tensors[n].tensor_type.name not in SUPPORTED_TYPES:
            raise UserError(f"{p}: tensor {n} has type {tensors[n].tensor_type.name}, which is "
                            f"not supported; supported types: {', '.join(SUPPORTED_TYPES)}")
    return reader, cfg, kind, {n: (tensors[n], s) for n, s in want.items()}


def load_gguf(path: str | os.PathLike, dtype=jnp.float32) -> tuple[ModelConfig, dict]:
    """(config, params) of the GGUF file ``path``, as :func:`bornbiased_jax.hf.load_hf` gives
    them for an HF folder: the config named after the file (``shared_embedding=False``) and
    the parameter dict of ``model.init``'s structure, in ``dtype`` (float32 or bfloat16)."""
    from bornbiased_jax.hf import _dtype_name, _nest
    from bornbiased_jax.hf.names import to_ours

    p = Path(path)
    jdtype = _DTYPES[_dtype_name(dtype)]
    _, cfg, kind, want = _checked(p)
    flat = {}
    for n, (t, s) in want.items():  # one tensor at a time: decoded, sent, converted
        a = _dequantized(p, t)
        if kind == "llama" and (".attn_q." in n or ".attn_k." in n):
            a = unpermute_rope_rows(a, cfg.n_heads if ".attn_q." in n
                                    else cfg.resolved_n_kv_heads)
        if kind == "gemma3_text" and n.endswith("norm.weight"):
            a = a - np.float32(1)  # llama.cpp stores Gemma's gain 1 + w; our scale is w
        for path_, out in zip(s.paths, to_ours(s, jnp.asarray(a))):
            flat[path_] = out.astype(jdtype)
    return cfg, _nest(flat)


def gguf_token_strings(path: str | os.PathLike) -> list[str] | None:
    """The file's token strings by id (``tokenizer.ggml.tokens``), or None when it has none."""
    tokens = _field(_reader(path), "tokenizer.ggml.tokens")
    return None if tokens is None else list(tokens)


def check_gguf(path: str | os.PathLike) -> ModelConfig:
    """The config of the file, after every check :func:`load_gguf` makes before it decodes a
    tensor (metadata, tensor names, shapes and types), without decoding one."""
    return _checked(Path(path))[1]
