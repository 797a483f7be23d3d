"""``bornbiased theory``: the paper's propositions, closed forms against simulated networks."""

from __future__ import annotations

import time
from pathlib import Path

from bornbiased_jax import precision
from bornbiased_jax.commands.arguments import add_precision_argument, command_parser


def add_parser(sub) -> None:
    p = command_parser(
        sub, "theory", help="check the paper's propositions against random networks",
        description="Prints a table: claim, the paper's value, our closed form, the simulated "
                    "value +- standard error at finite width, and a verdict (holds / corrected "
                    "/ beyond the paper). A simulation agrees when it lies within 4 SE plus the "
                    "stated finite-width allowance; the command exits with status 1 if any does "
                    "not. The rows took about a minute on a 2-core CPU (58 s without --fast: "
                    "run.wall_seconds in results/records/theory/theory.json); --plots adds "
                    "the figures' own simulations.",
        examples=["bornbiased theory --fast",
                  "bornbiased theory --json results/theory.json --plots results/theory"])
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="also write the records to this JSON file (the record RESULTS.md's "
                        "theory section is rendered from: results/records/theory/theory.json)")
    p.add_argument("--plots", type=Path, metavar="DIR",
                   help="draw Figure 5, Table 3, Figure 8 and Figure 9 into this folder")
    p.add_argument("--fast", action="store_true", help="fewer replicates (wider SEs)")
    add_precision_argument(p, precision.PROBE_DEFAULT)
    p.set_defaults(run=run)


def run(args) -> int:
    from bornbiased_jax import files
    from bornbiased_jax.theory.claims import build_claims, format_table

    # Outputs are checked before the minutes of simulation, not after.
    if args.json:
        files.check_writable(args.json, flag="--json")
    if args.plots:
        files.check_writable(args.plots, folder=True, flag="--plots")
    t0 = time.time()
    rows = build_claims(fast=args.fast)
    table = format_table(rows)
    print(table)
    if args.json:
        run = files.run_record(args.command_line, time.time() - t0, fast=bool(args.fast))
        files.write_json(args.json, {"run": run, "records": [r.to_json() for r in rows]})
        print(f"wrote {args.json}")
    if args.plots:
        from bornbiased_jax.theory.plots import draw_all

        for path in files.write_artifacts(args.plots, draw_all(fast=args.fast)):
            print(f"wrote {path}")
    bad = [r.claim for r in rows if r.agrees is False]
    if bad:
        print(f"simulation disagrees with the closed form for: {bad}")
        return 1
    return 0
