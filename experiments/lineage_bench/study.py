"""The lineage benchmark's declaration (beyond the paper): its two records, same-shape and
shape-changed descendants, and its RESULTS.md section (:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.common.study import Experiment, Section, Study, run_line, scales
from experiments.lineage_bench import TITLE

COMMAND = "python -m experiments.lineage_bench"


def section(records: dict, outputs=None) -> str | None:
    if "lineage_bench" not in records:
        return None
    from experiments.lineage_bench import claims as bench

    text = bench.section(records["lineage_bench"], COMMAND, run_line(records, ["lineage_bench"]))
    shapes = records.get("lineage_bench_shapes")
    if shapes is None:
        return text + ("\n\nShape-changed descendants: not measured yet (`"
                       + COMMAND + " --shapes`).")
    from experiments.lineage_bench import shapes_claims

    summary = shapes["records"]["summary"]
    return "\n".join([
        text, "", "### Shape-changed descendants", "",
        f"Generated from results/records/lineage_bench/lineage_bench_shapes.json "
        f"(`{COMMAND} --shapes`, run on "
        f"{run_line(records, ['lineage_bench_shapes'])}). Bases: the first "
        f"{shapes['run']['settings']['bases']} seeds of the 32-seed family, each an HF folder "
        f"with its tokenizer; every edit of fingerprint.edits.derivatives.SHAPES applied to each "
        f"(its tokenizer remapped where the vocabulary changed); `bornbiased fingerprint`'s "
        f"verdicts at its defaults, positives a base's own suspects, negatives every other "
        f"base's.", "", "| claim | paper | ours | verdict |", "|---|---|---|---|",
        *["| " + " | ".join(c.cells()) + " |"
          for c in shapes_claims.claims(summary, shapes["records"]["pairs"])],
        "", shapes_claims.markdown(summary).rstrip("\n")])


STUDY = Study("lineage_bench",
              (Experiment("lineage_bench", "experiments.lineage_bench.measure:main",
                          **scales("experiments.lineage_bench.measure"),
                          records=("lineage_bench", "lineage_bench_shapes")),),
              (Section("lineage_bench", TITLE, section, COMMAND),))
