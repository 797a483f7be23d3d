"""Where does the paper's lineage test hold? The false-positive rate of the paper's and the
released test on pairs of independent initialisations with Gaussian inputs, over width, depth,
initialisation and n (what and why: experiments/seedprint/confound.py). Features are
cached per cell under ``--out``/cache, so an interrupted sweep resumes where it stopped; the
report is rewritten after every cell.

    python -m experiments.seedprint_confound
"""

from __future__ import annotations

import time

from experiments.common.cli import parse, write

from experiments.seedprint import confound as SC

NAME = "seedprint_confound"


def main(argv=None) -> None:
    args, s = parse(NAME, __doc__, SC.CPU, SC.PAPER, argv=argv)
    t0 = time.time()
    records = []
    for d, layers, init in SC.cells(s):
        records += SC.measure_cell(s, d, layers, init, args.out / "cache")
        write(args, NAME, s, records, SC.markdown(records), SC.figure(records, s), t0)


if __name__ == "__main__":
    main()
