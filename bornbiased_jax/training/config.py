"""A run's settings: :class:`TrainConfig` (Table 14's defaults, checked when made), the
model configuration it gives (:func:`model_config`), which settings a resume must keep
(:func:`settings_differences`), and the ``bornbiased train`` command line that spells it
(:func:`train_command`).

Nothing here reads or writes a file or imports JAX: ``bornbiased train --help`` builds its
flags from :class:`TrainConfig`, and ``bornbiased_jax.training.run_folder`` records it in
run.json.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.config_io import apply_overrides
from bornbiased_jax.presets import get_preset
from bornbiased_jax.defaults import BOS_TOKEN, SEED_LIMIT, SEED_RANGE
from bornbiased_jax.errors import UserError

SCHEDULES = ("cosine", "linear", "constant")
SEED_BATCHING = ("auto", "vmap", "map")  # how a step trains several seeds (training.step)


def _field(default, doc: str):
    """A TrainConfig field with its one-sentence ``doc``: ``bornbiased train --help`` shows it as
    the flag's help (:func:`field_help`), so each setting is described once, here."""
    return dataclasses.field(default=default, metadata={"help": doc})


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Table 14 defaults where they apply; sizes for a CPU run. Each field's doc (its
    ``metadata["help"]``, :func:`field_help`) says what it sets.

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

    preset: str = _field("llama2-cpu", "model preset to train (the architecture; the "
                         "vocabulary comes from the tokenizer); 'bornbiased presets' lists them")
    seq_len: int = _field(128, "tokens per training window, the context length T")
    batch_size: int = _field(16, "global batch in sequences per optimiser step, split into "
                             "--grad-accum micro-batches (Table 14: 128 = 2 x 2 GPUs x 32)")
    grad_accum: int = _field(1, "micro-batches per optimiser step (gradient accumulation); it "
                             "must divide --batch-size")
    steps: int = _field(200, "length of the learning-rate schedule in optimiser steps, where "
                        "training stops unless --stop-at says earlier; cannot change on resume")
    lr: float = _field(6e-4, "peak learning rate of AdamW, reached at the end of the warmup")
    min_lr: float = _field(6e-5, "learning rate at the end of the cosine or linear decay "
                           "(unused with --schedule constant)")
    warmup: int = _field(20, "steps of linear warmup to --lr, in [0, --steps)")
    weight_decay: float = _field(0.1, "AdamW's decoupled weight decay")
    grad_clip: float = _field(1.0, "global gradient-norm clipping threshold (Table 14)")
    b1: float = _field(0.9, "AdamW's beta1 (Table 14)")
    b2: float = _field(0.95, "AdamW's beta2 (Table 14)")
    bf16: bool = _field(False, "compute the forward and backward passes in bfloat16 (the "
                        "parameters and optimiser state stay float32)")
    schedule: str = _field("cosine", "learning rate after the linear warmup: cosine to "
                           "--min-lr (Table 14), linear to --min-lr, or constant at --lr")
    seed: int = _field(0, "initialisation seed of the model's parameters (a single-seed run; "
                       "--seeds trains several)")
    data_seed: int = _field(0, "seed of the batch order: runs with the same data seed see the "
                            "same batches in the same order, whatever their initialisation "
                            "seeds")
    vocab_size: int = _field(4096, "vocabulary of the byte-level BPE trained on the corpus "
                             "when no --tokenizer is given")
    val_fraction: float = _field(0.05, "share of the corpus held out for validation (the last "
                                 "documents, in sorted path order)")
    corpus_max_mb: float = _field(8.0, "MiB of corpus text read at most (a Bigram-Backcopy "
                                  "task: MiB of training sequences at one token per byte)")
    eval_every: int = _field(25, "steps between validation-loss evaluations")
    eval_batches: int = _field(4, "validation batches of --batch-size sequences per evaluation")
    log_every: int = _field(5, "steps between training-loss records in metrics.jsonl")
    save_every: int = _field(50, "steps between Orbax checkpoints")
    keep_last: int = _field(3, "how many of the latest checkpoints are kept")
    keep_every: int | None = _field(None, "also keep every checkpoint whose step is a multiple "
                                    "of this (default: only the --keep-last latest)")
    keep_steps: tuple[int, ...] = _field((), "also keep the checkpoints at these steps, e.g. "
                                         "250,1000,4000 (geometric spacing along a long run); "
                                         "each a multiple of --save-every or the last step")
    stop_at: int | None = _field(None, "stop after this step (default: --steps); the "
                                 "learning-rate schedule still spans --steps, so a later run "
                                 "with a larger --stop-at (or none) continues it exactly")
    model_set: tuple[str, ...] = _field((), "a model setting on top of the preset "
                                        "(repeatable), e.g. attn_output_transform=sqrt_i or "
                                        "attn_output_gate=true; recorded in run.json")
    init_from: str | None = _field(None, "start from this model source's parameters instead "
                                   "of a seed's initialisation: a training run PATH@STEP (one "
                                   "seed of a many-seed run: PATH#SEED@STEP), a Hugging Face "
                                   "folder or a GGUF file (continued pretraining on another "
                                   "corpus); the architecture and tokenizer are the source's, "
                                   "and optimiser, step and schedule start fresh")
    fsdp: bool = _field(False, "shard parameters and Adam moments over the devices (FSDP) "
                        "instead of copying them to each")
    seeds: tuple[int, ...] = _field((), "train one model per initialisation seed in one "
                                    "program, all on the same batches: '0:32', '1,5:8' "
                                    "(instead of --seed; not with --init-from); each seed of "
                                    "the run is the model source OUT#SEED or OUT#SEED@STEP")
    bos: bool = _field(False, "put a beginning-of-sequence token at position 0 of every "
                       "training and validation window (BOS + T-1 text tokens as the model's "
                       f"input); the BPE trained for the run gets the token '{BOS_TOKEN}'. "
                       "On the command line (--bos/--no-bos) the default for --init-from an HF "
                       "folder or GGUF file is whether its tokenizer adds one (add_bos_token), "
                       "with that token; else no BOS")
    bos_token: str | None = _field(None, "with --bos and a given --tokenizer: the string of "
                                   f"that tokenizer's BOS token, e.g. '<s>' "
                                   f"(default: '{BOS_TOKEN}')")
    doc_aligned: bool = _field(False, "start every window at a document start (one window per "
                               "document, running on into the next documents when it is "
                               "shorter) instead of cutting the joined token stream into "
                               "consecutive windows")

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
        self._check_keep_steps()
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

    def _check_keep_steps(self) -> None:
        steps = sorted({int(k) for k in self.keep_steps})
        bad = [k for k in steps if not 1 <= k <= self.steps or
               (k % self.save_every and k != self.steps)]
        if bad:
            raise UserError(f"keep_steps {bad}: each kept step must lie in [1, steps="
                            f"{self.steps}] and be a checkpoint's step, a multiple of "
                            f"save_every={self.save_every} or the last step")
        object.__setattr__(self, "keep_steps", tuple(steps))

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
    # the schedule's length (see ``bornbiased_jax.training``'s docstring).
    # ``fsdp`` changes where the state lives, not what it is (as the number of devices does).
    RESUMABLE = ("stop_at", "eval_every", "eval_batches", "log_every", "save_every",
                 "keep_last", "keep_every", "keep_steps", "fsdp")


