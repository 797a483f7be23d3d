"""Atomic writes: a result file is either absent or complete, never half-written."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


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


def save_figure(fig, path) -> Path:
    """Save a matplotlib figure as PNG atomically."""
    return atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120, bbox_inches="tight"),
                        mode="wb")
