"""Float32 matrix-product precision, chosen per use and stated, not left to the backend.

On NVIDIA GPUs from Ampere on, XLA computes float32 matrix products in TF32 (a 10-bit mantissa,
relative error ~5e-4) unless full float32 is requested; on CPUs every setting is full float32.
The choices, as ``jax.default_matmul_precision`` names them:

  * ``"highest"``: full float32. The default of every probe (``bornbiased sweep``,
    ``fingerprint``, ``sinks``, ``theory``, the experiment scripts) and of the test suite: the
    probes take arg-maxes over |V| logits whose leaders can be near-tied, compare models by
    rank statistics, and the tests check float32 identities (1e-5 against ``transformers``);
  * ``"high"``: three bfloat16 passes per product, between the two (not measured here);
  * ``"default"``: the backend's own choice (TF32 on such GPUs). The default of
    ``bornbiased train``, where rounding noise is far below the gradient noise.

Measured on an NVIDIA H100 (jax 0.11.2, ``results/gpu/``): with "default", 40 of the test
suite's float32 comparisons failed, by ~1e-4 absolute on O(0.1) activations (e.g. the vmap /
map / loop sweep agreement and the 1e-5 parity with ``transformers``); with "highest" the
failures in the same test files fell from 48 to 13, 9 of which need four devices. A full-float32 Table-1 sweep of gpt2-rope-nano (2 seeds x 10,000 x 64
tokens) did not finish within 200 s there, where a TF32 sweep of 8 seeds x 512 x 256 tokens took
1.2 s after a 33 s compilation: "highest" can cost far more than its arithmetic on a GPU, and
``--matmul-precision default`` trades exactness for that speed.
"""

from __future__ import annotations

import jax

from bornbiased_jax.errors import UserError

PRECISIONS = ("highest", "high", "default")
PROBE_DEFAULT = "highest"
TRAIN_DEFAULT = "default"


def use(name: str) -> str:
    """Set the process's float32 matmul precision to ``name`` (one of ``PRECISIONS``) for every
    program traced from now on; returns it."""
    if name not in PRECISIONS:
        raise UserError(f"unknown matmul precision {name!r}; choose one of {PRECISIONS} "
                        f"(highest: full float32; high: bfloat16x3; default: the backend's "
                        f"choice, TF32 on NVIDIA GPUs)")
    jax.config.update("jax_default_matmul_precision", None if name == "default" else name)
    return name


def current() -> str:
    """The precision programs are traced with now ("default" when none was requested)."""
    return jax.config.jax_default_matmul_precision or "default"