def field_help(name: str) -> str:
    """The doc of TrainConfig's field ``name``: the help of its ``bornbiased train`` flag."""
    return TrainConfig.__dataclass_fields__[name].metadata["help"]


# TrainConfig fields that ``bornbiased train`` has no flag for (Table 14's values are kept)
NO_FLAG = ("grad_clip", "b1", "b2", "val_fraction")
# The fields whose flag is not ``--field-name``: the name every command gives the idea
# (``sinks --bpe-vocab`` sizes the same BPE); the field keeps its name in run.json
FLAGS = {"vocab_size": "--bpe-vocab"}
SWITCHES = ("bf16", "fsdp", "bos", "doc_aligned")  # boolean flags: present or absent


def train_command(tc: TrainConfig, corpus, out: str | Path) -> list[str]:
    """The ``bornbiased train`` arguments that train ``tc`` on ``corpus`` into ``out``: every
    setting that differs from TrainConfig's defaults, as ``--field-name VALUE`` (the flags of
    :data:`FLAGS` by their own names; ``--seeds A:B`` for a range of seeds); parsing them gives
    ``tc`` back. A ``UserError`` for a setting the command has no flag for
    (:data:`NO_FLAG`)."""
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
        flag = flag_of(f.name)
        if f.name in SWITCHES:
            argv.append(flag)
        elif f.name == "model_set":
            argv += [a for item in value for a in ("--model-set", item)]
        elif f.name == "seeds":
            argv += ["--seeds", _seeds_text(value)]
        elif f.name == "keep_steps":
            argv += [flag, ",".join(str(k) for k in value)]
        elif str(value).startswith("-"):  # argparse would read "-1e-05" as an option
            argv.append(f"{flag}={value}")
        else:
            argv += [flag, str(value)]
    return argv


def flag_of(name: str) -> str:
    """The ``bornbiased train`` flag of TrainConfig's field ``name``: ``--field-name``, or
    its entry in :data:`FLAGS`."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


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


def check_batch_splits(tc: TrainConfig, n_processes: int) -> None:
    """A UserError unless each micro-batch splits evenly over ``n_processes`` processes (each
    process loads its own rows); checked before any work, by the CLI before the processes
    even connect."""
    micro = tc.batch_size // tc.grad_accum
    if micro % n_processes:
        raise UserError(f"the micro-batch {micro} (batch_size / grad_accum) does not split over "
                        f"{n_processes} processes; use a multiple of {n_processes} (and of the "
                        f"total number of devices)")
