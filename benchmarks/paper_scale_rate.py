"""Achieved throughput of the paper-scale forward passes on the machine that ran them, against
that machine's own dense-matmul rate.

The campaign's resumable passes (``experiments/paper_scale.py``) save each finished block's
compute seconds beside its sums (``results/campaign/summaries/<piece>/T<T>/state.json``, and
``results/campaign/state/`` for passes kept whole). This script reads them, counts each block's
model FLOPs as ``--list`` does (``bornbiased_jax.flops.forward_flops``: 2 per non-embedding
parameter per token plus attention, the LM head at the last position only) and prints, per
pass, the median and the best block's GFLOP/s and their share of this process's float32 2048^2
matmul rate (best of 5 before and 5 after reading the files: run it on an idle machine, the
same kind of machine that ran the blocks). The median block is the figure to quote: a block's
seconds are wall time, so a block during which the machine was busy with other work (or the
process was paused) is slower than the pass's rate, never faster. Two cautions: a pass resumed
on later machines ran on several machines of the same kind (state.json does not record which
block ran where), and the 2048^2 matmul is XLA's CPU dot at one shape, not the hardware's
peak, so a pass whose matmuls are shaped better can exceed 100 % of it.

    python benchmarks/paper_scale_rate.py
    python benchmarks/paper_scale_rate.py --root results/campaign --markdown out.md
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO))  # experiments.campaign.progress counts a block's FLOPs

from sweep_throughput import matmul_rate  # noqa: E402


def blocks(folder: Path):
    """(FLOPs, seconds) of each finished block of the pass saved in ``folder``/state.json."""
    from experiments.campaign.progress import state_chunks

    return state_chunks(folder / "state.json")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=REPO / "results" / "campaign")
    p.add_argument("--markdown", type=Path, help="also write the table here")
    args = p.parse_args()
    import jax

    rate = matmul_rate()
    rows = []

    def order(f: Path):  # by folder, lengths in numeric order (T64 before T256 before T1024)
        parts = f.parent.relative_to(args.root).parts
        return [(0, int(x[1:])) if x[:1] == "T" and x[1:].isdigit() else (1, x) for x in parts]
    for f in sorted(args.root.rglob("state.json"), key=order):
        every = blocks(f.parent)
        b = [(fl, s) for fl, s in every if s > 0]  # blocks saved without seconds are counted
        if not b:
            continue
        per_block = [fl / s for fl, s in b]
        name = "/".join(f.parent.relative_to(args.root).parts)
        rows.append((name, f"{len(b)}" + (f" (+{len(every) - len(b)} untimed)"
                                          if len(every) > len(b) else ""),
                     statistics.median(fl for fl, _ in b), statistics.median(s for _, s in b),
                     statistics.median(per_block), max(per_block)))
    rate = max(rate, matmul_rate())
    lines = [f"float32 2048^2 matmul: {rate / 1e9:.0f} GFLOP/s ({jax.devices()[0]}, "
             f"{platform.platform()}, jax {jax.__version__})", "",
             "| pass | blocks | median TFLOP per block | median s per block | median GFLOP/s "
             "(of matmul) | best GFLOP/s (of matmul) |", "|---|---:|---:|---:|---:|---:|"]
    for name, n, fl, sec, med, best in rows:
        lines.append(f"| {name} | {n} | {fl / 1e12:.1f} | {sec:.0f} | {med / 1e9:.0f} "
                     f"({med / rate:.0%}) | {best / 1e9:.0f} ({best / rate:.0%}) |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
