"""The matched test's level and power on the 32-seed family (beyond the paper): exact where an
initialisation is involved, measured on unrelated trained pairs, a slack fitted on seeds 0-15
and checked on seeds 16-31 where eps = 0 does not hold (what and how:
experiments/seedprint/matched_level.py). Needs the family and its continuations:

    python -m experiments.seed_family --continued
    python -m experiments.seedprint_matched
"""

from __future__ import annotations

import time
from pathlib import Path

from experiments._common import parse, user_errors_exit, write

from experiments.lineage import seed_family
from experiments.seedprint import matched_level as ML

NAME = "seedprint_matched"


def main(argv=None) -> None:
    def extra(p):
        p.add_argument("--runs-dir", type=Path, default=seed_family.RUNS_DIR)

    args, s = parse(NAME, __doc__, ML.CPU, ML.PAPER, extra, argv)
    t0 = time.time()
    with user_errors_exit(NAME):
        out = ML.measure(s, args.runs_dir, args.out / "cache" / f"agreements-{args.scale}.json")
    write(args, NAME, s, out, ML.markdown(out), ML.figure(out), t0)


if __name__ == "__main__":
    main()
