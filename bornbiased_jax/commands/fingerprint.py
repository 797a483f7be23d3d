"""``bornbiased fingerprint``: SeedPrint, does SUSPECT descend from BASE's initialisation?"""

from __future__ import annotations

import argparse
import dataclasses
import re
import time
from pathlib import Path

from bornbiased_jax import precision
from bornbiased_jax.commands.arguments import (add_multiprocess_arguments, add_precision_argument,
                                               command_parser, memory_budget_argument, positive,
                                               positive_float, precision_group)
from bornbiased_jax.defaults import (CALIBRATED_NULL_MODELS, CALIBRATED_STATISTIC,
                                     CALIBRATED_STATISTICS, PERMUTATION_DRAWS,
                                     PERMUTATION_STATISTIC, PERMUTATION_STATISTICS)
from bornbiased_jax.errors import UserError

CPU = dict(n=2000, seq_len=64)
PAPER = dict(n=10_000, seq_len=1024)


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
    p.add_argument("--test", choices=["auto", "aligned", "permutation", "matched", "paper",
                                      "official", "calibrated", "all"], default="auto",
                   help="which test(s): 'auto' runs aligned and permutation when BASE's "
                        "initialisation is known (a preset, a train run, a run continued from "
                        "one), else permutation and matched (gated MLPs), whose any-pair "
                        "verdict takes each at alpha/2, saying why; 'all' runs every test "
                        "that applies")
    p.add_argument("--out", type=Path, default=Path("results/fingerprint"), metavar="DIR",
                   help="folder for fingerprint.json, .md and .png (with several suspects: "
                        "summary.json, summary.md and pairs/)")
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu",
                   help=f"which defaults of --n and --seq-len apply: cpu (n {CPU['n']}, T "
                        f"{CPU['seq_len']}) or paper (n {PAPER['n']}, T {PAPER['seq_len']}, "
                        f"for a GPU)")
    p.add_argument("--n", type=int, metavar="N",
                   help=f"number of random input sequences, at least 3 (default: {CPU['n']}; "
                        f"with --scale paper: {PAPER['n']})")
    p.add_argument("--seq-len", type=positive, metavar="T",
                   help=f"length T of each input sequence (default: {CPU['seq_len']}; with "
                        f"--scale paper: {PAPER['seq_len']})")
    p.add_argument("--input", choices=["gaussian", "tokens"], default=None,
                   help="uniform random token ids (the default when the aligned, permutation "
                        "or matched test runs), or Gaussian input embeddings with BASE's "
                        "embedding mean and std (Algorithm 1; the default otherwise)")
    p.add_argument("--output", choices=["normed", "prenorm", "logits"], default="normed",
                   help="the feature g(x): the final hidden state at the last position after "
                        "the final norm, before it, or the logits")
    p.add_argument("--probe-seed", type=int, default=0, metavar="SEED",
                   help="seed of the random inputs")
    p.add_argument("--shared-embedding", action="store_true",
                   help="presets share one embedding across seeds (the Table-1 protocol); "
                        "without it every parameter of a preset is seed-dependent, as "
                        "'bornbiased train' builds them")
    memory_budget_argument(
        p, "plan for this much memory per device, in GiB, instead of the device's own: the "
           "run is refused before loading when the two models' weights leave less than a "
           "fifth of it for the forward pass")
    p.add_argument("--device-memory-gb", type=positive_float, help=argparse.SUPPRESS)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")

    tests = p.add_argument_group("test settings", "Each applies to the tests named; "
                                 "docs/seedprint.md describes them.")
    tests.add_argument("--m", type=positive, metavar="M",
                       help="paper test: top-m size (default: 0.52 d_out)")
    tests.add_argument("--k", type=positive, metavar="K",
                       help="official test: bottom-k size (default: 0.52 d_out)")
    tests.add_argument("--null-models", type=positive, default=CALIBRATED_NULL_MODELS,
                       metavar="K", help="calibrated and aligned tests: fresh initialisations K")
    tests.add_argument("--statistic", choices=CALIBRATED_STATISTICS, default=None,
                       metavar="NAME",
                       help=f"calibrated test's statistic: {', '.join(CALIBRATED_STATISTICS)} "
                            f"(default: {CALIBRATED_STATISTIC})")
    tests.add_argument("--permutations", type=positive, default=PERMUTATION_DRAWS, metavar="K",
                       help="permutation test: random permutations K, at least 1/alpha - 1")
    tests.add_argument("--permutation-statistic", choices=PERMUTATION_STATISTICS,
                       default=PERMUTATION_STATISTIC, help="permutation test's statistic")

    precision_group(p).add_argument(
        "--dtype", choices=["float32", "bfloat16"], default="float32",
        help="parameter dtype of both models (bfloat16 halves their memory: two 7B models "
             "take 27 GB, Table 6's setting on one 80 GB GPU); a plan (parameters, memory "
             "held, forward FLOPs, time estimate) is printed before loading")
    add_precision_argument(p, precision.PROBE_DEFAULT)
    add_multiprocess_arguments(p)
    p.set_defaults(run=run)


