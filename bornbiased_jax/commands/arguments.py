"""Argument types, flags and help layout that several subcommands share; light enough for
``--help``.

Every command's parser is made by :func:`command_parser` (its help formatter, its examples) and
takes its precision flags from :func:`add_precision_argument` and, where it can span processes,
its multi-process flags from :func:`add_multiprocess_arguments`. A renamed flag keeps its old
spelling as a hidden alias (:func:`add_alias`), so that scripts written for it keep working.
"""

from __future__ import annotations

import argparse
import textwrap

from bornbiased_jax import precision
from bornbiased_jax.defaults import INIT_TIMEOUT_S, SEED_LIMIT, SEED_RANGE
from bornbiased_jax.errors import UserError


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
    bad = [s for s in seeds if not 0 <= s < SEED_LIMIT]
    if bad:
        raise UserError(f"seeds must lie in {SEED_RANGE}: got {bad[:5]}")
    return seeds


def seeds_arg(text: str) -> list[int]:
    """``type=`` of a seed-list flag: :func:`parse_seeds`, its error as argparse's."""
    try:
        return parse_seeds(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer (> 0), got {v}")
    return v


def step_list(text: str) -> list[int]:
    """``type=`` of a list of steps, '250,1000,4000': positive integers, comma-separated."""
    steps = [positive(x.strip()) for x in text.split(",") if x.strip()]
    if not steps:
        raise argparse.ArgumentTypeError(f"expected steps such as 250,1000,4000, got {text!r}")
    return steps


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text}")
    return v


class HelpFormatter(argparse.HelpFormatter):
    """Wraps each paragraph of a description or epilog on its own and keeps indented lines
    (the examples) as written; appends ``(default: VALUE)`` to a flag's help when the flag has
    a default that the help does not already state (lists as space-separated values)."""

    def _fill_text(self, text, width, indent):
        paragraphs = []
        for block in text.strip("\n").split("\n\n"):
            lines = block.split("\n")
            if any(line.startswith("  ") for line in lines):  # examples: as written
                paragraphs.append("\n".join(indent + line for line in lines))
            else:
                paragraphs.append(textwrap.fill(" ".join(block.split()), width,
                                                initial_indent=indent, subsequent_indent=indent))
        return "\n\n".join(paragraphs)

    def _get_help_string(self, action):
        text = action.help or ""
        if text is argparse.SUPPRESS or "(default" in text or "%(default)" in text:
            return text
        value = shown_default(action.default)
        return text if value is None else f"{text} (default: {value.replace('%', '%%')})"


def shown_default(value) -> str | None:
    """How a flag's default reads in ``--help``: None for no default (None, False, an empty
    list), else the value as it would be typed ('0 1 2' for a list, 'results/sweep' for a
    path)."""
    if value is None or value is False or value is argparse.SUPPRESS:
        return None
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value)) if value else None
    return str(value)


def command_parser(sub, name: str, *, help: str, description: str,
                   examples: list[str] = ()) -> argparse.ArgumentParser:
    """The parser of subcommand ``name``: ``help`` is its line in ``bornbiased --help``,
    ``description`` opens its ``--help`` and ``examples`` (command lines, each with an optional
    ``  # comment``) close it."""
    epilog = ("examples:\n" + "\n".join(f"  {e}" for e in examples)) if examples else None
    return sub.add_parser(name, help=help, description=description, epilog=epilog,
                          formatter_class=HelpFormatter)


def add_alias(parser_or_group, old: str, new: str, dest: str | None = None, **kwargs) -> None:
    """``old``, a hidden alias of the flag ``new`` (same destination, ``new``'s own unless
    ``dest`` names it; absent from ``--help``): ``kwargs`` repeat the new flag's type, choices
    and action, so the old spelling parses as before."""
    parser_or_group.add_argument(old, dest=dest or new.lstrip("-").replace("-", "_"),
                                 help=argparse.SUPPRESS, **kwargs)


def memory_budget_argument(parser_or_group, help: str, old: str | None = None) -> None:
    """``--memory-budget-gib GIB``, the one spelling of a per-device memory budget (in GiB,
    2**30 bytes: how much of a device's memory the run may plan for) across commands;
    ``old``: the command's former spelling, kept as a hidden alias when it meant the same unit.
    A device's own size is another idea (``fingerprint --device-memory-gib``)."""
    parser_or_group.add_argument("--memory-budget-gib", type=positive_float, metavar="GIB",
                                 help=help)
    if old:
        add_alias(parser_or_group, old, "--memory-budget-gib", type=positive_float)


def add_multiprocess_arguments(parser) -> None:
    """The multi-process flags shared by ``sweep``, ``fingerprint`` and ``train``
    (``distributed.resolve`` and ``distributed.initialize`` read them)."""
    g = parser.add_argument_group(
        "multi-process runs", "One process per host (or per GPU), all started with the same "
        "command. Without these flags a run is distributed only when JAX detects a cluster "
        "with several processes (SLURM, Open MPI, Kubernetes, Cloud TPU pod slices); see "
        "docs/multihost.md.")
    g.add_argument("--coordinator", metavar="HOST:PORT",
                   help="address of process 0, where the others connect")
    g.add_argument("--num-processes", type=int, metavar="P",
                   help="number P of processes in the run")
    g.add_argument("--process-id", type=int, metavar="I", help="this process's rank, 0..P-1")
    g.add_argument("--init-timeout", type=float, default=INIT_TIMEOUT_S, metavar="S",
                   help="seconds to wait for the coordinator and every process")


def precision_group(p: argparse.ArgumentParser):
    """The parser's "precision" argument group (made on first use), where ``--matmul-precision``
    and a command's dtype flags go."""
    for g in p._action_groups:
        if g.title == "precision":
            return g
    return p.add_argument_group("precision")


def add_precision_argument(p: argparse.ArgumentParser, default: str) -> None:
    """``--matmul-precision``, for every command and experiment script, in the parser's
    "precision" group; ``default``: the precision used when neither the flag nor
    ``$JAX_DEFAULT_MATMUL_PRECISION`` names one (the parser records it as
    ``precision_default``)."""
    precision_group(p).add_argument(
        "--matmul-precision", choices=precision.PRECISIONS, default=None, metavar="NAME",
        help=f"float32 matrix products: {', '.join(precision.PRECISIONS)}; highest is full "
             f"float32, default the backend's choice (TF32 on NVIDIA GPUs), the rest JAX's "
             f"multi-pass dot algorithms; CPUs compute float32 whatever is chosen "
             f"(bornbiased_jax/precision.py) (default: ${precision.ENV} if set, else "
             f"'{default}')")
    p.set_defaults(precision_default=default)
