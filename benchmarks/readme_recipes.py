"""The README's quick start and recipes, run as written on a fresh clone, each block timed.

Clones this checkout (``HEAD``) into a temporary folder, links ``../shared`` beside it when there
is one, and runs every ```bash block of README.md's "Quick start" and "Recipes" sections in
order, each block in one ``bash -e`` session from the clone's root (the quick start's block
creates the clone's ``.venv``; later blocks run with it activated). Lines naming the reader's
own models (``path/to/...``) are listed and not run. Writes a markdown report: per block its
commands, exit status and wall time (``time.perf_counter``), and the quick start's printed table,
which README.md quotes (``tests/test_readme.py`` checks that it does). The report is written
again after every block, so a run stopped midway keeps the blocks it finished.

    python benchmarks/readme_recipes.py --out benchmarks/results/readme_recipes_cpu.md
    python benchmarks/readme_recipes.py --only 0 1      # some blocks only (0: quick start)

Run it on an idle machine: the times are what a newcomer waits on this one.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "path/to/"


def blocks(readme: str) -> list[tuple[str, str]]:
    """(section, bash block) of the quick start and the recipes, in order."""
    out = []
    for title in ("Quick start", "Recipes"):
        m = re.search(rf"^## {title}\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
        if m is None:
            raise SystemExit(f"README.md has no '## {title}' section")
        out += [(title, b) for b in re.findall(r"```bash\n(.*?)```", m.group(1), re.S)]
    return out


def runnable(block: str) -> tuple[str, list[str]]:
    """The block without the lines that name the reader's own models, and those lines."""
    keep, skipped = [], []
    for line in block.splitlines():
        (skipped if PLACEHOLDER in line else keep).append(line)
    return "\n".join(keep), skipped


def quick_start_table(stdout: str) -> str:
    """The markdown table the quick start's sweep prints."""
    rows = [line for line in stdout.splitlines() if line.startswith("|")]
    return "\n".join(rows)


def write(out: Path, report: list[str], table: str | None) -> None:
    """The report so far (and the quick start's table), written atomically."""
    text = report + (["## The quick start's table", "", table, ""] if table else [])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(text))
    tmp.replace(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/readme_recipes_cpu.md")
    ap.add_argument("--only", type=int, nargs="+", help="block numbers to run (0: quick start)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per block")
    args = ap.parse_args()
    todo = blocks((ROOT / "README.md").read_text())
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    load = os.getloadavg()[0]
    report = [f"# The README's quick start and recipes on a fresh clone", "",
              f"`python benchmarks/readme_recipes.py` at commit {commit}, on "
              f"{platform.machine()} with {os.cpu_count()} cores ({platform.platform()}); load "
              f"average {load:.1f} before the first block. Each block ran in one `bash -e` "
              f"session from the clone's root; wall times by `time.perf_counter`.", ""]
    table = None
    with tempfile.TemporaryDirectory() as work:
        clone = Path(work) / "repo"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        shared = ROOT.parent / "shared"
        if shared.exists():
            os.symlink(shared, Path(work) / "shared")
        for i, (section, block) in enumerate(todo):
            if args.only is not None and i not in args.only:
                continue
            script, skipped = runnable(block)
            if i > 0:
                script = ". .venv/bin/activate\n" + script
            t0 = time.perf_counter()
            try:
                done = subprocess.run(["bash", "-e", "-c", script], cwd=clone, text=True,
                                      capture_output=True, timeout=args.timeout)
                rc, out = done.returncode, done.stdout + done.stderr
            except subprocess.TimeoutExpired as e:
                rc, out = "timeout", (e.stdout or "") if isinstance(e.stdout, str) else ""
            wall = time.perf_counter() - t0
            print(f"block {i} ({section}): exit {rc}, {wall:.0f} s", flush=True)
            if i == 0 and rc == 0:
                table = quick_start_table(out)
            report += [f"## Block {i} ({section}): exit {rc}, {wall:.0f} s", "", "```bash",
                       script.removeprefix(". .venv/bin/activate\n").strip(), "```", ""]
            if skipped:
                report += ["Not run (they name the reader's own models): "
                           + "; ".join(f"`{s.strip()}`" for s in skipped), ""]
            if rc != 0:
                report += ["Its output's end:", "", "```", out[-3000:], "```", ""]
            write(args.out, report, table)  # after every block: a stopped run keeps its times
    write(args.out, report, table)
    print(f"wrote {args.out}")
    if any("exit 0" not in line for line in report if line.startswith("## Block")):
        sys.exit(1)


if __name__ == "__main__":
    main()