def chosen_tests(choice: str, init_known: bool, gated: bool = True) -> tuple[str, ...]:
    """The tests ``--test choice`` runs: 'auto' is the aligned and permutation tests where
    BASE's initialisation is known, else the permutation and (for gated MLPs) matched tests,
    whose any-pair verdict combines them; 'all' every test that applies."""
    from bornbiased_jax.fingerprint.compare import TESTS

    if choice == "auto":
        return (("aligned", "permutation") if init_known
                else ("permutation", "matched") if gated else ("permutation",))
    if choice == "all":
        return tuple(t for t in TESTS if (init_known or t != "aligned")
                     and (gated or t != "matched"))
    return (choice,)


def expand_suspects(specs: list[str]) -> list[str]:
    """The suspects' model sources: each spec as given, except a folder that is neither a model
    (config.json) nor a train run (run.json) but holds model folders, which stands for each of
    them (sorted by name). Such a folder without any model is a UserError naming it."""
    from bornbiased_jax.training import run_folder

    out = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir() and not (path / "config.json").is_file() and not run_folder.is_run(path):
            models = sorted(str(d) for d in path.iterdir()
                            if d.is_dir() and ((d / "config.json").is_file()
                                               or run_folder.is_run(d)))
            if not models:
                raise UserError(f"suspect folder {spec!r} holds no model: neither config.json "
                                f"nor run.json, and no sub-folder with one")
            out += models
        else:
            out.append(spec)
    return out


def planned_device(gib: float | None, gb: float | None = None) -> tuple[str, int] | None:
    """The (description, bytes) the memory plan assumes instead of the device's own:
    ``--memory-budget-gib`` (GiB, 2**30 bytes) or the former ``--device-memory-gb`` (GB, 10**9
    bytes, still read); None for the device's own."""
    if gib is not None and gb is not None:
        raise UserError("give --memory-budget-gib alone (--device-memory-gb is its former "
                        "spelling, in GB)")
    if gib is not None:
        return f"a device of {gib:g} GiB (--memory-budget-gib)", int(gib * 2**30)
    if gb is not None:
        return f"a device of {gb:g} GB (--device-memory-gb)", int(gb * 1e9)
    return None


