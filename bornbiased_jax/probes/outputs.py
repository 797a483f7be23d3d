"""A model's output at the last position of one input sequence, as a probe.

``feature_probe(cfg, output)`` is g(x) of SeedPrint (paper Sec. 6.1.1 and footnote 6) and the
first stage of Table 1's next-token probe:
  'normed'  the final hidden state after the final norm, Norm_final(X^(L)) at T (HF's
            last_hidden_state, which the SeedPrint authors' code reads),
  'prenorm' the final block's output X^(L) at T, before the final norm,
  'logits'  the next-token logits (|V| values): a ``SplitProbe`` whose head, the unembedding,
            the sweep engine runs once per call instead of once per batch of sequences.
"""

from __future__ import annotations

import functools

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.sweep import SplitProbe

OUTPUTS = ("normed", "prenorm", "logits")


def check_output(output: str) -> None:
    if output not in OUTPUTS:
        raise UserError(f"unknown output {output!r}; choose one of {OUTPUTS}")


def feature_of(out: model.ForwardOutput, output: str = "normed"):
    """g(x) from a forward pass of one sequence (``model.forward``'s output): 'normed' the
    final normed state at T, ``out.normed[-1]``; 'prenorm' X^(L) at T, ``out.hidden[-1, -1]``
    (a pass with ``return_hidden``). The one definition of the residual features, whichever
    pass computes them: the feature probe's, or the matched test's views pass
    (``probes.mlp_views``), which reads them beside its views."""
    if output == "normed":
        return out.normed[-1]  # (d,)
    if output == "prenorm":
        return out.hidden[-1, -1]
    raise UserError(f"feature_of reads the residual features ('normed', 'prenorm'), not "
                    f"{output!r}")


@functools.lru_cache(maxsize=32)
def feature_probe(cfg: ModelConfig, output: str = "normed"):
    """probe(params, x) -> g(x), (d_out,), for one model and one sequence (tokens or embeds).

    Cached per (config, output), so repeated sweeps reuse one compiled program."""
    check_output(output)
    if output == "prenorm":
        return lambda params, x: feature_of(model.forward_input(  # X^(L) at T
            params, cfg, x, return_hidden=True), "prenorm")

    def normed(params, x):
        # the last block at T only: nothing else of it reaches the feature
        return feature_of(model.forward_input(params, cfg, x, last_only=True))  # (d,)

    if output == "normed":
        return normed
    return SplitProbe(normed, lambda params, h_d: h_d @ model.unembedding(params, cfg))
