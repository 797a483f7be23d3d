"""The level families trained long: the level table's third axis, training length (beyond the
paper). The level cells (:mod:`experiments.lineage.level_families`) stop at 250 steps of 1,024
tokens (0.26 M tokens per model); the lineage verdict's slack is then applied to models
pretrained on trillions. Each long cell is one ``bornbiased train --seeds`` run whose seeds see
identical batches, with checkpoints kept at geometrically spaced steps
(:data:`KEEP`), so that the shared units K of unrelated same-data seeds can be read against the
tokens they have seen:

  L2-F344-long    d = 128, 2 layers, F = 344 (the cheapest level cell's shape), 16 seeds,
                  25,000 steps (two decades beyond 250);
  L12-F344-long   12 layers at F = 344, 8 seeds, 2,500 steps (one decade);
  L2-F1536-long   d = 576, 2 layers, F = 1,536 (SmolLM2-135M's width, heads and KV heads),
                  6 seeds, 2,500 steps;
  L2-F344-prose   L2-F344-long's shape and tokenizer, seeds 100-107 trained on prose (the
                  Node.js API documentation and Vim's help files) instead of code, 4,000 steps:
                  paired with L2-F344-long's seeds at the same step it is the other common
                  negative, unrelated models trained on different text.

Every cell reads 64 MiB of the Python standard library (about 1.3 epochs in 25,000 steps; the
level cells read 8 MiB) through a 2,048-token BPE trained on it, 16 x 64 tokens per step,
warmup 1 % of the steps, cosine 3e-3 -> 3e-4 over the cell's full length; validation loss on
the held-out 5 % every 250 steps. Training runs in stages (:data:`STAGES`): every cell to its
first decade before the cheapest goes on to 25,000 steps, each stage resumable from its
latest checkpoint (every 250 steps):

    python -m experiments lineage_level_long --train              # every stage, in order
    python -m experiments lineage_level_long --train --cells L2-F344-long
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

from bornbiased_jax.defaults import NODE_DOCS_MD, VIM_DOCS
from bornbiased_jax.training import loop as train
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.config import TrainConfig, train_command
from experiments.common import family, seed_family

RUNS_DIR = Path("runs/level-long")
CODE = seed_family.CORPUS  # the Python standard library
PROSE = [NODE_DOCS_MD, VIM_DOCS]
KEEP = (250, 500, 1000, 2000, 4000, 8000, 16000, 25000)  # geometric, x2 (the last x1.56)
EVERY = 250  # checkpoint and validation cadence


def _cell(d_model: int, n_heads: int, n_kv: int, d_ff: int, layers: int, seeds, steps: int
          ) -> TrainConfig:
    shape = (f"d_model={d_model}", f"n_heads={n_heads}", f"n_kv_heads={n_kv}",
             f"d_ff={d_ff}", f"n_layers={layers}")
    return dataclasses.replace(
        seed_family.RUN, seeds=tuple(seeds), model_set=shape, steps=steps,
        warmup=steps // 100, corpus_max_mb=64.0, save_every=EVERY, eval_every=EVERY,
        eval_batches=8, log_every=50, keep_every=None, keep_last=1,
        keep_steps=tuple(k for k in KEEP if k <= steps) + (() if steps in KEEP else (steps,)))


@dataclasses.dataclass(frozen=True)
class LongCell:
    """One long cell: its run, its corpus and, where it reads another cell's tokenizer, that
    cell's name."""

    run: TrainConfig
    corpus: tuple
    tokenizer_of: str | None = None


CELLS = {
    "L2-F344-long": LongCell(_cell(128, 4, 4, 344, 2, range(16), 25_000), tuple(CODE)),
    "L12-F344-long": LongCell(_cell(128, 4, 4, 344, 12, range(8), 2_500), tuple(CODE),
                              "L2-F344-long"),
    "L2-F1536-long": LongCell(_cell(576, 9, 3, 1536, 2, range(6), 2_500), tuple(CODE),
                              "L2-F344-long"),
    "L2-F344-prose": LongCell(_cell(128, 4, 4, 344, 2, range(100, 108), 4_000), tuple(PROSE),
                              "L2-F344-long"),
}
# (cell, the step its stage stops at): every cell to its first decade, the cheapest first
STAGES = (("L2-F344-long", 4_000), ("L2-F344-prose", 4_000), ("L12-F344-long", 2_500),
          ("L2-F1536-long", 2_500), ("L2-F344-long", 25_000))


def folder(cell: str, runs_dir: Path = RUNS_DIR) -> Path:
    return Path(runs_dir) / cell


def tokenizer(cell: str, runs_dir: Path = RUNS_DIR) -> Path | None:
    """The tokenizer a cell reads with: its own (None: trained on its corpus), or the one of the
    cell it shares it with."""
    of = CELLS[cell].tokenizer_of
    return None if of is None else run_folder.tokenizer_path(folder(of, runs_dir))


def command(cell: str, runs_dir: Path = RUNS_DIR, stop_at: int | None = None) -> str:
    """The ``bornbiased train`` command line of one cell (every setting spelled out)."""
    c = CELLS[cell]
    tc = c.run if stop_at is None else dataclasses.replace(c.run, stop_at=stop_at)
    tok = tokenizer(cell, runs_dir)
    return shlex.join(["bornbiased", *train_command(tc, list(c.corpus), folder(cell, runs_dir)),
                       *(["--tokenizer", str(tok)] if tok else []), "--no-progress"])


def ensure(cell: str, runs_dir: Path = RUNS_DIR, stop_at: int | None = None,
           progress: bool = True) -> Path:
    """Train one cell to ``stop_at`` (default: its last step), resuming it from its latest
    checkpoint; a cell already there is left as it is."""
    c = CELLS[cell]
    tc = c.run if stop_at is None else dataclasses.replace(c.run, stop_at=min(stop_at,
                                                                               c.run.steps))
    if c.tokenizer_of is not None and not tokenizer(cell, runs_dir).is_file():
        from bornbiased_jax.errors import UserError

        raise UserError(f"the long cell {cell} reads {c.tokenizer_of}'s tokenizer, which is not "
                        f"trained yet in {folder(c.tokenizer_of, runs_dir)}: train that cell "
                        f"first")
    return train.ensure(tc, family.expand(c.corpus, cell), folder(cell, runs_dir),
                        tokenizer_path=tokenizer(cell, runs_dir), progress=progress,
                        what=f"the long level cell {cell}", remedy="use another --runs-dir")


def reached(cell: str, runs_dir: Path = RUNS_DIR) -> int:
    """The latest checkpoint's step of a cell (0: not started)."""
    from bornbiased_jax.training.checkpoints import run_steps

    f = folder(cell, runs_dir)
    steps = run_steps(f) if f.exists() else []
    return max(steps, default=0)


def train_stages(cells=None, runs_dir: Path = RUNS_DIR, log=print) -> None:
    """Every stage of :data:`STAGES` (of ``cells`` only, when given), in order, each resumed
    where it stopped."""
    for cell, stop in STAGES:
        if cells and cell not in cells:
            continue
        if reached(cell, runs_dir) >= min(stop, CELLS[cell].run.steps):
            continue
        log(f"{cell}: to step {stop:,}: {command(cell, runs_dir, stop)}")
        ensure(cell, runs_dir, stop, progress=False)
        log(f"{cell}: at step {reached(cell, runs_dir):,}")
