"""Edits of a model's vocabulary: embedding rows and LM-head columns, with the tokenizer
remapped alike (:func:`remap_strings`, :func:`remap_tokenizer_json`); where each new id came
from is :func:`vocab_origin`. Like :mod:`.shape_edits`, each takes a parameter dict and its
config and returns (config, new parameters); inputs are never modified.

  :func:`extend_vocab`     k new tokens, initialised at the mean embedding plus noise
                           (function-preserving on the old ids' logits);
  :func:`truncate_vocab`   the first ``keep`` ids kept;
  :func:`permute_vocab`    ids permuted, with the tokenizer remapped: the same function of text.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits.shape_edits import returns_jax, host_copy, numpy_rng


def _rows(params: dict, cfg: ModelConfig, index: np.ndarray, new=None) -> tuple[ModelConfig,
                                                                                dict]:
    """Embedding rows and LM-head columns re-indexed by ``index`` (old ids), then ``new`` (a
    function (V', d) arrays -> appended rows) where given."""
    p = host_copy(params)
    emb = p["embed"]["embedding"][index]
    head = p["lm_head"]["kernel"][:, index] if "lm_head" in p else None
    if new is not None:
        e_new, h_new = new(p["embed"]["embedding"], None if head is None else
                           p["lm_head"]["kernel"])
        emb = np.concatenate([emb, e_new])
        if head is not None:
            head = np.concatenate([head, h_new], axis=1)
    p["embed"]["embedding"] = emb
    if head is not None:
        p["lm_head"]["kernel"] = head
    return dataclasses.replace(cfg, vocab_size=len(emb)), p


@returns_jax
def extend_vocab(params: dict, cfg: ModelConfig, k: int, key) -> tuple[ModelConfig, dict]:
    """k new tokens after the V old ones, each embedding row (and head column) the mean of the
    old ones plus noise of a tenth of their std (a common initialisation of added tokens);
    the old ids' logits are unchanged."""
    if k < 1:
        raise UserError(f"extend_vocab adds k >= 1 tokens, got {k}")
    rng = numpy_rng(key)

    def new(emb, head):
        e = emb.mean(0) + 0.1 * emb.std() * rng.standard_normal((k, emb.shape[1]))
        h = None if head is None else (
            head.mean(1, keepdims=True) + 0.1 * head.std() * rng.standard_normal(
                (head.shape[0], k)))
        return e.astype(emb.dtype), None if h is None else h.astype(head.dtype)
    return _rows(params, cfg, np.arange(cfg.vocab_size), new)


@returns_jax
def truncate_vocab(params: dict, cfg: ModelConfig, keep: int) -> tuple[ModelConfig, dict]:
    """The first ``keep`` ids kept."""
    if not 1 <= keep <= cfg.vocab_size:
        raise UserError(f"keep 1..{cfg.vocab_size} ids, got {keep}")
    return _rows(params, cfg, np.arange(keep))


def vocab_permutation(cfg: ModelConfig, key) -> np.ndarray:
    """old id of each new id: a uniform permutation drawn from ``key``."""
    return numpy_rng(key).permutation(cfg.vocab_size)


@returns_jax
def permute_vocab(params: dict, cfg: ModelConfig, key) -> tuple[ModelConfig, dict]:
    """New id j is old id :func:`vocab_permutation`[j] (embedding rows and head columns moved
    together; with the tokenizer remapped alike, :func:`remap_strings`, the same function of
    text)."""
    return _rows(params, cfg, vocab_permutation(cfg, key))


def vocab_origin(cfg: ModelConfig, edit: str, key=None, **kw) -> np.ndarray:
    """For each id of the edited vocabulary, the old id it is (-1: a new token)."""
    V = cfg.vocab_size
    if edit == "extend":
        return np.concatenate([np.arange(V), np.full(kw["k"], -1)])
    if edit == "truncate":
        return np.arange(kw["keep"])
    if edit == "permute":
        return vocab_permutation(cfg, key)
    return np.arange(V)


def remap_strings(strings: list[str], old_of_new: np.ndarray) -> list[str]:
    """The token strings of the edited vocabulary: new id j reads ``strings[old_of_new[j]]``,
    a new token (-1) a string no old one has ('<|added_j|>')."""
    return [strings[o] if o >= 0 else f"<|added_{j}|>" for j, o in enumerate(old_of_new)]


def word_level_tokenizer(strings: list[str]):
    """A ``tokenizers`` word-level tokenizer whose id of each string is its index in
    ``strings``: enough to carry a vocabulary into an HF folder (``save_hf(tokenizer=...)``),
    so that the lineage tests align it by string (``vocab.align``)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {s: i for i, s in enumerate(strings)}
    unk = strings[0]
    tok = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tok


def remap_tokenizer_json(data: dict, old_of_new) -> dict:
    """A ``tokenizers`` JSON (as a dict) with its ids remapped like the vocabulary
    (``old_of_new``: for each new id the old one, -1 for a new token): model vocabulary and
    added tokens moved to their new ids, strings of dropped ids removed (with the merges that
    name them), new tokens added as '<|added_j|>'. Not modified in place."""
    import copy

    out = copy.deepcopy(data)
    new_of_old = {int(o): j for j, o in enumerate(old_of_new) if o >= 0}
    vocab = out["model"]["vocab"]
    out["model"]["vocab"] = {t: new_of_old[i] for t, i in vocab.items() if i in new_of_old}
    kept = set(out["model"]["vocab"])
    if "merges" in out["model"]:
        def pieces(m):
            return m.split(" ", 1) if isinstance(m, str) else list(m)
        out["model"]["merges"] = [m for m in out["model"]["merges"]
                                  if all(x in kept for x in pieces(m))
                                  and "".join(pieces(m)) in kept]
    added = [dict(t, id=new_of_old[t["id"]]) for t in out.get("added_tokens") or []
             if t["id"] in new_of_old]
    for j, o in enumerate(old_of_new):
        if o < 0:
            added.append({"id": j, "content": f"<|added_{j}|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False,
                          "special": True})
    out["added_tokens"] = added
    return out