def _pair_folder(k: int, label: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_")[:60] or "model"
    return f"{k:02d}-{safe}"


def run(args) -> int:
    from bornbiased_jax import distributed, files
    from bornbiased_jax.fingerprint import tables
    from bornbiased_jax.fingerprint.compare import (RECOMMENDED, Settings, check_pair,
                                                    compare_many)
    from bornbiased_jax.sources import initialisation_spec, load_source

    files.check_writable(args.out, folder=True, flag="--out")  # before any work
    scale = PAPER if args.scale == "paper" else CPU
    n = args.n if args.n is not None else scale["n"]
    if n < 3:
        raise UserError(f"--n {n} is too few inputs: the lineage tests need n >= 3")
    init_spec, init_note = None, None
    if args.test in ("auto", "all", "aligned"):  # where BASE's initialisation is, if known
        try:
            init_spec = initialisation_spec(args.base)
        except UserError as e:
            if args.test == "aligned":
                raise UserError(f"the aligned test needs BASE's initialisation: {e}") from None
            init_note = str(e)
        if init_spec is None and init_note is None:
            init_note = (f"the initialisation of {args.base} is not known (it is, or was "
                         f"continued from, an HF folder or a GGUF file)")
    from bornbiased_jax.sources import source_config

    base_gated = source_config(args.base).gated_mlp
    tests = chosen_tests(args.test, init_spec is not None, base_gated)
    input_kind = args.input or ("tokens" if {"aligned", "permutation", "matched"} & set(tests)
                                else "gaussian")
    settings = Settings(
        tests=tests, input=input_kind, n=n,
        seq_len=args.seq_len or scale["seq_len"], output=args.output, m=args.m, k=args.k,
        null_models=args.null_models, statistic=args.statistic or CALIBRATED_STATISTIC,
        probe_seed=args.probe_seed, permutations=args.permutations,
        permutation_statistic=args.permutation_statistic)
    import jax.numpy as jnp

    from bornbiased_jax.fingerprint import memory_plan
    from bornbiased_jax.sources import check_source

    t0 = time.time()
    device = planned_device(args.memory_budget_gib, args.device_memory_gb)
    suspects = expand_suspects(args.suspects)
    base_cfg = check_source(args.base)
    if "aligned" in tests and init_spec is None:
        raise UserError(f"the aligned test compares SUSPECT with BASE's initialisation: "
                        f"{init_note}; give BASE as preset:NAME@SEED or a train run, or use "
                        f"--test permutation")
    if "aligned" in tests and init_spec != args.base:
        try:
            check_source(init_spec)
        except UserError as e:
            raise UserError(f"BASE's initialisation {init_spec!r} (the aligned test's): "
                            f"{e}") from None
    configs = []
    for spec in suspects:  # every suspect is checked before anything is loaded
        try:
            cfg = check_source(spec)
        except UserError as e:
            raise UserError(f"suspect {spec!r}: {e}") from None
        check_pair(base_cfg, cfg, settings, f"suspect {spec!r}")
        configs.append(cfg)
    # BASE's initialisation is read apart (in float32, like the null initialisations, so that
    # it is exchangeable with them) unless BASE is that very initialisation in float32.
    reads_init = "aligned" in tests and (init_spec != args.base.strip()
                                         or args.dtype != "float32")
    plan = memory_plan.make_plan(
        base_cfg, max(configs, key=memory_plan.param_count), settings.n, settings.seq_len,
        args.dtype, device, reads_init=reads_init,
        null_models=settings.null_models if {"aligned", "calibrated"} & set(tests) else 0)
    print(plan.describe(), flush=True)
    memory_plan.check(plan)  # before anything is loaded
    notes = []
    if args.test in ("auto", "all") and init_spec is None:
        notes.append(f"{init_note}: the aligned test cannot run, and the verdict is " + (
            "the any-pair verdict: the permutation test (exact; a renamed or rotated copy "
            "evades it) and the matched test (robust to renamings and rotations; exact when "
            "one model is an initialisation, else resting on an assumption, "
            "docs/seedprint.md), each at alpha/2" if "matched" in tests else
            "the permutation test's, which a copy with a renamed residual basis evades (the "
            "matched test needs a gated MLP)"))
        print(f"note: {notes[-1]}", flush=True)
    dtype = jnp.bfloat16 if args.dtype == "bfloat16" else jnp.float32
    base = load_source(args.base, shared_embedding=args.shared_embedding, dtype=dtype)
    loaders = [lambda spec=spec: load_source(spec, shared_embedding=args.shared_embedding,
                                             dtype=dtype) for spec in suspects]
    init = None
    if "aligned" in tests and (not base.is_init or args.dtype != "float32"):
        # read, its features taken, then released before the first suspect is loaded
        init = lambda: load_source(init_spec, shared_embedding=args.shared_embedding,
                                   dtype=jnp.float32)
    several = len(suspects) > 1
    summary = []
    for k, out in enumerate(compare_many(base, loaders, settings, init=init,
                                         progress=not args.no_progress)):
        results, label = out["results"], out["suspect"]
        if not distributed.is_writer():  # every process computed; process 0 writes
            continue
        wall = time.time() - t0
        run_info = files.run_record(args.command_line, wall, base=base.label, suspect=label,
                                    settings=dataclasses.asdict(settings), d_out=out["d_out"],
                                    dtype=args.dtype, plan=dataclasses.asdict(plan),
                                    notes=notes)
        title = (f"{label} vs base {base.label}: n = {settings.n}, T = {settings.seq_len}, "
                 f"{settings.input} inputs, {settings.output} outputs")
        verdict = tables.verdict_line(results, RECOMMENDED, base.label, label)
        folder = args.out / "pairs" / _pair_folder(k, label) if several else args.out
        outputs = {"fingerprint.json": {"run": run_info, "verdict": verdict,
                                        "results": {t: r.to_json() for t, r in results.items()}},
                   "fingerprint.md": f"# SeedPrint: {title}\n\n{tables.table_markdown(results)}\n"
                                     f"{verdict}\n\n"
                                     + "".join(f"Note: {x}\n\n" for x in notes)
                                     + f"{wall:.0f} s on {run_info['devices'][0]}.\n",
                   "fingerprint.png": tables.figure(results, title)}
        files.write_artifacts(folder, outputs)
        print(title)
        print(tables.table_text(results))
        for name, r in results.items():
            if r.note:
                print(f"note ({name}): {r.note}")
        print(verdict, flush=True)
        summary.append({"suspect": label, "spec": suspects[k], "verdict": verdict,
                        "verdict_test": tables.deciding_test(results, RECOMMENDED),
                        "folder": str(folder.relative_to(args.out)) if several else ".",
                        "p": {t: r.p for t, r in results.items()},
                        "related": {t: bool(r.same_lineage) for t, r in results.items()}})
    wall = time.time() - t0
    if not distributed.is_writer():
        return 0
    if several:
        files.write_artifacts(args.out, {
            "summary.json": {"base": base.label, "settings": dataclasses.asdict(settings),
                             "recommended": RECOMMENDED, "wall_seconds": round(wall, 1),
                             "suspects": summary},
            "summary.md": tables.summary_markdown(summary, base.label, RECOMMENDED)})
        print(tables.summary_markdown(summary, base.label, RECOMMENDED))
    print(f"wrote {args.out} ({wall:.0f} s)")
    return 0
