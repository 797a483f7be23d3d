"""Extreme token preference at initialisation (paper Sec. 3, Table 1, Figure 1a, App. B.2).

For each seed and sequence length: feed N uniformly random sequences, record the arg-max token
at the last position (only the last position's logits are computed), count the predictions, and
test the top-1 count against the uniform null with the Bonferroni-corrected binomial test.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
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
from bornbiased_jax.sweep import SplitProbe, probe_state, run_probe, sweep, sweep_state

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


@dataclasses.dataclass
class Pass:
    """One (model, sequence length) of Table 1: a sweep of a preset's ``seeds``, or one loaded
    ``model`` (``sources.load_source``) through :func:`~bornbiased_jax.sweep.run_probe`, on
    the N probe sequences of ``probe_inputs(input_kind, cfg, N, T, probe_seed)``. ``name`` is
    its state's sub-folder in a state folder: ``<preset>-T<T>``, or ``model-<label>-<hash of
    the label>-T<T>`` for a loaded model."""

    cfg: ModelConfig
    T: int
    num_seqs: int
    input_kind: str
    probe_seed: int
    seeds: list[int] | None = None
    model: LoadedModel | None = None

    @property
    def name(self) -> str:
        if self.model is None:
            return f"{self.cfg.name}-T{self.T}"
        label = re.sub(r"[^A-Za-z0-9._-]+", "_", self.model.label).strip("._")[-60:]
        digest = hashlib.sha256(self.model.label.encode()).hexdigest()[:8]
        return f"model-{label}-{digest}-T{self.T}"

    @property
    def identity(self) -> dict:
        """What fixes the pass's outputs besides its model and inputs (the engines add
        those)."""
        return {"probe": "next_token", "input": self.input_kind, "probe_seed": self.probe_seed}

    def inputs(self):
        return probe_inputs(self.input_kind, self.cfg, self.num_seqs, self.T, self.probe_seed)

    def open_state(self, root: str | Path, engine: dict, allow_version_change: bool = False):
        """The pass's state in ``root / name`` (``sweep.sweep_state`` or ``probe_state``),
        refused (``resume.StateMismatch``) when it was saved with other settings."""
        folder = Path(root) / self.name
        if self.model is None:
            return sweep_state(folder, self.cfg, self.seeds, self.inputs(),
                               state_identity=self.identity,
                               allow_version_change=allow_version_change, **engine)
        return probe_state(folder, self.cfg, self.model.params, self.inputs(),
                           state_identity=self.identity,
                           allow_version_change=allow_version_change, **_one_model(engine))

    def run(self, engine: dict, state=None, progress: bool = False) -> list[TokenPreference]:
        """The pass's records: one per seed (a preset) or one (a loaded model). ``engine``:
        the sweep engine's plan settings (a loaded model takes ``seq_chunk``, ``seq_batch``
        and ``memory_budget``); ``state``: its store from :meth:`open_state`, or None."""
        xs = self.inputs()
        if self.model is None:
            preds_SN = sweep(next_token_probe(self.cfg), self.cfg, self.seeds, xs,
                             progress=progress, desc=f"{self.cfg.name} T={self.T}",
                             state=state, state_identity=self.identity, **engine)
            return [summarize(preds, self.cfg.vocab_size, preset=self.cfg.name, seed=int(s),
                              seq_len=self.T, input=self.input_kind)
                    for s, preds in zip(self.seeds, preds_SN)]
        m = self.model
        preds = run_probe(next_token_probe(m.cfg), m.cfg, m.params, xs, progress=progress,
                          desc=f"{m.label} T={self.T}", state=state,
                          state_identity=self.identity, **_one_model(engine))
        return [summarize(preds, m.cfg.vocab_size, preset=m.label, seed=m.seed,
                          seq_len=self.T, input=self.input_kind)]


def _one_model(engine: dict) -> dict:
    """The plan settings that a single model's probe takes (it has no seeds to batch)."""
    return {k: engine[k] for k in ("seq_chunk", "seq_batch", "memory_budget") if k in engine}


def preset_passes(cfg: ModelConfig, seeds: Iterable[int], seq_lens: Sequence[int],
                  num_seqs: int, *, input_kind: str = "tokens",
                  probe_seed: int = 0) -> list[Pass]:
    """Table 1's passes of one model family: a sweep of ``seeds`` per sequence length."""
    seeds = seed_list(seeds)  # read once: a generator would be exhausted by the first length
    if num_seqs < 1:
        raise ValueError(f"num_seqs must be >= 1, got {num_seqs}")
    if not seq_lens:
        raise ValueError("give at least one sequence length")
    for T in seq_lens:
        model.check_seq_len(cfg, int(T))
    return [Pass(cfg, int(T), num_seqs, input_kind, probe_seed, seeds=seeds) for T in seq_lens]


