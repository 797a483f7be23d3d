"""Real checkpoints in and out: HF safetensors folders of GPT-2, LLaMA (with GQA), Qwen2,
GPT-NeoX (sequential blocks, full-width RoPE: the paper's GPT-2 with RoPE) and Gemma 3's text
decoder; llama.cpp GGUF files of LLaMA, Qwen2 and Gemma 3 in (:mod:`.gguf`, float and quantized
weights, dequantized).

    cfg, params = load_hf("path/to/Llama-2-7b-hf", dtype=jnp.bfloat16)
    out = model.forward(params, cfg, tokens_T, return_hidden=True)
    save_hf(cfg, params, "path/to/export")        # opens with AutoModelForCausalLM

No torch is involved: ``config.json`` is mapped by :mod:`.configs` (Gemma 3's part by
:mod:`.gemma3`), tensor names and layouts by
:mod:`.names`, and the weights are read memory-mapped, one tensor at a time, by
:mod:`.checkpoint`. Every problem with the folder (missing config or shard, corrupt file,
missing, extra or misshapen tensor, unsupported architecture or field) is a ``UserError``
that names the file, tensor or field.

``tests/test_hf.py`` checks logits and every hidden state against ``transformers`` on tiny
random models (``tests/fixtures/make_hf_fixtures.py``).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import architectures, model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf.checkpoint import (FLOAT_DTYPES, INDEX, SINGLE, SafetensorsFolder,
                                          write_safetensors)
from bornbiased_jax.hf.configs import (ARCHITECTURES, config_from_hf, config_to_hf,
                                       hf_architecture, read_hf_config)
from bornbiased_jax.hf.names import LM_HEAD, is_buffer, tensor_specs, to_hf, to_ours

__all__ = ["load_hf", "save_hf", "load_hf_tokenizer", "load_gguf", "load_gguf_tokenizer", "model_bos",
           "config_from_hf", "config_to_hf", "hf_architecture", "ARCHITECTURES"]

_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
_LIST = 8  # how many names an error message lists before "and N more"


def listed(names: list[str]) -> str:
    more = f" and {len(names) - _LIST} more" if len(names) > _LIST else ""
    return ", ".join(names[:_LIST]) + more


def checked_dtype_name(dtype) -> str:
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = repr(dtype)
    if name not in _DTYPES:
        raise UserError(f"dtype {name} is not supported; use one of {sorted(_DTYPES)}")
    return name


def expected_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """'/'-joined parameter path -> shape of ``model.init(cfg, key)``, allocating nothing."""
    tree = model.param_shapes(cfg)
    return {"/".join(k.key for k in path): tuple(leaf.shape)
            for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def nest(flat: dict[str, jax.Array]) -> dict:
    out: dict = {}
    for path, a in flat.items():
        *parents, leaf = path.split("/")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = a
    return out


def _file_names(names: list[str], family: str) -> dict[str, str]:
    """Canonical HF name -> name in the files: checkpoints saved from the base model lack the
    ``transformer.`` / ``model.`` prefix on everything but the head, which some families'
    files call by another name (GPT-NeoX's ``embed_out``)."""
    fam = architectures.get(family)
    prefix, alias, embed = fam.base_prefix, fam.head_alias, fam.embed_name
    strip = embed not in names and embed[len(prefix):] in names
    out = {(prefix + n if strip and n not in (LM_HEAD, alias) else n): n for n in names}
    if alias in out and LM_HEAD not in out:
        out[LM_HEAD] = out.pop(alias)
    return out


def check_name_map(cfg: ModelConfig, specs: list) -> None:
    """The name map gives exactly the parameters of ``model.init`` (else a bug, not bad input)."""
    # one trace for every tensor (a real model has hundreds; a trace each took seconds)
    outs = jax.eval_shape(lambda arrays: [to_ours(s, a) for s, a in zip(specs, arrays)],
                          [jax.ShapeDtypeStruct(s.hf_shape, jnp.float32) for s in specs])
    got = {p: tuple(o.shape) for s, out in zip(specs, outs) for p, o in zip(s.paths, out)}
    want = expected_shapes(cfg)
    if got != want:
        raise AssertionError(f"HF name map out of step with model.init: "
                             f"{sorted(set(got.items()) ^ set(want.items()))}")


def _check_checkpoint(ckpt: SafetensorsFolder, in_file: dict, specs: list, cfg: ModelConfig,
                      family: str, folder: Path) -> None:
    """UserError for missing, unexpected, misshapen or non-float tensors, or an untied head in
    a tied model; reads no tensor except a stored copy of a tied head."""
    fam = architectures.get(family)
    what = f"the {fam.hf_class} that {folder / 'config.json'} describes"
    missing = [s.hf_name for s in specs if s.hf_name not in in_file]
    if missing:
        raise UserError(f"{folder}: tensor(s) missing from the checkpoint: {listed(missing)}"
                        f"; {what} needs them")
    used = {in_file[s.hf_name] for s in specs}
    tied_head = cfg.tie_embeddings and LM_HEAD in in_file
    extra = [n for n in ckpt.names() if n not in used and not is_buffer(n)
             and not (tied_head and n == in_file[LM_HEAD])]
    if extra:
        raise UserError(f"{folder}: unexpected tensor(s) in the checkpoint: {listed(extra)}"
                        f"; {what} has no such parameters")
    for s in specs + ([specs[0]._replace(hf_name=LM_HEAD)] if tied_head else []):
        found, dtype = ckpt.shape(in_file[s.hf_name]), ckpt.dtype(in_file[s.hf_name])
        if found != s.hf_shape:
            raise UserError(f"{folder}: tensor {s.hf_name} has shape {found}, expected "
                            f"{s.hf_shape} for {what}")
        if dtype not in FLOAT_DTYPES:
            raise UserError(f"{folder}: tensor {s.hf_name} has dtype {dtype}; weights must be "
                            f"one of {FLOAT_DTYPES}")
    if tied_head and not np.array_equal(ckpt.get(in_file[LM_HEAD]),
                                        ckpt.get(in_file[fam.embed_name])):
        raise UserError(f"{folder}: {in_file[LM_HEAD]} differs from {fam.embed_name} "
                        f"although config.json says tie_word_embeddings=true")


def load_hf(path: str | os.PathLike, dtype=jnp.float32) -> tuple[ModelConfig, dict]:
    """(config, params) of the HF model folder ``path`` (``config.json`` and safetensors).

    Args:
      path: a folder as ``save_pretrained`` writes it: ``config.json`` and ``model.safetensors``
        or shards with ``model.safetensors.index.json``.
      dtype: float32 or bfloat16 (a dtype or its name), the dtype of the returned parameters
        whatever the file holds (float32, float16 or bfloat16).

    Returns:
      The :class:`ModelConfig` (named after the folder, ``shared_embedding=False``) and the
      parameter dict of ``model.init``'s structure, ready for ``model.forward``.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise UserError(f"{folder}: not a folder; give an HF model folder (config.json and "
                        f"model.safetensors)")
    jdtype = _DTYPES[checked_dtype_name(dtype)]
    hf = read_hf_config(folder)
    cfg = config_from_hf(hf, name=folder.resolve().name, source=folder / "config.json")
    kind = cfg.architecture  # the family that read config.json
    specs = tensor_specs(cfg, kind)
    check_name_map(cfg, specs)
    with SafetensorsFolder(folder) as ckpt:
        in_file = _file_names(ckpt.names(), kind)
        _check_checkpoint(ckpt, in_file, specs, cfg, kind, folder)
        flat = {}
        for s in specs:  # one tensor at a time: copied out of the mapped file, sent, converted
            for p, a in zip(s.paths, to_ours(s, jnp.asarray(ckpt.get(in_file[s.hf_name])))):
                flat[p] = a.astype(jdtype)
    return cfg, nest(flat)


def _shards(specs: list, itemsize: int, max_bytes: int) -> list[list]:
    """Consecutive groups of tensors of at most ``max_bytes`` each (a larger tensor alone)."""
    groups, size = [[]], 0
    for s in specs:
        n = math.prod(s.hf_shape) * itemsize
        if groups[-1] and size + n > max_bytes:
            groups.append([])
            size = 0
        groups[-1].append(s)
        size += n
    return groups


def save_hf(cfg: ModelConfig, params: dict, path: str | os.PathLike, *,
            overwrite: bool = False, tokenizer=None, extra_config: dict | None = None,
            max_shard_bytes: int = 5 * 10**9) -> Path:
    """Write ``params`` as an HF model folder that ``AutoModelForCausalLM`` opens.

    The folder gets ``config.json`` (``architectures``/``model_type`` from
    :func:`hf_architecture`, which refuses configs no HF architecture computes, e.g. Attn0 or
    RoPE with LayerNorm but no biases), ``model.safetensors`` in the parameters' dtype
    (float32 or bfloat16), and ``tokenizer.json`` if a ``tokenizers.Tokenizer`` is given.
    Token ids are written as null; ``extra_config`` (e.g. ``{"bos_token_id": 1}``) is merged
    into ``config.json`` last, for fields that ModelConfig does not hold. Weights beyond
    ``max_shard_bytes`` (5 GB, as ``save_pretrained``) are split into shards with a
    ``model.safetensors.index.json``; the host holds one shard's tensors at a time. The folder
    is written into a temporary sibling and renamed into place, so ``path`` never holds a
    partial export; an existing ``path`` is replaced only with ``overwrite=True``.
    """
    kind = hf_architecture(cfg)
    flat = {"/".join(k.key for k in p): a
            for p, a in jax.tree_util.tree_flatten_with_path(params)[0]}
    want = expected_shapes(cfg)
    got = {p: tuple(a.shape) for p, a in flat.items()}
    if got != want:
        bad = sorted(set(got) ^ set(want)) or [p for p in want if got[p] != want[p]]
        raise UserError(f"params do not match {cfg.name!r}: {listed(bad)} (missing, extra or "
                        f"misshapen; expected the structure of model.init(cfg, key))")
    dtypes = sorted({np.dtype(a.dtype).name for a in flat.values()})
    if len(dtypes) != 1:
        raise UserError(f"params mix dtypes {dtypes}; cast them to one of {sorted(_DTYPES)}")
    dtype_name = checked_dtype_name(dtypes[0])
    if not (isinstance(max_shard_bytes, int) and max_shard_bytes > 0):
        raise UserError(f"max_shard_bytes must be a positive integer, got {max_shard_bytes!r}")
    shards = _shards(tensor_specs(cfg, kind), np.dtype(dtypes[0]).itemsize, max_shard_bytes)

    dest = Path(path)
    if dest.exists() and not (overwrite and dest.is_dir()):
        raise UserError(f"{dest} exists; choose a new folder or pass overwrite=True "
                        f"(which replaces a folder, never a file)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp"))
    old = None  # the folder being replaced, moved aside until the new one is in place
    try:
        hf_config = {**config_to_hf(cfg, dtype_name), **(extra_config or {})}
        (tmp / "config.json").write_text(json.dumps(hf_config, indent=2))
        weight_map = {}
        for i, shard in enumerate(shards):
            f = (SINGLE if len(shards) == 1
                 else f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors")
            tensors = {(architectures.get(kind).head_alias or LM_HEAD) if s.hf_name == LM_HEAD
                       else s.hf_name:
                       to_hf(s, [np.asarray(flat[p]) for p in s.paths]) for s in shard}
            write_safetensors(tmp / f, tensors)
            weight_map.update(dict.fromkeys(tensors, f))
            del tensors
        if len(shards) > 1:
            total = sum(a.size * a.dtype.itemsize for a in flat.values())
            (tmp / INDEX).write_text(json.dumps(
                {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
        if tokenizer is not None:
            tokenizer.save(str(tmp / "tokenizer.json"))
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's 0700 would make the export private
        if dest.exists():
            old = dest.with_name(f".{dest.name}.{os.getpid()}.old")
            os.replace(dest, old)
        os.replace(tmp, dest)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and old.exists() and not dest.exists():
            os.replace(old, dest)  # the previous export comes back whole
        raise
    return dest


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def load_hf_tokenizer(path: str | os.PathLike):
    """The ``tokenizers.Tokenizer`` of the folder's ``tokenizer.json``, or None if it has none."""
    f = Path(path) / "tokenizer.json"
    if not f.is_file():
        return None
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(f))
    except Exception as e:  # tokenizers raises a bare Exception on malformed files
        raise UserError(f"{f}: not a tokenizers JSON file ({e})") from None


