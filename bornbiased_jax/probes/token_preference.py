"""Extreme token preference at initialisation (paper Sec. 3, Table 1, Figure 1a, App. B.2).

For each seed and sequence length: feed N uniformly random sequences, record the arg-max token
at the last position (only the last position's logits are computed), count the predictions, and
test the top-1 count against the uniform null with the Bonferroni-corrected binomial test.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import jax.numpy as jnp
import numpy as np

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.keys import seed_list
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.probes.outputs import feature_probe
from bornbiased_jax.stats import bonferroni_log10_p
from bornbiased_jax.sweep import SplitProbe, run_probe, sweep

if TYPE_CHECKING:
    from bornbiased_jax.sources import LoadedModel

TOP_COUNTS = 100  # how many sorted counts a record keeps for the rank-frequency plot


@functools.lru_cache(maxsize=32)
def next_token_probe(cfg: ModelConfig) -> SplitProbe:
    """probe(params, x) -> the arg-max next token after sequence x (tokens (T,) or embeds (T, d)).

    The logits probe of ``probes.outputs`` with an arg-max: the blocks run per batch of
    sequences up to Norm_final(X^(L)) at the last position, the unembedding once per chunk
    (``sweep.SplitProbe``). Cached per config, so repeated sweeps reuse one program."""
    logits = feature_probe(cfg, "logits")
    return SplitProbe(logits.features,
                      lambda params, h_d: jnp.argmax(logits.head(params, h_d)).astype(jnp.int32))


@dataclasses.dataclass(frozen=True)
class TokenPreference:
    """One row of Table 1."""

    preset: str
    seed: int
    seq_len: int
    num_seqs: int
    vocab_size: int
    input: str
    top1_id: int
    top1_count: int
    top1_freq: float
    log10_p: float
    distinct_tokens: int
    top_counts: list[int]  # the TOP_COUNTS largest counts, descending (Figure 1a)
    top_ids: list[int] = dataclasses.field(default_factory=list)  # their token ids (ties: id)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def summarize(preds: np.ndarray, vocab_size: int, **meta) -> TokenPreference:
    """Table-1 statistics of one seed's N predicted token ids."""
    preds = np.asarray(preds).ravel()
    n = preds.size
    counts = np.bincount(preds, minlength=vocab_size)
    order = np.lexsort((np.arange(counts.size), -counts))[:TOP_COUNTS]  # ties: the smaller id
    top1 = int(order[0])
    k = int(counts[top1])
    return TokenPreference(
        vocab_size=vocab_size, num_seqs=n, top1_id=top1, top1_count=k, top1_freq=k / n,
        log10_p=bonferroni_log10_p(k, n, vocab_size), distinct_tokens=int((counts > 0).sum()),
        top_counts=[int(counts[i]) for i in order], top_ids=[int(i) for i in order], **meta)


def token_preference(cfg: ModelConfig, seeds: Iterable[int], seq_lens: Sequence[int],
                     num_seqs: int, *, input_kind: str = "tokens", probe_seed: int = 0,
                     progress: bool = False, state=None,
                     **sweep_kwargs) -> list[TokenPreference]:
    """Table 1 for one model family: a record per (seed, sequence length).

    The same N probe sequences (per length) are fed to every seed, as in App. B.2. ``state``:
    a folder in which each length's sweep saves its finished chunks (``STATE/<preset>-T<T>``,
    :mod:`bornbiased_jax.resume`), so that the same call resumes where it stopped.
    """
    seeds = seed_list(seeds)  # read once: a generator would be exhausted by the first length
    if num_seqs < 1:
        raise ValueError(f"num_seqs must be >= 1, got {num_seqs}")
    if not seq_lens:
        raise ValueError("give at least one sequence length")
    for T in seq_lens:
        model.check_seq_len(cfg, int(T))
    probe = next_token_probe(cfg)
    records = []
    for T in seq_lens:
        xs = probe_inputs(input_kind, cfg, num_seqs, int(T), probe_seed)
        if state is not None:
            sweep_kwargs.update(state=Path(state) / f"{cfg.name}-T{T}", state_identity={
                "probe": "next_token", "input": input_kind, "probe_seed": probe_seed})
        preds_SN = sweep(probe, cfg, seeds, xs, progress=progress,
                         desc=f"{cfg.name} T={T}", **sweep_kwargs)
        for s, preds in zip(seeds, preds_SN):
            records.append(summarize(preds, cfg.vocab_size, preset=cfg.name, seed=int(s),
                                     seq_len=int(T), input=input_kind))
    return records


def token_preference_of_models(models: Sequence[LoadedModel], seq_lens: Sequence[int],
                               num_seqs: int, *, input_kind: str = "tokens", probe_seed: int = 0,
                               seq_chunk: int | None = None, seq_batch: int | None = None,
                               memory_budget: int | None = None,
                               progress: bool = False) -> list[TokenPreference]:
    """Table 1 for loaded models (``sources.load_source``: trained runs, imports, single seeds):
    a record per (model, sequence length), on ``probe_inputs(input_kind, ...)`` with
    ``probe_seed``."""
    records = []
    for m in models:
        for T in seq_lens:
            xs = probe_inputs(input_kind, m.cfg, num_seqs, T, probe_seed)
            preds = run_probe(next_token_probe(m.cfg), m.cfg, m.params, xs,
                              seq_chunk=seq_chunk, seq_batch=seq_batch,
                              memory_budget=memory_budget, progress=progress,
                              desc=f"{m.label} T={T}")
            records.append(summarize(preds, m.cfg.vocab_size, preset=m.label, seed=m.seed,
                                     seq_len=int(T), input=input_kind))
    return records
