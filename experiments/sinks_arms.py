"""Sec. 6.2's claims where the baseline grows sinks: the five arms, several seeds each.

In the regime the sink-regime grid found (Bigram-Backcopy on a standard-library file,
llama2-tiny with 2 layers and 1 head, weight decay 0.5, constant learning rate 3e-3 after 100
warmup steps, 3,000 steps of 16 x 128 characters; experiments/sinks/arms.py), every
arm -- baseline, Positional Amplification sqrt(i), Positional Attenuation sqrt(i/T) (T = 128, the
trained context), head-wise RMSNorm, and a sigmoid output gate (not from the paper) -- trains
seeds 0-3, then seeds 4-7, each group in one ``bornbiased train --seeds`` run on the same batches
in the same order (an arm's seeds are those of its groups that have been trained). Every
seed's checkpoints (every 250 steps, and step 0) are measured on the same 100 evaluation draws
per length: sink rates per sample at T = 32, 64, 128 (eps 0.25 and 0.3), Gu et al.'s setting,
held-out NLL and copy accuracy (experiments/sinks/arms_measure.py). Verdicts are
seed-level: 95 % t intervals over seeds, differences paired seed by seed.

    nice -n 10 python -m experiments.sinks_arms                # train (resumable) and measure
    python -m experiments.sinks_arms --arms baseline attenuation
    python -m experiments.sinks_arms --no-train                # measure finished runs only
                                                               # (an arm's unfinished groups
                                                               # are left out of it)

``--scale paper`` (a GPU): eight seeds, 3 layers, 10,000 steps, the same task.
"""

import time
from pathlib import Path

from experiments.common.cli import parse, user_errors_exit, write

from experiments import render
from experiments.sinks import arms as sinks_arms
from experiments.sinks.arms_measure import run_arms

NAME = "sinks_arms"
CPU = dict(runs_dir="runs/sinks-arms", grid="cpu")
PAPER = dict(runs_dir="runs/sinks-arms-paper", grid="paper")


def extra(p):
    p.add_argument("--runs", type=Path, default=None,
                   help="folder of the arms' run folders (default: runs/sinks-arms, "
                        "runs/sinks-arms-paper with --scale paper)")
    p.add_argument("--arms", nargs="+", default=None, choices=sinks_arms.ARM_NAMES,
                   help="train and measure only these arms, every seed group of each (default: all, "
                        "the baseline first); the record keeps the other arms' earlier "
                        "measurements (never retrained)")
    p.add_argument("--no-train", action="store_true",
                   help="measure finished runs only; do not train or resume any")
    p.add_argument("--results", type=Path, default=None,
                   help="also rewrite this RESULTS.md from the records (CPU scale)")


def main(argv=None) -> None:
    args, s = parse(NAME, __doc__, CPU, PAPER, extra, argv=argv)
    t0 = time.time()
    cells = sinks_arms.CPU if s["grid"] == "cpu" else sinks_arms.PAPER
    runs_dir = args.runs or Path(s["runs_dir"])
    records = run_arms(cells, runs_dir, only=args.arms, train_runs=not args.no_train,
                       log=lambda m: print(m, flush=True))
    if "baseline" not in records["arms"]:
        raise SystemExit(f"{NAME}: the baseline is not measured; train it first (without "
                         "--no-train, with baseline among --arms)")
    s = dict(s, runs_dir=str(runs_dir), cells=[c.name for c in cells])
    write(args, NAME, s, records, sinks_arms.markdown(records), sinks_arms.figure(records), t0)
    if args.results and args.scale == "cpu":
        print(render.sections(render.write(Path(args.results), args.records))
              .get("sinks_arms", ""))


if __name__ == "__main__":
    with user_errors_exit(NAME):
        main()
