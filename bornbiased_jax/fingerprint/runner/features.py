"""SeedPrint features: g(x) for each of n random inputs, as an (n, d_out) matrix per model.

g(x) is the model's output at the last position of the input sequence, 'normed' (default),
'prenorm' or 'logits' (paper Sec. 6.1.1 and footnote 6): ``probes.outputs.feature_probe``.

Inputs come from ``probes.inputs.probe_inputs`` (the ``probe`` key stream, so every model of a
comparison sees the same rows):
  'gaussian' i.i.d. Gaussian input embeddings whose mean and std are those of the base model's
             embedding matrix (Algorithm 1; the released code estimates them the same way),
  'tokens'   uniform random token ids (Sec. 5 "setup of Table 1"; the released code's 7B setup).

Fresh initialisations are built and run many at a time by the sweep engine
(:func:`init_features`); a given model (a trained checkpoint, an import) by
``sweep.run_probe`` (:func:`model_features`, :func:`features_of`). The matched test's pass
(``fingerprint.methods.matched``) reads the same features beside its MLP views
(``probes.mlp_views``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.probes.outputs import feature_probe
from bornbiased_jax.sources import LoadedModel
from bornbiased_jax.sweep import run_probe, sweep


def model_features(m: LoadedModel, inputs, output: str = "normed", *,
                   seq_batch: int | None = None, progress: bool = False) -> np.ndarray:
    """(n, d_out) float32 features of one loaded model."""
    return features_of(m.cfg, m.params, inputs, output, seq_batch=seq_batch,
                       progress=progress, desc=f"features {m.label}")


def features_of(cfg: ModelConfig, params: dict, inputs, output: str = "normed", *,
                seq_batch: int | None = None, progress: bool = False,
                desc: str = "features") -> np.ndarray:
    """(n, d_out) float32 features of the model ``params`` of ``cfg``: ``feature_probe`` run
    by ``sweep.run_probe``."""
    check_inputs(cfg, inputs)
    if output != "logits":
        # The features end before the unembedding: one compiled program serves every model
        # of this architecture, whatever its name and whether its head is tied.
        cfg, params = model.head_free(cfg, params, "features")
    F = run_probe(feature_probe(cfg, output), cfg, params, inputs, seq_batch=seq_batch,
                  progress=progress, desc=desc)
    return np.asarray(F, dtype=np.float32)


def init_features(cfg: ModelConfig, seeds: Sequence[int], inputs, output: str = "normed", *,
                  group: int = 32, progress: bool = False,
                  **sweep_kwargs) -> Iterator[tuple[int, np.ndarray]]:
    """(seed, (n, d_out) features) of fresh initialisations ``model.init(cfg, key(seed))``,
    built and run by the sweep engine ``group`` seeds at a time (so that K x n x d_out floats
    never have to exist at once). ``state`` (with ``state_identity``, see ``sweep.sweep``): a
    folder in which each group saves its finished chunks, so that the pass resumes."""
    check_inputs(cfg, inputs)
    probe = feature_probe(cfg, output)
    seeds = [int(s) for s in seeds]
    if not seeds:
        return
    # Equal groups (the last padded with repeats, dropped) so that every sweep call has one
    # plan and the engine compiles once.
    n_groups = math.ceil(len(seeds) / group)
    size = math.ceil(len(seeds) / n_groups)
    state = sweep_kwargs.pop("state", None)
    for g0 in range(0, len(seeds), size):
        chunk = seeds[g0:g0 + size]
        padded = chunk + [chunk[-1]] * (size - len(chunk))
        if state is not None:  # each group resumes from its own folder of the state
            sweep_kwargs["state"] = Path(state) / f"group-{g0}"
        F = sweep(probe, cfg, padded, inputs, progress=progress, seed_chunk=size,
                  desc=f"inits {g0 + 1}-{g0 + len(chunk)} of {len(seeds)}", **sweep_kwargs)
        for s, F_nd in zip(chunk, np.asarray(F, dtype=np.float32)):
            yield s, F_nd


def check_inputs(cfg: ModelConfig, inputs) -> None:
    shape = tuple(inputs.shape)
    if len(shape) == 3 and shape[2] != cfg.d_model:
        raise UserError(f"Gaussian inputs of width {shape[2]} do not fit {cfg.name} "
                        f"(d_model = {cfg.d_model}); the two models need the same d_model")
    if len(shape) == 2 and getattr(inputs, "vocab_size", 0) > cfg.vocab_size:
        raise UserError(f"token inputs drawn from a vocabulary of {inputs.vocab_size} do not fit "
                        f"{cfg.name} (|V| = {cfg.vocab_size}); the models need the same "
                        f"vocabulary for --input tokens")
    model.check_seq_len(cfg, shape[1])
