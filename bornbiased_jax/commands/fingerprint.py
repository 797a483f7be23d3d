"""``bornbiased fingerprint``: SeedPrint, does SUSPECT descend from BASE's initialisation?"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bornbiased_jax import precision
from bornbiased_jax.commands.arguments import (add_alias, add_multiprocess_arguments,
                                               add_precision_argument, command_parser,
                                               positive, positive_float, precision_group)
from bornbiased_jax.defaults import FINGERPRINT_FORWARD_BUDGET as FORWARD_BUDGET
from bornbiased_jax.defaults import FINGERPRINT_N_MAX as N_MAX
from bornbiased_jax.defaults import FINGERPRINT_N_MIN as N_MIN
from bornbiased_jax.defaults import MATCHED_SEQS
from bornbiased_jax.defaults import (CALIBRATED_NULL_MODELS, CALIBRATED_STATISTIC,
                                     MATCHED_TOKENS_ASSUMED,
                                     CALIBRATED_STATISTICS, PERMUTATION_DRAWS,
                                     PERMUTATION_STATISTIC, PERMUTATION_STATISTICS)
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.runner import registry
from bornbiased_jax.fingerprint.runner.audit import expand_suspects, planned_device  # noqa: F401

FEATURES = ["normed", "prenorm", "logits"]  # --feature's choices
CPU = dict(n=None, seq_len=64)  # n None: compare.default_n (2,000 for small models)
PAPER = dict(n=10_000, seq_len=1024)


TOKEN_SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def token_count(text: str) -> float:
    """A positive number of tokens, for --trained-tokens: '2e12', '2T', '4.1M', '36T'."""
    t = text.strip()
    scale = TOKEN_SUFFIXES.get(t[-1:].upper(), 1.0) if t else 1.0
    try:
        x = float(t[:-1] if scale != 1.0 else t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of tokens (e.g. 2e12, 2T, 4.1M)") from None
    if not (x > 0 and x < float("inf")):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of tokens")
    return x


def non_negative_int(text: str) -> int:
    """A whole number >= 0, for --matched-slack."""
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if x < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return x


def unit_interval(text: str) -> float:
    """A number in [0, 1), for --matched-eps."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= x < 1:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1)")
    return x


