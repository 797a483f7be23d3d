"""The level families: seeds trained on identical data in an identical order at several MLP
widths and depths, the hardest negatives of the lineage verdict between two trained models
(docs/lineage.md). Each *cell* is one ``bornbiased train --seeds`` run: every seed sees the same
batches, so the only difference between two of its models is their initialisation, and any
pair of them that a lineage test calls related is a false positive.

The 32-seed family (:mod:`experiments.common.seed_family`: llama2-tiny, d = 64, 2 layers,
F = 176) is the first cell; the cells here add width (F = 344 and 1,536 at 2 layers) and
depth (12 layers at F = 344), each with the width-to-MLP ratio of a LLaMA (F about 8d/3; the
F = 1,536 cell has SmolLM2-135M's width, heads and KV heads) and the seed family's data,
tokenizer size and schedule (250 steps of 16 x 64 tokens of the Python standard library,
cosine 3e-3 -> 3e-4), so that only the shape changes between cells. Seed K of a cell is the
model source ``runs/level/<cell>#K``.

    python -m experiments.lineage_level --train             # train (or resume) every cell
    python -m experiments.lineage_level --train --cells L2-F344

The cells run in the order below, the cheap ones first; each resumes from its latest
checkpoint (every 50 steps). Measured times are in the record
``results/records/training/level_families.json``.
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

from bornbiased_jax.training import loop as train
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.config import TrainConfig, train_command
from experiments.common import seed_family

RUNS_DIR = Path("runs/level")
RECORD = Path("results/records/training/level_families.json")
CORPUS = seed_family.CORPUS


def _cell(d_model: int, n_heads: int, n_kv: int, d_ff: int, layers: int, seeds: int
          ) -> TrainConfig:
    shape = (f"d_model={d_model}", f"n_heads={n_heads}", f"n_kv_heads={n_kv}",
             f"d_ff={d_ff}", f"n_layers={layers}")
    return dataclasses.replace(seed_family.RUN, seeds=tuple(range(seeds)), model_set=shape,
                               save_every=50, keep_every=None, keep_last=1)


# name -> the run (llama2-tiny's architecture with the shape set): depth L and MLP width F
CELLS = {
    "L2-F344": _cell(128, 4, 4, 344, 2, 24),
    "L12-F344": _cell(128, 4, 4, 344, 12, 24),
    "L2-F1536": _cell(576, 9, 3, 1536, 2, 16),
}


def folder(cell: str, runs_dir: Path = RUNS_DIR) -> Path:
    return Path(runs_dir) / cell


def command(cell: str, runs_dir: Path = RUNS_DIR) -> str:
    """The ``bornbiased train`` command line of one cell (every setting spelled out)."""
    return shlex.join(["bornbiased", *train_command(CELLS[cell], CORPUS, folder(cell, runs_dir)),
                       "--no-progress"])


def ensure(cell: str, runs_dir: Path = RUNS_DIR, progress: bool = True) -> Path:
    """Train one cell, resuming it from its latest checkpoint; a finished one is left as it is."""
    return train.ensure(CELLS[cell], CORPUS, folder(cell, runs_dir), progress=progress,
                        what=f"the level cell {cell}", remedy="use another --runs-dir")


def finished(cell: str, runs_dir: Path = RUNS_DIR) -> bool:
    f = folder(cell, runs_dir)
    return f.exists() and run_folder.finished(f, CELLS[cell], what=f"the level cell {cell}",
                                              remedy="use another --runs-dir")


def sources(cell: str, runs_dir: Path = RUNS_DIR) -> list[str]:
    """The model source of each seed of a cell: 'runs/level/<cell>#K'."""
    return [f"{folder(cell, runs_dir)}#{k}" for k in CELLS[cell].seeds]
