"""One name per idea across the ``bornbiased`` commands, and one idea per name.

:data:`IDEAS` maps each idea that several commands (or a command and its neighbours) share to
its one visible flag, the commands that have it, and the spellings it must not be shown under
(former spellings, kept as hidden aliases for a release, and the obvious variants). A list of
values takes the singular flag with several values (``--seq-len 64 256``), as ``--preset`` and
``--corpus`` do, so that the same idea keeps one name whether a command takes one value or
several.

Judged to be different ideas, so with different names on purpose:

  * ``--scale {cpu,paper}`` (sweep, fingerprint: how large a run, the same measurement) and
    ``sinks --setting {gu,paper}`` (whose protocol: it changes the threshold eps, so what is
    measured);
  * ``--memory-budget-gib`` (sweep, train: the share of a device a run plans for) and
    ``fingerprint --device-memory-gib`` (the device's size the plan assumes);
  * ``--probe-seed`` (the random probe inputs) and ``--data-seed`` (which corpus windows);
  * ``train --bf16`` (bfloat16 compute, float32 parameters) and ``fingerprint --dtype``
    (the parameters' dtype);
  * ``sinks --eps`` (the sink threshold) and fingerprint's hidden ``--matched-eps`` (a share of
    MLP units);
  * ``theory --fast`` (fewer replicates of one table) and ``--scale``;
  * ``theory --json FILE`` / ``--plots DIR`` (optional extra outputs) and ``--out DIR`` (the
    folder every other command writes).
"""

import argparse
import inspect
import re

import pytest

from bornbiased_jax.cli import build_parser
from bornbiased_jax.commands import fingerprint, presets, sinks, sweep, theory, train


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


COMMANDS = subparsers()
MODULES = {"sweep": sweep, "theory": theory, "train": train, "fingerprint": fingerprint,
           "sinks": sinks, "presets": presets}


