"""The SeedPrint study's declaration (paper Sec. 5-6.1): its experiments and its RESULTS.md
section, the paper-scale Table 4a rows beneath the CPU-scale ones
(:mod:`experiments.common.study`); :func:`results` runs the study's experiments in turn and
rewrites RESULTS.md."""

from __future__ import annotations

from pathlib import Path

from experiments.common.study import Experiment, Section, Study, run_line, scales, table_rows

TITLE = "SeedPrint (paper Sec. 5-6.1)"
COMMAND = "python -m experiments.seedprint_results --run"
_P = "experiments.seedprint."
EXPERIMENT_TABLE = (
    Experiment("figure13", _P + "figure13:main", **scales(_P + "figure13")),
    Experiment("table4a", _P + "table4a:main", **scales(_P + "table4a")),
    Experiment("seedprint_calibration", _P + "calibration:main", **scales(_P + "calibration")),
    Experiment("seedprint_power", _P + "power:main", **scales(_P + "power")),
    Experiment("seedprint_trained", _P + "trained:main", **scales(_P + "trained")),
    Experiment("seedprint_confound", _P + "confound:main", **scales(_P + "confound")),
    # its record measured the matched test's earlier statistic; running it now says where
    # today's is measured
    Experiment("seedprint_matched", _P + "matched_level:main", **scales(_P + "matched_level")),
    Experiment("seedprint_results", _P + "study:results", cpu="seedprint_results --run",
               paper="seedprint_results --run --scale paper", records=()),
    # the 32-seed family the trained-pair experiments (and the lineage benchmark and level
    # table) read: a training run, its record results/records/training/seed_family.json
    Experiment("seed_family", "experiments.common.seed_family:main",
               cpu="seed_family --continued", records=()))
# the experiments seedprint_results --run runs, in order (seedprint_matched's record is kept)
RUN = ("figure13", "table4a", "seedprint_calibration", "seedprint_power", "seedprint_trained",
       "seedprint_confound")
EXPERIMENTS = tuple(n for e in EXPERIMENT_TABLE for n in e.writes)


def section(records: dict, outputs=None) -> str | None:
    from experiments.seedprint import claims as seedprint

    if not any(n in records for n in EXPERIMENTS):
        return None
    lines = [f"## {TITLE}", "",
             "Generated from the records in results/records/seedprint/ (written by "
             f"`{COMMAND}`: figure13.py, table4a.py, seedprint_calibration.py, "
             f"seedprint_power.py, seedprint_trained.py (after `python -m "
             f"experiments.seed_family --continued`), seedprint_confound.py; run on "
             f"{run_line(records, EXPERIMENTS)}). " + seedprint.INTRO, "",
             "| claim | paper | ours | verdict |", "|---|---|---|---|"]
    rows = table_rows(seedprint.CLAIMS, records)
    paper = records.get("paper", {})
    at_paper = seedprint.table4a_paper_scale_claims(paper.get("table4a"))
    if "table4a_n10k" in paper:  # the HF-init Gaussian rows again at the paper's n
        at_paper += seedprint.table4a_paper_scale_claims(paper["table4a_n10k"])
    i = next((k + 1 for k, r in enumerate(rows) if r.startswith("| Table 4a:")), len(rows))
    rows[i:i] = ["| " + " | ".join(c.cells()) + " |" for c in at_paper]
    return "\n".join(lines + rows)


def results(argv: list[str]) -> None:
    """Run the SeedPrint experiments (with --run: figure13, table4a, seedprint_calibration,
    seedprint_power, seedprint_trained, seedprint_confound; seedprint_trained needs the seed
    family, ``python -m experiments seed_family --continued``, first) and rewrite RESULTS.md
    from the committed records: the SeedPrint section's rows come from
    experiments/seedprint/claims.py, the whole file from the one renderer
    (experiments/render.py).

        python -m experiments seedprint_results            # rebuild RESULTS.md from the records
        python -m experiments seedprint_results --run      # run the six experiments first
    """
    import argparse

    from experiments import render
    from experiments.common.cli import records_root, run_scripts

    ap = argparse.ArgumentParser(prog="python -m experiments seedprint_results",
                                 description=results.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=["cpu", "paper"], default="cpu")
    ap.add_argument("--root", type=Path, default=Path("results/experiments"),
                    help="where the experiments write their JSON, markdown and figures")
    ap.add_argument("--records", type=Path, default=None,
                    help="committed records (default results/records; results/records/paper "
                         "with --scale paper)")
    ap.add_argument("--run", action="store_true", help="run the six experiments first")
    ap.add_argument("--results", type=Path, default=Path("RESULTS.md"))
    args = ap.parse_args(argv)
    records = args.records or records_root(args.scale)
    if args.run:
        run_scripts(RUN, args.scale, args.root, records)
    if args.scale == "paper":
        print(f"records in {records}; RESULTS.md renders the CPU-scale records only")
        return
    text = render.write(args.results, records)
    print(render.sections(text).get("seedprint", ""))


STUDY = Study("seedprint", EXPERIMENT_TABLE, (Section("seedprint", TITLE, section, COMMAND),))
