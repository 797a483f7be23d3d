"""The experiments' former module paths, for one release: ``python -m experiments.OLD [ARGS]``
(and ``python -m experiments OLD [ARGS]``) runs the command it became, ``python -m experiments
NEW [ARGS]``. Every experiment is now an entry of its study's table (``experiments/<study>/
study.py``), run by the one entry point (:mod:`experiments.__main__`); the scripts that were
files of their own (``experiments/table1.py``, ...) and the study packages' ``__main__`` modules
are gone, and :data:`OLD` is the one place that still knows them. RESULTS.md, the records and
the docs of earlier versions cite these paths; once no reader needs them, this table goes.

:class:`OldPaths` (installed by ``experiments/__init__.py``) makes each old path importable as a
module that runs its new command when run as ``__main__``, so that ``python -m`` finds it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import shlex

# python -m experiments.OLD -> the arguments of python -m experiments that it now is
OLD = {
    # the initialisation study (experiments/initialisation/)
    "table1": "table1", "figure1": "figure1", "figure2_finding22": "figure2_finding22",
    "table2_figure3": "table2_figure3", "figure3_null": "figure3_null", "figure4": "figure4",
    "figure5": "figure5", "figure6": "figure6", "figure7": "figure7", "figure8": "figure8",
    "figure9": "figure9", "figure10": "figure10", "table3": "table3", "run_all": "run_all",
    # the paper-scale record of Figure 3's null was a command of its own
    "initialisation.unembedding_null": "figure3_null --scale paper",
    # the SeedPrint study (experiments/seedprint/)
    "figure13": "figure13", "table4a": "table4a",
    "seedprint_calibration": "seedprint_calibration", "seedprint_power": "seedprint_power",
    "seedprint_trained": "seedprint_trained", "seedprint_confound": "seedprint_confound",
    "seedprint_matched": "seedprint_matched", "seedprint_results": "seedprint_results",
    "seed_family": "seed_family",
    # the lineage study: one table at a time was a script of its own
    "lineage": "lineage",
    "figure11": "lineage --only figure11 --no-train", "table4b": "lineage --only table4b --no-train",
    "table4c": "lineage --only table4c --no-train", "table5": "lineage --only table5 --no-train",
    "lineage_level": "lineage_level", "lineage_level_long": "lineage_level_long",
    "lineage_bench": "lineage_bench",
    # the attention-sink study (experiments/sinks/)
    "figure12_table7": "figure12_table7", "sinks_init": "sinks_init",
    "sinks_regime": "sinks_regime", "sinks_arms": "sinks_arms",
    # the real-model study, one driver for every model record (experiments/real_model/)
    "real_model": "real_model", "gemma3": "gemma3",
    # the campaign (experiments/campaign/)
    "campaign": "campaign", "paper_scale": "paper_scale",
}


def new_command(old: str) -> list[str] | None:
    """The arguments of ``python -m experiments`` that the former command ``old`` now is, or
    None when ``old`` was no command."""
    return shlex.split(OLD[old]) if old in OLD else None


class OldPaths(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Finds ``experiments.OLD`` (and, for a former study package's ``__main__``,
    ``experiments.OLD.__main__``) where no module of that name exists any more: a module
    that, run as ``__main__``, runs :func:`new_command` through the entry point."""

    PREFIX = "experiments."

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self.PREFIX):
            return None
        old = fullname[len(self.PREFIX):].removesuffix(".__main__")
        if old not in OLD:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin=f"experiments names: {old}")

    def is_package(self, fullname) -> bool:
        return False

    def get_source(self, fullname) -> str:
        old = fullname[len(self.PREFIX):].removesuffix(".__main__")
        return (f'"""Formerly ``python -m experiments.{old}``: now ``python -m experiments '
                f'{OLD[old]}`` (experiments/common/names.py)."""\n'
                "import sys\n"
                "if __name__ == '__main__':\n"
                "    from experiments.__main__ import main\n"
                f"    sys.exit(main([{old!r}, *sys.argv[1:]], old_path=True))\n")

    def exec_module(self, module) -> None:
        exec(self.get_code(module.__name__), module.__dict__)


FINDER = OldPaths()


def install() -> None:
    """Put :data:`FINDER` after the usual finders (once): it answers only where they find
    nothing."""
    import sys

    if FINDER not in sys.meta_path:
        sys.meta_path.append(FINDER)
