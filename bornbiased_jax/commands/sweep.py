"""``bornbiased sweep``: token preference of random initialisations (Table 1, Figure 1a)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from bornbiased_jax.commands.arguments import (add_multiprocess_arguments, positive,
                                               positive_float, seeds_arg)
from bornbiased_jax.errors import UserError

PAPER = dict(presets=["gpt2-rope-nano", "llama2-nano", "gpt2-rope-1.2b"],
             seeds=[42, 43], seq_lens=[64, 256, 1024], num_seqs=10_000)
CPU = dict(presets=["gpt2-rope-cpu"], seeds=[0, 1, 2], seq_lens=[64], num_seqs=1000)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep", help="token preference of random initialisations (Table 1, Figure 1a)",
        description="For each preset, seed and sequence length: predict the next token of N "
                    "uniformly random sequences with the randomly initialised model, and test "
                    "the most frequent prediction against the uniform null (Bonferroni binomial "
                    "test). Prints Table 1; writes token_preference.json, token_preference.md "
                    "and figure1a.png into --out. Defaults (CPU; one to two and a half minutes "
                    "observed on a 2-core CPU, not a committed record): "
                    f"{CPU}. --scale paper: {PAPER}. Explicit flags override both.")
    p.add_argument("--preset", nargs="+", help="model preset(s), e.g. gpt2-rope-cpu llama2-nano")
    p.add_argument("--model", action="append", metavar="SPEC",
                   help="also (or instead) run on a model source, repeatable: 'preset:NAME@SEED', "
                        "a 'bornbiased train' run folder PATH or PATH@STEP (one seed of a "
                        "many-seed run: PATH#SEED[@STEP]), a Hugging Face "
                        "folder or a GGUF file; without --preset only these models run")
    p.add_argument("--seeds", type=seeds_arg, help="model seeds: '42,43', '0:256', '1,5:8'")
    p.add_argument("--seq-len", type=positive, nargs="+", help="sequence length(s) T")
    p.add_argument("--num-seqs", type=positive, help="random sequences N per (seed, T)")
    p.add_argument("--input", choices=["tokens", "gaussian"], default="tokens",
                   help="uniform random token ids, or Gaussian input embeddings (Sec. 4.1)")
    p.add_argument("--probe-seed", type=int, default=0, help="seed of the probe sequences")
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu",
                   help="'paper' runs Table 1's settings (needs a GPU)")
    p.add_argument("--out", type=Path, default=Path("results/sweep"), help="output folder")
    p.add_argument("--strategy", choices=["auto", "vmap", "map", "loop"], default="auto",
                   help="how seeds are batched (auto: lax.map on CPU, vmap on accelerators)")
    p.add_argument("--seed-chunk", type=positive,
                   help="seeds per compiled call (with vmap their parameters exist at once)")
    p.add_argument("--seq-chunk", type=positive, help="sequences per compiled call")
    p.add_argument("--seq-batch", type=positive,
                   help="sequences through the model together inside a call (default on CPU: "
                        "about 1,024 tokens, to stay in cache; elsewhere the whole chunk)")
    p.add_argument("--memory-budget-gb", type=positive_float,
                   help="per-device memory budget in GiB (> 0) from which chunk sizes are planned")
    p.add_argument("--state", type=Path, metavar="DIR",
                   help="save every finished chunk of sequences into DIR (one sub-folder per "
                        "preset and length) so that a stopped run resumes: run the same command "
                        "with the same --state again and it continues from the last finished "
                        "chunk, bitwise the uninterrupted result; other settings are refused, "
                        "naming what differs (presets only; --model sources run whole)")
    p.add_argument("--resume-across-versions", action="store_true",
                   help="with --state: resume chunks saved by other JAX/NumPy/package versions")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars (which show "
                   "chunks done and an ETA)")
    add_multiprocess_arguments(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from bornbiased_jax import distributed, files
    from bornbiased_jax.config import get_preset
    from bornbiased_jax.probes import token_preference_tables as tables
    from bornbiased_jax.probes.token_preference import (token_preference,
                                                        token_preference_of_models)
    from bornbiased_jax.sources import load_source

    defaults = PAPER if args.scale == "paper" else CPU
    presets = args.preset or ([] if args.model else defaults["presets"])
    seeds = args.seeds or defaults["seeds"]
    seq_lens = args.seq_len or defaults["seq_lens"]
    num_seqs = args.num_seqs or defaults["num_seqs"]
    configs = [get_preset(name) for name in presets]  # validates names first
    files.check_writable(args.out, folder=True, flag="--out")  # before any work
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
            seq_chunk=args.seq_chunk, seq_batch=args.seq_batch, memory_budget=budget,
            state=args.state, allow_version_change=args.resume_across_versions)
    records += token_preference_of_models(
        models, seq_lens, num_seqs, input_kind=args.input, probe_seed=args.probe_seed,
        seq_chunk=args.seq_chunk, seq_batch=args.seq_batch, memory_budget=budget,
        progress=not args.no_progress)
    wall = time.time() - t0
    if not distributed.is_writer():  # every process computed; process 0 writes
        return 0
    table = tables.table1_markdown(records)
    run_info = files.run_record(args.command_line, wall, scale=args.scale, configs=[
        dataclasses.asdict(c) for c in configs + [m.cfg for m in models]])
    outputs = {"token_preference.json": {"run": run_info,
                                         "records": [r.to_json() for r in records]},
               "token_preference.md": f"# Token preference at initialisation\n\n{table}\n"
                                      f"Run: `{args.command_line}` on {run_info['devices'][0]}, "
                                      f"{wall:.0f} s.\n",
               "figure1a.png": tables.figure1a(records)}
    files.write_artifacts(args.out, outputs)
    print(table)
    print(f"wrote {args.out}/{', '.join(outputs)} ({wall:.0f} s)")
    return 0
