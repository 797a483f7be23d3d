"""The matched test's MLP views as a probe (``fingerprint.methods.matched``).

A gated MLP's unit has two views, its gate and up pre-activations x_l W_gate and x_l W_up on
the normed MLP input x_l of layer l. ``mlp_views_probe(cfg, drop, t_views)`` reads them for
one sequence at positions ``drop``..``t_views`` - 1 of every layer, captured with Flax's
``capture_intermediates`` from one forward pass that runs every layer at every position, and
with ``features`` also the 'normed' SeedPrint feature of the sequence from the same pass
(``outputs.feature_of``, the feature probe's definition), so that one pass gives both. The
feature probe alone runs its last layer at T only, the views' pass at every position: the two
give the feature to float32 rounding, not bitwise.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.probes.outputs import feature_of


def _is_mlp_view(mdl, method: str) -> bool:
    from bornbiased_jax.layers import MLP

    return method == "__call__" and mdl.name in ("gate_proj", "up_proj") and isinstance(
        mdl.parent, MLP)


@functools.lru_cache(maxsize=16)
def mlp_views_probe(cfg: ModelConfig, drop: int, t_views: int, features: bool = True):
    """probe(params, x) -> {"views": per layer the pair (gate, up) of (t_views - drop, d_ff)
    pre-activations at positions drop..t_views - 1, "features": (d,) the normed feature (with
    ``features``)}, for one sequence x of at least ``t_views`` tokens (or input embeddings).
    Cached per argument, so the models of one architecture share one compiled program (give
    it a ``model.head_free`` config)."""
    if not (cfg.has_mlp and cfg.gated_mlp):
        raise ValueError(f"{cfg.name} has no gated MLP: no gate and up views")
    decoder = model.Decoder(cfg)

    def probe(params, x):
        tokens, embeds = (x, None) if jnp.ndim(x) == 1 else (None, x)
        # every position of every layer (last_only would run the last layer's MLP at T only)
        fwd, state = decoder.apply({"params": params}, tokens, embeds, False, False,
                                   capture_intermediates=_is_mlp_view)
        inter = state["intermediates"]
        mlp = [inter[f"layers_{l}"]["mlp"] for l in range(cfg.n_layers)]
        out = {"views": [(m["gate_proj"]["__call__"][0][drop:t_views],
                          m["up_proj"]["__call__"][0][drop:t_views]) for m in mlp]}
        if features:
            out["features"] = feature_of(fwd, "normed")
        return out

    return probe
