"""Long probes that survive being stopped: a folder of finished chunks and what fixes them.

A sweep over S seeds x N sequences runs as a grid of compiled calls (a seed chunk x a sequence
chunk, :mod:`bornbiased_jax.sweep`). With a *state folder* every finished call's outputs are
saved at once, atomically, as ``chunk-s<first seed>-n<first sequence>.npz`` (plain arrays,
``allow_pickle=False``), and ``state.json`` lists the finished chunks beside the run's
*identity*: everything that fixes its inputs and models (the model configuration, the seeds,
the probe's name, the probe inputs' generator and key, the requested plan settings, the matmul
precision where it is not full float32) and the code-relevant versions (bornbiased-jax, JAX,
jaxlib, NumPy). Running the same call again with the same folder skips the finished chunks and
computes the rest with the *saved* plan, so the finished result is bitwise the uninterrupted
one (same programs, same shapes, same inputs).

One process at a time: a state folder is locked while a run uses it (a second run is refused;
a folder that does not exist yet is created and locked by the run's first write, so a run
that is refused, or that writes nothing, leaves nothing behind).
A state whose identity differs from the run's is refused with a :class:`StateMismatch` (a
``UserError``) that names every differing field; nothing is overwritten. Versions that differ
are refused too unless ``allow_version_change`` (then each version that contributed chunks is
listed in the state, and bitwise equality with an uninterrupted run is no longer promised).

:func:`open_store` is how the engines open a state (one process, a named probe, the matmul
precision where it is not full float32); :func:`remove` deletes the states in a folder (a
command's ``--fresh``).

The state is data, not pickled code: JSON and ``.npz`` files that any later version of this
package (or NumPy alone) can read.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bornbiased_jax import files
from bornbiased_jax.errors import UserError

STATE = "state.json"
FORMAT = 1


def versions() -> dict:
    """The versions that decide a probe's numbers: this package, JAX, jaxlib and NumPy."""
    import jax
    import jaxlib

    from bornbiased_jax import __version__

    return {"bornbiased_jax": __version__, "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "numpy": np.__version__}


def inputs_identity(inputs) -> dict:
    """What fixes a probe set: a lazy probe set's class, shape, key and distribution
    (``probes.inputs``), or an explicit array's shape, dtype and SHA-256."""
    import jax

    key = getattr(inputs, "key", None)
    if key is not None:
        out = {"kind": type(inputs).__name__, "shape": list(inputs.shape),
               "key": np.asarray(jax.random.key_data(key)).tolist()}
        for attr in ("vocab_size", "std", "mean"):
            if hasattr(inputs, attr):
                out[attr] = getattr(inputs, attr)
        return out
    a = np.ascontiguousarray(np.asarray(inputs))
    return {"kind": "array", "shape": list(a.shape), "dtype": a.dtype.name,
            "sha256": hashlib.sha256(a.tobytes()).hexdigest()}


class StateMismatch(UserError):
    """A state folder that this run may not resume: ``differences`` lists what differs
    ('seeds: [1, 2] (saved) vs [1, 3] (now)'), ``kind`` says what: "run" (the identity),
    "versions" (the code-relevant versions) or "format" (not a state this version reads)."""

    def __init__(self, message: str, folder: Path, kind: str, differences: list[str]):
        super().__init__(message)
        self.folder, self.kind, self.differences = Path(folder), kind, differences


def precision_identity() -> dict:
    """The matmul precision where it changes a probe's numbers: ``{"matmul_precision": name}``
    where matrix products are not full float32 (TF32 or a multi-pass dot algorithm on an
    accelerator), else nothing, so that states written on a CPU and resumed on a GPU in full
    float32 keep their identity."""
    import jax

    from bornbiased_jax import precision

    name = precision.current()
    if jax.default_backend() != "cpu" and name != "highest":
        return {"matmul_precision": name}
    return {}


def open_store(folder: str | os.PathLike, identity: dict, *, caller: str = "a sweep",
               allow_version_change: bool = False) -> "ChunkStore":
    """The :class:`ChunkStore` of one probe run in ``folder``, as every engine opens it: for
    one process only (a UserError with several), with ``identity`` naming the probe (a
    ValueError otherwise: a probe is code, its name stands for it) and completed by
    :func:`precision_identity`."""
    import jax

    if jax.process_count() > 1:
        raise UserError(f"a probe state folder is for one process; with several processes run "
                        f"{caller} without one")
    if not identity or "probe" not in identity:
        raise ValueError(f"{caller} with a state folder needs state_identity={{'probe': name, "
                         f"...}}")
    return ChunkStore(folder, {**identity, **precision_identity()},
                      allow_version_change=allow_version_change)


def remove(folder: str | os.PathLike) -> list[Path]:
    """Delete every probe state in ``folder`` (the folder itself when it holds one, and the
    sub-folders that hold one): their chunks, ``state.json`` and lock, then each folder left
    empty, ``folder`` included. Files that are not a probe state's are left alone. A state that
    another process is running is refused (UserError) before anything is deleted. Returns the
    state folders removed."""
    folder = Path(folder)
    if not folder.exists():
        return []
    if not folder.is_dir():
        raise UserError(f"{folder} is a file, not a probe state folder")
    found = sorted({f.parent for f in folder.rglob(STATE)})
    locks = []  # all or nothing: refused while any of them runs
    try:
        for d in found:
            locks.append(_lock(d))
        for d in found:
            for f in d.iterdir():
                if f.is_file() and (f.name in (STATE, ".lock") or _is_state_file(f.name)):
                    f.unlink()
    finally:
        for lock in locks:
            lock.close()
    for d in sorted({p for d in found for p in [d, *d.parents] if folder in [p, *p.parents]},
                    key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()  # only when empty
        except OSError:
            pass
    return found


def _is_state_file(name: str) -> bool:
    """A chunk, or the temporary of a chunk or of state.json that a killed run left."""
    return ((name.startswith("chunk-") and name.endswith(".npz"))
            or (name.startswith((".chunk-", f".{STATE}.")) and name.endswith(".tmp")))


def plain(x):
    """``x`` as JSON would give it back (tuples as lists, dataclasses as dicts), so that a
    saved identity compares equal to a fresh one."""
    return json.loads(json.dumps(x, default=_default))


def _default(o):
    import dataclasses

    if dataclasses.is_dataclass(o):
        return dataclasses.asdict(o)
    if isinstance(o, (np.integer, np.floating)):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"cannot record {type(o).__name__} in a probe's identity")


def differences(saved: Any, now: Any, path: str = "") -> list[str]:
    """Human-readable differences between two JSON values: 'seeds: [42, 43] (saved) vs [42]
    (now)', one line per differing leaf."""
    if isinstance(saved, dict) and isinstance(now, dict):
        out = []
        for k in sorted(set(saved) | set(now)):
            sub = f"{path}.{k}" if path else str(k)
            if k not in saved:
                out.append(f"{sub}: absent (saved) vs {_short(now[k])} (now)")
            elif k not in now:
                out.append(f"{sub}: {_short(saved[k])} (saved) vs absent (now)")
            else:
                out += differences(saved[k], now[k], sub)
        return out
    if saved != now:
        return [f"{path or 'value'}: {_short(saved)} (saved) vs {_short(now)} (now)"]
    return []


def _short(v, limit: int = 80) -> str:
    s = json.dumps(v)
    return s if len(s) <= limit else s[:limit - 3] + "..."


class ChunkStore:
    """The state folder of one probe run (see the module docstring).

    ``ChunkStore(folder, identity)`` opens (or starts) the state; it raises a
    :class:`StateMismatch` naming the differences when ``folder`` holds another run's state.
    ``computed`` and ``read`` count the chunks this opening saved and read back; ``close()``
    releases the folder's lock (so does the end of the process)."""

    def __init__(self, folder: str | os.PathLike, identity: dict, *,
                 allow_version_change: bool = False):
        self.folder = Path(folder)
        self.identity = plain(identity)
        self.computed = self.read = 0
        self._started = not (self.folder / STATE).exists()  # no state yet: this run starts one
        self._written = False
        # A folder that does not exist yet is created (and locked) by the first write, so that
        # opening a state that is then refused, or never written, leaves nothing behind.
        self._lock = _lock(self.folder) if self.folder.exists() else None
        try:
            self._open(allow_version_change)
        except BaseException:
            self.close()
            raise

    def _open(self, allow_version_change: bool) -> None:
        now = versions()
        f = self.folder / STATE
        if f.exists():
            try:
                saved = json.loads(f.read_text())
            except json.JSONDecodeError as e:
                raise StateMismatch(f"{f} is not a probe state ({e}); remove the folder to "
                                    f"start over", self.folder, "format", [str(e)]) from None
            if saved.get("format") != FORMAT:
                raise StateMismatch(f"{f} has state format {saved.get('format')!r}, this "
                                    f"version reads {FORMAT}; remove the folder to start over",
                                    self.folder, "format",
                                    [f"format: {saved.get('format')!r} (saved) vs {FORMAT}"])
            diff = differences(saved["identity"], self.identity)
            if diff:
                raise StateMismatch(
                    f"the probe state in {self.folder} belongs to another run; it differs in: "
                    + "; ".join(diff) + ". Run with the saved settings to resume, or give "
                    "another state folder (or remove this one) to start over",
                    self.folder, "run", diff)
            vdiff = differences(saved["versions"][-1], now)
            if vdiff and not allow_version_change:
                raise StateMismatch(
                    f"the probe state in {self.folder} was written by other versions: "
                    + "; ".join(vdiff) + ". Resuming would mix their chunks (no longer bitwise "
                    "the uninterrupted run); allow it explicitly (allow_version_change, "
                    "--resume-across-versions) or start over in another folder",
                    self.folder, "versions", vdiff)
            self.state = saved
            if vdiff:
                self.state["versions"].append(now)
        else:
            self.state = {"format": FORMAT, "identity": self.identity, "versions": [now],
                          "plan": None, "done": [], "tree": None}

    def _take_lock(self) -> None:
        """Lock the folder before a write (creating it), unless this store holds the lock: a
        state that another run wrote after this store found none is refused, not replaced."""
        if self._lock is not None:
            return
        self._lock = _lock(self.folder)
        if self._started and not self._written and (self.folder / STATE).exists():
            self.close()
            raise UserError(f"another run wrote a probe state in {self.folder} after this one "
                            f"found none there; run again to resume that state")

    def close(self) -> None:
        """Release the folder's lock (the state stays; a later run may open it again, and a
        later write through this store locks it again)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    # ----------------------------------------------------------------------------- the plan
    @property
    def plan(self) -> dict | None:
        """The saved plan (``dataclasses.asdict`` of a ``SweepPlan``), None before the first
        save."""
        return self.state["plan"]

    def set_plan(self, plan: dict) -> None:
        if self.state["plan"] is None:
            self.state["plan"] = plain(plan)
            self._write_state()

    # --------------------------------------------------------------------------- the chunks
    @staticmethod
    def name(index: tuple[int, ...]) -> str:
        return "chunk-" + "-".join(f"{a}{i}" for a, i in zip("sn", index)) + ".npz"

    def done(self, index: tuple[int, ...]) -> bool:
        return self.name(index) in self.state["done"]

    @property
    def n_done(self) -> int:
        return len(self.state["done"])

    def load(self, index: tuple[int, ...]):
        """The saved outputs of chunk ``index`` as the pytree they were saved from."""
        with np.load(self.folder / self.name(index), allow_pickle=False) as z:
            tree = unflatten(self.state["tree"], {k: z[k] for k in z.files})
        self.read += 1
        return tree

    @property
    def seconds(self) -> float:
        """Wall seconds the saved chunks took to compute, over every run that added some."""
        return float(sum(self.state.get("seconds", {}).values()))

    def save(self, index: tuple[int, ...], tree, seconds: float | None = None) -> None:
        """Save chunk ``index``'s outputs (a pytree of arrays: an array or nested dicts of
        arrays) atomically, then record it as finished (with the ``seconds`` it took)."""
        spec, flat = _flatten(tree)
        self._take_lock()
        if self.state["tree"] is None:
            self.state["tree"] = spec
        elif self.state["tree"] != spec:
            raise ValueError(f"chunk outputs changed structure: {spec} vs {self.state['tree']}")
        files.atomic_write(self.folder / self.name(index),
                           lambda f: np.savez(f, **flat), mode="wb")
        name = self.name(index)
        if name not in self.state["done"]:
            self.state["done"].append(name)
        if seconds is not None:
            self.state.setdefault("seconds", {})[name] = round(float(seconds), 3)
        self._write_state()
        self.computed += 1

    def _write_state(self) -> None:
        self._take_lock()
        files.write_json(self.folder / STATE, self.state)
        self._written = True


def _lock(folder: Path):
    """An exclusive lock on ``folder`` held while the returned file stays open (released when
    the process ends, however it ends); a UserError when another process holds it."""
    import fcntl

    try:
        folder.mkdir(parents=True, exist_ok=True)
        f = open(folder / ".lock", "w")
    except OSError as e:
        raise UserError(f"cannot use {folder} as a probe state folder: {e.strerror or e}") \
            from None
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise UserError(f"another process is running the probe state in {folder}; wait for it "
                        f"to end (or stop it) before resuming") from None
    return f


def _flatten(tree, prefix: str = "") -> tuple[Any, dict]:
    """(structure, {name: array}) of an array or nested dicts of arrays; the structure is JSON
    (None for a leaf, {key: structure} for a dict)."""
    if isinstance(tree, dict):
        spec, flat = {}, {}
        for k, v in tree.items():
            if "/" in str(k):
                raise ValueError(f"output key {k!r} contains '/'")
            spec[str(k)], sub = _flatten(v, f"{prefix}{k}/")
            flat.update(sub)
        return spec, flat
    return None, {prefix.rstrip("/") or "value": np.asarray(tree)}


def unflatten(spec, flat: dict, prefix: str = ""):
    if spec is None:
        return flat[prefix.rstrip("/") or "value"]
    return {k: unflatten(v, flat, f"{prefix}{k}/") for k, v in spec.items()}
