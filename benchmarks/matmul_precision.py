"""What TF32 changes in Table 1: the token-preference probe in full float32 and in XLA's default
float32 matmul precision, side by side, on the same seeds and the same random sequences.

On NVIDIA GPUs from Ampere on, XLA computes float32 matrix products in TF32 (10-bit mantissa)
unless full precision is requested (``jax.default_matmul_precision("highest")``, or the
environment variable ``JAX_DEFAULT_MATMUL_PRECISION=highest``). The probe takes an arg-max over
|V| logits, whose leaders can be near-tied, so the precision can change which token a sequence
predicts. For every (preset, seed, T) this prints and writes (``--out``):

  * the share of the N sequences whose predicted token is the same in both precisions,
  * each precision's top-1 token, its frequency and the Bonferroni log10 p (Table 1's row),
Throughput figures come from ``benchmarks/sweep_throughput.py``.

On a CPU both precisions are full float32, and the agreement is 100 %.

    python benchmarks/matmul_precision.py --presets gpt2-rope-nano llama2-nano \\
        --seeds 42 43 --seq-lens 64 256 1024 --num-seqs 10000 --out results/gpu/precision.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bornbiased_jax import io  # noqa: E402
from bornbiased_jax.config import get_preset  # noqa: E402
from bornbiased_jax.probes.inputs import probe_inputs  # noqa: E402
from bornbiased_jax.probes.token_preference import next_token_probe, summarize  # noqa: E402
from bornbiased_jax.sweep import sweep  # noqa: E402

PRECISIONS = ("highest", "default")  # full float32; XLA's default (TF32 on NVIDIA GPUs)


def compare(preset: str, seeds: list[int], T: int, N: int) -> list[dict]:
    cfg = get_preset(preset)
    probe = next_token_probe(cfg)
    xs = probe_inputs("tokens", cfg, N, T)[:]
    preds = {}
    for prec in PRECISIONS:
        with jax.default_matmul_precision(prec):
            preds[prec] = np.asarray(sweep(probe, cfg, seeds, xs))
    rows = []
    for i, seed in enumerate(seeds):
        row = dict(preset=preset, seed=seed, seq_len=T, num_seqs=N,
                   agreement=float(np.mean(preds["highest"][i] == preds["default"][i])))
        for prec in PRECISIONS:
            rec = summarize(preds[prec][i], cfg.vocab_size, preset=preset, seed=seed, seq_len=T,
                            input="tokens")
            row[prec] = dict(top1_id=rec.top1_id, top1_count=rec.top1_count,
                             top1_freq=rec.top1_freq, log10_p=rec.log10_p)
        row["same_top1"] = row["highest"]["top1_id"] == row["default"]["top1_id"]
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", nargs="+", default=["gpt2-rope-cpu"])
    p.add_argument("--seeds", type=int, nargs="+", default=[42, 43])
    p.add_argument("--seq-lens", type=int, nargs="+", default=[64])
    p.add_argument("--num-seqs", type=int, default=500)
    p.add_argument("--out", type=Path, default=None, help="JSON file for the rows")
    args = p.parse_args()
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}")
    print(f"{'preset':>16} {'seed':>5} {'T':>5} {'agree':>7} | {'f32 top-1':>9} {'freq':>6} "
          f"{'log10 p':>8} | {'default':>9} {'freq':>6} {'log10 p':>8}")
    rows = []
    for T in args.seq_lens:
        for preset in args.presets:
            for r in compare(preset, args.seeds, T, args.num_seqs):
                rows.append(r)
                h, d = r["highest"], r["default"]
                print(f"{preset:>16} {r['seed']:>5} {T:>5} {r['agreement']:>7.2%} | "
                      f"{h['top1_id']:>9} {h['top1_freq']:>6.2%} {h['log10_p']:>8.1f} | "
                      f"{d['top1_id']:>9} {d['top1_freq']:>6.2%} {d['log10_p']:>8.1f}",
                      flush=True)
                if args.out:
                    io.write_json(args.out, dict(device=dev.device_kind, platform=dev.platform,
                                                 jax=jax.__version__, rows=rows))


if __name__ == "__main__":
    main()
