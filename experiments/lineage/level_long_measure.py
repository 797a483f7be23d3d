"""The matched leg's shared units along training (beyond the paper): for every long cell
(:mod:`experiments.lineage.level_long`) at every kept checkpoint, every pair of its seeds' models
through the matched test across shapes at slack 0 (:func:`experiments.lineage.level.pair_stats`:
K, n, m per direction and layer, so the p at any slack follows) and, for each of the suspect's
layers and the base layer it chose, what the two share in each view
(:func:`bornbiased_jax.fingerprint.methods.unit_overlap.view_overlap`). The prose cell's seeds
are also paired with the code cell's at the same step (unrelated models trained on different
text). Each checkpoint's pairs are kept in a cache as they finish, so a stopped measurement
resumes by checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bornbiased_jax import files
from bornbiased_jax.files import progress
from bornbiased_jax.fingerprint.methods import matched as M
from bornbiased_jax.fingerprint.methods.attention import attention_test
from bornbiased_jax.fingerprint.methods.unit_matching import screen_settings
from bornbiased_jax.fingerprint.methods.unit_overlap import view_overlap
from bornbiased_jax.fingerprint.runner import rejection as SM
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sources import load_source
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import run_steps
from experiments.lineage import level_long as LL
from experiments.lineage.level import DEFAULTS, pair_stats

CROSS = {"L2-F344-prose": "L2-F344-long"}  # cell -> the cell of other text it is paired with


def kept_steps(cell: str, runs_dir: Path = LL.RUNS_DIR) -> list[int]:
    """The cell's checkpoints at its kept steps (:data:`LL.KEEP` and its last), ascending; a GPU
    cell's latest checkpoint too (its window may end between kept steps, and its checkpoints
    stay behind)."""
    keep = set(LL.CELLS[cell].run.keep_steps)
    have = run_steps(LL.folder(cell, runs_dir))
    if LL.CELLS[cell].trained_where_measured and have:
        keep.add(have[-1])
    return [s for s in have if s in keep]


def checkpoint_info(cell: str, step: int, runs_dir: Path = LL.RUNS_DIR) -> dict:
    """Tokens seen per model at ``step`` and the seeds' held-out loss logged at that step."""
    tc = LL.CELLS[cell].run
    recs = [r for r in run_folder.read_metrics(LL.folder(cell, runs_dir))
            if r.get("step") == step and "val_loss" in r]
    val = recs[-1]["val_loss"] if recs else None
    return {"step": step, "tokens": step * tc.batch_size * tc.seq_len,
            "val_loss": val if val is None or isinstance(val, list) else [val]}


def _tokens(cfg, s: dict) -> np.ndarray:
    return np.asarray(probe_inputs("tokens", cfg, s["n"], s["seq_len"],
                                   s["probe_seed"])[:s["seqs"]])[:, :s["t_views"]]


def _models(cell: str, step: int, runs_dir: Path, s: dict) -> tuple[list, list]:
    """The cell's seeds and, per seed at ``step``, (MLP views, parameters, config)."""
    folder = LL.folder(cell, runs_dir)
    cfg = run_folder.run_config(folder)[0]
    tokens = _tokens(cfg, s)
    seeds = list(LL.CELLS[cell].run.seeds)
    models = []
    for k in seeds:
        params = load_source(f"{folder}#{k}@{step}", shared_embedding=False).params
        models.append((M.preactivations(params, cfg, tokens), params, cfg))
    return seeds, models


def pair_record(a: int, b: int, model_a, model_b) -> dict:
    """One pair's statistics: :func:`pair_stats` of the MLP views and, per layer of B, the
    views' overlap with the layer of A it chose; and the attention test's doubly matched heads
    and p in each direction (:func:`~bornbiased_jax.fingerprint.methods.attention.
    attention_test`), its level between trained models measured on the same pairs."""
    (pre_a, params_a, cfg_a), (pre_b, params_b, cfg_b) = model_a, model_b
    st = pair_stats(pre_a, pre_b)
    st["overlap"] = [view_overlap(pre_a[la], pre_b[lb]) for lb, la in enumerate(st["to_a"])]
    d = attention_test(params_a, cfg_a, params_b, cfg_b).details
    st["attention"] = {k: d[k] for k in ("K_total_a", "K_total_b", "log10_p_a", "log10_p_b",
                                         "heads", "null_mean", "K_per_layer")}
    return {"a": a, "b": b, **st}


