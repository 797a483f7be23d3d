"""The campaign's command line, ``python -m experiments campaign`` (:func:`main`): run the
next pieces of paper-scale work (:mod:`experiments.campaign.plan`) within a time budget."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bornbiased_jax.errors import UserError
from experiments.campaign import bundle, driver, report
from experiments.campaign import plan as campaign


def main(argv: list[str]) -> int:
    """The campaign's driver: run the next pieces of paper-scale work within a time budget, on
    whatever machine it runs.

    The pieces, their order, commands and limits are ``experiments/campaign/plan.py``; each
    finished piece is skipped next time, so every window picks up where the last one stopped. On a
    GPU the GPU pieces run first; on a CPU they are skipped and the paper-scale forward passes of
    Sec. 3-4 run (``python -m experiments paper_scale``): each saves every finished chunk, is stopped when
    the budget ends ('partial') and continues from its last chunk the next time. Start it in the
    background whenever a machine starts and commit the records it finishes:

        nice -n 19 python -m experiments campaign --budget 36000 > results/campaign/driver.log 2>&1 &
        python -m experiments campaign --list                 # every piece: state, estimate, progress
        python -m experiments campaign --budget 480           # run what fits in 8 minutes
        python -m experiments campaign --only precision-timing --root "$OUT"/campaign
        python -m experiments campaign --env JAX_DEFAULT_MATMUL_PRECISION=bf16x6 --retry

    ``--env JAX_DEFAULT_MATMUL_PRECISION=`` takes the short names of bornbiased_jax/precision.py
    (bf16x6) and hands the pieces JAX's spelling (BF16_BF16_F32_X6).

    On a lent GPU where only a few files of an output folder come back, run in the checkout and
    pack what the call wrote into one archive there, then unpack it in this checkout's root and
    commit what it laid down; ``python -m experiments run_all --no-run`` renders the finished
    pieces' rows into RESULTS.md:

        python -m experiments campaign --budget 480 --bundle "$OUT"/campaign.tar.gz
        tar -xzf campaign.tar.gz                              # here, in the checkout's root
    """
    p = argparse.ArgumentParser(prog="python -m experiments campaign", description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=campaign.ROOT,
                   help=f"the campaign's folder: ledger and one folder per piece "
                        f"(default {campaign.ROOT.relative_to(campaign.REPO)})")
    p.add_argument("--budget", type=float, default=480.0,
                   help="seconds; a piece starts only when its limit fits in what is left (a "
                        "resumable piece runs until the budget ends and resumes next time)")
    p.add_argument("--only", nargs="+", default=[], metavar="PIECE",
                   help="run just these pieces (prerequisites not required)")
    p.add_argument("--records", type=Path, default=campaign.RECORDS,
                   help=f"where the paper-scale pieces write their records (default "
                        f"{campaign.RECORDS.relative_to(campaign.REPO)})")
    p.add_argument("--retry", action="store_true",
                   help="also run pieces that timed out or failed before")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="add to every piece's environment (recorded in the ledger)")
    p.add_argument("--bundle", type=Path, metavar="FILE.tar.gz",
                   help="also pack every file this call created or changed under results/ (and "
                        "--root, --records) into this gzipped tar, named by their paths in the "
                        "checkout: `tar -xzf FILE` in the checkout's root lays them in place")
    p.add_argument("--list", action="store_true", help="print every piece's state and exit")
    args = p.parse_args(argv)
    env = {}
    for kv in args.env:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            p.error(f"--env takes KEY=VALUE, got {kv!r}")
        env[key] = value
    if args.list:
        print(report.status_markdown(args.root), end="")
        return 0
    watched = (campaign.REPO / "results", args.root, args.records)
    try:
        before = bundle.snapshot(watched, campaign.REPO) if args.bundle else None
        attempts = driver.run(args.root, args.budget, only=args.only, retry=args.retry,
                              env=env, records=args.records)
    except UserError as e:
        print(f"campaign: error: {e}", file=sys.stderr)
        return 2
    print(report.status_markdown(args.root), end="")
    if args.bundle:
        names = bundle.changed(before, watched, campaign.REPO)
        size = bundle.write(args.bundle, names, campaign.REPO)
        print(f"campaign: packed {len(names)} files ({size / 2 ** 20:.1f} MiB) into "
              f"{args.bundle}; unpack with `tar -xzf` in the checkout's root")
        if size > bundle.RETURN_LIMIT_BYTES:
            print(f"campaign: warning: the archive is over {bundle.RETURN_LIMIT_BYTES // 2 ** 20}"
                  f" MiB, more than one file back from a lent GPU may weigh", file=sys.stderr)
    return 0 if all(a["state"] in ("done", "partial") for a in attempts) else 1
