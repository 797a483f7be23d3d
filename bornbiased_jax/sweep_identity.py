"""What a sweep's or a probe's resumable state is keyed by, and how it is opened: the identity
that a saved state must match before any chunk is read back (the model, seeds or parameters'
hash, inputs, requested plan, devices), and the store of one engine run
(:mod:`bornbiased_jax.resume`). Used by :mod:`bornbiased_jax.sweep`."""

from __future__ import annotations

import jax
import numpy as np

from bornbiased_jax.config_io import config_record


def requested_plan(strategy: str = "auto", seed_chunk: int | None = None,
               seq_chunk: int | None = None, map_batch: int | None = None,
               seq_batch: int | None = None, memory_budget: int | None = None) -> dict:
    """A sweep's requested plan settings, as :func:`plan_sweep` takes them and a sweep's state
    records them."""
    return dict(strategy=strategy, seed_chunk=seed_chunk, seq_chunk=seq_chunk,
                map_batch=map_batch, seq_batch=seq_batch, memory_budget=memory_budget)


def sweep_identity(identity: dict | None, cfg, seeds, inputs, devices, requested) -> dict:
    """A sweep state's identity: the caller's ``identity`` (which must name the probe), the
    model configuration, the seeds, the inputs, the requested plan settings, and the devices'
    kind and number."""
    from bornbiased_jax import resume

    return {**(identity or {}), "model": config_record(cfg), "seeds": list(seeds),
            "inputs": resume.inputs_identity(inputs), "requested_plan": requested,
            "devices": {"platform": devices[0].platform, "count": len(devices),
                        "processes": jax.process_count()}}


def probe_identity(identity: dict | None, cfg, params, inputs, device, requested) -> dict:
    """A :func:`run_probe` state's identity: as a sweep's, with the parameters' SHA-256 in
    place of the seeds (so a state never resumes with another model)."""
    from bornbiased_jax import resume

    return {**(identity or {}), "model": config_record(cfg),
            "params_sha256": params_sha256(params), "inputs": resume.inputs_identity(inputs),
            "requested_plan": requested, "devices": {"platform": device.platform, "count": 1}}


def open_state(state, identity: dict, caller: str, allow_version_change: bool):
    """The state of one engine run: ``state`` opened with ``identity``
    (:func:`bornbiased_jax.resume.open_store`), or ``state`` itself when it is a store already
    opened with that identity (a ValueError naming the differences otherwise)."""
    from bornbiased_jax import resume

    if not isinstance(state, resume.ChunkStore):
        return resume.open_store(state, identity, caller=caller,
                                 allow_version_change=allow_version_change)
    want = resume.plain({**identity, **resume.precision_identity()})
    diff = resume.differences(state.identity, want)
    if diff:
        raise ValueError(f"the state opened in {state.folder} is not this run's: "
                         + "; ".join(diff))
    return state


def params_sha256(params) -> str:
    """SHA-256 of a parameter tree's arrays (names, shapes, dtypes and bytes, in path order)."""
    import hashlib

    h = hashlib.sha256()
    for path, leaf in sorted(jax.tree_util.tree_leaves_with_path(params),
                             key=lambda pl: jax.tree_util.keystr(pl[0])):
        a = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{jax.tree_util.keystr(path)}|{a.shape}|{a.dtype}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()
