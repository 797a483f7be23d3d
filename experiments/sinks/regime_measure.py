"""Train and measure the cells of the sink-regime grid (:mod:`experiments.sinks.regime`).

Each cell is a ``bornbiased train`` run in ``RUNS/<cell>`` (resumable; a finished run is not
trained again). Every kept checkpoint, and step 0 (the initialisation), is measured on 100
evaluation sequences per length: Bigram-Backcopy cells on fresh draws of the task (split
"eval/T=<T>", never training draws), text cells on windows of the run's held-out documents (its
last ``val_fraction`` of documents), with the BOS token first where the run trained with it.
Per checkpoint: alpha^1 per sequence, layer and head at the paper's lengths that fit (and
Gu et al.'s T = 64), the sink rate thresholded per sample at eps 0.25 (paper) and 0.3 (Gu et al.),
the strongest head's and the mean alpha^1, the validation loss logged at that step and, for
Bigram-Backcopy, the copy accuracy (``bigram_backcopy.copy_accuracy``). A measured cell is saved as
``RUNS/<cell>/regime.json`` with its settings and reused on a rerun while the settings match.
experiments/sinks_regime.py is the command line.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bornbiased_jax import bigram_backcopy, data, files
from bornbiased_jax.files import progress
from bornbiased_jax.probes.sinks import metric, windows
from bornbiased_jax.sources import load_source
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps
from experiments.sinks.regime import COPY_T, GU_EPS, GU_T, PAPER_EPS, Cell, summarise

NUM_SEQS = 100


def train(cell: Cell, folder: Path, log=progress) -> float | None:
    """Train (or resume) ``cell`` into ``folder`` as a ``bornbiased train`` subprocess with this
    interpreter (so the caller's ``nice`` and PYTHONPATH apply); None if it had finished already,
    else the wall seconds. A failed run raises ``RuntimeError`` with its exit status."""
    if run_folder.finished(folder, cell.train_config(), what=f"grid cell {cell.name}",
                           remedy="remove the folder or rename the cell"):
        return None
    argv = cell.train_argv(folder)
    log("bornbiased " + " ".join(argv))
    t0 = time.time()
    rc = subprocess.call([sys.executable, "-c",
                          "import sys; from bornbiased_jax.cli import main; "
                          "sys.exit(main(sys.argv[1:]))", *argv])
    if rc != 0:
        raise RuntimeError(f"training grid cell {cell.name} failed (exit status {rc})")
    return round(time.time() - t0, 1)


def _val_losses(folder: Path) -> dict[int, float]:
    return {r["step"]: r["val_loss"] for r in run_folder.read_metrics(folder) if "val_loss" in r}


def _windows(cell: Cell, folder: Path):
    """T -> evaluation windows (NUM_SEQS, T), and a note saying what they are."""
    info = run_folder.read_run_info(folder)
    tc = info["train_config"]
    if cell.is_bbm:
        task = bigram_backcopy.load(bigram_backcopy.check_single(cell.corpus))
        return (lambda T: bigram_backcopy.eval_windows(task, T, NUM_SEQS, cell.data_seed), task,
                f"Bigram-Backcopy draws of {cell.corpus[0]} (split eval/T=<T>), <s> first")
    held = run_folder.validation_split(info["corpus"], tc)[1]
    w = windows.text(held, data.load_tokenizer(run_folder.tokenizer_path(folder)), cell.bos,
                     tc.get("bos_token"))
    note = (f"windows of the run's {len(held)} held-out documents ({len(w.ids)} tokens), "
            + (f"BOS (id {w.bos_id}) first" if cell.bos else "no BOS"))
    return (lambda T: metric.bos_windows(w.ids, T, NUM_SEQS, seed=T, bos=w.bos_id), None, note)


def length_row(res: metric.SinkResult) -> dict:
    paper = dataclasses.replace(res, eps=PAPER_EPS)
    gu = dataclasses.replace(res, eps=GU_EPS)
    a = res.alpha_LH
    l, h = np.unravel_index(int(np.argmax(a)), a.shape)
    return {"T": res.T, "rate": paper.rate, "se": paper.rate_se,
            "rate_eps03": gu.rate, "se_eps03": gu.rate_se,
            "alpha_max": float(a.max()), "alpha_max_at": [int(l), int(h)],
            "alpha_mean": float(a.mean()),
            "uniform": float(sum(1.0 / i for i in range(1, res.T + 1)) / res.T)}


def measure_checkpoint(m, cell: Cell, windows, task) -> dict:
    """The grid's measurements of one loaded model (a run's checkpoint, ``load_source``): the
    sink metric at each of the cell's lengths (``windows(T)``), Gu et al.'s rate and, with a
    Bigram-Backcopy ``task``, the copy accuracy."""
    rows = [length_row(r) for r in metric.sink_rates_over_lengths(
        m.params, m.cfg, None, cell.lengths(), NUM_SEQS, PAPER_EPS, windows=windows)]
    g = next(r for r in rows if r["T"] == GU_T)
    out = {"step": m.step, "paper": rows, "gu": {"T": GU_T, "eps": GU_EPS,
                                                  "rate": g["rate_eps03"], "se": g["se_eps03"]}}
    if task is not None:
        T = min(COPY_T, cell.seq_len)
        out["copy"] = bigram_backcopy.copy_accuracy(m.params, m.cfg, task, windows(T))
        out["copy_accuracy"] = out["copy"]["copy_accuracy"]
    return out


def measure(cell: Cell, folder: Path, log=progress) -> dict:
    """Every kept checkpoint of ``cell``'s run, and step 0, measured (module docstring)."""
    windows, task, note = _windows(cell, folder)
    vl = _val_losses(folder)
    cks = []
    for step in [0] + run_steps(folder):
        ck = measure_checkpoint(load_source(f"{folder}@{step}"), cell, windows, task)
        ck["val_loss"] = vl.get(step)
        g = ck["gu"]
        log(f"  {cell.name}@{step}: Gu rate {g['rate']:.3f} ± {g['se']:.3f}, max alpha^1 "
            + ", ".join(f"T={r['T']}: {r['alpha_max']:.3f}" for r in ck["paper"])
            + (f", copy acc. {ck['copy_accuracy']:.3f}" if task is not None else "")
            + ("" if ck["val_loss"] is None else f", val loss {ck['val_loss']:.3f}"))
        cks.append(ck)
    return {"windows": note, "checkpoints": cks}


