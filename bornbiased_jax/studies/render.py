"""The one renderer of RESULTS.md: every section from the committed records
(``results/records/<study>/<name>.json``) by the studies' pure claim functions.

Each section sits between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``. A section (or, in
the initialisation and SeedPrint tables, a row) whose records are missing is kept verbatim from
the current RESULTS.md, with one line saying that it was not regenerated because its records
were not kept, and the command that regenerates them; numbers are never typed into records.
The GPU section is written by hand from the logs in results/gpu/ and always kept; the GPU
campaign's section comes from results/gpu/campaign/ (:mod:`bornbiased_jax.studies.campaign`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bornbiased_jax import io
from bornbiased_jax.studies import EXPERIMENTS, STUDY_OF
from bornbiased_jax.studies import initialisation, lineage, seedprint, sinks
from bornbiased_jax.verdicts import vocabulary_markdown

RECORDS = Path("results/records")
SECTIONS = ["initialisation", "theory", "seedprint", "lineage", "lineage_qwen2", "sinks",
            "sinks_regime", "sinks_arms", "gpu", "gpu_campaign"]
COMMANDS = {"initialisation": "python -m experiments.run_all",
            "theory": "bornbiased theory --json results/records/theory/theory.json",
            "seedprint": "python -m experiments.seedprint_results --run",
            "lineage": "python -m experiments.lineage",
            "lineage_qwen2": "python -m experiments.lineage --arch qwen2",
            "sinks": "python -m experiments.figure12_table7",
            "sinks_regime": "python -m experiments.sinks_regime",
            "sinks_arms": "python -m experiments.sinks_arms"}
KEPT = "*Not regenerated:"
# What is known to be wrong with kept rows (by the claim prefix of seedprint.CLAIMS) or a kept
# section (by study), said beside them until they are re-run. None now: the rows measured with
# the stale head_dim of the d = 128 model (Figure 13, Table 4a, the false-positive rates) have
# been re-run.
KNOWN_DEFECTS: dict[str, str] = {}


def record_path(root: Path, name: str) -> Path:
    return Path(root) / STUDY_OF[name] / f"{name}.json"


def load_records(root: Path = RECORDS) -> dict[str, dict]:
    """Every saved record under ``root``: {experiment name: {"run": ..., "records": ...}}."""
    out = {}
    for name in STUDY_OF:
        f = record_path(root, name)
        if f.exists():
            out[name] = json.loads(f.read_text())
    return out


def save_record(root: Path, name: str, record: dict) -> Path:
    """Write one experiment's record, compact, atomically: its ``run`` info and ``records``
    without the keys that start with '_' (per-pair arrays drawn only in figures)."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if not str(k).startswith("_")}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    text = json.dumps({"run": record.get("run", {}), "records": strip(record["records"])},
                      separators=(",", ":"))
    return io.write_text(record_path(root, name), text + "\n")


def import_records(folder: Path, root: Path = RECORDS) -> list[str]:
    """Copy every known experiment's saved JSON ``folder/<name>/<name>.json`` (an ``--out``
    folder tree such as results/experiments/) into the records under ``root`` with
    :func:`save_record`; return the names copied."""
    done = []
    for name in STUDY_OF:
        f = Path(folder) / name / f"{name}.json"
        if f.exists():
            save_record(root, name, json.loads(f.read_text()))
            done.append(name)
    return done


def sections(text: str) -> dict[str, str]:
    """The bodies (without marker lines) of the ``<!-- NAME:begin/end -->`` sections."""
    return {m.group(1): m.group(2).strip("\n") for m in re.finditer(
        r"<!-- ([\w-]+):begin -->\n?(.*?)\n?<!-- \1:end -->", text, re.S)}


def _claim_rows(body: str) -> list[str]:
    """The data rows of the first claims table of a section body."""
    lines = body.splitlines()
    try:
        i = next(i for i, ln in enumerate(lines) if ln.startswith("| claim | paper |"))
    except StopIteration:
        return []
    rows = []
    for ln in lines[i + 2:]:
        if not ln.startswith("| "):
            break
        rows.append(ln)
    return rows


