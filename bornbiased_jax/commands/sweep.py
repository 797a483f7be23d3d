"""``bornbiased sweep``: token preference of random initialisations (Table 1, Figure 1a)."""

from __future__ import annotations

import time
from pathlib import Path

from bornbiased_jax import precision
from bornbiased_jax.commands.arguments import (add_alias, add_multiprocess_arguments,
                                               add_precision_argument, command_parser,
                                               memory_budget_argument, positive, seeds_arg)
from bornbiased_jax.errors import UserError

PAPER = dict(presets=["gpt2-rope-nano", "llama2-nano", "gpt2-rope-1.2b"],
             seeds=[42, 43], seq_lens=[64, 256, 1024], num_seqs=10_000)
CPU = dict(presets=["gpt2-rope-cpu"], seeds=[0, 1, 2], seq_lens=[64], num_seqs=1000)


def _shown(value, sep: str = " ") -> str:
    """A default as it would be typed: '64 256', not '[64, 256]'."""
    return sep.join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _defaults(key: str, sep: str = " ") -> str:
    """'(default: CPU's; with --scale paper: PAPER's)' for one of the settings --scale picks."""
    return (f"(default: {_shown(CPU[key], sep)}; with --scale paper: "
            f"{_shown(PAPER[key], sep)})")


def preset_names() -> str:
    """The preset names, a family's sizes in braces: 'gpt2-rope-{tiny,cpu,...}, ...'."""
    from bornbiased_jax.presets import PRESET_FAMILIES, PRESETS

    parts, rest = [], set(PRESETS)
    for fam in PRESET_FAMILIES:
        sizes = [n[len(fam) + 1:] for n in PRESETS if n.startswith(fam + "-")]
        rest -= {f"{fam}-{s}" for s in sizes}
        parts.append(f"{fam}-{{{','.join(sizes)}}}")
    return ", ".join(parts + sorted(rest))


