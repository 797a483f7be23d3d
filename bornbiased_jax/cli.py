"""``bornbiased``: a thin command line over the library.

  bornbiased sweep    token preference at initialisation (Table 1, Figure 1a); the main job
  bornbiased theory   the paper's propositions: closed forms vs simulated random networks
  bornbiased train    pretraining with Orbax checkpoints, resumable and deterministic
  bornbiased fingerprint  SeedPrint: does one model descend from another's initialisation?
  bornbiased sinks    attention-sink rate on real text (Sec. 6.2.1)
  bornbiased presets  the model presets and their sizes

Each subcommand's module adds its parser and the ``run(args)`` it dispatches to
(``commands/sweep.py``, ``commands/theory.py``, ``commands/train.py``,
``commands/fingerprint.py``, ``commands/sinks.py``, ``commands/presets.py``); the layout of
their ``--help`` and the flags they share are ``commands/arguments.py``'s. Building the parsers
imports no JAX, SciPy or Matplotlib, so ``--help`` answers at once; a command imports what it
runs. Bad input (a ``UserError``) ends a command with its message and exit status 2. Commands
that compile keep their XLA programs in a persistent cache (``xla_cache.py``).

sweep, fingerprint and train also run as one process per host (``--coordinator``,
``--num-processes``, ``--process-id``, or a cluster JAX detects): see ``distributed.py``.
"""

from __future__ import annotations

import argparse
import sys

from bornbiased_jax import precision, xla_cache
from bornbiased_jax.commands import fingerprint, presets, sinks, sweep, theory, train
from bornbiased_jax.commands.arguments import HelpFormatter
from bornbiased_jax.errors import UserError

MULTI_PROCESS = ("sweep", "train", "fingerprint")  # the commands that may span processes


def _join_processes(args) -> None:
    """Start JAX's multi-process runtime if the flags or the cluster ask for it, after checking
    what can be checked without the other processes (a batch that does not split over them)."""
    from bornbiased_jax import distributed

    launch = distributed.resolve(args.coordinator, args.num_processes, args.process_id)
    if launch is not None and args.command == "train":
        from bornbiased_jax.training.config import check_batch_splits

        check_batch_splits(train.train_config(args), launch.num_processes)
    distributed.initialize(launch, args.init_timeout)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bornbiased", formatter_class=HelpFormatter,
        description="Transformers at random initialisation, seed by seed: the commands of "
                    "bornbiased-jax, a reproduction of 'Transformers Are Born Biased'.",
        epilog="'bornbiased COMMAND --help' shows a command's flags and examples. A model "
               "source (SOURCE) is preset:NAME@SEED, a 'bornbiased train' run folder "
               "PATH[@STEP] or PATH#SEED[@STEP], a Hugging Face folder or a GGUF file.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                title="commands")
    sweep.add_parser(sub)
    theory.add_parser(sub)
    train.add_parser(sub)
    fingerprint.add_parser(sub)
    sinks.add_parser(sub)
    presets.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.command_line = "bornbiased " + " ".join(sys.argv[1:] if argv is None else argv)
    if hasattr(args, "matmul_precision"):  # a command that compiles XLA programs
        xla_cache.enable()
    try:
        if args.command in MULTI_PROCESS:  # before anything starts a backend
            _join_processes(args)
        if not hasattr(args, "matmul_precision"):  # a command that computes nothing in JAX
            return args.run(args)
        with precision.scoped(precision.for_command(args.matmul_precision,
                                                    args.precision_default)):
            return args.run(args)
    except UserError as e:  # bad input; anything else is a bug and keeps its traceback
        print(f"bornbiased: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