def add_parser(sub) -> None:
    p = command_parser(
        sub, "fingerprint", help="SeedPrint: does SUSPECT (or each of several) descend from BASE?",
        description="SeedPrint: feed the same random inputs to BASE and each SUSPECT and test "
                    "whether SUSPECT descends from BASE (or from BASE's initialisation); prints "
                    "a table and the verdict and writes fingerprint.json, fingerprint.md and "
                    "fingerprint.png into --out. The tests, what each assumes, their measured "
                    "error rates and the edits each survives: docs/seedprint.md.",
        examples=["bornbiased fingerprint 'runs/s#42@0' 'runs/s#42'    # its own initialisation",
                  "bornbiased fingerprint 'runs/s#42' 'runs/s#123'     # an unrelated model",
                  "bornbiased fingerprint 'runs/s#42' 'runs/s#42@60' hf_models/ --out "
                  "results/audit",
                  "bornbiased fingerprint /data/Llama-2-7b-hf /data/vicuna-7b --dtype bfloat16"])
    p.add_argument("base", metavar="BASE",
                   help="a model source, the base (the claimed origin): preset:NAME@SEED, a "
                        "train run PATH[@STEP] or PATH#SEED[@STEP], an HF folder or a GGUF file")
    p.add_argument("suspects", metavar="SUSPECT", nargs="+",
                   help="a model source (or several), the suspect(s), or a folder of Hugging "
                        "Face model folders (each a suspect). With several, BASE's features are "
                        "computed once and each suspect costs one forward pass; every suspect "
                        "is checked (it exists, its width and vocabulary fit) before any work "
                        "starts. --out then holds summary.json and summary.md (one row per "
                        "suspect) and pairs/<k>-<name>/ with each pair's fingerprint.json, .md "
                        "and .png")
    p.add_argument("--test", choices=registry.choices(), default="auto",
                   help=registry.test_help() + " (BASE's initialisation is known for a "
                        "preset, a train run and a run continued from one)")
    p.add_argument("--out", type=Path, default=Path("results/fingerprint"), metavar="DIR",
                   help="folder for fingerprint.json, .md and .png (with several suspects: "
                        "summary.json, summary.md and pairs/)")
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu",
                   help=f"which defaults of --num-seqs and --seq-len apply: cpu (N as below, T "
                        f"{CPU['seq_len']}) or paper (N {PAPER['n']}, T {PAPER['seq_len']}, "
                        f"for a GPU)")
    p.add_argument("--num-seqs", type=int, metavar="N",
                   help=f"number N of random input sequences, at least 3 (default: the most, "
                        f"from {N_MIN} up to {N_MAX:,}, whose forward passes through both "
                        f"models stay under {FORWARD_BUDGET / 1e12:g} TFLOP (a few seconds "
                        f"on a 2-core CPU): {N_MAX:,} for small models, 37 for a pair of "
                        f"SmolLM2-135M; the matched test reads the first {MATCHED_SEQS} "
                        f"whatever N is; "
                        f"with --scale paper: {PAPER['n']:,})")
    add_alias(p, "--n", "--num-seqs", type=int)  # the former spelling
    p.add_argument("--seq-len", type=positive, metavar="T",
                   help=f"length T of each input sequence (default: {CPU['seq_len']}; with "
                        f"--scale paper: {PAPER['seq_len']})")
    p.add_argument("--input", choices=["gaussian", "tokens"], default=None,
                   help="uniform random token ids (the default when the aligned, permutation "
                        "or matched test runs), or Gaussian input embeddings with BASE's "
                        "embedding mean and std (Algorithm 1; the default otherwise)")
    p.add_argument("--feature", choices=FEATURES, default="normed",
                   help="the feature g(x) compared: the final hidden state at the last position "
                        "after the final norm, before it, or the logits")
    # the former spelling, too like --out (the folder) for a choice of feature
    add_alias(p, "--output", "--feature", choices=FEATURES)
    p.add_argument("--probe-seed", type=int, default=0, metavar="SEED",
                   help="seed of the random inputs")
    p.add_argument("--shared-embedding", action="store_true",
                   help="presets share one embedding across seeds (the Table-1 protocol); "
                        "without it every parameter of a preset is seed-dependent, as "
                        "'bornbiased train' builds them")
    p.add_argument("--device-memory-gib", type=positive_float, metavar="GIB",
                   help="plan as if each device had this much memory, in GiB, instead of its "
                        "own (a device's size, not a budget: the run is refused before "
                        "loading when the two models' weights leave less than a fifth of it "
                        "for the forward pass)")
    # former spellings: --memory-budget-gib (GiB, but the other commands' budget is another
    # idea) and --device-memory-gb (in GB, so with its own destination)
    add_alias(p, "--memory-budget-gib", "--device-memory-gib", type=positive_float)
    p.add_argument("--device-memory-gb", type=positive_float, help=argparse.SUPPRESS)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.add_argument("--fresh", action="store_true",
                   help="with several suspects, recompute every pair; by default a pair "
                        "already in --out/pairs from the same BASE, suspect, settings and "
                        "dtype (a stopped run of the same command) is kept")

    tests = p.add_argument_group("test settings", "Each applies to the tests named; "
                                 "docs/seedprint.md describes them.")
    tests.add_argument("--m", type=positive, metavar="M",
                       help="paper test: top-m size (default: 0.52 d_out)")
    tests.add_argument("--k", type=positive, metavar="K",
                       help="official test: bottom-k size K (default: 0.52 d_out)")
    tests.add_argument("--null-models", type=positive, default=CALIBRATED_NULL_MODELS,
                       metavar="INITS", help="calibrated and aligned tests: INITS fresh "
                                             "initialisations make the null")
    tests.add_argument("--calibrated-statistic", choices=CALIBRATED_STATISTICS, default=None,
                       metavar="NAME",
                       help=f"calibrated test's statistic: {', '.join(CALIBRATED_STATISTICS)} "
                            f"(default: {CALIBRATED_STATISTIC})")
    # the former spelling, which read as if it set every test's statistic
    add_alias(tests, "--statistic", "--calibrated-statistic", choices=CALIBRATED_STATISTICS)
    tests.add_argument("--permutations", type=positive, default=PERMUTATION_DRAWS,
                       metavar="DRAWS", help="permutation test: DRAWS random permutations "
                                             "make the null, at least 1/alpha - 1")
    tests.add_argument("--permutation-statistic", choices=PERMUTATION_STATISTICS,
                       default=PERMUTATION_STATISTIC, help="permutation test's statistic")
    tests.add_argument("--matched-slack", type=non_negative_int, default=None, metavar="UNITS",
                       help="matched test: the doubly matched MLP units per layer pair that two "
                            "independent models may share (default: 0 when either model is an "
                            "initialisation, where the test is valid; for two trained models "
                            "the law of training length at --trained-tokens, fitted on "
                            "held-in seeds trained on identical data, its level not rejected "
                            "on the held-out ones where measured (a rule of low power), an "
                            "extrapolation beyond: docs/seedprint.md; ignored with "
                            "--matched-slack)")
    tests.add_argument("--trained-tokens", type=token_count, default=None, metavar="TOKENS",
                       help=f"matched test between two trained models: the tokens the "
                            f"longer-trained of the two saw (e.g. 2T for SmolLM2, from its "
                            f"model card), which sets the slack by the law of training length "
                            f"(default: {MATCHED_TOKENS_ASSUMED / 1e12:g}T, the most any public "
                            f"model card states: the largest slack the law gives a released "
                            f"model)")
    tests.add_argument("--no-sequential", dest="sequential", action="store_false",
                       help="the any-pair verdict runs its matched leg first (it reads the first "
                            f"{MATCHED_SEQS} sequences) and stops the permutation leg at those "
                            "sequences where that leg decides alone (2 p <= alpha: the same "
                            "verdict) or found nothing (p = 1, unless the permutation leg's "
                            "p on those sequences is already at most alpha/2: a verdict 'no "
                            "evidence' that only the permutation leg on more sequences could "
                            "change; no descendant in the benchmarks is found that way), at a "
                            "fraction of the forward passes; this flag runs the permutation "
                            "leg on all n inputs always")
    # the former spelling, a share of BASE's MLP width: kept for a release, hidden
    tests.add_argument("--matched-eps", type=unit_interval, default=None, help=argparse.SUPPRESS)

    precision_group(p).add_argument(
        "--dtype", choices=["float32", "bfloat16"], default="float32",
        help="parameter dtype of both models (bfloat16 halves their memory: two 7B models "
             "take 27 GB, Table 6's setting on one 80 GB GPU); a plan (parameters, memory "
             "held, forward FLOPs, time estimate) is printed before loading")
    add_precision_argument(p, precision.PROBE_DEFAULT)
    add_multiprocess_arguments(p)
    p.set_defaults(run=run)


