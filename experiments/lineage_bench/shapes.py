"""The lineage benchmark's shape-changed descendants: every edit of
``fingerprint.edits.derivatives.SHAPES`` (MLP width padded, split, pruned or masked; layers dropped,
inserted, stacked or shifted; vocabularies extended, truncated or permuted, some behind a
rotation) applied to each base of the seed family, judged by the verdicts ``bornbiased
fingerprint`` gives, exactly as a user runs them: every model an HF folder with its tokenizer
(remapped where the vocabulary was edited), ``compare_many`` with the command's defaults.

  any_pair      BASE's initialisation unknown (BASE a downloaded model): the permutation and
                the matched test each at alpha / 2, the matched test at the default slack,
                as the command gives it: ``compare_many`` with only the any-pair verdict's
                two legs would stop the permutation leg (``any_pair``), here the legs read
                every input beside matched_init, so the stops are applied to their p-values
                (``any_pair.any_pair_p`` at alpha, the full permutation p standing in for
                the first sequences' where the matched leg found nothing: the verdict at
                least as often 'related' as the command's);
  matched_init  BASE's initialisation known (its training run): the matched test of the
                suspect against it, its null law exact, the test conservative (a discrete
                p: valid, not exact);
  localised     the share of the suspect's layers copied from a BASE layer (the derivative
                states which) that the matched test's table attributes to that layer.

Positives: a base with its own shape-changed suspects; negatives: a base with every other
base's (the seeds share their data and order: the hardest negatives; the matched leg's slack
between trained models is the command's default, the law of training length, recorded per
pair).

    python -m experiments.lineage_bench --shapes    # builds in runs/lineage-bench/shapes/
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import jax
import numpy as np

from bornbiased_jax.files import progress
from bornbiased_jax.fingerprint.edits import derivatives as D
from bornbiased_jax.fingerprint.edits import vocab_edits as VE
from bornbiased_jax.fingerprint.runner.compare import Settings, compare_many
from bornbiased_jax.sources import load_source
from bornbiased_jax.training import run_folder
from experiments.common import seed_family as SF

TESTS = ("permutation", "matched", "matched_init")  # any_pair follows from the first two
ALPHA = 0.01
EDITS = tuple(D.SHAPES)


def build(k: int, work: Path, runs_dir: Path, log=progress) -> dict[str, Path]:
    """Base k as an HF folder and its shape-changed suspects, each with its tokenizer."""
    from bornbiased_jax.hf import save_hf

    folder = Path(runs_dir) / SF.NAME
    tok = json.loads(run_folder.tokenizer_path(folder).read_text())
    base = load_source(f"{folder}#{k}@{SF.RUN.steps}", shared_embedding=False)
    params = jax.tree.map(np.asarray, base.params)
    out = {}
    for edit in ("base", *EDITS):
        dest = Path(work) / f"s{k}-{edit}"
        out[edit] = dest
        if (dest / "tokenizer.json").is_file():
            continue
        d = None if edit == "base" else D.SHAPES[edit]
        key = jax.random.key(100 + k)
        cfg, p = (base.cfg, params) if d is None else D.derive(edit, params, base.cfg, key)
        save_hf(cfg, jax.tree.map(np.asarray, p), dest, overwrite=True)
        data = tok if d is None or d.vocab is None else VE.remap_tokenizer_json(
            tok, d.vocab_origin(base.cfg, key))
        (dest / "tokenizer.json").write_text(json.dumps(data))
        log(f"  built {edit} of seed {k}")
    return out


def localised(result, origin: list) -> float | None:
    """The share of the suspect's copied layers that the matched test attributes to their
    origin (None when no layer is a copy)."""
    chosen = result.details["base_layer_of"]
    copied = [(l, o) for l, o in enumerate(origin) if o is not None]
    return (sum(chosen[l] == o for l, o in copied) / len(copied)) if copied else None


def identity() -> dict:
    """What a base's cached pairs were measured with: the command's settings and what its
    tests computed (``audit.statistic``: the matched statistic and its screen). A cache of other settings (or of none: an older cache) is
    measured again, never reused."""
    import dataclasses

    from bornbiased_jax.fingerprint.runner.audit import statistic

    # the legs read every input here (the any-pair p follows from theirs: _as_command), so
    # the any-pair stops are no part of what the cache measured
    what = {k: v for k, v in statistic().items() if k != "any_pair_stops"}
    return {"settings": json.loads(json.dumps(dataclasses.asdict(Settings(tests=TESTS)))),
            **what}


def cached_pairs(cache: Path, ident: dict) -> list | None:
    """The pairs a base's ``cache`` file holds when they were measured with ``ident``, else
    None (no file, another identity, or a cache written before caches kept one)."""
    if not Path(cache).is_file():
        return None
    saved = json.loads(Path(cache).read_text())
    if isinstance(saved, dict) and saved.get("identity") == ident:
        return saved["pairs"]
    return None


def measure(bases: int, work: Path, runs_dir: Path = SF.RUNS_DIR, log=progress) -> dict:
    """Every (base, suspect) pair's p-values and localisation; cached per base in ``work``
    with the :func:`identity` it was measured with (reused only under the same one)."""
    from bornbiased_jax import files

    folder = Path(runs_dir) / SF.NAME
    built = {k: build(k, work, runs_dir, log) for k in range(bases)}
    ident = identity()
    rows = []
    for k in range(bases):
        cache = Path(work) / f"pairs-s{k}.json"
        saved = cached_pairs(cache, ident)
        if saved is not None:
            rows += [_as_command(r) for r in saved]
            continue
        specs = [(j, e) for j in range(bases) for e in EDITS]
        outs = compare_many(load_source(str(built[k]["base"])),
                            [lambda j=j, e=e: load_source(str(built[j][e])) for j, e in specs],
                            Settings(tests=TESTS),
                            init=lambda: load_source(f"{folder}#{k}@0", shared_embedding=False))
        mine = []
        for (j, e), out in zip(specs, outs):
            r = out["results"]
            origin = D.SHAPES[e].layer_origin(load_source(f"{folder}#{k}@0").cfg)
            mine.append({"base": k, "suspect_of": j, "edit": e, "positive": j == k,
                         "p": {t: float(r[t].p) for t in (*TESTS, "any_pair")},
                         "matched_slack": int(r["matched"].details["slack"]),
                         "matched_K": [int(x) for x in
                                       r["matched"].details.get("K_per_layer", [])],
                         "localised": {t: localised(r[t], origin) for t in
                                       ("matched", "matched_init")}})
        files.write_json(cache, {"identity": ident, "pairs": mine})
        rows += [_as_command(r) for r in mine]
        log(f"  base {k}: {len(mine)} pairs")
    return {"bases": bases, "pairs": rows}


def _as_command(row: dict) -> dict:
    """``row`` with its any-pair p as ``bornbiased fingerprint`` gives it from the two legs'
    p-values (its stops applied: ``any_pair.any_pair_p`` at :data:`ALPHA`)."""
    from bornbiased_jax.fingerprint.methods.any_pair import any_pair_p

    p = dict(row["p"])
    p["any_pair"] = any_pair_p(p["permutation"], p["matched"], alpha=ALPHA)[0]
    return {**row, "p": p}


def summarise(rec: dict, alpha: float = ALPHA) -> dict:
    """Per edit and verdict test: positives found, negatives rejected (with a Clopper-Pearson
    95 % interval), and the mean share of copied layers localised."""
    from bornbiased_jax.stats import clopper_pearson

    out = {}
    for e in EDITS:
        pos = [r for r in rec["pairs"] if r["edit"] == e and r["positive"]]
        neg = [r for r in rec["pairs"] if r["edit"] == e and not r["positive"]]
        row = {}
        for t in ("any_pair", "matched_init", "permutation", "matched"):
            fp = sum(r["p"][t] <= alpha for r in neg)
            row[t] = {"found": sum(r["p"][t] <= alpha for r in pos), "positives": len(pos),
                      "false": fp, "negatives": len(neg),
                      "fpr_ci95": list(clopper_pearson(fp, len(neg))) if neg else None}
        for t in ("matched", "matched_init"):
            loc = [r["localised"][t] for r in pos if r["localised"][t] is not None]
            row[f"localised_{t}"] = float(np.mean(loc)) if loc else None
        out[e] = row
    return out


def clean(work: Path) -> None:
    """Remove the built folders (kept between runs for resuming)."""
    shutil.rmtree(work, ignore_errors=True)


def _fmt_share(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}"
