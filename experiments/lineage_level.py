"""The lineage verdict's level between two trained models, per MLP width and depth (beyond the
paper): train the level families (:mod:`experiments.lineage.level_families`) and measure the
any-pair verdict's false-positive rate on every pair of unrelated seeds of each cell.

    python -m experiments.lineage_level --train                 # train (or resume) the cells
    python -m experiments.lineage_level --train --cells L2-F344 # one cell
    python -m experiments.lineage_level --print-commands        # their bornbiased train lines
"""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments._common import user_errors_exit
from experiments.lineage import level_families as LF


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m experiments.lineage_level", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", type=Path, default=LF.RUNS_DIR)
    p.add_argument("--cells", nargs="+", choices=list(LF.CELLS), default=list(LF.CELLS),
                   help="the cells to train (default: all, in order)")
    p.add_argument("--train", action="store_true", help="train (or resume) the cells")
    p.add_argument("--print-commands", action="store_true",
                   help="print each cell's bornbiased train command and exit")
    args = p.parse_args(argv)
    if args.print_commands:
        for c in args.cells:
            print(LF.command(c, args.runs_dir))
        return
    if args.train:
        with user_errors_exit("lineage_level"):
            for c in args.cells:
                print(f"{c}: {LF.ensure(c, args.runs_dir)}", flush=True)


if __name__ == "__main__":
    main()
