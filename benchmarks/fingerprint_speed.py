"""How long `bornbiased fingerprint BASE SUSPECT` takes, as a user runs it: the whole command
(a fresh Python process: imports, loading, features, the tests, writing the outputs), for the
default ('auto': the aligned test, whose K = 200 null initialisations dominate, beside the
permutation test), for each of those alone and for each of the paper's tests.

Prints one row per test with the median wall time of ``--repeats`` runs (time.perf_counter
around a subprocess), the command's own reported time, and the machine's load average before
the runs (timings on a loaded machine are not comparable).

    python benchmarks/fingerprint_speed.py                       # two llama2-tiny inits
    python benchmarks/fingerprint_speed.py --base runs/a --suspect runs/b --repeats 3
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def one_run(base: str, suspect: str, test: str, extra: list[str]) -> tuple[float, float]:
    """(wall seconds of the process, seconds the command reports)."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "bornbiased_jax.cli", "fingerprint", base, suspect,
               "--test", test, "--no-progress", "--out", out, *extra]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    m = re.search(r"\((\d+) s\)\s*$", done.stdout.strip())
    return wall, float(m.group(1)) if m else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="preset:llama2-tiny@0")
    ap.add_argument("--suspect", default="preset:llama2-tiny@1")
    ap.add_argument("--tests", nargs="+",
                    default=["auto", "aligned", "permutation", "paper", "official",
                             "calibrated"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("extra", nargs="*", help="more fingerprint flags (after --)")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min); {os.cpu_count()} CPUs")
    print(f"{'test':<12} {'median wall s':>14} {'reported s':>11}  runs")
    for test in args.tests:
        runs = [one_run(args.base, args.suspect, test, args.extra)
                for _ in range(args.repeats)]
        walls = [w for w, _ in runs]
        print(f"{test:<12} {statistics.median(walls):>14.1f} "
              f"{statistics.median(r for _, r in runs):>11.0f}  "
              + " ".join(f"{w:.1f}" for w in walls), flush=True)


if __name__ == "__main__":
    main()
