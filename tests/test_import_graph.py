"""The modules of bornbiased_jax import one another without a cycle: neither at module level
(what runs on import) nor counting the imports inside functions too (deferred so that
``--help`` stays fast, but still a dependency); a package's ``__init__`` importing its own
submodules is not a cycle. In particular the run folder's owners sit below the model sources,
and those below training (``bornbiased_jax.training``, :data:`TRAINING_LAYERS`):
training.loop -> training.data_setup -> sources -> training.run_folder -> training.checkpoints,
training.run_folder -> training.config, and training.loop -> training.run_folder; nothing
imports a module of a layer above its own, and reading a checkpoint builds no model."""

import ast
from pathlib import Path

import bornbiased_jax

PACKAGE = Path(bornbiased_jax.__file__).parent


EXPERIMENTS = PACKAGE.parent / "experiments"


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = (package.name,) + path.relative_to(package).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_level(tree: ast.Module):
    """The statements that run on import: the module's body, with the bodies of its top-level
    ``if``/``try``/``with`` blocks (not those of functions and classes)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            todo += [n for field in ("body", "orelse", "finalbody", "handlers")
                     for n in getattr(node, field, [])]
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body


def module_imports(deferred: bool = False, package: Path = PACKAGE) -> dict[str, set[str]]:
    """{module: the package modules it imports at module level} (``deferred``: anywhere in
    its code, inside functions too)."""
    modules = {_module_name(f, package): f for f in package.rglob("*.py")}
    graph = {}
    for name, f in modules.items():
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        tree = ast.parse(f.read_text())
        for node in (ast.walk(tree) if deferred else _module_level(tree)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                # 'from pkg import mod' depends on the module pkg.mod, 'from mod import x' on mod
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            else:
                continue
            # A package's __init__ runs before its submodules whatever they import, so a
            # submodule naming its own parent package is not an edge back to it.
            found |= {t for t in targets
                      if t in modules and t != name and not name.startswith(t + ".")}
        graph[name] = found
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m):
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (c := visit(n)):
                return c
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


# The training package and the model sources, in layers from the bottom: a module imports only
# modules of its own layer or below (`test_nothing_imports_upward`).
TRAINING_LAYERS = [
    ["training.config"],
    ["training.checkpoints"],
    ["training.run_folder"],
    ["sources"],
    ["training.optimizer", "training.step"],
    ["training.seed_plan", "training.data_setup"],
    ["training.loop"],
]


def _layer_of() -> dict[str, int]:
    return {f"bornbiased_jax.{m}": i for i, layer in enumerate(TRAINING_LAYERS) for m in layer}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'A -> B' for each import by a module A of TRAINING_LAYERS of a module B in a layer
    above A's."""
    layer = _layer_of()
    return sorted(f"{m} -> {n}" for m, i in layer.items() for n in graph.get(m, ())
                  if layer.get(n, -1) > i)


def test_the_package_has_no_import_cycle():
    deferred = module_imports(deferred=True)
    assert find_cycle(deferred) is None, " -> ".join(find_cycle(deferred))
    graph = module_imports()
    assert all(graph[m] <= deferred[m] for m in graph)
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_nothing_imports_upward():
    """Each module of TRAINING_LAYERS imports (also inside functions) only modules of its own
    layer or below; the old single modules are gone; the bottom three import no JAX or Orbax at
    module level, and the checkpoints' reader builds no model."""
    deferred, graph = module_imports(deferred=True), module_imports()
    layer = _layer_of()
    training = {m for m in graph if m.startswith("bornbiased_jax.training.")}
    assert training == set(layer) - {"bornbiased_jax.sources"}, sorted(training ^ set(layer))
    assert not {"bornbiased_jax.train", "bornbiased_jax.runs"} & set(graph)
    assert upward_imports(deferred) == []
    # the chain the docstring names
    assert "bornbiased_jax.sources" in graph["bornbiased_jax.training.data_setup"]
    assert {"bornbiased_jax.training.run_folder", "bornbiased_jax.training.checkpoints"} <= (
        graph["bornbiased_jax.sources"])
    assert "bornbiased_jax.training.checkpoints" in graph["bornbiased_jax.training.run_folder"]
    assert "bornbiased_jax.training.run_folder" in graph["bornbiased_jax.training.loop"]
    # reading a checkpoint builds no model; settings check the context length with the model
    # only inside a function (seen as deferred, not at module level)
    assert "bornbiased_jax.model" not in deferred["bornbiased_jax.training.checkpoints"]
    config = "bornbiased_jax.training.config"
    assert "bornbiased_jax.model" in deferred[config] - graph[config]
    for m in ("config", "checkpoints", "run_folder"):
        assert not _imports_at_module_level(PACKAGE / "training" / f"{m}.py",
                                             {"jax", "orbax", "optax", "flax"}), m


