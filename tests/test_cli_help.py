"""``bornbiased --help`` and every subcommand's ``--help`` build their parsers without importing
JAX, SciPy, Matplotlib, Orbax or Flax: only a command that runs imports what it needs. Checked
from Python's own import log (``-X importtime``), not by timing."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {"jax", "jaxlib", "scipy", "matplotlib", "orbax", "flax", "optax"}


def imported_packages(stderr: str) -> set[str]:
    """Top-level packages named in ``-X importtime``'s log ('import time: self | cumulative |
    name', the name indented by nesting depth)."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":  # the log's header row
                names.add(name.split(".")[0])
    return names


@pytest.mark.parametrize("command", [[], ["sweep"], ["theory"], ["train"], ["fingerprint"],
                                     ["sinks"]])
def test_help_imports_nothing_heavy(command):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "bornbiased_jax.cli",
                           *command, "--help"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"usage: bornbiased {' '.join(command)}".rstrip())
    packages = imported_packages(proc.stderr)
    assert "bornbiased_jax" in packages  # the log was read: the CLI itself is in it
    assert not packages & HEAVY, f"--help imported {sorted(packages & HEAVY)}"


def test_import_log_is_read():
    """The check above can fail: a command that imports JAX shows it in the same log."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import jax.numpy"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and {"jax", "jaxlib"} <= imported_packages(proc.stderr)


def test_rendering_results_imports_no_jax():
    """RESULTS.md is rendered from saved records: a pure function of JSON, so rendering the
    committed records (every study's verdict rules and sections) loads no JAX, Flax, Orbax,
    optax or Matplotlib."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    render = ("from experiments import render; "
              "render.render(render.load_records(render.RECORDS), render.GPU_ROOT)")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", render],
                          capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    packages = imported_packages(proc.stderr)
    assert "bornbiased_jax" in packages
    heavy = packages & {"jax", "jaxlib", "flax", "orbax", "optax", "matplotlib"}
    assert not heavy, f"rendering imported {sorted(heavy)}"
