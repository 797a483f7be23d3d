"""The command line of Sec. 6.2 after training, ``python -m experiments figure12_table7``
(:func:`main`): train (or resume) the sink family's arms, measure Figure 12 and Table 7 on each
(:mod:`experiments.sinks.measure`), save the record after every arm."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from experiments import render
from experiments.common.cli import parse, user_errors_exit, write
from experiments.sinks.claims import markdown
from experiments.sinks.measure import (ARMS, CPU, PAPER, PAPER_ARMS, figure, scale_family,
                                       share_vocabulary, study)

NAME = "figure12_table7"


def main(argv: list[str]) -> None:
    """Sec. 6.2 after training: attention sinks (Figure 12), when they emerge, and perplexity
    (Table 7) for the baseline and the positional-variance arms.

    Arms (``experiments/common/family.py``, the SINKS family: d = 192, 4 layers, T = 256, 16.4M
    tokens of Python code per arm): baseline, Positional Amplification o~_i = sqrt(i) o_i,
    Positional Attenuation o~_i = sqrt(i/T) o_i (T = 256, the trained context, fixed at evaluation),
    head-wise RMSNorm with a learned per-head gamma, and a sigmoid output gate (not from the paper);
    all seed 42, the same data in the same order, trained (or resumed) by this script, the baseline
    first: ``--arms baseline`` trains and measures it alone (the validity gate: does it develop
    sinks?). ``--control-seeds 43`` also trains the baseline from another initialisation seed (the
    same data in the same order), a seed-to-seed control: every arm is one training run, so the
    standard errors below cover the evaluation windows only, and the control's paired differences
    from the seed-42 baseline show how large a difference training noise alone makes.

    Measured on held-out text of the training corpus (the run's validation documents):
      * Figure 12: the sink rate Sink_eps (eps = 0.25, and Gu et al.'s 0.3) of each arm's final
        checkpoint at lengths 32 ... 256, 100 random windows per length; alpha^1 includes i = 1,
        and the rate is taken per sequence, then averaged (probes/sinks/metric.py);
      * emergence: the sink rate at T = 256 at every saved checkpoint (step 0 = initialisation);
      * convergence: held-out perplexity at every saved checkpoint, each arm paired with the
        baseline on the same windows (the companion paper's claim that head-wise RMSNorm
        "significantly accelerates convergence" is tested on it);
      * Table 7: perplexity on 64 windows of 256 tokens (+1 target) from the held-out in-domain text
        and from the shifted corpora (prose, documentation), with the standard error of
        log-perplexity over windows, and paired differences against the baseline.

    Each arm's measurement goes into the record (results/records/sinks/figure12_table7.json) as
    soon as it is made, and the family's vocabulary (base-s42's tokenizer) beside it
    (figure12_table7.tokenizer.json), so the study advances across machines that do not keep the
    run folders (~60 MB per checkpoint, not committed): a later run keeps the saved arms measured
    with the same settings, training config and evaluation tokens, trains the others with the
    committed vocabulary, and measures afresh every run finished in --runs-dir (``--fresh``: keep
    nothing saved). One arm's training took 2,661-6,143 s on 2 CPU cores (each arm's
    ``run.train_seconds`` in that record; the gate's run, 4,147 s of training, took 4,207 s with its
    measurement: the record's ``run.wall_seconds``); ``--arms amplification`` trains one.

    ``--scale paper`` (for GPUs) trains and measures the arms of ``family.SINKS_PAPER``: Table 13's
    llama2-nano (d = 768, 12 layers, T = 2048) with Table 14's optimiser, 200,000 steps of
    128 x 2048 tokens of OpenWebText (``hf:Skylion007/openwebtext``, or --corpus base=PATH), and
    Table 7 on WikiText-2 and C4; sink rates on WikiText-2 (the paper's text) at lengths
    32 ... 512, perplexities on 256 windows of 2048 tokens. Its departures
    from the paper (micro-batches, tokenizer, epochs over the corpus) are listed in
    experiments/common/family.py.
    """
    args, s = parse(NAME, main.__doc__, CPU, PAPER, extra=_flags, argv=argv)
    t0 = time.time()
    fam = scale_family(args.scale, args.family, args.corpus)
    # --family lineage measures the lineage study's own runs (the lineage command's folder)
    runs = Path(args.runs_dir or ("runs/family" if args.family == "lineage" else s["runs_dir"]))
    default_arms = PAPER_ARMS if args.scale == "paper" else ARMS
    saved_path = render.record_path(args.records, NAME)
    saved = json.loads(saved_path.read_text())["records"] if saved_path.is_file() else None
    vocab = saved_path.with_suffix(".tokenizer.json")
    share_vocabulary(runs, vocab)
    import jax

    where = f"{jax.devices()[0].device_kind} ({platform.platform()}, {os.cpu_count()} cores)"

    def save(records):  # after every arm: its measurement is kept even if a later arm stops
        share_vocabulary(runs, vocab)
        records["where"] = where
        write(args, NAME, s, records, markdown(records, s), figure(records, s), t0)

    study(s, runs, fam, args.arms or default_arms, train=not args.no_train,
          controls=args.control_seeds, saved=None if args.fresh else saved, on_arm=save)
    if args.results and args.scale == "cpu":
        text = render.write(Path(args.results), args.records)
        print(render.sections(text).get("sinks", ""))


def _flags(p) -> None:
    p.add_argument("--runs-dir", type=Path, help="folder of the family's runs (default "
                   "runs/sinks; runs/family with --family lineage, the lineage study's "
                   "folder; runs/sinks-paper with --scale paper)")
    p.add_argument("--family", choices=["sinks", "lineage"], default="sinks",
                   help="sinks: the longer sink family (default); lineage: the lineage family's "
                        "settings (2M tokens; its baseline is the lineage base-s42)")
    p.add_argument("--arms", nargs="+", help=f"arms to train and measure (default all: {ARMS}; "
                   f"with --scale paper the paper's Table 7 arms: {PAPER_ARMS})")
    p.add_argument("--corpus", action="append", metavar="NAME=PATH",
                   help="replace one of the family's corpora by a file, folder or "
                        "hf:DATASET[@REVISION][:SPLIT[:CONFIG[:joined]]] (repeat the flag "
                        "for several); names: "
                        "base, prose, docs (the sinks family); base, prose, code (--family "
                        "lineage); base, wikitext2, c4 (--scale paper)")
    p.add_argument("--control-seeds", type=int, nargs="+", default=[], metavar="SEED",
                   help="also train and measure the baseline from these initialisation seeds "
                        "(same data and order): a seed-to-seed control for the arms' differences")
    p.add_argument("--no-train", action="store_true",
                   help="evaluate finished runs only; do not train or resume any")
    p.add_argument("--fresh", action="store_true",
                   help="do not reuse the saved measurements of arms whose runs are not in "
                        "--runs-dir (by default they are kept when made with the same settings, "
                        "training config and evaluation tokens)")
    p.add_argument("--results", type=Path, default=None,
                   help="also rewrite this RESULTS.md from the records (CPU scale; the sinks "
                        "section comes from experiments/sinks/claims.py)")


def entry(argv: list[str]) -> None:
    """:func:`main`, a bad input's message and exit status instead of a traceback."""
    with user_errors_exit(NAME):
        main(argv)
