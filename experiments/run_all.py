"""Regenerate every Sec. 3-4 artifact, then RESULTS.md: for each claim of every study the paper's
value, ours and a verdict, computed from the committed records (results/records/<study>/).

    python -m experiments.run_all                  # CPU scale, about 75 minutes on 2 cores (below)
    python -m experiments.run_all --scale paper    # on a GPU
    python -m experiments.run_all --no-run         # only rebuild RESULTS.md from the records
    python -m experiments.run_all --no-run --import results/experiments
                                                   # first copy saved <name>/<name>.json records

Each script runs as ``python -m experiments.<name>`` from the repository root and writes its
record to results/records/<study>/<name>.json. At CPU scale the thirteen records' run.wall_seconds
under results/records/initialisation/ sum to 4,487 s (Figure 2 + Finding 2.2: 2,070 s of it),
measured on a shared 2-core CPU. RESULTS.md is written by one renderer,
:mod:`experiments.render`, from the pure claim functions of experiments/
(each verdict's rule is in its docstring) and from the GPU runs' outputs under results/gpu/; a
row or section whose record is missing says so, with the command that measures it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments.common.cli import records_root, run_scripts

from experiments import EXPERIMENTS
from experiments import render

SCRIPTS = EXPERIMENTS["initialisation"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu")
    p.add_argument("--root", type=Path, default=Path("results/experiments"),
                   help="where the scripts write their JSON, markdown and figures")
    p.add_argument("--records", type=Path, default=None,
                   help="committed records (default results/records; results/records/paper "
                        "with --scale paper)")
    p.add_argument("--no-run", action="store_true", help="only rebuild RESULTS.md")
    p.add_argument("--import", dest="import_from", type=Path, metavar="DIR",
                   help="first copy the records saved under DIR/<name>/<name>.json")
    p.add_argument("--results", type=Path, default=Path("RESULTS.md"))
    args = p.parse_args()
    records = args.records or records_root(args.scale)
    if args.import_from:
        print("imported:", ", ".join(render.import_records(args.import_from, records)) or "nothing")
    if not args.no_run:
        run_scripts(SCRIPTS, args.scale, args.root, records)
    if args.scale == "paper":
        print(f"records in {records}; RESULTS.md renders the CPU-scale records only")
        return
    print(render.write(args.results, records))


if __name__ == "__main__":
    main()
