"""One entry point for the reproduction: ``python -m experiments NAME [ARGS]`` runs the command
``python -m experiments.NAME [ARGS]`` (which keeps working), and ``python -m experiments``
(or ``--help``) lists the studies, each with the sections it writes and the command that
measures each, then every command with the first line of its docstring.

A command is a module of experiments/ that runs as a script (``if __name__ == "__main__"``:
the thin scripts ``experiments/<name>.py`` and modules such as
``initialisation.unembedding_null``) or a study package with a ``__main__`` (``lineage``,
``campaign``, ...). They are found by reading the files, so listing them imports none; running
one runs it as ``python -m experiments.NAME`` would (``runpy``), its records naming that
command.
"""

from __future__ import annotations

import ast
import runpy
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROG = "python -m experiments"


def _is_script(tree: ast.Module) -> bool:
    """Whether a module's body has ``if __name__ == "__main__":``."""
    for node in tree.body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
                and any(isinstance(c, ast.Constant) and c.value == "__main__"
                        for c in node.test.comparators)):
            return True
    return False


def _summary(path: Path, width: int) -> str:
    """The first paragraph of a module's docstring, shortened to ``width`` characters."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return textwrap.shorten(" ".join(doc.strip().split("\n\n")[0].split()), width,
                            placeholder=" ...")


def command_file(name: str) -> Path | None:
    """The file that runs command ``name`` (``figure4``: experiments/figure4.py; ``lineage``:
    experiments/lineage/__main__.py; ``initialisation.unembedding_null``), or None when
    ``name`` is no command."""
    parts = name.split(".")
    if not 1 <= len(parts) <= 2 or not all(p.isidentifier() for p in parts):
        return None
    if len(parts) == 1 and (HERE / name / "__main__.py").is_file():
        return HERE / name / "__main__.py"
    f = HERE.joinpath(*parts).with_suffix(".py")
    if (parts[-1] in ("__init__", "__main__") or not f.is_file()
            or (len(parts) == 2 and not (f.parent / "__init__.py").is_file())):
        return None
    text = f.read_text()
    return f if "__main__" in text and _is_script(ast.parse(text)) else None


def commands() -> dict[str, Path]:
    """{NAME: its file} for every command (:func:`command_file`), by name."""
    names = ([f.stem for f in HERE.glob("*.py")]
             + [f.parent.name for f in HERE.glob("*/__main__.py")]
             + [f"{f.parent.name}.{f.stem}" for f in HERE.glob("*/*.py")])
    return {n: f for n in sorted(set(names)) if (f := command_file(n)) is not None}


def listing() -> str:
    """The text of ``python -m experiments --help``: the studies, then the commands."""
    from experiments import STUDIES

    lines = [f"usage: {PROG} NAME [ARGS]   (the same as: python -m experiments.NAME [ARGS])",
             f"       {PROG} NAME --help",
             "", "Studies (experiments.STUDIES, in RESULTS.md's order): each RESULTS.md section "
             "and the command that measures it", ""]
    for study in STUDIES:
        lines.append(f"  {study.name}")
        for s in study.sections:
            how = s.command or "read from the GPU runs' outputs (results/gpu/, results/campaign/)"
            lines.append(f"      {s.name:22} {how}")
    found = commands()
    width = max(map(len, found)) + 2
    lines += ["", "Commands:", ""]
    lines += [f"  {name:{width}}{_summary(path, max(40, 98 - width))}"
              for name, path in found.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(listing())
        return 0
    name, rest = argv[0], argv[1:]
    path = command_file(name)
    if path is None:
        from experiments import STUDIES

        study = next((s for s in STUDIES if s.name == name), None)
        hint = ("" if study is None else
                f"; the study {name} is measured by: "
                + "; ".join(s.command for s in study.sections if s.command))
        print(f"{PROG}: no command {name!r}{hint} ({PROG} --help lists them)", file=sys.stderr)
        return 2
    sys.argv = [str(path), *rest]
    runpy.run_module(f"experiments.{name}", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