def measured(saved: Path, cell) -> dict | None:
    """The record saved at ``saved`` when it was measured with ``cell``'s settings (a grid cell
    or a sink arm), else None."""
    if not Path(saved).is_file():
        return None
    rec = json.loads(Path(saved).read_text())
    return rec if rec.get("settings") == json.loads(json.dumps(dataclasses.asdict(cell))) else None


def run_grid(grid, root: Path, only=None, log=progress) -> dict:
    """The grid's record: every cell named in ``only`` (default: all) trained and measured by
    :func:`run_cell`; every other cell taken from its saved ``regime.json`` when it was
    measured before with the same settings (never trained), else left out. A run for a few
    cells therefore keeps the rest of the grid's results instead of dropping them."""
    cells = []
    for cell in grid:
        if only is None or cell.name in only:
            log(f"== {cell.name}")
            cells.append(run_cell(cell, root, log=log))
        elif (rec := measured(Path(root) / cell.name / "regime.json", cell)) is not None:
            cells.append(rec)
        else:
            log(f"== {cell.name}: not measured yet, left out (not among the cells asked for)")
    return {"cells": cells, "grid": [c.name for c in grid],
            "summary": [summarise(c) for c in cells]}


def run_cell(cell: Cell, root: Path, log=progress) -> dict:
    """Train and measure ``cell`` under ``root`` (reusing ``regime.json`` where it was made
    with the same settings); the cell's record."""
    folder = Path(root) / cell.name
    saved = folder / "regime.json"
    settings = dataclasses.asdict(cell)
    if (rec := measured(saved, cell)) is not None:
        log(f"{cell.name}: measured before ({saved})")
        return rec
    wall = train(cell, folder, log)
    summ = run_folder.summary(folder)
    cfg, _ = run_folder.run_config(folder)
    rec = {"name": cell.name, "settings": settings, "is_bbm": cell.is_bbm,
           "command": "bornbiased " + " ".join(cell.train_argv(folder)),
           "model": {"n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
                     "d_model": cfg.d_model, "vocab_size": cfg.vocab_size},
           "lengths": cell.lengths(), "num_seqs": NUM_SEQS,
           "train_seconds": summ["train_seconds"], "wall_seconds_this_call": wall,
           "tokens": summ["tokens"]}
    t0 = time.time()
    rec.update(measure(cell, folder, log))
    rec["measure_seconds"] = round(time.time() - t0, 1)
    files.write_json(saved, rec)
    return rec


