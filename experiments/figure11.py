"""Figure 11 (Sec. 5, Finding 7): the seed-42 initialisation f against every checkpoint f' of
the seed-42 run (its own lineage) and of the seed-123 run (the uncorrelated baseline, same data
and order). M = the top-m dimensions of the init's mean output (m = 50, from the init only); for
each j in M, Kendall's tau over the n random inputs of (f(x)_j, f'(x)_j); mean +- std over M per
checkpoint. Both input kinds: random token ids (Sec. 5's "setup of Table 1") and Gaussian input
embeddings (Algorithm 1). The paper's claim: the seed-42 curve lies systematically above the
seed-123 baseline, the two distributions overlapping."""

import time

from experiments.common.cli import user_errors_exit, write
from experiments.lineage.command import parse_args, study_of

from experiments.lineage.tables import figure11, figure11_figure

NAME = "figure11"


def main(argv=None) -> None:
    args, s = parse_args(NAME, __doc__, argv)
    t0 = time.time()
    with user_errors_exit(NAME):
        records, md = figure11(study_of(args, s))
    write(args, NAME, s, records, md, figure11_figure(records), t0)


if __name__ == "__main__":
    main()
