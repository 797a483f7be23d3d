"""The slow tier's rule, checked on a run's own times (conftest.py, ``BORNBIASED_ENFORCE_SLOW=1``):
a test not marked slow that took the threshold or more is listed at the session's end and
fails the session, with or without xdist workers; a slow-marked one is not; unset, nothing is
checked. Run on a tiny test file in a subprocess, with the repository's conftest.py as a
plugin and a threshold of a quarter second."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = """
import time

import pytest


def test_quick():
    pass


def test_long():
    time.sleep(0.4)


@pytest.mark.slow
def test_long_but_slow():
    time.sleep(0.4)
"""


def _pytest(folder: Path, enforce: bool, *args) -> subprocess.CompletedProcess:
    (folder / "test_tiny.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items()
           if k not in ("BORNBIASED_ENFORCE_SLOW", "BORNBIASED_SLOW_SECONDS", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if enforce:
        env.update(BORNBIASED_ENFORCE_SLOW="1", BORNBIASED_SLOW_SECONDS="0.25")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q",
         "-o", "markers=slow: the slow tier", "--rootdir", str(folder), *args, str(folder)],
        capture_output=True, text=True, cwd=folder, env=env, timeout=300)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
def test_a_long_test_not_marked_slow_fails_the_session(tmp_path, workers):
    proc = _pytest(tmp_path, True, *workers)
    out = proc.stdout
    assert proc.returncode == 1, out[-2000:]
    assert "3 passed" in out and "slow tier" in out
    assert "test_tiny.py::test_long\n" in out
    assert "test_long_but_slow" not in out.split("slow tier")[1]
    assert "test_quick" not in out.split("slow tier")[1]


def test_unset_nothing_is_checked(tmp_path):
    proc = _pytest(tmp_path, False)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "3 passed" in proc.stdout and "slow tier" not in proc.stdout
