"""Model sources: one spec string names any model a command can run on.

  ``preset:NAME@SEED``  a fresh initialisation of a named preset (``presets.PRESETS``) with an
                        integer seed in [0, 2**32);
  ``PATH`` / ``PATH@STEP``  a ``bornbiased train`` run folder (it holds ``run.json``): the
                        parameters of the latest complete checkpoint, or of checkpoint STEP.
  ``PATH#SEED`` / ``PATH#SEED@STEP``  seed SEED (an initialisation seed the run trained, not a
                        position) of a run, required for a run of several seeds
                        (``train --seeds``) and allowed for a single-seed run (its one seed).
                        ``PATH@0`` is the run's initialisation, rebuilt from its seed and config
                        (training saves no step-0 checkpoint; ``init`` is deterministic), or,
                        for a run continued from another model (``train --init-from``), that
                        model; such a run's ``seed`` is its source's;
  ``PATH``              a Hugging Face model folder (it holds ``config.json``), imported by
                        ``bornbiased_jax.hf.load_hf``;
  ``FILE.gguf``         a llama.cpp GGUF file (LLaMA, Qwen2 or Gemma 3, float or quantized weights,
                        dequantized), imported by ``bornbiased_jax.hf.gguf.load_gguf``; its
                        tokenizer is the file's own.

A preset's embedding group is shared across seeds (``ModelConfig.shared_embedding``, the
Table-1 protocol of App. B.2) unless ``load_source(..., shared_embedding=False)``: so
``preset:X@0`` is the same network in ``bornbiased sweep --model`` and ``bornbiased sinks``,
while ``bornbiased fingerprint`` makes every parameter seed-dependent (as ``bornbiased train``
does) unless given ``--shared-embedding``: a lineage test between seeds that share their
embeddings would test the blocks alone.

A command parses each spec once at its edge (:func:`parse_source`, a :class:`Source`: kind,
path, seed, step, what is known of its initialisation) and hands that value on; every function
here takes a Source or a spec string. ``load_source`` returns a :class:`LoadedModel`;
``sweep.run_probe`` runs a probe on its parameters.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import jax
import jax.numpy as jnp

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.presets import get_preset
from bornbiased_jax.defaults import SEED_LIMIT, SEED_RANGE
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_key
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.checkpoints import load_checkpoint_params, run_steps

SPEC_HELP = ("a model source is 'preset:NAME@SEED' (a fresh initialisation), a 'bornbiased "
             "train' run folder 'PATH' or 'PATH@STEP' (STEP 0: the run's initialisation; "
             "'PATH#SEED[@STEP]' picks one seed of a many-seed run), or a Hugging Face model "
             "folder (a directory with config.json), or a llama.cpp GGUF file 'FILE.gguf'")


@dataclasses.dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model ready to run: config, parameters, and where it came from.

    kind: 'preset', 'run', 'hf' or 'gguf'. seed: the initialisation seed when known (presets and runs),
    else None. step: the training step of a run's checkpoint (0: its initialisation), else None.
    """

    cfg: ModelConfig
    params: dict
    label: str
    kind: str
    seed: int | None
    step: int | None
    # the run or HF folder (its tokenizer.json, if any, is there), or the GGUF file (which
    # holds its tokenizer)
    folder: Path | None = None
    continued: bool = False  # step 0 of a run continued from a trained model (train --init-from)

    @property
    def is_init(self) -> bool:
        """True for an untrained initialisation of a known seed (not the trained model a
        continued run's step 0 is)."""
        return self.seed is not None and (
            self.kind == "preset" or (self.step == 0 and not self.continued))


