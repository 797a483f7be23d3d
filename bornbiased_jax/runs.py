"""The training-run folder: run.json's schema, checkpoints and metrics, read and written here.

A run lives in one folder::

    run.json          the run's settings ("train_config", :class:`TrainConfig`), the full model
                      configuration ("model_config", ``dataclasses.asdict(ModelConfig)``) and a
                      fingerprint of its data ("data"); all three are checked on resume. A run
                      continued from another model records it ("init_from")
    tokenizer.json    the BPE the run trained (or was given)
    checkpoints/<k>/  Orbax checkpoints: params, Adam moments, step, data position
    metrics.jsonl     one JSON line per logged step (train loss, lr, grad norm; val loss/ppl)
    loss_curve.png    training and validation loss

A run trains one or several initialisation seeds (``TrainConfig.seeds``) on the same batches.
Its checkpoints hold every seed: each parameter and Adam moment carries a leading seed axis,
in the order of :func:`run_seeds` (a single-seed run has an axis of one); ``step`` and
``data_position`` are shared. Checkpoints written before the seed axis existed (one seed,
no axis) are read as an axis of one (:func:`checkpoint_has_seed_axis`). A metrics record of
a many-seed run holds per-seed lists (``loss``, ``grad_norm``, ``val_loss``, ``val_ppl``, in
seed order) and the seeds (``seeds``); a single-seed run's record holds numbers, as before;
:func:`seed_metrics` reads either as one seed's records.

The folder's file names (:data:`RUN_INFO`, :data:`TOKENIZER`, ...) and the rule that splits a
run's corpus into training and held-out documents (:func:`validation_split`) are written here
alone: every reader of a run (sources, the studies, ``bornbiased sinks``) goes through them.
:func:`train_command` spells a :class:`TrainConfig` as the ``bornbiased train`` command line.

Module dependencies run one way: ``train -> sources -> runs`` and ``train -> runs``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from bornbiased_jax.config import ModelConfig, apply_overrides, get_preset, recorded_differences
from bornbiased_jax.defaults import SEED_LIMIT, SEED_RANGE
from bornbiased_jax.errors import UserError

SCHEDULES = ("cosine", "linear", "constant")

# The folder's files (the module docstring), named here alone.
RUN_INFO = "run.json"
TOKENIZER = "tokenizer.json"
CHECKPOINTS = "checkpoints"
METRICS = "metrics.jsonl"
LOSS_CURVE = "loss_curve.png"


def run_info_path(folder: str | Path) -> Path:
    return Path(folder) / RUN_INFO


def is_run(folder: str | Path) -> bool:
    """Whether ``folder`` holds a training run (its run.json)."""
    return run_info_path(folder).is_file()


def tokenizer_path(folder: str | Path) -> Path:
    return Path(folder) / TOKENIZER


def checkpoints_path(folder: str | Path) -> Path:
    """The run's Orbax checkpoint folder, absolute (as Orbax wants it)."""
    return (Path(folder) / CHECKPOINTS).absolute()


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


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Table 14 defaults where they apply; sizes for a CPU run.

    ``batch_size`` is the global batch in sequences per optimiser step, split into
    ``grad_accum`` micro-batches (Table 14: 128 = 2 x 2 GPUs x 32). ``steps`` is the length of
    the learning-rate schedule; training stops after ``stop_at`` steps (default: ``steps``).
    ``seed`` is the initialisation seed of a single-seed run; ``seeds`` (two or more distinct
    seeds) trains one model per seed in one program on the same batches, in the same order
    (``data_seed``), and ``seed`` is then left at 0; a one-seed ``seeds`` is the same run as
    that ``seed``. ``model_set`` holds ``KEY=VALUE`` model settings applied on top of the
    preset (:func:`config.apply_overrides`), e.g. ``("attn_output_transform=sqrt_i",)``; they
    are recorded in run.json. ``init_from`` names a model source (a training run,
    ``PATH@STEP``, ``PATH#SEED@STEP``, or a Hugging Face folder) whose parameters start the run
    instead of ``seed``'s initialisation: continued pretraining on another corpus (paper
    Table 5). The architecture and tokenizer are then the source's (``preset`` and
    ``model_set`` are not used); Adam moments, the step count and the learning-rate schedule
    start fresh. ``fsdp`` shards parameters and Adam moments over the devices instead of
    copying them to each (``sharding.RULES_FSDP``). ``bos`` puts the tokenizer's
    beginning-of-sequence token (``bos_token``, default ``defaults.BOS_TOKEN``) at position 0
    of every training and validation block, and ``doc_aligned`` starts every block at a
    document start (``data.make_blocks``); runs recorded before these existed had neither.
    ``schedule`` "constant" keeps ``lr`` after the warmup (``min_lr`` unused)."""

    preset: str = "llama2-cpu"
    seq_len: int = 128
    batch_size: int = 16
    grad_accum: int = 1
    steps: int = 200
    lr: float = 6e-4
    min_lr: float = 6e-5
    warmup: int = 20
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    b1: float = 0.9
    b2: float = 0.95
    bf16: bool = False
    schedule: str = "cosine"
    seed: int = 0
    data_seed: int = 0
    vocab_size: int = 4096
    val_fraction: float = 0.05
    corpus_max_mb: float = 8.0
    eval_every: int = 25
    eval_batches: int = 4
    log_every: int = 5
    save_every: int = 50
    keep_last: int = 3
    keep_every: int | None = None
    stop_at: int | None = None
    model_set: tuple[str, ...] = ()
    init_from: str | None = None
    fsdp: bool = False
    seeds: tuple[int, ...] = ()
    bos: bool = False
    bos_token: str | None = None
    doc_aligned: bool = False

    def __post_init__(self):
        pos = ["seq_len", "batch_size", "grad_accum", "steps", "vocab_size", "eval_every",
               "eval_batches", "log_every", "save_every", "keep_last"]
        for f in pos:
            if int(getattr(self, f)) < 1:
                raise UserError(f"{f} must be >= 1, got {getattr(self, f)}")
        if self.batch_size % self.grad_accum:
            raise UserError(f"batch_size {self.batch_size} is not divisible by grad_accum "
                            f"{self.grad_accum}")
        if self.schedule not in SCHEDULES:
            raise UserError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.bos_token is not None and not self.bos:
            raise UserError(f"bos_token {self.bos_token!r} (--bos-token) names the BOS token of "
                            f"a run with bos (--bos); add --bos or drop --bos-token")
        if self.warmup < 0 or self.warmup >= self.steps:
            raise UserError(f"warmup must lie in [0, steps), got {self.warmup}")
        if self.keep_every is not None and self.keep_every < 1:
            raise UserError("keep_every must be >= 1")
        if self.stop_at is not None and not 1 <= self.stop_at <= self.steps:
            raise UserError(f"stop_at must lie in [1, steps={self.steps}], got {self.stop_at}")
        self._check_seeds()
        preset = get_preset(self.preset)  # an unknown name is a UserError listing the presets
        if self.seq_len > preset.max_seq_len:
            raise UserError(f"seq_len {self.seq_len} exceeds the maximum context "
                            f"{preset.max_seq_len} of preset {self.preset}")
        object.__setattr__(self, "model_set", tuple(self.model_set))
        apply_overrides(preset, self.model_set)
        if self.init_from is not None and self.model_set:
            raise UserError("model settings (--model-set) cannot be combined with init_from: "
                            "the architecture is the source model's")

    def _check_seeds(self) -> None:
        seeds = tuple(int(s) for s in self.seeds)
        bad = [s for s in seeds + (int(self.seed),) if not 0 <= s < SEED_LIMIT]
        if bad:
            raise UserError(f"seeds must lie in {SEED_RANGE}, got {bad[:5]}")
        if len(set(seeds)) != len(seeds):
            raise UserError(f"seeds must be distinct, got {list(seeds)[:10]}...")
        if seeds and self.seed != 0:
            raise UserError("give either seed (--seed) or seeds (--seeds), not both")
        if len(seeds) == 1:  # one seed in a list is that seed's single-seed run
            object.__setattr__(self, "seed", seeds[0])
            seeds = ()
        if len(seeds) > 1 and self.init_from is not None:
            raise UserError("init_from starts a run from one source model's parameters, so "
                            "several seeds (--seeds) would train copies of one model; train "
                            "several seeds from a preset, or one continuation per source")
        object.__setattr__(self, "seeds", seeds)

    @property
    def init_seeds(self) -> tuple[int, ...]:
        """The initialisation seeds in training (and checkpoint) order: ``seeds``, or
        ``(seed,)``."""
        return self.seeds or (self.seed,)

    @property
    def last_step(self) -> int:
        """The step after which this invocation stops."""
        return self.steps if self.stop_at is None else self.stop_at

    # Fields that may differ between the first run and a resume of it. Not ``steps``: it sets
    # the schedule's length (see train.py's docstring).
    # ``fsdp`` changes where the state lives, not what it is (as the number of devices does).
    RESUMABLE = ("stop_at", "eval_every", "eval_batches", "log_every", "save_every",
                 "keep_last", "keep_every", "fsdp")


# TrainConfig fields that ``bornbiased train`` has no flag for (Table 14's values are kept)
NO_FLAG = ("grad_clip", "b1", "b2", "val_fraction")
SWITCHES = ("bf16", "fsdp", "bos", "doc_aligned")  # boolean flags: present or absent


def train_command(tc: TrainConfig, corpus, out: str | Path) -> list[str]:
    """The ``bornbiased train`` arguments that train ``tc`` on ``corpus`` into ``out``: every
    setting that differs from TrainConfig's defaults, as ``--field-name VALUE`` (``--seeds A:B``
    for a range of seeds); parsing them gives ``tc`` back. A ``UserError`` for a setting the
    command has no flag for (:data:`NO_FLAG`)."""
    default = TrainConfig()
    corpus = [corpus] if isinstance(corpus, (str, Path)) else list(corpus)
    argv = ["train", "--corpus", *[str(c) for c in corpus], "--out", str(out)]
    for f in dataclasses.fields(TrainConfig):
        value = getattr(tc, f.name)
        if value == getattr(default, f.name):
            continue
        if f.name in NO_FLAG:
            raise UserError(f"{f.name} = {value!r} has no flag of bornbiased train (it keeps "
                            f"{getattr(default, f.name)!r}); train this run from Python")
        flag = "--" + f.name.replace("_", "-")
        if f.name in SWITCHES:
            argv.append(flag)
        elif f.name == "model_set":
            argv += [a for item in value for a in ("--model-set", item)]
        elif f.name == "seeds":
            argv += ["--seeds", _seeds_text(value)]
        elif str(value).startswith("-"):  # argparse would read "-1e-05" as an option
            argv.append(f"{flag}={value}")
        else:
            argv += [flag, str(value)]
    return argv


def _seeds_text(seeds) -> str:
    """'0:32' for consecutive seeds, else '1,5,9'."""
    seeds = [int(s) for s in seeds]
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}:{seeds[-1] + 1}"
    return ",".join(map(str, seeds))


def settings_differences(saved_tc: dict, tc: TrainConfig) -> dict[str, tuple]:
    """{field: (saved, now)} for each setting of ``tc`` that a resume must keep (all but
    ``TrainConfig.RESUMABLE``) and that differs from run.json's ``train_config`` ``saved_tc``."""
    now = jsonable(dataclasses.asdict(tc))  # tuples as run.json's lists
    saved_tc = dict(saved_tc)
    saved_tc.setdefault("model_set", [])  # runs recorded before model settings existed
    saved_tc.setdefault("schedule", "cosine")  # ... and before the linear schedule
    saved_tc.setdefault("seeds", [])  # ... and before many-seed runs
    saved_tc.setdefault("bos", False)  # ... and before BOS tokens and document-aligned blocks
    saved_tc.setdefault("bos_token", None)
    saved_tc.setdefault("doc_aligned", False)
    return {k: (saved_tc.get(k), v) for k, v in now.items()
            if k not in TrainConfig.RESUMABLE and saved_tc.get(k) != v}


