"""``bornbiased sinks``: the attention-sink rate of a model on real text (Sec. 6.2.1)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from bornbiased_jax.commands.arguments import positive
from bornbiased_jax.defaults import SINK_EPS, SINK_LENGTHS
from bornbiased_jax.errors import UserError


def add_parser(sub) -> None:
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
    p.add_argument("--lengths", type=positive, nargs="+", default=list(SINK_LENGTHS),
                   help=f"sequence lengths T (default {' '.join(map(str, SINK_LENGTHS))})")
    p.add_argument("--num-seqs", type=positive, default=100, help="sequences per length")
    p.add_argument("--eps", type=float, default=SINK_EPS,
                   help=f"sink threshold in (0, 1) (default {SINK_EPS}; Gu et al.: 0.3)")
    p.add_argument("--corpus", nargs="+", default=["python-stdlib"],
                   help="text files or folders, or 'python-stdlib' (default)")
    p.add_argument("--corpus-max-mb", type=float, default=4.0, help="text read, at most")
    p.add_argument("--tokenizer", help="a tokenizer.json (default: train a BPE on the corpus)")
    p.add_argument("--bpe-vocab", type=positive, default=4096,
                   help="vocabulary of the BPE trained when no tokenizer is given (at most the "
                        "model's)")
    p.add_argument("--data-seed", type=int, default=0, help="seed of the window choice")
    p.add_argument("--model-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model setting on top of the preset (repeatable), e.g. "
                        "attn_output_transform=sqrt_i")
    p.add_argument("--out", type=Path, default=Path("results/sinks"), help="output folder")
    p.set_defaults(run=run)


def run(args) -> int:
    from bornbiased_jax import data, io
    from bornbiased_jax.config import apply_overrides
    from bornbiased_jax.probes import sinks, sinks_tables
    from bornbiased_jax.sources import init_params, load_source

    io.check_writable(args.out, folder=True, flag="--out")  # before any work
    loaded = load_source(args.model)
    cfg, params = loaded.cfg, loaded.params
    if args.model_set:
        if loaded.kind != "preset":
            raise UserError(f"--model-set applies to preset sources only; {args.model!r} is a "
                            f"{loaded.kind} folder with its own recorded settings")
        cfg = apply_overrides(cfg, args.model_set)
        params = init_params(cfg, loaded.seed)
    eps = sinks.check_eps(args.eps)
    if not cfg.has_attn_params:
        raise UserError(f"{cfg.name} has no softmax attention (block={cfg.block!r}, "
                        f"attention={cfg.attention!r}): there are no attention maps to measure")
    too_long = [T for T in args.lengths if T > cfg.max_seq_len]
    if too_long:
        raise UserError(f"--lengths {too_long} exceed the maximum context {cfg.max_seq_len} "
                        f"of {cfg.name}; choose lengths up to {cfg.max_seq_len}")
    docs = data.load_nonempty_corpus(args.corpus, max_bytes=int(args.corpus_max_mb * 2**20))
    tok, tok_note = data.evaluation_tokenizer(docs, cfg.vocab_size, path=args.tokenizer,
                                              model_folder=loaded.folder,
                                              bpe_vocab=args.bpe_vocab)
    ids = data.token_ids(docs, tok)
    print(f"{loaded.label} ({cfg.name}); {tok_note}; {len(ids):,} tokens of text")
    t0 = time.time()
    results = sinks.sink_rates_over_lengths(params, cfg, ids, sorted(set(args.lengths)),
                                            args.num_seqs, eps, seed=args.data_seed,
                                            on_result=_print_length)
    wall = time.time() - t0
    table = sinks_tables.sinks_markdown(results, loaded.label)
    run_info = io.run_record(args.command_line, wall, model=args.model,
                             model_set=list(args.model_set), config=dataclasses.asdict(cfg),
                             tokenizer=tok_note, corpus=args.corpus, bos_prepended=False,
                             data_seed=args.data_seed)
    files = {"sinks.json": {"run": run_info, "results": [r.to_json() for r in results]},
             "sinks.md": f"# Attention sinks\n\n{table}\nText: {args.corpus}, {tok_note}; no BOS "
                         f"token. Run: `{args.command_line}`, {wall:.0f} s.\n",
             "sinks_rate_vs_length.png": sinks_tables.rate_vs_length(results, loaded.label),
             "sinks_heatmaps.png": sinks_tables.alpha_heatmaps(results, loaded.label)}
    io.write_artifacts(args.out, files)
    print(table)
    print(f"wrote {args.out}/{', '.join(files)}")
    return 0


def _print_length(r) -> None:
    print(f"T={r.T}: sink rate {r.rate:.3f} +- {r.rate_se:.3f} (of mean alpha "
          f"{r.rate_of_mean_alpha:.3f}), mean alpha^1 {r.alpha_LH.mean():.4f}")