@dataclasses.dataclass(frozen=True)
class Source:
    """A model source spec parsed once (:func:`parse_source`), before any weights are read.

    spec: the spec as given (stripped). kind: 'preset', 'run', 'hf' or 'gguf'. path: the run
    or HF folder or the GGUF file (None for a preset). preset: a preset's name. seed: a
    preset's seed, or a run's '#SEED' selector (None: the run's only seed). step: a run's
    '@STEP' (None: its latest checkpoint). origin: for a run continued from another model
    (``train --init-from``), that model's spec as run.json records it.
    """

    spec: str
    kind: str
    path: Path | None = None
    preset: str | None = None
    seed: int | None = None
    step: int | None = None
    origin: str | None = None

    def initialisation(self, _seen: tuple[str, ...] = ()) -> str | None:
        """The model source of this model's initialisation, where it is known: a preset is its
        own; a training run's is its step 0 ('PATH#SEED@0' for one seed of a many-seed run),
        or for a run continued from another model that model's initialisation; an HF folder's
        or a GGUF file's is not known (None), nor a run continued from one. A continued run
        whose source is not found from here (run.json keeps the path as it was given to
        ``train``) is a UserError saying so, never a silent fallback."""
        if self.kind == "preset":
            return self.spec
        if self.kind != "run":
            return None
        if self.origin is None:
            sel = f"#{self.seed}" if self.seed is not None else ""
            return f"{self.path}{sel}@0"
        source = self.origin
        if source in _seen or len(_seen) > 64:
            raise UserError(f"run {str(self.path)!r} records a cycle of continued runs "
                            f"({' -> '.join((*_seen, source))}); its run.json is damaged")
        if not source.startswith("preset:") and not split_run_spec(source)[0].exists():
            raise UserError(f"run {str(self.path)!r} was continued from {source!r}, which is "
                            f"not found from {str(Path.cwd())!r} (run.json keeps the path given "
                            f"to 'train --init-from'); run from where it resolves, or restore "
                            f"that model")
        return parse_source(source).initialisation((*_seen, source))


def parse_source(spec: str | Source) -> Source:
    """``spec`` (see the module docstring) as a :class:`Source`: what it names, read from the
    spec and the file system (a run's run.json, a folder's config.json, a file's first
    bytes), no weights; a UserError for a spec that names no model. A Source is returned as
    it is."""
    if isinstance(spec, Source):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise UserError(f"empty model source; {SPEC_HELP}")
    spec = spec.strip()
    if spec.startswith("preset:"):
        m = re.fullmatch(r"preset:([^@\s]+)@([^@\s]+)", spec)
        if not m:
            raise UserError(f"cannot read {spec!r}: write 'preset:NAME@SEED', e.g. "
                            f"'preset:llama2-tiny@42'")
        name, seed_text = m.groups()
        get_preset(name)  # a UserError listing the presets
        if not re.fullmatch(r"-?\d+", seed_text):
            raise UserError(f"bad seed {seed_text!r} in {spec!r}: a seed is an integer in "
                            f"{SEED_RANGE}")
        if not 0 <= int(seed_text) < SEED_LIMIT:
            raise UserError(f"seed {int(seed_text)} in {spec!r} is outside {SEED_RANGE}")
        return Source(spec, "preset", preset=name, seed=int(seed_text))
    path, seed, step = split_run_spec(spec)
    if _is_gguf_spec(path, seed, step):
        return Source(spec, "gguf", path)
    if run_folder.is_run(path):
        origin = run_folder.read_run_info(path).get("init_from")
        return Source(spec, "run", path, seed=seed, step=step,
                      origin=None if origin is None else origin["spec"].strip())
    if seed is not None and path.is_dir():
        raise UserError(f"{str(path)!r} is not a bornbiased train run folder (no run.json), so "
                        f"it has no seeds to select; drop '#{seed}'")
    if (path / "config.json").is_file():
        if step is not None:
            raise UserError(f"{str(path)!r} is a Hugging Face model folder, which has no "
                            f"training steps; drop '@{step}'")
        return Source(spec, "hf", path)
    if path.is_dir():
        raise UserError(f"{str(path)!r} holds neither run.json (a bornbiased train run) nor "
                        f"config.json (a Hugging Face model); {SPEC_HELP}")
    raise UserError(f"unknown model source {spec!r}: no such folder; {SPEC_HELP}")