def chosen_tests(choice: str, init_known: bool, gated: bool = True) -> tuple[str, ...]:
    """The tests ``--test choice`` runs: ``registry.chosen``, whose rule
    ``registry.auto_condition`` states."""
    return registry.chosen(choice, init_known, gated)


def run(args) -> int:
    from bornbiased_jax import distributed, files
    from bornbiased_jax.fingerprint.runner import audit

    files.check_writable(args.out, folder=True, flag="--out")  # before any work
    scale = PAPER if args.scale == "paper" else CPU
    n = args.num_seqs if args.num_seqs is not None else scale["n"]
    if n is not None and n < 3:
        raise UserError(f"--num-seqs {n} is too few sequences: the lineage tests need at "
                        f"least 3")
    a = audit.plan(args.base, args.suspects, args.test, input=args.input, dtype=args.dtype,
                   device_memory_gib=args.device_memory_gib,
                   device_memory_gb=args.device_memory_gb, n=n,
                   seq_len=args.seq_len or scale["seq_len"], output=args.feature, m=args.m,
                   k=args.k, null_models=args.null_models,
                   statistic=args.calibrated_statistic or CALIBRATED_STATISTIC,
                   probe_seed=args.probe_seed,
                   permutations=args.permutations,
                   permutation_statistic=args.permutation_statistic,
                   matched_slack=args.matched_slack, matched_eps=args.matched_eps,
                   trained_tokens=args.trained_tokens, sequential=args.sequential)
    from bornbiased_jax.fingerprint.runner import memory_plan

    print(a.memory.describe(), flush=True)
    memory_plan.check(a.memory)  # before anything is loaded
    for note in a.notes:
        print(f"note: {note}", flush=True)
    done, base = ({}, None) if args.fresh else a.finished(args.out)
    if done:
        print(f"resuming: {len(done)} of {len(a.suspects)} pairs already in {args.out}/pairs "
              f"(same BASE, suspect, settings and dtype) are kept; --fresh recomputes them",
              flush=True)
    rows = dict(done)
    pending = [k for k in range(len(a.suspects)) if k not in done]
    for k, out in a.comparisons(shared_embedding=args.shared_embedding,
                                progress=not args.no_progress, only=pending):
        base = out["base"]
        if not distributed.is_writer():  # every process computed; process 0 writes
            continue
        report = a.pair_report(k, out, args.out, args.command_line)
        files.write_artifacts(report["folder"], report["files"])
        print(report["text"], flush=True)
        rows[k] = report["row"]
    if not distributed.is_writer():
        return 0
    rows = [rows[k] for k in sorted(rows)]
    if len(a.suspects) > 1:
        summary = a.summary_files(base, rows)
        files.write_artifacts(args.out, summary)
        print(summary["summary.md"])
    print(f"wrote {args.out} ({time.time() - a.t0:.0f} s)")
    return 0
