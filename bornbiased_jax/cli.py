"""``bornbiased``: a thin command line over the library.

  bornbiased sweep    token preference at initialisation (Table 1, Figure 1a); the main job
  bornbiased theory   the paper's propositions: closed forms vs simulated random networks
  bornbiased train    pretraining with Orbax checkpoints, resumable and deterministic
  bornbiased fingerprint  SeedPrint: does one model descend from another's initialisation?
  bornbiased sinks    attention-sink rate on real text (Sec. 6.2.1)

sweep, fingerprint and train also run as one process per host (``--coordinator``,
``--num-processes``, ``--process-id``, or a cluster JAX detects): see ``distributed.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from pathlib import Path

from bornbiased_jax import distributed, precision
from bornbiased_jax.errors import UserError
from bornbiased_jax.theory.cli import add_theory_parser

PAPER_SWEEP = dict(presets=["gpt2-rope-nano", "llama2-nano", "gpt2-rope-1.2b"],
                   seeds=[42, 43], seq_lens=[64, 256, 1024], num_seqs=10_000)
CPU_SWEEP = dict(presets=["gpt2-rope-cpu"], seeds=[0, 1, 2], seq_lens=[64], num_seqs=1000)


def parse_seeds(text: str) -> list[int]:
    """'42', '42,43', '0:256' (half-open range), '0:10:2', or a mix: '1,5:8' -> [1, 5, 6, 7]."""
    seeds: list[int] = []
    for part in filter(None, (p.strip() for p in text.replace(" ", ",").split(","))):
        try:
            if ":" in part:
                bounds = [int(b) for b in part.split(":")]
                if len(bounds) not in (2, 3):
                    raise ValueError(part)
                seeds.extend(range(*bounds))
            else:
                seeds.append(int(part))
        except ValueError:  # int() of a non-number, or a range with 1 or 4+ bounds
            raise UserError(f"cannot read seeds {text!r}: use integers, commas and ranges "
                             f"start:stop[:step], e.g. '42,43' or '0:256'") from None
    if not seeds:
        raise UserError(f"the seed list {text!r} is empty; give at least one seed, e.g. '0:4'")
    bad = [s for s in seeds if not 0 <= s < 2**32]
    if bad:
        raise UserError(f"seeds must lie in [0, 2**32): got {bad[:5]}")
    return seeds


def _seeds_arg(text: str) -> list[int]:
    try:
        return parse_seeds(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer (> 0), got {v}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text}")
    return v


def _preset(name: str):
    """The named preset, with an unknown name reported as bad input."""
    from bornbiased_jax.config import get_preset

    try:
        return get_preset(name)
    except ValueError as e:  # config.get_preset lists the valid names
        raise UserError(str(e)) from None


def _sweep_parser(sub) -> None:
    p = sub.add_parser(
        "sweep", help="token preference of random initialisations (Table 1, Figure 1a)",
        description="For each preset, seed and sequence length: predict the next token of N "
                    "uniformly random sequences with the randomly initialised model, and test "
                    "the most frequent prediction against the uniform null (Bonferroni binomial "
                    "test). Prints Table 1; writes token_preference.json, token_preference.md "
                    "and figure1a.png into --out. Defaults (CPU, about a minute on 2 cores): "
                    f"{CPU_SWEEP}. --scale paper: {PAPER_SWEEP}. Explicit flags override both.")
    p.add_argument("--preset", nargs="+", help="model preset(s), e.g. gpt2-rope-cpu llama2-nano")
    p.add_argument("--model", action="append", metavar="SPEC",
                   help="also (or instead) run on a model source, repeatable: 'preset:NAME@SEED', "
                        "a 'bornbiased train' run folder PATH or PATH@STEP (one seed of a "
                        "many-seed run: PATH#SEED[@STEP]), or a Hugging Face folder; without "
                        "--preset only these models run")
    p.add_argument("--seeds", type=_seeds_arg, help="model seeds: '42,43', '0:256', '1,5:8'")
    p.add_argument("--seq-len", type=_positive, nargs="+", help="sequence length(s) T")
    p.add_argument("--num-seqs", type=_positive, help="random sequences N per (seed, T)")
    p.add_argument("--input", choices=["tokens", "gaussian"], default="tokens",
                   help="uniform random token ids, or Gaussian input embeddings (Sec. 4.1)")
    p.add_argument("--probe-seed", type=int, default=0, help="seed of the probe sequences")
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu",
                   help="'paper' runs Table 1's settings (needs a GPU)")
    p.add_argument("--out", type=Path, default=Path("results/sweep"), help="output folder")
    p.add_argument("--strategy", choices=["auto", "vmap", "map", "loop"], default="auto",
                   help="how seeds are batched (auto: lax.map on CPU, vmap on accelerators)")
    p.add_argument("--seed-chunk", type=_positive,
                   help="seeds per compiled call (with vmap their parameters exist at once)")
    p.add_argument("--seq-chunk", type=_positive, help="sequences per compiled call")
    p.add_argument("--seq-batch", type=_positive,
                   help="sequences through the model together inside a call (default on CPU: "
                        "about 1,024 tokens, to stay in cache; elsewhere the whole chunk)")
    p.add_argument("--memory-budget-gb", type=_positive_float,
                   help="per-device memory budget in GiB (> 0) from which chunk sizes are planned")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    distributed.add_arguments(p)


def run_sweep(args) -> int:
    import jax

    from bornbiased_jax import io, report
    from bornbiased_jax.probes.token_preference import token_preference
    from bornbiased_jax.sources import load_source

    defaults = PAPER_SWEEP if args.scale == "paper" else CPU_SWEEP
    presets = args.preset or ([] if args.model else defaults["presets"])
    seeds = args.seeds or defaults["seeds"]
    seq_lens = args.seq_len or defaults["seq_lens"]
    num_seqs = args.num_seqs or defaults["num_seqs"]
    configs = [_preset(name) for name in presets]  # validates names first
    io.check_writable(args.out, folder=True, flag="--out")  # before any work
    models = [load_source(spec) for spec in args.model or []]  # every source loads first
    named = [(cfg, f"preset {cfg.name}") for cfg in configs] + [(m.cfg, m.label) for m in models]
    for cfg, what in named:
        for T in seq_lens:
            if T > cfg.max_seq_len:
                raise UserError(f"--seq-len {T} exceeds the maximum context "
                                f"{cfg.max_seq_len} of {what}")
    budget = int(args.memory_budget_gb * 2**30) if args.memory_budget_gb else None
    t0 = time.time()
    records = []
    for cfg in configs:
        records += token_preference(
            cfg, seeds, seq_lens, num_seqs, input_kind=args.input, probe_seed=args.probe_seed,
            progress=not args.no_progress, strategy=args.strategy, seed_chunk=args.seed_chunk,
            seq_chunk=args.seq_chunk, seq_batch=args.seq_batch, memory_budget=budget)
    records += _token_preference_of_models(models, seq_lens, num_seqs, args)
    configs += [m.cfg for m in models]
    wall = time.time() - t0
    if not distributed.is_writer():  # every process computed; process 0 writes
        return 0
    table = report.table1_markdown(records)
    run_info = {
        "command": "bornbiased " + " ".join(sys.argv[1:]), "wall_seconds": round(wall, 1),
        "jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
        "machine": platform.platform(), "scale": args.scale,
        "configs": [dataclasses.asdict(c) for c in configs],
    }
    out = args.out
    io.write_json(out / "token_preference.json",
                  {"run": run_info, "records": [r.to_json() for r in records]})
    io.write_text(out / "token_preference.md",
                  f"# Token preference at initialisation\n\n{table}\n"
                  f"Run: `{run_info['command']}` on {run_info['devices'][0]}, "
                  f"{wall:.0f} s.\n")
    io.save_figure(report.figure1a(records), out / "figure1a.png")
    print(table)
    print(f"wrote {out}/token_preference.json, token_preference.md, figure1a.png "
          f"({wall:.0f} s)")
    return 0


def _token_preference_of_models(models, seq_lens, num_seqs, args) -> list:
    """Table-1 records of loaded models (trained runs, imports, single seeds)."""
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.token_preference import next_token_probe, summarize
    from bornbiased_jax.sources import apply_probe

    records = []
    for m in models:
        for T in seq_lens:
            xs = probe_inputs(args.input, m.cfg, num_seqs, T, args.probe_seed)
            preds = apply_probe(next_token_probe(m.cfg), m.cfg, m.params, xs,
                                seq_batch=args.seq_batch, progress=not args.no_progress,
                                desc=f"{m.label} T={T}")
            records.append(summarize(preds, m.cfg.vocab_size, preset=m.label, seed=m.seed,
                                     seq_len=int(T), input=args.input))
    return records


FINGERPRINT_CPU = dict(n=2000, seq_len=64)
FINGERPRINT_PAPER = dict(n=10_000, seq_len=1024)


def _fingerprint_parser(sub) -> None:
    from bornbiased_jax.fingerprint.calibrated import DEFAULT_NULL_MODELS, STATISTICS

    p = sub.add_parser(
        "fingerprint", help="SeedPrint: does SUSPECT descend from BASE's initialisation?",
        description="Feed the same random inputs to two models, take the final hidden state at "
                    "the last position (after the final norm), and test H0 'SUSPECT does not "
                    "descend from BASE's initialisation' three ways: 'paper' (Algorithm 1: "
                    "top-m identity dimensions, Kendall tau, a null of two Gaussian matrices, "
                    "one-sided Student t and Mann-Whitney U, p averaged over 10 null draws and "
                    "pooled), 'official' (the authors' released code: bottom-k dimensions, "
                    "softmax/10, analytic z, p = 2 Phi-bar(z)) and 'calibrated' (the statistic "
                    "against K fresh initialisations of BASE's architecture: an exact p-value "
                    "when BASE is an initialisation). Prints a table; writes fingerprint.json, "
                    "fingerprint.md and fingerprint.png into --out. Presets are built with every "
                    "parameter seed-dependent (as 'bornbiased train' builds them) unless "
                    "--shared-embedding. Defaults: "
                    f"{FINGERPRINT_CPU}; --scale paper: {FINGERPRINT_PAPER} (for a GPU).")
    p.add_argument("base", metavar="BASE", help="model source of the base (the claimed origin): "
                   "preset:NAME@SEED, a train run PATH[@STEP] or PATH#SEED[@STEP], an HF folder")
    p.add_argument("suspect", metavar="SUSPECT", help="model source of the suspect")
    p.add_argument("--test", choices=["paper", "official", "calibrated", "all"], default="all")
    p.add_argument("--input", choices=["gaussian", "tokens"], default="gaussian",
                   help="Gaussian input embeddings with BASE's embedding mean and std "
                        "(Algorithm 1), or uniform random token ids")
    p.add_argument("--output", choices=["normed", "prenorm", "logits"], default="normed",
                   help="g(x): final hidden state after the final norm (default), before it, or "
                        "the logits")
    p.add_argument("--n", type=int, help="number of random input sequences (>= 3)")
    p.add_argument("--seq-len", type=_positive, help="length T of each input sequence")
    p.add_argument("--m", type=_positive, help="paper test: top-m size (default 0.52 d_out)")
    p.add_argument("--k", type=_positive, help="official test: bottom-k size (default 0.52 d_out)")
    p.add_argument("--null-models", type=_positive, default=DEFAULT_NULL_MODELS,
                   help=f"calibrated test: fresh initialisations K (default {DEFAULT_NULL_MODELS})")
    p.add_argument("--statistic", choices=STATISTICS, default=None,
                   help="calibrated test's statistic (default: spearman_all)")
    p.add_argument("--probe-seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--shared-embedding", action="store_true",
                   help="presets share one embedding across seeds (the Table-1 protocol)")
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu")
    p.add_argument("--out", type=Path, default=Path("results/fingerprint"), help="output folder")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    distributed.add_arguments(p)


def run_fingerprint(args) -> int:
    import jax

    from bornbiased_jax import io
    from bornbiased_jax.fingerprint import calibrated
    from bornbiased_jax.fingerprint.compare import TESTS, Settings, compare
    from bornbiased_jax.fingerprint.report import figure, table_markdown, table_text
    from bornbiased_jax.sources import load_source

    io.check_writable(args.out, folder=True, flag="--out")  # before any work
    scale = FINGERPRINT_PAPER if args.scale == "paper" else FINGERPRINT_CPU
    n = args.n if args.n is not None else scale["n"]
    if n < 3:
        raise UserError(f"--n {n} is too few inputs: the lineage tests need n >= 3")
    settings = Settings(
        tests=TESTS if args.test == "all" else (args.test,), input=args.input, n=n,
        seq_len=args.seq_len or scale["seq_len"], output=args.output, m=args.m, k=args.k,
        null_models=args.null_models, statistic=args.statistic or calibrated.DEFAULT_STATISTIC,
        probe_seed=args.probe_seed)
    t0 = time.time()
    base = load_source(args.base, shared_embedding=args.shared_embedding)
    suspect = load_source(args.suspect, shared_embedding=args.shared_embedding)
    out = compare(base, suspect, settings, progress=not args.no_progress)
    wall = time.time() - t0
    if not distributed.is_writer():  # every process computed; process 0 writes
        return 0
    results = out["results"]
    run_info = {"command": "bornbiased " + " ".join(sys.argv[1:]), "base": base.label,
                "suspect": suspect.label, "settings": dataclasses.asdict(settings),
                "d_out": out["d_out"], "wall_seconds": round(wall, 1), "jax": jax.__version__,
                "devices": [str(d) for d in jax.devices()], "machine": platform.platform()}
    title = (f"{suspect.label} vs base {base.label}: n = {settings.n}, T = {settings.seq_len}, "
             f"{settings.input} inputs, {settings.output} outputs")
    md = f"# SeedPrint: {title}\n\n{table_markdown(results)}\n{wall:.0f} s on " \
         f"{run_info['devices'][0]}.\n"
    fig = figure(results, title)
    io.write_json(args.out / "fingerprint.json",
                  {"run": run_info, "results": {k: r.to_json() for k, r in results.items()}})
    io.write_text(args.out / "fingerprint.md", md)
    io.save_figure(fig, args.out / "fingerprint.png")
    print(title)
    print(table_text(results))
    for name, r in results.items():
        if r.note:
            print(f"note ({name}): {r.note}")
    print(f"wrote {args.out}/fingerprint.json, fingerprint.md, fingerprint.png ({wall:.0f} s)")
    return 0


def _train_parser(sub) -> None:
    from bornbiased_jax.runs import SCHEDULES, TrainConfig

    d = TrainConfig()
    p = sub.add_parser(
        "train", help="pretrain a preset on a local corpus with Orbax checkpoints",
        description="Pretrain a model from a known seed (AdamW per Table 14, warmup + cosine or "
                    "linear decay, "
                    "gradient clipping, optional bfloat16 and gradient accumulation) on local "
                    "text files, saving Orbax checkpoints. Running the same command again with "
                    "an --out that holds checkpoints resumes from the latest complete one; only "
                    "--stop-at, --fsdp and the logging/eval/checkpoint cadences may change on "
                    "resume. With --seeds, one program trains a model per seed on the same "
                    "batches in the same order (--data-seed); each is read back as the model "
                    "source 'OUT#SEED' or 'OUT#SEED@STEP'.")
    p.add_argument("--preset", default=d.preset, help="model preset (vocabulary from the tokenizer)")
    p.add_argument("--corpus", nargs="+", required=True,
                   help="text files or folders, 'python-stdlib' (this Python's own sources), "
                        "or 'hf:NAME[@REVISION][:SPLIT[:CONFIG[:joined]]]' (HF datasets, if "
                        "installed; @REVISION pins the dataset's commit)")
    p.add_argument("--tokenizer", help="a tokenizer.json to use instead of training a BPE")
    p.add_argument("--out", type=Path, required=True, help="run folder (resumed if it has one)")
    p.add_argument("--resume", action="store_true", help="fail unless --out holds a checkpoint")
    p.add_argument("--stop-at", type=_positive,
                   help="stop after this step (default: --steps); the learning-rate schedule "
                        "still spans --steps, so a later run with a larger --stop-at (or none) "
                        "continues it exactly. --steps itself cannot change on resume")
    p.add_argument("--no-progress", action="store_true")
    for name, typ in [("steps", _positive), ("seed", int), ("data_seed", int),
                      ("save_every", _positive), ("keep_last", _positive), ("keep_every", _positive),
                      ("seq_len", _positive), ("batch_size", _positive), ("grad_accum", _positive),
                      ("lr", float), ("min_lr", float), ("warmup", int), ("weight_decay", float),
                      ("vocab_size", _positive), ("eval_every", _positive),
                      ("eval_batches", _positive), ("log_every", _positive),
                      ("corpus_max_mb", float)]:
        p.add_argument("--" + name.replace("_", "-"), type=typ, default=getattr(d, name),
                       help=f"default {getattr(d, name)}")
    p.add_argument("--seeds", type=_seeds_arg, default=(),
                   help="train one model per initialisation seed in one program, all on the same "
                        "batches: '0:32', '1,5:8' (instead of --seed; not with --init-from). "
                        "Checkpoints hold every seed; seed K of the run is the model source "
                        "'OUT#K' or 'OUT#K@STEP'. Seeds that do not fit --memory-budget at once "
                        "train in groups within each step; more than the budget's state holds "
                        "is refused, naming how many fit")
    p.add_argument("--memory-budget", type=float, metavar="GIB",
                   help="memory per device that a step of several seeds may plan for, in GiB "
                        "(default: 90%% of an accelerator's memory; on a CPU a quarter of the "
                        "host's memory); may change between resumes")
    p.add_argument("--seed-group", type=_positive, metavar="G",
                   help="train at most G seeds per device at once within a step (default: as "
                        "many as --memory-budget holds); 1 runs each seed's step unbatched, as "
                        "a single-seed run does; may change between resumes")
    p.add_argument("--bf16", action="store_true", help="bfloat16 forward/backward")
    p.add_argument("--schedule", choices=SCHEDULES, default=d.schedule,
                   help="learning-rate decay after the linear warmup: cosine to --min-lr "
                        "(Table 14) or linear to --min-lr (default %(default)s)")
    p.add_argument("--init-from", metavar="SOURCE",
                   help="start from this model's parameters instead of a seed's initialisation: "
                        "a training run 'PATH@STEP' (one seed of a many-seed run: "
                        "'PATH#SEED@STEP') or a Hugging Face folder (continued "
                        "pretraining on another corpus); the architecture and tokenizer are the "
                        "source's, and optimiser, step and schedule start fresh")
    p.add_argument("--model-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model setting on top of the preset (repeatable), e.g. "
                        "attn_output_transform=sqrt_i or attn_output_gate=true; recorded in "
                        "run.json")
    p.add_argument("--fsdp", action="store_true",
                   help="shard parameters and Adam moments over the devices (FSDP) instead of "
                        "copying them to each; may change between resumes")
    distributed.add_arguments(p)


def _train_config(args):
    from bornbiased_jax.runs import TrainConfig

    fields = {f: getattr(args, f) for f in TrainConfig.__dataclass_fields__ if hasattr(args, f)}
    fields["seeds"] = tuple(fields.get("seeds") or ())
    return TrainConfig(**fields)  # --model-set arrives as the model_set field


def run_train(args) -> int:
    from bornbiased_jax.train import Run

    tc = _train_config(args)
    if args.memory_budget is not None and args.memory_budget <= 0:
        raise UserError(f"--memory-budget must be positive, got {args.memory_budget}")
    budget = None if args.memory_budget is None else int(args.memory_budget * 2**30)
    run = Run(tc, args.corpus, args.out, tokenizer_path=args.tokenizer,
              require_resume=args.resume, memory_budget=budget, seed_group=args.seed_group)
    start = int(run.state["step"])
    writer = distributed.is_writer()
    if writer and len(tc.init_seeds) > 1:
        print(f"training {run.plan.describe()}")
    if start and writer:
        print(f"resuming {args.out} from step {start}")
    result = run.train(progress=not args.no_progress)
    if not writer:
        return 0
    last = [r for r in result["records"] if "val_loss" in r]
    if last:
        loss, ppl = last[-1]["val_loss"], last[-1]["val_ppl"]
        if isinstance(loss, list):  # one per seed
            print(f"step {result['final_step']}: val loss of {len(loss)} seeds "
                  f"{min(loss):.3f}-{max(loss):.3f}, ppl {min(ppl):.1f}-{max(ppl):.1f}")
        else:
            print(f"step {result['final_step']}: val loss {loss:.3f}, ppl {ppl:.1f}")
    print(f"wrote {args.out}/metrics.jsonl, loss_curve.png, checkpoints/")
    return 0


def _sinks_parser(sub) -> None:
    from bornbiased_jax.probes.sinks import DEFAULT_EPS, DEFAULT_LENGTHS

    p = sub.add_parser(
        "sinks", help="attention-sink rate of a model on real text (Sec. 6.2.1, Figure 12)",
        description="Measure attention sinks: alpha^1 = (1/T) sum_i A[i, 1] per layer and head "
                    "(including i = 1, so alpha^1 >= 1/T), a sink head if alpha^1 > eps, the "
                    "sink rate as the share of sink heads; per sequence then averaged, and with "
                    "alpha averaged first. Text windows of each length come from --corpus, "
                    "tokenised with --tokenizer or, for a fresh preset, with a byte-level BPE "
                    "trained on that corpus. Writes sinks.json, sinks.md, "
                    "sinks_rate_vs_length.png and sinks_heatmaps.png into --out.")
    p.add_argument("model", metavar="MODEL",
                   help="a model source: preset:NAME@SEED (a fresh initialisation), a "
                        "bornbiased train run folder PATH[@STEP] or PATH#SEED[@STEP] (its "
                        "tokenizer.json is used), "
                        "or a Hugging Face folder (config.json + safetensors)")
    p.add_argument("--lengths", type=_positive, nargs="+", default=list(DEFAULT_LENGTHS),
                   help=f"sequence lengths T (default {' '.join(map(str, DEFAULT_LENGTHS))})")
    p.add_argument("--num-seqs", type=_positive, default=100, help="sequences per length")
    p.add_argument("--eps", type=float, default=DEFAULT_EPS,
                   help=f"sink threshold in (0, 1) (default {DEFAULT_EPS}; Gu et al.: 0.3)")
    p.add_argument("--corpus", nargs="+", default=["python-stdlib"],
                   help="text files or folders, or 'python-stdlib' (default)")
    p.add_argument("--corpus-max-mb", type=float, default=4.0, help="text read, at most")
    p.add_argument("--tokenizer", help="a tokenizer.json (default: train a BPE on the corpus)")
    p.add_argument("--bpe-vocab", type=_positive, default=4096,
                   help="vocabulary of the BPE trained when no tokenizer is given (at most the "
                        "model's)")
    p.add_argument("--data-seed", type=int, default=0, help="seed of the window choice")
    p.add_argument("--model-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model setting on top of the preset (repeatable), e.g. "
                        "attn_output_transform=sqrt_i")
    p.add_argument("--out", type=Path, default=Path("results/sinks"), help="output folder")


def run_sinks(args) -> int:
    import jax

    from bornbiased_jax import data, io
    from bornbiased_jax.config import apply_overrides
    from bornbiased_jax.probes import sinks, sinks_report
    from bornbiased_jax.sources import init_params, load_source

    io.check_writable(args.out, folder=True, flag="--out")  # before any work
    loaded = load_source(args.model)
    cfg, params, seed = loaded.cfg, loaded.params, loaded.seed
    if args.model_set:
        if loaded.kind != "preset":
            raise UserError(f"--model-set applies to preset sources only; {args.model!r} is a "
                            f"{loaded.kind} folder with its own recorded settings")
        cfg = apply_overrides(cfg, args.model_set)
        params = init_params(cfg, seed)
    eps = sinks.check_eps(args.eps)
    if not cfg.has_attn_params:
        raise UserError(f"{cfg.name} has no softmax attention (block={cfg.block!r}, "
                        f"attention={cfg.attention!r}): there are no attention maps to measure")
    too_long = [T for T in args.lengths if T > cfg.max_seq_len]
    if too_long:
        raise UserError(f"--lengths {too_long} exceed the maximum context {cfg.max_seq_len} "
                         f"of {cfg.name}; choose lengths up to {cfg.max_seq_len}")
    lengths = sorted(set(args.lengths))
    docs = data.load_corpus(args.corpus, max_bytes=int(args.corpus_max_mb * 2**20))
    if not docs:
        raise UserError(f"the corpus {args.corpus} is empty: no readable, non-empty text files")
    own_tok = loaded.folder / "tokenizer.json" if loaded.folder is not None else None
    if args.tokenizer:
        tok, tok_note = data.load_tokenizer(args.tokenizer), f"tokenizer {args.tokenizer}"
    elif own_tok is not None and own_tok.is_file():
        tok, tok_note = data.load_tokenizer(own_tok), f"the model's own tokenizer {own_tok}"
    else:
        vocab = min(args.bpe_vocab, cfg.vocab_size)
        tok = data.train_tokenizer(docs, vocab)
        tok_note = (f"no tokenizer given: a byte-level BPE ({tok.get_vocab_size()} tokens) "
                    f"trained on the evaluation corpus")
    if tok.get_vocab_size() > cfg.vocab_size:
        raise UserError(f"the tokenizer has {tok.get_vocab_size()} tokens, more than the "
                         f"model's vocabulary {cfg.vocab_size}")
    eot = tok.token_to_id(data.EOT)
    ids = [i for enc in tok.encode_batch(docs)
           for i in (enc.ids + ([eot] if eot is not None else []))]
    print(f"{loaded.label} ({cfg.name}); {tok_note}; {len(ids):,} tokens of text")
    t0 = time.time()
    results = []
    for T in lengths:
        windows = sinks.text_windows(ids, T, args.num_seqs, seed=args.data_seed + T)
        results.append(sinks.measure_sinks(params, cfg, windows, eps))
        r = results[-1]
        print(f"T={T}: sink rate {r.rate:.3f} +- {r.rate_se:.3f} (of mean alpha "
              f"{r.rate_of_mean_alpha:.3f}), mean alpha^1 {r.alpha_LH.mean():.4f}")
    wall = time.time() - t0
    label = loaded.label
    table = sinks_report.sinks_markdown(results, label)
    run_info = {"command": "bornbiased " + " ".join(sys.argv[1:]), "model": args.model,
                "model_set": list(args.model_set), "config": dataclasses.asdict(cfg),
                "tokenizer": tok_note, "corpus": args.corpus, "bos_prepended": False,
                "data_seed": args.data_seed, "wall_seconds": round(wall, 1),
                "devices": [str(d) for d in jax.devices()], "machine": platform.platform()}
    out = args.out
    io.write_json(out / "sinks.json", {"run": run_info,
                                       "results": [r.to_json() for r in results]})
    io.write_text(out / "sinks.md", f"# Attention sinks\n\n{table}\nText: {args.corpus}, "
                  f"{tok_note}; no BOS token. Run: `{run_info['command']}`, {wall:.0f} s.\n")
    io.save_figure(sinks_report.rate_vs_length(results, label), out / "sinks_rate_vs_length.png")
    io.save_figure(sinks_report.alpha_heatmaps(results, label), out / "sinks_heatmaps.png")
    print(table)
    print(f"wrote {out}/sinks.json, sinks.md, sinks_rate_vs_length.png, sinks_heatmaps.png")
    return 0


def _join_processes(args) -> None:
    """Start JAX's multi-process runtime if the flags or the cluster ask for it, after checking
    what can be checked without the other processes (a batch that does not split over them)."""
    launch = distributed.resolve(args.coordinator, args.num_processes, args.process_id)
    if launch is not None and args.command == "train":
        from bornbiased_jax.train import check_batch_splits

        check_batch_splits(_train_config(args), launch.num_processes)
    distributed.initialize(launch, args.init_timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bornbiased", description="Transformers at random initialisation, seed by seed.")
    sub = parser.add_subparsers(dest="command", required=True)
    _sweep_parser(sub)
    add_theory_parser(sub)
    _train_parser(sub)
    _fingerprint_parser(sub)
    _sinks_parser(sub)
    defaults = {}
    for name, p in sub.choices.items():
        defaults[name] = (precision.TRAIN_DEFAULT if name == "train"
                          else precision.PROBE_DEFAULT)
        p.add_argument("--matmul-precision", choices=precision.PRECISIONS, default=None,
                       help=f"float32 matrix products: highest = full float32, default = the "
                            f"backend's choice (TF32 on NVIDIA GPUs); all are float32 on CPUs "
                            f"(default: ${precision.ENV} if set, else {defaults[name]}; see "
                            f"bornbiased_jax/precision.py)")
    args = parser.parse_args(argv)
    with precision.scoped(precision.for_command(args.matmul_precision,
                                                defaults[args.command])):
        return _dispatch(args)


def _dispatch(args) -> int:
    try:
        if args.command in ("sweep", "train", "fingerprint"):
            _join_processes(args)
        if args.command == "sweep":
            return run_sweep(args)
        if args.command == "train":
            return run_train(args)
        if args.command == "fingerprint":
            return run_fingerprint(args)
        if args.command == "sinks":
            return run_sinks(args)
        return args.run(args)
    except UserError as e:  # bad input; anything else is a bug and keeps its traceback
        print(f"bornbiased: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
