"""``bornbiased sinks``: the attention-sink rate of a model on real text (Sec. 6.2.1)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bornbiased_jax import precision
from bornbiased_jax.commands.arguments import (add_alias, add_precision_argument, command_parser,
                                               positive)
from bornbiased_jax.defaults import SINK_EPS, SINK_SETTINGS
from bornbiased_jax.errors import UserError


def add_parser(sub) -> None:
    p = command_parser(
        sub, "sinks", help="attention-sink rate of a model on real text (Sec. 6.2.1, Figure 12)",
        description="Measure attention sinks: alpha^1 = (1/T) sum_i A[i, 1] per layer and head "
                    "(including i = 1, so alpha^1 >= 1/T; it is Gu et al.'s alpha_1, the mass "
                    "key 1 receives averaged over the T - k + 1 queries that see key k), a sink "
                    "head if alpha^1 > eps, the sink rate as the share of sink heads; per "
                    "sequence then averaged (Gu et al.'s per-sample thresholding), and with "
                    "alpha averaged first.\n\n"
                    "Text windows of each length come from --corpus, tokenised with --tokenizer "
                    "or, for a fresh preset, with a byte-level BPE trained on that corpus; a "
                    "Bigram-Backcopy corpus (bbm:PATH[:triggers=K]) gives generated sequences "
                    "instead. The output says whether the windows carry a BOS token. Writes "
                    "sinks.json, sinks.md, sinks_rate_vs_length.png and sinks_heatmaps.png into "
                    "--out. docs/sinks.md has the study.",
        examples=["bornbiased sinks preset:llama2-cpu@0                 # at initialisation",
                  "bornbiased sinks runs/amp --setting gu                # a training run",
                  "bornbiased sinks runs/bbm --setting gu --all-keys     # a Bigram-Backcopy run",
                  "bornbiased sinks model.gguf --seq-len 64 256 --num-seqs 50"])
    p.add_argument("model", metavar="SOURCE",
                   help="a model source: preset:NAME@SEED (a fresh initialisation), a "
                        "bornbiased train run folder PATH[@STEP] or PATH#SEED[@STEP] (its "
                        "tokenizer.json is used), a Hugging Face folder (config.json + "
                        "safetensors) or a GGUF file (its own tokenizer is used)")
    p.add_argument("--setting", choices=sorted(SINK_SETTINGS), default="paper",
                   help="whose protocol's defaults of --eps, --seq-len and --num-seqs apply "
                        "(a protocol, not a run's size: its threshold changes what is "
                        "measured): " + "; ".join(
                       f"{k}: eps {v[0]}, T = {' '.join(map(str, v[1]))}, {v[2]} sequences"
                       for k, v in sorted(SINK_SETTINGS.items()))
                   + " (gu: Gu et al., ICLR 2025; paper: Sec. 6.2.1)")
    p.add_argument("--seq-len", type=positive, nargs="+", metavar="T",
                   help="sequence length(s) T, one or several, each measured apart (default: "
                        "the setting's, those that fit the model's context, or its context when "
                        "none does)")
    add_alias(p, "--lengths", "--seq-len", type=positive, nargs="+")  # the former spelling
    p.add_argument("--num-seqs", type=positive, metavar="N",
                   help="sequences per length (default: the setting's)")
    p.add_argument("--eps", type=float,
                   help=f"sink threshold in (0, 1) (default: the setting's; paper {SINK_EPS}, "
                        f"Gu et al. 0.3)")
    p.add_argument("--all-keys", action="store_true",
                   help="also report alpha_k = (1/(T-k+1)) sum_{i>=k} A[i, k] for every key k "
                        "(per layer and head, averaged over sequences: 'alpha_k_LHT' in "
                        "sinks.json)")
    p.add_argument("--model-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model setting on top of a preset (repeatable), e.g. "
                        "attn_output_transform=sqrt_i")
    p.add_argument("--out", type=Path, default=Path("results/sinks"), metavar="DIR",
                   help="folder for sinks.json, sinks.md and the two figures")
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress bars (chunks of sequences done at each length)")

    w = p.add_argument_group("text windows")
    w.add_argument("--corpus", nargs="+", metavar="CORPUS",
                   help="text files or folders, 'python-stdlib', or 'bbm:PATH[:triggers=K]' "
                        "(default: a Bigram-Backcopy run's own task, else 'python-stdlib')")
    w.add_argument("--corpus-max-mb", type=float, default=4.0, metavar="MIB",
                   help="MiB of corpus text read at most")
    w.add_argument("--tokenizer", metavar="FILE",
                   help="a tokenizer.json (default: the run's or the GGUF file's, else a BPE "
                        "trained on the corpus)")
    w.add_argument("--bpe-vocab", type=positive, default=4096, metavar="N",
                   help="vocabulary of the byte-level BPE trained on the corpus when no "
                        "--tokenizer is given (at most the model's)")
    w.add_argument("--bos", action=argparse.BooleanOptionalAction, default=None,
                   help="prepend the tokenizer's BOS token to every window (BOS + T-1 text "
                        "tokens); default: a train run's own setting (run.json); for an HF folder "
                        "or GGUF file, whether its tokenizer adds one (add_bos_token); else no "
                        "BOS. Bigram-Backcopy windows always begin with <s>")
    w.add_argument("--bos-token", metavar="TOKEN",
                   help="the string of the tokenizer's BOS token (default: the run's or the "
                        "real model's, else '<|bos|>', which a BPE trained here with --bos has)")
    w.add_argument("--data-seed", type=int, default=0, metavar="SEED",
                   help="seed of the window choice (of the generated sequences for bbm:)")
    add_precision_argument(p, precision.PROBE_DEFAULT)
    p.set_defaults(run=run)


def run(args) -> int:
    from bornbiased_jax import files, model
    from bornbiased_jax.config_io import apply_overrides, config_record
    from bornbiased_jax.probes.sinks import metric, tables, windows
    from bornbiased_jax.sources import init_params, load_source

    files.check_writable(args.out, folder=True, flag="--out")  # before any work
    eps0, lengths0, n0 = SINK_SETTINGS[args.setting]
    eps_arg = eps0 if args.eps is None else args.eps
    lengths = sorted(set(args.seq_len or lengths0))
    num_seqs = args.num_seqs or n0
    eps = metric.check_eps(eps_arg)
    loaded = load_source(args.model)
    cfg, params = loaded.cfg, loaded.params
    if args.model_set:
        if loaded.kind != "preset":
            raise UserError(f"--model-set applies to preset sources only; {args.model!r} is a "
                            f"{loaded.kind} folder with its own recorded settings")
        cfg = apply_overrides(cfg, args.model_set)
        params = init_params(cfg, loaded.seed)
    model.check_has_attention(cfg, "there are no attention sinks to measure")
    too_long = [T for T in lengths if T > cfg.max_seq_len]
    if too_long and not args.seq_len:  # the setting's lengths, not the user's: fit the model
        lengths = [T for T in lengths if T <= cfg.max_seq_len] or [cfg.max_seq_len]
        print(f"note: the {args.setting} setting's lengths {too_long} exceed the maximum "
              f"context {cfg.max_seq_len} of {cfg.name}; measuring at T = "
              f"{' '.join(map(str, lengths))} (--seq-len chooses)")
    elif too_long:
        raise UserError(f"--seq-len {too_long} exceed the maximum context {cfg.max_seq_len} "
                        f"of {cfg.name}; choose lengths up to {cfg.max_seq_len}")
    inputs = windows.for_model(
        cfg, loaded.folder, num_seqs=num_seqs, seed=args.data_seed, corpus=args.corpus,
        bos=args.bos, bos_token=args.bos_token, tokenizer=args.tokenizer,
        bpe_vocab=args.bpe_vocab, corpus_max_mb=args.corpus_max_mb)
    print(f"{loaded.label} ({cfg.name}); {inputs.note}")
    t0 = time.time()
    results = metric.sink_rates_over_lengths(params, cfg, inputs.ids, lengths, num_seqs,
                                             eps, seed=args.data_seed, on_result=_print_length,
                                             bos=inputs.bos_id, windows=inputs.make,
                                             all_keys=args.all_keys,
                                             progress=not args.no_progress)
    wall = time.time() - t0
    table = tables.sinks_markdown(results, loaded.label)
    run_info = files.run_record(args.command_line, wall, model=args.model,
                                model_set=list(args.model_set), config=config_record(cfg),
                                tokenizer=inputs.tokenizer, corpus=inputs.corpus,
                                bos_prepended=inputs.bos, bos_id=inputs.bos_id,
                                setting=args.setting, all_keys=bool(args.all_keys),
                                data_seed=args.data_seed, **inputs.extra)
    outputs = {"sinks.json": {"run": run_info, "results": [r.to_json() for r in results]},
               "sinks.md": f"# Attention sinks\n\n{table}\nSetting: {args.setting} (eps {eps}). "
                           f"Windows: {inputs.note}. Run: `{args.command_line}`, "
                           f"{wall:.0f} s.\n",
               "sinks_rate_vs_length.png": tables.rate_vs_length(results, loaded.label),
               "sinks_heatmaps.png": tables.alpha_heatmaps(results, loaded.label)}
    files.write_artifacts(args.out, outputs)
    print(table)
    print(f"wrote {args.out}/{', '.join(outputs)}")
    return 0


def _print_length(r) -> None:
    print(f"T={r.T}: sink rate {r.rate:.3f} +- {r.rate_se:.3f} (of mean alpha "
          f"{r.rate_of_mean_alpha:.3f}), mean alpha^1 {r.alpha_LH.mean():.4f}")
