"""The initialisation study's declaration (paper Sec. 3-4): its experiments, in the order
``run_all`` runs them, each measured beside its rule (``experiments/initialisation/<artifact>.py``,
its ``main``), and its RESULTS.md section, the CPU-scale rows with the paper-scale row of each
claim beneath it (:mod:`experiments.common.study`). Each experiment's ``--scale paper`` runs it
at the paper's settings (a GPU's work); the paper-scale rows of RESULTS.md come from the
campaign's resumable pieces (``python -m experiments paper_scale PIECE``), which a CPU can
finish. :func:`run_all` runs every experiment in turn and rewrites RESULTS.md.
"""

from __future__ import annotations

from pathlib import Path

from experiments.common.study import (Experiment, Section, Study, defined, not_measured,
                                      run_line, scales)

TITLE = "The initialisation study (paper Sec. 3-4)"
COMMAND = "python -m experiments.run_all"
_P = "experiments.initialisation."


def _plot(name: str) -> dict:
    """The settings of an experiment that :mod:`bornbiased_jax.theory.plots` measures."""
    return {"cpu": defined("bornbiased_jax.theory.plots", "CPU", name),
            "paper": defined("bornbiased_jax.theory.plots", "PAPER", name)}


# in the order run_all runs them (Figure 7 before Figure 5: Figure 4's row reads Figure 7's)
EXPERIMENT_TABLE = (
    Experiment("table1", _P + "table1:main", **scales(_P + "table1")),
    Experiment("figure1", _P + "figure1:main", **scales(_P + "figure1")),
    Experiment("figure2_finding22", _P + "figure2:main", **scales(_P + "figure2")),
    Experiment("table2_figure3", _P + "table2:main", **scales(_P + "table2")),
    Experiment("figure3_null", _P + "figure3_null:main", **scales(_P + "figure3_null")),
    Experiment("figure4", _P + "figure4:main", **scales(_P + "figure4")),
    Experiment("figure7", _P + "figure7:main", **scales(_P + "figure7")),
    Experiment("figure5", _P + "figure5:main", **_plot("figure5")),
    Experiment("figure6", _P + "figure6:main", **scales(_P + "figure6")),
    Experiment("table3", _P + "table3:main", **_plot("table3")),
    Experiment("figure8", _P + "figure8:main", **_plot("figure8")),
    Experiment("figure9", _P + "figure9:main", **_plot("figure9")),
    Experiment("figure10", _P + "figure10:main", **scales(_P + "figure10")),
    Experiment("run_all", _P + "study:run_all", cpu="run_all", paper="run_all --scale paper",
               records=()))
EXPERIMENTS = tuple(n for e in EXPERIMENT_TABLE for n in e.writes)


def _cells(claims) -> list[str]:
    return ["| " + " | ".join(c.cells()) + " |"
            for c in (claims if isinstance(claims, list) else [claims])]


def section(records: dict, outputs=None) -> str | None:
    from experiments.common.paper_records import PAPER_RECORDS
    from experiments.initialisation import claims as initialisation
    from experiments.initialisation import findings_paper, table1_paper
    from experiments.initialisation import paper_claims as initialisation_paper

    if not any(n in records for n in EXPERIMENTS):
        return None
    paper = records.get("paper", {})
    init_paper = [n for n in paper if PAPER_RECORDS.get(n) == "initialisation"]
    lines = [f"## {TITLE}", "",
             f"Generated from the records in results/records/initialisation/ (written by "
             f"`{COMMAND} --scale cpu`; run on {run_line(records, EXPERIMENTS)}) "
             "and, for the rows marked [paper scale: ...], results/records/paper/initialisation/ "
             "(`python -m experiments.paper_scale PIECE`, resumable forward passes at the paper's "
             "shapes" + (f"; run on {run_line(paper, init_paper)}" if init_paper else "")
             + "). "
             f"Unmarked rows are CPU scale: the `cpu` presets ({_cpu_shape(records)}) and fewer, "
             "shorter sequences than the paper; each record holds its experiment's settings "
             "(shape, N, T, seeds) and wall time.", "",
             "| claim | paper | ours | verdict |", "|---|---|---|---|"]
    at_paper = initialisation_paper.paper_scale_claims(paper)
    finding2 = {}  # Finding 2's parts: (CPU row, paper-scale row)
    for name, prefix, fn in initialisation.claim_specs(records):
        cpu = fn(records[name]) if name in records else not_measured(name, prefix)
        lines += _cells(cpu)
        at = at_paper.pop(prefix, None)
        if at is not None:
            lines += _cells(at)
        if prefix == "Table 1 / Finding 1":
            for extra in ("Table 1(a) seed spread", "Table 1(c) magnitudes", "Finding 1.1",
                          "Finding 1.2", "Finding 1.3"):
                if extra == "Finding 1.1" and name in records:  # its CPU row first
                    lines += _cells(findings_paper.finding11_claim(records[name]["records"]))
                lines += _cells(at_paper.pop(extra))
        if prefix in initialisation.FINDING2_PARTS:
            finding2[prefix] = (cpu, at)
            if len(finding2) == len(initialisation.FINDING2_PARTS):
                lines += _cells(initialisation.finding2_claim(finding2))
    side = table1_paper.table1_side_by_side(paper)
    if side is not None:
        lines += ["", "Table 1 at the paper's shapes, the paper's rows beside ours (the paper's "
                  "p-values are those of N = 2,000 for GPT-2 and N = 10,000 for LLaMA-2, whose "
                  "rows are counts of 6-9; ours at each N we measured, a line per N; our token "
                  "ids differ from the paper's because another random number generator draws "
                  "the weights: ids are not comparable; frequencies are at the paper's N, and so "
                  "are p-values up to the vocabulary: the paper's GPT-2 rows fit |V| = 50,304, "
                  "nanoGPT's padded one, ours use 50,257; '-': not measured yet):", "", side]
        note = table1_paper.table1_frequency_note(paper)
        lines += ["", note] if note else []
    lines += ["", "p-values below ~1e-20 only say 'decisively significant'; their magnitude is "
              "not meaningful (the z-test's normal tail is far outside its accuracy there). "
              "Figure 8's Attn0 curve keeps the blocks' pre-LayerNorm, which re-normalises each "
              "position between layers; Prop. 5's exact values (no normalisation) are in "
              "`bornbiased theory`. Closed-form checks of Props. 2, 4, 5 and Eq. 2 are in the "
              "next section (docs/paper-notes.md, *Notes on the paper*)."]
    return "\n".join(lines)


