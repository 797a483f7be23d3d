"""Training throughput: tokens/s and the fraction of the in-process dense-matmul rate.

Builds a real run (BPE on a local corpus, the preset's model, AdamW), runs ``--warmup-steps``
untimed steps (compilation), then times ``--steps`` optimizer steps. Model FLOPs per token are
3x the forward matmul FLOPs (forward + backward), counted by ``bornbiased_jax.flops``.

    python benchmarks/train_throughput.py --preset llama2-cpu --corpus python-stdlib
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="llama2-cpu")
    p.add_argument("--corpus", default="python-stdlib")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--vocab-size", type=int, default=4096)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--bf16", action="store_true")
    args = p.parse_args()

    import jax

    from bornbiased_jax.flops import forward_flops
    from bornbiased_jax.train import Run, TrainConfig, make_train_step

    tc = TrainConfig(preset=args.preset, seq_len=args.seq_len, batch_size=args.batch_size,
                     vocab_size=args.vocab_size, steps=args.steps + args.warmup_steps + 1,
                     warmup=1, bf16=args.bf16, corpus_max_mb=4.0)
    with tempfile.TemporaryDirectory() as tmp:
        run = Run(tc, [args.corpus], tmp)
        step = make_train_step(run.cfg, tc, run.optimizer, run.mesh)
        state = run.state
        for i in range(args.warmup_steps):
            state, m = step(state, run.batch(i * tc.batch_size))
        jax.block_until_ready(state)
        batches = [run.batch((args.warmup_steps + i) * tc.batch_size) for i in range(args.steps)]
        t0 = time.perf_counter()
        for b in batches:
            state, m = step(state, b)
        jax.block_until_ready(state)
        wall = time.perf_counter() - t0
    tokens = args.steps * tc.batch_size * tc.seq_len
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
          f"final loss {float(m['loss']):.3f}")


if __name__ == "__main__":
    main()
