"""Where does the baseline grow attention sinks at this scale? A grid of short training runs.

Cells (experiments/sinks/regime.py): Bigram-Backcopy on a standard-library file
(Guo et al.; 1-3 layers, one head, d = 64) and Vim's help text with and without a BOS token
(Gu et al.; llama2-tiny), weight decay 0.1 and 0.5, constant learning rate after warmup. Each
cell trains in RUNS/<cell> (resumable; finished and measured cells are skipped on a rerun), and
every kept checkpoint and the initialisation are measured: the sink rate per sample at the
paper's lengths that fit (eps 0.25) and in Gu et al.'s setting (T = 64, eps 0.3), the strongest
head's alpha^1, and for Bigram-Backcopy the copy accuracy (experiments/
sinks_regime_measure.py). A cell "grew sinks" when its last checkpoint's rates are above 0 by
2 SE at every length and Gu's rate rose above the initialisation's by 2 SE.

    nice -n 10 python -m experiments.sinks_regime                  # the CPU grid
    python -m experiments.sinks_regime --cells bbm-L1-wd0.1        # some cells only (the
                                                                   # others' saved results kept)
"""

import time
from pathlib import Path

from experiments.common.cli import parse, write

from experiments.sinks import regime as sinks_regime
from experiments.sinks.regime_measure import run_grid

NAME = "sinks_regime"
CPU = dict(runs_dir="runs/sinks-regime", grid="cpu")
PAPER = dict(runs_dir="runs/sinks-regime-paper", grid="paper")


def extra(p):
    p.add_argument("--runs", type=Path, default=None,
                   help="folder of the cells' run folders (default: runs/sinks-regime, "
                        "runs/sinks-regime-paper with --scale paper)")
    p.add_argument("--cells", nargs="+", default=None,
                   help="train and measure only these cells (default: the whole grid, in order); "
                        "the record keeps the other cells' earlier measurements (never "
                        "retrained)")


if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER, extra)
    t0 = time.time()
    grid = sinks_regime.check_grid(sinks_regime.CPU if s["grid"] == "cpu"
                                   else sinks_regime.PAPER)
    if args.cells:
        known = {c.name for c in grid}
        unknown = [c for c in args.cells if c not in known]
        if unknown:
            raise SystemExit(f"unknown cells {unknown}; the grid has {sorted(known)}")
    runs_dir = args.runs or Path(s["runs_dir"])
    records = run_grid(grid, runs_dir, only=args.cells, log=lambda m: print(m, flush=True))
    s = dict(s, runs_dir=str(runs_dir), cells=[c["name"] for c in records["cells"]])
    write(args, NAME, s, records, sinks_regime.markdown(records),
          sinks_regime.figure(records), t0)
