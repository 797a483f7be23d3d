"""Train the seed family: thirty-two llama2-tiny models from different initialisation seeds on
identical data in an identical order (experiments/common/seed_family.py says what and why),
and write its record results/records/training/seed_family.json.

    python -m experiments.seed_family --print-command   # the bornbiased train command
    python -m experiments.seed_family                   # train it (or resume it)
    python -m experiments.seed_family --continued       # and continue seeds 0-7 on prose
"""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments.common.cli import user_errors_exit

from experiments.common import seed_family as SF


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m experiments.seed_family", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs-dir", type=Path, default=SF.RUNS_DIR)
    p.add_argument("--print-command", action="store_true",
                   help="print the bornbiased train command and exit")
    p.add_argument("--continued", action="store_true",
                   help="also continue seeds 0-7 on the prose corpus (runs/seed-family/"
                        "cont-prose-sK)")
    p.add_argument("--record", type=Path, default=SF.RECORD,
                   help="where the finished run's settings and summary are written (JSON)")
    args = p.parse_args(argv)
    if args.print_command:
        print(SF.command(args.runs_dir))
        return
    with user_errors_exit("seed_family"):
        folder = SF.ensure(args.runs_dir)
        conts = [SF.ensure_continued(k, args.runs_dir) for k in SF.CONTINUED_SEEDS] \
            if args.continued else []
        SF.write_record(folder, args.record, conts)
    print(f"trained: {folder} {' '.join(map(str, conts))}; record: {args.record}")


if __name__ == "__main__":
    main()
