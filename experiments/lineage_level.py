"""The lineage verdict's level between two trained models, per MLP width and depth (beyond the
paper): train the level families (:mod:`experiments.lineage.level_families`) and measure the
matched leg's false-positive rate on every pair of unrelated seeds of each cell, the slack
fitted on half the seeds and judged on the other half (:mod:`experiments.lineage.level`);
the record is results/records/lineage_level/lineage_level.json, RESULTS.md's level table.

    python -m experiments.lineage_level --train                 # train (or resume) the cells
    python -m experiments.lineage_level --train --cells L2-F344 # one cell
    python -m experiments.lineage_level --measure               # measure every trained cell
    python -m experiments.lineage_level --print-commands        # their bornbiased train lines

The 32-seed family (cell L2-F176) is ``python -m experiments.seed_family``'s.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments.common.cli import add_records_flag, command_line, records_root, user_errors_exit
from experiments.lineage import level_families as LF
from experiments.common import seed_family as SF


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m experiments.lineage_level", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", type=Path, default=LF.RUNS_DIR)
    p.add_argument("--family-dir", type=Path, default=SF.RUNS_DIR,
                   help="where the 32-seed family (cell L2-F176) is trained")
    p.add_argument("--cells", nargs="+", choices=["L2-F176", *LF.CELLS],
                   default=None, help="the cells to train or measure (default: all, in order)")
    p.add_argument("--train", action="store_true", help="train (or resume) the cells")
    p.add_argument("--measure", action="store_true",
                   help="measure the cells (each kept in --cache as it finishes) and write the "
                        "record")
    p.add_argument("--cache", type=Path, default=Path("results/lineage_level/cache"),
                   help="per-cell pair statistics, read back by a rerun with the same settings")
    add_records_flag(p)
    p.add_argument("--print-commands", action="store_true",
                   help="print each cell's bornbiased train command and exit")
    args = p.parse_args(argv)
    cells = args.cells or ["L2-F176", *LF.CELLS]
    trainable = [c for c in cells if c in LF.CELLS]
    if args.print_commands:
        for c in trainable:
            print(LF.command(c, args.runs_dir))
        return
    if args.train:
        with user_errors_exit("lineage_level"):
            for c in trainable:
                print(f"{c}: {LF.ensure(c, args.runs_dir)}", flush=True)
    if args.measure:
        import time

        from experiments import render
        from experiments.lineage import level

        t0 = time.time()
        with user_errors_exit("lineage_level"):
            out = level.measure(cells, args.runs_dir, args.family_dir, args.cache)
        from bornbiased_jax import files

        run = files.run_record(command_line("lineage_level", argv), time.time() - t0,
                               experiment="lineage_level", scale="cpu",
                               settings=out["raw"]["settings"])
        root = args.records if args.records is not None else records_root("cpu")
        rec = render.save_record(root, "lineage_level", {"run": run, "records": out})
        print(f"wrote {rec}; default slack {out['summary']['default_slack']} units")


if __name__ == "__main__":
    main()
