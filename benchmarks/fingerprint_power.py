"""How much power `bornbiased fingerprint`'s legs keep as the inputs shrink: the permutation leg
against n (its features are the last positions of n sequences) and the matched leg against the
sequences it reads (``Settings.matched_seqs``, rows = sequences x 60), for descendants of one
base at growing distances (every weight moved by s x its own standard deviation of Gaussian
noise, s = 0.5, 1 and 2: beyond a long fine-tune) and one unrelated model, all in memory.

Prints, per suspect and setting, log10 p of each leg and of the any-pair verdict (the
command's default when BASE's initialisation is unknown); ``--save FILE`` writes the table as
Markdown with the command and the machine. The command's defaults are n from its forward
budget (37 for a SmolLM2-135M pair) and ``defaults.MATCHED_SEQS`` sequences for the matched leg.

    python benchmarks/fingerprint_power.py --base "$(bash tests/fixtures/fetch_smollm2.sh)" \\
        --unrelated preset:smollm2-135m@1 --save benchmarks/results/fingerprint_power_cpu.md
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

NOISE = (0.5, 1.0, 2.0)
NS = (8, 16, 32, 64)
SEQS = (4, 8, 16, 32)


def noisy(m, scale: float, seed: int):
    """``m`` with every weight moved by ``scale`` x its own std of Gaussian noise."""
    rng = np.random.default_rng(seed)
    params = jax.tree.map(lambda a: np.asarray(a) + scale * float(np.asarray(a).std())
                          * rng.standard_normal(np.shape(a)).astype(np.float32), m.params)
    return dataclasses.replace(m, params=params, label=f"noise {scale:g}", kind="hf", seed=None,
                               step=None, folder=None)


def shown(argv: list[str]) -> list[str]:
    """``argv`` with absolute paths (a cached model file) shown by their file name."""
    return [Path(a).name if os.path.isabs(a) else a for a in argv]


def log10(p: float) -> str:
    return "-inf" if p <= 0 else f"{math.log10(p):.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="a model source (its initialisation unknown)")
    ap.add_argument("--unrelated", required=True, help="an unrelated model source")
    ap.add_argument("--seq-len", type=int, default=64)
    ap.add_argument("--save", type=Path)
    args = ap.parse_args()
    from bornbiased_jax.defaults import MATCHED_SEQS
    from bornbiased_jax.fingerprint.runner.compare import Settings, compare_many
    from bornbiased_jax.sources import load_source

    t0 = time.time()
    base = dataclasses.replace(load_source(args.base, shared_embedding=False), seed=None,
                               kind="hf")
    suspects = {f"noise {s:g}": (lambda s=s: noisy(base, s, 1)) for s in NOISE}
    suspects["unrelated"] = lambda: load_source(args.unrelated, shared_embedding=False)
    rows = []
    grid = ([("n", n, dict(n=n, matched_seqs=min(MATCHED_SEQS, n))) for n in NS]
            + [("matched seqs", k, dict(n=max(NS[0], k), matched_seqs=k)) for k in SEQS])
    for what, value, kw in grid:
        # each leg at its own inputs: no sequential stop of the permutation leg at the
        # matched leg's sequences (the command's default), so its column is its power at n
        s = Settings(tests=("permutation", "matched"), seq_len=args.seq_len, sequential=False,
                     **kw)
        outs = compare_many(base, list(suspects.values()), s)
        for name, out in zip(suspects, outs):
            r = out["results"]
            rows.append((what, value, name, log10(r["permutation"].p), log10(r["matched"].p),
                         log10(r["any_pair"].p), bool(r["any_pair"].same_lineage)))
            print(f"{what}={value} {name}: permutation {rows[-1][3]}, matched {rows[-1][4]}, "
                  f"any-pair {rows[-1][5]}", flush=True)
    wall = time.time() - t0
    if args.save:
        lines = ["# Power of `bornbiased fingerprint`'s legs against the inputs they read", "",
                 f"`python {' '.join(shown(sys.argv))}`, on {platform.machine()} with "
                 f"{os.cpu_count()} CPUs ({platform.platform()}), {time.strftime('%Y-%m-%d')}, "
                 f"{wall:.0f} s. BASE `{Path(args.base).name}` (initialisation unknown); "
                 f"suspects: BASE with every weight moved by s x its own std of Gaussian noise, "
                 f"and `{args.unrelated}`. T = {args.seq_len}. 'n' rows: the permutation leg's "
                 f"n sequences (the matched leg reads min({MATCHED_SEQS}, n)); 'matched seqs' rows: the "
                 f"matched leg's sequences (60 rows each). log10 p; related at alpha = 0.01.",
                 "", "| setting | value | suspect | permutation | matched | any-pair | related |",
                 "|---|---:|---|---:|---:|---:|---|"]
        lines += [f"| {w} | {v} | {n} | {a} | {b} | {c} | {'yes' if d else 'no'} |"
                  for w, v, n, a, b, c, d in rows]
        tmp = args.save.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(args.save)
        print(f"wrote {args.save}")


if __name__ == "__main__":
    main()