def _imports_at_module_level(path: Path, roots: set[str]) -> set[str]:
    """The top-level packages among ``roots`` that ``path`` imports when it is imported."""
    found = set()
    for node in _module_level(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found & roots


def test_an_upward_import_is_seen():
    graph = {"bornbiased_jax.sources": {"bornbiased_jax.training.run_folder",
                                        "bornbiased_jax.training.loop"},
             "bornbiased_jax.training.step": {"bornbiased_jax.training.seed_plan"}}
    assert upward_imports(graph) == ["bornbiased_jax.sources -> bornbiased_jax.training.loop",
                                     "bornbiased_jax.training.step -> "
                                     "bornbiased_jax.training.seed_plan"]


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def script_uses(folder: Path, names: set[str]) -> list[str]:
    """'file:line' of every import statement naming a module of ``names`` in the Python files
    under ``folder``, at any depth of the code; ``from experiments import x`` names
    ``experiments.x``."""
    found = []
    for f in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                named = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                named = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            if any(n in names or any(n.startswith(s + ".") for s in names) for n in named):
                found.append(f"{f.name}:{node.lineno}")
    return found


def test_the_import_scanner_sees_both_forms(tmp_path):
    (tmp_path / "t.py").write_text("import os\nfrom experiments import table1\n"
                                   "def f():\n    import experiments.figure7\n"
                                   "from bornbiased_jax import cli\n")
    assert script_uses(tmp_path, {"experiments"}) == ["t.py:2", "t.py:4"]


def test_one_entry_point_runs_every_experiment():
    """No module of experiments/ runs as a script but the entry point (``python -m experiments
    NAME`` looks NAME up in the studies' tables: no module of its own per command), and the
    entry point imports no experiment's module: an entry is imported when it runs."""
    scripts = sorted(str(f.relative_to(EXPERIMENTS.parent)) for f in EXPERIMENTS.rglob("*.py")
                     if '__name__ == "__main__"' in f.read_text())
    assert scripts == ["experiments/__main__.py"]
    entry = module_imports(deferred=True, package=EXPERIMENTS)["experiments.__main__"]
    assert entry <= {"experiments", "experiments.common.names"}, entry


def test_the_toolkit_never_imports_the_experiments():
    """bornbiased_jax is what ``pip install`` gives: nothing in it knows about the paper's
    reproduction (experiments/), at module level or inside a function."""
    found = script_uses(PACKAGE, names={"experiments"})
    assert found == [], found


def test_the_experiments_import_one_another_without_a_cycle():
    deferred = module_imports(deferred=True, package=EXPERIMENTS)
    assert "experiments.render" in deferred and "experiments.campaign.plan" in deferred
    assert find_cycle(deferred) is None, " -> ".join(find_cycle(deferred))


# experiments/'s packages that are not studies: what the studies share, and the paper-scale
# driver, which runs other studies' measurements at the paper's shapes and renders their rows
# (as experiments/render.py does), so it sits above them.
SHARED, DRIVERS = "common", {"campaign"}
# top-level modules the shared package may import: the package's names and the record format
SHARED_MAY_IMPORT = {"experiments", "experiments.artifacts"}


def _package_of(module: str) -> str | None:
    """'lineage' for experiments.lineage.claims; None for a top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (EXPERIMENTS / parts[-1]).is_dir() else None


def cross_study_imports(graph: dict[str, set[str]]) -> list[str]:
    """'A -> B' for each import, inside functions too, by a study package's module A of a
    module B of another study package or a driver, and by a module of the shared package of
    anything in experiments/ but the shared package and :data:`SHARED_MAY_IMPORT`."""
    bad = []
    for m, targets in graph.items():
        home = _package_of(m)
        if home is None or home in DRIVERS:
            continue
        for t in sorted(targets):
            there = _package_of(t)
            if home == SHARED:
                if there != SHARED and t not in SHARED_MAY_IMPORT:
                    bad.append(f"{m} -> {t}")
            elif there is not None and there not in (home, SHARED):
                bad.append(f"{m} -> {t}")
    return sorted(bad)


def test_no_study_imports_another_study():
    """A study package imports, of experiments/, its own modules, the shared package
    (experiments/common/: the trained families, tuning, the plumbing and rules several studies
    use) and top-level modules, never another study's package or the driver; the shared
    package imports no study."""
    graph = module_imports(deferred=True, package=EXPERIMENTS)
    assert {"experiments.common.family", "experiments.lineage.claims"} <= set(graph)
    assert cross_study_imports(graph) == []


def test_a_cross_study_import_is_seen():
    graph = {"experiments.sinks.arms": {"experiments.lineage.tables", "experiments.common.family",
                                        "experiments.artifacts"},
             "experiments.common.tune": {"experiments.lineage_bench.suspects",
                                         "experiments.render"},
             "experiments.lineage.level": {"experiments.campaign.plan"},
             "experiments.campaign.plan": {"experiments.initialisation.claims"},
             "experiments.render": {"experiments.sinks.claims"}}
    assert cross_study_imports(graph) == [
        "experiments.common.tune -> experiments.lineage_bench.suspects",
        "experiments.common.tune -> experiments.render",
        "experiments.lineage.level -> experiments.campaign.plan",
        "experiments.sinks.arms -> experiments.lineage.tables"]


def test_package_docstring_names_every_module():
    """bornbiased_jax/__init__.py's map of the package names each top-level module and
    subpackage, and nothing that does not exist."""
    import re

    named = set(re.findall(r"``(\w+)``", bornbiased_jax.__doc__)) - {"UserError", "bornbiased"}
    present = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert named == present, (sorted(present - named), sorted(named - present))



def test_no_module_is_named_like_the_standard_library():
    """No module or subpackage, at any depth, takes a standard-library module's name (as
    ``io.py`` once did: a script run from inside the package would import it instead of the
    standard library's, and a reader cannot tell the two apart in an import line)."""
    import sys

    names = {p.stem for p in PACKAGE.rglob("*.py")} | {
        p.name for p in PACKAGE.rglob("*") if (p / "__init__.py").is_file()}
    assert "io" in sys.stdlib_module_names  # what the check would have caught
    assert sorted(names & sys.stdlib_module_names) == []


def test_training_docstring_names_every_module():
    """bornbiased_jax/training/__init__.py's table gives each module of the package its job, and
    names nothing that does not exist."""
    import re

    import bornbiased_jax.training as training

    named = set(re.findall(r"^  (\w+) {2,}\S", training.__doc__, re.M))
    present = {p.stem for p in (PACKAGE / "training").glob("*.py") if p.stem != "__init__"}
    assert named == present, (sorted(present - named), sorted(named - present))


def test_no_module_is_longer_than_a_few_hundred_lines():
    """One job a module: none of the toolkit's files runs past 400 lines."""
    long = {str(f.relative_to(PACKAGE)): n for f in PACKAGE.rglob("*.py")
            if (n := len(f.read_text().splitlines())) > 400}
    assert not long, f"split these modules: {long}"


def test_no_module_imports_another_modules_private_names():
    """A name with a leading underscore is its module's own: no module of the toolkit imports
    one from another module (``from x import _y``) or reads one off an imported module
    (``x._y``), so that files split along concepts, with their shared pieces public."""
    import ast

    found = []
    for f in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(f.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "bornbiased_jax"):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        found.append(f"{f.relative_to(PACKAGE)}:{node.lineno} "
                                     f"{node.module}.{a.name}")
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("bornbiased_jax"):
                        aliases[a.asname or a.name.split(".")[0]] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                    and node.value.id in aliases):
                found.append(f"{f.relative_to(PACKAGE)}:{node.lineno} "
                             f"{aliases[node.value.id]}.{node.attr}")
    assert not found, "private names used across modules: " + "; ".join(found)