def load_source(spec: str | Source, *, shared_embedding: bool = True,
                dtype=jnp.float32) -> LoadedModel:
    """The model named by ``spec`` (a spec string, see the module docstring, or a parsed
    :class:`Source`); UserError if it cannot load.

    Args:
      shared_embedding: for presets, ``cfg.shared_embedding`` (embeddings from a fixed key shared
        by every seed, as in App. B.2) or every parameter seed-dependent. Run folders and HF
        models keep their own configuration.
    """
    src = parse_source(spec)
    if src.kind == "preset":
        cfg = dataclasses.replace(get_preset(src.preset), shared_embedding=bool(shared_embedding))
        return LoadedModel(cfg, init_params(cfg, src.seed, dtype), f"{src.preset}@{src.seed}",
                           "preset", src.seed, None)
    if src.kind == "gguf":
        return _load_gguf(src.path, dtype)
    if src.kind == "run":
        return _load_run(src, dtype)
    return _load_hf(src.path, dtype)


def _parsed(src) -> "Source":
    """``src`` itself: the planning functions below take a parsed :class:`Source` only, so
    that a command parses each spec once (:func:`parse_source`) and every step reads that."""
    if not isinstance(src, Source):
        raise TypeError(f"expected a parsed Source (sources.parse_source), got {src!r}")
    return src


def source_config(src: Source) -> ModelConfig:
    """The config of the model ``src`` names, without building or reading its weights (for
    planning memory before a load)."""
    src = _parsed(src)
    if src.kind == "preset":
        return get_preset(src.preset)
    if src.kind == "gguf":
        from bornbiased_jax.hf.gguf import check_gguf

        return check_gguf(src.path)
    if src.kind == "run":
        return run_folder.run_config(src.path)[0]
    from bornbiased_jax.hf.configs import config_from_hf

    return config_from_hf(src.path, name=src.path.name)


def source_location(src: Source) -> tuple[str, Path | None]:
    """(kind, path) of the model ``src`` names without reading it: 'preset' (no path), 'gguf'
    (the file), 'run' (the run folder) or 'hf' (the folder)."""
    src = _parsed(src)
    return src.kind, src.path


def init_params(cfg: ModelConfig, seed: int, dtype=jnp.float32) -> dict:
    """``model.init(cfg, key(seed))``: the same parameters, bitwise, that the sweep engine and
    training build for that seed under jit. Run eagerly: each parameter's sampler is then
    compiled once per shape and dtype and reused by every later model with that shape, where a
    jitted init compiles every sampler of every new configuration again (seconds for a small
    model)."""
    return model.init(cfg, seed_key(seed), dtype)


def split_run_spec(spec: str) -> tuple[Path, int | None, int | None]:
    """(path, seed, step) of 'PATH', 'PATH@STEP', 'PATH#SEED' or 'PATH#SEED@STEP' (None where
    absent). '#' always begins a seed selector, so a model folder's name cannot contain '#'."""
    head, step = spec, None
    at_head, sep, tail = spec.rpartition("@")
    if sep and re.fullmatch(r"-?\d+", tail):
        head, step = at_head, int(tail)
        if step < 0:
            raise UserError(f"bad step {step} in {spec!r}: a step is an integer >= 0")
    path, sep, sel = head.rpartition("#")
    if not sep:
        return Path(head), None, step
    if not re.fullmatch(r"\d+", sel) or int(sel) >= SEED_LIMIT or not path:
        raise UserError(f"bad seed selector {'#' + sel!r} in {spec!r}: write 'PATH#SEED' or "
                        f"'PATH#SEED@STEP' with one initialisation seed of the run, an integer "
                        f"in {SEED_RANGE} (e.g. 'runs/seeds#3@200')")
    return Path(path), int(sel), step


def initialisation_spec(src: Source) -> str | None:
    """:meth:`Source.initialisation` of ``src``."""
    return _parsed(src).initialisation()


def check_source(src: Source) -> ModelConfig:
    """:func:`source_config`, and the checks :func:`load_source` makes before it reads weights
    (a run's seed and checkpoint step, an HF folder's weight files), so that a command given
    several models can refuse a bad one before any work."""
    src = _parsed(src)
    cfg = source_config(src)
    if src.kind == "run":
        _run_selection(src)
    elif src.kind == "hf" and not any(src.path.glob("*.safetensors")):
        raise UserError(f"the Hugging Face folder {str(src.path)!r} has config.json but no "
                        f"*.safetensors weights")
    return cfg