def model_bos(path: str | os.PathLike) -> tuple[bool, str | None, str]:
    """(adds, token, why) for a real model's tokenizer: whether it puts a beginning-of-sequence
    token before a text, that token's string, and where that was read. A GGUF file says it in
    ``tokenizer.ggml.add_bos_token`` (:func:`.gguf.gguf_bos`); an HF folder in its
    ``tokenizer_config.json`` (``add_bos_token`` and ``bos_token``), else in its
    ``tokenizer.json``'s post-processor (a template that begins with a special token). A folder
    that says nothing adds none."""
    from bornbiased_jax.hf.gguf import gguf_bos, is_gguf

    p = Path(path)
    if p.is_file() and is_gguf(p):
        adds, _, token = gguf_bos(p)
        return adds, token, f"{p.name}: tokenizer.ggml.add_bos_token"
    config, tok = p / "tokenizer_config.json", p / "tokenizer.json"
    try:
        tc = json.loads(config.read_text()) if config.is_file() else {}
        tj = json.loads(tok.read_text()) if tok.is_file() else {}
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{p}: its tokenizer files are not valid JSON ({e})") from None
    token = tc.get("bos_token")
    token = token.get("content") if isinstance(token, dict) else token
    if "add_bos_token" in tc:
        return bool(tc["add_bos_token"]) and token is not None, token, \
            f"{config.name}: add_bos_token"
    single = ((tj.get("post_processor") or {}).get("single") or [])
    first = single[0].get("SpecialToken", {}).get("id") if single and isinstance(
        single[0], dict) else None
    if first is not None:
        return True, first, f"{tok.name}: post_processor"
    return False, token, "no add_bos_token in the folder's tokenizer files"


def load_gguf(path: str | os.PathLike, dtype=jnp.float32) -> tuple[ModelConfig, dict]:
    """(config, params) of a llama.cpp GGUF file; see :func:`bornbiased_jax.hf.gguf.load_gguf`."""
    from bornbiased_jax.hf.gguf import load_gguf as _load

    return _load(path, dtype)


def load_gguf_tokenizer(path: str | os.PathLike):
    """The tokenizer of a llama.cpp GGUF file; see
    :func:`bornbiased_jax.hf.gguf.load_gguf_tokenizer`."""
    from bornbiased_jax.hf.gguf import load_gguf_tokenizer as _load

    return _load(path)
