"""The matched leg's level along training (beyond the paper): train the long level cells
(:mod:`experiments.lineage.level_long`: same-data seeds with checkpoints at geometric steps, and
seeds trained on other text), measure every pair of their seeds at every kept checkpoint
(:mod:`experiments.lineage.level_long_measure`), and write the record
results/records/lineage_level/lineage_level_long.json, whose law of the slack in training length
(:mod:`experiments.lineage.level_long_law`) RESULTS.md's level section renders.

    python -m experiments.lineage_level_long --train            # every stage, resumed
    python -m experiments.lineage_level_long --train --cells L2-F344-long
    python -m experiments.lineage_level_long --measure          # the checkpoints trained so far
    python -m experiments.lineage_level_long --print-commands

Training is long (about 20 CPU-hours in all on a 2-core machine); every stage resumes from its
latest checkpoint, and --measure reads whatever checkpoints exist, so the record grows as the
cells do.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments.common.cli import add_records_flag, command_line, records_root, user_errors_exit
from experiments.lineage import level_long as LL

NAME = "lineage_level_long"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m experiments.lineage_level_long",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", type=Path, default=LL.RUNS_DIR)
    p.add_argument("--cells", nargs="+", choices=list(LL.CELLS), default=None,
                   help="the cells to train or measure (default: all, in the stages' order)")
    p.add_argument("--train", action="store_true", help="train (or resume) the stages")
    p.add_argument("--measure", action="store_true",
                   help="measure every kept checkpoint trained so far and write the record")
    p.add_argument("--cache", type=Path, default=Path("results/lineage_level/long-cache"),
                   help="per-checkpoint pair statistics, read back by a rerun")
    add_records_flag(p)
    p.add_argument("--print-commands", action="store_true",
                   help="print each stage's bornbiased train command and exit")
    args = p.parse_args(argv)
    if args.print_commands:
        for cell, stop in LL.STAGES:
            if not args.cells or cell in args.cells:
                print(LL.command(cell, args.runs_dir, stop))
        return
    if not (args.train or args.measure):
        p.error("nothing to do: give --train, --measure or --print-commands")
    with user_errors_exit("lineage_level_long"):
        if args.train:
            LL.train_stages(args.cells, args.runs_dir, log=lambda m: print(m, flush=True))
        if args.measure:
            import time

            from bornbiased_jax import files
            from experiments import render
            from experiments.lineage import level_long_measure as LM

            t0 = time.time()
            out = LM.measure(args.cells, args.runs_dir, args.cache)
            if not out["cells"]:
                from bornbiased_jax.errors import UserError

                raise UserError(f"no long cell has a kept checkpoint in {args.runs_dir} yet: "
                                f"train first (--train)")
            run = files.run_record(command_line(NAME, argv), time.time() - t0,
                                   experiment=NAME, scale="cpu", settings=out["settings"])
            root = args.records if args.records is not None else records_root("cpu")
            rec = render.save_record(root, NAME, {"run": run, "records": out})
            print(f"wrote {rec}")


if __name__ == "__main__":
    main()
