"""Model sources: one spec string names any model a command can run on.

  ``preset:NAME@SEED``  a fresh initialisation of a named preset (``config.PRESETS``) with an
                        integer seed in [0, 2**32);
  ``PATH`` / ``PATH@STEP``  a ``bornbiased train`` run folder (it holds ``run.json``): the
                        parameters of the latest complete checkpoint, or of checkpoint STEP.
                        ``PATH@0`` is the run's initialisation, rebuilt from its seed and config
                        (training saves no step-0 checkpoint; ``init`` is deterministic), or,
                        for a run continued from another model (``train --init-from``), that
                        model; such a run's ``seed`` is its source's;
  ``PATH``              a Hugging Face model folder (it holds ``config.json``), imported by
                        ``bornbiased_jax.hf.load_hf``.

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
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig, get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_key

SPEC_HELP = ("a model source is 'preset:NAME@SEED' (a fresh initialisation), a 'bornbiased "
             "train' run folder 'PATH' or 'PATH@STEP' (STEP 0: the run's initialisation), or a "
             "Hugging Face model folder (a directory with config.json)")


@dataclasses.dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model ready to run: config, parameters, and where it came from.

    kind: 'preset', 'run' or 'hf'. seed: the initialisation seed when known (presets and runs),
    else None. step: the training step of a run's checkpoint (0: its initialisation), else None.
    """

    cfg: ModelConfig
    params: dict
    label: str
    kind: str
    seed: int | None
    step: int | None
    folder: Path | None = None  # the run or HF folder (its tokenizer.json, if any, is there)

    @property
    def is_init(self) -> bool:
        """True for an untrained initialisation of a known seed."""
        return self.seed is not None and (self.kind == "preset" or self.step == 0)


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
    path, step = _split_step(spec)
    if (path / "run.json").is_file():
        return _load_run(path, step, dtype)
    if (path / "config.json").is_file():
        if step is not None:
            raise UserError(f"{str(path)!r} is a Hugging Face model folder, which has no "
                            f"training steps; drop '@{step}'")
        return _load_hf(path, dtype)
    if path.is_dir():
        raise UserError(f"{str(path)!r} holds neither run.json (a bornbiased train run) nor "
                        f"config.json (a Hugging Face model); {SPEC_HELP}")
    raise UserError(f"unknown model source {spec!r}: no such folder; {SPEC_HELP}")


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
                        f"[0, 2**32)") from None
    if not 0 <= seed < 2**32:
        raise UserError(f"seed {seed} in {spec!r} is outside [0, 2**32)")
    cfg = dataclasses.replace(cfg, shared_embedding=bool(shared_embedding))
    return LoadedModel(cfg, init_params(cfg, seed, dtype), f"{name}@{seed}", "preset", seed, None)


def init_params(cfg: ModelConfig, seed: int, dtype=jnp.float32) -> dict:
    """``model.init(cfg, key(seed))`` under jit: the same parameters the sweep engine and
    ``train`` build for that seed."""
    return jax.jit(model.init, static_argnums=(0, 2))(cfg, seed_key(seed), dtype)


def _split_step(spec: str) -> tuple[Path, int | None]:
    head, sep, tail = spec.rpartition("@")
    if sep and re.fullmatch(r"-?\d+", tail):
        step = int(tail)
        if step < 0:
            raise UserError(f"bad step {step} in {spec!r}: a step is an integer >= 0")
        return Path(head), step
    return Path(spec), None


def run_steps(path: Path) -> list[int]:
    """The complete checkpoints of a run folder, ascending (Orbax renames a checkpoint's
    temporary folder to its step number only once it is fully written)."""
    ck = Path(path) / "checkpoints"
    if not ck.is_dir():
        return []
    return sorted(int(p.name) for p in ck.iterdir()
                  if p.name.isdigit() and (p / "default").is_dir())


def run_config(path: Path) -> tuple[ModelConfig, dict]:
    """(model config, run.json) of a run folder: run.json's ``model_config`` when present, else
    rebuilt from ``train_config`` and the tokenizer's vocabulary as ``train.model_config`` does."""
    from bornbiased_jax.train import TrainConfig, model_config

    f = Path(path) / "run.json"
    try:
        info = json.loads(f.read_text())
        if "model_config" in info:
            return ModelConfig(**info["model_config"]), info
        tc = TrainConfig(**info["train_config"])
        return model_config(tc, int(info["data"]["vocab_size"])), info
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise UserError(f"{str(f)!r} is not a readable run description "
                        f"({type(e).__name__}: {e})") from None


def _load_run(path: Path, step: int | None, dtype) -> LoadedModel:
    cfg, info = run_config(path)
    try:
        seed = int(info["train_config"]["seed"])
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"{str(path / 'run.json')!r} records no integer train_config.seed "
                        f"({type(e).__name__}: {e})") from None
    steps = run_steps(path)
    origin = info.get("init_from")  # a run continued from another model (train.init_from)
    if origin is not None:
        seed = origin.get("seed")  # the lineage's initialisation seed, when the source had one
    if step == 0:
        if origin is not None:  # its step 0 is the source model, not a seed's initialisation
            src = load_source(origin["spec"], shared_embedding=False, dtype=dtype)
            return LoadedModel(cfg, src.params, f"{path.name}@0", "run", seed, 0, path)
        return LoadedModel(cfg, init_params(cfg, seed, dtype), f"{path.name}@0", "run", seed, 0,
                           path)
    if not steps:
        raise UserError(f"run {str(path)!r} has no complete checkpoint yet; "
                        f"'{path}@0' names its initialisation")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise UserError(f"run {str(path)!r} has no checkpoint at step {step}; its steps are "
                        f"{steps} (and 0, the initialisation)")
    params = load_checkpoint_params(path, step, cfg)
    params = jax.tree.map(lambda a: jnp.asarray(a, dtype), params)
    return LoadedModel(cfg, params, f"{path.name}@{step}", "run", seed, step, path)


def load_checkpoint_params(path: Path, step: int, cfg: ModelConfig) -> dict:
    """The parameters of checkpoint ``step`` of a run, as host arrays; the optimiser state,
    data position and RNG in the same checkpoint are not read."""
    import orbax.checkpoint as ocp

    abstract = jax.eval_shape(lambda: model.init(cfg, jax.random.key(0)))
    restore_args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), abstract)
    where = (Path(path) / "checkpoints" / str(step) / "default").absolute()
    try:
        out = ocp.PyTreeCheckpointer().restore(where, args=ocp.args.PyTreeRestore(
            item={"params": abstract}, restore_args={"params": restore_args},
            partial_restore=True))
    except Exception as e:  # Orbax raises many types for damaged or foreign files
        raise UserError(f"checkpoint {step} of {str(path)!r} does not load "
                        f"({type(e).__name__}: {str(e)[:300]})") from None
    params = out["params"]
    want = jax.tree.map(lambda a: a.shape, abstract)
    got = jax.tree.map(lambda a: a.shape, params)
    if want != got:
        raise UserError(f"checkpoint {step} of {str(path)!r} does not match the run's model "
                        f"config {cfg.name}")
    return params


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
