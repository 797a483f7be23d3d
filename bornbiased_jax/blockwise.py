"""A long sweep kept as per-block summaries, small enough to commit beside the code.

:func:`bornbiased_jax.sweep.sweep` with a state folder saves every chunk's raw outputs; for a
last-token probe at the paper's width that is the (L+1, d) states of every sequence, hundreds of
MB per run, so such a folder cannot travel with the repository and is lost with the machine that
holds it. :func:`blockwise_sweep` cuts the probe set into blocks of ``block`` sequences, runs one
sweep per block, and saves only ``summarise(block outputs)`` (for example the arg-max tokens and
the sums of unit vectors that a mean pairwise cosine needs: a few hundred kB per block). The
state folder is a :class:`~bornbiased_jax.resume.ChunkStore` (``chunk-s0-n<first sequence>.npz``
and ``state.json``), so the same call resumes from the last finished block, refuses another
run's state naming the differences, and ``experiments.campaign`` reads its progress like any
sweep state. Every block runs with the plan saved by the first one (the same compiled program,
the same shapes), so a resumed run is bitwise the uninterrupted one.

    summaries = blockwise_sweep(last_token_probe(cfg), cfg, [42, 43], tokens,
                                summarise=last_token_sums, block=250, state="state/T1024",
                                state_identity={"probe": "last_token_sums"})
    top = np.concatenate([s["top"] for s in summaries], axis=1)      # (S, N)
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
from tqdm.auto import tqdm

from bornbiased_jax.config_io import config_record
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import seed_list


def blockwise_sweep(probe, cfg, seeds: Sequence[int], inputs, *,
                    summarise: Callable[[Any], Any], block: int, state: str | Path,
                    state_identity: dict, allow_version_change: bool = False,
                    progress: bool = False, desc: str = "sweep",
                    memory_budget: int | None = None) -> list:
    """``summarise(sweep(probe, cfg, seeds, inputs[b:b + block]))`` for each block of
    ``block`` sequences, in order, each saved in ``state`` as soon as it is finished.

    ``summarise`` takes the block's outputs (host arrays of leading shape (S, n), n = ``block``
    or fewer in the last block) and returns an array or nested dicts of arrays; it is code, so
    ``state_identity`` must name it together with the probe (``{"probe": name}``).

    The devices (platform, count) are part of the state's identity: a state begun on a CPU is
    refused on a GPU, as another version's is, unless ``allow_version_change``; with it, the
    blocks go on on the new devices, each with a plan made for them (the saved plan is the
    first devices'), and ``state.json`` lists every device set that added blocks
    (``devices_used``). Each block is whole on one machine; the pass is then no longer
    bitwise one machine's."""
    from bornbiased_jax import resume
    from bornbiased_jax.sweep import check_inputs, plan_sweep, sweep

    if not isinstance(block, int) or block < 1:
        raise UserError(f"block must be a positive number of sequences, got {block!r}")
    seeds = seed_list(seeds)
    inputs, N, T = check_inputs(cfg, inputs)
    devices = jax.devices()
    here = {"platform": devices[0].platform, "count": len(devices)}
    identity = {**(state_identity or {}), "model": config_record(cfg),
                "seeds": list(seeds), "inputs": resume.inputs_identity(inputs), "block": block,
                "memory_budget": memory_budget, "devices": here}
    moved = _devices_moved(state, identity) if allow_version_change else None
    if moved is not None:  # blocks saved elsewhere go on here; the state lists both
        identity["devices"] = moved
    store = resume.open_store(state, identity, caller="a blockwise sweep",
                              allow_version_change=allow_version_change)
    if moved is not None and store.plan is None:
        # The saved state was read before the store locked the folder; it has gone since (a
        # saved state always has a plan), so this pass starts anew, labelled with these devices.
        store.close()
        identity["devices"], moved = here, None
        store = resume.open_store(state, identity, caller="a blockwise sweep",
                                  allow_version_change=allow_version_change)
    if moved is not None and here not in store.state.setdefault("devices_used", [moved]):
        store.state["devices_used"].append(here)  # written with the next block
    def plan_here() -> dict:
        return dataclasses.asdict(plan_sweep(
            cfg, len(seeds), min(block, N), T, devices=tuple(devices), probe=probe,
            row_shape=tuple(inputs.shape[1:]), row_dtype=jnp.asarray(inputs[:1]).dtype,
            memory_budget=memory_budget))

    if store.plan is None:
        # seed_chunk / seq_chunk describe the saved chunks (one per block, all seeds), as for
        # a sweep's state; "sweep" is the plan every block runs with.
        store.set_plan({"seed_chunk": len(seeds), "seq_chunk": block, "sweep": plan_here()})
    # On other devices the saved plan may not fit (a GPU's batches in a CPU's memory): the
    # blocks added here run with a plan for these devices, not saved.
    sp = store.plan["sweep"] if moved is None else plan_here()
    fixed = {k: sp[k] for k in ("strategy", "seed_chunk", "map_batch", "seq_batch")}
    out = []
    n_blocks = math.ceil(N / block)
    with tqdm(total=n_blocks, initial=store.n_done, desc=desc, disable=not progress,
              unit="block") as bar:
        for b0 in range(0, N, block):
            if store.done((0, b0)):
                out.append(store.load((0, b0)))
                continue
            t0 = time.perf_counter()
            xs = inputs[b0:b0 + block]
            raw = sweep(probe, cfg, seeds, xs, seq_chunk=min(sp["seq_chunk"], len(xs)),
                        memory_budget=memory_budget, **fixed)
            summary = summarise(raw)
            store.save((0, b0), summary, time.perf_counter() - t0)
            out.append(store.load((0, b0)))  # what a resumed run reads: the same dtypes
            bar.update(1)
    return out


def _devices_moved(folder: str | Path, identity: dict) -> dict | None:
    """The saved state's devices when they are all that differs from ``identity`` (which
    :func:`~bornbiased_jax.resume.open_store` completes with the precision), else None."""
    from bornbiased_jax import resume

    saved = blockwise_state(folder)
    if saved is None:
        return None
    now = resume.plain({**identity, **resume.precision_identity()})
    was = saved["identity"]
    if was.get("devices") == now.get("devices"):
        return None
    rest = resume.differences({k: v for k, v in was.items() if k != "devices"},
                              {k: v for k, v in now.items() if k != "devices"})
    return None if rest else was.get("devices")


def blockwise_state(folder: str | Path) -> dict | None:
    """The saved state of a blockwise pass in ``folder`` (None when there is none yet): its
    ``identity``, ``versions``, ``done`` blocks, their ``seconds``, and ``devices_used`` when
    blocks were added on more than one device set. A UserError for a file that is no state."""
    import json

    from bornbiased_jax import resume

    f = Path(folder) / resume.STATE
    if not f.exists():
        return None
    try:
        saved = json.loads(f.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{f} is not a probe state ({e})") from None
    if saved.get("format") != resume.FORMAT:
        raise UserError(f"{f} has state format {saved.get('format')!r}, this version reads "
                        f"{resume.FORMAT}")
    return saved


# What a finished block's numbers do not depend on, or what the record states beside them:
# where it ran, the memory budget its chunks were planned for, and the matmul precision (a
# reader on a CPU has none to compare; blockwise_finished's caller records the saved one).
_NOT_MEASUREMENT = ("devices", "memory_budget", "matmul_precision")


def blockwise_finished(cfg, seeds: Sequence[int], inputs, *, block: int, state: str | Path,
                       state_identity: dict) -> tuple[list, int, dict]:
    """The blocks of a :func:`blockwise_sweep` finished so far, read without computing anything
    and without taking the state's lock (a run may be adding blocks meanwhile: each block file
    is written whole before the state names it).

    Returns ``(summaries, n, saved)``: the summaries of the leading run of finished blocks (the
    first ``n`` sequences, in order; a later block finished out of order is left out), and the
    saved state (:func:`blockwise_state`). The saved identity must match this measurement
    (probe, model, seeds, inputs, block: everything but ``_NOT_MEASUREMENT``); package
    versions are not compared. A UserError when ``state`` holds no state or another
    measurement's."""
    import numpy as np

    from bornbiased_jax import resume
    from bornbiased_jax.sweep import check_inputs

    folder = Path(state)
    saved = blockwise_state(folder)
    if saved is None:
        raise UserError(f"no blockwise state in {folder} (no {resume.STATE}): nothing is "
                        f"finished yet")
    seeds = seed_list(seeds)
    inputs, N, _ = check_inputs(cfg, inputs)
    now = resume.plain({**state_identity, "model": config_record(cfg),
                        "seeds": list(seeds), "inputs": resume.inputs_identity(inputs),
                        "block": block})
    diff = resume.differences(
        {k: v for k, v in saved["identity"].items() if k not in _NOT_MEASUREMENT},
        {k: v for k, v in now.items() if k not in _NOT_MEASUREMENT})
    if diff:
        raise UserError(f"the blockwise state in {folder} measures something else; it differs "
                        f"in: " + "; ".join(diff))
    out, n = [], 0
    for b0 in range(0, N, block):
        name = resume.ChunkStore.name((0, b0))
        if name not in saved["done"]:
            break
        with np.load(folder / name, allow_pickle=False) as z:
            out.append(resume.unflatten(saved["tree"], {k: z[k] for k in z.files}))
        n = min(b0 + block, N)
    return out, n, saved


def block_provenance(saved: dict, n_blocks: int) -> dict:
    """For a record's settings, of a saved blockwise state: the platforms that added its blocks
    (in order) and the package versions that did, for the whole state (blocks run in order, so
    for a record of every finished block these are its blocks'); the matmul precision; and
    the compute seconds of the first ``n_blocks`` blocks."""
    from bornbiased_jax import resume

    names = [resume.ChunkStore.name((0, b * saved["identity"]["block"]))
             for b in range(n_blocks)]
    used = saved.get("devices_used") or [saved["identity"]["devices"]]
    return {"blocks_platforms": list(dict.fromkeys(d["platform"] for d in used)),
            "blocks_matmul_precision": saved["identity"].get("matmul_precision", "highest"),
            "blocks_versions": saved["versions"],
            "blocks_seconds": round(sum(saved.get("seconds", {}).get(x, 0.0) for x in names), 1)}
