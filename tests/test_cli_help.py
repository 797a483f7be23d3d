"""``bornbiased --help`` and every subcommand's ``--help`` build their parsers without importing
JAX, SciPy, Matplotlib, Orbax or Flax: only a command that runs imports what it needs. Checked
from Python's own import log (``-X importtime``), not by timing.

The help itself: every flag of every command says what it does (a hidden alias of a renamed
flag excepted), defaults read as values, the precision and multi-process flags sit in their own
groups, a model argument is a SOURCE, the train flags' help is TrainConfig's field docs, the
renamed flags' old spellings still parse to the same settings, and every example that a
``--help`` shows parses."""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bornbiased_jax.cli import build_parser

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
                                     ["sinks"], ["presets"]])
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


def test_presets_command_imports_nothing_heavy():
    """`bornbiased presets` prints the table from presets.PRESETS alone."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "bornbiased_jax.cli",
                           "presets"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from bornbiased_jax.presets import PRESETS

    lines = proc.stdout.splitlines()
    assert lines[0].split()[:4] == ["preset", "family", "size", "d_model"]
    assert sorted(line.split()[0] for line in lines[1:]) == sorted(PRESETS)
    assert not imported_packages(proc.stderr) & HEAVY


# --- the help text ----------------------------------------------------------------------------
def subparsers(parser=None) -> dict[str, argparse.ArgumentParser]:
    parser = parser or build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


COMMANDS = subparsers()


def test_the_commands_are_the_ones_documented():
    assert set(COMMANDS) == {"sweep", "theory", "train", "fingerprint", "sinks", "presets"}


# A hidden former spelling in other units than its successor's, so with its own destination
OWN_UNITS = {("fingerprint", "--device-memory-gb"): "--device-memory-gib",
             ("fingerprint", "--matched-eps"): "--matched-slack"}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_flag_has_help(name):
    """A sentence for every argument; SUPPRESS-ed help only for a hidden alias, which shares
    its destination with a documented flag (or is a former spelling in OWN_UNITS)."""
    p = COMMANDS[name]
    shown = {a.dest for a in p._actions if a.help is not argparse.SUPPRESS}
    flags = {s for a in p._actions if a.help is not argparse.SUPPRESS for s in a.option_strings}
    for a in p._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        what = "/".join(a.option_strings) or a.metavar or a.dest
        if a.help is argparse.SUPPRESS:
            successor = OWN_UNITS.get((name, what))
            assert a.dest in shown or successor in flags, (
                f"{name} {what}: hidden, and not an alias of a shown flag")
            continue
        text = (a.help or "").strip()
        assert len(text.split()) >= 3, f"{name} {what}: no help ({text!r})"
        assert not re.fullmatch(r"\(?default[: ].*", text), f"{name} {what}: only a default"


@pytest.mark.parametrize("name", ["", *sorted(COMMANDS)])
def test_help_shows_defaults_as_values(name):
    """No Python reprs in --help: no dict ("{'presets': ...}"), list ("[0, 1]"), tuple or
    Path repr, and the defaults appear as typed ("(default: 0,1,2; ...").""" 
    text = (COMMANDS[name] if name else build_parser()).format_help()
    assert "{'" not in text and "PosixPath" not in text
    assert not re.search(r"default: ?[\[(]", text), re.search(r"default: ?[\[(].*", text)
    assert "default: None" not in text and "default: False" not in text
    if name == "sweep":
        assert "(default: 0,1,2; with --scale paper: 42,43)" in " ".join(text.split())
        assert "(default: results/sweep)" in text


def test_sweep_names_the_presets_and_the_presets_command():
    from bornbiased_jax.presets import PRESETS

    text = " ".join(COMMANDS["sweep"].format_help().split())
    assert "bornbiased presets" in text
    for name in PRESETS:
        family, _, size = name.rpartition("-")
        assert name in text or (family in text and size in text), name


def groups(p) -> dict[str, list[str]]:
    return {g.title: [s for a in g._group_actions for s in a.option_strings]
            for g in p._action_groups}


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"presets"}))
def test_precision_and_processes_have_their_own_groups(name):
    g = groups(COMMANDS[name])
    assert "--matmul-precision" in g["precision"]
    assert all("--matmul-precision" not in v for k, v in g.items() if k != "precision")
    if name in ("sweep", "train", "fingerprint"):
        assert g["multi-process runs"] == ["--coordinator", "--num-processes", "--process-id",
                                           "--init-timeout"]
    if name == "fingerprint":
        assert "--dtype" in g["precision"]
    if name == "train":
        assert "--bf16" in g["precision"]
    if name == "sweep":
        assert {"--seed-batching", "--seed-chunk", "--seq-chunk", "--seq-batch",
                "--memory-budget-gib"} <= set(g["sweep engine"])


def test_the_precision_text_is_written_once():
    """The long explanation lives in add_precision_argument (and precision.py), not in the
    commands' modules."""
    root = ROOT / "bornbiased_jax" / "commands"
    hits = [f.name for f in root.glob("*.py") if "multi-pass" in f.read_text()]
    assert hits == ["arguments.py"]


