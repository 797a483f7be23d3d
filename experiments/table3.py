"""Table 3: MLP0, MLP0 o MLP0 and Attn0 o MLP0 with ReLU: mean pairwise cosine of last-token
outputs across sequences, its significance, and Propositions 2 and 4 (paper Sec. 4.3).

The measurement, table and figure are :func:`bornbiased_jax.theory.plots.table3`."""

import time

from experiments.common.cli import parse, write

from bornbiased_jax.theory import plots

NAME = "table3"

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, plots.CPU[NAME], plots.PAPER[NAME])
    t0 = time.time()
    rows, md, fig = plots.table3(s, progress=True)
    write(args, NAME, s, rows, md, fig, t0)