def kept(body: str, study: str) -> str:
    """``body`` unchanged but for one line under its title: not regenerated, and how to."""
    lines = [ln for ln in body.splitlines() if not ln.startswith(KEPT)]
    note = (f"{KEPT} this section is kept as an earlier run wrote it (numbers and verdicts, "
            f"by the rules of that time): its records were not kept (results were not "
            f"committed then); `{COMMANDS[study]}` regenerates them (its records go to "
            f"results/records/{study}/).")
    if study in KNOWN_DEFECTS:
        note += " Known defect: " + KNOWN_DEFECTS[study]
    note += "*"
    at = next((i + 1 for i, ln in enumerate(lines) if ln.startswith("## ")), 0)
    return "\n".join(lines[:at] + ["", note] + lines[at:]).replace("\n\n\n", "\n\n")


def _rows(specs, records: dict, old_rows: list[str]) -> tuple[list[str], list[str]]:
    """Table lines of ``specs`` ((experiment, claim prefix, function)): computed where the
    experiment's record exists, else the old rows with that prefix verbatim; and the names of
    the kept claims."""
    lines, kept_names = [], []
    for name, prefix, fn in specs:
        if name in records:
            out = fn(records[name])
            for c in out if isinstance(out, list) else [out]:
                lines.append("| " + " | ".join(c.cells()) + " |")
        else:
            old = [r for r in old_rows if r.startswith(f"| {prefix}")]
            lines += old
            kept_names += [prefix] if old else []
    return lines, kept_names


def _commands(specs, kept_names: list[str]) -> str:
    """'`python -m experiments.X` regenerates them' for the experiments of the kept rows."""
    names = list(dict.fromkeys(n for n, prefix, _ in specs if prefix in kept_names))
    cmds = ", ".join(f"`python -m experiments.{n}`" for n in names)
    return cmds + (" regenerates them" if len(names) == 1 else " regenerate them")


def _run_line(records: dict, names: list[str]) -> str:
    runs = [records[n]["run"] for n in names if n in records and records[n].get("run")]
    if not runs:
        return "?"
    devices = sorted({f"{r.get('device', '?')} ({r.get('machine', '?')}), jax {r.get('jax', '?')}"
                      for r in runs})
    return "; ".join(devices)


def initialisation_section(records: dict, old: str) -> str | None:
    names = EXPERIMENTS["initialisation"]
    if not any(n in records for n in names):
        return None
    rows, kept_names = _rows(initialisation.CLAIMS, records, _claim_rows(old))
    lines = ["## The initialisation study (paper Sec. 3-4)", "",
             f"Generated from the records in results/records/initialisation/ (written by "
             f"`{COMMANDS['initialisation']} --scale cpu`; run on {_run_line(records, names)}). "
             "CPU scale uses the `cpu` presets (6 blocks, d = 512) and fewer, shorter sequences "
             "than the paper; each record holds its experiment's settings and wall time. "
             "Paper-scale rows need a GPU run (`--scale paper`) and are not included here.", "",
             "| claim | paper | ours (CPU scale) | verdict |", "|---|---|---|---|"] + rows
    lines += ["", "p-values below ~1e-20 only say 'decisively significant'; their magnitude is "
              "not meaningful (the z-test's normal tail is far outside its accuracy there). "
              "Figure 8's Attn0 curve keeps the blocks' pre-LayerNorm, which re-normalises each "
              "position between layers; Prop. 5's exact values (no normalisation) are in "
              "`bornbiased theory`. Closed-form checks of Props. 2, 4, 5 and Eq. 2 are in the "
              "next section (README, *Notes on the paper*)."]
    if kept_names:
        lines += ["", f"{KEPT} the rows {'; '.join(kept_names)} are kept as an earlier run "
                  "wrote them (numbers and verdicts, by the rules of that time): their records "
                  "were not kept (results were not committed then); "
                  + _commands(initialisation.CLAIMS, kept_names) + ".*"]
        lines += _provenance(old)
    return "\n".join(lines)


