"""Held-out perplexity of a language model: exp(mean next-token NLL) over windows of text, with
the standard error of the log-perplexity (the windows' NLLs as the sample), per window kept so
that two models can be compared window by window (paired)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax.probes.sinks import metric as sinks_metric
from bornbiased_jax.stats import mean_se
from bornbiased_jax.training.step import loss_fn


@functools.partial(jax.jit, static_argnums=1)
def _window_nll(params, cfg, windows):
    """Mean next-token NLL of each window [B, T + 1] (compiled once per config and shape, the
    parameters an argument, so every checkpoint of a run reuses it)."""
    return jax.vmap(lambda w: loss_fn(params, cfg, w[None], False))(windows)


def perplexity(params, cfg, ids: np.ndarray | None, n: int, T: int, seed: int,
               bos: int | None = None, windows=None) -> dict:
    """exp(mean NLL) over ``n`` random windows of T + 1 tokens of ``ids`` (with ``bos``: BOS +
    T text tokens, as a ``train --bos`` run's blocks), or over ``windows`` (n, T + 1) when
    given, and the SE of log-ppl."""
    win = (sinks_metric.bos_windows(ids, T + 1, n, seed=seed, bos=bos) if windows is None
           else np.asarray(windows))
    nll = np.concatenate([np.asarray(_window_nll(params, cfg, jnp.asarray(win[i:i + 16])))
                          for i in range(0, n, 16)]).astype(np.float64)
    return {"ppl": float(np.exp(nll.mean())), "log_ppl": float(nll.mean()),
            "log_ppl_se": mean_se(nll)[1], "windows": n, "T": T,
            "nll_per_window": nll.round(5).tolist()}
