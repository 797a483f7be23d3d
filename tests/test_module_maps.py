"""The maps a reader follows name what is there: each package docstring of experiments/ and of
bornbiased_jax/fingerprint/ names every module of its package and nothing that does not exist,
and every file or folder that the README's *Project map* names exists.

A package docstring names a module as ````name```` (a lowercase Python identifier); the top-level
docstring (experiments/__init__.py) names the study packages and top-level modules, each
package's own docstring its modules. ``:mod:`x``` references anywhere in those docstrings must
import-resolve too."""

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
# names in ``...`` that are not modules of the package: other importable packages
ELSEWHERE = {"bornbiased_jax"}


def _doc(init: Path) -> str:
    return ast.get_docstring(ast.parse(init.read_text())) or ""


def named_modules(doc: str) -> set[str]:
    """The ````name```` tokens of ``doc`` that are lowercase identifiers."""
    return {t for t in re.findall(r"``([^`]+)``", doc) if IDENTIFIER.fullmatch(t)} - ELSEWHERE


def package_members(folder: Path) -> set[str]:
    """The modules (``__main__`` included) and subpackages of the package ``folder``."""
    return ({p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
            | {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()})


def packages() -> list[Path]:
    return sorted(p.parent for p in EXPERIMENTS.glob("*/__init__.py"))


def test_named_modules_reads_double_backticked_identifiers():
    doc = "``claims`` (rules), ``python -m experiments.x``, ``<bos>``, ``bornbiased_jax``, ``a.b``"
    assert named_modules(doc) == {"claims"}


@pytest.mark.parametrize("folder", packages(), ids=lambda p: p.name)
def test_each_study_package_docstring_maps_its_modules(folder):
    """A study package's docstring names each of its modules (``__main__`` where it has one)
    and no module it does not have."""
    named, present = named_modules(_doc(folder / "__init__.py")), package_members(folder)
    assert named == present, (f"not named: {sorted(present - named)}",
                              f"named, absent: {sorted(named - present)}")


FINGERPRINT = ROOT / "bornbiased_jax" / "fingerprint"


@pytest.mark.parametrize("folder", [FINGERPRINT, *sorted(p.parent for p in
                                                         FINGERPRINT.glob("*/__init__.py"))],
                         ids=lambda p: p.name)
def test_each_fingerprint_package_docstring_maps_its_modules(folder):
    """SeedPrint's package and each of its sub-packages (the tests, the edits, running them)
    name, in their docstrings, every module they hold and none they lack."""
    named, present = named_modules(_doc(folder / "__init__.py")), package_members(folder)
    assert named == present, (f"not named: {sorted(present - named)}",
                              f"named, absent: {sorted(named - present)}")


def test_the_experiments_docstring_names_every_study_package():
    """experiments/__init__.py names each study package and no module that experiments/ lacks
    (top-level modules it names must exist; it need not name every script)."""
    named = named_modules(_doc(EXPERIMENTS / "__init__.py"))
    studies = {p.name for p in packages()}
    assert studies <= named, sorted(studies - named)
    assert named <= package_members(EXPERIMENTS), sorted(named - package_members(EXPERIMENTS))


def test_mod_references_of_the_package_docstrings_resolve():
    for init in [EXPERIMENTS / "__init__.py", *(p / "__init__.py" for p in packages())]:
        for name in re.findall(r":mod:`~?([\w.]+)`", _doc(init)):
            assert importlib.util.find_spec(name) is not None, f"{init}: {name}"


def _project_map() -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"^## Project map\n(.*?)^## ", text, re.S | re.M)
    assert m, "README.md has no *Project map* section"
    return m.group(1)


def map_items(text: str) -> list[str]:
    """The map's items: each entry of its code block (a line starting at column 0, with its
    indented continuation lines) and each bullet (with its continuation lines)."""
    block = re.search(r"```\n(.*?)```", text, re.S)
    items = []
    for line in block.group(1).splitlines():
        if line[:1].strip():
            items.append(line)
        elif items:
            items[-1] += "\n" + line
    bullets = re.split(r"^- ", text[block.end():], flags=re.M)[1:]
    return items + bullets


def map_paths(item: str) -> list[str]:
    """The files and folders an item names, in order: in the code block the first word and
    every word ending in '.py' or '/', in a bullet the `backticked` such words; '<...>'
    placeholders are skipped."""
    words = re.findall(r"`([^`\s]+)`", item) if "`" in item else item.split()
    words = [w.strip(",;:()") for w in words]
    return [w for w in words if re.fullmatch(r"[\w./-]+(\.py|/)", w)]


def resolve(path: str, folders: list[Path]) -> Path | None:
    """``path`` under the repository root, bornbiased_jax/ or a folder named earlier in the
    same item, else None."""
    for base in [ROOT, ROOT / "bornbiased_jax", *reversed(folders)]:
        if (base / path).exists():
            return base / path
    return None


def test_the_readme_project_map_names_existing_files():
    missing, seen = [], 0
    for item in map_items(_project_map()):
        folders = []
        for path in map_paths(item):
            found = resolve(path, folders)
            if found is None:
                missing.append(f"{path} (in: {item.strip().splitlines()[0][:60]})")
            elif found.is_dir():
                folders.append(found)
            seen += 1
    assert not missing, missing
    assert seen >= 30


def test_the_project_map_check_sees_a_missing_file():
    item = "experiments/   the reproduction; render.py and nowhere.py\n"
    folders = [ROOT / "experiments"]
    assert map_paths(item) == ["experiments/", "render.py", "nowhere.py"]
    assert resolve("render.py", folders) is not None
    assert resolve("nowhere.py", folders) is None
