"""Run the SeedPrint experiments (with --run: figure13, table4a, seedprint_calibration,
seedprint_power, seedprint_trained, seedprint_confound; seedprint_trained needs the seed family,
``python -m experiments.seed_family --continued``, first) and rewrite RESULTS.md from the
committed records: the SeedPrint section's rows come from experiments/seedprint/claims.py,
the whole file from the one renderer (experiments/render.py).

    python -m experiments.seedprint_results            # rebuild RESULTS.md from the records
    python -m experiments.seedprint_results --run      # run the six experiments first
"""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments.common.cli import records_root, run_scripts

from experiments import EXPERIMENTS
from experiments import render

SCRIPTS = EXPERIMENTS["seedprint"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=["cpu", "paper"], default="cpu")
    ap.add_argument("--root", type=Path, default=Path("results/experiments"),
                    help="where the scripts write their JSON, markdown and figures")
    ap.add_argument("--records", type=Path, default=None,
                    help="committed records (default results/records; results/records/paper "
                         "with --scale paper)")
    ap.add_argument("--run", action="store_true", help="run the six experiments first")
    ap.add_argument("--results", type=Path, default=Path("RESULTS.md"))
    args = ap.parse_args()
    records = args.records or records_root(args.scale)
    if args.run:
        run_scripts(SCRIPTS, args.scale, args.root, records)
    if args.scale == "paper":
        print(f"records in {records}; RESULTS.md renders the CPU-scale records only")
        return
    text = render.write(args.results, records)
    print(render.sections(text).get("seedprint", ""))


if __name__ == "__main__":
    main()
