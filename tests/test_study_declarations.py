"""Each study package declares itself once (``experiments/<package>/study.py``: its experiments,
its RESULTS.md sections with their titles, commands and builders), ``experiments.STUDIES`` lists
every declaration, and the renderer and the records' folders follow from them."""

import importlib
import re
from pathlib import Path

from experiments import EXPERIMENTS, STUDIES, STUDY_OF, render
from experiments.common.study import Outputs, Section, Study

ROOT = Path(__file__).resolve().parents[1]


def _declared_in_packages() -> list[Study]:
    found = []
    for f in sorted((ROOT / "experiments").glob("*/study.py")):
        if f.parent.name == "common":
            continue
        module = importlib.import_module(f"experiments.{f.parent.name}.study")
        found += [v for v in vars(module).values() if isinstance(v, Study)]
    return found


def test_every_study_package_declares_its_study_and_every_declaration_is_listed():
    packages = {p.parent.name for p in (ROOT / "experiments").glob("*/__init__.py")}
    with_study = {p.parent.name for p in (ROOT / "experiments").glob("*/study.py")}
    # experiments/common/study.py is the declaration's type, not a study
    assert packages - {"common"} == with_study - {"common"}
    declared = _declared_in_packages()
    assert sorted(s.name for s in declared) == sorted(s.name for s in STUDIES)
    assert all(any(s is d for d in declared) for s in STUDIES)


def test_sections_are_results_mds_in_order_with_unique_names():
    names = [s.name for s in render.sections_of_studies()]
    assert len(names) == len(set(names))
    text = (ROOT / "RESULTS.md").read_text()
    assert re.findall(r"<!-- ([\w-]+):begin -->", text) == names
    for section in render.sections_of_studies():
        assert section.title and callable(section.build)
        assert section.command is None or re.match(r"(python -m experiments\.|bornbiased )",
                                                   section.command), section.command


def test_each_record_belongs_to_one_study_and_its_records_folder():
    every = [n for s in STUDIES for n in s.records]
    assert len(every) == len(set(every)) == len(STUDY_OF)
    assert EXPERIMENTS == {s.name: list(s.records) for s in STUDIES if s.records}
    names = [e.name for s in STUDIES for e in s.experiments]
    assert len(names) == len(set(names))  # python -m experiments NAME: one experiment
    # every committed record of a study's folder is one of its experiments (training/ holds the
    # seed family's run record, paper/ the paper-scale records; a tokenizer sits beside one)
    for folder in (ROOT / "results" / "records").iterdir():
        if folder.name in ("paper", "training"):
            continue
        for f in folder.glob("*.json"):
            if not f.name.endswith(".tokenizer.json"):
                assert STUDY_OF.get(f.stem) == folder.name, f


def test_the_lineage_declaration_reads_every_record_its_sections_need():
    from experiments.lineage import claims
    from experiments.lineage.study import STUDY

    needed = (claims.EXPERIMENTS + claims.HFINIT_EXPERIMENTS + claims.QWEN2_EXPERIMENTS
              + claims.QWEN2_HFINIT_EXPERIMENTS)
    assert sorted(needed) == sorted(STUDY.records)


def test_a_section_without_records_names_its_title_and_command(tmp_path):
    section = Section("x", "A title", lambda records, outputs: None, "python -m experiments.x")
    assert render.missing_section(section) == ("## A title\n\nNot measured yet: "
                                              "`python -m experiments.x` measures it (its "
                                              "records go to results/records/).")
    gpu = Section("y", "On a GPU", lambda records, outputs: None)
    assert render.missing_section(gpu, tmp_path).endswith(f"its outputs under {tmp_path}/ are "
                                                          "absent.")
    campaign = next(s for s in STUDIES if s.name == "campaign")
    assert campaign.section("gpu").build({}, Outputs(tmp_path, tmp_path)) is None
