"""``bornbiased``: a thin command line over the library.

  bornbiased sweep    token preference at initialisation (Table 1, Figure 1a); the main job
  bornbiased theory   the paper's propositions: closed forms vs simulated random networks
  bornbiased train    pretraining with Orbax checkpoints, resumable and deterministic
  bornbiased sinks    attention-sink rate on real text (Sec. 6.2.1)
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from pathlib import Path

from bornbiased_jax.theory.cli import add_theory_parser

PAPER_SWEEP = dict(presets=["gpt2-rope-nano", "llama2-nano", "gpt2-rope-1.2b"],
                   seeds=[42, 43], seq_lens=[64, 256, 1024], num_seqs=10_000)
CPU_SWEEP = dict(presets=["gpt2-rope-cpu"], seeds=[0, 1, 2], seq_lens=[64], num_seqs=1000)


class UsageError(ValueError):
    """Bad command-line input; reported as 'bornbiased: error: ...' with exit status 2."""


def parse_seeds(text: str) -> list[int]:
    """'42', '42,43', '0:256' (half-open range), '0:10:2', or a mix: '1,5:8' -> [1, 5, 6, 7]."""
    seeds: list[int] = []
    for part in filter(None, (p.strip() for p in text.replace(" ", ",").split(","))):
        try:
            if ":" in part:
                bounds = [int(b) for b in part.split(":")]
                if len(bounds) not in (2, 3):
                    raise ValueError
                seeds.extend(range(*bounds))
            else:
                seeds.append(int(part))
        except ValueError:
            raise UsageError(f"cannot read seeds {text!r}: use integers, commas and ranges "
                             f"start:stop[:step], e.g. '42,43' or '0:256'") from None
    if not seeds:
        raise UsageError(f"the seed list {text!r} is empty; give at least one seed, e.g. '0:4'")
    bad = [s for s in seeds if not 0 <= s < 2**32]
    if bad:
        raise UsageError(f"seeds must lie in [0, 2**32): got {bad[:5]}")
    return seeds


def _seeds_arg(text: str) -> list[int]:
    try:
        return parse_seeds(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer (> 0), got {v}")
    return v


def _sweep_parser(sub) -> None:
    p = sub.add_parser(
        "sweep", help="token preference of random initialisations (Table 1, Figure 1a)",
        description="For each preset, seed and sequence length: predict the next token of N "
                    "uniformly random sequences with the randomly initialised model, and test "
                    "the most frequent prediction against the uniform null (Bonferroni binomial "
                    "test). Prints Table 1; writes token_preference.json, token_preference.md "
                    "and figure1a.png into --out. Defaults (CPU, ~2 minutes on 2 cores): "
                    f"{CPU_SWEEP}. --scale paper: {PAPER_SWEEP}. Explicit flags override both.")
    p.add_argument("--preset", nargs="+", help="model preset(s), e.g. gpt2-rope-cpu llama2-nano")
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
    p.add_argument("--seed-chunk", type=_positive, help="seeds whose parameters live at once")
    p.add_argument("--seq-chunk", type=_positive, help="sequences per compiled call")
    p.add_argument("--seq-batch", type=_positive,
                   help="sequences through the model together inside a call (default on CPU: "
                        "about 1,024 tokens, to stay in cache; elsewhere the whole chunk)")
    p.add_argument("--memory-budget-gb", type=float, help="per-device budget for chunk sizes")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def run_sweep(args) -> int:
    import jax

    from bornbiased_jax import io, report
    from bornbiased_jax.config import get_preset
    from bornbiased_jax.probes.token_preference import token_preference

    defaults = PAPER_SWEEP if args.scale == "paper" else CPU_SWEEP
    presets = args.preset or defaults["presets"]
    seeds = args.seeds or defaults["seeds"]
    seq_lens = args.seq_len or defaults["seq_lens"]
    num_seqs = args.num_seqs or defaults["num_seqs"]
    configs = [get_preset(name) for name in presets]  # validates names first
    for cfg in configs:
        for T in seq_lens:
            if T > cfg.max_seq_len:
                raise UsageError(f"--seq-len {T} exceeds the maximum context "
                                 f"{cfg.max_seq_len} of preset {cfg.name}")
    budget = int(args.memory_budget_gb * 2**30) if args.memory_budget_gb else None
    t0 = time.time()
    records = []
    for cfg in configs:
        records += token_preference(
            cfg, seeds, seq_lens, num_seqs, input_kind=args.input, probe_seed=args.probe_seed,
            progress=not args.no_progress, strategy=args.strategy, seed_chunk=args.seed_chunk,
            seq_chunk=args.seq_chunk, seq_batch=args.seq_batch, memory_budget=budget)
    wall = time.time() - t0
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


def _train_parser(sub) -> None:
    from bornbiased_jax.train import TrainConfig

    d = TrainConfig()
    p = sub.add_parser(
        "train", help="pretrain a preset on a local corpus with Orbax checkpoints",
        description="Pretrain a model from a known seed (AdamW per Table 14, warmup + cosine, "
                    "gradient clipping, optional bfloat16 and gradient accumulation) on local "
                    "text files, saving Orbax checkpoints. Running the same command again with "
                    "an --out that holds checkpoints resumes from the latest complete one.")
    p.add_argument("--preset", default=d.preset, help="model preset (vocabulary from the tokenizer)")
    p.add_argument("--corpus", nargs="+", required=True,
                   help="text files or folders, 'python-stdlib' (this Python's own sources), "
                        "or 'hf:NAME[:SPLIT]' (HF datasets, if installed)")
    p.add_argument("--tokenizer", help="a tokenizer.json to use instead of training a BPE")
    p.add_argument("--out", type=Path, required=True, help="run folder (resumed if it has one)")
    p.add_argument("--resume", action="store_true", help="fail unless --out holds a checkpoint")
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
    p.add_argument("--bf16", action="store_true", help="bfloat16 forward/backward")
    p.add_argument("--model-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model setting on top of the preset (repeatable), e.g. "
                        "attn_output_transform=sqrt_i or attn_output_gate=true; recorded in "
                        "run.json")


def run_train(args) -> int:
    from bornbiased_jax.train import Run, TrainConfig

    fields = {f: getattr(args, f) for f in TrainConfig.__dataclass_fields__ if hasattr(args, f)}
    tc = TrainConfig(**fields)  # --model-set arrives as the model_set field
    run = Run(tc, args.corpus, args.out, tokenizer_path=args.tokenizer,
              require_resume=args.resume)
    start = int(run.state["step"])
    if start:
        print(f"resuming {args.out} from step {start}")
    result = run.train(progress=not args.no_progress)
    last = [r for r in result["records"] if "val_loss" in r]
    if last:
        print(f"step {result['final_step']}: val loss {last[-1]['val_loss']:.3f}, "
              f"ppl {last[-1]['val_ppl']:.1f}")
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
                   help="preset:NAME@SEED, a preset at its random initialisation, e.g. "
                        "preset:llama2-cpu@0")
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


def parse_preset_source(spec: str) -> tuple[str, int]:
    """'preset:NAME@SEED' -> (NAME, SEED). This command reads presets at initialisation itself;
    training runs and imported checkpoints come through the model-source loader."""
    body = spec[len("preset:"):] if spec.startswith("preset:") else None
    name, sep, seed = (body or "").rpartition("@")
    if body is None or not sep or not name or not seed.isdigit():
        raise UsageError(f"cannot read model {spec!r}: use preset:NAME@SEED, e.g. "
                         f"preset:llama2-cpu@0")
    return name, int(seed)


def run_sinks(args) -> int:
    import jax

    from bornbiased_jax import data, io, model
    from bornbiased_jax.config import apply_overrides, get_preset
    from bornbiased_jax.keys import seed_key
    from bornbiased_jax.probes import sinks, sinks_report

    name, seed = parse_preset_source(args.model)
    cfg = apply_overrides(get_preset(name), args.model_set)
    eps = sinks.check_eps(args.eps)
    if not cfg.has_attn_params:
        raise UsageError(f"{cfg.name} has no softmax attention (block={cfg.block!r}, "
                         f"attention={cfg.attention!r}): there are no attention maps to measure")
    too_long = [T for T in args.lengths if T > cfg.max_seq_len]
    if too_long:
        raise UsageError(f"--lengths {too_long} exceed the maximum context {cfg.max_seq_len} "
                         f"of {cfg.name}; choose lengths up to {cfg.max_seq_len}")
    lengths = sorted(set(args.lengths))
    docs = data.load_corpus(args.corpus, max_bytes=int(args.corpus_max_mb * 2**20))
    if not docs:
        raise UsageError(f"the corpus {args.corpus} is empty: no readable, non-empty text files")
    if args.tokenizer:
        tok, tok_note = data.load_tokenizer(args.tokenizer), f"tokenizer {args.tokenizer}"
    else:
        vocab = min(args.bpe_vocab, cfg.vocab_size)
        tok = data.train_tokenizer(docs, vocab)
        tok_note = (f"no tokenizer given: a byte-level BPE ({tok.get_vocab_size()} tokens) "
                    f"trained on the evaluation corpus")
    if tok.get_vocab_size() > cfg.vocab_size:
        raise UsageError(f"the tokenizer has {tok.get_vocab_size()} tokens, more than the "
                         f"model's vocabulary {cfg.vocab_size}")
    eot = tok.token_to_id(data.EOT)
    ids = [i for enc in tok.encode_batch(docs)
           for i in (enc.ids + ([eot] if eot is not None else []))]
    print(f"{cfg.name} seed {seed}; {tok_note}; {len(ids):,} tokens of text")
    params = jax.jit(model.init, static_argnums=0)(cfg, seed_key(seed))
    t0 = time.time()
    results = []
    for T in lengths:
        windows = sinks.text_windows(ids, T, args.num_seqs, seed=args.data_seed + T)
        results.append(sinks.measure_sinks(params, cfg, windows, eps))
        r = results[-1]
        print(f"T={T}: sink rate {r.rate:.3f} +- {r.rate_se:.3f} (of mean alpha "
              f"{r.rate_of_mean_alpha:.3f}), mean alpha^1 {r.alpha_LH.mean():.4f}")
    wall = time.time() - t0
    label = f"{cfg.name} @ seed {seed}"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bornbiased", description="Transformers at random initialisation, seed by seed.")
    sub = parser.add_subparsers(dest="command", required=True)
    _sweep_parser(sub)
    add_theory_parser(sub)
    _train_parser(sub)
    _sinks_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "sweep":
            return run_sweep(args)
        if args.command == "train":
            return run_train(args)
        if args.command == "sinks":
            return run_sinks(args)
        return args.run(args)
    except (ValueError, TypeError) as e:
        print(f"bornbiased: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
