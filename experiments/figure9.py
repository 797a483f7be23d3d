"""Figure 9 / Eq. 2: the standard deviation of the aggregated attention output o_i at each
position of a random pre-LayerNorm attention block (T = 32), vs the paper's 1/sqrt(i) and the
softmax-corrected curve (paper Sec. 4.4).

The measurement, table and figure are :func:`bornbiased_jax.theory.plots.figure9`."""

import time

from experiments.common.cli import parse, write

from bornbiased_jax.theory import plots

NAME = "figure9"

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, plots.CPU[NAME], plots.PAPER[NAME])
    t0 = time.time()
    rows, md, fig = plots.figure9(s, progress=True)
    write(args, NAME, s, rows, md, fig, t0)
