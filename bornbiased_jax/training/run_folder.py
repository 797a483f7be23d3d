"""The training-run folder: its files, run.json's schema, metrics and summary, read and
written here (the checkpoints' own folder: ``checkpoints``).

A run lives in one folder::

    run.json          the run's settings ("train_config", ``config.TrainConfig``), the full model
                      configuration ("model_config", ``dataclasses.asdict(ModelConfig)``) and a
                      fingerprint of its data ("data"); all three are checked on resume. A run
                      continued from another model records it ("init_from")
    tokenizer.json    the BPE the run trained (or was given)
    checkpoints/<k>/  Orbax checkpoints: params, Adam moments, step, data position
                      (``bornbiased_jax.training.checkpoints``)
    metrics.jsonl     one JSON line per logged step (train loss, lr, grad norm; val loss/ppl)
    loss_curve.png    training and validation loss

A run trains one or several initialisation seeds (``TrainConfig.seeds``) on the same batches,
in the order of :func:`run_seeds`. A metrics record of a many-seed run holds per-seed lists
(``loss``, ``grad_norm``, ``val_loss``, ``val_ppl``, in seed order) and the seeds (``seeds``); a
single-seed run's record holds numbers, as before; :func:`seed_metrics` reads either as one
seed's records.

The folder's file names (:data:`RUN_INFO`, :data:`TOKENIZER`, ...) and the rule that splits a
run's corpus into training and held-out documents (:func:`validation_split`) are written here
alone: every reader of a run (sources, the studies, ``bornbiased sinks``) goes through them.
:func:`finished` tells whether a folder holds a finished run of given settings.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from bornbiased_jax import files
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.config_io import config_record, from_record, recorded_differences
from bornbiased_jax.errors import UserError
from bornbiased_jax.training.checkpoints import run_steps
from bornbiased_jax.training.config import (TrainConfig, jsonable, model_config,
                                            settings_differences)

# The folder's files (the module docstring), named here alone (checkpoints/: ``checkpoints``).
RUN_INFO = "run.json"
TOKENIZER = "tokenizer.json"
METRICS = "metrics.jsonl"
LOSS_CURVE = "loss_curve.png"


def run_info_path(folder: str | Path) -> Path:
    return Path(folder) / RUN_INFO


def is_run(folder: str | Path) -> bool:
    """Whether ``folder`` holds a training run (its run.json)."""
    return run_info_path(folder).is_file()


def tokenizer_path(folder: str | Path) -> Path:
    return Path(folder) / TOKENIZER


def metrics_path(folder: str | Path) -> Path:
    return Path(folder) / METRICS


def loss_curve_path(folder: str | Path) -> Path:
    return Path(folder) / LOSS_CURVE


def _setting(tc, name: str):
    """Field ``name`` of a TrainConfig or of run.json's train_config dict."""
    return tc[name] if isinstance(tc, dict) else getattr(tc, name)


def read_documents(corpus, tc) -> list[str]:
    """The documents a run with settings ``tc`` (a TrainConfig or run.json's train_config)
    reads from ``corpus``: its first ``corpus_max_mb`` MiB of text (a ``UserError`` when there
    is none)."""
    from bornbiased_jax import data

    return data.load_nonempty_corpus(corpus,
                                     max_bytes=int(_setting(tc, "corpus_max_mb") * 2**20))


def validation_split(corpus, tc) -> tuple[list[str], list[str]]:
    """(training, validation) documents of a run with settings ``tc`` on ``corpus``: the one
    split every reader of a run's held-out text uses (``data.split_documents``'s rule over
    :func:`read_documents`)."""
    from bornbiased_jax import data

    return data.split_documents(read_documents(corpus, tc), _setting(tc, "val_fraction"))



def data_fingerprint(train_blocks: np.ndarray, val_blocks: np.ndarray) -> str:
    """run.json's ``data.fingerprint``: a hash of the training and validation blocks."""
    h = hashlib.sha256()
    h.update(train_blocks.tobytes())
    h.update(val_blocks.tobytes())
    return h.hexdigest()[:16]


def fresh_run_info(tc: TrainConfig, cfg: ModelConfig, corpus, train_blocks, val_blocks,
                   vocab_size: int, source=None) -> dict:
    """run.json of a new run (``source``: the ``LoadedModel`` of ``tc.init_from``)."""
    info = {"train_config": dataclasses.asdict(tc),
            "model_config": jsonable(config_record(cfg)),
            "corpus": [str(c) for c in corpus],
            "data": {"n_train_blocks": len(train_blocks),
                     "n_val_blocks": len(val_blocks),
                     "vocab_size": vocab_size,
                     "fingerprint": data_fingerprint(train_blocks, val_blocks)}}
    if source is not None:
        info["init_from"] = {"spec": tc.init_from, "label": source.label,
                             "kind": source.kind, "seed": source.seed, "step": source.step}
    return info


def read_run_info(path: str | Path) -> dict:
    """run.json of run folder ``path``; a UserError if it is missing or unreadable."""
    f = run_info_path(path)
    try:
        info = json.loads(f.read_text())
        info["train_config"]
        return info
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise UserError(f"{str(f)!r} is not a readable run description "
                        f"({type(e).__name__}: {e})") from None


