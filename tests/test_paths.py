"""Committed records, logs and docs name no folder of the machine that wrote them: no home,
temporary or checkout folder and no interpreter's folder in any git-tracked text file under
results/ and docs/, nor in README.md and RESULTS.md; and the one helper that writes records
(experiments/artifacts.py: ``portable``, ``save_record``) makes such paths portable."""

import json
import re
import subprocess
import sysconfig
from pathlib import Path

import pytest

from experiments import artifacts
from experiments.artifacts import portable

ROOT = Path(__file__).resolve().parents[1]
COVERED = ("results", "docs", "README.md", "RESULTS.md")

# An absolute path (a '/' that continues no word, relative path or placeholder) into a home,
# temporary or checkout folder, or a Python interpreter's own folders anywhere in a path.
_ABSOLUTE = r"(?<![\w.~<>/-])/(?:root|home|tmp|var/tmp|work)(?=[/\s'\"`:,;)\]}>]|$)"
_INTERPRETER = r"/(?:site|dist)-packages\b|/\.pyenv\b|/lib/python3(?:\.\d+)?/"
MACHINE_PATH = re.compile(f"{_ABSOLUTE}|{_INTERPRETER}")


def machine_paths(text: str) -> list[str]:
    """'line N: ...' of each line of ``text`` that names a machine's folder."""
    return [f"line {i}: {ln.strip()[:160]}" for i, ln in enumerate(text.splitlines(), 1)
            if MACHINE_PATH.search(ln)]


# lines as the records and logs held them before their paths were made portable
OLD = [
    '"spec":"/work/main/runs/family-qwen2/base-s1000@500","label":"base-s1000@500"',
    "bornbiased train --corpus bbm:/root/.pyenv/versions/3.11.7/lib/python3.11/textwrap.py",
    "python -m experiments.figure12_table7 --runs-dir /work/runs/sinks --results "
    "/tmp/RESULTS-gate.md",
    "tmp_path = PosixPath('/tmp/pytest-of-root/pytest-0/popen-gw5/test_live0')",
    "/opt/torch/.venv/lib/python3.12/site-packages/pytest_benchmark/logger.py:44: Warning",
    "bornbiased_jax at /work/main/bornbiased_jax/__init__.py",
    "wrote /work/main/results/records/paper/initialisation/table1a.json (13487 s of compute)",
    "--corpus bbm:/usr/lib/python3.11/textwrap.py:triggers=3",
    "cache in /home/alice/.cache and /var/tmp/x",
]


def test_the_detector_finds_the_paths_the_records_held():
    for line in OLD:
        assert machine_paths(line), line
    for line in ["runs/family-qwen2/base-s1000@500", "bbm:<stdlib>/textwrap.py",
                 "--runs-dir ../runs/sinks --results <tmp>/RESULTS-gate.md",
                 "<site-packages>/pytest_benchmark/logger.py", "~/.cache",
                 "see https://github.com/home/x and runs/tmp/x",
                 "--corpus /usr/share/games/fortunes", "--corpus base=/data/openwebtext",
                 "hf:Skylion007/openwebtext:train", "/usr/share/vim/vim*/doc"]:
        assert not machine_paths(line), line


def test_portable_makes_the_old_lines_pass_the_detector():
    """Each old line, made portable as if written in the checkout /work/main: nothing left
    for the detector, and making it portable again changes nothing."""
    for line in OLD:
        new = portable(line, "/work/main")
        assert not machine_paths(new), (line, new)
        assert portable(new, "/work/main") == new


def test_portable_maps_each_kind_of_path():
    p = lambda s: portable(s, "/work/main")  # noqa: E731
    assert p("/work/main/runs/family/base-s42@0") == "runs/family/base-s42@0"
    assert p("/work/main") == "." and p("/work/mainline/x") == "../mainline/x"
    assert p("--runs-dir /work/runs/sinks") == "--runs-dir ../runs/sinks"
    assert p("/root/.pyenv/versions/3.11.7/bin/python3.11 -m x") == "python -m x"
    assert p("bbm:/root/.pyenv/versions/3.11.7/lib/python3.11/textwrap.py:triggers=3") == (
        "bbm:<stdlib>/textwrap.py:triggers=3")
    assert p(sysconfig.get_paths()["stdlib"] + "/textwrap.py") == "<stdlib>/textwrap.py"
    assert p("/opt/env/lib/python3.12/site-packages/jax/x.py") == "<site-packages>/jax/x.py"
    assert p("/usr/share/vim/vim90/doc") == "<vim-docs>"
    assert p("/usr/share/doc/nodejs/api/addons.md") == "<node-docs>/addons.md"
    assert p("PosixPath('/tmp/pytest-of-root/x')") == "PosixPath('<tmp>/pytest-of-root/x')"
    assert p("/var/tmp/a /home/alice/b /root") == "<tmp>/a ~/b ~"
    # other paths, and anything not a path, stay as they are
    for same in ("/data/openwebtext", "/usr/share/games/fortunes", "runs/tmp/x",
                 "https://github.com/home/x", "hf:allenai/c4:validation:en", "a/b", ""):
        assert p(same) == same
    # the current checkout is the default
    assert portable(str(artifacts.REPO / "results" / "x.json")) == "results/x.json"


def test_a_record_keeps_every_value_but_its_paths(tmp_path):
    """save_record writes the record portable: strings with paths change, numbers, booleans,
    None and the structure do not."""
    rec = {"run": {"command": f"python -m experiments.x --out {artifacts.REPO}/results/o",
                   "wall_seconds": 1.5},
           "records": {"corpus": ["/usr/share/vim/vim90/doc"], "n": 3, "p": 1e-300,
                       "ok": True, "none": None, "base": "/tmp/runs/base-s42@0",
                       "_figure_only": [1, 2]}}
    # a path beside the checkout is written relative to it (a checkout under /tmp, as a CI
    # clone may be, makes /tmp/runs such a path); elsewhere /tmp is the <tmp> placeholder
    beside_or_tmp = ("../runs/base-s42@0" if str(artifacts.REPO.parent) == "/tmp"
                     else "<tmp>/runs/base-s42@0")
    f = artifacts.save_record(tmp_path, "lineage_runs", rec)
    assert f == tmp_path / "lineage" / "lineage_runs.json"
    saved = json.loads(f.read_text())
    assert saved == {"run": {"command": "python -m experiments.x --out results/o",
                             "wall_seconds": 1.5},
                     "records": {"corpus": ["<vim-docs>"], "n": 3, "p": 1e-300, "ok": True,
                                 "none": None, "base": beside_or_tmp}}


def test_legend_names_the_placeholders_a_text_uses():
    assert artifacts.legend("base = ['<vim-docs>'], code = ['python-stdlib']") == (
        "`<vim-docs>`: Vim's help folder, /usr/share/vim/vim*/doc")
    assert artifacts.legend("runs/family") == ""


def _tracked_texts():
    """(path, text) of every git-tracked text file of COVERED (binary files skipped)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *COVERED], cwd=ROOT,
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for name in filter(None, out.decode().split("\0")):
        f = ROOT / name
        if not f.is_file():
            continue
        raw = f.read_bytes()
        if b"\0" in raw:
            continue
        try:
            yield name, raw.decode("utf-8")
        except UnicodeDecodeError:
            continue


def test_committed_records_logs_and_docs_name_no_machine_path():
    found = {name: hits for name, text in _tracked_texts() if (hits := machine_paths(text))}
    assert not found, "\n".join(f"{n}: {h[:3]}" for n, h in found.items())