def model_config(tc: TrainConfig, vocab_size: int) -> ModelConfig:
    """The preset (with ``tc.model_set`` applied), the tokenizer's vocabulary and every
    parameter seed-dependent."""
    cfg = dataclasses.replace(apply_overrides(get_preset(tc.preset), tc.model_set),
                              vocab_size=vocab_size,
                              shared_embedding=False)
    from bornbiased_jax import model  # JAX only when a model is built, not for --help

    model.check_seq_len(cfg, tc.seq_len)
    return cfg


def jsonable(obj):
    """``obj`` as JSON would read it back (tuples become lists), for comparisons."""
    return json.loads(json.dumps(obj))


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
            "model_config": jsonable(dataclasses.asdict(cfg)),
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
            return ModelConfig(**info["model_config"]), info
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


def run_steps(path: str | Path) -> list[int]:
    """The complete checkpoints of a run folder, ascending (Orbax renames a checkpoint's
    temporary folder to its step number only once it is fully written)."""
    ck = Path(path) / CHECKPOINTS
    if not ck.is_dir():
        return []
    return sorted(int(p.name) for p in ck.iterdir()
                  if p.name.isdigit() and (p / "default").is_dir())


def checkpoint_dir(path: str | Path, step: int) -> Path:
    """The Orbax item folder of checkpoint ``step`` of a run: ``<step>/default``, where the
    training loop's ``orbax.checkpoint.CheckpointManager`` (train.py) puts its single item."""
    return checkpoints_path(path) / str(step) / "default"


