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
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from bornbiased_jax.errors import UserError
from bornbiased_jax.files import progress
from bornbiased_jax.fingerprint.methods import matched as M
from bornbiased_jax.fingerprint.runner import rejection as SM
from bornbiased_jax.fingerprint.methods import unit_matching as U
from bornbiased_jax.fingerprint.runner.compare import MATCHED_MAX_T, MATCHED_SEQS, Settings
from bornbiased_jax.fingerprint.methods.rencontres import fisher_log_p, partial_rencontres_log_sf
from bornbiased_jax.fingerprint.methods.result import ALPHA
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sources import load_source
from bornbiased_jax.training import run_folder
from experiments.lineage import level_families as LF
from experiments.common import seed_family as SF

ALPHAS = (ALPHA, ALPHA / 2)  # the matched test alone; its leg of the any-pair verdict
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


def log_p(stats: dict, slack: int, direction: str = "both") -> float:
    """The matched test's log p of a pair from its :func:`pair_stats` at ``slack``."""
    def one(d):
        return fisher_log_p(np.array([partial_rencontres_log_sf(n, m, K - slack)
                                      for K, n, m in stats[f"dir_{d}"]]))
    if direction == "both":
        return max(one("a"), one("b"))
    return one(direction)


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


def _rows(pairs, slack: int, direction: str = "both") -> list[dict]:
    return [{"a": p["a"], "b": p["b"], "matched": math.exp(log_p(p, slack, direction))}
            for p in pairs]


def _among(pairs, seeds) -> list:
    s = set(seeds)
    return [p for p in pairs if p["a"] in s and p["b"] in s]


def halves(seeds: list[int]) -> tuple[list[int], list[int]]:
    """(fit seeds, held-out seeds): the first and the second half."""
    h = len(seeds) // 2
    return list(seeds[:h]), list(seeds[h:])


def fit_slack(pairs) -> int:
    """The smallest slack u >= 0 at which at most a share a of ``pairs`` reject at a, for
    a = alpha and a = alpha / 2."""
    worst = max((K for p in pairs for K, _, _ in p["dir_a"] + p["dir_b"]), default=0)
    for u in range(worst + 1):
        rows = _rows(pairs, u)
        if all(np.mean([r["matched"] <= a for r in rows]) <= a for a in ALPHAS):
            return u
    return worst


def rates(pairs, slack: int, direction: str = "both") -> dict:
    rows = _rows(pairs, slack, direction)
    return {str(a): SM.rate(rows, "matched", a) for a in ALPHAS}


def summarise(out: dict) -> dict:
    """Per cell: the initialisations' rates (exact direction), the trained pairs' rate at
    slack 0, the fitted slack on the first half of the seeds; the default slack (the largest
    fit); per cell the held-out rates at it; and the mean K of trained pairs (the shared units
    the slack must cover)."""
    from experiments.common import level_rule as LR

    cells_out = {}
    for name, c in out["cells"].items():
        fit_seeds, held = halves(c["seeds"])
        cells_out[name] = {
            "units": c["units"], "layers": c["layers"], "d_model": c["d_model"],
            "seeds": len(c["seeds"]), "rows_per_model": c["rows_per_model"],
            "init": rates(c["init"], 0, "a"),
            "trained_slack0": rates(c["trained"], 0),
            "fit_slack": fit_slack(_among(c["trained"], fit_seeds)),
            "fit_pairs": len(_among(c["trained"], fit_seeds)),
            "held_out_pairs": len(_among(c["trained"], held)),
            "mean_K": float(np.mean([K for p in c["trained"] for K, _, _ in p["dir_b"]])),
            "max_K": int(max(K for p in c["trained"] for K, _, _ in p["dir_b"]))}
    default = max(c["fit_slack"] for c in cells_out.values())
    for name, c in out["cells"].items():
        _, held = halves(c["seeds"])
        r = rates(_among(c["trained"], held), default)
        cells_out[name]["held_out"] = r
        cells_out[name]["held_out_power"] = {
            str(rt): LR.power(rt, ALPHA, len(held), 1) for rt in (0.02, 0.03, 0.05, 0.08)}
        init = cells_out[name]["init"][str(ALPHA)]
        cells_out[name]["init_level"] = _judge(init, ALPHA, len(c["seeds"]))
        cells_out[name]["held_out_level"] = {
            str(a): _judge(r[str(a)], a, len(held)) for a in ALPHAS}
    return {"cells": cells_out, "default_slack": default, "settings": out["settings"]}


def _judge(rate: dict, alpha: float, models: int) -> dict:
    from experiments.common import level_rule as LR

    se = rate.get("jackknife", {}).get("se", 0.0)
    rejected, z = LR.level_rejected(rate["rate"], se, alpha, models)
    return {"rejected": bool(rejected), "z": z}


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
