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
                  negative, unrelated models trained on different text;
  L30-F1536-smollm2  a GPU's cell: SmolLM2-135M's whole shape (30 layers, d = 576, F = 1,536,
                  its 49,152-token tokenizer, read from its GGUF file by the real-model study's
                  cousins step), 4 seeds, 1,000 steps of 32 x 512 tokens in bfloat16 (16.4 M
                  tokens per model), checkpoints at 125, 250, 500 and 1,000: the hardest
                  same-data negatives of SmolLM2 that a GPU window can make (:data:`GPU_CELLS`).

Every cell reads 64 MiB of the Python standard library (about 1.3 epochs in 25,000 steps; the
level cells read 8 MiB) through a 2,048-token BPE trained on it, 16 x 64 tokens per step,
warmup 1 % of the steps, cosine 3e-3 -> 3e-4 over the cell's full length; validation loss on
the held-out 5 % every 250 steps. Training runs in stages (:data:`STAGES`): every cell to its
first decade before the cheapest goes on to 25,000 steps, each stage resumable from its
latest checkpoint (every 250 steps):

    python -m experiments lineage_level_long --train              # every stage, in order
    python -m experiments lineage_level_long --train --cells L2-F344-long

A GPU cell is trained only when named, and measured where it was trained (its checkpoints do not
leave a lent GPU): its per-checkpoint pair statistics are written to a folder (``--cache``)
whose files are committed in :data:`GPU_RECORDS`, from which every later ``--measure`` reads
them (its README gives the window's command).
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
# the GPU cells' per-checkpoint pair statistics, measured where they were trained (committed)
GPU_RECORDS = Path("results/records/lineage_level/long-gpu")
SMOLLM2_TOKENIZER = Path("runs/smollm2/tokenizer.json")  # the real-model study's cousins write it
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
    tokenizer_file: Path | None = None  # a tokenizer.json no cell trains (SmolLM2's own)
    device: str = "cpu"  # 'gpu': trained only when named, not one of STAGES

    @property
    def trained_where_measured(self) -> bool:
        """A GPU cell's checkpoints stay on the machine that trained it: its statistics come
        back through :data:`GPU_RECORDS`."""
        return self.device == "gpu"


def _smollm2_cell(seeds, steps: int) -> TrainConfig:
    """SmolLM2-135M's whole shape (the ``smollm2-135m`` preset) trained in bfloat16 on a GPU,
    the cousins' optimiser settings (experiments/real_model/models/smollm2.json) with longer
    sequences and batches."""
    return TrainConfig(
        preset="smollm2-135m", seeds=tuple(seeds), seq_len=512, batch_size=32, steps=steps,
        warmup=steps // 100, lr=1e-3, min_lr=1e-4, weight_decay=0.1, corpus_max_mb=64.0,
        data_seed=0, bf16=True, save_every=steps // 8, eval_every=steps // 8, eval_batches=8,
        log_every=25, keep_every=None, keep_last=1,
        keep_steps=(steps // 8, steps // 4, steps // 2, steps))


CELLS = {
    "L2-F344-long": LongCell(_cell(128, 4, 4, 344, 2, range(16), 25_000), tuple(CODE)),
    "L12-F344-long": LongCell(_cell(128, 4, 4, 344, 12, range(8), 2_500), tuple(CODE),
                              "L2-F344-long"),
    "L2-F1536-long": LongCell(_cell(576, 9, 3, 1536, 2, range(6), 2_500), tuple(CODE),
                              "L2-F344-long"),
    "L2-F344-prose": LongCell(_cell(128, 4, 4, 344, 2, range(100, 108), 4_000), tuple(PROSE),
                              "L2-F344-long"),
    "L30-F1536-smollm2": LongCell(_smollm2_cell(range(4), 1_000), tuple(CODE),
                                  tokenizer_file=SMOLLM2_TOKENIZER, device="gpu"),
}
GPU_CELLS = tuple(c for c, spec in CELLS.items() if spec.device == "gpu")
# (cell, the step its stage stops at): every cell to its first decade, the cheapest first
STAGES = (("L2-F344-long", 4_000), ("L2-F344-prose", 4_000), ("L12-F344-long", 2_500),
          ("L2-F1536-long", 2_500), ("L2-F344-long", 25_000))


def folder(cell: str, runs_dir: Path = RUNS_DIR) -> Path:
    return Path(runs_dir) / cell


def tokenizer(cell: str, runs_dir: Path = RUNS_DIR) -> Path | None:
    """The tokenizer a cell reads with: its own (None: trained on its corpus), or the one of the
    cell it shares it with."""
    c = CELLS[cell]
    if c.tokenizer_file is not None:
        return Path(c.tokenizer_file)
    return None if c.tokenizer_of is None else run_folder.tokenizer_path(folder(c.tokenizer_of,
                                                                             runs_dir))


def train_argv(cell: str, runs_dir: Path = RUNS_DIR, stop_at: int | None = None,
               expand: bool = False) -> list[str]:
    """The ``bornbiased train`` arguments of one cell (every setting spelled out; ``expand``:
    the corpus's globs expanded, as a child process needs them)."""
    c = CELLS[cell]
    tc = c.run if stop_at is None else dataclasses.replace(c.run, stop_at=stop_at)
    tok = tokenizer(cell, runs_dir)
    corpus = family.expand(c.corpus, cell) if expand else list(c.corpus)
    return [*train_command(tc, corpus, folder(cell, runs_dir)),
            *(["--tokenizer", str(tok)] if tok else []), "--no-progress"]


def command(cell: str, runs_dir: Path = RUNS_DIR, stop_at: int | None = None) -> str:
    """The ``bornbiased train`` command line of one cell."""
    return shlex.join(["bornbiased", *train_argv(cell, runs_dir, stop_at)])


def ensure(cell: str, runs_dir: Path = RUNS_DIR, stop_at: int | None = None,
           progress: bool = True) -> Path:
    """Train one cell to ``stop_at`` (default: its last step), resuming it from its latest
    checkpoint; a cell already there is left as it is."""
    c = CELLS[cell]
    tc = c.run if stop_at is None else dataclasses.replace(c.run, stop_at=min(stop_at,
                                                                               c.run.steps))
    ensure_inputs(cell, runs_dir)
    return train.ensure(tc, family.expand(c.corpus, cell), folder(cell, runs_dir),
                        tokenizer_path=tokenizer(cell, runs_dir), progress=progress,
                        what=f"the long level cell {cell}", remedy="use another --runs-dir")


def ensure_inputs(cell: str, runs_dir: Path = RUNS_DIR) -> None:
    """A ``UserError`` when the tokenizer a cell reads is not here."""
    c = CELLS[cell]
    if c.tokenizer_of is not None and not tokenizer(cell, runs_dir).is_file():
        from bornbiased_jax.errors import UserError

        raise UserError(f"the long cell {cell} reads {c.tokenizer_of}'s tokenizer, which is not "
                        f"trained yet in {folder(c.tokenizer_of, runs_dir)}: train that cell "
                        f"first")
    if c.tokenizer_file is not None and not Path(c.tokenizer_file).is_file():
        from bornbiased_jax.errors import UserError

        raise UserError(f"the long cell {cell} reads the tokenizer {c.tokenizer_file}, which is "
                        f"not on this machine: the real-model study writes it from SmolLM2's "
                        f"GGUF file (python -m experiments real_model --model M.gguf --steps "
                        f"cousins); on a lent GPU, carry it")


def reached(cell: str, runs_dir: Path = RUNS_DIR) -> int:
    """The latest checkpoint's step of a cell (0: not started)."""
    from bornbiased_jax.training.checkpoints import run_steps

    f = folder(cell, runs_dir)
    steps = run_steps(f) if f.exists() else []
    return max(steps, default=0)


def stages(cells=None) -> list[tuple[str, int]]:
    """The stages to train: :data:`STAGES` (of ``cells`` only, when given), then each GPU cell
    named in ``cells`` to its last step (a GPU cell is never trained unless named)."""
    out = [(c, stop) for c, stop in STAGES if not cells or c in cells]
    return out + [(c, spec.run.steps) for c, spec in CELLS.items()
                  if spec.device == "gpu" and cells and c in cells]


def train_stages(cells=None, runs_dir: Path = RUNS_DIR, log=print,
                 seconds: float | None = None) -> None:
    """Every stage of :func:`stages`, in order, each resumed where it stopped. With
    ``seconds``, training stops when that much time has passed (each stage then runs as a child
    process, interrupted at the limit: what it checkpointed is kept, and a later call resumes
    from there) -- how a GPU window's piece ends in time to measure what it trained."""
    import time

    t_end = None if seconds is None else time.monotonic() + seconds
    for cell, stop in stages(cells):
        if reached(cell, runs_dir) >= min(stop, CELLS[cell].run.steps):
            continue
        log(f"{cell}: to step {stop:,}: {command(cell, runs_dir, stop)}")
        if t_end is None:
            ensure(cell, runs_dir, stop, progress=False)
        else:
            left = t_end - time.monotonic()
            if left <= 0 or not _train_child(cell, runs_dir, stop, left):
                log(f"{cell}: stopped at the time limit, at step {reached(cell, runs_dir):,}")
                return
        log(f"{cell}: at step {reached(cell, runs_dir):,}")


def _train_child(cell: str, runs_dir: Path, stop: int, seconds: float) -> bool:
    """Train one stage in a child ``bornbiased train`` for at most ``seconds`` (then SIGTERM,
    and SIGKILL a minute later: a checkpoint is a folder renamed into place once written, so a
    stop keeps every complete one); True when it finished in time. A failure of the child is a
    ``UserError``."""
    import subprocess
    import sys

    ensure_inputs(cell, runs_dir)
    child = subprocess.Popen([sys.executable, "-m", "bornbiased_jax.cli",
                              *train_argv(cell, runs_dir, stop, expand=True)])
    try:
        rc = child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        child.terminate()
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        return False
    if rc != 0:
        from bornbiased_jax.errors import UserError

        raise UserError(f"training the long cell {cell} failed (exit status {rc}): "
                        f"{command(cell, runs_dir, stop)}")
    return True
