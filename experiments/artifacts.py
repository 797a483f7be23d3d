"""An experiment's artifacts: ``<name>.json``, ``<name>.md`` and ``<name>.png`` in its output
folder, written by the one writer of every command (``files.write_artifacts``) with the one run
description (``files.run_record``), and its record (the JSON's run description and records) under
the committed records (``render.save_record``)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from bornbiased_jax import files
from experiments.render import save_record


def write(name: str, settings: dict, records, table_md: str, fig, t0: float, *, out: Path,
          scale: str, command: str, records_root: Path | None = None) -> dict:
    """Write experiment ``name``'s JSON ({"run", "records"}), markdown and figure into ``out``,
    each atomically, and its record under ``records_root`` (when given); return the saved
    JSON. ``t0``: the experiment's start (time.time()); ``command``: the command line that
    made it (recorded)."""
    run = files.run_record(command, time.time() - t0, experiment=name, scale=scale,
                        settings=settings)
    saved = {"run": run, "records": plain(records)}
    files.write_artifacts(out, {
        f"{name}.json": saved,
        f"{name}.md": (f"# {name} ({scale} scale)\n\n{table_md}\nSettings: "
                       f"`{json.dumps(settings)}`; {run['wall_seconds']} s on "
                       f"{run['device']}.\n"),
        f"{name}.png": fig})
    if records_root is not None:
        save_record(records_root, name, saved)
    return saved


def plain(x):
    """``x`` with dataclasses, tuples and NumPy values as JSON's dicts, lists and numbers."""
    import numpy as np

    if dataclasses.is_dataclass(x):
        return plain(dataclasses.asdict(x))
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return x


REPO = Path(__file__).resolve().parents[1]


def repo_relative(arg: str) -> str:
    """A command-line argument naming an absolute path inside the repository, as a path
    relative to its root (a record's command then reads the same on every machine; the
    commands run from the root); ``--key=value`` forms too; any other argument as it is."""
    key, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    if value.startswith("/") and Path(value).resolve().is_relative_to(REPO):
        value = str(Path(value).resolve().relative_to(REPO))
    return f"{key}{eq}{value}"
