"""The first GPU window (one H100, before the campaign): its RESULTS.md section, read from the
outputs that window left in results/gpu/ (pytest logs, the failure table, the sweep benchmark's
JSON lines, the precision comparison's log, the environment and the commands as run), so no
number of it is typed by hand. What each run was and why is in results/gpu/README.md; later
windows are the campaign's (:mod:`experiments.campaign.plan`)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from bornbiased_jax.verdicts import MEASURED, UNTESTABLE, Claim
from bornbiased_jax.verdicts import table as claims_table

ROOT = Path("results/gpu")
FILES = {"env": "h100_env.txt", "tf32": "h100_pytest_default_precision.log",
         "failures": "h100_failures_default_precision.md", "highest": "h100_pytest_highest.log",
         "train": "h100_pytest_train_highest_deterministic.log",
         "precision": "h100_matmul_precision.log", "sweep": "h100_sweep_throughput.log",
         "commands": "commands.sh", "readme": "README.md"}


def pytest_summary(text: str) -> Counter:
    """Counts of pytest's last summary line ('52 failed, 354 passed in ...')."""
    lines = [ln for ln in text.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    return Counter({k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error)",
                                                      lines[-1])}) if lines else Counter()


def progress_counts(text: str) -> Counter:
    """Outcomes from pytest -q's progress lines ('.' passed, 'F' failed), for a run stopped
    before its summary."""
    c = Counter()
    for ln in text.splitlines():
        # a progress line; the log's own 'pytest rc=N' may follow it on the same line
        m = re.fullmatch(r"([.FEsx]+)\s*(\[\s*\d+%\])?(pytest rc=\d+)?\s*", ln)
        if m:
            c.update({"passed": m.group(1).count("."), "failed": m.group(1).count("F")})
    return c


def failed_tests(text: str) -> list[str]:
    return re.findall(r"^FAILED (\S+)", text, re.M)


def failure_kinds(md: str) -> Counter:
    """The 'kind' column of the failure table."""
    rows = [ln.split(" | ")[0].lstrip("| ") for ln in md.splitlines() if ln.startswith("| ")]
    return Counter(r for r in rows[1:] if not r.startswith("---"))


def benchmark_rows(text: str) -> list[dict]:
    """The sweep benchmark's JSON lines."""
    return [json.loads(ln.strip()) for ln in text.splitlines() if ln.strip().startswith("{")]


def requested_strategies(commands: str) -> list[str]:
    """The strategies the first sweep benchmark call asked for."""
    m = re.search(r"--strategies ((?:[\w:]+ ?)+)", commands)
    return m.group(1).split() if m else []


def _and(items: list[str]) -> str:
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


