"""One model's pass over a comparison's inputs: its features and, where the matched test
runs, its MLP views, by the sweep engine (``sweep.run_probe``); ``compare.Comparison`` runs it
for BASE, BASE's initialisation and each suspect."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.defaults import MATCHED_MAX_T
from bornbiased_jax.fingerprint.methods import matched as M
from bornbiased_jax.fingerprint.runner.features import model_features
from bornbiased_jax.sources import LoadedModel


def one_pass(m: LoadedModel, s, gated: bool) -> bool:
    """Whether one forward pass gives both the features and the matched test's views."""
    return (gated and s.output == "normed" and s.seq_len <= MATCHED_MAX_T
            and m.cfg.attention != "attn0_full")


def features_only(m: LoadedModel, xs, s, progress: bool = False) -> np.ndarray:
    """The features of the inputs ``xs`` beyond the first leg's: the sweep engine's feature
    probe (``features.model_features``), the program that gives :func:`model_pass` the
    features of the sequences beyond the views' (so a comparison that stops early and one that
    reads every input agree bitwise)."""
    return model_features(m, xs, s.output, progress=progress)


def model_pass(m: LoadedModel, xs, s, gated: bool, progress: bool = False):
    """(features (n, d_out), the matched test's pre-activations or None) of one model on the
    comparison's inputs ``xs``, every forward pass by the sweep engine (``sweep.run_probe``).
    Where the matched test runs on the default 'normed' features and the sequences are no
    longer than the views (:data:`MATCHED_MAX_T`), one forward pass of each sequence gives
    both (``matched.features_and_preactivations``: the first ``matched_seqs`` sequences
    through the views probe, which reads the features beside the views, the rest through the
    feature probe); otherwise the features come from the feature probe (blockwise attention
    for long sequences) and the pre-activations from a second pass over the first sequences
    cut to :data:`MATCHED_MAX_T`."""
    if one_pass(m, s, gated):
        return M.features_and_preactivations(m.params, m.cfg, xs, n_views=s.matched_seqs,
                                             t_views=MATCHED_MAX_T, progress=progress,
                                             desc=f"features {m.label}")
    F = model_features(m, xs, s.output, progress=progress)
    pre = (M.preactivations(m.params, m.cfg, xs[:s.matched_seqs, :MATCHED_MAX_T])
           if gated else None)
    return F, pre
