"""The real-model study's command line, ``python -m experiments real_model [RECORD] --model FILE``
(:func:`main`): the steps of one model record (:mod:`experiments.real_model.measure`), each
record saved as its step finishes, then the model's section from the records (RESULTS.md
rewritten where the model is one of its studies)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bornbiased_jax import files
from bornbiased_jax.defaults import MATCHED_STATISTIC
from bornbiased_jax.errors import UserError
from experiments import render
from experiments.common.cli import user_errors_exit
from experiments.real_model import measure, record


def save(records: Path, rec: record.ModelRecord, step: str, body: dict, t0: float,
         command: str) -> Path:
    """Save a step's record; its wall time is that of the commands it ran (they may have run
    in an earlier invocation whose outputs this one reused), else this step's."""
    walls = [body.get("wall_seconds")]
    walls += [r.get("wall_seconds") for r in body.values() if isinstance(r, dict)]
    walls += [t.get("wall_seconds") for t in body.get("tests", {}).values()]
    walls = [w for w in walls if isinstance(w, (int, float))]
    wall = sum(walls) if walls else time.time() - t0
    name = rec.experiment(step)
    run = files.run_record(command, wall, experiment=name, scale="cpu")
    path = render.save_record(records, name, {"run": run, "records": body}, study=rec.study)
    print(f"saved {name}")
    return path


def section(rec: record.ModelRecord, records: Path, command: str) -> str | None:
    """The model's section from its records under ``records`` (and, for Table 1(b)'s N, the
    campaign's paper-scale ones), by its rules' module."""
    import importlib
    import json

    found = {}
    for name in rec.experiments:
        f = Path(records) / rec.study / f"{name}.json"
        if f.is_file():
            found[name] = json.loads(f.read_text())
    rules = importlib.import_module(rec.rules)
    return rules.section(found, command, model=rec)


def run_steps(rec: record.ModelRecord, model: Path, steps, records: Path, out: Path,
              suspects: Path, command: str, lengths=None) -> None:
    """Run ``steps`` of the record in its order, each record saved as its step finishes."""
    if rec.sha256 is not None and measure.sha256(model) != rec.sha256:
        raise UserError(f"--model {model}: its sha256 is not the record's ({rec.sha256}): "
                        f"another file than {rec.file}"
                        + (f" ({rec.fetch} fetches it)" if rec.fetch else ""))
    info = measure.model_info(model)
    for step in [s for s in rec.steps if s in steps]:
        t0 = time.time()
        if step == "sinks":
            save(records, rec, step, {"model": info, **measure.sinks(rec, model, out)}, t0,
                 command)
        elif step == "init":
            body = measure.init(rec, out)
            save(records, rec, step, {**body, "wall_seconds": sum(
                a["seconds"] for a in body["arms"].values())}, t0, command)
        elif step == "sweep":
            save(records, rec, step,
                 {"model": info, **measure.sweep(rec, model, out, lengths)}, t0, command)
        elif step == "suspects":
            measure.build_suspects(rec, model, suspects)
        elif step == "cousins":
            from experiments.real_model import cousins

            print(f"cousins: {cousins.ensure(model, rec.cousins)}")
        elif step == "lineage":
            manifest = measure.build_suspects(rec, model, suspects)
            save(records, rec, step,
                 {"model": info, "suspects": manifest, "negatives": measure.negatives(rec),
                  "tests": measure.lineage(rec, model, out, suspects),
                  "matched_statistic": MATCHED_STATISTIC}, t0, command)


def main(argv: list[str], record_name: str | None = None) -> None:
    """A real pretrained model measured with the toolkit's own commands, each typed as a new
    user types it: attention sinks, Table 1's preference on the trained model, fresh
    initialisations of its preset, its descendants made here and Table 6's question on them
    (experiments/real_model/measure.py). Which steps apply, the model file and its sha256, the
    descendants and the negatives are the model record's (experiments/real_model/record.py):
    a shipped record by name (smollm2, the default; gemma3) or any record's JSON file, e.g.
    one made for your own GGUF file or HF folder.

        python -m experiments real_model --model "$(bash tests/fixtures/fetch_smollm2.sh)"
        python -m experiments real_model gemma3 --model "$(bash tests/fixtures/fetch_gemma3.sh)"
        python -m experiments real_model my_model.json --model my_model.gguf --records out/
        python -m experiments real_model --model M.gguf --steps sinks sweep   # some steps
        python -m experiments real_model gemma3 --no-run                      # the section only

    Every step is resumable: a command whose output folder exists under the record's ``out``
    is not run again, and built suspects under its ``suspects`` folder are kept. On a 2-core
    CPU SmolLM2's whole study takes a few hours (the fine-tunes and the fingerprint passes
    dominate), Gemma 3's about an hour and a half; run them niced.
    """
    p = argparse.ArgumentParser(prog=f"python -m experiments {record_name or 'real_model'}",
                                description=main.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    if record_name is None:
        p.add_argument("record", nargs="?", default="smollm2",
                       help=f"the model record: a shipped one's name "
                            f"({', '.join(record.shipped())}; default smollm2) or a record's "
                            f"JSON file")
    p.add_argument("--model", type=Path, help="the model file (a GGUF file or an HF folder; "
                   "the record's fetch command prints where it put it)")
    p.add_argument("--steps", nargs="+", choices=record.STEPS, default=list(record.STEPS),
                   help="which of the record's steps to run (default: all it has, in order)")
    p.add_argument("--records", type=Path, default=render.RECORDS,
                   help="records folder (default results/records): RECORDS/<study>/<name>.json")
    p.add_argument("--results", type=Path, default=Path("RESULTS.md"),
                   help="the RESULTS.md rewritten when the model is one of its studies")
    p.add_argument("--out", type=Path, default=None,
                   help="the commands' outputs (default: the record's)")
    p.add_argument("--suspects", type=Path, default=None,
                   help="where the suspects are built (default: the record's)")
    p.add_argument("--seq-len", type=int, nargs="+", default=None, dest="lengths",
                   metavar="T", help="the sweep step's lengths T, as bornbiased sweep's "
                                     "--seq-len (default: the record's)")
    p.add_argument("--lengths", type=int, nargs="+", dest="lengths",
                   help=argparse.SUPPRESS)  # the former spelling
    p.add_argument("--no-run", action="store_true", help="only render the section")
    args = p.parse_args(argv)
    if record_name is not None:
        args.record = record_name
    rec = record.load(args.record)
    shipped = args.record in record.shipped()
    command = rec.command(None if shipped else args.record)
    if not args.no_run:
        if args.model is None or not args.model.exists():
            raise UserError(f"--model {args.model}: give the model file"
                            + (f" ({rec.fetch} fetches it)" if rec.fetch else ""))
        run_steps(rec, args.model, args.steps, args.records, args.out or Path(rec.out),
                  args.suspects or Path(rec.suspects), command, args.lengths)
    from experiments import STUDIES

    if any(s.name == rec.study for s in STUDIES):
        text = render.write(args.results, args.records)
        print(render.sections(text).get(rec.study, ""))
    else:
        print(section(rec, args.records, command) or f"no records of {rec.name} yet")


def entry(argv: list[str]) -> None:
    """:func:`main`, a bad input's message and exit status instead of a traceback."""
    with user_errors_exit("real_model"):
        main(argv)


def gemma3(argv: list[str]) -> None:
    """:func:`main` of the shipped Gemma 3 record (``python -m experiments gemma3`` is
    ``python -m experiments real_model gemma3``)."""
    with user_errors_exit("gemma3"):
        main(argv, "gemma3")