def _provenance(old: str) -> list[str]:
    """The old section's '**Provenance' paragraph, which kept rows still need."""
    paras = [p for p in old.split("\n\n") if p.startswith(("**Provenance", "As written with"))]
    if not paras:
        return []
    para = paras[0].removeprefix("As written with the kept rows: ")
    return ["", f"As written with the kept rows: {para}"]


def seedprint_section(records: dict, old: str) -> str | None:
    names = EXPERIMENTS["seedprint"]
    if not any(n in records for n in names):
        return None
    rows, kept_names = _rows(seedprint.CLAIMS, records, _claim_rows(old))
    lines = ["## SeedPrint (paper Sec. 5-6.1)", "",
             "Generated from the records in results/records/seedprint/ (written by "
             f"`{COMMANDS['seedprint']}`: figure13.py, table4a.py, seedprint_calibration.py, "
             f"seedprint_power.py, seedprint_trained.py (after `python -m "
             f"experiments.seed_family --continued`), seedprint_confound.py; run on {_run_line(records, names)}). " + seedprint.INTRO, "",
             "| claim | paper | ours | verdict |", "|---|---|---|---|"] + rows
    if kept_names:
        lines += ["", f"{KEPT} the rows {'; '.join(kept_names)} are kept as an earlier run "
                  "wrote them (numbers and verdicts, by the rules of that time): their records "
                  "were not kept (results were not committed then); "
                  + _commands(seedprint.CLAIMS, kept_names) + "."
                  + "".join(f" {name}: {KNOWN_DEFECTS[name]}" for name in kept_names
                            if name in KNOWN_DEFECTS) + "*"]
    return "\n".join(lines)


def theory_section(records: dict, old: str) -> str | None:
    if "theory" not in records:
        return None
    from bornbiased_jax.studies import theory

    return theory.section(records["theory"], COMMANDS["theory"],
                          _run_line(records, ["theory"]))


def lineage_section(records: dict, old: str) -> str | None:
    if not all(n in records for n in lineage.EXPERIMENTS):
        return None
    return lineage.section(records).rstrip("\n")


def lineage_qwen2_section(records: dict, old: str) -> str:
    """The Qwen-style repeat from its records; until all of them exist, a line saying that it
    has not been measured (with what is missing and the command), never older numbers."""
    missing = [n for n in lineage.QWEN2_EXPERIMENTS if n not in records]
    if not missing:
        return lineage.section(records, "qwen2").rstrip("\n")
    return "\n".join([f"## {lineage.ARCHS['qwen2'][2]}", "",
                      f"Not measured yet: no records for {', '.join(missing)}. "
                      f"`{COMMANDS['lineage_qwen2']}` trains the Qwen-style family (the "
                      "LLaMA-style family's data, seeds and schedule with the `qwen2-small` "
                      "preset; bornbiased_jax/studies/family.py) and measures it; an "
                      "interrupted run resumes from its checkpoints."])


def sinks_regime_section(records: dict, old: str) -> str | None:
    if "sinks_regime" not in records:
        return None
    from bornbiased_jax.studies import sinks_regime
    from bornbiased_jax.verdicts import table

    rec = records["sinks_regime"]
    return "\n".join([
        "## Where attention sinks form at CPU scale (Sec. 6.2's precondition)", "",
        f"Generated from results/records/sinks/sinks_regime.json (`{COMMANDS['sinks_regime']}`; "
        f"run on {_run_line(records, ['sinks_regime'])}). The section above found no sink in "
        "its baseline; this grid searched for a regime where a baseline grows them "
        "(docs/sinks.md). Sink rate: eps 0.25 per sample at each length T; Gu: Gu et al.'s "
        "setting (eps 0.3, T = 64, 100 sequences).", "",
        table(sinks_regime.claims(rec)), "",
        "Every cell:", "", sinks_regime.markdown(rec["records"]).rstrip("\n"), "",
        ("The next section trains the five arms in the regime that grew sinks."
         if "sinks_arms" in records else
         "The five arms (baseline, amplification, attenuation, head-wise RMSNorm, output gate) "
         "have not yet been trained in this regime, so the paper's Sec. 6.2 claims are not "
         "tested here yet.")])


