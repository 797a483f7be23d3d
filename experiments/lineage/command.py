"""The command line shared by the lineage scripts (Figure 11, Tables 4b, 4c and 5): flags,
argument parsing and writing one table's outputs. The study itself (runs, features, tests
and baselines) is :mod:`experiments.lineage.measure`."""

from __future__ import annotations

import time
from pathlib import Path

from experiments.common.cli import parse, user_errors_exit, write
from experiments.lineage.measure import CPU, PAPER, Study, pairs_figure, scale_family


def flags(p) -> None:
    p.add_argument("--runs-dir", type=Path, help="folder of the family's runs (default "
                   "runs/family, or runs/family-paper with --scale paper)")
    corpus_flag(p)
    p.add_argument("--cache", type=Path, default=Path("results/experiments/lineage_cache"),
                   help="folder for cached features (shared by the four lineage scripts)")


def corpus_flag(p) -> None:
    p.add_argument("--corpus", action="append", metavar="NAME=PATH",
                   help="replace one of the family's corpora (base, prose, code) by a file, "
                        "folder or hf:DATASET[@REVISION][:SPLIT[:CONFIG[:joined]]]; repeat the "
                        "flag for several")


def study_of(args, s: dict) -> Study:
    """The lineage study the flags name: its runs folder, feature cache and family."""
    return Study(Path(args.runs_dir or s["runs_dir"]), s, args.cache,
                 scale_family(args.scale, args.corpus))


def parse_args(name: str, doc: str, argv=None):
    return parse(name, doc, CPU, PAPER, extra=flags, argv=argv)


def script_main(name: str, doc: str, run, title: str, argv=None) -> None:
    """The command line of one lineage table: parse the flags, ``run(Study)`` -> (records,
    markdown), and write JSON, markdown and the :func:`pairs_figure` PNG."""
    args, s = parse_args(name, doc, argv)
    t0 = time.time()
    with user_errors_exit(name):
        records, md = run(study_of(args, s))
    write(args, name, s, records, md, pairs_figure(records, title), t0)
