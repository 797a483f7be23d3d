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

``load_source`` returns a :class:`LoadedModel`; ``sweep.run_probe`` runs a probe on its
parameters.
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


def load_source(spec: str, *, shared_embedding: bool = True, dtype=jnp.float32) -> LoadedModel:
    """The model named by ``spec`` (see the module docstring); UserError if it cannot load.

    Args:
      shared_embedding: for presets, ``cfg.shared_embedding`` (embeddings from a fixed key shared
        by every seed, as in App. B.2) or every parameter seed-dependent. Run folders and HF
        models keep their own configuration.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise UserError(f"empty model source; {SPEC_HELP}")
    spec = spec.strip()
    if spec.startswith("preset:"):
        return _load_preset(spec, shared_embedding, dtype)
    path, seed, step = split_run_spec(spec)
    if _is_gguf_spec(spec, path, seed, step):
        return _load_gguf(path, dtype)
    if run_folder.is_run(path):
        return _load_run(path, step, seed, dtype)
    if seed is not None and path.is_dir():
        raise UserError(f"{str(path)!r} is not a bornbiased train run folder (no run.json), so "
                        f"it has no seeds to select; drop '#{seed}'")
    if (path / "config.json").is_file():
        if step is not None:
            raise UserError(f"{str(path)!r} is a Hugging Face model folder, which has no "
                            f"training steps; drop '@{step}'")
        return _load_hf(path, dtype)
    if path.is_dir():
        raise UserError(f"{str(path)!r} holds neither run.json (a bornbiased train run) nor "
                        f"config.json (a Hugging Face model); {SPEC_HELP}")
    raise UserError(f"unknown model source {spec!r}: no such folder; {SPEC_HELP}")


def source_config(spec: str) -> ModelConfig:
    """The config of the model ``spec`` names, without building or reading its weights (for
    planning memory before a load); the same errors as :func:`load_source` for bad specs."""
    if not isinstance(spec, str) or not spec.strip():
        raise UserError(f"empty model source; {SPEC_HELP}")
    spec = spec.strip()
    if spec.startswith("preset:"):
        m = re.fullmatch(r"preset:([^@\s]+)@([^@\s]+)", spec)
        if not m:
            raise UserError(f"cannot read {spec!r}: write 'preset:NAME@SEED', e.g. "
                            f"'preset:llama2-tiny@42'")
        return get_preset(m.group(1))
    path, seed, step = split_run_spec(spec)
    if _is_gguf_spec(spec, path, seed, step):
        from bornbiased_jax.hf.gguf import check_gguf

        return check_gguf(path)
    if run_folder.is_run(path):
        return run_folder.run_config(path)[0]
    if (path / "config.json").is_file():
        from bornbiased_jax.hf.configs import config_from_hf

        return config_from_hf(path, name=path.name)
    return load_source(spec).cfg  # every other case: load_source's own error


def source_location(spec: str) -> tuple[str, Path | None]:
    """(kind, path) of the model ``spec`` names without reading it: 'preset' (no path), 'gguf'
    (the file), 'run' (the run folder) or 'hf' (the folder); the errors of
    :func:`source_config` for a bad spec."""
    spec = spec.strip()
    if spec.startswith("preset:"):
        return "preset", None
    path, seed, step = split_run_spec(spec)
    if _is_gguf_spec(spec, path, seed, step):
        return "gguf", path
    if run_folder.is_run(path):
        return "run", path
    source_config(spec)  # its error for anything else
    return "hf", path


def _load_preset(spec: str, shared_embedding: bool, dtype) -> LoadedModel:
    m = re.fullmatch(r"preset:([^@\s]+)@([^@\s]+)", spec)
    if not m:
        raise UserError(f"cannot read {spec!r}: write 'preset:NAME@SEED', e.g. "
                        f"'preset:llama2-tiny@42'")
    name, seed_text = m.groups()
    cfg = get_preset(name)  # a UserError listing the presets
    try:
        seed = int(seed_text)
    except ValueError:
        raise UserError(f"bad seed {seed_text!r} in {spec!r}: a seed is an integer in "
                        f"{SEED_RANGE}") from None
    if not 0 <= seed < SEED_LIMIT:
        raise UserError(f"seed {seed} in {spec!r} is outside {SEED_RANGE}")
    cfg = dataclasses.replace(cfg, shared_embedding=bool(shared_embedding))
    return LoadedModel(cfg, init_params(cfg, seed, dtype), f"{name}@{seed}", "preset", seed, None)


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


def initialisation_spec(spec: str, _seen: tuple[str, ...] = ()) -> str | None:
    """The model source of ``spec``'s initialisation, where it is known: a preset is its own;
    a training run's is its step 0 ('PATH#SEED@0' for one seed of a many-seed run), or for a
    run continued from another model (``train --init-from``) that model's initialisation; an
    HF folder's is not known (None), nor a run continued from one. A continued run whose
    source is not found from here (run.json keeps the path as it was given to ``train``) is a
    UserError saying so, never a silent fallback."""
    spec = spec.strip()
    if spec.startswith("preset:"):
        return spec
    path, seed, _ = split_run_spec(spec)
    if not run_folder.is_run(path):
        return None
    origin = run_folder.read_run_info(path).get("init_from")
    if origin is None:
        return f"{path}#{seed}@0" if seed is not None else f"{path}@0"
    source = origin["spec"].strip()
    if source in _seen or len(_seen) > 64:
        raise UserError(f"run {str(path)!r} records a cycle of continued runs "
                        f"({' -> '.join((*_seen, source))}); its run.json is damaged")
    source_path = Path(split_run_spec(source)[0]) if not source.startswith("preset:") else None
    if source_path is not None and not source_path.exists():
        raise UserError(f"run {str(path)!r} was continued from {source!r}, which is not found "
                        f"from {str(Path.cwd())!r} (run.json keeps the path given to 'train "
                        f"--init-from'); run from where it resolves, or restore that model")
    return initialisation_spec(source, (*_seen, source))


def check_source(spec: str) -> ModelConfig:
    """:func:`source_config`, and the checks :func:`load_source` makes before it reads weights
    (a preset's seed, a run's seed and checkpoint step, an HF folder's weight files), so that
    a command given several models can refuse a bad one before any work."""
    cfg = source_config(spec)
    spec = spec.strip()
    if spec.startswith("preset:"):
        from bornbiased_jax.keys import check_seed

        seed = spec.rpartition("@")[2]
        if not re.fullmatch(r"\d+", seed):
            raise UserError(f"bad seed {seed!r} in {spec!r}: a seed is an integer in {SEED_RANGE}")
        check_seed(int(seed))
        return cfg
    path, seed, step = split_run_spec(spec)
    if _is_gguf_spec(spec, path, seed, step):
        pass  # source_config checked everything but the tensors' bytes
    elif run_folder.is_run(path):
        _run_selection(path, seed, step)
    elif not any(path.glob("*.safetensors")):
        raise UserError(f"the Hugging Face folder {str(path)!r} has config.json but no "
                        f"*.safetensors weights")
    return cfg


def _run_selection(path: Path, seed: int | None, step: int | None):
    """(cfg, run info, seed, its index, step) of a run spec, or the UserError that says which
    seed or step the run lacks; step None: the latest checkpoint (step 0: the initialisation)."""
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


def _load_run(path: Path, step: int | None, seed: int | None, dtype) -> LoadedModel:
    """Seed ``seed`` of the run in ``path`` (None: its only seed) at checkpoint ``step``."""
    cfg, info, seed, index, step = _run_selection(path, seed, step)
    name = path.name if len(run_folder.run_seeds(info)) == 1 else f"{path.name}#{seed}"
    origin = info.get("init_from")  # a run continued from another model (TrainConfig.init_from)
    lineage_seed = seed if origin is None else origin.get("seed")  # the source's, if known
    if step == 0:
        if origin is not None:  # its step 0 is the source model, not a seed's initialisation
            src = load_source(origin["spec"], shared_embedding=False, dtype=dtype)
            return LoadedModel(cfg, src.params, f"{name}@0", "run", lineage_seed, 0, path,
                               continued=True)
        return LoadedModel(cfg, init_params(cfg, seed, dtype), f"{name}@0", "run", seed, 0,
                           path)
    params = load_checkpoint_params(path, step, cfg, index)
    params = jax.tree.map(lambda a: jnp.asarray(a, dtype), params)
    return LoadedModel(cfg, params, f"{name}@{step}", "run", lineage_seed, step, path)


def _seed_list(seeds: tuple[int, ...]) -> str:
    return ", ".join(map(str, seeds)) if len(seeds) <= 8 else (
        f"{len(seeds)} seeds from {seeds[0]} to {seeds[-1]}")


def _is_gguf_spec(spec: str, path: Path, seed: int | None, step: int | None) -> bool:
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
