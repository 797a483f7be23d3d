"""The SeedPrint study's declaration (paper Sec. 5-6.1): its experiments and its RESULTS.md
section, the paper-scale Table 4a rows beneath the CPU-scale ones
(:mod:`experiments.common.study`)."""

from __future__ import annotations

from experiments.common.study import Section, Study, run_line, table_rows

TITLE = "SeedPrint (paper Sec. 5-6.1)"
COMMAND = "python -m experiments.seedprint_results --run"
EXPERIMENTS = ("figure13", "table4a", "seedprint_calibration", "seedprint_power",
               "seedprint_trained", "seedprint_confound", "seedprint_matched")


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


STUDY = Study("seedprint", EXPERIMENTS, (Section("seedprint", TITLE, section, COMMAND),))
