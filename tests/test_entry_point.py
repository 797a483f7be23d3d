"""``python -m experiments``: one entry point that looks NAME up in the studies' tables of
experiments (``Study.experiments``), lists every study with its sections and experiments in one
shape, and runs the former module paths (``python -m experiments.table4b``) through the one
table of old names (experiments/common/names.py). Every experiment's ``--help`` and every old
name's are parsed in one process; a few run as real subprocesses, as a user types them."""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import STUDIES
from experiments.common import names

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}

# In one process: every experiment's --help through the entry point (NAME --help), then every
# former module path's, as ``python -m experiments.OLD --help`` runs it (runpy finds the old
# name through the names table); each one's exit status, whether it printed a usage line and
# that line's first words.
HELP_OF_EACH = """
import contextlib, io, json, runpy, sys
from experiments import STUDIES
from experiments.common import names
from experiments.__main__ import main

def answer(run):
    text = io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
            code = run() or 0
    except SystemExit as e:
        code = e.code or 0
    usage = next((l for l in text.getvalue().splitlines() if l.startswith("usage:")), "")
    return [code, " ".join(usage.split()[:5])]

out = {"new": {}, "old": {}}
for study in STUDIES:
    for e in study.experiments:
        out["new"][e.name] = answer(lambda: main([e.name, "--help"]))
for old in names.OLD:
    def run_old():
        sys.argv = [old, "--help"]
        runpy.run_module("experiments." + old, run_name="__main__", alter_sys=True)
    out["old"][old] = answer(run_old)
print(json.dumps(out))
"""


def _run(*args, code=None) -> subprocess.CompletedProcess:
    argv = [sys.executable, *(["-c", code] if code else ["-m", *args])]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=600)


@pytest.fixture(scope="module")
def helps() -> dict:
    proc = _run(code=HELP_OF_EACH)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_experiment_of_every_study_answers_help(helps):
    every = [e.name for s in STUDIES for e in s.experiments]
    assert len(every) == len(set(every))  # a name is one experiment, whatever its study
    assert sorted(helps["new"]) == sorted(every)
    failed = {n: a for n, a in helps["new"].items()
              if a != [0, f"usage: python -m experiments {n}"]}
    assert not failed, failed


def test_every_former_module_path_runs_the_experiment_it_became(helps):
    """Each old name of the table answers --help as the experiment it became (with that
    experiment's usage line), and each new command it names is an experiment of a study."""
    experiments = {e.name for s in STUDIES for e in s.experiments}
    for old, new in names.OLD.items():
        assert names.new_command(old)[0] in experiments, (old, new)
    failed = {old: a for old, a in helps["old"].items()
              if a != [0, f"usage: python -m experiments {names.new_command(old)[0]}"]}
    assert not failed, failed
    assert sorted(helps["old"]) == sorted(names.OLD)


def test_the_table_covers_every_former_command():
    """The commands that were files or study packages' __main__ before the move, each in the
    table (the top-level scripts, the study packages' drivers, the one dotted command)."""
    former = {"figure1", "figure10", "figure11", "figure12_table7", "figure13",
              "figure2_finding22", "figure3_null", "figure4", "figure5", "figure6", "figure7",
              "figure8", "figure9", "lineage_level", "lineage_level_long", "paper_scale",
              "run_all", "seed_family", "seedprint_calibration", "seedprint_confound",
              "seedprint_matched", "seedprint_power", "seedprint_results", "seedprint_trained",
              "sinks_arms", "sinks_init", "sinks_regime", "table1", "table2_figure3", "table3",
              "table4a", "table4b", "table4c", "table5", "campaign", "gemma3", "lineage",
              "lineage_bench", "real_model", "initialisation.unembedding_null"}
    assert former <= set(names.OLD)
    # none of them is a file any more: the names table is the one place that knows them
    assert sorted(p.name for p in (ROOT / "experiments").glob("*.py")) == [
        "__init__.py", "__main__.py", "artifacts.py", "render.py"]
    assert not list((ROOT / "experiments").glob("*/__main__.py"))


def test_the_listing_names_every_study_its_sections_and_experiments():
    proc = _run("experiments", "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    listing = proc.stdout
    assert listing == _run("experiments").stdout  # no arguments: the same listing
    for study in STUDIES:
        sections = ", ".join(s.name for s in study.sections)
        assert f"\n  {study.name} (sections: {sections})\n" in listing, study.name
        for e in study.experiments:
            assert re.search(rf"^    {e.name} +(cpu|paper): ", listing, re.M), e.name


def test_an_old_module_path_and_the_entry_point_run_the_same_command():
    """Real subprocesses, as a user types them: the old path, the entry point with the old
    name, and the new name give the same usage; the old path says what it now is."""
    old = _run("experiments.table4b", "--help")
    via = _run("experiments", "table4b", "--help")
    new = _run("experiments", "lineage", "--help")
    assert old.returncode == via.returncode == new.returncode == 0, old.stderr[-1000:]
    assert old.stdout == via.stdout == new.stdout
    assert new.stdout.startswith("usage: python -m experiments lineage")
    assert "`python -m experiments lineage --only table4b --no-train`" in old.stderr
    lineage = _run("experiments.lineage", "--help")  # a former study package's __main__
    assert lineage.returncode == 0 and lineage.stdout == new.stdout


def test_an_unknown_name_is_refused_with_a_studys_experiments():
    proc = _run("experiments", "sinks")
    assert proc.returncode == 2
    assert "no experiment 'sinks'" in proc.stderr
    assert "figure12_table7, sinks_init, sinks_regime, sinks_arms" in proc.stderr
    assert _run("experiments", "render").returncode == 2  # a module, not an experiment


def test_an_experiment_runs_its_entry_on_its_arguments(monkeypatch):
    """NAME ARGS calls the experiment's entry with ARGS, in this process; an entry is a
    function or its 'module:function' path; its return is the exit status."""
    from experiments.__main__ import main
    from experiments.common.study import Experiment, Study

    seen = []
    study = Study("s", (Experiment("one", lambda argv: seen.append(argv)),
                        Experiment("two", "os.path:basename", cpu="two --x")), ())
    monkeypatch.setattr("experiments.STUDIES", (*STUDIES, study))
    assert main(["one", "--a", "b"]) == 0 and seen == [["--a", "b"]]
    assert study.experiment("two").entry() is os.path.basename
    assert study.records == ("one", "two")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--help"]) == 0
    assert "    two                    cpu: two --x" in out.getvalue()


def test_settings_defined_elsewhere_are_read_when_asked():
    """An experiment's settings held by its module are read from it only when asked
    (declaring the studies imports no measurement)."""
    from experiments.initialisation import table1
    from experiments.initialisation.study import STUDY

    e = STUDY.experiment("table1")
    assert callable(e.cpu) and e.settings("cpu") == table1.CPU
    assert e.settings("paper") == table1.PAPER
    proc = _run(code="import sys, experiments; print(sorted(m for m in sys.modules "
                     "if m.startswith('experiments.initialisation.')))")
    assert json.loads(proc.stdout.replace("'", '"')) == ["experiments.initialisation.study"]