def model_passes(models: Sequence[LoadedModel], seq_lens: Sequence[int], num_seqs: int, *,
                 input_kind: str = "tokens", probe_seed: int = 0) -> list[Pass]:
    """Table 1's passes of loaded models: one per (model, sequence length)."""
    return [Pass(m.cfg, int(T), num_seqs, input_kind, probe_seed, model=m)
            for m in models for T in seq_lens]


def open_states(passes: Sequence[Pass], root: str | Path, engine: dict, *,
                allow_version_change: bool = False) -> list:
    """Every pass's state under ``root``, opened before any work, so that a state saved with
    other settings is refused before anything is computed: one ``resume.StateMismatch`` that
    names each differing sub-folder and what differs in it (its ``kind``: "versions" when only
    the versions differ, else "run", or "format" for a folder that is no state)."""
    from bornbiased_jax import resume

    stores, bad = [], []
    try:
        for p in passes:
            try:
                stores.append(p.open_state(root, engine, allow_version_change))
            except resume.StateMismatch as e:
                bad.append((p.name, e))
    except BaseException:
        close_states(stores)
        raise
    if not bad:
        return stores
    close_states(stores)
    kinds = {e.kind for _, e in bad}
    kind = "format" if "format" in kinds else "versions" if kinds == {"versions"} else "run"
    diffs = [f"{name}: {d}" for name, e in bad for d in e.differences]
    what = "other versions" if kind == "versions" else "other settings"
    raise resume.StateMismatch(
        f"the state in {root} was saved by a run with {what}; it differs in: "
        + "; ".join(diffs), Path(root), kind, diffs)


def close_states(stores) -> None:
    for st in stores or []:
        if st is not None:
            st.close()


def run_passes(passes: Sequence[Pass], engine: dict, *, state: str | Path | None = None,
               progress: bool = False,
               allow_version_change: bool = False) -> list[TokenPreference]:
    """The records of ``passes``, in order. With ``state``, every pass's state is opened in
    ``state / pass.name`` before the first pass runs (:func:`open_states`), so that the same
    call resumes where it stopped."""
    stores = (open_states(passes, state, engine, allow_version_change=allow_version_change)
              if state is not None else [None] * len(passes))
    try:
        return [r for p, st in zip(passes, stores) for r in p.run(engine, st, progress)]
    finally:
        close_states(stores)


def token_preference(cfg: ModelConfig, seeds: Iterable[int], seq_lens: Sequence[int],
                     num_seqs: int, *, input_kind: str = "tokens", probe_seed: int = 0,
                     progress: bool = False, state=None, allow_version_change: bool = False,
                     **sweep_kwargs) -> list[TokenPreference]:
    """Table 1 for one model family: a record per (seed, sequence length).

    The same N probe sequences (per length) are fed to every seed, as in App. B.2. ``state``:
    a folder in which each length's sweep saves its finished chunks (``STATE/<preset>-T<T>``,
    :mod:`bornbiased_jax.resume`), so that the same call resumes where it stopped; every
    length's state is checked before the first length runs. ``sweep_kwargs``: the sweep
    engine's plan settings.
    """
    passes = preset_passes(cfg, seeds, seq_lens, num_seqs, input_kind=input_kind,
                           probe_seed=probe_seed)
    return run_passes(passes, sweep_kwargs, state=state, progress=progress,
                      allow_version_change=allow_version_change)


def token_preference_of_models(models: Sequence[LoadedModel], seq_lens: Sequence[int],
                               num_seqs: int, *, input_kind: str = "tokens", probe_seed: int = 0,
                               seq_chunk: int | None = None, seq_batch: int | None = None,
                               memory_budget: int | None = None, progress: bool = False,
                               state=None,
                               allow_version_change: bool = False) -> list[TokenPreference]:
    """Table 1 for loaded models (``sources.load_source``: trained runs, imports, single seeds):
    a record per (model, sequence length), on ``probe_inputs(input_kind, ...)`` with
    ``probe_seed``. ``state``: as for :func:`token_preference` (sub-folders
    ``model-<label>-<hash>-T<T>``; the parameters' SHA-256 is part of each state's identity)."""
    passes = model_passes(models, seq_lens, num_seqs, input_kind=input_kind,
                          probe_seed=probe_seed)
    engine = dict(seq_chunk=seq_chunk, seq_batch=seq_batch, memory_budget=memory_budget)
    return run_passes(passes, engine, state=state, progress=progress,
                      allow_version_change=allow_version_change)
