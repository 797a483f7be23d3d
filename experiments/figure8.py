"""Figure 8 / Proposition 5: intra-sequence cosine after each of L stacked attention blocks,
standard causal softmax attention (pre-LayerNorm, W_V, W_O, no residual) vs Attn0, for T = 16 and
T = 512, against the exact finite-T Attn0 closed form (paper Sec. 4.4).

The measurement, table and figure are :func:`bornbiased_jax.theory.plots.figure8`."""

import time

from experiments.common.cli import parse, write

from bornbiased_jax.theory import plots

NAME = "figure8"

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, plots.CPU[NAME], plots.PAPER[NAME])
    t0 = time.time()
    rows, md, fig = plots.figure8(s, progress=True)
    write(args, NAME, s, rows, md, fig, t0)
