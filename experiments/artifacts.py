"""An experiment's artifacts: ``<name>.json``, ``<name>.md`` and ``<name>.png`` in its output
folder, written by the one writer of every command (``files.write_artifacts``) with the one run
description (``files.run_record``), and its record (the JSON's run description and records) under
the committed records (:func:`save_record`).

A committed record, log or command line names no folder of the machine that wrote it:
:func:`portable` writes paths inside the repository relative to its root and system folders
as the placeholders of :data:`PLACEHOLDERS` (``<stdlib>``, ``<tmp>``, ...)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sysconfig
import tempfile
import time
from pathlib import Path

from bornbiased_jax import files
from bornbiased_jax.defaults import NODE_DOCS_MD, VIM_DOCS
from experiments import STUDY_OF

RECORDS = Path("results/records")  # the committed records, <study>/<name>.json under it


def write(name: str, settings: dict, records, table_md: str, fig, t0: float, *, out: Path,
          scale: str, command: str, records_root: Path | None = None) -> dict:
    """Write experiment ``name``'s JSON ({"run", "records"}, its paths :func:`portable`),
    markdown and figure into ``out``, each atomically, and its record under ``records_root``
    (when given); return the saved JSON. ``t0``: the experiment's start (time.time());
    ``command``: the command line that made it (recorded)."""
    run = files.run_record(command, time.time() - t0, experiment=name, scale=scale,
                        settings=settings)
    saved = portable({"run": run, "records": plain(records)})
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


def record_path(root: Path, name: str, study: str | None = None) -> Path:
    """Where experiment ``name``'s record lives under ``root``: ``<study>/<name>.json``, its
    study's folder (``study``: a folder for a record no study declares, e.g. a model record's
    of :mod:`experiments.real_model`)."""
    return Path(root) / (study or STUDY_OF[name]) / f"{name}.json"


def save_record(root: Path, name: str, record: dict, study: str | None = None) -> Path:
    """Write one experiment's record (under ``study``'s folder when given, else its study's),
    compact, atomically: its ``run`` info and ``records`` without the keys that start with '_'
    (per-pair arrays drawn only in figures), every path in it :func:`portable`."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if not str(k).startswith("_")}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    record = portable({"run": record.get("run", {}), "records": strip(record["records"])})
    text = json.dumps(record, separators=(",", ":"))
    return files.write_text(record_path(root, name, study), text + "\n")


# ------------------------------------------------------------------------------------ paths --

REPO = Path(__file__).resolve().parents[1]

# placeholder -> what it stands for, for a record's reader (:func:`legend`)
PLACEHOLDERS = {
    "<stdlib>": "the Python standard library's folder",
    "<site-packages>": "the Python environment's installed packages",
    "<vim-docs>": f"Vim's help folder, {VIM_DOCS}",
    "<node-docs>": f"the Node.js API documentation's folder, {os.path.dirname(NODE_DOCS_MD)}",
    "<tmp>": "the temporary folder",
    "~": "the home folder",
}

# A path starts at a '/' that does not continue a word or a relative path (nor follow a
# placeholder already written); a folder name ends at a '/', a space, a quote or punctuation.
_START = r"(?<![\w.~<>/-])"
_END = r"(?=[/\s'\"`:,;)\]}>]|$)"
_CHAR = r"[^\s'\"`:]"  # a character of a path
_NAME = r"[^\s'\"`:/]"  # a character of one folder's name


def _glob_pattern(glob: str) -> str:
    """A shell glob of folders (its '*' within one folder name) as a regular expression."""
    return "".join(_NAME + "*" if c == "*" else re.escape(c) for c in glob)