def claims(root: Path = ROOT) -> list[Claim]:
    """The window's rows: the test suite in TF32 and in full float32, the TF32-vs-float32
    comparison of Table 1, each sweep benchmark row (throughput and peak memory against the
    benchmark's estimate), and what was not run; every number read from the files."""
    t = {k: (Path(root) / f).read_text() for k, f in FILES.items()}
    tf32, kinds = pytest_summary(t["tf32"]), failure_kinds(t["failures"])
    hi, hi_rc = progress_counts(t["highest"]), re.search(r"pytest rc=(\d+)", t["highest"])
    tr = pytest_summary(t["train"])
    files = re.search(r'F="([^"]*)"', t["commands"])
    n_files = len(files.group(1).split()) if files else "?"
    kinds_txt = "; ".join(f"{k}: {n}" for k, n in kinds.most_common())
    rc = hi_rc.group(1) if hi_rc else "?"
    stopped = ("stopped at its time limit (exit 124) before its summary" if rc == "124" else
               f"exit {rc}, no summary")
    suite = (f"TF32 (XLA's default): {tf32['failed']} of {tf32['failed'] + tf32['passed']} "
             f"failed ({kinds_txt}). Full float32, on {n_files} files with TF32 failures "
             f"(`test_train.py` apart): "
             f"{hi['failed']} of {hi['failed'] + hi['passed']} failed (unnamed: pytest "
             f"{stopped}); `test_train.py` in full float32 with XLA's deterministic ops: "
             f"{tr['passed']} of {tr['passed'] + tr['failed']} passed (failed: "
             f"{', '.join(n.split('::')[-1] for n in failed_tests(t['train'])) or 'none'})")
    # the comparison's log: a 'device:' line, a column header, then one line per row
    rows = [ln for ln in t["precision"].splitlines() if ln.strip()
            and not ln.startswith("device:") and "agree" not in ln]
    bench = [r for r in benchmark_rows(t["sweep"]) if r.get("precision") in (None, "None")]
    n_tf32, n_hi = tf32["failed"] + tf32["passed"], hi["failed"] + hi["passed"]
    share = lambda f, n: f"{100 * f / n:.0f} %" if n else "?"  # noqa: E731
    out = [Claim("test suite on the GPU", "passes", suite, MEASURED,
                 f"failures in TF32 {share(tf32['failed'], n_tf32)} of the tests, in full "
                 f"float32 {share(hi['failed'], n_hi)} of those run"),
           Claim("Table 1's top-1 ids, TF32 vs float32", "-",
                 f"not measured: the comparison printed {len(rows)} rows "
                 f"({FILES['precision']}) in the time its runs had", UNTESTABLE,
                 "not measured in the time the run had")]
    for r in bench:
        rate, bf16 = r["matmul_flops_per_s"], r["bf16_matmul_flops_per_s"]
        frac = r["model_flops_per_s"] / rate
        missing = [s for s in requested_strategies(t["commands"])
                   if s.split(":")[0] != r["strategy"]]
        out.append(Claim(
            f"sweep throughput, {r['strategy']} ({r.get('preset', 'gpt2-rope-nano')}, T = "
            f"{r['seq_len']}, {r['seeds']} seeds x {r['num_seqs']})", ">= 50 % of the matmul rate",
            f"{r['tokens_per_s']:,.0f} tokens/s, {r['model_flops_per_s'] / 1e12:.0f} TFLOP/s = "
            f"{100 * frac:.0f} % of the measured TF32 matmul rate ({rate / 1e12:.0f} TFLOP/s; "
            f"bfloat16 {bf16 / 1e12:.0f})" + (f"; {_and(missing)} did not report within their "
                                              "limits" if missing else ""),
            MEASURED, ("below" if frac < 0.5 else "at or above") + " the 50 % target"
            + (f"; only {r['strategy']} measured" if missing else "")))
        out.append(Claim(
            "peak device memory vs the planner", "-",
            f"{r['peak_device_bytes'] / 1e9:.1f} GB peak; {r['planner_bytes'] / 1e9:.1f} GB "
            "estimated by the benchmark from the call's compiled working set",
            MEASURED, f"the peak {100 * (r['peak_device_bytes'] / r['planner_bytes'] - 1):+.1f} % "
            "from the estimate (the planner's own plan: results/gpu/README.md)"))
    out.append(Claim("Table 1 at N = 10,000, Finding 2.2's 100 models and the SeedPrint "
                     "calibration on this GPU", "-", "not run in this window: no GPU time left "
                     "(the paper-scale rows measured on a CPU stand in their sections)",
                     UNTESTABLE, "not run"))
    return out


def section(root: Path = ROOT) -> str | None:
    """The section (without its marker lines), or None where the window's outputs are absent."""
    root = Path(root)
    if not all((root / f).exists() for f in FILES.values()):
        return None
    env = (root / FILES["env"]).read_text()
    jax = re.search(r"^jax (\S+)", env, re.M)
    gpu = re.search(r"(NVIDIA H\d+[^|]*?)\s{2,}", env)
    minutes = re.search(r"About (\d+) minutes of GPU time", (root / FILES["readme"]).read_text())
    return "\n".join([
        f"## On a GPU ({gpu.group(1).strip() if gpu else 'GPU'}, jax "
        f"{jax.group(1) if jax else '?'}): the first window", "",
        "Generated from that window's outputs in results/gpu/ (about "
        f"{minutes.group(1) if minutes else '?'} minutes of GPU time; what each run was, and "
        "why, is in its README.md).", "", claims_table(claims(root))])
