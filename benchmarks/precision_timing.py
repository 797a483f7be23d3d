"""Where a float32 sweep's time goes, per matmul precision and XLA setting, and what each
precision changes in the token-preference probe's predictions.

For each variant (a precision of ``bornbiased_jax/precision.py`` plus optional ``XLA_FLAGS``) a
fresh Python process runs the probe of Table 1 over S seeds x N random sequences twice, and
reports from JAX's own compile events (``jax.monitoring``) and its own timers:

  * trace      = tracing Python to jaxprs (``/jax/core/compile/jaxpr_trace_duration``, summed),
  * lower      = jaxpr to StableHLO (``.../jaxpr_to_mlir_module_duration``),
  * compile    = XLA's backend compilation, GEMM autotuning and Triton fusions included
                 (``.../backend_compile_duration``; the sweep planner's small compilations of
                 the probe's working set included),
  * first call = wall time of the first sweep (all of the above, plus running it once),
  * steady     = the fastest of ``--repeats`` later sweeps (nothing compiled), with tokens/s
                 and model TFLOP/s (``bornbiased_jax.flops``, forward matmuls only),
  * agreement  = the share of the S x N predicted tokens equal to the reference variant's (the
                 first variant that ran in full float32, "highest"), and each seed's Table-1
                 row (top-1 id, its frequency, Bonferroni log10 p).

Autotuning's share shows as the compile-time difference between a variant and the same
precision with ``--xla_gpu_autotune_level=0``; a variant named ``...+cache`` reruns an earlier
one with the persistent compilation cache that the earlier one filled (what a later command on
the same machine would pay; only such a base variant has a cache, so no other variant's compile
time includes writing one). Compile times count the sweep's own programs, not those that made
its inputs. Each variant runs under ``--row-timeout`` seconds; one that does not
finish is reported with the stage it was stopped in and the compile events it finished, so a
slow stage is named even then. Rows are written (``--out``: precision_timing.json and .md, atomically) after every variant, and
no variant starts when fewer than its timeout's seconds of ``--budget`` are left. The exit
status is 1 when no variant ran to the end.

On a CPU every precision that runs is full float32 (agreement 100 %), and bf16x9 / tf32x3 are
refused by XLA's CPU backend; the point of the script is a GPU:

    python benchmarks/precision_timing.py --out results/campaign/precision-timing
    python benchmarks/precision_timing.py --preset llama2-tiny --seq-len 16 --num-seqs 32 \\
        --seeds 2 --variants highest default bf16x6 tf32x3       # a CPU smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bornbiased_jax import files  # noqa: E402
from bornbiased_jax.precision import PRECISIONS  # noqa: E402

EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
          "/jax/core/compile/backend_compile_duration": "compile"}
# Ordered so that a short window learns the most first: the backend's own choice (TF32, fast on
# the H100 before), full float32 without and with autotuning, the multi-pass algorithms that
# keep float32 accuracy on tensor cores, then the rest.
VARIANTS = ["default", "highest@autotune0", "highest", "bf16x6", "tf32x3", "bf16x9", "high",
            "bf16x3", "highest@notriton", "highest+cache"]
FLAG_SETS = {"autotune0": "--xla_gpu_autotune_level=0",
             "notriton": "--xla_gpu_enable_triton_gemm=false"}


def parse_variant(v: str) -> tuple[str, str, bool]:
    """'highest@autotune0' -> (precision, extra XLA flags, warm cache?)."""
    cached = v.endswith("+cache")
    base = v.removesuffix("+cache")
    prec, _, flags = base.partition("@")
    if prec not in PRECISIONS or (flags and flags not in FLAG_SETS):
        raise SystemExit(f"unknown variant {v!r}: PRECISION[@{'|'.join(FLAG_SETS)}][+cache] "
                         f"with PRECISION one of {PRECISIONS}")
    return prec, FLAG_SETS.get(flags, ""), cached


# ------------------------------------------------------------------------------ one variant
def worker(args) -> None:
    """Run one variant in this process; print JSON lines (events as they happen, then the row)."""
    import jax
    import numpy as np

    def emit(**kw):
        print(json.dumps(kw), flush=True)

    totals = {name: 0.0 for name in EVENTS.values()}

    def on_duration(event, duration, **_):
        if event in EVENTS:
            totals[EVENTS[event]] += duration
            emit(event=EVENTS[event], seconds=round(duration, 3))

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    from bornbiased_jax import precision
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.flops import forward_flops
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.token_preference import next_token_probe, summarize
    from bornbiased_jax.sweep import sweep

    prec, _, _ = parse_variant(args.worker)
    try:
        precision.use(prec)
    except UserError as e:
        emit(row=dict(status="refused", reason=str(e)))
        return
    cfg = get_preset(args.preset)
    probe = next_token_probe(cfg)
    seeds = list(range(42, 42 + args.seeds))
    xs = probe_inputs("tokens", cfg, args.num_seqs, args.seq_len)[:]
    before = dict(totals)  # making the inputs compiled programs too; they are not the sweep's
    emit(event="sweep_start", seconds=0.0)
    t0 = time.perf_counter()
    preds = np.asarray(sweep(probe, cfg, seeds, xs, progress=False))
    first = time.perf_counter() - t0
    compiled = {k: totals[k] - before[k] for k in totals}
    emit(event="first_call", seconds=round(first, 3))
    steady = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        np.asarray(sweep(probe, cfg, seeds, xs, progress=False))
        steady.append(time.perf_counter() - t0)
    best = min(steady)
    tokens = len(seeds) * args.num_seqs * args.seq_len
    flops = len(seeds) * args.num_seqs * forward_flops(cfg, args.seq_len, last_only=True)
    np.save(Path(args.preds_dir) / f"{args.worker}.npy", preds)
    dev = jax.devices()[0]
    emit(row=dict(
        status="ok", device=dev.device_kind, jax=jax.__version__,
        trace_s=round(compiled["trace"], 3), lower_s=round(compiled["lower"], 3),
        compile_s=round(compiled["compile"], 3), first_call_s=round(first, 3),
        steady_s=round(best, 4), tokens_per_s=round(tokens / best),
        model_tflops=round(flops / best / 1e12, 2),
        table1=[dict(seed=s, **{k: getattr(r, k) for k in ("top1_id", "top1_freq", "log10_p")})
                for s, r in ((s, summarize(preds[i], cfg.vocab_size, preset=args.preset,
                                           seed=s, seq_len=args.seq_len, input="tokens"))
                             for i, s in enumerate(seeds))]))


# ------------------------------------------------------------------------------ the driver
def run_variant(args, variant: str, preds_dir: Path, cache_dir: Path) -> dict:
    prec, flags, cached = parse_variant(variant)
    env = dict(os.environ)
    env.pop("JAX_DEFAULT_MATMUL_PRECISION", None)  # the variant says which
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["XLA_FLAGS"] = " ".join(x for x in (env.get("XLA_FLAGS", ""), flags) if x)
    base = variant.removesuffix("+cache")
    if f"{base}+cache" in args.variants:
        # a fresh, private persistent cache, filled by the base variant (whose compile time then
        # includes writing it) and read by its '+cache' rerun; no other variant has one
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache_dir / base.replace("@", "_"))
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
        env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    cmd = [sys.executable, __file__, "--worker", variant, "--preds-dir", str(preds_dir),
           "--preset", args.preset, "--seq-len", str(args.seq_len), "--num-seqs",
           str(args.num_seqs), "--seeds", str(args.seeds), "--repeats", str(args.repeats)]
    row = dict(variant=variant, precision=prec, xla_flags=flags, warm_cache=cached)
    events = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=args.row_timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        row.update(status="timeout", timeout_s=args.row_timeout)
    wall = time.perf_counter() - t0
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "row" in msg:
            row.update(msg["row"])
        elif "event" in msg:
            events.append(msg)
    if "status" not in row:
        row.update(status=f"failed (exit {proc.returncode})", stderr_tail=err[-2000:])
    row["process_wall_s"] = round(wall, 1)
    if row["status"] == "timeout":
        names = [e["event"] for e in events]
        sweep_events = events[names.index("sweep_start") + 1:] if "sweep_start" in names else []
        done = {}
        for e in sweep_events:
            if e["event"] != "first_call":
                done[e["event"]] = round(done.get(e["event"], 0) + e["seconds"], 3)
        row["reached"] = done  # the sweep's compile events finished in time, summed by stage
        row["stopped_in"] = (
            "the inputs, before the sweep" if "sweep_start" not in names else
            "the steady sweeps (compiled and run once)" if "first_call" in names else
            f"the first sweep, after {len(sweep_events)} compile events (compiling or running)")
    return row


def add_agreement(rows: list[dict], preds_dir: Path) -> None:
    import numpy as np

    ref = next((r for r in rows if r["status"] == "ok" and r["precision"] == "highest"), None)
    if ref is None:
        return
    a = np.load(preds_dir / f"{ref['variant']}.npy")
    for r in rows:
        f = preds_dir / f"{r['variant']}.npy"
        if r["status"] == "ok" and f.exists():
            r["agreement_vs"] = ref["variant"]
            r["agreement"] = float(np.mean(np.load(f) == a))


def markdown(rows: list[dict], settings: dict) -> str:
    lines = [f"Sweep: {settings['preset']}, {settings['seeds']} seeds x {settings['num_seqs']} "
             f"sequences x T = {settings['seq_len']}; each variant a fresh process with a cold "
             f"compilation cache (but '+cache'); limit {settings['row_timeout']} s per variant.",
             "", "| variant | status | trace s | lower s | compile s | first call s | steady s | "
             "tokens/s | model TFLOP/s | agreement with full float32 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["status"] == "ok":
            agree = f"{r['agreement']:.4%}" if "agreement" in r else "-"
            lines.append(f"| {r['variant']} | ok | {r['trace_s']} | {r['lower_s']} | "
                         f"{r['compile_s']} | {r['first_call_s']} | {r['steady_s']} | "
                         f"{r['tokens_per_s']:,} | {r['model_tflops']} | {agree} |")
        else:
            why = (f"stopped in {r.get('stopped_in')}; finished {r.get('reached')}"
                   if r["status"] == "timeout"
                   else r.get("reason", r.get("stderr_tail", ""))[-200:].replace("\n", " "))
            status = f"{r['status']}: {why}" if why else r["status"]
            lines.append(f"| {r['variant']} | {status} | | | | | | | | |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="gpt2-rope-nano")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--num-seqs", type=int, default=512)
    p.add_argument("--seeds", type=int, default=8, help="seeds 42, 43, ... (this many)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--variants", nargs="+", default=VARIANTS,
                   help=f"PRECISION[@{'|'.join(FLAG_SETS)}][+cache] (default: {VARIANTS})")
    p.add_argument("--row-timeout", type=float, default=120.0, help="seconds per variant")
    p.add_argument("--budget", type=float, default=540.0,
                   help="seconds in all; no variant starts with less than its timeout left")
    p.add_argument("--out", type=Path, default=Path("results/benchmarks/precision_timing"))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--preds-dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    for v in args.variants:
        parse_variant(v)
        if v.endswith("+cache") and v.removesuffix("+cache") not in args.variants:
            p.error(f"{v} reuses the cache of {v.removesuffix('+cache')}, which is not run")
    settings = {k: getattr(args, k) for k in ("preset", "seq_len", "num_seqs", "seeds",
                                              "repeats", "row_timeout")}
    rows: list[dict] = []
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        preds_dir, cache_dir = Path(tmp) / "preds", Path(tmp) / "cache"
        preds_dir.mkdir()
        for v in args.variants:
            left = args.budget - (time.perf_counter() - t_start)
            if left < args.row_timeout:
                rows.append(dict(variant=v, precision=parse_variant(v)[0],
                                 status=f"not run: {left:.0f} s of the budget left"))
                continue
            row = run_variant(args, v, preds_dir, cache_dir)
            rows.append(row)
            add_agreement(rows, preds_dir)
            print(json.dumps({k: row.get(k) for k in ("variant", "status", "compile_s",
                                                      "first_call_s", "steady_s",
                                                      "model_tflops", "agreement",
                                                      "reached")}), flush=True)
            files.write_json(args.out / "precision_timing.json", dict(settings=settings, rows=rows))
            files.write_text(args.out / "precision_timing.md", markdown(rows, settings))
    files.write_json(args.out / "precision_timing.json", dict(settings=settings, rows=rows))
    files.write_text(args.out / "precision_timing.md", markdown(rows, settings))
    print(markdown(rows, settings))
    return 0 if any(r["status"] == "ok" for r in rows) else 1  # nothing measured: a failure


if __name__ == "__main__":
    sys.exit(main())