def saved_model_config(saved: dict, path: Path, now: ModelConfig) -> ModelConfig:
    """The run's recorded ModelConfig; a UserError naming the fields where it differs from what
    the preset gives now (e.g. after a preset was changed)."""
    if "model_config" not in saved:
        raise UserError(f"{str(path)!r} records no model configuration ('model_config'); it was "
                        f"made by an older version and cannot be resumed safely; use a new --out")
    diff = recorded_differences(saved["model_config"], now)
    if diff:
        raise UserError(f"the model this run was trained with differs from what preset "
                        f"{saved['train_config'].get('preset')!r} gives now; fields (recorded, "
                        f"now): {diff}. Resume with the code that made the run, or use a new --out")
    return now


def run_config(path: str | Path) -> tuple[ModelConfig, dict]:
    """(model config, run.json) of a run folder: run.json's ``model_config`` when present, else
    rebuilt from ``train_config`` and the tokenizer's vocabulary as :func:`model_config` does."""
    info = read_run_info(path)
    try:
        if "model_config" in info:
            return from_record(info["model_config"]), info
        tc = TrainConfig(**info["train_config"])
        return model_config(tc, int(info["data"]["vocab_size"])), info
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"{str(run_info_path(path))!r} is not a readable run description "
                        f"({type(e).__name__}: {e})") from None


def run_seeds(info: dict) -> tuple[int, ...]:
    """The initialisation seeds of a run, in checkpoint order, from its run.json."""
    tc = info.get("train_config", {})
    try:
        return tuple(int(s) for s in tc.get("seeds") or ()) or (int(tc["seed"]),)
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"run.json records no integer train_config.seed or seeds "
                        f"({type(e).__name__}: {e})") from None


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Records of a metrics file (a run folder's metrics.jsonl, or the file itself); a line
    cut off by a crash is dropped."""
    path = Path(path)
    if path.is_dir():
        path = metrics_path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


PER_SEED_METRICS = ("loss", "grad_norm", "val_loss", "val_ppl")


def seed_metrics(records: list[dict], seed_index: int) -> list[dict]:
    """The records of seed number ``seed_index``: per-seed lists replaced by that seed's
    number (a single-seed run's records are returned as they are for index 0)."""
    out = []
    for r in records:
        one = dict(r)
        one.pop("seeds", None)
        for k in PER_SEED_METRICS:
            if isinstance(r.get(k), list):
                one[k] = r[k][seed_index]
            elif k in r and seed_index:
                raise UserError(f"the metrics of step {r['step']} hold one seed; no seed number "
                                f"{seed_index}")
        out.append(one)
    return out


def finished(folder: str | Path, tc: TrainConfig, what: str = "these",
             remedy: str = "use another folder") -> bool:
    """Whether the run in ``folder`` was made with ``tc`` and has a checkpoint at its last
    step (``tc.steps``); False where there is no run.json yet. A run made with other settings
    is a UserError listing the differences ("other settings than ``what``; ``remedy``"). A
    continuation (``init_from``) names its source by path; the runs' folder may have moved
    since, so only the source's folder name and step must agree."""
    folder = Path(folder)
    if not is_run(folder):
        return False
    saved = read_run_info(folder)["train_config"]
    diff = settings_differences(saved, tc)
    if "init_from" in diff and _source_id(diff["init_from"][0]) == _source_id(tc.init_from):
        del diff["init_from"]
    if diff:
        raise UserError(f"{folder} holds a run made with other settings than {what}; "
                        f"{remedy}. Differences (saved, expected): {diff}")
    return tc.steps in run_steps(folder)


def _source_id(init_from: str | None) -> str | None:
    """'base-s42@500' for '/any/path/base-s42@500'."""
    if init_from is None:
        return None
    path, _, step = init_from.rpartition("@")
    return f"{Path(path).name}@{step}"


def summary(folder: str | Path) -> dict:
    """Tokens, steps, wall time (from the logged throughput) and final validation losses of a
    run (``final_val_loss``: a number for a single-seed run, a list in seed order for a
    many-seed run)."""
    folder = Path(folder)
    info = read_run_info(folder)
    tc = info["train_config"]
    recs = read_metrics(folder)
    steps = max(r["step"] for r in recs)
    tokens = steps * tc["batch_size"] * tc["seq_len"]
    train_s = sum(tc["log_every"] * tc["batch_size"] * tc["seq_len"] / r["tokens_per_s"]
                  for r in recs if "tokens_per_s" in r)
    val = [r for r in recs if "val_loss" in r]
    return {"run": folder.name, "steps": steps, "tokens": tokens, "train_seconds": round(train_s),
            "final_val_loss": val[-1]["val_loss"] if val else None,
            "corpus": info.get("corpus"), "init_from": info.get("init_from")}


def write_new_run(folder: str | Path, run_info: dict, tokenizer=None) -> None:
    """Write a new run's files: its tokenizer (a ``tokenizers.Tokenizer``; None for a corpus
    without one) and run.json, each atomically; the folder is made if need be."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if tokenizer is not None:
        files.write_text(tokenizer_path(folder), tokenizer.to_str())
    files.write_json(run_info_path(folder), run_info)


def keep_metrics(folder: str | Path, step: int, write: bool = True) -> list[dict[str, Any]]:
    """The run's metrics records up to ``step`` (where a resumed run continues), and, with
    ``write``, the metrics file cut back to them (the records a crash left beyond the
    checkpoint are logged again)."""
    records = [r for r in read_metrics(folder) if r["step"] <= step]
    if write:
        files.write_text(metrics_path(folder), "".join(json.dumps(r) + "\n" for r in records))
    return records