def measure_step(cell: str, step: int, runs_dir: Path = LL.RUNS_DIR, s: dict = DEFAULTS,
                 log=progress) -> dict:
    """Every pair of ``cell``'s seeds at ``step`` (and, for a cell of :data:`CROSS`, every
    pair of its seeds with the other cell's at that step)."""
    seeds, pres = _models(cell, step, runs_dir, s)
    out = {**checkpoint_info(cell, step, runs_dir), "pairs": [
        pair_record(seeds[i], seeds[j], pres[i], pres[j])
        for i, j in SM.all_pairs(len(seeds))]}
    log(f"  {cell} @ {step}: {len(out['pairs'])} pairs")
    other = CROSS.get(cell)
    if other is not None and step in kept_steps(other, runs_dir):
        o_seeds, o_pres = _models(other, step, runs_dir, s)
        out["cross"] = {"with": other, "pairs": [
            pair_record(a, b, pa, pb) for a, pa in zip(o_seeds, o_pres)
            for b, pb in zip(seeds, pres)]}
        log(f"  {cell} @ {step}: {len(out['cross']['pairs'])} pairs with {other}")
    return out


def _entry(cell: str, runs_dir: Path) -> dict:
    """A cell's record entry but its steps: widths, depth, seeds, schedule, corpus."""
    cfg = run_folder.run_config(LL.folder(cell, runs_dir))[0]
    tc = LL.CELLS[cell].run
    return {"units": cfg.d_ff, "layers": cfg.n_layers, "d_model": cfg.d_model,
            "seeds": list(tc.seeds), "schedule_steps": tc.steps,
            "corpus": [str(c) for c in LL.CELLS[cell].corpus],
            **({"in_fit": False} if LL.CELLS[cell].trained_where_measured else {}), "steps": {}}


def _current(saved: dict | None, cell: str, step: int, runs_dir: Path, s: dict) -> bool:
    """Whether a cached (cell, step) was measured with these settings and layer screen (and,
    for a cell of :data:`CROSS`, with its cross pairs where the other cell has that step)."""
    return (saved is not None and saved.get("settings") == dict(s)
            and saved.get("screen") == screen_settings()
            and "attention" in saved["step"]["pairs"][0]
            and ("cross" in saved["step"]) == (CROSS.get(cell) is not None and
                                               step in kept_steps(CROSS[cell], runs_dir)))


def _read(f: Path | None) -> dict | None:
    return json.loads(f.read_text()) if f is not None and f.is_file() else None


def gpu_saved(cell: str, gpu_records: Path, runs_dir: Path, s: dict, log=progress) -> dict:
    """{step: cached file} of a GPU cell's checkpoints measured where they were trained and
    committed in ``gpu_records``. Files measured with other settings or layer screen, or made by
    another definition of the cell (seeds, schedule, corpus), are left out, and so are files of
    other training runs than the one that reached furthest (their ``provenance``'s ``run``):
    one record never mixes models of two windows. Each file left out is logged with why."""
    spec = LL.CELLS[cell]
    want = {"seeds": list(spec.run.seeds), "schedule_steps": spec.run.steps,
            "corpus": [str(c) for c in spec.corpus]}
    runs: dict = {}
    for f in sorted(Path(gpu_records).glob(f"{cell}@*.json")):
        saved = _read(f)
        step = int(f.stem.rsplit("@", 1)[1])
        got = {k: saved.get("cell", {}).get(k) for k in want}
        if not _current(saved, cell, step, runs_dir, s):
            log(f"  {f.name}: measured with other settings or layer screen; left out")
        elif got != want:
            log(f"  {f.name}: made by another definition of {cell} ({got}); left out")
        else:
            run = saved.get("provenance", {}).get("run", "unknown")
            runs.setdefault(run, {})[step] = saved
    if not runs:
        return {}
    best = max(runs, key=lambda r: (max(v.get("provenance", {}).get("reached", 0)
                                        for v in runs[r].values()), len(runs[r])))
    for r, steps in runs.items():
        if r != best:
            log(f"  {cell}: steps {sorted(steps)} of another training run ({r}) left out")
    return runs[best]


