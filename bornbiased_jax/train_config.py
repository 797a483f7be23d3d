"""The settings of a training run (``TrainConfig``), apart from the training code.

``bornbiased train``'s flags and defaults come from these fields, so the command line builds its
parser from this module without importing JAX, Optax or Orbax (``train.py`` does).
"""

from __future__ import annotations

import dataclasses

from bornbiased_jax.config import apply_overrides, get_preset
from bornbiased_jax.errors import UserError

SCHEDULES = ("cosine", "linear")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Table 14 defaults where they apply; sizes for a CPU run.

    ``batch_size`` is the global batch in sequences per optimiser step, split into
    ``grad_accum`` micro-batches (Table 14: 128 = 2 x 2 GPUs x 32). ``steps`` is the length of
    the learning-rate schedule; training stops after ``stop_at`` steps (default: ``steps``).
    ``model_set`` holds ``KEY=VALUE`` model settings applied on top of the preset
    (:func:`config.apply_overrides`), e.g. ``("attn_output_transform=sqrt_i",)``; they are
    recorded in run.json. ``init_from`` names a model source (a training run, ``PATH@STEP``, or
    a Hugging Face folder) whose parameters start the run instead of ``seed``'s initialisation:
    continued pretraining on another corpus (paper Table 5). The architecture and tokenizer are
    then the source's (``preset`` and ``model_set`` are not used); Adam moments, the step count
    and the learning-rate schedule start fresh. ``fsdp`` shards parameters and Adam moments
    over the devices instead of copying them to each (``sharding.RULES_FSDP``)."""

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
        if self.warmup < 0 or self.warmup >= self.steps:
            raise UserError(f"warmup must lie in [0, steps), got {self.warmup}")
        if self.keep_every is not None and self.keep_every < 1:
            raise UserError("keep_every must be >= 1")
        if self.stop_at is not None and not 1 <= self.stop_at <= self.steps:
            raise UserError(f"stop_at must lie in [1, steps={self.steps}], got {self.stop_at}")
        preset = get_preset(self.preset)
        if self.seq_len > preset.max_seq_len:
            raise UserError(f"seq_len {self.seq_len} exceeds the maximum context "
                            f"{preset.max_seq_len} of preset {self.preset}")
        object.__setattr__(self, "model_set", tuple(self.model_set))
        apply_overrides(preset, self.model_set)
        if self.init_from is not None and self.model_set:
            raise UserError("model settings (--model-set) cannot be combined with init_from: "
                            "the architecture is the source model's")

    @property
    def last_step(self) -> int:
        """The step after which this invocation stops."""
        return self.steps if self.stop_at is None else self.stop_at

    # Fields that may differ between the first run and a resume of it. Not ``steps``: it sets
    # the schedule's length (see the module docstring).
    # ``fsdp`` changes where the state lives, not what it is (as the number of devices does).
    RESUMABLE = ("stop_at", "eval_every", "eval_batches", "log_every", "save_every",
                 "keep_last", "keep_every", "fsdp")
