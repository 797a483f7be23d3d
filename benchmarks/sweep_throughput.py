"""Throughput of the seed sweep: tokens/s, fraction of the dense-matmul rate, peak memory.

For each seed-batching strategy, a fresh Python process runs the token-preference probe over
S seeds x N random sequences (after one untimed warm-up sweep with the same shapes, so that
compilation is excluded) ``--repeats`` times and reports, for the fastest repeat (and, for the
fraction of the matmul rate, also for the median repeat),

  * tokens/s        = S * N * T / wall time of the sweep (parameter init included),
  * model FLOP/s    = forward matmul FLOPs (``bornbiased_jax.flops``) / wall time,
  * of matmul       = model FLOP/s over this process's float32 matmul rate (2048^2 on a CPU,
                      8192^2 on an accelerator, in the current matmul precision: TF32 on NVIDIA
                      GPUs unless "highest"), the best of 5 runs before and 5 after the sweeps
                      (the same best-of rule for both); on an accelerator each row also prints
                      the bfloat16 rate, the peak device memory and the planner's estimate,
  * peak RSS        = the process's maximum resident set size (getrusage).

Shared cloud machines drift by 10-20 % from minute to minute; best-of timings on both sides of
the ratio keep it comparable between runs.

``--many-seeds K1 K2 ...`` also sweeps each of those seed counts (``--many-seeds-seqs``
sequences per seed, the auto plan), each in a fresh process after an untimed warm-up sweep of one
chunk, and prints per seed count the planner's seed chunk and chunk count, the resident set
before the sweep, the sweep's own peak (VmHWM reset after the warm-up), the resident set after
each chunk (lowest and highest) and the process's peak (compilation included). Each call builds
its seeds' parameters inside its compiled loop, so the sweep's footprint is that of one call and
neither peak grows with the seed count. Measured on the 2-core CPU with
``--seq-len 16 --strategies --many-seeds 64 256 1000`` (gpt2-rope-cpu, 16 sequences per seed,
6 seeds per call): sweep peak 659 / 664 / 692 MB for 64 / 256 / 1,000 seeds (resident set
before the sweep ~478 MB). When a chunk's parameters were built by one call and read by another
(13-14 seeds per call then), the stacked chunk (1.0 GB) and XLA's copy of it for the seed loop
(1.0 GB) were released by the runtime tens of milliseconds after the chunk's last call
returned; whenever the next chunk's allocation came first, two chunks coexisted, so the more
chunks, the likelier a higher peak (2.4-2.8 / 3.4 / 3.6 GB for the same three rows).

    python benchmarks/sweep_throughput.py                       # CPU default preset
    python benchmarks/sweep_throughput.py --seq-len 16 --strategies --many-seeds 64 256 1000
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from rss import chunk_trace, peak_rss_mb, reset_peak, rss_mb, run_child


def matmul_rate(n: int | None = None, repeats: int = 5, dtype: str = "float32") -> float:
    """Best-of-``repeats`` FLOP/s of an n x n matmul in ``dtype`` (float32 products in the
    current ``jax.default_matmul_precision``: TF32 on NVIDIA GPUs unless "highest"); n = 2048
    on a CPU, 8192 on an accelerator."""
    import jax

    if n is None:
        n = 2048 if jax.devices()[0].platform == "cpu" else 8192
    a = jax.random.normal(jax.random.key(0), (n, n), dtype)
    f = jax.jit(lambda x, y: x @ y)
    f(a, a).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f(a, a).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def child(args) -> None:
    """One measurement in this process; prints one JSON line."""
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.flops import forward_flops
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.token_preference import next_token_probe
    from bornbiased_jax.sweep import plan_sweep, sweep

    import jax

    cfg = get_preset(args.preset)
    strategy, _, mb = args.child.partition(":")
    kw = dict(strategy=strategy, map_batch=int(mb) if mb else None, seq_chunk=args.seq_chunk,
              seq_batch=args.seq_batch, seed_chunk=args.seed_chunk)
    seeds = list(range(args.seeds))
    T, N = args.seq_len, args.num_seqs
    probe = next_token_probe(cfg)
    plan = plan_sweep(cfg, len(seeds), N, T, probe=probe, row_shape=(T,), row_dtype="int32",
                      **kw)  # the plan sweep() makes
    rate = matmul_rate()
    xs = probe_inputs("tokens", cfg, N, T)[:]  # generated outside the timed region
    t0 = time.perf_counter()
    sweep(probe, cfg, seeds[:plan.seed_chunk], xs[:plan.seq_chunk], **kw)  # compiles
    compile_s = time.perf_counter() - t0
    walls = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        sweep(probe, cfg, seeds, xs, **kw)
        walls.append(time.perf_counter() - t0)
    wall = min(walls)
    flops = len(seeds) * N * forward_flops(cfg, T, last_only=True)
    rate = max(rate, matmul_rate())
    dev = jax.devices()[0]
    accel = {}
    if dev.platform != "cpu":
        # The device's own rates (float32 as the sweep ran it, and bfloat16), its peak memory
        # and the planner's estimate of one call's footprint on one device.
        from bornbiased_jax.sweep import build_bytes, probe_working_set
        seed_dev = plan.n_devices // plan.seq_devices
        local_seqs = plan.seq_chunk // plan.seq_devices
        # the batch mode the call runs: all of a device's sequences vmapped, or batches
        sb = plan.seq_batch if plan.seq_batch < local_seqs else -plan.seq_batch
        ws = probe_working_set(cfg, probe, (T,), "int32", sb)
        local_seeds = plan.seed_chunk // seed_dev
        par = {"vmap": local_seeds, "map": min(plan.map_batch, local_seeds),
               "loop": 1}[plan.strategy]
        fixed, per_seq = ws or (0, 0)
        stats = dev.memory_stats() or {}
        accel = dict(device=dev.device_kind, bf16_matmul_flops_per_s=matmul_rate(dtype="bfloat16"),
                     peak_device_bytes=stats.get("peak_bytes_in_use"),
                     planner_bytes_per_device=local_seeds * build_bytes(cfg)
                     + par * (fixed + per_seq * local_seqs),
                     precision=str(jax.config.jax_default_matmul_precision))
    print(json.dumps(dict(**accel,
        strategy=args.child, seeds=len(seeds), num_seqs=N, seq_len=T, seed_chunk=plan.seed_chunk,
        seq_chunk=plan.seq_chunk, seq_batch=plan.seq_batch, map_batch=plan.map_batch, wall_s=wall,
        warmup_s=compile_s, tokens_per_s=len(seeds) * N * T / wall, model_flops_per_s=flops / wall,
        median_model_flops_per_s=flops / statistics.median(walls), walls_s=walls,
        matmul_flops_per_s=rate, peak_rss_mb=peak_rss_mb())))


def many_child(args) -> None:
    """One sweep of ``--seeds`` seeds with the auto plan; prints one JSON line."""
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.token_preference import next_token_probe
    from bornbiased_jax.sweep import plan_sweep, sweep

    cfg = get_preset(args.preset)
    seeds, T, N = list(range(args.seeds)), args.seq_len, args.num_seqs
    probe = next_token_probe(cfg)
    xs = probe_inputs("tokens", cfg, N, T)[:]
    plan = plan_sweep(cfg, len(seeds), N, T, probe=probe, row_shape=(T,), row_dtype="int32")
    sweep(probe, cfg, seeds[:plan.seed_chunk], xs[:plan.seq_chunk])  # compiles, untimed
    before, warm_peak = rss_mb(), peak_rss_mb()  # resetting the high-water mark loses it
    reset = reset_peak()
    t0 = time.perf_counter()
    with chunk_trace() as trace:
        sweep(probe, cfg, seeds, xs)
    wall = time.perf_counter() - t0
    after = [r for r, _ in trace]
    print(json.dumps(dict(
        seeds=len(seeds), num_seqs=N, seq_len=T, seed_chunk=plan.seed_chunk,
        seq_chunk=plan.seq_chunk, chunks=len(trace), rss_before_mb=before,
        sweep_peak_mb=peak_rss_mb() if reset else None,  # None: VmHWM could not be reset
        process_peak_mb=max(warm_peak, peak_rss_mb()),  # compilation and warm-up included
        rss_after_chunk_min_mb=min(after), rss_after_chunk_max_mb=max(after),
        live_arrays_after_chunk_max=max(n for _, n in trace), wall_s=wall,
        rss_after_each_chunk_mb=after)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="gpt2-rope-cpu")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--num-seqs", type=int, default=512)
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--seed-chunk", type=int, default=None)
    p.add_argument("--seq-chunk", type=int, default=None)
    p.add_argument("--seq-batch", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3,
                   help="timed sweeps per strategy; the table shows the best and the median")
    p.add_argument("--strategies", nargs="*", default=["vmap", "map:1", "map:2", "map:4", "loop"],
                   help="vmap, loop, or map:BATCH (none: skip the throughput table)")
    p.add_argument("--many-seeds", type=int, nargs="*", default=[],
                   help="also sweep each of these seed counts and report their peak memory")
    p.add_argument("--many-seeds-seqs", type=int, default=16,
                   help="sequences per seed in the --many-seeds sweeps")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child == "many":
        return many_child(args)
    if args.child:
        return child(args)

    def run(strategy: str, extra: list[str]) -> dict:
        cmd = [__file__, "--child", strategy, "--preset", args.preset,
               "--seq-len", str(args.seq_len)] + extra
        for flag, value in (("--seq-chunk", args.seq_chunk), ("--seq-batch", args.seq_batch),
                            ("--seed-chunk", args.seed_chunk)):
            if value:
                cmd += [flag, str(value)]
        return run_child(cmd)

    if args.strategies:
        print(f"preset {args.preset}, T={args.seq_len}, N={args.num_seqs}, {args.seeds} seeds; "
              f"token-preference probe (last-position logits)")
        print(f"{'strategy':>9} {'seed_chunk':>10} {'seq_chunk':>9} {'seq_batch':>9} {'tokens/s':>10} "
              f"{'GFLOP/s':>8} {'matmul':>7} {'of matmul':>9} {'(median)':>8} {'peak RSS':>9} "
              f"{'warm-up':>8}")
        for s in args.strategies:
            r = run(s, ["--num-seqs", str(args.num_seqs), "--seeds", str(args.seeds),
                        "--repeats", str(args.repeats)])
            print(f"{s:>9} {r['seed_chunk']:>10} {r['seq_chunk']:>9} {r['seq_batch']:>9} "
                  f"{r['tokens_per_s']:>10,.0f} "
                  f"{r['model_flops_per_s'] / 1e9:>8.1f} {r['matmul_flops_per_s'] / 1e9:>7.1f} "
                  f"{r['model_flops_per_s'] / r['matmul_flops_per_s']:>9.0%} "
                  f"{r['median_model_flops_per_s'] / r['matmul_flops_per_s']:>8.0%} "
                  f"{r['peak_rss_mb']:>7.0f}MB {r['warmup_s']:>7.1f}s", flush=True)
            if "device" in r:  # an accelerator: its bf16 rate, peak memory, planner estimate
                print("          " + json.dumps(r), flush=True)
        print("GFLOP/s: forward matmul FLOPs per second of the fastest sweep; matmul: the same "
              "process's float32 matmul rate (best of 10); of matmul: their ratio, and "
              "the ratio for the median sweep")
    if args.many_seeds:
        n = args.many_seeds_seqs
        print(f"\npreset {args.preset}, T={args.seq_len}, {n} sequences per seed, auto plan, "
              f"one fresh process per row; MB of resident set")
        print(f"{'seeds':>6} {'seed_chunk':>10} {'chunks':>6} {'before':>7} {'sweep peak':>10} "
              f"{'after chunk (min-max)':>21} {'process peak':>12} {'wall':>7}")
        for k in args.many_seeds:
            r = run("many", ["--num-seqs", str(n), "--seeds", str(k)])
            peak = "-" if r["sweep_peak_mb"] is None else f"{r['sweep_peak_mb']:.0f}"
            print(f"{k:>6} {r['seed_chunk']:>10} {r['chunks']:>6} {r['rss_before_mb']:>7.0f} "
                  f"{peak:>10} {r['rss_after_chunk_min_mb']:>10.0f}-"
                  f"{r['rss_after_chunk_max_mb']:<10.0f} {r['process_peak_mb']:>12.0f} "
                  f"{r['wall_s']:>6.0f}s", flush=True)
            print("       " + json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
