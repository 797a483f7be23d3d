"""What the sweep holds between seed chunks: resident set, live JAX arrays, Python heap.

Runs one sweep of the token-preference probe in chunks of ``--seed-chunk`` seeds and records,
after each chunk has been released, the resident set size (``/proc/self/status``), the number
of live JAX arrays, and (tracemalloc) the Python heap's growth over the whole sweep. Something
that accumulates shows as a trend in the trace; a footprint that only fluctuates does not.

    python benchmarks/sweep_memory_trace.py --seeds 96
    MALLOC_ARENA_MAX=1 python benchmarks/sweep_memory_trace.py --seeds 96   # glibc arenas off

The default model is ``gpt2-rope-tiny`` widened to the ``gpt2-rope-cpu`` sizes (6 layers,
d = 512, |V| = 50,257) with 4 sequences of 8 tokens, so that parameters dominate and the trace
takes minutes.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

from rss import chunk_trace, peak_rss_mb


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=96)
    p.add_argument("--seed-chunk", type=int, default=4)
    p.add_argument("--num-seqs", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=8)
    args = p.parse_args()

    import jax

    from bornbiased_jax import sweep as sw
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.token_preference import next_token_probe

    cfg = get_preset("gpt2-rope-tiny").ablate(d_model=512, n_heads=8, d_ff=2048, n_layers=6,
                                              vocab_size=50_257)
    xs = probe_inputs("tokens", cfg, args.num_seqs, args.seq_len)
    probe = next_token_probe(cfg)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    t0 = time.perf_counter()
    with chunk_trace() as trace:
        sw.sweep(probe, cfg, range(args.seeds), xs, seed_chunk=args.seed_chunk,
                 devices=jax.devices()[:1])
    wall = time.perf_counter() - t0
    growth = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    print(json.dumps({"seeds": args.seeds, "seed_chunk": args.seed_chunk, "chunks": len(trace),
                      "rss_mb_after_each_chunk": [r for r, _ in trace],
                      "live_arrays_after_each_chunk": [n for _, n in trace],
                      "python_heap_growth_kb": round(growth / 1024),
                      "peak_rss_mb": peak_rss_mb(),
                      "wall_s": round(wall, 1)}))


if __name__ == "__main__":
    main()
