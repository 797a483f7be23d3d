"""Atomic writes: a result file is either absent or complete, never half-written; a check, made
before any work, that an output can be written at all; and the one writer of a command's
results (:func:`write_artifacts`: JSON, markdown and PNG figures) with its run description
(:func:`run_record`)."""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

from bornbiased_jax.errors import UserError


def progress(line: str) -> None:
    """A long job's progress line, printed at once (also when stdout is a file): the default
    ``log`` of the studies' long-running functions."""
    print(line, flush=True)


def check_writable(path: str | os.PathLike, *, folder: bool = False, flag: str = "") -> Path:
    """Raise a UserError unless ``path`` can be written: a file (or, with ``folder``, a folder)
    that exists and is writable, or one whose nearest existing ancestor is a folder in which a
    file can be created. Creates nothing that remains; call it before a long computation.

    The check really creates (and removes) a temporary file, so it also catches read-only file
    systems and permissions that ``os.access`` misjudges (e.g. for root)."""
    path = Path(path)
    what = f"{flag} {str(path)!r}".strip()
    if path.exists():
        if folder and not path.is_dir():
            raise UserError(f"{what} is a file; give a folder (new or existing) for the outputs")
        if not folder and path.is_dir():
            raise UserError(f"{what} is a folder; give a file path")
    probe_dir = path if (folder and path.is_dir()) else path.parent
    ancestor = probe_dir
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UserError(f"cannot write {what}: {str(ancestor)!r} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=ancestor, prefix=".write-check."):
            pass
    except OSError as e:
        raise UserError(f"cannot write {what}: {str(ancestor)!r} is not writable "
                        f"({e.strerror or e}); choose another location") from None
    if path.exists() and not folder and not os.access(path, os.W_OK):
        raise UserError(f"cannot write {what}: the file is read-only")
    return path


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None], mode: str = "w") -> Path:
    """Write via ``write(fileobj)`` to a temporary file in the same folder, fsync, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make results private
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_text(path, text: str) -> Path:
    return atomic_write(path, lambda f: f.write(text))


def write_json(path, obj: Any) -> Path:
    return atomic_write(path, lambda f: json.dump(obj, f, indent=2, sort_keys=False))


def save_figure(fig, path, *, close: bool = True) -> Path:
    """Save a matplotlib figure as PNG atomically. A figure made through pyplot is then closed
    (unless ``close=False``) so that a long process drawing many figures does not keep every one
    of them in pyplot's registry; one made without pyplot (``plots.figure``) needs no closing.

    Saving to PNG renders with Agg whatever the backend, so no display is needed."""
    out = atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120, bbox_inches="tight"),
                       mode="wb")
    pyplot = sys.modules.get("matplotlib.pyplot")  # not imported: the figure is not pyplot's
    if close and pyplot is not None:
        pyplot.close(fig)
    return out


def write_artifacts(folder: str | os.PathLike, files: Mapping[str, Any]) -> list[Path]:
    """Write a command's results into ``folder``, each file atomically and by its suffix:
    ``.json`` a JSON-serialisable object, ``.md`` text, ``.png`` a matplotlib figure (closed
    after saving, :func:`save_figure`). Returns the paths in the order given."""
    writers = {".json": write_json, ".md": write_text,
               ".png": lambda path, fig: save_figure(fig, path)}
    unknown = [n for n in files if Path(n).suffix not in writers]
    if unknown:
        raise ValueError(f"no writer for {unknown}; artifacts are {sorted(writers)} files")
    return [writers[Path(n).suffix](Path(folder) / n, obj) for n, obj in files.items()]


def run_record(command: str, wall_seconds: float, **fields: Any) -> dict:
    """A result's run description, the same for every command and experiment: the command
    line, the command's ``fields`` (its settings), the wall time, where it ran (JAX version,
    the first device, all devices, machine), the float32 matmul precision its programs were
    traced with and when it finished (UTC)."""
    import time

    import jax

    from bornbiased_jax import precision

    return {"command": command, **fields, "wall_seconds": round(wall_seconds, 1),
            "jax": jax.__version__, "device": str(jax.devices()[0]),
            "devices": [str(d) for d in jax.devices()], "machine": platform.platform(),
            "matmul_precision": precision.current(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
