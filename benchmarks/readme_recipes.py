"""The README's quick start and recipes, run as written on a fresh clone, each block timed.

Clones this checkout (``HEAD``) into a temporary folder, links ``../shared`` beside it when there
is one, and runs every ```bash block of README.md's "Quick start" and "Recipes" sections in
order, each block in one ``bash -e`` session from the clone's root (the quick start's block
creates the clone's ``.venv``; later blocks run with it activated). Lines naming the reader's
own models (``path/to/...``) are listed and not run. Writes a markdown report: per block its
commands, the commit, the load average before it, its exit status and wall time
(``time.perf_counter``), and the quick start's printed table,
which README.md quotes (``tests/test_readme.py`` checks that it does). The report is written
again after every block, so a run stopped midway keeps the blocks it finished.

    python benchmarks/readme_recipes.py --out benchmarks/results/readme_recipes_cpu.md
    python benchmarks/readme_recipes.py --only 0 2      # blocks 0 and 2 again, the others kept

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


HEADER = ("`python benchmarks/readme_recipes.py` on {machine} with {cores} cores ({system}). "
          "Each block ran in one `bash -e` session from the root of a fresh clone of the "
          "commit named under it (block 0 first: it makes the clone's `.venv`); wall times by "
          "`time.perf_counter`, and the machine's load average before the block.")


def read_report(path: Path) -> tuple[dict[int, str], str | None]:
    """(block number -> its section, the quick start's table) of a saved report, each block
    with the line naming its commit and load (reports that named them once, in their header,
    get that line from the header)."""
    if not path.exists():
        return {}, None
    text = path.read_text()
    header = re.search(r"at commit (\w+),.*?load average ([\d.]+)", text, re.S)
    sections, table = {}, None
    for part in re.split(r"(?m)^(?=## )", text):
        m = re.match(r"## Block (\d+) ", part)
        if m:
            body = part.rstrip("\n")
            if header and "\nAt commit " not in body:
                first, _, rest = body.partition("\n")
                body = (f"{first}\n\nAt commit {header.group(1)}; load average "
                        f"{float(header.group(2)):.1f} before the first block.\n{rest}")
            sections[int(m.group(1))] = body
        elif part.startswith("## The quick start's table"):
            table = part.split("\n\n", 1)[1].strip()
    return sections, table


def write(out: Path, sections: dict[int, str], table: str | None) -> None:
    """The report (its blocks in order, the quick start's table), written atomically."""
    text = ["# The README's quick start and recipes on a fresh clone", "",
            HEADER.format(machine=platform.machine(), cores=os.cpu_count(),
                          system=platform.platform()), ""]
    text += [sections[i] + "\n" for i in sorted(sections)]
    text += ["## The quick start's table", "", table, ""] if table else []
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(text))
    tmp.replace(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/readme_recipes_cpu.md")
    ap.add_argument("--only", type=int, nargs="+",
                    help="block numbers to run (0: quick start, which the others need); the "
                         "report's other blocks are kept as they were")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per block")
    args = ap.parse_args()
    todo = blocks((ROOT / "README.md").read_text())
    if args.only is not None and 0 not in args.only:
        raise SystemExit("--only needs block 0 too: the quick start makes the clone's .venv")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()
    sections, table = read_report(args.out) if args.only is not None else ({}, None)
    failed = False
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
            load = os.getloadavg()[0]
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
            lines = [f"## Block {i} ({section}): exit {rc}, {wall:.0f} s", "",
                     f"At commit {commit}; load average {load:.1f} before the block.", "",
                     "```bash", script.removeprefix(". .venv/bin/activate\n").strip(), "```"]
            if skipped:
                lines += ["", "Not run (they name the reader's own models): "
                          + "; ".join(f"`{s.strip()}`" for s in skipped)]
            if rc != 0:
                failed = True
                lines += ["", "Its output's end:", "", "```", out[-3000:], "```"]
            sections[i] = "\n".join(lines)
            write(args.out, sections, table)  # after every block: a stopped run keeps its times
    write(args.out, sections, table)
    print(f"wrote {args.out}")
    if failed or any(not re.match(r"## Block \d+ \(.*\): exit 0,", s) for s in sections.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
