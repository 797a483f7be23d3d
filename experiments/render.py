"""The one renderer of RESULTS.md: every section from committed outputs, by the studies' pure
claim functions: the records (``results/records/<study>/<name>.json``), and the GPU runs'
outputs under ``results/gpu/`` (the first window's logs, :mod:`experiments.campaign.gpu_window`;
the campaign's pieces, :mod:`experiments.campaign.plan`). The sections, their titles, commands
and builders are the studies' declarations (``experiments/<package>/study.py``, listed in
RESULTS.md's order by ``experiments.STUDIES``); this module only iterates them.

Each section sits between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``. A row (or a
section) whose record is missing says so, with the command that measures it; nothing is carried
over from an earlier RESULTS.md, and numbers are never typed into records.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bornbiased_jax import files
from bornbiased_jax.verdicts import vocabulary_markdown
from experiments import STUDIES, STUDY_OF
# where a record lives and its one writer (artifacts'), also named here for the scripts
from experiments.artifacts import RECORDS, record_path, save_record  # noqa: F401
from experiments.campaign import gpu_window
from experiments.common.paper_records import PAPER_RECORDS
from experiments.common.study import Outputs, Section

GPU_ROOT = gpu_window.ROOT


def load_records(root: Path = RECORDS) -> dict[str, dict]:
    """Every saved record under ``root``: {experiment name: {"run": ..., "records": ...}},
    under "paper" (when there are any) the paper-scale records of ``root``/paper/
    (experiments/paper_scale.py): {name: record}, and under "training" (when there are any)
    the training runs' records of ``root``/training/ (e.g. the seed family's settings, which
    the level table's cells share): {name: record}."""
    out = {}
    for name in STUDY_OF:
        f = record_path(root, name)
        if f.exists():
            out[name] = json.loads(f.read_text())
    paper = {}
    for name, study in PAPER_RECORDS.items():
        f = Path(root) / "paper" / study / f"{name}.json"
        if f.exists():
            paper[name] = json.loads(f.read_text())
    if paper:
        out["paper"] = paper
    training = {f.stem: json.loads(f.read_text())
                for f in sorted((Path(root) / "training").glob("*.json"))
                if not f.name.endswith(".tokenizer.json")}
    if training:
        out["training"] = training
    return out


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


def sections_of_studies() -> list[Section]:
    """Every study's sections (:data:`experiments.STUDIES`), in RESULTS.md's order."""
    return [s for study in STUDIES for s in study.sections]


def missing_section(section: Section, gpu_root: Path = GPU_ROOT) -> str:
    """A section whose records (or GPU outputs) are absent: its title, and how to make them."""
    how = (f"`{section.command}` measures it (its records go to results/records/)"
           if section.command else f"its outputs under {gpu_root}/ are absent")
    return f"## {section.title}\n\nNot measured yet: {how}."


HEADER = ("# Results", "",
          "What this project measured of the paper's claims, study by study: for each claim the "
          "paper's value, ours, and a verdict. Every row is computed from a saved record "
          "(results/records/<study>/<name>.json, committed) or, for the GPU sections, from the "
          "outputs the GPU runs left in results/gpu/, by a pure function in "
          "experiments/ whose rule is stated in its docstring and unit-tested; "
          "`python -m experiments.run_all --no-run` rewrites this file from them.", "",
          "Verdicts, one vocabulary for every table:", "")


def render(records: dict, gpu_root: Path = GPU_ROOT, campaign_root: Path | None = None) -> str:
    """RESULTS.md from ``records`` ({name: saved JSON}) and the GPU outputs under ``gpu_root``
    and ``campaign_root``: every study's sections in turn, each built by its declaration
    (:mod:`experiments.common.study`); a section without its records says so
    (:func:`missing_section`)."""
    from experiments.campaign import plan as campaign

    outputs = Outputs(gpu_root, campaign.ROOT if campaign_root is None else campaign_root)
    parts = ["\n".join(HEADER) + "\n" + vocabulary_markdown()]
    for section in sections_of_studies():
        body = section.build(records, outputs) or missing_section(section, gpu_root)
        parts.append(f"<!-- {section.name}:begin -->\n{body.strip()}\n<!-- {section.name}:end -->")
    return "\n\n".join(parts) + "\n"


def write(results: Path = Path("RESULTS.md"), root: Path = RECORDS,
          gpu_root: Path = GPU_ROOT) -> str:
    """Rewrite ``results`` from the records under ``root`` and the GPU outputs under
    ``gpu_root``, and the measured blocks of docs/seedprint.md beside ``results`` where that
    page exists (:mod:`experiments.seedprint.docs`, and :data:`DOC_BLOCKS` from other
    studies' records); every text is made before any is written. Return RESULTS.md's new
    text."""
    from experiments.seedprint import docs as seedprint_docs

    records = load_records(root)
    text = render(records, gpu_root)
    pages = {}  # path -> (old text, new text), all made before anything is written
    for rel, blocks in ((seedprint_docs.DOCS, {**seedprint_docs.BLOCKS, **DOC_BLOCKS}),):
        path = Path(results).parent / rel
        if path.exists():
            old = path.read_text()
            pages[path] = (old, seedprint_docs.render(old, records, blocks, rel))
    files.write_text(Path(results), text)
    for path, (old, new) in pages.items():
        if new != old:
            files.write_text(path, new)
    return text


def _bench_summary(record: dict) -> str:
    from experiments.lineage_bench import claims as bench

    return bench.summary_table(record)


def _table4a_paper(records: dict) -> str:
    from experiments.seedprint import docs as seedprint_docs

    return seedprint_docs.table4a_paper_scale_block(records.get("paper", {}))


def _test_rule(records: dict) -> str:
    from bornbiased_jax.fingerprint.runner import registry

    return registry.rule_markdown()


def _level_law(records: dict) -> str:
    from experiments.lineage import level_long_docs

    return level_long_docs.block(records)


# docs/seedprint.md's generated blocks made from other studies' records (its own are
# experiments.seedprint.docs.BLOCKS): name -> (experiment, block from its record), or (None,
# block from every record) for a block that says itself what is missing; and the rule of
# `--test auto` and the verdict, from the lineage tests' registry
DOC_BLOCKS = {"lineage-bench": ("lineage_bench", _bench_summary),
              "level-law": (None, _level_law),
              "table4a-paper": (None, _table4a_paper), "test-rule": (None, _test_rule)}