def add_parser(sub) -> None:
    p = command_parser(
        sub, "sweep", help="token preference of random initialisations (Table 1, Figure 1a)",
        description="For each preset, seed and sequence length: predict the next token of N "
                    "uniformly random sequences with the randomly initialised model, and test "
                    "the most frequent prediction against the uniform null (Bonferroni binomial "
                    "test). Prints Table 1; writes token_preference.json, token_preference.md "
                    "and figure1a.png into --out, and keeps the run's resumable state in "
                    "OUT/state (--state).\n\n"
                    "--scale picks the defaults of --preset, --seeds, --seq-len and --num-seqs: "
                    "cpu (one to two and a half minutes observed on a 2-core CPU, not a "
                    "committed record) or paper (Table 1's settings, for a GPU); explicit flags "
                    "override them.",
        examples=["bornbiased sweep                                   # the CPU defaults",
                  "bornbiased sweep --preset llama2-cpu --seeds 0:8 --seq-len 64 256",
                  "bornbiased sweep --model runs/seeds#3 --num-seqs 2000",
                  "bornbiased sweep --seeds 0:8 --fresh     # start over: delete OUT/state first",
                  "bornbiased sweep --scale paper --out results/table1   # Table 1, on a GPU",
                  "bornbiased presets                                 # the presets' sizes"])
    p.add_argument("--preset", nargs="+", metavar="NAME",
                   help=f"model preset(s): {preset_names()}; 'bornbiased presets' lists their "
                        f"sizes {_defaults('presets')}")
    p.add_argument("--model", action="append", metavar="SOURCE",
                   help="also (or instead) run on a model source, repeatable: 'preset:NAME@SEED', "
                        "a 'bornbiased train' run folder PATH or PATH@STEP (one seed of a "
                        "many-seed run: PATH#SEED[@STEP]), a Hugging Face folder or a GGUF "
                        "file; without --preset only these models run")
    p.add_argument("--seeds", type=seeds_arg, metavar="SEEDS",
                   help="initialisation seeds of the presets, as a list or ranges: '42,43', "
                        f"'0:256', '1,5:8' {_defaults('seeds', ',')}")
    p.add_argument("--seq-len", type=positive, nargs="+", metavar="T",
                   help=f"sequence length(s) T, one or several, each measured apart "
                        f"{_defaults('seq_lens')}")
    p.add_argument("--num-seqs", type=positive, metavar="N",
                   help=f"random sequences N per seed and length {_defaults('num_seqs')}")
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu",
                   help="which defaults apply: cpu (a first run on a laptop) or paper (Table "
                        "1's settings, which need a GPU)")
    p.add_argument("--input", choices=["tokens", "gaussian"], default="tokens",
                   help="uniform random token ids, or Gaussian input embeddings (Sec. 4.1)")
    p.add_argument("--probe-seed", type=int, default=0, metavar="SEED",
                   help="seed of the random probe sequences (the same for every model)")
    p.add_argument("--out", type=Path, default=Path("results/sweep"), metavar="DIR",
                   help="folder for token_preference.json, token_preference.md and "
                        "figure1a.png, and for the run's state (OUT/state) unless --state")
    p.add_argument("--state", type=Path, metavar="DIR",
                   help="the folder of the run's resumable state (default: OUT/state, inside "
                        "--out): every finished chunk of sequences is saved there at once, one "
                        "sub-folder per preset or --model source and length, so that the same "
                        "command run again after a stop resumes from the finished chunks, "
                        "bitwise the uninterrupted result. The state is kept when the run "
                        "ends: its chunks are the predicted token ids, 4 bytes per seed and "
                        "sequence, so keeping them costs little, and the same command again "
                        "reads them back instead of computing them, while one that adds "
                        "presets, sources or lengths computes only those. A state saved with "
                        "other settings (seeds, --num-seqs, --input, --probe-seed, the engine "
                        "flags, --matmul-precision on an accelerator, another model behind a "
                        "source, other JAX/NumPy/package versions) is refused before any work, "
                        "naming what differs; --fresh starts over. A state is for one process: "
                        "a run of several processes keeps none (and refuses --state)")
    p.add_argument("--fresh", action="store_true",
                   help="start over: delete the probe states in the state folder (OUT/state or "
                        "--state DIR; other files there are left alone) before running")
    p.add_argument("--resume-across-versions", action="store_true",
                   help="resume chunks saved by other JAX/NumPy/package versions (the result "
                        "is then no longer bitwise an uninterrupted run's)")
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress bars (chunks done and an ETA)")

    engine = p.add_argument_group(
        "sweep engine", "How the work is split into compiled calls; each is planned from the "
        "device and the memory budget when not given.")
    engine.add_argument("--seed-batching", choices=["auto", "vmap", "map", "loop"],
                        default="auto",
                        help="how seeds are batched: vmap (all at once), map (lax.map, one "
                             "after another inside a compiled call) or loop (a Python loop of "
                             "one compiled call per seed); "
                             "auto is map on a CPU and vmap on accelerators")
    add_alias(engine, "--strategy", "--seed-batching",
              choices=["auto", "vmap", "map", "loop"])
    engine.add_argument("--seed-chunk", type=positive, metavar="N",
                        help="seeds per compiled call (with vmap their parameters exist at once)")
    engine.add_argument("--seq-chunk", type=positive, metavar="N",
                        help="sequences per compiled call")
    engine.add_argument("--seq-batch", type=positive, metavar="N",
                        help="sequences through the model together inside a call (default on "
                             "CPU: about 1,024 tokens, to stay in cache; elsewhere the whole "
                             "chunk)")
    memory_budget_argument(
        engine, "per-device memory (GiB) from which the chunk sizes are planned (default: 40%% "
        "of an accelerator's memory, 2 GiB on a CPU)", old="--memory-budget-gb")
    add_precision_argument(p, precision.PROBE_DEFAULT)
    add_multiprocess_arguments(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from bornbiased_jax import distributed, files, resume
    from bornbiased_jax.config_io import config_record
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes import token_preference as tp
    from bornbiased_jax.probes import token_preference_tables as tables
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
    budget = int(args.memory_budget_gib * 2**30) if args.memory_budget_gib else None
    engine = dict(strategy=args.seed_batching, seed_chunk=args.seed_chunk,
                  seq_chunk=args.seq_chunk, seq_batch=args.seq_batch, memory_budget=budget)
    passes = [p for cfg in configs for p in tp.preset_passes(
        cfg, seeds, seq_lens, num_seqs, input_kind=args.input, probe_seed=args.probe_seed)]
    passes += tp.model_passes(models, seq_lens, num_seqs, input_kind=args.input,
                              probe_seed=args.probe_seed)
    state = _state_folder(args)
    if state is not None and args.fresh:
        resume.remove(state)
    t0 = time.time()
    stores = _open_states(passes, state, engine, args) if state is not None else None
    try:
        records = [r for i, p in enumerate(passes)
                   for r in p.run(engine, stores[i] if stores else None,
                                  progress=not args.no_progress)]
    finally:
        tp.close_states(stores)
    wall = time.time() - t0
    if not distributed.is_writer():  # every process computed; process 0 writes
        return 0
    table = tables.table1_markdown(records)
    kept = _state_record(state, stores)
    run_info = files.run_record(args.command_line, wall, scale=args.scale, configs=[
        config_record(c) for c in configs + [m.cfg for m in models]],
        **({"state": kept} if kept else {}))
    outputs = {"token_preference.json": {"run": run_info,
                                         "records": [r.to_json() for r in records]},
               "token_preference.md": f"# Token preference at initialisation\n\n{table}\n"
                                      f"Run: `{args.command_line}` on {run_info['devices'][0]}, "
                                      f"{wall:.0f} s.\n",
               "figure1a.png": tables.figure1a(records)}
    files.write_artifacts(args.out, outputs)
    print(table)
    print(f"wrote {args.out}/{', '.join(outputs)} ({wall:.0f} s)")
    if kept:
        print(f"state kept in {kept['folder']}: {kept['chunks_computed']} chunks computed, "
              f"{kept['chunks_read']} read back from an earlier run. The same command reads "
              f"them back instead of computing them, one that adds presets, sources or lengths "
              f"computes only those; --fresh deletes it and starts over")
    else:
        print("no state kept: a probe state folder is for one process, and this run had "
              "several")
    return 0


def _state_folder(args) -> Path | None:
    """The run's state folder: --state, else OUT/state; None with several processes (a state
    folder is for one process; --state is refused there)."""
    import jax

    if jax.process_count() > 1:
        if args.state is not None:
            raise UserError("--state is for one process; run the sweep of several processes "
                            "without it (it keeps no state)")
        return None
    return args.state if args.state is not None else args.out / "state"


def _open_states(passes, state: Path, engine: dict, args) -> list:
    """Every pass's store, opened before any work; a state saved with other settings or
    versions is refused here, naming each difference and what to do."""
    from bornbiased_jax import resume
    from bornbiased_jax.probes import token_preference as tp

    try:
        return tp.open_states(passes, state, engine,
                              allow_version_change=args.resume_across_versions)
    except resume.StateMismatch as e:
        diffs = "; ".join(e.differences)
        if e.kind == "versions":
            raise UserError(
                f"the state in {state} was saved by other versions: {diffs}. Add "
                f"--resume-across-versions to resume it anyway (the result is then no longer "
                f"bitwise an uninterrupted run's), or --fresh to delete it and start "
                f"over") from None
        if e.kind == "format":
            raise UserError(f"{state} holds no state this version reads: {diffs}. Add --fresh "
                            f"to delete it and start over") from None
        raise UserError(
            f"the state in {state} was saved by a run with other settings; it differs in: "
            f"{diffs}. Run with the saved settings to resume it, add --fresh to delete it "
            f"and start over, or give another --state DIR (or --out DIR)") from None


def _state_record(state: Path | None, stores) -> dict | None:
    """Where the run's state is and how many chunks this run computed and read back."""
    if state is None:
        return None
    return {"folder": str(state), "kept": True,
            "chunks_computed": sum(st.computed for st in stores),
            "chunks_read": sum(st.read for st in stores)}
