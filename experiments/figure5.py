"""Figure 5: ReLU vs tanh in MLP0 blocks (no LayerNorm, no residual; identical weights), with the
standard ReLU MLP block (LayerNorm + residual) for reference, against Proposition 2's recurrence
(paper Sec. 4.2).

The measurement, table and figure are :func:`bornbiased_jax.theory.plots.figure5`."""

import time

from experiments.common.cli import parse, write

from bornbiased_jax.theory import plots

NAME = "figure5"

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, plots.CPU[NAME], plots.PAPER[NAME])
    t0 = time.time()
    rows, md, fig = plots.figure5(s, progress=True)
    write(args, NAME, s, rows, md, fig, t0)
