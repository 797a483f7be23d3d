"""Training throughput: tokens/s, the fraction of the in-process dense-matmul rate, and seeds
trained in one program against one run per seed.

Builds a real run (BPE on a local corpus, the preset's model, AdamW), runs ``--warmup-steps``
untimed steps (compilation), then times ``--steps`` optimizer steps. Model FLOPs per token are
3x the forward matmul FLOPs (forward + backward), counted by ``bornbiased_jax.flops``.

With ``--seeds 1,4,16`` it times, for each count S, one program training S seeds on the same
batches (``train --seeds``) and reports tokens/s per seed (each seed trains on every token of
the batch) and the seed-tokens/s of all S together, against S single-seed runs made one after
another (which train S seeds at the single-seed rate in all: that rate is measured once). The
speed-up is the ratio of the two ways' times to train S seeds on the same tokens:
S x (per-seed rate of the one program) / (single-seed rate).

    python benchmarks/train_throughput.py --preset llama2-cpu --corpus python-stdlib
    python benchmarks/train_throughput.py --preset llama2-tiny --seeds 1,4,16 --steps 5
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep_throughput import matmul_rate  # noqa: E402


def timed_run(args, seeds: tuple[int, ...]) -> dict:
    """Wall time of ``args.steps`` steps of a run of ``seeds`` (after untimed warm-up steps)."""
    import jax

    from bornbiased_jax.training.config import TrainConfig
    from bornbiased_jax.training.loop import Run

    tc = TrainConfig(preset=args.preset, seq_len=args.seq_len, batch_size=args.batch_size,
                     vocab_size=args.vocab_size, steps=args.steps + args.warmup_steps + 1,
                     warmup=1, bf16=args.bf16, corpus_max_mb=4.0, seeds=seeds)
    budget = None if args.memory_budget is None else int(args.memory_budget * 2**30)
    with tempfile.TemporaryDirectory() as tmp:
        run = Run(tc, [args.corpus], tmp, memory_budget=budget, seed_group=args.seed_group,
                  seed_batching=args.seed_batching)
        for i in range(args.warmup_steps):
            m = run.step(run.global_batch(i * tc.batch_size))
        jax.block_until_ready(run.state)
        batches = [run.global_batch((args.warmup_steps + i) * tc.batch_size)
                   for i in range(args.steps)]
        t0 = time.perf_counter()
        for b in batches:
            m = run.step(b)
        jax.block_until_ready(run.state)
        wall = time.perf_counter() - t0
    return {"run": run, "tc": tc, "wall": wall, "loss": float(m["loss"].mean()),
            "tokens": args.steps * tc.batch_size * tc.seq_len}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="llama2-cpu")
    p.add_argument("--corpus", default="python-stdlib")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--bpe-vocab", type=int, default=4096, dest="vocab_size",
                   help="vocabulary of the BPE trained on the corpus (train --bpe-vocab)")
    p.add_argument("--vocab-size", type=int, dest="vocab_size", help=argparse.SUPPRESS)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--seeds", help="seed counts to compare with one run per seed, e.g. 1,4,16")
    p.add_argument("--memory-budget-gib", type=float, metavar="GIB", dest="memory_budget",
                   help="per-device memory budget of the many-seed runs (train --memory-budget-gib)")
    p.add_argument("--seed-chunk", type=int, metavar="N", dest="seed_group",
                   help="seeds per device at once in the many-seed runs (train --seed-chunk)")
    # the former spellings, kept hidden
    p.add_argument("--memory-budget", type=float, dest="memory_budget", help=argparse.SUPPRESS)
    p.add_argument("--seed-group", type=int, dest="seed_group", help=argparse.SUPPRESS)
    p.add_argument("--seed-batching", choices=["auto", "vmap", "map"], default="auto",
                   help="how the many-seed runs batch their seeds (train --seed-batching)")
    args = p.parse_args()

    import jax

    from bornbiased_jax.flops import forward_flops

    if args.seeds:
        counts = [int(c) for c in args.seeds.split(",")]
        rows = []
        single = None
        for n in counts:
            r = timed_run(args, tuple(range(n)))
            if n == 1:
                single = r
            rows.append((n, r))
        if single is None:
            single = timed_run(args, (0,))
        one = single["tokens"] / single["wall"]
        cfg, tc = single["run"].cfg, single["tc"]
        print(f"{cfg.name} (vocab {cfg.vocab_size}), T={tc.seq_len}, batch {tc.batch_size}, "
              f"{'bf16' if args.bf16 else 'float32'}, {len(jax.devices())} "
              f"{jax.devices()[0].device_kind} device(s), {args.steps} timed steps")
        from bornbiased_jax.training.step import resolve_seed_batching

        print(f"seed batching: {args.seed_batching} ('auto' picks "
              f"{resolve_seed_batching('auto', single['run'].mesh)} here)")
        print("| seeds S | groups per step | one program: tokens/s per seed | one program: "
              "seed-tokens/s, all S | S runs one after another: seed-tokens/s | speed-up |")
        print("|---:|---:|---:|---:|---:|---:|")
        for n, r in rows:
            per_seed = r["tokens"] / r["wall"]
            print(f"| {n} | {r['run'].plan.n_groups} | {per_seed:,.0f} | {n * per_seed:,.0f} | "
                  f"{one:,.0f} | {n * per_seed / one:.2f}x |")
        print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        return

    r = timed_run(args, (0,))
    run, tc, wall = r["run"], r["tc"], r["wall"]
    tokens = r["tokens"]
    flops = 3 * args.steps * tc.batch_size * forward_flops(run.cfg, tc.seq_len)
    cpu = jax.devices()[0].platform == "cpu"
    # The peak the step's matmuls can reach: bfloat16 on an accelerator with --bf16; float32 on
    # a CPU either way (its bfloat16 products are emulated, slower than float32).
    dtype = "bfloat16" if args.bf16 and not cpu else "float32"
    n = 2048 if cpu else 8192
    rate = matmul_rate(n, dtype=dtype)
    print(f"{run.cfg.name} (vocab {run.cfg.vocab_size}), T={tc.seq_len}, batch {tc.batch_size}, "
          f"{'bf16' if args.bf16 else 'float32'}, {len(jax.devices())} device(s)")
    print(f"  {args.steps} steps in {wall:.1f} s: {tokens / wall:,.0f} tokens/s, "
          f"{flops / wall / 1e9:.1f} model GFLOP/s = {flops / wall / rate:.0%} of the dense "
          f"matmul rate ({rate / 1e9:.1f} GFLOP/s, {n}^2 {dtype}, "
          f"{jax.devices()[0].device_kind})")
    print(f"  peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
          f"final loss {r['loss']:.3f}")


if __name__ == "__main__":
    main()