def sinks_arms_section(records: dict, old: str) -> str | None:
    if "sinks_arms" not in records:
        return None
    from bornbiased_jax.studies import sinks_arms
    from bornbiased_jax.verdicts import table

    rec = records["sinks_arms"]
    arms = rec["records"]["arms"]
    base = arms["baseline"]
    return "\n".join([
        "## Sec. 6.2's arms where the baseline grows sinks (Bigram-Backcopy, several seeds)", "",
        f"Generated from results/records/sinks/sinks_arms.json (`{COMMANDS['sinks_arms']}`; "
        f"run on {_run_line(records, ['sinks_arms'])}). The baseline trains seeds "
        f"{', '.join(str(s['seed']) for s in base['seeds'])} in "
        f"{len(base.get('groups', [1]))} `train --seeds` run(s), all on the same batches in "
        f"the same order: `{base['command']}` (a later group differs only in `--seeds`); each "
        "arm adds its `--model-set` (bornbiased_jax/studies/sinks_arms.py). Sink rates per "
        "sample on 100 evaluation "
        "draws per length; held-out NLL on 100 draws of 129 characters. Every number is a "
        "mean over seeds ± its standard error [95 % t interval on n - 1 degrees of freedom]; "
        "differences from the baseline are paired seed by seed; window-level standard errors "
        "decide nothing here.", "",
        table(sinks_arms.claims(rec)), "",
        "Every arm (final checkpoint):", "",
        sinks_arms.markdown(rec["records"]).rstrip("\n")])


def gpu_campaign_section(records: dict, old: str) -> str | None:
    from bornbiased_jax.studies import campaign

    return campaign.section(campaign.ROOT)


def sinks_section(records: dict, old: str) -> str | None:
    if "figure12_table7" not in records:
        return None
    return sinks.section(records["figure12_table7"], records.get("sinks_init"))


HEADER = ("# Results", "",
          "What this project measured of the paper's claims, study by study: for each claim the "
          "paper's value, ours, and a verdict. Every row is computed from a saved record "
          "(results/records/<study>/<name>.json, committed) by a pure function in "
          "bornbiased_jax/studies/ whose rule is stated in its docstring and unit-tested; "
          "`python -m experiments.run_all --no-run` rewrites this file from the records. The "
          "GPU section is written by hand from the logs in results/gpu/.", "",
          "Verdicts, one vocabulary for every table:", "")


def render(old_text: str, records: dict) -> str:
    """RESULTS.md from ``records`` ({name: saved JSON}), keeping what they cannot regenerate
    from ``old_text`` (the current RESULTS.md)."""
    old = sections(old_text)
    make = {"initialisation": initialisation_section, "theory": theory_section,
            "seedprint": seedprint_section,
            "lineage": lineage_section, "lineage_qwen2": lineage_qwen2_section,
            "sinks": sinks_section,
            "sinks_regime": sinks_regime_section, "sinks_arms": sinks_arms_section,
            "gpu_campaign": gpu_campaign_section}
    parts = ["\n".join(HEADER) + "\n" + vocabulary_markdown()]
    for name in SECTIONS + [n for n in old if n not in SECTIONS]:  # others kept, at the end
        body = make[name](records, old.get(name, "")) if name in make else None
        if body is None and name in old:
            body = kept(old[name], name) if name in make else old[name]
        if body is None:
            continue
        parts.append(f"<!-- {name}:begin -->\n{body.strip()}\n<!-- {name}:end -->")
    return "\n\n".join(parts) + "\n"


def write(results: Path = Path("RESULTS.md"), root: Path = RECORDS) -> str:
    """Rewrite ``results`` from the records under ``root``; return the new text."""
    results = Path(results)
    text = render(results.read_text() if results.exists() else "", load_records(root))
    io.write_text(results, text)
    return text

