"""Peak memory of a sweep whose probe builds all T x V logits, against the memory budget.

The probe predicts the next token at every position (``argmax`` over the full (T, V) logits:
T V 4 bytes per sequence, 206 MB at T = 1,024 and V = 50,257). Each measurement runs in a fresh
process: it records the resident set size after the model's shared embeddings exist and before
the sweep (the baseline), runs the sweep with the given ``--memory-budget-gib``, and reports the
planner's chunks, the working set it predicted from XLA's compiled-memory analysis, and the
peak RSS over the baseline (VmHWM). The budget bounds parameters plus working set, so
``peak - baseline`` should stay below it.

    python benchmarks/planner_memory.py                       # gpt2-rope-cpu, T = 1,024
    python benchmarks/planner_memory.py --seq-len 512 --memory-budget-gib 0.5
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from rss import peak_rss_mb, rss_mb, run_child


def child(args) -> None:
    import jax
    import jax.numpy as jnp

    from bornbiased_jax import model
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.sweep import param_bytes, plan_sweep, probe_working_set, sweep

    cfg = get_preset(args.preset)
    T, budget = args.seq_len, int(args.memory_budget_gib * 2**30)

    def every_position(params, x_T):  # the full (T, V) logits, as an un-optimised probe would
        return jnp.argmax(model.forward(params, cfg, x_T).logits, -1).astype(jnp.int32)

    xs = probe_inputs("tokens", cfg, args.num_seqs, T)
    devices = jax.devices()[:1]
    plan = plan_sweep(cfg, args.seeds, args.num_seqs, T, memory_budget=budget, devices=devices,
                      probe=every_position, row_shape=(T,), row_dtype="int32")
    fixed, per_seq = probe_working_set(cfg, every_position, (T,), "int32", plan.seq_batch)
    base = rss_mb()
    t0 = time.perf_counter()
    out = sweep(every_position, cfg, range(args.seeds), xs, memory_budget=budget,
                devices=devices)
    wall = time.perf_counter() - t0
    peak = peak_rss_mb()
    print(json.dumps(dict(
        preset=cfg.name, seq_len=T, seeds=args.seeds, num_seqs=args.num_seqs,
        budget_mb=budget / 2**20, seed_chunk=plan.seed_chunk, seq_chunk=plan.seq_chunk,
        seq_batch=plan.seq_batch, logits_mb_per_seq=T * cfg.vocab_size * 4 / 2**20,
        predicted_fixed_mb=fixed / 2**20, predicted_per_seq_mb=per_seq / 2**20,
        predicted_call_mb=(fixed + plan.seq_chunk * per_seq) / 2**20,
        params_mb=plan.seed_chunk * param_bytes(cfg) / 2**20, baseline_rss_mb=base,
        peak_rss_mb=peak, peak_over_baseline_mb=peak - base, wall_s=wall,
        output_shape=list(out.shape))))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="gpt2-rope-cpu")
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--num-seqs", type=int, default=8)
    p.add_argument("--memory-budget-gib", type=float, default=1.0, metavar="GIB",
                   help="per-device memory budget of the sweep, in GiB (sweep's flag)")
    p.add_argument("--memory-budget-gb", type=float, dest="memory_budget_gib",
                   help=argparse.SUPPRESS)  # the former spelling, in GiB all the same
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    r = run_child([*sys.argv, "--child"])
    print(json.dumps(r, indent=1))
    verdict = "inside" if r["peak_over_baseline_mb"] <= r["budget_mb"] else "OUTSIDE"
    print(f"{r['preset']} T={r['seq_len']}: {r['seeds']} seeds x {r['num_seqs']} sequences, "
          f"chunks {r['seed_chunk']} seeds x {r['seq_chunk']} sequences (batch "
          f"{r['seq_batch']}); predicted working set {r['predicted_call_mb']:.0f} MB per call "
          f"(logits alone {r['logits_mb_per_seq']:.0f} MB per sequence); peak RSS "
          f"{r['peak_rss_mb']:.0f} MB, {r['peak_over_baseline_mb']:.0f} MB over the baseline: "
          f"{verdict} the {r['budget_mb']:.0f} MB budget")


if __name__ == "__main__":
    main()