REGIME_CPU = dict(runs_dir="runs/sinks-regime", grid="cpu")
REGIME_PAPER = dict(runs_dir="runs/sinks-regime-paper", grid="paper")


def main(argv: list[str]) -> None:
    """Where does the baseline grow attention sinks at this scale? A grid of short training runs.

    Cells (experiments/sinks/regime.py): Bigram-Backcopy on a standard-library file
    (Guo et al.; 1-3 layers, one head, d = 64) and Vim's help text with and without a BOS token
    (Gu et al.; llama2-tiny), weight decay 0.1 and 0.5, constant learning rate after warmup. Each
    cell trains in RUNS/<cell> (resumable; finished and measured cells are skipped on a rerun), and
    every kept checkpoint and the initialisation are measured: the sink rate per sample at the
    paper's lengths that fit (eps 0.25) and in Gu et al.'s setting (T = 64, eps 0.3), the strongest
    head's alpha^1, and for Bigram-Backcopy the copy accuracy (this module). A cell "grew sinks" when its last checkpoint's rates are above 0 by
    2 SE at every length and Gu's rate rose above the initialisation's by 2 SE.

        nice -n 10 python -m experiments sinks_regime                  # the CPU grid
        python -m experiments sinks_regime --cells bbm-L1-wd0.1        # some cells only (the
                                                                       # others' saved results kept)
    """
    from experiments.common.cli import parse, write
    from experiments.sinks import regime as sinks_regime

    def extra(p):
        p.add_argument("--runs", type=Path, default=None,
                       help="folder of the cells' run folders (default: runs/sinks-regime, "
                            "runs/sinks-regime-paper with --scale paper)")
        p.add_argument("--cells", nargs="+", default=None,
                       help="train and measure only these cells (default: the whole grid, in "
                            "order); the record keeps the other cells' earlier measurements "
                            "(never retrained)")

    args, s = parse("sinks_regime", main.__doc__, REGIME_CPU, REGIME_PAPER, extra, argv)
    t0 = time.time()
    grid = sinks_regime.check_grid(sinks_regime.CPU if s["grid"] == "cpu"
                                   else sinks_regime.PAPER)
    if args.cells:
        known = {c.name for c in grid}
        unknown = [c for c in args.cells if c not in known]
        if unknown:
            raise SystemExit(f"unknown cells {unknown}; the grid has {sorted(known)}")
    runs_dir = args.runs or Path(s["runs_dir"])
    records = run_grid(grid, runs_dir, only=args.cells, log=lambda m: print(m, flush=True))
    s = dict(s, runs_dir=str(runs_dir), cells=[c["name"] for c in records["cells"]])
    write(args, "sinks_regime", s, records, sinks_regime.markdown(records),
          sinks_regime.figure(records), t0)