def checkpoint_has_seed_axis(path: str | Path, step: int, cfg: ModelConfig) -> bool:
    """Whether checkpoint ``step`` stores parameters with a leading seed axis (every checkpoint
    since many-seed runs exist) or without (a single-seed run's older checkpoints), from the
    checkpoint's metadata (no array is read)."""
    import jax
    import orbax.checkpoint as ocp

    from bornbiased_jax import model

    try:
        tree = ocp.PyTreeCheckpointer().metadata(checkpoint_dir(path, step)).item_metadata.tree
        stored = len(tree["params"]["embed"]["embedding"].shape)
    except Exception as e:  # Orbax raises many types for damaged or foreign files
        raise UserError(f"checkpoint {step} of {str(path)!r} does not load: its metadata is "
                        f"unreadable ({type(e).__name__}: {str(e)[:300]})") from None
    want = len(jax.eval_shape(lambda: model.init(cfg, jax.random.key(0)))
               ["embed"]["embedding"].shape)
    return stored == want + 1


def load_checkpoint_params(path: str | Path, step: int, cfg: ModelConfig,
                           seed_index: int = 0) -> dict:
    """The parameters of seed number ``seed_index`` (its position in :func:`run_seeds`) at
    checkpoint ``step`` of a run, as host arrays; the optimiser state and the data position are
    not read; a many-seed checkpoint's parameters are read for every seed, and seed
    ``seed_index``'s are returned."""
    import jax
    import orbax.checkpoint as ocp

    from bornbiased_jax import model

    abstract = jax.eval_shape(lambda: model.init(cfg, jax.random.key(0)))
    axis = checkpoint_has_seed_axis(path, step, cfg)
    info = read_run_info(path)
    n_seeds = len(run_seeds(info))
    if not 0 <= seed_index < (n_seeds if axis else 1):
        raise UserError(f"run {str(path)!r} has {n_seeds} seed(s); no seed number {seed_index}")
    if axis:
        abstract = jax.tree.map(lambda a: jax.ShapeDtypeStruct((n_seeds,) + a.shape, a.dtype),
                                abstract)
    restore_args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), abstract)
    try:
        out = ocp.PyTreeCheckpointer().restore(checkpoint_dir(path, step),
                                               args=ocp.args.PyTreeRestore(
            item={"params": abstract}, restore_args={"params": restore_args},
            partial_restore=True))
    except Exception as e:  # Orbax raises many types for damaged or foreign files
        raise UserError(f"checkpoint {step} of {str(path)!r} does not load "
                        f"({type(e).__name__}: {str(e)[:300]})") from None
    params = out["params"]
    if jax.tree.map(lambda a: a.shape, abstract) != jax.tree.map(lambda a: a.shape, params):
        raise UserError(f"checkpoint {step} of {str(path)!r} does not match the run's model "
                        f"config {cfg.name}")
    return jax.tree.map(lambda a: a[seed_index], params) if axis else params


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
    is a UserError listing the differences ("other settings than ``what``; ``remedy``"). A continuation (``init_from``) names its source by
    path; the runs' folder may have moved since, so only the source's folder name and step
    must agree."""
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
