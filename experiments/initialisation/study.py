"""The initialisation study's declaration (paper Sec. 3-4): its experiments, in the order of
its rows, and its RESULTS.md section, the CPU-scale rows with the paper-scale row of each claim
beneath it (:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.common.study import Section, Study, not_measured, run_line

TITLE = "The initialisation study (paper Sec. 3-4)"
COMMAND = "python -m experiments.run_all"
EXPERIMENTS = ("table1", "figure1", "figure2_finding22", "table2_figure3", "figure3_null",
               "figure4", "figure7", "figure5", "figure6", "table3", "figure8", "figure9",
               "figure10")


def _cells(claims) -> list[str]:
    return ["| " + " | ".join(c.cells()) + " |"
            for c in (claims if isinstance(claims, list) else [claims])]


def section(records: dict, outputs=None) -> str | None:
    from experiments.common.paper_records import PAPER_RECORDS
    from experiments.initialisation import claims as initialisation
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
                    lines += _cells(initialisation_paper.finding11_claim(records[name]["records"]))
                lines += _cells(at_paper.pop(extra))
        if prefix in initialisation.FINDING2_PARTS:
            finding2[prefix] = (cpu, at)
            if len(finding2) == len(initialisation.FINDING2_PARTS):
                lines += _cells(initialisation.finding2_claim(finding2))
    side = initialisation_paper.table1_side_by_side(paper)
    if side is not None:
        lines += ["", "Table 1 at the paper's shapes, the paper's rows beside ours (the paper's "
                  "p-values are those of N = 2,000 for GPT-2 and N = 10,000 for LLaMA-2, whose "
                  "rows are counts of 6-9; ours at each N we measured, a line per N; our token "
                  "ids differ from the paper's because another random number generator draws "
                  "the weights: ids are not comparable; frequencies are at the paper's N, and so "
                  "are p-values up to the vocabulary: the paper's GPT-2 rows fit |V| = 50,304, "
                  "nanoGPT's padded one, ours use 50,257; '-': not measured yet):", "", side]
        note = initialisation_paper.table1_frequency_note(paper)
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


STUDY = Study("initialisation", EXPERIMENTS,
              (Section("initialisation", TITLE, section, COMMAND),))
