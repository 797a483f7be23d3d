"""What one campaign call wrote, packed into one archive: the way its results leave a machine
from which only a few files come back (a lent GPU returns at most 8 files, each at most 16 MiB
and at most two folders down, so the campaign's folder itself cannot come back as it is).

:func:`snapshot` notes every file under the given folders (size and modification time) before
the pieces run; :func:`write` packs every file created or changed since then into one gzipped
tar, each named by its path inside the checkout, so that ``tar -xzf BUNDLE`` in the checkout's
root lays them where they belong (the ledger, the pieces' folders and logs, their records)."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

from bornbiased_jax import files
from bornbiased_jax.errors import UserError

# the most one file back from a lent GPU may weigh
RETURN_LIMIT_BYTES = 16 * 2 ** 20


def _inside(path: Path, base: Path) -> Path:
    path = Path(path).resolve()
    try:
        return path.relative_to(base.resolve())
    except ValueError:
        raise UserError(f"--bundle names files by their path inside the checkout ({base}); "
                        f"{path} lies outside it: leave --root and --records at their defaults "
                        f"or point them inside the checkout") from None


def snapshot(folders, base: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folders`` (each inside ``base``): its path inside ``base`` -> (size,
    modification time in ns)."""
    seen = {}
    for folder in folders:
        _inside(folder, base)
        for dirpath, _, names in os.walk(folder):
            for name in names:
                p = Path(dirpath) / name
                st = p.stat()
                seen[str(_inside(p, base))] = (st.st_size, st.st_mtime_ns)
    return seen


def changed(before: dict, folders, base: Path) -> list[str]:
    """The files under ``folders`` created or changed since ``before`` (:func:`snapshot`),
    sorted."""
    after = snapshot(folders, base)
    return sorted(p for p, key in after.items() if before.get(p) != key)


def write(path: Path, names: list[str], base: Path) -> int:
    """Pack ``names`` (paths inside ``base``) into the gzipped tar ``path``, atomically; its
    size in bytes."""
    def _write(f):
        with tarfile.open(fileobj=f, mode="w:gz") as tar:
            for name in names:
                tar.add(Path(base) / name, arcname=name, recursive=False)
    files.atomic_write(path, _write, mode="wb")
    return Path(path).stat().st_size
