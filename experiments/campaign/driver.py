"""The campaign's driver and its ledger: :func:`run` goes down the plan's pieces in priority
order within a time budget, runs each as a child process in its own process group under its
time limit, and records every attempt in ``ROOT/ledger.json`` (written atomically after each
piece; the states and what stops a piece are :mod:`experiments.campaign.plan`'s docstring)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from bornbiased_jax import files, precision
from bornbiased_jax.errors import UserError
from experiments.artifacts import portable
# the paper-scale records' folder and each one's study (RESULTS.md's renderer reads them too)
from experiments.common.paper_records import RECORDS
from experiments.campaign.plan import LEDGER, Piece, REPO, ROOT, STATE, SUMMARIES, pieces


# Signals that stop a piece from outside without saying it is broken (see the module docstring).
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
MIN_RESUMABLE_S = 60  # a resumable piece starts when at least this much budget is left


# --------------------------------------------------------------------------- the ledger
def load_ledger(root: Path = ROOT) -> dict:
    """{piece name: {"state": ..., "attempts": [...]}} (empty before the first run)."""
    f = Path(root) / LEDGER
    return json.loads(f.read_text()) if f.exists() else {}


def state(ledger: dict, name: str) -> str:
    return ledger.get(name, {}).get("state", "not run")


def device_name() -> str:
    """The GPU's name from nvidia-smi (no JAX in the driver), else 'cpu'."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip()
            if out:
                return out.splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return "cpu"


def _argv(piece: Piece, out: Path, python: str, state: Path, records: Path) -> list[str]:
    return [a.replace("{out}", str(out)).replace("{python}", python)
            .replace("{state}", str(state)).replace("{records}", str(records))
            .replace("{summaries}", str(state.parent / SUMMARIES))
            for a in piece.command]


def run(root: Path = ROOT, budget_s: float = 480.0, *, plan: Sequence[Piece] | None = None,
        only: Sequence[str] = (), retry: bool = False, env: dict | None = None,
        python: str = sys.executable, log: Callable[[str], None] = print,
        records: Path = RECORDS, device: str | None = None) -> list[dict]:
    """Run the next pieces of ``plan`` (default :func:`pieces`) within ``budget_s`` seconds;
    return this call's attempts. ``only``: just these pieces (in plan order, prerequisites not
    asked for); ``env``: variables added to every piece's environment (recorded with each
    attempt). Where no GPU is found (``device`` 'cpu'), 'gpu' pieces are skipped; resumable
    pieces run until the budget ends and continue next time ('partial')."""
    t_start = time.monotonic()
    plan = list(pieces() if plan is None else plan)
    names = {p.name for p in plan}
    unknown = [n for n in only if n not in names]
    if unknown:
        raise UserError(f"unknown piece(s) {unknown}; the campaign's pieces are {sorted(names)}")
    if budget_s <= 0:
        raise UserError(f"the budget must be positive seconds, got {budget_s}")
    env = dict(env or {})
    if precision.ENV in env:
        env[precision.ENV] = precision.env_value(env[precision.ENV])
    root = Path(root)
    ledger = load_ledger(root)
    stopped = [e for e in ledger.values() if e.get("state") == "running"]
    for entry in stopped:  # a driver stopped while the piece ran
        entry["state"] = entry["attempts"][-1]["state"] = "interrupted"
    if stopped:
        files.write_json(root / LEDGER, ledger)
    device = device or device_name()
    attempts = []
    for piece in plan:
        if only and piece.name not in only:
            continue
        st = state(ledger, piece.name)
        if st == "done" or (st not in ("not run", "partial") and not retry
                            and not (piece.resumable and st == "interrupted")):
            continue
        if piece.backend == "gpu" and device == "cpu":
            log(f"{piece.name}: needs a GPU")
            continue
        missing = [] if only else [n for n in piece.needs if state(ledger, n) != "done"]
        if missing:
            log(f"{piece.name}: waits for {', '.join(missing)}")
            continue
        left = budget_s - (time.monotonic() - t_start)
        limit = min(piece.timeout_s, left) if piece.resumable else piece.timeout_s
        if limit > left or (piece.resumable and left < MIN_RESUMABLE_S):
            log(f"{piece.name}: needs up to {piece.timeout_s} s, {left:.0f} s left")
            continue
        out = root / piece.name
        out.mkdir(parents=True, exist_ok=True)
        argv = _argv(piece, out.resolve(), python, (root / STATE).resolve(),
                     Path(records).resolve())
        log(f"{piece.name}: {' '.join(portable(argv))}")
        attempt = dict(piece=piece.name, state="running", exit_status=None, device=device,
                       started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       wall_s=None, timeout_s=round(limit),
                       command=[_placeholders(a, out, root, records, python) for a in argv],
                       env=env)
        entry = ledger.setdefault(piece.name, {"attempts": []})
        entry["state"] = "running"
        entry["attempts"].append(attempt)
        files.write_json(root / LEDGER, ledger)
        t0 = time.monotonic()
        with open(out / "log.txt", "a" if piece.resumable else "w") as f:
            rc = _run_group(argv, f, {**os.environ, **env}, limit)
        result = (("partial" if piece.resumable else "timeout") if rc is None
                  else "done" if rc == 0
                  else "interrupted" if piece.resumable and -rc in STOP_SIGNALS
                  else "failed")
        attempt.update(state=result, exit_status=rc, wall_s=round(time.monotonic() - t0, 1))
        entry["state"] = result
        attempts.append(attempt)
        files.write_json(root / LEDGER, ledger)
        log(f"{piece.name}: {result} in {attempt['wall_s']} s")
    return attempts


def _placeholders(arg: str, out: Path, root: Path, records: Path, python: str) -> str:
    """``arg`` with the interpreter and the piece's folders written back as placeholders (the
    ledger stays valid when the campaign folder is copied elsewhere) and any other path of
    this machine :func:`~experiments.artifacts.portable`."""
    if arg == python:
        return "{python}"
    for path, name in ((out, "{out}"), (Path(root) / STATE, "{state}"),
                       (Path(root) / SUMMARIES, "{summaries}"), (records, "{records}")):
        arg = arg.replace(str(Path(path).resolve()), name)
    return portable(arg)


def _run_group(argv: list[str], log_file, env: dict, timeout_s: float) -> int | None:
    """Run ``argv`` in its own process group; its exit status, or None when ``timeout_s`` ran
    out (the whole group is then killed: a benchmark's worker processes hold the device)."""
    proc = subprocess.Popen(argv, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
