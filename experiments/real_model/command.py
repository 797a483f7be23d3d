"""The real-model study's command line, ``python -m experiments real_model`` (:func:`main`):
its steps (:mod:`experiments.real_model.measure`), each record saved as its step finishes,
RESULTS.md rewritten from the records."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bornbiased_jax import files
from bornbiased_jax.defaults import MATCHED_STATISTIC
from bornbiased_jax.errors import UserError
from experiments import render
from experiments.common.cli import user_errors_exit
from experiments.real_model import measure
from experiments.real_model.claims import COMMAND

STEPS = ("sinks", "sweep", "suspects", "cousins", "lineage")


def _model_info(model: Path) -> dict:
    return {"file": model.name, "sha256": measure.sha256(model),
            "size_bytes": model.stat().st_size}


def _save(records: Path, name: str, body: dict, t0: float) -> None:
    """Save a step's record; its wall time is that of the commands it ran (they may have run
    in an earlier invocation whose outputs this one reused), else this step's."""
    walls = [body.get("wall_seconds")] + [t["wall_seconds"] for t in body.get("tests", {}).values()]
    walls = [w for w in walls if w is not None]
    wall = sum(walls) if walls else time.time() - t0
    run = files.run_record(COMMAND, wall, experiment=name, scale="cpu")
    render.save_record(records, name, {"run": run, "records": body})
    print(f"saved {name}")


def main(argv: list[str]) -> None:
    """The real-model study: SmolLM2-135M-Instruct measured with the toolkit's own commands (see
    experiments/real_model/measure.py), its records saved as each step finishes, RESULTS.md
    rewritten from the records.

        python -m experiments real_model --model "$(bash tests/fixtures/fetch_smollm2.sh)"
        python -m experiments real_model --model M.gguf --steps sinks sweep   # some steps only
        python -m experiments real_model --no-run                             # RESULTS.md only

    Every step is resumable: a command whose output folder exists under
    results/experiments/real_model/ is not run again, and built suspects under runs/smollm2/ are
    kept. On a 2-core CPU the whole study takes a few hours (the fine-tunes and the fingerprint
    passes dominate).
    """
    p = argparse.ArgumentParser(prog="python -m experiments real_model", description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, help="the SmolLM2-135M-Instruct.Q4_1.gguf file "
                   "(tests/fixtures/fetch_smollm2.sh prints where it put it)")
    p.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS),
                   help="which steps to run (default: all, in order)")
    p.add_argument("--records", type=Path, default=render.RECORDS,
                   help="records folder (default results/records)")
    p.add_argument("--results", type=Path, default=Path("RESULTS.md"))
    p.add_argument("--seq-len", type=int, nargs="+", default=list(measure.SWEEP_LENGTHS),
                   dest="lengths", metavar="T",
                   help="the sweep step's lengths T, as bornbiased sweep's --seq-len (default: "
                        "64 256)")
    p.add_argument("--lengths", type=int, nargs="+", dest="lengths",
                   help=argparse.SUPPRESS)  # the former spelling
    p.add_argument("--no-run", action="store_true", help="only rebuild RESULTS.md")
    args = p.parse_args(argv)
    if not args.no_run:
        if args.model is None or not args.model.is_file():
            raise UserError(f"--model {args.model}: give the GGUF file "
                            f"(bash tests/fixtures/fetch_smollm2.sh fetches it)")
        info = _model_info(args.model)
        for step in args.steps:
            t0 = time.time()
            if step == "sinks":
                _save(args.records, "smollm2_sinks",
                      {"model": info, **measure.sinks(args.model)}, t0)
            elif step == "sweep":
                _save(args.records, "smollm2_token_preference",
                      {"model": info, **measure.sweep(args.model, lengths=args.lengths)}, t0)
            elif step == "suspects":
                measure.build_suspects(args.model)
            elif step == "cousins":
                from experiments.real_model import cousins

                print(f"cousins: {cousins.ensure(args.model)}")
            elif step == "lineage":
                manifest = measure.build_suspects(args.model)
                _save(args.records, "smollm2_lineage",
                      {"model": info, "suspects": manifest, "negatives": measure.negatives(),
                       "tests": measure.lineage(args.model),
                       "matched_statistic": MATCHED_STATISTIC}, t0)
    text = render.write(args.results, args.records)
    print(render.sections(text).get("real_model", ""))


def entry(argv: list[str]) -> None:
    """:func:`main`, a bad input's message and exit status instead of a traceback."""
    with user_errors_exit("real_model"):
        main(argv)
