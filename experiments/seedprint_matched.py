"""The matched test's level and power on the 32-seed family (beyond the paper), as measured for
its earlier statistic (a Hungarian assignment, layer l against layer l): exact where an
initialisation is involved, measured on unrelated trained pairs, a slack fitted on seeds 0-15
and checked on seeds 16-31 where eps = 0 does not hold (what and how:
experiments/seedprint/matched_level.py). Its record is kept as that measurement; running it
now refuses, naming the studies that measure today's statistic (experiments/lineage_level.py,
experiments/lineage_bench --shapes). It needed the family and its continuations:

    python -m experiments.seed_family --continued
    python -m experiments.seedprint_matched
"""

from __future__ import annotations

from pathlib import Path

from experiments.common.cli import parse, user_errors_exit

from experiments.common import seed_family
from experiments.seedprint import matched_level as ML

NAME = "seedprint_matched"


def main(argv=None) -> None:
    def extra(p):
        p.add_argument("--runs-dir", type=Path, default=seed_family.RUNS_DIR)

    args, s = parse(NAME, __doc__, ML.CPU, ML.PAPER, extra, argv)
    with user_errors_exit(NAME):
        from bornbiased_jax.errors import UserError

        raise UserError(
            "this study measured the matched test's earlier statistic (a Hungarian assignment, "
            "layer l against layer l, under the rencontres law); its record stays as that "
            "statistic's measurement. Today's statistic (reciprocal best partners, layers "
            "matched across depths, the partial rencontres law) is measured by "
            "'python -m experiments.lineage_level --measure' (the 32-seed family is its cell "
            "L2-F176) and 'python -m experiments.lineage_bench --shapes'")


if __name__ == "__main__":
    main()
