"""``python -m experiments``: one entry point that lists every study (its sections and the
command measuring each) and every command, and runs ``python -m experiments NAME [ARGS]`` as
``python -m experiments.NAME [ARGS]``, which keeps working. Run as subprocesses: tests never
import the command lines (tests/test_import_graph.py)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import STUDIES

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}

# In one process: every command's --help through the entry point, its exit status and whether it
# printed a usage line (the commands are found by the entry point itself).
HELP_OF_EACH = """
import contextlib, io, json, runpy, sys
names = runpy.run_module("experiments.__main__")["commands"]()
out = {}
for name in names:
    text = io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
            sys.argv = ["python -m experiments", name, "--help"]
            runpy.run_module("experiments", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code or 0
    out[name] = [code, "usage:" in text.getvalue()]
print(json.dumps(out))
"""


def _run(*args, code=None) -> subprocess.CompletedProcess:
    argv = [sys.executable, *(["-c", code] if code else ["-m", *args])]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)


@pytest.fixture(scope="module")
def listing() -> str:
    proc = _run("experiments", "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _commands(listing: str) -> list[str]:
    block = listing.split("\nCommands:\n", 1)[1]
    return re.findall(r"^  (\S+)", block, re.M)


def test_the_listing_names_every_study_its_sections_and_their_commands(listing):
    assert listing == _run("experiments").stdout  # no arguments: the same listing
    for study in STUDIES:
        assert re.search(rf"^  {study.name}$", listing, re.M), study.name
        for s in study.sections:
            assert re.search(rf"^      {s.name} +{re.escape(s.command or 'read from the GPU')}",
                             listing, re.M), s.name


def test_the_listing_names_every_command_and_each_study_command_is_one(listing):
    names = _commands(listing)
    scripts = {p.stem for p in (ROOT / "experiments").glob("*.py")
               if "__name__ == \"__main__\"" in p.read_text()} - {"__main__"}
    mains = {p.parent.name for p in (ROOT / "experiments").glob("*/__main__.py")}
    assert scripts | mains <= set(names)
    assert "initialisation.unembedding_null" in names and "render" not in names
    for study in STUDIES:
        for s in study.sections:
            m = re.match(r"python -m experiments\.(\S+)", s.command or "")
            assert m is None or m.group(1) in names, s.command


def test_every_command_answers_help_through_the_entry_point(listing):
    proc = _run(code=HELP_OF_EACH)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answers = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(answers) == sorted(_commands(listing))
    failed = {name: a for name, a in answers.items() if a != [0, True]}
    assert not failed, failed


def test_old_module_names_and_the_entry_point_run_the_same_command():
    old = _run("experiments.lineage_level", "--help")
    new = _run("experiments", "lineage_level", "--help")
    assert old.returncode == new.returncode == 0, (old.stderr[-1000:], new.stderr[-1000:])
    assert old.stdout == new.stdout and "usage: python -m experiments.lineage_level" in old.stdout


def test_an_unknown_name_is_refused_with_what_measures_a_study():
    proc = _run("experiments", "sinks")
    assert proc.returncode == 2
    assert "no command 'sinks'" in proc.stderr
    assert "python -m experiments.figure12_table7" in proc.stderr
    assert _run("experiments", "render").returncode == 2  # a module, not a command
