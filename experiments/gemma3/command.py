"""The Gemma 3 study's command line, ``python -m experiments gemma3`` (:func:`main`): its
steps (:mod:`experiments.gemma3.measure`), each record saved as its step finishes, RESULTS.md
rewritten from the records."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bornbiased_jax.defaults import MATCHED_STATISTIC
from bornbiased_jax import files
from bornbiased_jax.errors import UserError
from experiments import render
from experiments.common.cli import user_errors_exit
from experiments.gemma3 import measure
from experiments.gemma3.claims import COMMAND

STEPS = ("sinks", "init", "sweep", "suspects", "lineage")


def _save(records: Path, name: str, body: dict, t0: float) -> None:
    walls = [body.get("wall_seconds")] + [r.get("wall_seconds") for r in body.values()
                                          if isinstance(r, dict)]
    walls = [w for w in walls if isinstance(w, (int, float))]
    wall = sum(walls) if walls else time.time() - t0
    run = files.run_record(COMMAND, wall, experiment=name, scale="cpu")
    render.save_record(records, name, {"run": run, "records": body})
    print(f"saved {name}")


def main(argv: list[str]) -> None:
    """The Gemma 3 study: Gemma 3 270M measured with the toolkit's own commands (see
    experiments/gemma3/measure.py), its records saved as each step finishes, RESULTS.md rewritten
    from the records.

        python -m experiments gemma3 --model "$(bash tests/fixtures/fetch_gemma3.sh)"
        python -m experiments gemma3 --model M.gguf --steps sinks init     # some steps only
        python -m experiments gemma3 --no-run                              # RESULTS.md only

    Every step is resumable: a command whose output folder exists under
    results/experiments/gemma3/ is not run again, the initialisation arms keep their blockwise
    states there, and built suspects under runs/gemma3/ are kept. Run it niced: on a 2-core CPU the
    whole study takes about an hour and a half.
    """
    p = argparse.ArgumentParser(prog="python -m experiments gemma3", description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, help="the gemma-3-270m-q4_k_m.gguf file "
                   "(tests/fixtures/fetch_gemma3.sh prints where it put it)")
    p.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS),
                   help="which steps to run (default: all, in order)")
    p.add_argument("--records", type=Path, default=render.RECORDS,
                   help="records folder (default results/records)")
    p.add_argument("--results", type=Path, default=Path("RESULTS.md"))
    p.add_argument("--no-run", action="store_true", help="only rebuild RESULTS.md")
    args = p.parse_args(argv)
    if not args.no_run:
        if args.model is None or not args.model.is_file():
            raise UserError(f"--model {args.model}: give the GGUF file "
                            f"(bash tests/fixtures/fetch_gemma3.sh fetches it)")
        info = {"file": args.model.name, "sha256": measure.sha256(args.model),
                "size_bytes": args.model.stat().st_size}
        for step in args.steps:
            t0 = time.time()
            if step == "sinks":
                _save(args.records, "gemma3_sinks", {"model": info,
                                                     **measure.sinks(args.model)}, t0)
            elif step == "init":
                body = measure.init()
                _save(args.records, "gemma3_init", {**body, "wall_seconds": sum(
                    a["seconds"] for a in body["arms"].values())}, t0)
            elif step == "sweep":
                _save(args.records, "gemma3_token_preference",
                      {"model": info, **measure.sweep(args.model)}, t0)
            elif step == "suspects":
                measure.build_suspects(args.model)
            elif step == "lineage":
                manifest = measure.build_suspects(args.model)
                _save(args.records, "gemma3_lineage",
                      {"model": info, "suspects": manifest,
                       "tests": measure.lineage(args.model),
                       "matched_statistic": MATCHED_STATISTIC}, t0)
    text = render.write(args.results, args.records)
    print(render.sections(text).get("gemma3", ""))


def entry(argv: list[str]) -> None:
    """:func:`main`, a bad input's message and exit status instead of a traceback."""
    with user_errors_exit("gemma3"):
        main(argv)
