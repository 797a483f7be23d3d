"""Shared plumbing of the experiments' command lines: flags, scales, and atomic result writing.

Run an experiment from the repository root through the entry point, e.g. ``python -m
experiments table3``. Every experiment with settings takes ``--scale cpu|paper`` (cpu: minutes on a 2-core CPU; paper: the paper's
settings, for a GPU) and ``--out DIR`` (default results/experiments/<name>), and writes
``<name>.json``, ``<name>.md`` and ``<name>.png`` into it; the record (the JSON's run info and
records, compact) also goes to ``--records`` (default results/records, committed; at paper
scale results/records/paper), from which ``python -m experiments.run_all --no-run`` renders
RESULTS.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from bornbiased_jax import precision
from bornbiased_jax.commands.arguments import add_precision_argument
from experiments import artifacts
from experiments.artifacts import RECORDS, repo_relative


def parse(name: str, doc: str, cpu: dict, paper: dict, extra=None,
          argv=None) -> tuple[argparse.Namespace, dict]:
    """Flags ``--scale`` and ``--out`` (plus those ``extra(parser)`` adds); the settings of the
    chosen scale."""
    p = argparse.ArgumentParser(prog=f"python -m experiments {name}", description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu",
                   help=f"cpu: {cpu}; paper: {paper}")
    p.add_argument("--out", type=Path, default=Path("results/experiments") / name)
    add_records_flag(p)
    add_precision_flag(p)
    if extra is not None:
        extra(p)
    args = p.parse_args(argv)
    args.command_line = command_line(name, argv)
    from bornbiased_jax.errors import UserError

    try:
        use_precision(args)
    except UserError as e:  # a dot algorithm this backend lacks
        p.error(str(e))
    if args.records is None:
        args.records = records_root(args.scale)
    settings = dict(paper if args.scale == "paper" else cpu)
    return args, settings


def write(args: argparse.Namespace, name: str, settings: dict, records, table_md: str, fig,
          t0: float) -> None:
    """Write the experiment's JSON, markdown and PNG into ``args.out`` and its record under
    ``args.records`` (``artifacts.write``), then print its table and what was written."""
    saved = artifacts.write(name, settings, records, table_md, fig, t0, out=args.out,
                            scale=args.scale, records_root=getattr(args, "records", None),
                            command=getattr(args, "command_line", None)
                            or command_line(name, None))
    print(table_md)
    print(f"wrote {args.out}/{name}.json, .md, .png ({saved['run']['wall_seconds']} s)")


def command_line(script: str, argv=None) -> str:
    """``python -m experiments <script>`` with the experiment's arguments (``argv``, default
    this process's after its name), paths inside the repository relative to its root (the
    commands run from there)."""
    args = sys.argv[2:] if argv is None else argv
    return shlex.join(["python", "-m", "experiments", script, *map(repo_relative, args)])


def user_errors_exit(name: str):
    """A context manager: a ``UserError`` (bad input, a missing run) ends the script with its
    message and exit status 1 instead of a traceback; any other exception keeps its traceback."""
    import contextlib

    from bornbiased_jax.errors import UserError

    @contextlib.contextmanager
    def guard():
        try:
            yield
        except UserError as e:
            raise SystemExit(f"{name}: {e}") from None

    return guard()


def run_scripts(names, scale: str, root: Path, records: Path) -> None:
    """Run ``python -m experiments <name> --scale SCALE --out ROOT/<name> --records RECORDS``
    for each name in turn, each in a process of its own, from the repository's root; stop
    (exit with a message) at the first that fails."""
    import subprocess

    repo = Path(__file__).resolve().parents[2]
    for name in names:
        print(f"== {name}", flush=True)
        rc = subprocess.call([sys.executable, "-m", "experiments", name, "--scale", scale,
                              "--out", str(Path(root).absolute() / name),
                              "--records", str(Path(records).absolute())], cwd=repo)
        if rc:
            sys.exit(f"{name} failed with exit status {rc}")


def theory_plot(name: str, doc: str, argv: list[str]) -> None:
    """The command line of an experiment that :mod:`bornbiased_jax.theory.plots` measures
    (``name``: figure5, table3, figure8, figure9): its settings there, its table and figure
    from there, written as every experiment's."""
    import time

    from bornbiased_jax.theory import plots

    args, s = parse(name, doc, plots.CPU[name], plots.PAPER[name], argv=argv)
    t0 = time.time()
    rows, md, fig = getattr(plots, name)(s, progress=True)
    write(args, name, s, rows, md, fig, t0)


def records_root(scale: str) -> Path:
    """Where the committed records of ``scale`` go: results/records (cpu) or its paper/."""
    return RECORDS if scale == "cpu" else RECORDS / "paper"


def add_records_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--records", type=Path, default=None,
                   help="folder of the committed records (default results/records, or "
                        "results/records/paper with --scale paper); each experiment's record "
                        "goes to RECORDS/<study>/<name>.json")


def add_precision_flag(p: argparse.ArgumentParser) -> None:
    add_precision_argument(p, precision.PROBE_DEFAULT)


def use_precision(args) -> None:
    """Apply ``--matmul-precision`` for the rest of the script's process."""
    name = precision.for_command(args.matmul_precision, precision.PROBE_DEFAULT)
    if name is not None:
        precision.use(name)