def _machine_patterns() -> tuple[list, list]:
    """(pattern, replacement) of each kind of system folder, in the order they apply: an
    environment's packages before the standard library that holds them, an interpreter
    before the folder it sits in; then (after the repository) temporary and home folders,
    this machine's own first."""
    def exact(path: str) -> list:
        path = path.rstrip("/")
        return [re.compile(_START + re.escape(path) + _END)] if path.count("/") else []

    stdlib = sysconfig.get_paths()["stdlib"]
    system = [(re.compile(_START + f"/{_CHAR}*?/(?:site|dist)-packages" + _END),
               "<site-packages>"),
              (re.compile(_START + f"/{_CHAR}*/bin/python[\\d.]*" + r"(?=[\s'\"`:,;)\]}]|$)"),
               "python")]
    system += [(p, "<stdlib>") for p in exact(stdlib)]
    system += [(re.compile(_START + f"/{_CHAR}*?/lib/python3(?:\\.\\d+)?" + _END), "<stdlib>"),
               (re.compile(_START + _glob_pattern(VIM_DOCS) + _END), "<vim-docs>")]
    system += [(p, "<node-docs>") for p in exact(os.path.dirname(NODE_DOCS_MD))]
    rest = [(p, "<tmp>") for p in exact(tempfile.gettempdir())]
    rest += [(re.compile(_START + "/(?:var/)?tmp" + _END), "<tmp>")]
    rest += [(p, "~") for p in exact(str(Path.home()))]
    rest += [(re.compile(_START + f"/(?:root|home/{_NAME}+)" + _END), "~")]
    return system, rest


_SYSTEM, _HOME_TMP = _machine_patterns()


def portable(x, repo: str | os.PathLike = REPO):
    """``x`` (a string, or dicts and lists of them: a record) with every path of the machine
    that wrote it made portable: the interpreter as ``python``, the Python environment's
    packages, its standard library and the system text corpora (bornbiased_jax.defaults) as
    the placeholders of :data:`PLACEHOLDERS`, a path inside the repository ``repo`` relative to
    its root (the root itself as '.'), a path beside it (in its parent folder) as '../...', a
    temporary folder as ``<tmp>`` and a home folder as ``~``. Other paths, numbers and any
    other value stay as they are."""
    if isinstance(x, dict):
        return {portable(k, repo): portable(v, repo) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [portable(v, repo) for v in x]
    if not isinstance(x, str) or "/" not in x:
        return x
    for pattern, name in _SYSTEM:
        x = pattern.sub(name, x)
    root = str(repo).rstrip("/")
    x = re.sub(_START + re.escape(root) + r"(?:/|" + _END + ")",
               lambda m: "" if m.group(0).endswith("/") else ".", x)
    parent = os.path.dirname(root)
    if parent not in ("", "/"):
        x = re.sub(_START + re.escape(parent) + "/", "../", x)
    for pattern, name in _HOME_TMP:
        x = pattern.sub(name, x)
    return x


def legend(text: str) -> str:
    """What each placeholder of :func:`portable` that occurs in ``text`` stands for
    ("`<vim-docs>`: Vim's help folder, ..."; '; ' between them), or '' when none does."""
    return "; ".join(f"`{k}`: {v}" for k, v in PLACEHOLDERS.items()
                     if k != "~" and k in text)


def repo_relative(arg: str) -> str:
    """A command-line argument naming an absolute path inside the repository, as a path
    relative to its root (a record's command then reads the same on every machine; the
    commands run from the root); ``--key=value`` forms too; any other machine path made
    :func:`portable`."""
    key, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    if value.startswith("/") and Path(value).resolve().is_relative_to(REPO):
        value = str(Path(value).resolve().relative_to(REPO))
    return portable(f"{key}{eq}{value}")


def earlier_matched(records: dict) -> str:
    """'' for a lineage record written with the matched test of today
    (``defaults.MATCHED_STATISTIC`` in its records), else the sentence a row measured with the
    earlier statistic adds."""
    from bornbiased_jax.defaults import MATCHED_STATISTIC

    if records.get("matched_statistic") == MATCHED_STATISTIC:
        return ""
    return ("measured with the matched test's earlier statistic (a Hungarian assignment, "
            "layer l against layer l, the slack a share of the width), not today's "
            "(reciprocal best partners, layers matched across depths: its level is the level "
            "table's)")