def _cpu_shape(records: dict) -> str:
    """'6 blocks, d = 512': the shape of Table 1's CPU-scale presets, from its record."""
    from bornbiased_jax.presets import get_preset

    presets = records.get("table1", {}).get("run", {}).get("settings", {}).get("presets", [])
    shapes = sorted({(c.n_layers, c.d_model) for c in map(get_preset, presets)})
    return "; ".join(f"{L} blocks, d = {d}" for L, d in shapes) or "?"


def run_all(argv: list[str]) -> None:
    """Regenerate every Sec. 3-4 artifact, then RESULTS.md: for each claim of every study the
    paper's value, ours and a verdict, computed from the committed records
    (results/records/<study>/).

        python -m experiments run_all                  # CPU scale, about 75 minutes on 2 cores
        python -m experiments run_all --scale paper    # on a GPU
        python -m experiments run_all --no-run         # only rebuild RESULTS.md from the records
        python -m experiments run_all --no-run --import results/experiments
                                                       # first copy saved <name>/<name>.json

    Each experiment runs as ``python -m experiments <name>`` from the repository root, in a
    process of its own, and writes its record to results/records/<study>/<name>.json. At CPU
    scale the thirteen records' run.wall_seconds under results/records/initialisation/ sum to
    4,487 s (Figure 2 + Finding 2.2: 2,070 s of it), measured on a shared 2-core CPU.
    RESULTS.md is written by one renderer, :mod:`experiments.render`, from the pure claim
    functions of experiments/ (each verdict's rule is in its docstring) and from the GPU runs'
    outputs under results/gpu/; a row or section whose record is missing says so, with the
    command that measures it.
    """
    import argparse

    from experiments import render
    from experiments.common.cli import records_root, run_scripts

    p = argparse.ArgumentParser(prog="python -m experiments run_all", description=run_all.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=["cpu", "paper"], default="cpu")
    p.add_argument("--root", type=Path, default=Path("results/experiments"),
                   help="where the experiments write their JSON, markdown and figures")
    p.add_argument("--records", type=Path, default=None,
                   help="committed records (default results/records; results/records/paper "
                        "with --scale paper)")
    p.add_argument("--no-run", action="store_true", help="only rebuild RESULTS.md")
    p.add_argument("--import", dest="import_from", type=Path, metavar="DIR",
                   help="first copy the records saved under DIR/<name>/<name>.json")
    p.add_argument("--results", type=Path, default=Path("RESULTS.md"))
    args = p.parse_args(argv)
    records = args.records or records_root(args.scale)
    if args.import_from:
        print("imported:", ", ".join(render.import_records(args.import_from, records))
              or "nothing")
    if not args.no_run:
        run_scripts(EXPERIMENTS, args.scale, args.root, records)
    if args.scale == "paper":
        print(f"records in {records}; RESULTS.md renders the CPU-scale records only")
        return
    print(render.write(args.results, records))


STUDY = Study("initialisation", EXPERIMENT_TABLE,
              (Section("initialisation", TITLE, section, COMMAND),))
