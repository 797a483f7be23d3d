"""A run's Orbax checkpoints, every read and write of them: the training loop's saves and
restores (:class:`Checkpoints`), and one seed's parameters for a reader
(:func:`load_checkpoint_params`).

In a run folder::

    checkpoints/<k>/default/   checkpoint k, one Orbax item: params, Adam moments, step and
                               data position (the folder appears, renamed from a temporary
                               one, only once the checkpoint is complete: :func:`run_steps`)

A checkpoint holds every seed of its run: each parameter and Adam moment carries a leading
seed axis, in the order of ``run_folder.run_seeds`` (a single-seed run has an axis of one);
``step`` and ``data_position`` are shared. The state is saved without its layout, so a run
resumes with another number of processes or devices, or with ``fsdp`` switched.

Checkpoints written before the seed axis existed (one seed, no axis) are told apart here
alone, from the stored shape of the token embedding (``embed/embedding``, (V, d) in every
model: ``bornbiased_jax.model``), by :func:`checkpoint_has_seed_axis`; both readers read them
as an axis of one.

A reader of parameters takes their structure, shapes and dtypes from the checkpoint's own
metadata: no model is built or traced to read a checkpoint. JAX and Orbax are imported only
when a checkpoint is read or written.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import numpy as np

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError

CHECKPOINTS = "checkpoints"  # the folder of a run that holds its checkpoints
ITEM = "default"  # the one item of each checkpoint, as orbax.checkpoint.CheckpointManager names it


class _NoItemMetadataWarning(logging.Filter):
    """Orbax's ``PyTreeCheckpointer`` looks for a checkpoint's step metadata
    (``_CHECKPOINT_METADATA``) inside the item folder it reads, ``<k>/default``, and warns on
    every read that it is missing there: the ``CheckpointManager`` that wrote it keeps it one
    folder up, in ``<k>/``. The readers here take the tree's metadata from the item itself, so
    the warning says nothing about the checkpoint; this filter drops that one message."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Metadata file does not exist")


@contextlib.contextmanager
def _quiet_item_reads():
    log, quiet = logging.getLogger("absl"), _NoItemMetadataWarning()
    log.addFilter(quiet)
    try:
        yield
    finally:
        log.removeFilter(quiet)


def checkpoints_path(folder: str | Path) -> Path:
    """The run's Orbax checkpoint folder, absolute (as Orbax wants it)."""
    return (Path(folder) / CHECKPOINTS).absolute()


def run_steps(path: str | Path) -> list[int]:
    """The complete checkpoints of a run folder, ascending (Orbax renames a checkpoint's
    temporary folder to its step number only once it is fully written)."""
    ck = Path(path) / CHECKPOINTS
    if not ck.is_dir():
        return []
    return sorted(int(p.name) for p in ck.iterdir()
                  if p.name.isdigit() and (p / ITEM).is_dir())


def checkpoint_dir(path: str | Path, step: int) -> Path:
    """The Orbax item folder of checkpoint ``step`` of a run: ``<step>/default``, where
    :class:`Checkpoints` (an ``orbax.checkpoint.CheckpointManager``) puts its single item."""
    return checkpoints_path(path) / str(step) / ITEM


def stored_params(path: str | Path, step: int) -> dict:
    """The parameters of checkpoint ``step`` of a run as the checkpoint records them: a tree of
    ``jax.ShapeDtypeStruct`` (with the seed axis where stored), from its metadata; no array is
    read. A UserError where the metadata is unreadable."""
    import jax
    import orbax.checkpoint as ocp

    try:
        with _quiet_item_reads():
            tree = ocp.PyTreeCheckpointer().metadata(checkpoint_dir(path, step)).item_metadata.tree
        params = jax.tree.map(lambda m: jax.ShapeDtypeStruct(tuple(m.shape), m.dtype),
                              tree["params"])
        params["embed"]["embedding"].shape  # noqa: B018
    except Exception as e:  # Orbax raises many types for damaged or foreign files
        raise UserError(f"checkpoint {step} of {str(path)!r} does not load: its metadata is "
                        f"unreadable ({type(e).__name__}: {str(e)[:300]})") from None
    return params


def _seed_axis(params: dict, cfg: ModelConfig) -> bool:
    """Whether stored parameters ``params`` carry the leading seed axis: the token embedding,
    (V, d) for ``cfg``, stored with one more axis. The one rule for checkpoints written before
    the seed axis existed."""
    return len(params["embed"]["embedding"].shape) == len((cfg.vocab_size, cfg.d_model)) + 1


def checkpoint_has_seed_axis(path: str | Path, step: int, cfg: ModelConfig) -> bool:
    """Whether checkpoint ``step`` stores parameters with a leading seed axis (every checkpoint
    since many-seed runs exist) or without (a single-seed run's older checkpoints), from the
    checkpoint's metadata (no array is read)."""
    return _seed_axis(stored_params(path, step), cfg)