def provenance(cell: str, runs_dir: Path) -> dict:
    """Where and what a cell's checkpoints were measured from: the device, the step its run
    reached, and its training run (the hash of the run's first logged step: a run trained again
    from scratch elsewhere is another run unless it logs the same numbers)."""
    import datetime
    import hashlib

    import jax

    folder = LL.folder(cell, runs_dir)
    first = (folder / "metrics.jsonl").read_text().split("\n", 1)[0] \
        if (folder / "metrics.jsonl").is_file() else ""
    dev = jax.devices()[0]
    return {"device": f"{dev.platform}: {getattr(dev, 'device_kind', dev.platform)}",
            "reached": LL.reached(cell, runs_dir),
            "run": hashlib.sha256(first.encode()).hexdigest()[:12],
            "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def measure(cells=None, runs_dir: Path = LL.RUNS_DIR, cache: Path | None = None,
            s: dict = DEFAULTS, log=progress, gpu_records: Path = LL.GPU_RECORDS) -> dict:
    """{"settings", "cells": {cell: {"units", "layers", "d_model", "seeds", "steps": {step:
    measure_step}}}} over every kept checkpoint trained so far; each (cell, step) is read back
    from ``cache`` when measured with the same settings and layer screen. A GPU cell's
    checkpoints not on this machine are read from ``gpu_records``, where the files its window
    wrote to its ``cache`` are committed (each carries its cell's entry)."""
    out = {"settings": dict(s), "cells": {}}
    for cell in cells or LL.CELLS:
        here = LL.folder(cell, runs_dir).exists()
        steps = kept_steps(cell, runs_dir) if here else []
        away = gpu_saved(cell, gpu_records, runs_dir, s, log) \
            if LL.CELLS[cell].trained_where_measured else {}
        if not steps and not away:
            continue
        entry = _entry(cell, runs_dir) if steps else {**next(iter(away.values()))["cell"],
                                                      "steps": {}}
        here_from = provenance(cell, runs_dir) if steps and away else None
        if here_from is not None:  # the run here: committed files of another run stay out
            away = {k: v for k, v in away.items()
                    if v.get("provenance", {}).get("run") == here_from["run"]}
        if LL.CELLS[cell].trained_where_measured:
            from_ = here_from or (provenance(cell, runs_dir) if steps else max(
                (v["provenance"] for v in away.values() if "provenance" in v),
                key=lambda p: p["reached"], default=None))
            if from_ is not None:
                entry["provenance"] = from_
        for step in sorted(set(steps) | set(away)):
            if step not in steps:
                entry["steps"][str(step)] = away[step]["step"]
                continue
            f = None if cache is None else Path(cache) / f"{cell}@{step}.json"
            saved = _read(f)
            same_run = not LL.CELLS[cell].trained_where_measured or (
                saved is not None and saved.get("provenance", {}).get("run")
                == entry["provenance"]["run"])
            if _current(saved, cell, step, runs_dir, s) and same_run:
                entry["steps"][str(step)] = saved["step"]
                continue
            got = measure_step(cell, step, runs_dir, s, log)
            if f is not None:
                files.write_json(f, {"settings": dict(s), "screen": screen_settings(),
                                     "cell": {k: v for k, v in entry.items()
                                              if k not in ("steps", "provenance")},
                                     **({"provenance": entry["provenance"]}
                                        if "provenance" in entry else {}),
                                     "step": got})
            entry["steps"][str(step)] = got
        out["cells"][cell] = entry
    return out


def keep_unmeasured(out: dict, path: Path) -> dict:
    """``out`` with the cells of the record at ``path`` that ``out`` lacks, where that record was
    measured with the same settings (a measurement of some cells, or on a machine that has only
    some cells' checkpoints, never drops the others from the record)."""
    old = _read(Path(path))
    if old is None or old.get("records", {}).get("settings") != out["settings"]:
        return out
    cells = {**old["records"]["cells"], **out["cells"]}
    order = [n for n in LL.CELLS if n in cells] + [n for n in cells if n not in LL.CELLS]
    return {**out, "cells": {n: cells[n] for n in order}}


