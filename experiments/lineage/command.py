"""The lineage study's command line (:func:`main`, ``python -m experiments lineage``): train or
resume the family, measure Figure 11 and Tables 4b, 4c and 5 (or their Qwen-style repeat), save
their records and rewrite RESULTS.md; the study itself (runs, features, tests and baselines) is
:mod:`experiments.lineage.measure`, its tables :mod:`experiments.lineage.tables`."""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments import render
from experiments.common import family
from experiments.common.cli import (add_precision_flag, add_records_flag, command_line,
                                    records_root, use_precision, user_errors_exit)
from experiments.lineage import claims as lineage_claims
from experiments.lineage.measure import (CPU, PAPER, RUNS, Study, default_runs_dir,
                                         scale_family)
from experiments.lineage.tables import experiment_names, run_all, runs_record


def corpus_flag(p) -> None:
    p.add_argument("--corpus", action="append", metavar="NAME=PATH",
                   help="replace one of the family's corpora (base, prose, code) by a file, "
                        "folder or hf:DATASET[@REVISION][:SPLIT[:CONFIG[:joined]]]; repeat the "
                        "flag for several")


def main(argv: list[str]) -> None:
    """The lineage study in one command (paper Sec. 5-6.1): train or resume the family, run
    Figure 11 and Tables 4b, 4c and 5, save their records (and the family's run summaries,
    ``lineage_runs``) to results/records/lineage/, and rewrite RESULTS.md from the records (the
    section between ``<!-- lineage:begin -->`` and ``<!-- lineage:end -->`` comes from
    experiments/lineage/claims.py). ``--arch qwen2`` is the paper's Qwen-style repeat (App.
    B.3.3): the same family with Qwen2's architecture, measured as Figure 14 and Tables 9-12
    (records figure14, table9-table12, lineage_qwen2_runs; section ``lineage_qwen2``).

        python -m experiments lineage                  # CPU scale: trains what is missing first
        python -m experiments lineage --arch qwen2     # the Qwen-style repeat, runs/family-qwen2
        python -m experiments lineage --no-train       # finished runs only
        python -m experiments lineage --only table5 --no-train   # one experiment of them
        python -m experiments lineage --no-run         # rebuild RESULTS.md from the records
        python -m experiments lineage --init hf        # the HF-init family, runs/family-hfinit
        python -m experiments lineage --arch qwen2 --init hf   # runs/family-qwen2-hfinit
        python -m experiments lineage --scale paper --corpus base=/data/openwebtext   # GPUs

    ``--scale paper`` trains ``family.LINEAGE_PAPER`` (the lineage models' released settings:
    llama2-nano, 10B tokens of OpenWebText; see experiments/common/family.py for where it
    departs from them) into runs/family-paper and measures it with the paper's n = 10,000 inputs of
    T = 1024.

    Training goes through ``family.ensure``: finished runs are skipped, interrupted ones resume
    from their latest complete checkpoint. The four experiments share one feature cache
    (``--cache``), so the K null initialisations are computed once per input kind.
    """
    p = argparse.ArgumentParser(prog="python -m experiments lineage", description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu")
    p.add_argument("--arch", choices=sorted(family.LINEAGE_ARCHS), default="llama2",
                   help="the family's architecture: the LLaMA-style models of Sec. 6.1 "
                        "(default) or the Qwen-style repeat of App. B.3.3")
    p.add_argument("--root", type=Path, default=Path("results/experiments"),
                   help="results folder (one subfolder per experiment)")
    p.add_argument("--runs-dir", type=Path, help="folder of the family's runs (default "
                   "runs/family, runs/family-paper with --scale paper; runs/family-qwen2[-paper] "
                   "with --arch qwen2)")
    p.add_argument("--cache", type=Path, default=None,
                   help="feature cache (default ROOT/lineage_cache)")
    p.add_argument("--results", type=Path, default=Path("RESULTS.md"))
    add_records_flag(p)
    corpus_flag(p)
    p.add_argument("--no-train", action="store_true", help="use finished runs only")
    p.add_argument("--init", choices=family.INITS, default="gpt2",
                   help="the family's initialisation: gpt2 (App. B.1's GPT-2-scaled residual "
                        "init, the default) or hf (the released code's HF default, no residual "
                        "scaling; runs in runs/family[-ARCH]-hfinit, records named "
                        "<experiment>_hfinit, a section of RESULTS.md of its own)")
    p.add_argument("--train-only", action="store_true",
                   help="train or resume the family's runs, measure nothing")
    add_precision_flag(p)  # one precision for the study's training and probes
    p.add_argument("--no-run", action="store_true", help="only rebuild RESULTS.md from the records")
    p.add_argument("--only", nargs="+", metavar="NAME", default=None,
                   help="measure only these experiments of the family (default: all of --arch's: "
                        + "; ".join(f"{a}: {', '.join(experiment_names(a))}"
                                    for a in sorted(family.LINEAGE_ARCHS)) + ")")
    args = p.parse_args(argv)
    if args.only:
        unknown = sorted(set(args.only) - set(experiment_names(args.arch)))
        if unknown:
            p.error(f"--only {' '.join(unknown)}: not an experiment of --arch {args.arch} "
                    f"({', '.join(experiment_names(args.arch))})")
    use_precision(args)
    records = args.records or records_root(args.scale)
    s = dict(PAPER if args.scale == "paper" else CPU)
    runs = Path(args.runs_dir or default_runs_dir(args.scale, args.arch))
    fam = scale_family(args.scale, args.corpus, args.arch)
    suffix = ""
    if args.init == "hf":
        fam = family.with_hf_init(fam)
        suffix = lineage_claims.HFINIT
        runs = Path(args.runs_dir or f"{default_runs_dir(args.scale, args.arch)}-hfinit")
    if args.train_only:
        for name in RUNS:
            print(f"training/resuming {name} ...", flush=True)
            family.ensure(name, runs, progress=True, fam=fam)
        return
    s["runs_dir"] = str(runs)  # the folder measured, in every record's settings
    if not args.no_run:
        if not args.no_train:
            for name in RUNS:
                print(f"training/resuming {name} ...", flush=True)
                family.ensure(name, runs, progress=True, fam=fam)
        study = Study(runs, s, args.cache or args.root / "lineage_cache", fam)
        run_all(study, args.root, args.scale, args.arch, names=args.only, records=records,
                command=command_line("lineage", argv), suffix=suffix)
        run = runs_record(runs, fam, args.scale, args.arch, suffix)
        render.save_record(records, run["run"]["experiment"], run)
    if args.scale == "paper":
        print(f"records in {records}; RESULTS.md renders the CPU-scale records only")
        return
    text = render.write(args.results, records)
    print(render.sections(text).get(("lineage" if args.arch == "llama2" else
                                     f"lineage_{args.arch}") + suffix, ""))


def entry(argv: list[str]) -> None:
    """:func:`main`, a bad input's message and exit status instead of a traceback."""
    with user_errors_exit("lineage"):
        main(argv)