def test_model_arguments_are_sources():
    """The metavar of a model argument is SOURCE; fingerprint's BASE and SUSPECT are roles,
    and their help says each is a model source."""
    def action(p, dest):
        return next(a for a in p._actions if a.dest == dest)

    assert action(COMMANDS["sweep"], "model").metavar == "SOURCE"
    assert action(COMMANDS["sinks"], "model").metavar == "SOURCE"
    assert action(COMMANDS["train"], "init_from").metavar == "SOURCE"
    for dest in ("base", "suspects"):
        assert "a model source" in action(COMMANDS["fingerprint"], dest).help
    metavars = {a.metavar for p in COMMANDS.values() for a in p._actions}
    assert not metavars & {"SPEC", "MODEL"}


def test_train_help_is_the_config_field_docs():
    """Every TrainConfig field with a flag has that field's doc as its help, written once."""
    from bornbiased_jax.training.config import NO_FLAG, TrainConfig, field_help

    p = COMMANDS["train"]
    by_dest = {a.dest: a for a in p._actions if a.help is not argparse.SUPPRESS}
    for f in TrainConfig.__dataclass_fields__:
        assert field_help(f).strip(), f
        if f in NO_FLAG:
            continue
        assert by_dest[f].help == field_help(f), f
        default = TrainConfig.__dataclass_fields__[f].default
        if isinstance(by_dest[f], argparse._StoreAction) and by_dest[f].nargs is None:
            assert by_dest[f].default == default, f
    assert "initialisation seed" in by_dest["seed"].help


# The renamed flags: (command, old spelling, value, new destination, what it parses to)
ALIASES = [
    ("sweep", "--strategy", "map", "seed_batching", "map"),
    ("sweep", "--memory-budget-gb", "1.5", "memory_budget_gib", 1.5),
    ("train", "--seed-group", "2", "seed_chunk", 2),
    ("train", "--memory-budget", "3", "memory_budget_gib", 3.0),
    ("fingerprint", "--device-memory-gb", "80", "device_memory_gb", 80.0),
    ("fingerprint", "--memory-budget-gib", "80", "device_memory_gib", 80.0),
]
REQUIRED = {"sweep": [], "train": ["--corpus", "c", "--out", "o"], "fingerprint": ["a", "b"]}


@pytest.mark.parametrize("command,old,value,dest,parsed", ALIASES)
def test_old_flag_names_still_parse_and_are_hidden(command, old, value, dest, parsed):
    args = build_parser().parse_args([command, *REQUIRED[command], old, value])
    assert getattr(args, dest) == parsed
    assert not re.search(re.escape(old) + r"(?![\w-])", COMMANDS[command].format_help())


@pytest.mark.parametrize("command", ["sweep", "train"])
def test_one_memory_budget_flag_and_one_seed_batching_pair(command):
    args = build_parser().parse_args([command, *REQUIRED[command], "--memory-budget-gib", "2"])
    assert args.memory_budget_gib == 2.0
    args = build_parser().parse_args([command, *REQUIRED[command], "--seed-chunk", "4",
                                      "--seed-batching", "vmap"])
    assert (args.seed_chunk, args.seed_batching) == (4, "vmap")


def test_fingerprint_plans_for_a_device_size_not_a_budget():
    """fingerprint's memory flag is the device's size (--device-memory-gib), another idea than
    sweep's and train's budget; its former spelling --memory-budget-gib still parses to it."""
    help_text = COMMANDS["fingerprint"].format_help()
    assert "--device-memory-gib" in help_text and "--memory-budget-gib" not in help_text
    args = build_parser().parse_args(["fingerprint", "a", "b", "--device-memory-gib", "2"])
    assert args.device_memory_gib == 2.0


def test_fingerprint_memory_flags_keep_their_units():
    """--device-memory-gib is GiB (2**30 bytes); the former --device-memory-gb was GB (10**9)
    and still is; both at once is refused."""
    from bornbiased_jax.commands.fingerprint import planned_device
    from bornbiased_jax.errors import UserError

    assert planned_device(None, None) is None
    assert planned_device(80.0)[1] == 80 * 2**30
    assert planned_device(None, 80.0)[1] == 80 * 10**9
    assert "GiB" in planned_device(80.0)[0] and "GB" in planned_device(None, 80.0)[0]
    with pytest.raises(UserError, match="--device-memory-gib"):
        planned_device(80.0, 80.0)


def test_help_examples_parse():
    """The examples at the end of every --help are commands the parser takes."""
    from doc_commands import in_epilogs, parse

    examples = in_epilogs()
    assert {c.argv[0] for c in examples} >= set(COMMANDS)
    for c in examples:
        parse(c)
