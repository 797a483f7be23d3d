"""The any-pair verdict's matched leg between two trained models, per MLP width and depth: its
level on the hardest negatives (seeds trained on identical data in one program,
:mod:`experiments.lineage.level_families`, and the 32-seed family at F = 176), the slack fitted
on half the seeds of each cell and judged on the other half, and the count that becomes the
default (beyond the paper).

Every model reads the token ids the matched leg of ``bornbiased fingerprint`` reads with its
defaults (``compare.Settings``'s n and T, the first ``compare.MATCHED_SEQS`` sequences up to
``compare.MATCHED_MAX_T``). For every pair of a cell's seeds the test runs across shapes at
slack 0 (``unit_matching.match_layers``: the screen's layer choices do not depend on the slack)
and keeps, per direction and layer, the chosen pair's K and its null's sizes (n, m), so the
p-value at any slack follows without another pass:

  init      the pairs of the cell's initialisations (step 0): exact where one model is an
            initialisation, so the rate at alpha must not exceed alpha (the rule of
            ``experiments.common.level_rule``, which can fail);
  trained   the pairs of the final models: the rate at slack 0; the smallest slack (units per
            layer pair) that brings the rate among the first half of the seeds to at most a, at
            a = alpha and at a = alpha / 2 (the any-pair verdict's leg), is the cell's fit;
            the rate among the other half at the default slack (the largest fit over the
            cells: ``defaults.MATCHED_TRAINED_SLACK``) is the held-out level, judged by the
            same rule, with its simulated power.

The slack, the rates and their judgement from these statistics are pure functions
(:mod:`experiments.common.level_fit`), which the rows render from without the models.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bornbiased_jax.errors import UserError
from bornbiased_jax.files import progress
from bornbiased_jax.fingerprint.methods import matched as M
from bornbiased_jax.fingerprint.runner import rejection as SM
from bornbiased_jax.fingerprint.methods import unit_matching as U
from bornbiased_jax.fingerprint.runner.compare import MATCHED_MAX_T, MATCHED_SEQS, Settings
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sources import load_source
from bornbiased_jax.training import run_folder
from experiments.lineage import level_families as LF
from experiments.common.level_fit import (ALPHAS, fit_slack, halves, log_p,  # noqa: F401
                                          rates, summarise)
from experiments.common import seed_family as SF

# The defaults of `bornbiased fingerprint` that fix what the matched leg reads
DEFAULTS = dict(n=Settings().n, seq_len=Settings().seq_len, seqs=MATCHED_SEQS,
                t_views=MATCHED_MAX_T, probe_seed=Settings().probe_seed)


def cells(runs_dir: Path = LF.RUNS_DIR, family_dir: Path = SF.RUNS_DIR) -> dict[str, dict]:
    """name -> {"folder", "seeds", "tc"} of every cell: the 32-seed family (L2-F176) and the
    level families."""
    out = {"L2-F176": {"folder": Path(family_dir) / SF.NAME, "seeds": list(SF.SEEDS),
                       "tc": SF.RUN}}
    for name, tc in LF.CELLS.items():
        out[name] = {"folder": LF.folder(name, runs_dir), "seeds": list(tc.seeds), "tc": tc}
    return out


def pair_stats(pre_a, pre_b) -> dict:
    """Per direction and layer of the test across shapes at slack 0: [K, n, m] of the chosen
    layer pair ('dir_a': BASE's layers, re-pairing BASE; 'dir_b': SUSPECT's), and the
    choices."""
    lm = U.match_layers(pre_a, pre_b)
    a = [lm.counts[(l, int(lm.to_b[l]))] for l in range(len(pre_a))]
    b = [lm.counts[(int(lm.to_a[l]), l)] for l in range(len(pre_b))]
    return {"dir_a": [[c.K, c.n_a, c.m_a] for c in a],
            "dir_b": [[c.K, c.n_b, c.m_b] for c in b],
            "to_b": lm.to_b.tolist(), "to_a": lm.to_a.tolist()}


def measure_cell(name: str, cell: dict, s: dict = DEFAULTS, log=progress) -> dict:
    """The pair statistics of one cell's final models and of its initialisations, and how the
    cell was trained (``train``: steps, global batch, T and vocabulary from its run.json)."""
    folder, seeds, tc = cell["folder"], cell["seeds"], cell["tc"]
    if not run_folder.finished(folder, tc, what=f"the level cell {name}",
                               remedy="use another runs folder"):
        raise UserError(f"the level cell {name} is not trained in {folder}: run "
                        f"'python -m experiments.lineage_level --train' (the 32-seed family: "
                        f"'python -m experiments.seed_family')")
    cfg, info = run_folder.run_config(folder)
    tokens = np.asarray(probe_inputs("tokens", cfg, s["n"], s["seq_len"],
                                     s["probe_seed"])[:s["seqs"]])[:, :s["t_views"]]
    out = {"units": cfg.d_ff, "layers": cfg.n_layers, "d_model": cfg.d_model,
           "seeds": seeds, "rows_per_model": int(tokens.shape[0] * (tokens.shape[1] - M.DROP)),
           "steps": tc.steps,
           "train": {**{k: info["train_config"][k] for k in ("steps", "batch_size", "seq_len")},
                     "vocab_size": info["data"]["vocab_size"]}}
    for kind, at in (("init", "@0"), ("trained", "")):
        pres = [M.preactivations(load_source(f"{folder}#{k}{at}", shared_embedding=False).params,
                                 cfg, tokens) for k in seeds]
        pairs = []
        for i, j in SM.all_pairs(len(seeds)):
            pairs.append({"a": seeds[i], "b": seeds[j], **pair_stats(pres[i], pres[j])})
        out[kind] = pairs
        log(f"  {name}: {len(pairs)} {kind} pairs")
        del pres
    return out


def measure(names, runs_dir: Path = LF.RUNS_DIR, family_dir: Path = SF.RUNS_DIR,
            cache: Path | None = None, s: dict = DEFAULTS, log=progress) -> dict:
    """The record: every cell's pair statistics (kept per cell in ``cache``/<cell>.json and
    read back when the settings and the layer screen's constants match, so a stopped
    measurement resumes by cell), summarised."""
    import json

    from bornbiased_jax import files
    from bornbiased_jax.fingerprint.methods.unit_matching import screen_settings

    all_cells = cells(runs_dir, family_dir)
    out = {"settings": dict(s), "cells": {}}
    for name in names:
        f = None if cache is None else Path(cache) / f"{name}.json"
        if f is not None and f.is_file():
            saved = json.loads(f.read_text())
            if saved.get("settings") == dict(s) and saved.get("screen") == screen_settings():
                out["cells"][name] = saved["cell"]
                continue
        cell = measure_cell(name, all_cells[name], s, log)
        if f is not None:
            files.write_json(f, {"settings": dict(s), "screen": screen_settings(),
                                 "cell": cell})
        out["cells"][name] = cell
    return {"raw": out, "summary": summarise(out)}


def main(argv: list[str]) -> None:
    """The lineage verdict's level between two trained models, per MLP width and depth (beyond the
    paper): train the level families (:mod:`experiments.lineage.level_families`) and measure the
    matched leg's false-positive rate on every pair of unrelated seeds of each cell, the slack
    fitted on half the seeds and judged on the other half (:mod:`experiments.lineage.level`);
    the record is results/records/lineage_level/lineage_level.json, RESULTS.md's level table.

        python -m experiments lineage_level --train                 # train (or resume) the cells
        python -m experiments lineage_level --train --cells L2-F344 # one cell
        python -m experiments lineage_level --measure               # measure every trained cell
        python -m experiments lineage_level --print-commands        # their bornbiased train lines

    The 32-seed family (cell L2-F176) is ``python -m experiments seed_family``'s.
    """
    import argparse

    from experiments.common.cli import (add_records_flag, command_line, records_root,
                                        user_errors_exit)

    p = argparse.ArgumentParser(prog="python -m experiments lineage_level",
                                description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", type=Path, default=LF.RUNS_DIR)
    p.add_argument("--family-dir", type=Path, default=SF.RUNS_DIR,
                   help="where the 32-seed family (cell L2-F176) is trained")
    p.add_argument("--cells", nargs="+", choices=["L2-F176", *LF.CELLS],
                   default=None, help="the cells to train or measure (default: all, in order)")
    p.add_argument("--train", action="store_true", help="train (or resume) the cells")
    p.add_argument("--measure", action="store_true",
                   help="measure the cells (each kept in --cache as it finishes) and write the "
                        "record")
    p.add_argument("--cache", type=Path, default=Path("results/lineage_level/cache"),
                   help="per-cell pair statistics, read back by a rerun with the same settings")
    add_records_flag(p)
    p.add_argument("--print-commands", action="store_true",
                   help="print each cell's bornbiased train command and exit")
    args = p.parse_args(argv)
    cells = args.cells or ["L2-F176", *LF.CELLS]
    trainable = [c for c in cells if c in LF.CELLS]
    if args.print_commands:
        for c in trainable:
            print(LF.command(c, args.runs_dir))
        return
    if args.train:
        with user_errors_exit("lineage_level"):
            for c in trainable:
                print(f"{c}: {LF.ensure(c, args.runs_dir)}", flush=True)
    if args.measure:
        import time

        from experiments import render

        t0 = time.time()
        with user_errors_exit("lineage_level"):
            out = measure(cells, args.runs_dir, args.family_dir, args.cache)
        from bornbiased_jax import files

        run = files.run_record(command_line("lineage_level", argv), time.time() - t0,
                               experiment="lineage_level", scale="cpu",
                               settings=out["raw"]["settings"])
        root = args.records if args.records is not None else records_root("cpu")
        rec = render.save_record(root, "lineage_level", {"run": run, "records": out})
        print(f"wrote {rec}; default slack {out['summary']['default_slack']} units")
