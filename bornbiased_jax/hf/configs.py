"""HF ``config.json`` <-> :class:`ModelConfig`, by the family records of
:mod:`bornbiased_jax.architectures` (which list what each family adds, the keys it reads or
ignores, and how it is written back).

Everything a config says that changes the forward pass is either mapped or refused with a
:class:`UserError` naming the key and the family: unknown keys, RoPE types without an
implementation, partial rotary, MoE, quantised weights, cross-attention, GPT-2's
attention-scale variants, LLaMA biases on only some linears, activations the decoder does not
have. Keys that only matter for training (dropouts) or generation (token ids, caches) are
ignored, by name.

Imported configs have ``shared_embedding=False`` (a checkpoint's embeddings are its own) and
name their family (``architecture``), so that an export writes the same format.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from bornbiased_jax import architectures
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError

# model_type -> HF causal-LM class, of every registered family
ARCHITECTURES = {a.model_type: a.hf_class for a in architectures.FAMILIES}


def read_hf_config(src: str | os.PathLike | dict) -> dict:
    """The ``config.json`` dict of a model folder, of a path to the file itself, or ``src`` if
    it already is a dict."""
    if isinstance(src, dict):
        return src
    path = Path(src)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise UserError(f"{path}: no such file; an HF model folder needs a config.json "
                        f"(as written by save_pretrained)")
    try:
        d = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(d, dict):
        raise UserError(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


def family_of(hf_config: dict) -> architectures.Architecture:
    """The family record of an HF config dict (by its ``model_type``)."""
    return architectures.by_model_type(hf_config.get("model_type"))


def config_from_hf(hf_config: str | os.PathLike | dict, *, name: str | None = None,
                   source: str | os.PathLike | None = None) -> ModelConfig:
    """The :class:`ModelConfig` of an HF ``config.json`` (a dict, the file, or its folder).

    Raises ``UserError`` for unknown ``model_type``/``architectures`` and for any key whose
    value would change the forward pass in a way this decoder does not implement (or that the
    family's record does not know); the message names the file (``source``, or the path
    given) when there is one.
    """
    d = read_hf_config(hf_config)
    if source is None and not isinstance(hf_config, dict):
        path = Path(hf_config)
        source = path / "config.json" if path.is_dir() else path
    try:
        return family_of(d).config(d, name)
    except UserError as e:
        if source is None:
            raise
        raise UserError(f"{source}: {str(e).removeprefix('config.json: ')}") from None


def hf_architecture(cfg: ModelConfig) -> str:
    """The family (a registered name) whose HF class computes exactly what ``cfg`` computes,
    or a ``UserError`` saying why none does."""
    return architectures.of_config(cfg).name


def config_to_hf(cfg: ModelConfig, dtype_name: str = "float32") -> dict:
    """The HF ``config.json`` dict of ``cfg`` (see :func:`hf_architecture`); ``dtype_name`` is
    the weights' dtype as torch names it."""
    fam = architectures.of_config(cfg)
    head = {"architectures": [fam.hf_class], "model_type": fam.model_type,
            "vocab_size": cfg.vocab_size, "tie_word_embeddings": cfg.tie_embeddings,
            "initializer_range": cfg.init_std, "torch_dtype": dtype_name, "dtype": dtype_name,
            # Token ids are not part of ModelConfig: null rather than HF's per-class defaults
            # (GPT-2's 50256 lies outside most vocabularies trained here).
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    return {**head, **fam.to_hf(cfg)}