def _run_selection(src: Source):
    """(cfg, run info, seed, its index, step) of a run source, or the UserError that says which
    seed or step the run lacks; step None: the latest checkpoint (step 0: the initialisation)."""
    path, seed, step = src.path, src.seed, src.step
    cfg, info = run_folder.run_config(path)
    seeds = run_folder.run_seeds(info)
    if seed is None:
        if len(seeds) > 1:
            raise UserError(f"run {str(path)!r} trained {len(seeds)} seeds "
                            f"({_seed_list(seeds)}); name one as '{path}#SEED' or "
                            f"'{path}#SEED@STEP'")
        seed = seeds[0]
    elif seed not in seeds:
        raise UserError(f"run {str(path)!r} has no seed {seed}; its seeds are "
                        f"{_seed_list(seeds)}")
    if step != 0:
        steps = run_steps(path)
        if not steps:
            raise UserError(f"run {str(path)!r} has no complete checkpoint yet; "
                            f"'{path}@0' names its initialisation")
        if step is None:
            step = steps[-1]
        elif step not in steps:
            raise UserError(f"run {str(path)!r} has no checkpoint at step {step}; its steps "
                            f"are {steps} (and 0, the initialisation)")
    return cfg, info, seed, seeds.index(seed), step


def _load_run(src: Source, dtype) -> LoadedModel:
    """Seed ``src.seed`` of the run in ``src.path`` (None: its only seed) at checkpoint
    ``src.step``."""
    path = src.path
    cfg, info, seed, index, step = _run_selection(src)
    name = path.name if len(run_folder.run_seeds(info)) == 1 else f"{path.name}#{seed}"
    origin = info.get("init_from")  # a run continued from another model (TrainConfig.init_from)
    lineage_seed = seed if origin is None else origin.get("seed")  # the source's, if known
    if step == 0:
        if origin is not None:  # its step 0 is the source model, not a seed's initialisation
            start = load_source(src.origin, shared_embedding=False, dtype=dtype)
            return LoadedModel(cfg, start.params, f"{name}@0", "run", lineage_seed, 0, path,
                               continued=True)
        return LoadedModel(cfg, init_params(cfg, seed, dtype), f"{name}@0", "run", seed, 0,
                           path)
    params = load_checkpoint_params(path, step, cfg, index)
    params = jax.tree.map(lambda a: jnp.asarray(a, dtype), params)
    return LoadedModel(cfg, params, f"{name}@{step}", "run", lineage_seed, step, path)


def _seed_list(seeds: tuple[int, ...]) -> str:
    return ", ".join(map(str, seeds)) if len(seeds) <= 8 else (
        f"{len(seeds)} seeds from {seeds[0]} to {seeds[-1]}")


def _is_gguf_spec(path: Path, seed: int | None, step: int | None) -> bool:
    """True when ``spec`` names a GGUF file (by its name or its first bytes); a UserError for
    a seed or step selector on one, which has neither."""
    from bornbiased_jax.hf.gguf import is_gguf

    if not (path.suffix.lower() == ".gguf" or (path.is_file() and is_gguf(path))):
        return False
    if seed is not None or step is not None:
        extra = "".join(f for f, v in ((f"#{seed}", seed), (f"@{step}", step)) if v is not None)
        raise UserError(f"{str(path)!r} is a GGUF model file, which has no seeds or training "
                        f"steps; drop {extra!r}")
    return True


def _load_gguf(path: Path, dtype) -> LoadedModel:
    from bornbiased_jax.hf.gguf import load_gguf

    cfg, params = load_gguf(path, dtype)
    return LoadedModel(cfg, params, cfg.name, "gguf", None, None, path)


def _load_hf(path: Path, dtype) -> LoadedModel:
    try:
        from bornbiased_jax.hf import load_hf
    except ImportError as e:
        raise UserError(f"{str(path)!r} looks like a Hugging Face model (config.json), but HF "
                        f"import is unavailable in this installation ({e})") from None
    try:
        cfg, params = load_hf(str(path), dtype)
    except UserError:
        raise
    except (OSError, ValueError, KeyError) as e:
        raise UserError(f"the Hugging Face model in {str(path)!r} does not load "
                        f"({type(e).__name__}: {e})") from None
    return LoadedModel(cfg, params, path.name, "hf", None, None, path)
