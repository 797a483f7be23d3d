"""Thirty-two small models trained from different initialisation seeds on identical data in an
identical order: the unrelated *trained* pairs of a SeedPrint false-positive study (a lineage
test must not call two of these models related; docs/lineage.md).

One ``bornbiased train --seeds 0:32`` run trains all 32 in one program (every seed on the same
batches, ``data_seed`` 0), so the only difference between two models is their initialisation.
Seed K is then the model source ``runs/seed-family/seeds-0-32#K`` (``@STEP`` for a checkpoint),
e.g. ``bornbiased fingerprint runs/seed-family/seeds-0-32#0 runs/seed-family/seeds-0-32#1``.

    python -m experiments.seed_family --print-command   # the bornbiased train command
    python -m experiments.seed_family                   # train it (or resume it)

Sizes, chosen to finish within about an hour on the shared, busy 2-core CPU: ``RUN`` below;
``EXPECTED`` says what was measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path

from bornbiased_jax import runs
from bornbiased_jax.errors import UserError
from bornbiased_jax.runs import TrainConfig
from bornbiased_jax.train import Run

SEEDS = tuple(range(32))
NAME = "seeds-0-32"
RUNS_DIR = Path("runs/seed-family")
CORPUS = ["python-stdlib"]
# llama2-tiny's architecture (d = 64, 2 blocks, 4 heads, d_ff 176, RoPE, untied) with a
# 2,048-token BPE, context T = 64; 250 steps of 16 x 64 tokens (256k tokens per seed) from 8 MB
# of the Python standard library; warmup 25, cosine 3e-3 -> 3e-4 (a model this small trains at
# a larger rate than Table 14's 6e-4); a checkpoint every 50 steps, all kept, so that the
# false-positive rate can be read along training.
RUN = TrainConfig(
    preset="llama2-tiny", seeds=SEEDS, seq_len=64, batch_size=16, steps=250, warmup=25,
    lr=3e-3, min_lr=3e-4, weight_decay=0.1, vocab_size=2048, corpus_max_mb=8.0, data_seed=0,
    save_every=50, keep_every=50, keep_last=2, eval_every=50, eval_batches=4, log_every=10)
# Measured on the shared 2-core CPU under a load of about 10 (benchmarks/train_throughput.py,
# 32 seeds in one program, T = 128, batch 16): 27 s per step of all 32 seeds, 75 tokens/s per
# seed; at T = 64 about half that, so 250 steps take about an hour under that load (less on an
# idle machine), plus a minute or two for the BPE.
EXPECTED = "about 60 minutes on the busy 2-core CPU"


def command(runs_dir: Path = RUNS_DIR, tc: TrainConfig = RUN) -> str:
    """The ``bornbiased train`` command line of the run (every setting spelled out)."""
    default = TrainConfig()
    args = ["bornbiased", "train", "--corpus", *CORPUS, "--out", str(Path(runs_dir) / NAME),
            "--seeds", f"{tc.seeds[0]}:{tc.seeds[-1] + 1}"]
    if tc.seeds != tuple(range(tc.seeds[0], tc.seeds[-1] + 1)):
        raise ValueError("the seeds are not one range")
    for f in dataclasses.fields(TrainConfig):
        value = getattr(tc, f.name)
        if f.name in ("seeds", "seed", "model_set", "init_from") or value == getattr(default,
                                                                                      f.name):
            continue
        args += [f"--{f.name.replace('_', '-')}", str(value)]
    return shlex.join(args) + " --no-progress"


def ensure(runs_dir: Path = RUNS_DIR, progress: bool = True) -> Path:
    """Train the run, resuming it from its latest checkpoint; a finished run is left as it is."""
    folder = Path(runs_dir) / NAME
    if not runs.finished(folder, RUN):
        Run(RUN, CORPUS, folder).train(progress=progress)
    return folder


def sources(runs_dir: Path = RUNS_DIR, step: int | None = None) -> list[str]:
    """The model source of each seed: 'runs/seed-family/seeds-0-32#K[@STEP]'."""
    at = "" if step is None else f"@{step}"
    return [f"{Path(runs_dir) / NAME}#{k}{at}" for k in SEEDS]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", type=Path, default=RUNS_DIR)
    p.add_argument("--print-command", action="store_true",
                   help="print the bornbiased train command and exit")
    args = p.parse_args()
    if args.print_command:
        print(command(args.runs_dir))
        return
    try:
        print(f"trained: {ensure(args.runs_dir)}")
    except UserError as e:
        raise SystemExit(f"seed_family: {e}") from None


if __name__ == "__main__":
    main()
