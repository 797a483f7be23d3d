"""One entry point for the reproduction: ``python -m experiments NAME [ARGS]`` runs the
experiment NAME, an entry of its study's table (``Study.experiments``, declared in
``experiments/<study>/study.py``; :data:`experiments.STUDIES` lists the studies), on ARGS;
``python -m experiments`` (or ``--help``) lists every study with its experiments and its
RESULTS.md sections, in one shape. A former module path (``python -m experiments.table4b``)
still runs through the one table of old names, :data:`experiments.common.names.OLD`, for a
release.

Listing imports no experiment's code: an entry is imported when it runs (its first docstring
line is shown by ``NAME --help``).
"""

from __future__ import annotations

import sys

PROG = "python -m experiments"


def find(name: str):
    """The experiment ``name`` of whichever study declares it, or None."""
    from experiments import STUDIES

    return next((e for s in STUDIES if (e := s.experiment(name)) is not None), None)


def _scale_text(exp, scale: str) -> str | None:
    """The arguments of ``python -m experiments`` that measure ``exp`` at ``scale``."""
    s = exp.cpu if scale == "cpu" else exp.paper
    if s is None:
        return None
    if isinstance(s, str):
        return s
    return exp.name + ("" if scale == "cpu" else " --scale paper")


def _line(exp) -> str:
    """One experiment in the listing: its name, its commands at each scale, its records."""
    parts = [] if exp.cpu is None else [f"cpu: {_scale_text(exp, 'cpu')}"]
    if exp.paper is not None:
        parts.append(f"paper: {_scale_text(exp, 'paper')}")
    if exp.writes != (exp.name,):
        w = exp.writes
        parts.append("records: " + ("none" if not w else ", ".join(w) if len(w) <= 4 else
                                    f"{', '.join(w[:3])}, ... ({len(w)})"))
    return f"    {exp.name:22} " + "; ".join(parts)


def listing() -> str:
    """The text of ``python -m experiments --help``: each study with its sections of RESULTS.md
    and its experiments, one line each (the arguments that measure it at CPU scale and, where
    there is a variant, at the paper's; the records it writes where not one of its name)."""
    from experiments import STUDIES

    lines = [f"usage: {PROG} NAME [ARGS]      run the experiment NAME",
             f"       {PROG} NAME --help     its flags and what it measures",
             "",
             "Studies (experiments.STUDIES, in RESULTS.md's order): the sections each writes "
             "into RESULTS.md,",
             f"then each experiment: the arguments of `{PROG}` that measure it (cpu: at CPU "
             "scale,",
             "paper: at the paper's) and the records it writes under results/records/<study>/ "
             "(where",
             "not one named as the experiment)."]
    for study in STUDIES:
        lines += ["", f"  {study.name} (sections: {', '.join(s.name for s in study.sections)})"]
        lines += [_line(e) for e in study.experiments]
    lines += ["", "Former module paths (python -m experiments.OLD) run the experiments they "
                  "became, for one",
              "release: experiments/common/names.py."]
    return "\n".join(lines)


def main(argv: list[str] | None = None, old_path: bool = False) -> int:
    """Run ``argv`` = [NAME, *ARGS]; ``old_path``: it came in as ``python -m
    experiments.NAME`` (a former module path)."""
    from experiments.common import names

    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(listing())
        return 0
    name, rest = argv[0], argv[1:]
    exp = None if old_path else find(name)
    if exp is None and (new := names.new_command(name)) is not None:
        exp, rest = find(new[0]), new[1:] + rest
        if old_path or new[0] != name:
            print(f"(python -m experiments{'.' if old_path else ' '}{name} is now "
                  f"`{PROG} {names.OLD[name]}`)", file=sys.stderr)
    if exp is None:
        from experiments import STUDIES

        study = next((s for s in STUDIES if s.name == name), None)
        hint = ("" if study is None else
                f"; the study {name}'s experiments: "
                + ", ".join(e.name for e in study.experiments))
        print(f"{PROG}: no experiment {name!r}{hint} ({PROG} --help lists them)",
              file=sys.stderr)
        return 2
    return exp.run(rest)


if __name__ == "__main__":
    sys.exit(main())
