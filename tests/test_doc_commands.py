"""Every ``bornbiased ...`` command line that README.md and docs/*.md show parses with the real
parser, so a renamed or removed flag cannot leave a documented command stale. Which lines
count, how shell variables, continuations, comments and placeholders are read, and which forms
are skipped: ``tests/doc_commands.py``. Parsing imports no JAX (checked from a fresh
process)."""

import os
import subprocess
import sys

import pytest
from doc_commands import (DOCS, ROOT, CommandLine, completed, hidden_flags, in_docs,
                          in_markdown, unknown_flags)

from bornbiased_jax.cli import build_parser

COMMANDS = in_docs()


def test_the_docs_show_commands_of_every_kind():
    """The reader finds the command lines (so the test below checks something): code blocks,
    indented blocks and inline spans, in README.md and in docs/."""
    assert len(DOCS) >= 2 and any(p.parent.name == "docs" for p in DOCS)
    assert {c.argv[0] for c in COMMANDS} >= {"sweep", "train", "fingerprint", "sinks",
                                             "theory"}
    assert any(c.inline for c in COMMANDS) and any(not c.inline for c in COMMANDS)
    assert len([c for c in COMMANDS if not c.inline and len(c.argv) > 3]) >= 20
    assert {c.where.split(":")[0] for c in COMMANDS} >= {"README.md", "docs/multihost.md",
                                                         "docs/seedprint.md", "docs/sinks.md"}


@pytest.mark.parametrize("c", COMMANDS, ids=lambda c: f"{c.where} {' '.join(c.argv)[:60]}")
def test_documented_command_parses(c: CommandLine):
    if c.skipped:
        pytest.skip(f"{c.skipped}: {c.text}")
    parser = build_parser()
    assert not unknown_flags(parser, c), f"{c.where}: {c.text!r} names no such flag"
    assert not hidden_flags(parser, c), f"{c.where}: {c.text!r} uses a former flag name"
    try:
        parser.parse_args(completed(parser, c))
    except SystemExit as e:
        pytest.fail(f"{c.where}: `{c.text}` does not parse (exit {e.code})")


def test_only_elided_commands_are_skipped():
    skipped = [c for c in COMMANDS if c.skipped]
    assert all("..." in c.text for c in skipped)
    assert len(skipped) <= 2, [c.text for c in skipped]


def test_the_reader_handles_the_shell_forms_the_docs_use(tmp_path):
    """Continuations, comments (and '#' inside a word), quotes, variables, several commands on
    a line, launchers before the command, a command quoted whole, indented blocks, inline
    fragments, and Python blocks left alone."""
    md = tmp_path / "x.md"
    md.write_text(
        "```bash\n"
        "bornbiased train --corpus c \\\n    --out runs/a   # a comment\n"
        "bornbiased sinks \"$M\"; bornbiased fingerprint 'runs/s#42@0' runs/s#42\n"
        "for i in 0 1; do CUDA_VISIBLE_DEVICES=$i bornbiased sweep --process-id $i & done\n"
        "ssh host --command \"bornbiased theory --fast\"\n"
        "```\n\n"
        "```python\nos.system('bornbiased sweep --no-such-flag')\n```\n\n"
        "    bornbiased sweep --seeds 0:4     # indented\n\n"
        "Prose with `bornbiased train --seeds` and `bornbiased sinks --setting gu`.\n")
    found = [c for c in in_markdown(md)]
    assert [c.argv for c in found] == [
        ("train", "--corpus", "c", "--out", "runs/a"),
        ("sinks", "model.gguf"),
        ("fingerprint", "runs/s#42@0", "runs/s#42"),
        ("sweep", "--process-id", "0"),
        ("theory", "--fast"),
        ("sweep", "--seeds", "0:4"),
        ("train", "--seeds"),
        ("sinks", "--setting", "gu")]
    parser = build_parser()
    for c in found:
        parser.parse_args(completed(parser, c))
    assert completed(parser, found[-2])[1:] == ["--corpus", "PLACEHOLDER", "--out",
                                                "PLACEHOLDER"]
    assert completed(parser, found[-1])[:2] == ["sinks", "PLACEHOLDER"]


def test_a_stale_command_fails(tmp_path):
    """A flag that does not exist, an abbreviation, or a renamed flag's former spelling is
    caught."""
    md = tmp_path / "x.md"
    md.write_text("```bash\nbornbiased sweep --no-such-flag 3\nbornbiased sweep --seq 64\n"
                  "bornbiased sweep --strategy map\n```\n")
    stale, abbreviated, former = in_markdown(md)
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(completed(parser, stale))
    assert unknown_flags(parser, abbreviated) == ["--seq"]
    assert hidden_flags(parser, former) == ["--strategy"]


def test_parsing_the_docs_imports_no_jax():
    from test_cli_help import HEAVY, imported_packages

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(ROOT / "tests")]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "import doc_commands; print(doc_commands.parse_all())"],
                          capture_output=True, text=True, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.split()[-1]) >= 30
    packages = imported_packages(proc.stderr)
    assert "bornbiased_jax" in packages and not packages & HEAVY, sorted(packages & HEAVY)
