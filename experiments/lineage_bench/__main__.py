"""python -m experiments.lineage_bench: does each lineage test find every descendant a downstream
user or a thief makes, while holding its false-positive rate at alpha?

Bases: the first ``bases`` seeds of the 32-seed family (llama2-tiny trained on identical data in
one program; ``python -m experiments.seed_family --continued`` first). Every edit of
``experiments/lineage_bench/suspects.py`` is applied to every base; every test
(``measure.py``) runs on every (base, suspect) pair; ``metrics.py`` gives per test and edit the
TPR at alpha = 0.01, the FPR over the other bases' suspects with its intervals, the AUC and the
TPR at 1 % FPR. Built suspects and features stay in ``--work`` (under runs/, not committed), so
a stopped run resumes; the record goes to results/records/lineage_bench/lineage_bench.json and
RESULTS.md's section is rendered from it (``claims.py``).

``--shapes`` measures the shape-changed descendants instead (``shapes.py``: the verdicts
``bornbiased fingerprint`` gives on every SHAPES edit of each base, and where the matched test
localises them), into results/records/lineage_bench/lineage_bench_shapes.json; it needs the
seed family only (``python -m experiments.seed_family``).
"""

from __future__ import annotations

import time
from pathlib import Path

from bornbiased_jax.defaults import MATCHED_STATISTIC
from experiments.common.cli import parse, user_errors_exit, write
from experiments.common import seed_family
from experiments.lineage_bench import measure as M

NAME = "lineage_bench"


def main(argv=None) -> None:
    def extra(p):
        p.add_argument("--runs-dir", type=Path, default=seed_family.RUNS_DIR,
                       help="where the seed family and its continuations are trained")
        p.add_argument("--work", type=Path, default=Path("runs/lineage-bench"),
                       help="built suspects and features (resumable; not committed)")

    def extra_shapes(p):
        extra(p)
        p.add_argument("--shapes", action="store_true",
                       help="measure the shape-changed descendants (shapes.py) instead")
        p.add_argument("--bases", type=int, default=None,
                       help=f"with --shapes: the first BASES seeds of the family as bases "
                            f"(default {M.CPU['bases']})")

    args, s = parse(NAME, __doc__, M.CPU, M.PAPER, extra_shapes, argv)
    t0 = time.time()
    if args.shapes:
        from experiments.lineage_bench import shapes, shapes_claims

        s = {**s, "bases": args.bases or s["bases"]}
        with user_errors_exit(NAME):
            rec = shapes.measure(s["bases"], args.work / "shapes", args.runs_dir)
            summary = shapes.summarise(rec)
        write(args, "lineage_bench_shapes", {"bases": s["bases"]},
              {"summary": summary, "pairs": rec["pairs"], "matched_statistic": MATCHED_STATISTIC},
              shapes_claims.markdown(summary),
              shapes_claims.figure(summary), t0)
        return
    with user_errors_exit(NAME):
        from experiments.lineage_bench import claims, metrics

        models, tok = M.build_models(s, args.runs_dir, args.work)
        F, H, bank, rare = M.features(s, models, tok, args.work)
        rows = M.pairs(s, models, F, H, bank, rare)
        summary = metrics.summarise(rows)
        records = {"summary": summary, "pairs": rows, "matched_statistic": MATCHED_STATISTIC}
    write(args, NAME, s, records, claims.markdown(summary), claims.roc_figure(rows), t0)


if __name__ == "__main__":
    main()
