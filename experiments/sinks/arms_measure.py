"""Train and measure the sink arms (:mod:`experiments.sinks.arms`), seed by seed.

Each cell (an arm's seed group) is one ``bornbiased train --seeds`` run in ``RUNS/<cell>``
(resumable; a finished run is
not trained again). Every seed's kept checkpoints, and step 0 (its initialisation), are measured
on the same evaluation draws of the Bigram-Backcopy task (split "eval/T=<T>" of the run's data
seed, never training draws; ``<s>`` first), NUM_SEQS sequences per length:

  * the per-sample sink rate at every length of the cell (eps 0.25, the paper's, and 0.3),
    Gu et al.'s setting (T = 64, eps 0.3), the strongest head's and the mean alpha^1
    (:func:`experiments.sinks.regime_measure.length_row`);
  * held-out loss: mean next-token NLL on NUM_SEQS sequences of T + 1 = 129 characters, with
    its standard error over sequences (the Table-7 analogue; the task's floor is the bigram
    entropy, so differences are small and judged between seeds);
  * copy accuracy after triggers and bigram accuracy elsewhere (``bigram_backcopy.copy_accuracy``).

An arm's record is saved as ``RUNS/<arm>/arms.json`` with its settings and reused on a rerun
while the settings match. experiments/sinks_arms.py is the command line.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from bornbiased_jax import bigram_backcopy, files
from bornbiased_jax.files import progress
from bornbiased_jax.sources import load_source
from experiments.sinks.arms import arm_of, merge_groups
from bornbiased_jax.probes.perplexity import perplexity
from experiments.sinks.regime import COPY_T, Cell
from experiments.sinks.regime_measure import (
    NUM_SEQS,
    measure_checkpoint,
    measured,
    train,
)
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps

TRAIN_LOSS_EVERY = 50  # the training loss kept in the record, every this many steps


def _binned_loss(metrics: list[dict]) -> list[list[float]]:
    """[[step, mean training loss over the logged steps in (step - TRAIN_LOSS_EVERY, step]]]
    for every multiple of TRAIN_LOSS_EVERY that has a logged loss (one batch's loss is noisy)."""
    bins: dict[int, list[float]] = {}
    for r in metrics:
        if "loss" in r:
            end = -(-r["step"] // TRAIN_LOSS_EVERY) * TRAIN_LOSS_EVERY
            bins.setdefault(end, []).append(float(r["loss"]))
    return [[end, round(sum(v) / len(v), 5)] for end, v in sorted(bins.items())]


def measure_model(source: str, cell: Cell, task, windows, nll_windows) -> dict:
    """The arms' measurements of one model source (``RUN#SEED@STEP``): the grid's
    (``measure_checkpoint``: sink rates, Gu et al.'s rate, copy accuracy) and the held-out
    NLL on ``nll_windows``."""
    m = load_source(source)
    ck = measure_checkpoint(m, cell, windows, task)
    copy = ck.pop("copy")
    del ck["copy_accuracy"]
    ppl = perplexity(m.params, m.cfg, None, len(nll_windows), nll_windows.shape[1] - 1, 0,
                     windows=nll_windows)
    return {**ck, "nll": ppl["log_ppl"], "nll_se": ppl["log_ppl_se"], **copy}


def measure(cell: Cell, folder: Path, log=progress) -> list[dict]:
    """Every seed of ``cell``'s run at step 0 and every kept checkpoint: a list over seeds of
    {"seed", "checkpoints": [measure_model(...) + "val_loss" (the trainer's, if logged)],
    "train_loss": :func:`_binned_loss`}."""
    task = bigram_backcopy.load(bigram_backcopy.check_single(cell.corpus))
    cache = {}

    def windows(T):
        if T not in cache:
            cache[T] = bigram_backcopy.eval_windows(task, T, NUM_SEQS, cell.data_seed)
        return cache[T]

    T_nll = min(COPY_T, cell.seq_len) + 1
    nll_windows = bigram_backcopy.eval_windows(task, T_nll, NUM_SEQS, cell.data_seed)
    metrics = run_folder.read_metrics(folder)
    seeds = cell.init_seeds
    out = []
    for i, seed in enumerate(seeds):
        mine = run_folder.seed_metrics(metrics, i) if len(seeds) > 1 else metrics
        vl = {r["step"]: r["val_loss"] for r in mine if "val_loss" in r}
        loss = _binned_loss(mine)
        cks = []
        for step in [0] + run_steps(folder):
            src = f"{folder}#{seed}@{step}" if len(seeds) > 1 else f"{folder}@{step}"
            ck = measure_model(src, cell, task, windows, nll_windows)
            ck["val_loss"] = vl.get(step)
            log(f"  {cell.name}#{seed}@{step}: Gu rate {ck['gu']['rate']:.3f}, sink rate "
                + ", ".join(f"T={r['T']}: {r['rate']:.2f}" for r in ck["paper"])
                + f", held-out NLL {ck['nll']:.4f}, copy acc. {ck['copy_accuracy']:.3f}")
            cks.append(ck)
        out.append({"seed": seed, "checkpoints": cks, "train_loss": loss})
    return out


def run_arms(cells, root: Path, only=None, train_runs: bool = True, log=progress) -> dict:
    """The arms' record: every cell of an arm named in ``only`` (default: all) trained (if
    ``train_runs``) and measured by :func:`run_arm`; every other cell taken from its saved
    ``arms.json`` when it was measured before with the same settings (never trained or
    measured here). Seed groups are merged per arm; cells with no record are listed under
    ``not_measured``. A run for a few arms therefore keeps the other arms' results."""
    groups, missing = {}, []
    for cell in cells:
        if only is None or arm_of(cell.name) in only:
            log(f"== {cell.name}")
            rec = run_arm(cell, root, train_runs=train_runs, log=log)
        else:
            rec = measured(Path(root) / cell.name / "arms.json", cell)
        if rec is None:
            missing.append(cell.name)
        else:
            groups.setdefault(arm_of(cell.name), []).append(rec)
    return {"arms": {arm: merge_groups(recs) for arm, recs in groups.items()},
            "not_measured": missing}


def run_arm(cell: Cell, root: Path, train_runs: bool = True, log=progress) -> dict | None:
    """Train (if ``train_runs``) and measure arm ``cell`` under ``root``, reusing
    ``arms.json`` where it was made with the same settings; the arm's record, or None when its
    run is not finished and ``train_runs`` is False."""
    folder = Path(root) / cell.name
    saved = folder / "arms.json"
    settings = json.loads(json.dumps(dataclasses.asdict(cell)))
    if (rec := measured(saved, cell)) is not None:
        log(f"{cell.name}: measured before ({saved})")
        return rec
    if train_runs:
        train(cell, folder, log)
    elif not run_folder.finished(folder, cell.train_config(), what=f"arm {cell.name}",
                                 remedy="remove the folder or run without --no-train"):
        log(f"{cell.name}: not trained ({folder}); skipped")
        return None
    summ = run_folder.summary(folder)
    cfg, _ = run_folder.run_config(folder)
    rec = {"name": cell.name, "settings": settings,
           "command": "bornbiased " + " ".join(cell.train_argv(folder)),
           "model": {"n_layers": cfg.n_layers, "n_heads": cfg.n_heads, "d_model": cfg.d_model,
                     "vocab_size": cfg.vocab_size,
                     "attn_output_transform": cfg.attn_output_transform,
                     "attn_output_gate": cfg.attn_output_gate},
           "lengths": cell.lengths(), "num_seqs": NUM_SEQS,
           "train_seconds": summ["train_seconds"], "tokens": summ["tokens"]}
    t0 = time.time()
    rec["seeds"] = measure(cell, folder, log)
    rec["measure_seconds"] = round(time.time() - t0, 1)
    files.write_json(saved, rec)
    return rec


ARMS_CPU = dict(runs_dir="runs/sinks-arms", grid="cpu")
ARMS_PAPER = dict(runs_dir="runs/sinks-arms-paper", grid="paper")


def main(argv: list[str]) -> None:
    """Sec. 6.2's claims where the baseline grows sinks: the five arms, several seeds each.

    In the regime the sink-regime grid found (Bigram-Backcopy on a standard-library file,
    llama2-tiny with 2 layers and 1 head, weight decay 0.5, constant learning rate 3e-3 after 100
    warmup steps, 3,000 steps of 16 x 128 characters; experiments/sinks/arms.py), every
    arm -- baseline, Positional Amplification sqrt(i), Positional Attenuation sqrt(i/T) (T = 128, the
    trained context), head-wise RMSNorm, and a sigmoid output gate (not from the paper) -- trains
    seeds 0-3, then seeds 4-7, each group in one ``bornbiased train --seeds`` run on the same batches
    in the same order (an arm's seeds are those of its groups that have been trained). Every
    seed's checkpoints (every 250 steps, and step 0) are measured on the same 100 evaluation draws
    per length: sink rates per sample at T = 32, 64, 128 (eps 0.25 and 0.3), Gu et al.'s setting,
    held-out NLL and copy accuracy (experiments/sinks/arms_measure.py). Verdicts are
    seed-level: 95 % t intervals over seeds, differences paired seed by seed.

        nice -n 10 python -m experiments sinks_arms                # train (resumable) and measure
        python -m experiments sinks_arms --arms baseline attenuation
        python -m experiments sinks_arms --no-train                # measure finished runs only
                                                                   # (an arm's unfinished groups
                                                                   # are left out of it)

    ``--scale paper`` (a GPU): eight seeds, 3 layers, 10,000 steps, the same task.
    """
    from experiments import render
    from experiments.common.cli import parse, user_errors_exit, write
    from experiments.sinks import arms as sinks_arms

    def extra(p):
        p.add_argument("--runs", type=Path, default=None,
                       help="folder of the arms' run folders (default: runs/sinks-arms, "
                            "runs/sinks-arms-paper with --scale paper)")
        p.add_argument("--arms", nargs="+", default=None, choices=sinks_arms.ARM_NAMES,
                       help="train and measure only these arms, every seed group of each "
                            "(default: all, the baseline first); the record keeps the other "
                            "arms' earlier measurements (never retrained)")
        p.add_argument("--no-train", action="store_true",
                       help="measure finished runs only; do not train or resume any")
        p.add_argument("--results", type=Path, default=None,
                       help="also rewrite this RESULTS.md from the records (CPU scale)")

    with user_errors_exit("sinks_arms"):
        args, s = parse("sinks_arms", main.__doc__, ARMS_CPU, ARMS_PAPER, extra, argv=argv)
        t0 = time.time()
        cells = sinks_arms.CPU if s["grid"] == "cpu" else sinks_arms.PAPER
        runs_dir = args.runs or Path(s["runs_dir"])
        records = run_arms(cells, runs_dir, only=args.arms, train_runs=not args.no_train,
                           log=lambda m: print(m, flush=True))
        if "baseline" not in records["arms"]:
            raise SystemExit("sinks_arms: the baseline is not measured; train it first "
                             "(without --no-train, with baseline among --arms)")
        s = dict(s, runs_dir=str(runs_dir), cells=[c.name for c in cells])
        write(args, "sinks_arms", s, records, sinks_arms.markdown(records),
              sinks_arms.figure(records), t0)
        if args.results and args.scale == "cpu":
            print(render.sections(render.write(Path(args.results), args.records))
                  .get("sinks_arms", ""))
