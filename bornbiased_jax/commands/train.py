"""``bornbiased train``: pretraining with Orbax checkpoints, resumable and deterministic, of one
seed or many seeds on the same batches (``bornbiased_jax.training``)."""

from __future__ import annotations

from pathlib import Path

from bornbiased_jax.commands.arguments import add_multiprocess_arguments, positive, seeds_arg
from bornbiased_jax.errors import UserError


def add_parser(sub) -> None:
    from bornbiased_jax.training.config import SCHEDULES, SEED_BATCHING, TrainConfig

    d = TrainConfig()
    p = sub.add_parser(
        "train", help="pretrain a preset on a local corpus with Orbax checkpoints",
        description="Pretrain a model from a known seed (AdamW per Table 14, warmup + cosine or "
                    "linear decay or a constant rate, "
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
                        "'hf:NAME[@REVISION][:SPLIT[:CONFIG[:joined]]]' (HF datasets, if "
                        "installed; @REVISION pins the dataset's commit), or, alone, the "
                        "synthetic Bigram-Backcopy task 'bbm:PATH[:triggers=K]' (Guo et al.: "
                        "the characters of the text file PATH, <s> first, after each of the K "
                        "most frequent characters (default 3) a copy of the character before "
                        "it; a character vocabulary, no BPE; --corpus-max-mb MiB of training "
                        "sequences at one token per byte; see bornbiased_jax/bigram_backcopy.py)")
    p.add_argument("--tokenizer", help="a tokenizer.json to use instead of training a BPE")
    p.add_argument("--out", type=Path, required=True, help="run folder (resumed if it has one)")
    p.add_argument("--resume", action="store_true", help="fail unless --out holds a checkpoint")
    p.add_argument("--stop-at", type=positive,
                   help="stop after this step (default: --steps); the learning-rate schedule "
                        "still spans --steps, so a later run with a larger --stop-at (or none) "
                        "continues it exactly. --steps itself cannot change on resume")
    p.add_argument("--no-progress", action="store_true")
    for name, typ in [("steps", positive), ("seed", int), ("data_seed", int),
                      ("save_every", positive), ("keep_last", positive), ("keep_every", positive),
                      ("seq_len", positive), ("batch_size", positive), ("grad_accum", positive),
                      ("lr", float), ("min_lr", float), ("warmup", int), ("weight_decay", float),
                      ("vocab_size", positive), ("eval_every", positive),
                      ("eval_batches", positive), ("log_every", positive),
                      ("corpus_max_mb", float)]:
        p.add_argument("--" + name.replace("_", "-"), type=typ, default=getattr(d, name),
                       help=f"default {getattr(d, name)}")
    p.add_argument("--seeds", type=seeds_arg, default=(),
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
    p.add_argument("--seed-group", type=positive, metavar="G",
                   help="train at most G seeds per device at once within a step (default: as "
                        "many as --memory-budget holds); 1 runs each seed's step unbatched, as "
                        "a single-seed run does; may change between resumes")
    p.add_argument("--seed-batching", choices=SEED_BATCHING, default="auto",
                   help="how a step trains several seeds: 'vmap' batches every matrix product "
                        "over them; 'map' runs them one after another inside the one compiled "
                        "step (unbatched products, one seed's working set at a time); 'auto' "
                        "(default): map on a CPU, where one program of 4 or 16 seeds trained "
                        "them 1.23-1.27x as fast as as many single-seed runs one after another "
                        "and vmap 0.67-0.74x (2 cores; "
                        "benchmarks/results/train_seeds_cpu.md), vmap on accelerators; may "
                        "change between resumes")
    p.add_argument("--bf16", action="store_true", help="bfloat16 forward/backward")
    p.add_argument("--schedule", choices=SCHEDULES, default=d.schedule,
                   help="learning rate after the linear warmup: cosine to --min-lr (Table 14), "
                        "linear to --min-lr, or constant at --lr (default %(default)s)")
    p.add_argument("--bos", action="store_true",
                   help="put a beginning-of-sequence token at position 0 of every training "
                        "and validation window (BOS + T-1 text tokens as the model's input); "
                        "the BPE trained for the run gets the token '<|bos|>'; recorded in "
                        "run.json, cannot change on resume")
    p.add_argument("--bos-token", metavar="TOKEN",
                   help="with --bos and a given --tokenizer: the string of that tokenizer's BOS "
                        "token (e.g. '<s>'; default '<|bos|>')")
    p.add_argument("--doc-aligned", action="store_true",
                   help="start every window at a document start (one window per document, "
                        "running on into the next documents when it is shorter); default: the "
                        "joined token stream cut into consecutive windows")
    p.add_argument("--init-from", metavar="SOURCE",
                   help="start from this model's parameters instead of a seed's initialisation: "
                        "a training run 'PATH@STEP' (one seed of a many-seed run: "
                        "'PATH#SEED@STEP'), a Hugging Face folder or a GGUF file (continued "
                        "pretraining on another corpus); the architecture and tokenizer are the "
                        "source's, and optimiser, step and schedule start fresh")
    p.add_argument("--model-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model setting on top of the preset (repeatable), e.g. "
                        "attn_output_transform=sqrt_i or attn_output_gate=true; recorded in "
                        "run.json")
    p.add_argument("--fsdp", action="store_true",
                   help="shard parameters and Adam moments over the devices (FSDP) instead of "
                        "copying them to each; may change between resumes")
    add_multiprocess_arguments(p)
    p.set_defaults(run=run)


def train_config(args):
    from bornbiased_jax.training.config import TrainConfig

    fields = {f: getattr(args, f) for f in TrainConfig.__dataclass_fields__ if hasattr(args, f)}
    fields["seeds"] = tuple(fields.get("seeds") or ())
    return TrainConfig(**fields)  # --model-set arrives as the model_set field


def run(args) -> int:
    from bornbiased_jax import distributed
    from bornbiased_jax.training.loop import Run

    tc = train_config(args)
    if args.memory_budget is not None and args.memory_budget <= 0:
        raise UserError(f"--memory-budget must be positive, got {args.memory_budget}")
    budget = None if args.memory_budget is None else int(args.memory_budget * 2**30)
    run = Run(tc, args.corpus, args.out, tokenizer_path=args.tokenizer,
              require_resume=args.resume, memory_budget=budget, seed_group=args.seed_group,
              seed_batching=args.seed_batching)
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
