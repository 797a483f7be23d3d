"""Run the SeedPrint experiments (figure13.py, table4a.py, seedprint_calibration.py,
seedprint_power.py; with --run) and rewrite RESULTS.md from the committed records: the SeedPrint
section's rows come from bornbiased_jax/studies/seedprint.py, the whole file from the one
renderer (bornbiased_jax/studies/render.py).

    python -m experiments.seedprint_results            # rebuild RESULTS.md from the records
    python -m experiments.seedprint_results --run      # run the four experiments first
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from experiments._common import records_root

from bornbiased_jax.studies import EXPERIMENTS, render

ROOT = Path(__file__).resolve().parents[1]  # the repository: scripts run as experiments.<name>

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
    ap.add_argument("--run", action="store_true", help="run the four experiments first")
    ap.add_argument("--results", type=Path, default=Path("RESULTS.md"))
    args = ap.parse_args()
    records = args.records or records_root(args.scale)
    if args.run:
        for name in SCRIPTS:
            rc = subprocess.call([sys.executable, "-m", f"experiments.{name}", "--scale",
                                  args.scale, "--out", str(args.root.resolve() / name),
                                  "--records", str(records.resolve())], cwd=ROOT)
            if rc:
                sys.exit(f"{name} failed with exit status {rc}")
    if args.scale == "paper":
        print(f"records in {records}; RESULTS.md renders the CPU-scale records only")
        return
    text = render.write(args.results, records)
    print(render.sections(text).get("seedprint", ""))


if __name__ == "__main__":
    main()
