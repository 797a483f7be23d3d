"""Random probe inputs, generated lazily row by row from the probe key stream.

Row i of a probe set is drawn from ``fold_in(key, i)``, so any slice of it is the same whatever
the chunking, and paper-scale Gaussian inputs (10,000 x 1,024 x 2,048 floats, 84 GB) never have to
exist at once. Both classes expose ``shape`` and numpy-style slicing of the first axis.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import fold_in_name, stream_key


class _LazyRows:
    shape: tuple[int, ...]

    def __init__(self, key: jax.Array, shape: tuple[int, ...]):
        if shape[0] < 1:
            raise ValueError(f"the number of sequences must be >= 1, got {shape[0]}")
        if shape[1] < 1:
            raise ValueError(f"the sequence length must be >= 1, got {shape[1]}")
        self.key, self.shape = key, tuple(int(s) for s in shape)
        self.ndim = len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def _row(self, key: jax.Array) -> jax.Array:
        raise NotImplementedError

    @functools.cached_property
    def _rows(self):
        return jax.jit(jax.vmap(lambda i: self._row(jax.random.fold_in(self.key, i))))

    def __getitem__(self, idx) -> np.ndarray:
        if not isinstance(idx, slice):
            raise TypeError("probe inputs support slicing of the first axis only")
        ids = np.arange(self.shape[0])[idx]
        return np.asarray(self._rows(jnp.asarray(ids, jnp.uint32)))

    def __array__(self, dtype=None, copy=None):
        a = self[:]
        return a if dtype is None else a.astype(dtype)


class RandomTokens(_LazyRows):
    """N sequences of T token ids, each uniform over the vocabulary (paper Sec. 3)."""

    def __init__(self, key: jax.Array, num_seqs: int, seq_len: int, vocab_size: int):
        super().__init__(key, (num_seqs, seq_len))
        self.vocab_size = vocab_size

    def _row(self, key):
        return jax.random.randint(key, (self.shape[1],), 0, self.vocab_size, dtype=jnp.int32)


class GaussianEmbeds(_LazyRows):
    """N sequences of T i.i.d. N(mean, std^2 I_d) vectors: the Gaussian inputs of Sec. 4.1, whose
    mean and std equal those of the embedding initialisation (0 and ``init_std``)."""

    def __init__(self, key: jax.Array, num_seqs: int, seq_len: int, d_model: int,
                 std: float, mean: float = 0.0):
        super().__init__(key, (num_seqs, seq_len, d_model))
        self.std, self.mean = std, mean

    def _row(self, key):
        return self.mean + self.std * jax.random.normal(key, self.shape[1:], jnp.float32)


INPUTS = ("tokens", "gaussian")


def check_kind(kind: str) -> None:
    if kind not in INPUTS:
        raise UserError(f"unknown input kind {kind!r}; choose one of {INPUTS}")


def probe_inputs(kind: str, cfg, num_seqs: int, seq_len: int, probe_seed: int = 0, *,
                 embedding: np.ndarray | None = None):
    """The probe set of a run: a lazy (N, T) token or (N, T, d) Gaussian probe set, keyed by
    (probe_seed, kind, T), so every model of a comparison and every seed of a sweep sees the
    same rows.

    ``kind`` 'tokens': ids uniform over ``cfg.vocab_size``; 'gaussian': i.i.d. N(0, init_std^2)
    input embeddings, or, given ``embedding`` (V, d), a model's embedding matrix, with its mean
    and std (SeedPrint's Algorithm 1)."""
    check_kind(kind)
    if num_seqs < 1:
        raise UserError(f"the number of sequences must be >= 1, got {num_seqs}")
    if not 1 <= seq_len <= cfg.max_seq_len:
        raise UserError(f"sequence length {seq_len} is outside [1, {cfg.max_seq_len}] "
                        f"(the context of {cfg.name})")
    key = fold_in_name(stream_key(probe_seed, "probe"), f"{kind}/T={seq_len}")
    if kind == "tokens":
        return RandomTokens(key, num_seqs, seq_len, cfg.vocab_size)
    mean, std = 0.0, cfg.init_std
    if embedding is not None:
        e = np.asarray(embedding, dtype=np.float64)
        mean, std = float(e.mean()), float(e.std())
    return GaussianEmbeds(key, num_seqs, seq_len, cfg.d_model, std=std, mean=mean)
