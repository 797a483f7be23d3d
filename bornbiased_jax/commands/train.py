"""``bornbiased train``: pretraining with Orbax checkpoints, resumable and deterministic, of one
seed or many seeds on the same batches (``bornbiased_jax.training``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bornbiased_jax import precision
from bornbiased_jax.commands.arguments import (add_alias, add_multiprocess_arguments,
                                               add_precision_argument, command_parser,
                                               memory_budget_argument, positive, precision_group,
                                               seeds_arg, step_list)


def add_parser(sub) -> None:
    from bornbiased_jax.training.config import (FLAGS, SCHEDULES, SEED_BATCHING, TrainConfig,
                                                 field_help)

    d = TrainConfig()
    p = command_parser(
        sub, "train", help="pretrain a preset on a local corpus with Orbax checkpoints",
        description="Pretrain a model from a known seed (AdamW per Table 14, warmup + cosine or "
                    "linear decay or a constant rate, gradient clipping, optional bfloat16 and "
                    "gradient accumulation) on local text files, saving Orbax checkpoints.\n\n"
                    "Running the same command again with an --out that holds checkpoints "
                    "resumes from the latest complete one; only --stop-at and the flags of the "
                    "groups 'checkpoints and logging' and 'memory and seed batching' may "
                    "change on resume. With --seeds, one program trains a model per seed on "
                    "the same batches in the same order (--data-seed); each is read back as "
                    "the model source 'OUT#SEED' or 'OUT#SEED@STEP'.",
        examples=["bornbiased train --corpus python-stdlib --out runs/a --stop-at 100",
                  "bornbiased train --corpus python-stdlib --out runs/a   # on to step 200",
                  "bornbiased train --preset llama2-tiny --corpus notes/ --seeds 0:32 --out runs/s",
                  "bornbiased train --init-from runs/a@200 --corpus notes/ --out runs/b"])

    fields = {flag: name for name, flag in FLAGS.items()}  # the flags not named as fields

    def field(flag: str, **kwargs) -> None:  # a flag whose help is TrainConfig's field doc
        name = fields.get(flag, flag[2:].replace("-", "_"))
        group = kwargs.pop("group", p)
        if "action" not in kwargs:
            kwargs.setdefault("default", getattr(d, name))
        group.add_argument(flag, dest=name, help=field_help(name), **kwargs)

    field("--preset", metavar="NAME")
    p.add_argument("--corpus", nargs="+", required=True, metavar="CORPUS",
                   help="text files or folders, 'python-stdlib' (this Python's own sources), "
                        "'hf:NAME[@REVISION][:SPLIT[:CONFIG[:joined]]]' (HF datasets, if "
                        "installed; @REVISION pins the dataset's commit), or, alone, the "
                        "synthetic Bigram-Backcopy task 'bbm:PATH[:triggers=K]' (Guo et al.: "
                        "the characters of the text file PATH, <s> first, after each of the K "
                        "most frequent characters (default 3) a copy of the character before "
                        "it; a character vocabulary, no BPE; --corpus-max-mb MiB of training "
                        "sequences at one token per byte; see bornbiased_jax/bigram_backcopy.py)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="run folder: checkpoints, metrics.jsonl, run.json (resumed if it "
                        "holds a checkpoint)")
    field("--steps", type=positive, metavar="N")
    field("--stop-at", type=positive, metavar="STEP")
    p.add_argument("--resume", action="store_true",
                   help="fail unless --out holds a checkpoint to resume")
    field("--seed", type=int, metavar="SEED")
    field("--seeds", type=seeds_arg, metavar="SEEDS")
    field("--init-from", metavar="SOURCE")
    field("--model-set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress bar (steps done and an ETA)")

    data = p.add_argument_group("data")
    data.add_argument("--tokenizer", metavar="FILE",
                      help="a tokenizer.json to use instead of training a BPE on the corpus")
    field("--bpe-vocab", type=positive, metavar="N", group=data)
    add_alias(data, "--vocab-size", "--bpe-vocab", dest="vocab_size", type=positive)
    field("--corpus-max-mb", type=float, metavar="MIB", group=data)
    field("--seq-len", type=positive, metavar="T", group=data)
    field("--batch-size", type=positive, metavar="N", group=data)
    field("--grad-accum", type=positive, metavar="N", group=data)
    field("--data-seed", type=int, metavar="SEED", group=data)
    data.add_argument("--bos", action=argparse.BooleanOptionalAction, default=None,
                      help=field_help("bos"))
    field("--bos-token", metavar="TOKEN", group=data)
    field("--doc-aligned", action="store_true", group=data)

    opt = p.add_argument_group("optimiser (AdamW, Table 14)")
    field("--lr", type=float, metavar="LR", group=opt)
    field("--min-lr", type=float, metavar="LR", group=opt)
    field("--warmup", type=int, metavar="STEPS", group=opt)
    field("--schedule", choices=SCHEDULES, group=opt)
    field("--weight-decay", type=float, metavar="W", group=opt)

    cadence = p.add_argument_group(
        "checkpoints and logging", "These may change between resumes.")
    field("--save-every", type=positive, metavar="STEPS", group=cadence)
    field("--keep-last", type=positive, metavar="N", group=cadence)
    field("--keep-every", type=positive, metavar="STEPS", group=cadence)
    field("--keep-steps", type=step_list, metavar="STEP,STEP,...", group=cadence)
    field("--eval-every", type=positive, metavar="STEPS", group=cadence)
    field("--eval-batches", type=positive, metavar="N", group=cadence)
    field("--log-every", type=positive, metavar="STEPS", group=cadence)

    memory = p.add_argument_group(
        "memory and seed batching",
        "Where the state lives and how a step trains several seeds (--seeds); these may change "
        "between resumes. Timings of the seed batchings: benchmarks/README.md.")
    memory_budget_argument(
        memory, "memory per device that a step of several seeds may plan for, in GiB "
        "(default: 90%% of an accelerator's memory; on a CPU a quarter of the host's memory); "
        "seeds that do not fit at once train in groups within each step, and more than the "
        "budget's state holds is refused, naming how many fit", old="--memory-budget")
    memory.add_argument("--seed-chunk", type=positive, metavar="N",
                        help="train at most N seeds per device at once within a step (default: "
                             "as many as --memory-budget-gib holds); 1 runs each seed's step "
                             "unbatched, as a single-seed run does")
    add_alias(memory, "--seed-group", "--seed-chunk", type=positive)
    memory.add_argument("--seed-batching", choices=SEED_BATCHING, default="auto",
                        help="how a step trains several seeds: vmap batches every matrix "
                             "product over them; map runs them one after another inside the "
                             "one compiled step (unbatched products, one seed's working set at "
                             "a time); auto is map on a CPU and vmap on accelerators")
    field("--fsdp", action="store_true", group=memory)

    prec = precision_group(p)
    field("--bf16", action="store_true", group=prec)
    add_precision_argument(p, precision.TRAIN_DEFAULT)
    add_multiprocess_arguments(p)
    p.set_defaults(run=run)


def train_config(args):
    from bornbiased_jax.training.config import TrainConfig

    fields = {f: getattr(args, f) for f in TrainConfig.__dataclass_fields__ if hasattr(args, f)}
    fields["seeds"] = tuple(fields.get("seeds") or ())
    fields["keep_steps"] = tuple(fields.get("keep_steps") or ())
    if fields.get("bos") is None:
        fields["bos"], token, note = source_bos(fields.get("init_from"))
        if fields["bos"] and fields.get("bos_token") is None:
            fields["bos_token"] = token
        if note:
            print(note)
    return TrainConfig(**fields)  # --model-set arrives as the model_set field


def source_bos(spec: str | None) -> tuple[bool, str | None, str | None]:
    """(bos, token, note) of a run continued from ``spec`` without --bos/--no-bos: a real
    model's (an HF folder or GGUF file) tokenizer decides, as its own pipeline does; other
    sources (presets, runs, none) add no BOS."""
    if not spec:
        return False, None, None
    from bornbiased_jax.errors import UserError
    from bornbiased_jax.hf import model_bos
    from bornbiased_jax.sources import parse_source

    try:
        src = parse_source(spec)
    except UserError:  # loading it says what is wrong, with the run's other settings
        return False, None, None
    if src.kind not in ("hf", "gguf"):
        return False, None, None
    adds, token, why = model_bos(src.path)
    return adds, token, (f"windows: {token!r} first, as the model's tokenizer adds it ({why}); "
                         f"--no-bos leaves it out" if adds else
                         f"windows: no BOS token, as the model's tokenizer adds none ({why})")


def run(args) -> int:
    from bornbiased_jax import distributed
    from bornbiased_jax.training.loop import Run

    tc = train_config(args)
    budget = None if args.memory_budget_gib is None else int(args.memory_budget_gib * 2**30)
    run = Run(tc, args.corpus, args.out, tokenizer_path=args.tokenizer,
              require_resume=args.resume, memory_budget=budget, seed_group=args.seed_chunk,
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