def load_checkpoint_params(path: str | Path, step: int, cfg: ModelConfig,
                           seed_index: int = 0) -> dict:
    """The parameters of seed number ``seed_index`` (its position in
    ``run_folder.run_seeds``) at checkpoint ``step`` of a run, as host arrays; the optimiser
    state and the data position are not read; a many-seed checkpoint's parameters are read for
    every seed, and seed ``seed_index``'s are returned. Their structure is the checkpoint's own
    (:func:`stored_params`); ``cfg`` (the run's model configuration) must agree with its
    embedding's shape."""
    import jax
    import orbax.checkpoint as ocp

    abstract = stored_params(path, step)
    axis = _seed_axis(abstract, cfg)
    embedding = abstract["embed"]["embedding"].shape
    if (embedding[1:] if axis else embedding) != (cfg.vocab_size, cfg.d_model):
        raise UserError(f"checkpoint {step} of {str(path)!r} does not match the run's model "
                        f"config {cfg.name}: its token embedding is {embedding}")
    n_seeds = embedding[0] if axis else 1
    if not 0 <= seed_index < n_seeds:
        raise UserError(f"run {str(path)!r} has {n_seeds} seed(s) in checkpoint {step}; no "
                        f"seed number {seed_index}")
    restore_args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), abstract)
    try:
        with _quiet_item_reads():
            out = ocp.PyTreeCheckpointer().restore(checkpoint_dir(path, step),
                                                   args=ocp.args.PyTreeRestore(
                item={"params": abstract}, restore_args={"params": restore_args},
                partial_restore=True))
    except Exception as e:  # Orbax raises many types for damaged or foreign files
        raise UserError(f"checkpoint {step} of {str(path)!r} does not load "
                        f"({type(e).__name__}: {str(e)[:300]})") from None
    params = out["params"]
    if jax.tree.map(lambda a: a.shape, abstract) != jax.tree.map(lambda a: a.shape, params):
        raise UserError(f"checkpoint {step} of {str(path)!r} does not hold the parameters its "
                        f"metadata describes")
    return jax.tree.map(lambda a: a[seed_index], params) if axis else params


class Checkpoints:
    """The checkpoints of the run in ``folder`` as training writes and reads them: an Orbax
    ``CheckpointManager`` keeping the last ``keep_last`` (and every ``keep_every``-th, and
    those at ``keep_steps``), each
    written whole before :meth:`save` returns; a temporary folder left by a crash is removed."""

    def __init__(self, folder: str | Path, keep_last: int, keep_every: int | None = None,
                 keep_steps: tuple[int, ...] = ()):
        import orbax.checkpoint as ocp

        self.folder = Path(folder)
        self.path = checkpoints_path(folder)
        keep = dict(max_to_keep=keep_last, keep_period=keep_every)
        if keep_steps:  # the latest, every keep_every-th, and the steps named
            from orbax.checkpoint import checkpoint_managers as cm

            policies = [cm.LatestN(keep_last), cm.CustomSteps(steps=list(keep_steps))]
            if keep_every:
                policies.append(cm.EveryNSteps(keep_every))
            keep = dict(preservation_policy=cm.AnyPreservationPolicy(policies))
        self.manager = ocp.CheckpointManager(self.path, options=ocp.CheckpointManagerOptions(
            **keep, create=True, enable_async_checkpointing=False, cleanup_tmp_directories=True))

    def latest_step(self) -> int | None:
        """The latest complete checkpoint's step (None: none yet)."""
        return self.manager.latest_step()

    def save(self, step: int, state: dict) -> None:
        """Checkpoint ``step``: the whole training state, every process writing its shards."""
        import orbax.checkpoint as ocp

        self.manager.save(step, args=ocp.args.StandardSave(state))
        self.manager.wait_until_finished()

    def restore(self, step: int, abstract: dict, cfg: ModelConfig) -> dict:
        """Checkpoint ``step`` read straight into ``abstract``'s layout (the state's
        ``jax.ShapeDtypeStruct`` tree, each with its sharding; nothing is built); a checkpoint
        written before the seed axis existed is read as an axis of one."""
        import jax
        import orbax.checkpoint as ocp
        from jax.sharding import NamedSharding, PartitionSpec as P

        n_seeds = abstract["params"]["embed"]["embedding"].shape[0]
        legacy = not checkpoint_has_seed_axis(self.folder, step, cfg)
        read = abstract
        if legacy:
            if n_seeds != 1:
                raise UserError(f"checkpoint {step} in {str(self.path)!r} holds one seed "
                                f"without a seed axis, but the run trains {n_seeds} seeds")
            read = {**abstract, **jax.tree.map(
                lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype, sharding=NamedSharding(
                    x.sharding.mesh, P(*x.sharding.spec[1:]))),
                {"params": abstract["params"], "opt_state": abstract["opt_state"]})}
        try:
            state = self.manager.restore(step, args=ocp.args.StandardRestore(read))
        except Exception as e:  # Orbax raises many types for damaged files
            raise UserError(f"checkpoint {step} in {str(self.path)!r} is unreadable "
                            f"({type(e).__name__}: {e}); delete that step's folder to fall "
                            f"back to an earlier checkpoint") from None
        if legacy:
            layout = jax.tree.map(lambda x: x.sharding, abstract)
            state = jax.jit(lambda s: {**s, "params": jax.tree.map(lambda x: x[None],
                                                                    s["params"]),
                                       "opt_state": jax.tree.map(lambda x: x[None],
                                                                 s["opt_state"])},
                            out_shardings=layout)(state)
        if int(state["step"]) != step:
            raise UserError(f"checkpoint {step} holds step {int(state['step'])}")
        return state

    def close(self) -> None:
        self.manager.close()