def main(argv: list[str]) -> None:
    """The matched leg's level along training (beyond the paper): train the long level cells
    (:mod:`experiments.lineage.level_long`: same-data seeds with checkpoints at geometric steps, and
    seeds trained on other text), measure every pair of their seeds at every kept checkpoint
    (:mod:`experiments.lineage.level_long_measure`), and write the record
    results/records/lineage_level/lineage_level_long.json, whose law of the slack in training length
    (:mod:`experiments.lineage.level_long_law`) RESULTS.md's level section renders.

        python -m experiments lineage_level_long --train            # every stage, resumed
        python -m experiments lineage_level_long --train --cells L2-F344-long
        python -m experiments lineage_level_long --measure          # the checkpoints trained so far
        python -m experiments lineage_level_long --print-commands
        python -m experiments lineage_level_long --train --measure --cells L30-F1536-smollm2 \\
            --train-seconds 270 --cache "$OUT"/cache \\
            --records "$OUT"                     # a GPU window: its cache files are committed in
                                                 # results/records/lineage_level/long-gpu/

    The record is written with every cell measured now; a cell of the existing record that
    was not measured now (not named in --cells, or its checkpoints not on this machine) is kept
    from it when it was measured with the same settings.

    Training is long (about 20 CPU-hours in all on a 2-core machine); every stage resumes from its
    latest checkpoint, and --measure reads whatever checkpoints exist, so the record grows as the
    cells do.
    """
    import argparse

    from experiments.common.cli import (add_records_flag, command_line, records_root,
                                        user_errors_exit)

    p = argparse.ArgumentParser(prog="python -m experiments lineage_level_long",
                                description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", type=Path, default=LL.RUNS_DIR)
    p.add_argument("--cells", nargs="+", choices=list(LL.CELLS), default=None,
                   help="the cells to train or measure (default: all, in the stages' order; a "
                        "GPU cell is trained only when named)")
    p.add_argument("--train", action="store_true", help="train (or resume) the stages")
    p.add_argument("--train-seconds", type=float, default=None, metavar="S",
                   help="stop training after S seconds (what was checkpointed is kept and "
                        "resumed by the next --train): a GPU window's limit, leaving time to "
                        "--measure")
    p.add_argument("--measure", action="store_true",
                   help="measure every kept checkpoint trained so far and write the record")
    p.add_argument("--cache", type=Path, default=Path("results/lineage_level/long-cache"),
                   help="per-checkpoint pair statistics, read back by a rerun")
    add_records_flag(p)
    p.add_argument("--print-commands", action="store_true",
                   help="print each stage's bornbiased train command and exit")
    args = p.parse_args(argv)
    if args.print_commands:
        for cell, stop in LL.stages(args.cells):
            print(LL.command(cell, args.runs_dir, stop))
        return
    if args.train_seconds is not None and not args.train_seconds > 0:
        p.error(f"--train-seconds must be positive, got {args.train_seconds:g}")
    if not (args.train or args.measure):
        p.error("nothing to do: give --train, --measure or --print-commands")
    with user_errors_exit("lineage_level_long"):
        if args.train:
            LL.train_stages(args.cells, args.runs_dir, log=lambda m: print(m, flush=True),
                            seconds=args.train_seconds)
        if args.measure:
            import time

            from bornbiased_jax import files
            from experiments import render

            t0 = time.time()
            out = measure(args.cells, args.runs_dir, args.cache)
            if not out["cells"]:
                from bornbiased_jax.errors import UserError

                raise UserError(f"no long cell has a kept checkpoint in {args.runs_dir} yet: "
                                f"train first (--train)")
            run = files.run_record(command_line("lineage_level_long", argv), time.time() - t0,
                                   experiment="lineage_level_long", scale="cpu",
                                   settings=out["settings"])
            root = args.records if args.records is not None else records_root("cpu")
            out = keep_unmeasured(out, render.record_path(root, "lineage_level_long"))
            rec = render.save_record(root, "lineage_level_long", {"run": run, "records": out})
            from experiments.lineage.level_long_claims import figure

            png = files.save_figure(figure({"records": out}), args.cache.parent
                                    / "lineage_level_long.png")
            print(f"wrote {rec} and {png}")
