"""The ``bornbiased ...`` command lines that README.md, docs/*.md and every ``--help`` epilog
show, as argument lists for the real parser (``bornbiased_jax.cli.build_parser``).

Which forms count as command lines:

  * in fenced code blocks (any language but Python), every ``bornbiased COMMAND`` after a
    shell word boundary: at the start of a line, after ``;``, ``&``, ``&&``, ``|``, ``||``, or
    after a launcher's words (``srun ...``, ``VAR=value``, ``do``); and one quoted whole, as
    in ``--command "bornbiased train ..."``;
  * in indented code blocks, lines that begin with ``bornbiased COMMAND``;
  * inline code spans that begin with ``bornbiased COMMAND``.

How they are made parseable:

  * ``\\`` line continuations are joined, and ``# comments`` (a ``#`` that starts a word,
    outside quotes, as the shell reads it) are dropped; ``runs/s#42`` keeps its ``#``;
  * shell variables are replaced by simple values (:data:`SUBSTITUTIONS`); an unknown one
    fails the test, naming it, so that a new variable gets a value here;
  * placeholders such as ``PATH``, ``BASE``, ``SUSPECT`` or ``SPEC`` parse as they stand (the
    parser checks flags and the shape of the arguments, not whether a file exists);
  * an inline span is a fragment of prose: the arguments a command requires that it leaves
    out (``--corpus``, ``--out``, the model source) are supplied, so a span that is only a
    command's name (``bornbiased train``) checks the name; a span that ends in a flag without
    its value (``bornbiased train --seeds``) names the flag, which is checked to exist;
  * ``--help`` / ``-h`` is dropped (it would print and exit) and the rest parsed;
  * every ``--flag`` must be spelled out in full (argparse would accept an abbreviation).

Skipped (:attr:`CommandLine.skipped` says so, and the test lists them): a command line with
``...`` in it, an elided command such as ``--command "bornbiased train --fsdp ..."``.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# the shell variables the docs use
SUBSTITUTIONS = {"$M": "model.gguf", "$G": "gemma.gguf", "$i": "0", "$STDLIB": "/usr/lib/python3.11"}
OPERATORS = {";", "&", "&&", "|", "||"}


@dataclasses.dataclass(frozen=True)
class CommandLine:
    where: str  # "README.md:49"
    text: str  # as written, continuations joined
    argv: tuple[str, ...]  # after "bornbiased"
    inline: bool  # an inline code span (a fragment of prose)

    @property
    def skipped(self) -> str | None:
        """Why the line is not parsed, or None."""
        return "elided (...)" if any("..." in a for a in self.argv) else None


def strip_comment(line: str) -> str:
    """``line`` without its shell comment: from a ``#`` that begins a word, outside quotes."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def split_words(line: str) -> list[str]:
    """Shell words of one logical line, operators (;, &, &&, |, ||) as words of their own."""
    lex = shlex.shlex(strip_comment(line), posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    lex.commenters = ""
    return list(lex)


def substitute(word: str, where: str) -> str:
    for var, value in SUBSTITUTIONS.items():
        word = word.replace(var, value)
    if "$" in word:
        raise AssertionError(f"{where}: no value for the shell variable in {word!r}; add one "
                             f"to SUBSTITUTIONS in tests/doc_commands.py")
    return word


def invocations(words: list[str], where: str, text: str,
                anywhere: bool = True) -> list[CommandLine]:
    """The ``bornbiased`` command lines among one logical line's shell words: each runs to the
    next operator. ``anywhere``: also after a launcher's words (srun, VAR=value), else only at
    the line's start or after an operator."""
    from bornbiased_jax.cli import build_parser

    commands = set(_subcommands(build_parser()))
    found, start_of_command = [], True
    for i, w in enumerate(words):
        if w in OPERATORS:
            start_of_command = True
            continue
        if w.startswith("bornbiased ") and len(w.split()) > 1:  # a quoted whole command
            found += invocations(split_words(w), where, text, anywhere=False)
        elif (w == "bornbiased" and (start_of_command or anywhere) and i + 1 < len(words)
              and words[i + 1] in commands):
            argv = []
            for a in words[i + 1:]:
                if a in OPERATORS:
                    break
                argv.append(substitute(a, where))
            found.append(CommandLine(where, text, tuple(argv), inline=False))
        start_of_command = False
    return found


def _subcommands(parser) -> dict:
    import argparse

    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def logical_lines(lines: list[str]):
    """(first line number, text) with backslash continuations joined."""
    i = 0
    while i < len(lines):
        start, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        yield start + 1, text
        i += 1


def in_markdown(path: Path) -> list[CommandLine]:
    """Every command line of one markdown file (see the module's docstring for which)."""
    text = path.read_text()
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    lines = text.split("\n")
    found: list[CommandLine] = []
    fence, block = None, []  # the open fence's language, its (line number, line)s
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            if fence is None:
                fence, block = stripped[3:].strip().lower(), []
            else:
                if fence not in ("python", "py", "pycon"):
                    found += _in_block(block, name)
                fence = None
            continue
        if fence is not None:
            block.append((n, line))
    # indented code blocks: lines that begin with the command, outside fences
    fence = False
    for n, logical in logical_lines(lines):
        if logical.strip().startswith("```"):
            fence = not fence
        elif (not fence and logical.startswith("    ")
              and logical.strip().startswith("bornbiased ")):
            found += invocations(split_words(logical), f"{name}:{n}", logical.strip(),
                                 anywhere=False)
    # inline code spans
    for m in re.finditer(r"`(bornbiased [^`]+)`", text):
        where = f"{name}:{text.count(chr(10), 0, m.start()) + 1}"
        span = " ".join(m.group(1).split())
        argv = tuple(substitute(w, where) for w in split_words(span)[1:])
        found.append(CommandLine(where, span, argv, inline=True))
    return found


def _in_block(block: list[tuple[int, str]], name: str) -> list[CommandLine]:
    numbers = [n for n, _ in block]
    found = []
    for k, logical in logical_lines([line for _, line in block]):
        if "bornbiased" in logical:
            found += invocations(split_words(logical), f"{name}:{numbers[k - 1]}",
                                 logical.strip())
    return found


def in_docs() -> list[CommandLine]:
    return [c for path in DOCS for c in in_markdown(path)]


def in_epilogs() -> list[CommandLine]:
    """The examples that close every command's ``--help``."""
    from bornbiased_jax.cli import build_parser

    found = []
    for name, sub in _subcommands(build_parser()).items():
        examples = [line.strip() for _, line in logical_lines((sub.epilog or "").split("\n"))
                    if line.strip().startswith("bornbiased ")]
        for k, line in enumerate(examples, 1):
            found += invocations(split_words(line), f"{name} --help, example {k}", line,
                                 anywhere=False)
    return found


def completed(parser, c: CommandLine) -> list[str]:
    """``c``'s arguments without ``--help``, and with what an inline fragment leaves out
    supplied: a trailing flag's value is dropped with the flag, and the command's required
    flags and positional arguments get a placeholder value each."""
    argv = [a for a in c.argv if a not in ("-h", "--help")]
    if not c.inline:
        return argv
    sub = _subcommands(parser)[argv[0]]
    last = sub._option_string_actions.get(argv[-1])
    if last is not None and last.nargs != 0:  # `bornbiased train --seeds`: names the flag
        argv.pop()
    for action in sub._actions:
        if action.required and action.option_strings and not set(action.option_strings) & set(argv):
            argv += [action.option_strings[0], "PLACEHOLDER"]
    needed = sum(1 for a in sub._actions if not a.option_strings and a.nargs in (None, 1, "+"))
    missing = needed - _positionals_given(sub, argv[1:])
    argv[1:1] = ["PLACEHOLDER"] * max(0, missing)
    return argv


def hidden_flags(parser, c: CommandLine) -> list[str]:
    """The former spellings of renamed flags (hidden aliases) that ``c`` uses: they still parse,
    but the docs show the current names."""
    import argparse

    sub = _subcommands(parser).get(c.argv[0])
    actions = sub._option_string_actions if sub else {}
    return [a for a in c.argv[1:]
            if a in actions and actions[a].help is argparse.SUPPRESS]


def unknown_flags(parser, c: CommandLine) -> list[str]:
    """The words of ``c`` that look like flags but are none of its command's (abbreviations
    included, which argparse would accept)."""
    sub = _subcommands(parser).get(c.argv[0])
    if sub is None:
        return []
    return [a.split("=", 1)[0] for a in c.argv[1:]
            if a.startswith("--") and a.split("=", 1)[0] not in sub._option_string_actions]


def _positionals_given(sub, words: list[str]) -> int:
    """How many of ``words`` are positional arguments (not flags or their values)."""
    given, i = 0, 0
    while i < len(words):
        word, i = words[i], i + 1
        if not word.startswith("-"):
            given += 1
            continue
        action = sub._option_string_actions.get(word)
        if action is None or action.nargs == 0:
            continue
        if action.nargs in ("+", "*"):
            while i < len(words) and not words[i].startswith("-"):
                i += 1
        else:
            i += 1 if action.nargs in (None, "?") else int(action.nargs)
    return given


def parse(c: CommandLine):
    """The real parser's namespace for ``c`` (argparse's SystemExit on an error)."""
    from bornbiased_jax.cli import build_parser

    parser = build_parser()
    return parser.parse_args(completed(parser, c))


def parse_all() -> int:
    """Parse every command line of the docs and epilogs (for a check from a fresh process)."""
    n = 0
    for c in in_docs() + in_epilogs():
        if c.skipped is None:
            parse(c)
            n += 1
    return n
