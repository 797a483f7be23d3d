"""Figure 3's null through the model's own unembedding: the top-1 counts that N isotropic final
states give through the Table 2 / Figure 3 model's final LayerNorm and tied unembedding,
simulated R times (paper Sec. 4.1). Against it, not against uniform sampling over the
vocabulary, the Figure 3 row judges whether a top-1 count is a preference of the model. What
and how: experiments/initialisation/unembedding_null.py.

    python -m experiments.figure3_null                # the CPU-scale record's model and N
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from experiments.common.cli import parse, write

from experiments.initialisation import unembedding_null as U

NAME = "figure3_null"


def main(argv=None) -> None:
    args, s = parse(NAME, __doc__, U.CPU, U.PAPER, argv=argv)
    t0 = time.time()
    settings, rec = U.simulate(s)
    counts = np.asarray(rec["top1_counts"])
    values, freq = np.unique(counts, return_counts=True)
    md = ("| top-1 count of N | replicates |\n|---:|---:|\n"
          + "".join(f"| {v} | {f} |\n" for v, f in zip(values, freq))
          + f"\n{U.summary(rec)} ({settings['preset']}, N = {rec['num_seqs']:,}).\n")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(values, freq, color="tab:gray")
    ax.set_xlabel(f"top-1 count of N = {rec['num_seqs']:,} isotropic final states")
    ax.set_ylabel(f"replicates (of R = {rec['reps']})")
    ax.set_title(f"Figure 3's null through the unembedding ({settings['preset']})")
    write(args, NAME, settings, rec, md, fig, t0)


if __name__ == "__main__":
    main()
