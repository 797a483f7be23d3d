"""Every value RESULTS.md attributes to the paper comes from experiments/common/paper_values.py:
no module that writes rows (a study's claims modules, the initialisation study's rule modules,
the lineage tables) writes a paper value as a literal, in code or inside a string; and the
quotes there read as the paper prints them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from experiments.common import paper_values as PV

ROOT = Path(__file__).resolve().parents[1]
NUMERAL = re.compile(r"(?<![\w.])(\d+\.\d+(?:e-?\d+)?|\d+e-\d+)(?![\w.])")
# a numeral right after one of these names a place in the paper, not a value
REFERENCE = re.compile(r"(Finding|Sec\.|Section|Prop\.|Table|Figure|App\.|Eq\.)\s*$")
# Values that a row may write because they are settings that happen to equal a paper value,
# each with what it is there.
SETTINGS = {0.25: "Sec. 6.2.1's sink threshold eps (a setting, stated as such in the rows)"}


def _paper_numbers() -> set[float]:
    """Every float of the module's values (and every numeral in its strings) with at least two
    significant digits: what a literal could be copied from."""
    out = set()

    def walk(v):
        if isinstance(v, bool):
            return
        if isinstance(v, float):
            out.add(v)
        elif isinstance(v, str):
            out.update(float(m) for m in NUMERAL.findall(v))
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x)
        elif isinstance(v, (tuple, list)):
            for x in v:
                walk(x)
    for name, v in vars(PV).items():
        if name.isupper():
            walk(v)
    return {x for x in out if x != 0 and _digits(x) >= 2} - set(SETTINGS)


def row_modules() -> list[Path]:
    ex = ROOT / "experiments"
    return sorted({*ex.glob("*/claims*.py"), *ex.glob("*/*_claims.py"),
                   *(ex / "initialisation").glob("*.py"), ex / "lineage" / "tables.py",
                   ex / "seedprint" / "table4a.py", ex / "seedprint" / "figure13.py"}
                  - {ex / "initialisation" / "__init__.py"})


def _literals(tree):
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            docs.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docs:
            if isinstance(node.value, float) and _digits(node.value) >= 3:
                # (a float in code with fewer digits is a threshold or a figure's size)
                yield node.lineno, node.value, repr(node.value)
            elif isinstance(node.value, str):
                for m in NUMERAL.finditer(node.value):
                    if not REFERENCE.search(node.value[:m.start()]):
                        yield node.lineno, float(m.group(1)), m.group(1)


def _digits(x: float) -> int:
    """Significant digits of ``x`` as Python writes it."""
    return len(f"{abs(x):.6g}".split("e")[0].replace(".", "").strip("0"))


def test_no_row_module_writes_a_paper_value_as_a_literal():
    paper = _paper_numbers()
    found = []
    for f in row_modules():
        for line, value, text in _literals(ast.parse(f.read_text())):
            # a percentage in a row is the paper's fraction times 100
            if value in paper or round(value / 100, 6) in paper:
                found.append(f"{f.relative_to(ROOT)}:{line}: {text}")
    assert not found, ("paper values written as literals (quote them from "
                       "experiments/common/paper_values.py): " + "; ".join(found))


def test_the_scan_sees_a_copied_value(tmp_path):
    """The check above would catch the literals this module once held."""
    paper = _paper_numbers()
    for text in ("top-1 2.60-5.20 % at N = 2,000", "U p 1.34e-41", "t 0.357, 0.678",
                 "WikiText-2 21.33 / C4 30.36", "full 0.46"):
        hits = [float(m) for m in NUMERAL.findall(text)]
        assert not REFERENCE.search("seed 43: "), text
        assert any(h in paper or round(h / 100, 6) in paper for h in hits), text


def test_quotes_read_as_the_paper_prints_them():
    assert PV.paper_table6_range() == "4.09e-100 .. 2.008e-3"  # the smallest, not the first row
    assert PV.paper_table1_p_range("b") == "1.90e-6 .. 3.16e-2"
    assert PV.paper_table1_p_range("a").startswith("4.55e-137 and below")
    assert PV.FIGURE12_BASELINE.startswith("the Baseline model consistently exhibits")
    assert PV.printed(1.11e-4) == "1.11e-4"
    lo, hi = PV.paper_table1_range("a")
    assert (lo, hi) == (0.026, 0.0675)
