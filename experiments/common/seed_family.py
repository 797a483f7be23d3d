"""The seed family: thirty-two small models trained from different initialisation seeds on
identical data in an identical order, the unrelated *trained* pairs of a SeedPrint false-positive
study (a lineage test must not call two of these models related; docs/lineage.md).

One ``bornbiased train --seeds 0:32`` run trains all 32 in one program (every seed on the same
batches, ``data_seed`` 0), so the only difference between two models is their initialisation.
Seed K is then the model source ``runs/seed-family/seeds-0-32#K`` (``@STEP`` for a checkpoint),
e.g. ``bornbiased fingerprint runs/seed-family/seeds-0-32#0 runs/seed-family/seeds-0-32#1``.

The continuations (Table 5's setting: a trained model trained further on a shifted corpus) are
``runs/seed-family/cont-prose-sK``: seed K's final checkpoint trained 800 more steps on the
Node.js API documentation (Markdown), with the family's tokenizer; a checkpoint every 100
steps, all kept, so that a lineage test's power can be read against the training distance.

Once trained, the run's settings, its command and its summary (steps, tokens, wall time, each
seed's final validation loss) go to the committed record
``results/records/training/seed_family.json`` (:func:`write_record`), so the run can be rebuilt
and checked where the run folder (``runs/`` is not committed) is gone. The command line is
``python -m experiments seed_family`` (:func:`main`); the SeedPrint study on these models is
:mod:`experiments.seedprint.trained`.

Sizes, chosen to finish within an hour even on a busy 2-core CPU: ``RUN`` below; ``EXPECTED``
says what was measured.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

from bornbiased_jax import files
from bornbiased_jax.training import loop as train
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps
from bornbiased_jax.training.config import TrainConfig, train_command
from experiments.artifacts import portable
from experiments.common import family

SEEDS = tuple(range(32))
NAME = "seeds-0-32"
RUNS_DIR = Path("runs/seed-family")
RECORD = Path("results/records/training/seed_family.json")
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
# Measured on this project's 2-core CPU (the record's train_seconds): 241 s of training for all
# 32 seeds with the CPU's default seed batching, 'map' (about 1 s per step of all of them); 528 s
# as one 'vmap' program; plus about a minute for the BPE.
EXPECTED = "about 5 minutes on a quiet 2-core CPU (241 s of training, measured)"

CONTINUED_SEEDS = tuple(range(8))
CONTINUED_CORPUS = [family.NODE_DOCS_MD]
# A third of the pretraining peak rate, 800 steps (3.2x the pretraining tokens): far enough that
# the continued model moves well away from its source, so that power can be read against the
# distance travelled; weight decay as in pretraining.
CONTINUED = TrainConfig(
    preset="llama2-tiny", seq_len=64, batch_size=16, steps=800, warmup=20, lr=1e-3,
    min_lr=1e-4, weight_decay=0.1, vocab_size=2048, corpus_max_mb=8.0, data_seed=0,
    save_every=100, keep_every=100, keep_last=2, eval_every=100, eval_batches=4, log_every=20)


def command(runs_dir: Path = RUNS_DIR, tc: TrainConfig = RUN) -> str:
    """The ``bornbiased train`` command line of the run (every setting spelled out)."""
    return shlex.join(["bornbiased", *train_command(tc, CORPUS, Path(runs_dir) / NAME),
                       "--no-progress"])


def ensure(runs_dir: Path = RUNS_DIR, progress: bool = True) -> Path:
    """Train the run, resuming it from its latest checkpoint; a finished run is left as it is."""
    return train.ensure(RUN, CORPUS, Path(runs_dir) / NAME, progress=progress)


def continued_name(seed: int) -> str:
    return f"cont-prose-s{seed}"


def ensure_continued(seed: int, runs_dir: Path = RUNS_DIR, progress: bool = False) -> Path:
    """Seed ``seed``'s final model trained further on the prose corpus (``CONTINUED``)."""
    source = f"{(Path(runs_dir) / NAME).absolute()}#{seed}@{RUN.steps}"
    tc = dataclasses.replace(CONTINUED, init_from=source)
    def corpus():  # read only when there is training to do
        return family.corpus("prose", family.Family(RUN, {}, {"prose": CONTINUED_CORPUS}))

    return train.ensure(tc, corpus, Path(runs_dir) / continued_name(seed), progress=progress,
                        what=f"the continuation of seed {seed}", remedy="use another --runs-dir")


def sources(runs_dir: Path = RUNS_DIR, step: int | None = None) -> list[str]:
    """The model source of each seed: 'runs/seed-family/seeds-0-32#K[@STEP]'."""
    at = "" if step is None else f"@{step}"
    return [f"{Path(runs_dir) / NAME}#{k}{at}" for k in SEEDS]


def write_record(folder: Path, path: Path = RECORD, continued: list[Path] = ()) -> dict:
    """The committed record of a finished run (and its continuations): settings, command and
    summary, their paths :func:`~experiments.artifacts.portable`. Continuations already in the
    record are kept when ``continued`` is empty."""
    info = run_folder.read_run_info(folder)
    record = {"run": {"experiment": "seed_family", "command": command(folder.parent),
                      "folder": str(folder), "train_config": info["train_config"],
                      "model_config": info["model_config"], "data": info["data"]},
              "records": [{**run_folder.summary(folder),
                           "seeds": list(run_folder.run_seeds(info)),
                           "steps_saved": run_steps(folder)}]}
    if continued:
        record["continued"] = [
            {"folder": str(c), "train_config": run_folder.read_run_info(c)["train_config"],
             **run_folder.summary(c), "steps_saved": run_steps(c)} for c in continued]
    elif path.exists():
        old = json.loads(Path(path).read_text())
        if "continued" in old:
            record["continued"] = old["continued"]
    record = portable(record)
    files.write_json(path, record)
    return record


def main(argv: list[str]) -> None:
    """Train the seed family: thirty-two llama2-tiny models from different initialisation seeds
    on identical data in an identical order (this module's docstring says what and why), and
    write its record results/records/training/seed_family.json.

        python -m experiments seed_family --print-command   # the bornbiased train command
        python -m experiments seed_family                   # train it (or resume it)
        python -m experiments seed_family --continued       # and continue seeds 0-7 on prose
    """
    import argparse

    from experiments.common.cli import user_errors_exit

    p = argparse.ArgumentParser(prog="python -m experiments seed_family", description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", type=Path, default=RUNS_DIR)
    p.add_argument("--print-command", action="store_true",
                   help="print the bornbiased train command and exit")
    p.add_argument("--continued", action="store_true",
                   help="also continue seeds 0-7 on the prose corpus (runs/seed-family/"
                        "cont-prose-sK)")
    p.add_argument("--record", type=Path, default=RECORD,
                   help="where the finished run's settings and summary are written (JSON)")
    args = p.parse_args(argv)
    if args.print_command:
        print(command(args.runs_dir))
        return
    with user_errors_exit("seed_family"):
        folder = ensure(args.runs_dir)
        conts = [ensure_continued(k, args.runs_dir) for k in CONTINUED_SEEDS] \
            if args.continued else []
        write_record(folder, args.record, conts)
    print(f"trained: {folder} {' '.join(map(str, conts))}; record: {args.record}")
