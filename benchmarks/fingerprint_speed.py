"""How long `bornbiased fingerprint BASE SUSPECT...` takes, as a user runs it: the whole command
(a fresh Python process: imports, loading, features, the tests, writing the outputs), for the
default ('auto': for a gated MLP whose initialisation is known, the permutation test and the
matched test against BASE's initialisation, no null models), for each test alone, and for one
BASE against S suspects in one command (the default and the aligned test, whose K = 200 null
initialisations are built once for all suspects).

The command keeps its compiled programs in a persistent XLA cache (``bornbiased_jax.xla_cache``):
each row starts with an empty cache (the first run: what a new user waits), then times
``--repeats`` runs with the cache that run left (what every later run waits). Prints per row
the first run's wall time, the median wall time of the repeats (time.perf_counter around a
subprocess) and the command's own reported time, and the machine's load average before and
after the runs (timings on a loaded machine are not comparable); ``--save FILE`` writes the
same table as Markdown with the command line and the machine.

    python benchmarks/fingerprint_speed.py                       # two llama2-tiny inits
    python benchmarks/fingerprint_speed.py --suspects 20 --save benchmarks/results/fingerprint_speed_cpu.md
    python benchmarks/fingerprint_speed.py --base runs/a --suspect runs/b --repeats 3
    python benchmarks/fingerprint_speed.py --base M.gguf --tests auto \
        --suspect runs/smollm2/suspects/prune-width-25 runs/smollm2/suspects/scratch \
        --save benchmarks/results/fingerprint_speed_smollm2_cpu.md   # real 135M pairs
    python benchmarks/fingerprint_speed.py --plan-7b         # the plan for a 7B pair, printed

``--plan-7b`` prints, without loading anything, the plan ``bornbiased fingerprint`` prints for
two LLaMA-2-7B checkpoints (their HF config) on one 80 GB GPU in bfloat16 at the command's
defaults: parameters, memory held, forward work, n, and the matched leg's host memory and
correlation work.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = ["auto", "matched_init", "aligned", "permutation", "matched", "paper", "official",
         "calibrated"]


def one_run(base: str, suspects: list[str], test: str, extra: list[str],
            cache: str) -> tuple[float, float, float]:
    """(wall seconds of the process, seconds the command reports, CPU seconds it used: user +
    system, which other jobs on the machine inflate less than the wall time), with the XLA
    cache in folder ``cache``."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "bornbiased_jax.cli", "fingerprint", base, *suspects,
               "--test", test, "--no-progress", "--out", out, *extra]
        env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": cache}
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr}")
    m = re.search(r"\((\d+) s\)\s*$", done.stdout.strip())
    return wall, float(m.group(1)) if m else float("nan"), cpu


def many_suspects(suspect: str, count: int) -> list[str]:
    """``count`` suspects like ``suspect``: a preset's seeds from its own on, else the same
    source repeated."""
    m = re.fullmatch(r"(preset:[^@]+)@(\d+)", suspect)
    if m:
        return [f"{m.group(1)}@{int(m.group(2)) + i}" for i in range(count)]
    return [suspect] * count


# LLaMA-2-7B's config.json, the fields the plan reads (meta-llama/Llama-2-7b-hf)
LLAMA2_7B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
             "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
             "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
             "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
             "tie_word_embeddings": False, "initializer_range": 0.02}


