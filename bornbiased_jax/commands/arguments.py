"""Argument types and flags that several subcommands share; light enough for ``--help``."""

from __future__ import annotations

import argparse

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


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text}")
    return v


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
    g.add_argument("--num-processes", type=int, metavar="N", help="number of processes")
    g.add_argument("--process-id", type=int, metavar="I", help="this process, 0..N-1")
    g.add_argument("--init-timeout", type=float, default=INIT_TIMEOUT_S, metavar="S",
                   help=f"seconds to wait for the coordinator and every process "
                        f"(default {INIT_TIMEOUT_S})")


def add_precision_argument(p: argparse.ArgumentParser, default: str) -> None:
    """``--matmul-precision``, for every command and experiment script; ``default``: the
    precision used when neither the flag nor ``$JAX_DEFAULT_MATMUL_PRECISION`` names one."""
    p.add_argument("--matmul-precision", choices=precision.PRECISIONS, default=None,
                   help=f"float32 matrix products: highest = full float32, default = the "
                        f"backend's choice (TF32 on NVIDIA GPUs), bf16x3/x6/x9 and tf32x3 = "
                        f"JAX's multi-pass dot algorithms; on CPUs all that run are float32 "
                        f"(default: ${precision.ENV} if set, else {default}; see "
                        f"bornbiased_jax/precision.py)")
