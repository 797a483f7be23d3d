"""What TF32 changes in Table 1: the token-preference probe in full float32 and in XLA's default
float32 matmul precision, side by side, on the same seeds and the same random sequences.

On NVIDIA GPUs from Ampere on, XLA computes float32 matrix products in TF32 (10-bit mantissa)
unless full precision is requested (``jax.default_matmul_precision("highest")``, or the
environment variable ``JAX_DEFAULT_MATMUL_PRECISION=highest``). The probe takes an arg-max over
|V| logits, whose leaders can be near-tied, so the precision can change which token a sequence
predicts. ``--precisions`` lists the settings to compare with full float32 (default: XLA's default, and
JAX's 6-pass bfloat16 dot algorithm, which keeps float32 accuracy on tensor cores; any name of
``bornbiased_jax/precision.py``). For every (preset, seed, T) this prints and writes (``--out``):

  * per precision, the share of the N sequences whose predicted token is the same as in full
    float32 (``agreement``) and whether the top-1 token is (``same_top1``),
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

from bornbiased_jax import files, precision  # noqa: E402
from bornbiased_jax.presets import get_preset  # noqa: E402
from bornbiased_jax.probes.inputs import probe_inputs  # noqa: E402
from bornbiased_jax.probes.token_preference import next_token_probe, summarize  # noqa: E402
from bornbiased_jax.sweep import sweep  # noqa: E402

REFERENCE = "highest"  # full float32


def compare(preset: str, seeds: list[int], T: int, N: int, others: list[str]) -> list[dict]:
    cfg = get_preset(preset)
    probe = next_token_probe(cfg)
    xs = probe_inputs("tokens", cfg, N, T)[:]
    preds = {}
    for prec in [REFERENCE, *others]:
        with precision.scoped(prec):
            preds[prec] = np.asarray(sweep(probe, cfg, seeds, xs))
    rows = []
    for i, seed in enumerate(seeds):
        row = dict(preset=preset, seed=seed, seq_len=T, num_seqs=N,
                   agreement={p: float(np.mean(preds[REFERENCE][i] == preds[p][i]))
                              for p in others})
        for prec in preds:
            rec = summarize(preds[prec][i], cfg.vocab_size, preset=preset, seed=seed, seq_len=T,
                            input="tokens")
            row[prec] = dict(top1_id=rec.top1_id, top1_count=rec.top1_count,
                             top1_freq=rec.top1_freq, log10_p=rec.log10_p)
        row["same_top1"] = {p: row[REFERENCE]["top1_id"] == row[p]["top1_id"] for p in others}
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--presets", nargs="+", default=["gpt2-rope-cpu"])
    p.add_argument("--seeds", type=int, nargs="+", default=[42, 43])
    p.add_argument("--seq-lens", type=int, nargs="+", default=[64])
    p.add_argument("--num-seqs", type=int, default=500)
    p.add_argument("--precisions", nargs="+", default=["default", "bf16x6"],
                   choices=[x for x in precision.PRECISIONS if x != REFERENCE],
                   help="settings compared with full float32")
    p.add_argument("--out", type=Path, default=None, help="JSON file for the rows")
    args = p.parse_args()
    from bornbiased_jax.errors import UserError

    for prec in args.precisions:  # refuse one the backend lacks before any sweep
        try:
            with precision.scoped(prec):
                pass
        except UserError as e:
            p.error(str(e))
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}), jax {jax.__version__}")
    print(f"{'preset':>16} {'seed':>5} {'T':>5} | {'f32 top-1':>9} {'freq':>6} {'log10 p':>8} | "
          + " | ".join(f"{x:>8} {'agree':>7} {'top-1':>7}" for x in args.precisions))
    rows = []
    for T in args.seq_lens:
        for preset in args.presets:
            for r in compare(preset, args.seeds, T, args.num_seqs, args.precisions):
                rows.append(r)
                h = r[REFERENCE]
                print(f"{preset:>16} {r['seed']:>5} {T:>5} | {h['top1_id']:>9} "
                      f"{h['top1_freq']:>6.2%} {h['log10_p']:>8.1f} | "
                      + " | ".join(f"{x:>8} {r['agreement'][x]:>7.2%} {r[x]['top1_id']:>7}"
                                   for x in args.precisions), flush=True)
                if args.out:
                    files.write_json(args.out, dict(device=dev.device_kind, platform=dev.platform,
                                                    jax=jax.__version__, reference=REFERENCE,
                                                    precisions=args.precisions, rows=rows))


if __name__ == "__main__":
    main()