def plan_7b(device=("NVIDIA H100 80GB HBM3", 80e9)) -> str:
    """The fingerprint command's plan for two LLaMA-2-7B checkpoints at its defaults."""
    import json

    from bornbiased_jax.defaults import MATCHED_MAX_T, MATCHED_SEQS
    from bornbiased_jax.fingerprint.runner import memory_plan
    from bornbiased_jax.fingerprint.runner.compare import default_n
    from bornbiased_jax.fingerprint.methods.matched import DROP
    from bornbiased_jax.hf.configs import config_from_hf

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(LLAMA2_7B))
        cfg = config_from_hf(Path(d), name="Llama-2-7b-hf")
    T = 64
    n = default_n(cfg, [cfg], T)
    rows = min(n, MATCHED_SEQS) * (min(T, MATCHED_MAX_T) - DROP)
    plan = memory_plan.make_plan(cfg, cfg, n, T, "bfloat16", device, matched_models=2,
                                 matched_rows=rows)
    return (f"two LLaMA-2-7B checkpoints, bornbiased fingerprint's defaults (n = {n}, T = {T}; "
            f"the any-pair verdict):\n{plan.describe()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="preset:llama2-tiny@0")
    ap.add_argument("--suspect", nargs="+", default=["preset:llama2-tiny@1"],
                    help="one or more suspects, each timed alone (a row per test and suspect)")
    ap.add_argument("--tests", nargs="+", default=TESTS, help="the one-suspect rows")
    ap.add_argument("--suspects", type=int, default=0,
                    help="also time BASE against this many suspects in one command (the "
                         "default test and aligned)")
    ap.add_argument("--many-tests", nargs="+", default=["auto", "aligned"],
                    help="the tests of the --suspects rows")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--save", type=Path, help="write the table as Markdown to this file")
    ap.add_argument("--plan-7b", action="store_true",
                    help="print the plan for a pair of LLaMA-2-7B checkpoints on one 80 GB GPU "
                         "and exit")
    ap.add_argument("extra", nargs="*", help="more fingerprint flags (after --)")
    args = ap.parse_args()
    if args.plan_7b:
        print(plan_7b())
        return
    load0 = os.getloadavg()[0]
    print(f"load average before: {load0:.2f} (1 min); {os.cpu_count()} CPUs")
    print(f"{'test':<12} {'suspect':<24} {'n':>3} {'first s':>8} {'median wall s':>14} "
          f"{'cpu s':>6} {'reported s':>11}  runs")
    rows = []
    plan = [(t, [sus]) for t in args.tests for sus in args.suspect]
    if args.suspects:
        plan += [(t, many_suspects(args.suspect[0], args.suspects)) for t in args.many_tests]
    for test, suspects in plan:
        with tempfile.TemporaryDirectory() as cache:
            first = one_run(args.base, suspects, test, args.extra, cache)[0]
            runs = [one_run(args.base, suspects, test, args.extra, cache)
                    for _ in range(args.repeats)]
        walls = [w for w, _, _ in runs]
        name = Path(suspects[0]).name if not suspects[0].startswith("preset:") else suspects[0]
        row = (test, name, len(suspects), first, statistics.median(walls),
               statistics.median(c for _, _, c in runs), statistics.median(r for _, r, _ in runs),
               walls)
        rows.append(row)
        print(f"{test:<12} {name:<24} {row[2]:>3} {first:>8.1f} {row[4]:>14.1f} {row[5]:>6.1f} "
              f"{row[6]:>11.0f}  " + " ".join(f"{w:.1f}" for w in walls), flush=True)
    load1 = os.getloadavg()[0]
    print(f"load average after: {load1:.2f}")
    if args.save:
        lines = [
            "# `bornbiased fingerprint`: wall time of the whole command", "",
            f"`python {' '.join(sys.argv)}`, on {platform.machine()} with {os.cpu_count()} "
            f"CPUs ({platform.platform()}), {time.strftime('%Y-%m-%d')}; load average "
            f"{load0:.2f} before the runs and {load1:.2f} after. BASE `{args.base}`; each "
            f"run a fresh process. 'first': the first run, with an empty XLA compilation "
            f"cache; then the median of {args.repeats} runs with the cache it left (the "
            f"command's persistent cache): their wall time, the CPU time they used (user + "
            f"system, over both cores) and the time the command reports (from its plan to its "
            f"last file).", "",
            "| --test | suspect | suspects | first run s | median wall s | median CPU s "
            "| reported s | runs (s) |",
            "|---|---|---:|---:|---:|---:|---:|---|"]
        lines += [f"| {t} | {name} | {n} | {f:.1f} | {w:.1f} | {c:.1f} | {r:.0f} | "
                  f"{' '.join(f'{x:.1f}' for x in ws)} |"
                  for t, name, n, f, w, c, r, ws in rows]
        from bornbiased_jax.files import write_text

        write_text(args.save, "\n".join(lines) + "\n")  # atomic
        print(f"wrote {args.save}")


if __name__ == "__main__":
    main()
