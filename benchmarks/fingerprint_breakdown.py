"""Where `bornbiased fingerprint BASE SUSPECT` spends its time: the command run in this process
with a timer around each of its steps (planning, loading, the forward passes, the matched test's
layer screen, layer choice and unit counts, the permutation test, the report and the files), so
that the wall time of ``benchmarks/fingerprint_speed.py`` can be read step by step. Timers nest
(the layer choice includes the unit matchings it runs); 'rest' is the wall time no step claims
(imports, tracing outside the steps, the table).

    python benchmarks/fingerprint_breakdown.py M.gguf runs/smollm2/suspects/prune-width-25 \
        runs/smollm2/suspects/scratch --save benchmarks/results/fingerprint_breakdown_smollm2_cpu.md

Each pair runs in a fresh process (``--one`` is that process's entry), with the command's
persistent compilation cache warm from a first, untimed run.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FP = "bornbiased_jax.fingerprint"
STEPS = [("plan", f"{FP}.runner.audit", "plan"),
         ("load", "bornbiased_jax.sources", "load_source"),
         ("forward (first sequences, views)", f"{FP}.runner.compare", "model_pass"),
         ("forward (the rest)", f"{FP}.runner.compare", "features_only"),
         ("vocabulary alignment", f"{FP}.runner.vocab", "align"),
         ("layer screen", f"{FP}.tests.unit_matching", "screen"),
         ("layer choice", f"{FP}.tests.unit_matching", "choose"),
         ("unit counts", f"{FP}.tests.unit_matching", "count_pairs"),
         ("permutation test", f"{FP}.tests.permutation", "from_context"),
         ("files", "bornbiased_jax.files", "write_artifacts")]


def one(argv: list[str]) -> dict:
    """Run the command in this process with timers; {step: seconds, 'total': ...}."""
    t0 = time.perf_counter()
    times: dict = {}

    def timed(label, f):
        @functools.wraps(f)
        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                times[label] = times.get(label, 0.0) + time.perf_counter() - t
        return g

    from bornbiased_jax import cli

    for label, mod, name in STEPS:
        m = importlib.import_module(mod)
        setattr(m, name, timed(label, getattr(m, name)))
    sys.argv = ["bornbiased", "fingerprint", *argv]
    try:
        cli.main()
    except SystemExit as e:
        if e.code:
            raise
    times["total"] = time.perf_counter() - t0
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("suspects", nargs="+")
    ap.add_argument("--save", type=Path)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args, extra = ap.parse_known_args()
    if args.one:
        with open(os.devnull, "w") as null:
            stdout, sys.stdout = sys.stdout, null
            try:
                times = one([args.base, *args.suspects, *extra])
            finally:
                sys.stdout = stdout
        print(json.dumps(times))
        return
    load0 = os.getloadavg()[0]
    rows = {}
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": cache}
        for s in args.suspects:
            cmd = [sys.executable, __file__, "--one", args.base, s, "--no-progress", "--out", out,
                   *extra]
            subprocess.run(cmd, env=env, check=True, capture_output=True)  # warms the cache
            done = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            rows[Path(s).name] = json.loads(done.stdout.strip().splitlines()[-1])
            print(Path(s).name, {k: round(v, 2) for k, v in rows[Path(s).name].items()},
                  flush=True)
    load1 = os.getloadavg()[0]
    if args.save:
        names = list(rows)
        lines = ["# `bornbiased fingerprint`: where the time goes", "",
                 f"`python {' '.join(sys.argv)}`, on {platform.machine()} with "
                 f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}; load average "
                 f"{load0:.2f} before and {load1:.2f} after. BASE `{args.base}`; seconds per "
                 f"step of one run in a fresh process with the compilation cache warm (timers "
                 f"nest: the layer choice includes the unit matchings it runs).", "",
                 "| step | " + " | ".join(names) + " |",
                 "|---|" + "---:|" * len(names)]
        for label in [s[0] for s in STEPS] + ["total"]:
            lines.append(f"| {label} | " + " | ".join(
                f"{rows[n].get(label, 0.0):.2f}" for n in names) + " |")
        from bornbiased_jax.files import write_text

        write_text(args.save, "\n".join(lines) + "\n")  # atomic
        print(f"wrote {args.save}")


if __name__ == "__main__":
    main()
