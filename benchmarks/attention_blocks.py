"""Blockwise causal attention against the whole (H, T, T) softmax, in the last-token probe.

Without attention maps to keep, each layer attends ``bornbiased_jax.layers.QUERY_BLOCK``
queries at a time, over the keys they can see (``layers.blocked_causal_attention``). This
times the probe that the paper-scale passes run (``probes.contraction.last_token_probe``,
vmapped over a batch of random token sequences, by default 1,024 tokens' worth as in a sweep,
jitted) with each query block given, the whole matrix first, and prints per block: the
best-of-``--repeats`` seconds per call after an untimed warm-up, model GFLOP/s
(``bornbiased_jax.flops``' convention, as the campaign's rates: the LM head and the last block
at the last position, although this probe, keeping every block's state, runs the last block at
all T), the speed-up over the whole matrix and the largest difference of any block's last-token
state from the whole matrix's (float32 rounding; the parity of the two paths is tested in
tests/test_model.py). A block of 0 means the whole matrix. The whole matrix is timed first,
the blocks after it; ``--repeats`` best-of timings damp a shared machine's drift.

    python benchmarks/attention_blocks.py --preset gpt2-rope-nano --seq-len 1024
    python benchmarks/attention_blocks.py --preset llama2-nano --seq-len 256
"""

from __future__ import annotations

import argparse
import platform
import time


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="gpt2-rope-nano")
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--batch", type=int, default=None,
                   help="sequences per timed call (default: 1,024 tokens' worth, as a sweep's "
                        "batches)")
    p.add_argument("--blocks", type=int, nargs="+", default=[0, 64, 128, 256],
                   help="queries per block; 0 = the whole (H, T, T) matrix (the reference)")
    p.add_argument("--repeats", type=int, default=2)
    a = p.parse_args(argv)
    if a.blocks[0] != 0 or any(b < 1 for b in a.blocks[1:]):
        p.error(f"--blocks must be 0 (the whole matrix, compared to every other) followed by "
                f"positive block sizes, got {a.blocks}")
    if any(b >= a.seq_len for b in a.blocks):
        p.error(f"--blocks {a.blocks}: a block of T = {a.seq_len} or more queries is the "
                "whole matrix; give smaller ones")

    import jax
    import numpy as np

    from bornbiased_jax import layers, model
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.flops import forward_flops
    from bornbiased_jax.probes.contraction import last_token_probe

    cfg = get_preset(a.preset)
    a.batch = a.batch or max(1, 1024 // a.seq_len)
    params = model.init(cfg, jax.random.key(0))
    x = jax.random.randint(jax.random.key(1), (a.batch, a.seq_len), 0, cfg.vocab_size)
    flops = a.batch * forward_flops(cfg, a.seq_len, last_only=True)
    print(f"{cfg.name}, T = {a.seq_len}, {a.batch} sequences per call, {flops / 1e12:.2f} TFLOP; "
          f"jax {jax.__version__}, {jax.devices()[0]}, {platform.platform()}")
    print("| queries per block | s per call | GFLOP/s | speed-up | max abs difference |")
    print("|---|---:|---:|---:|---:|")
    ref = base = None
    for block in a.blocks:
        layers.QUERY_BLOCK = block or 10**9  # read when the probe is traced, just below
        probe = jax.jit(jax.vmap(last_token_probe(cfg), in_axes=(None, 0)))
        out = jax.block_until_ready(probe(params, x))  # compiles
        best = float("inf")
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(probe(params, x))
            best = min(best, time.perf_counter() - t0)
        hidden = np.asarray(out["hidden"], np.float64)
        if ref is None:
            ref, base = hidden, best
        print(f"| {block or 'whole matrix'} | {best:.2f} | {flops / best / 1e9:.0f} | "
              f"{base / best:.2f}x | {np.abs(hidden - ref).max():.1e} |")


if __name__ == "__main__":
    main()
