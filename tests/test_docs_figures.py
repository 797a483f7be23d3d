"""Block times quoted in docs/paper-scale.md come from the committed ``state.json`` they name:
each range written "(A-B s in `PATH/state.json`)" must have both ends equal to the rounded
seconds of blocks that state records, so a re-run that changes the saved times (or a figure
typed by hand) fails here rather than leaving the docs untrue."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "paper-scale.md"
RANGE = re.compile(r"\(([\d,]+)-([\d,]+) s in `([^`]+/state\.json)`")


def quoted_ranges(text: str) -> list[tuple[int, int, str]]:
    """(low, high, state path) for every block-time range ``text`` quotes."""
    return [(int(lo.replace(",", "")), int(hi.replace(",", "")), path)
            for lo, hi, path in RANGE.findall(" ".join(text.split()))]


def range_holds(low: int, high: int, seconds: dict[str, float]) -> bool:
    """Both ends are blocks' rounded seconds, and low <= high."""
    rounded = {round(s) for s in seconds.values()}
    return low <= high and low in rounded and high in rounded


def test_the_rule_parses_and_fails():
    text = "blocks (1,780-2,058 s\nin `results/x/state.json`) and (5-9 s in `a/state.json`)"
    assert quoted_ranges(text) == [(1780, 2058, "results/x/state.json"), (5, 9, "a/state.json")]
    assert quoted_ranges("(1,780-2,058 s; the blocks' seconds are in the state)") == []
    seconds = {"a": 1780.38, "b": 2057.89, "c": 1900.0}
    assert range_holds(1780, 2058, seconds)
    assert not range_holds(1780, 2059, seconds)     # a hand-typed end that no block had
    assert not range_holds(2058, 1780, seconds)     # ends swapped
    assert not range_holds(1781, 2058, {"a": 1780.4, "b": 2057.9})


def test_docs_block_times_match_their_state():
    found = quoted_ranges(DOC.read_text())
    assert found, f"{DOC.name} quotes no block-time range with its state.json"
    for low, high, path in found:
        state = ROOT / path
        assert state.is_file(), f"{DOC.name} cites {path}, which is not committed"
        seconds = json.loads(state.read_text())["seconds"]
        assert range_holds(low, high, seconds), (
            f"{DOC.name} quotes {low:,}-{high:,} s for {path}, whose blocks took "
            f"{sorted(round(s) for s in seconds.values())} s")


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
