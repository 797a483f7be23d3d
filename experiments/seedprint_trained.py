"""SeedPrint on *trained* models: the four lineage tests (paper, official, calibrated,
permutation) side by side on the same pairs of the 32-seed family: false-positive rates on
unrelated trained pairs and power on true lineages (what is measured and how:
experiments/seedprint/trained.py). Needs the family and its continuations:

    python -m experiments.seed_family --continued
    python -m experiments.seedprint_trained
"""

from __future__ import annotations

import time
from pathlib import Path

from experiments.common.cli import parse, user_errors_exit, write

from experiments.common import seed_family
from experiments.seedprint import trained as ST

NAME = "seedprint_trained"


def main(argv=None) -> None:
    def extra(p):
        p.add_argument("--runs-dir", type=Path, default=seed_family.RUNS_DIR)

    args, s = parse(NAME, __doc__, ST.CPU, ST.PAPER, extra, argv)
    t0 = time.time()
    with user_errors_exit(NAME):
        records, figure_data = ST.measure(s, args.runs_dir,
                                          args.out / "cache" / f"features-{args.scale}.npz")
    write(args, NAME, s, records, ST.markdown(records), ST.figure(records, figure_data), t0)


if __name__ == "__main__":
    main()