def visible(p: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every flag that ``--help`` shows, by spelling."""
    return {s: a for a in p._actions if a.help is not argparse.SUPPRESS
            for s in a.option_strings}


def hidden(p: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in p._actions if a.help is argparse.SUPPRESS for s in a.option_strings}


# idea -> (its flag, the commands that show it, spellings no command may show for it)
IDEAS = {
    "how many sequences (random or text windows)":
        ("--num-seqs", {"sweep", "fingerprint", "sinks"},
         {"--n", "--num-sequences", "--n-seqs", "--sequences", "--num-seq"}),
    "sequence length T (one, or several measured apart)":
        ("--seq-len", {"sweep", "train", "fingerprint", "sinks"},
         {"--lengths", "--length", "--seq-lens", "--seq-length", "--T"}),
    "vocabulary of the BPE trained on the corpus when no tokenizer is given":
        ("--bpe-vocab", {"train", "sinks"}, {"--vocab-size", "--vocab", "--bpe-vocab-size"}),
    "per-device memory a run plans for (GiB)":
        ("--memory-budget-gib", {"sweep", "train"},
         {"--memory-budget", "--memory-budget-gb"}),
    "the device's memory size the plan assumes (GiB)":
        ("--device-memory-gib", {"fingerprint"}, {"--device-memory-gb", "--device-memory"}),
    "how large a run the defaults are for (cpu or paper)":
        ("--scale", {"sweep", "fingerprint"}, set()),
    "which sink protocol's defaults (gu or paper)":
        ("--setting", {"sinks"}, set()),
    "how seeds are batched": ("--seed-batching", {"sweep", "train"}, {"--strategy"}),
    "seeds at once": ("--seed-chunk", {"sweep", "train"}, {"--seed-group"}),
    "hide the progress bars":
        ("--no-progress", {"sweep", "train", "fingerprint", "sinks"},
         {"--quiet", "--progress", "--no-progress-bar"}),
    "seed of the random probe inputs": ("--probe-seed", {"sweep", "fingerprint"}, set()),
    "seed of the corpus windows": ("--data-seed", {"train", "sinks"}, set()),
    "model settings on top of a preset": ("--model-set", {"train", "sinks"}, set()),
    "the folder of a command's outputs": ("--out", {"sweep", "train", "fingerprint", "sinks"},
                                         {"--output", "--out-dir", "--output-dir"}),
    "the feature fingerprint compares": ("--feature", {"fingerprint"}, {"--output"}),
    "the calibrated test's statistic":
        ("--calibrated-statistic", {"fingerprint"}, {"--statistic"}),
    "MiB of corpus text read": ("--corpus-max-mb", {"train", "sinks"}, set()),
    "start over": ("--fresh", {"sweep", "fingerprint"}, {"--restart", "--overwrite"}),
}

# The former spellings, hidden and parsing to the same value as the new one:
# (command, old, new, value words)
ALIASES = [
    ("fingerprint", "--n", "--num-seqs", ["40"]),
    ("sinks", "--lengths", "--seq-len", ["16", "32"]),
    ("train", "--vocab-size", "--bpe-vocab", ["256"]),
    ("fingerprint", "--memory-budget-gib", "--device-memory-gib", ["80"]),
    ("fingerprint", "--statistic", "--calibrated-statistic", ["spearman_aligned"]),
    ("fingerprint", "--output", "--feature", ["logits"]),
    ("sweep", "--strategy", "--seed-batching", ["map"]),
    ("sweep", "--memory-budget-gb", "--memory-budget-gib", ["1.5"]),
    ("train", "--seed-group", "--seed-chunk", ["2"]),
    ("train", "--memory-budget", "--memory-budget-gib", ["3"]),
]
REQUIRED = {"sweep": [], "theory": [], "presets": [], "train": ["--corpus", "c", "--out", "o"],
            "fingerprint": ["a", "b"], "sinks": ["preset:llama2-tiny@0"]}
SHOWS_PROGRESS = {"sweep", "train", "fingerprint", "sinks"}  # commands that draw bars


@pytest.mark.parametrize("idea", sorted(IDEAS))
def test_one_name_per_idea(idea):
    """The idea's flag is shown by exactly the commands listed, and no command shows it under
    another spelling."""
    flag, commands, others = IDEAS[idea]
    have = {name for name, p in COMMANDS.items() if flag in visible(p)}
    assert have == commands, f"{flag} ({idea}) is shown by {sorted(have)}"
    for name, p in COMMANDS.items():
        shown = set(visible(p))
        if name in commands or flag not in shown:
            assert not shown & others, f"{name} shows {sorted(shown & others)} for {idea}"


def test_the_ideas_have_distinct_flags():
    flags = [flag for flag, _, _ in IDEAS.values()]
    assert len(flags) == len(set(flags))
    for flag, _, _ in IDEAS.values():  # no idea's flag is another's forbidden spelling
        assert not any(flag in others and f != flag for f, _, others in IDEAS.values()), flag


def test_a_shared_flag_has_one_shape():
    """A flag shown by several commands has the same metavar in each (one name, one idea):
    '--seq-len T', '--num-seqs N', '--memory-budget-gib GIB' wherever they appear."""
    by_flag: dict[str, dict[str, str]] = {}
    for name, p in COMMANDS.items():
        for flag, a in visible(p).items():
            by_flag.setdefault(flag, {})[name] = str(a.metavar)
    for flag, metavars in by_flag.items():
        assert len(set(metavars.values())) == 1, f"{flag}: {metavars}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_symbol_names_one_quantity_per_help_screen(name):
    """A one-letter metavar is a symbol the help reasons with ('K', 'T', 'P'), so within one
    command it names one flag; N, a plain count, is the exception."""
    seen: dict[str, str] = {}
    for a in COMMANDS[name]._actions:
        m = a.metavar
        if a.help is argparse.SUPPRESS or not (isinstance(m, str) and len(m) == 1) or m == "N":
            continue
        assert m not in seen, f"{name}: {m} names both {seen[m]} and {a.option_strings}"
        seen[m] = "/".join(a.option_strings) or a.dest


def test_fingerprint_counts_have_their_own_names():
    """The official test's k, the null initialisations, the permutations, the matched test's
    slack and the sequences: five different quantities, five names."""
    shown = visible(COMMANDS["fingerprint"])
    metavars = [shown[f].metavar for f in ("--k", "--null-models", "--permutations",
                                           "--matched-slack", "--num-seqs")]
    assert metavars == ["K", "INITS", "DRAWS", "UNITS", "N"]


@pytest.mark.parametrize("command,old,new,values", ALIASES,
                         ids=[f"{c} {o}" for c, o, _, _ in ALIASES])
def test_former_spelling_parses_to_the_same_value_and_is_hidden(command, old, new, values):
    p = COMMANDS[command]
    assert old in hidden(p) and old not in visible(p) and new in visible(p)
    assert hidden(p)[old].dest == visible(p)[new].dest
    old_args = build_parser().parse_args([command, *REQUIRED[command], old, *values])
    new_args = build_parser().parse_args([command, *REQUIRED[command], new, *values])
    dest = visible(p)[new].dest
    assert getattr(old_args, dest) == getattr(new_args, dest) is not None
    assert vars(old_args) == vars(new_args)
    assert not re.search(r"(?<![\w-])" + re.escape(old) + r"(?![\w-])", p.format_help())


@pytest.mark.parametrize("command,old,new,values", ALIASES[:6],
                         ids=[f"{c} {o}" for c, o, _, _ in ALIASES[:6]])
def test_former_spelling_refuses_bad_values_as_the_new_one_does(command, old, new, values,
                                                                capsys):
    """The alias keeps the new flag's type and choices: a bad value is an argparse error
    (exit 2) naming the flag as typed."""
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([command, *REQUIRED[command], old, "not-a-value"])
    assert e.value.code == 2 and old in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_with_progress_bars_has_no_progress(name):
    """A command that draws progress bars (its run passes ``progress=`` on) lets --no-progress
    hide them; one that draws none has no such flag (and its module never asks for bars)."""
    source = inspect.getsource(MODULES[name].run)
    if name in SHOWS_PROGRESS:
        a = visible(COMMANDS[name]).get("--no-progress")
        assert a is not None and a.dest == "no_progress" and "hide the progress bar" in a.help
        assert "progress=not args.no_progress" in source
    else:
        assert "--no-progress" not in visible(COMMANDS[name])
        assert "progress" not in inspect.getsource(MODULES[name])


def test_no_progress_parses_in_every_command_that_has_it():
    for name in sorted(SHOWS_PROGRESS):
        args = build_parser().parse_args([name, *REQUIRED[name], "--no-progress"])
        assert args.no_progress is True
