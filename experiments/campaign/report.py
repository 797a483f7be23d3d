"""What the campaign shows: the status table of every piece (``python -m experiments campaign
--list``) and RESULTS.md's rows and section, from the ledger and the finished pieces' records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

# the paper-scale records' folder and each one's study (RESULTS.md's renderer reads them too)
from experiments.campaign.plan import PAPER_SCALE, Piece, ROOT, paper_scale_flops, pieces
from experiments.campaign.driver import load_ledger, state
from experiments.campaign.progress import (hours_text, piece_progress, rates_text, measured_rate,
                                           paper_scale_seconds, rates_by_length)


def status_markdown(root: Path = ROOT, plan: Sequence[Piece] | None = None, *,
                    live: bool = True) -> str:
    """One line per piece: step, state, last attempt's device and wall time; with ``live``,
    for the paper-scale pieces also the estimated time (each pass's FLOPs at the rate measured
    so far at its sequence length, or overall where its length has no chunk yet) and what
    their saved chunks hold (share of the FLOPs, compute time), which depend on the
    uncommitted state folder."""
    ledger = load_ledger(root)
    rate = measured_rate(root) if live else None
    by_T = rates_by_length(root) if rate else {}
    lines = ["| piece | step | what | state | last attempt |"
             + (" estimated | measured |" if live else ""),
             "|---|---|---|---|---|" + ("---|---|" if live else "")]
    for p in pieces() if plan is None else plan:
        e = ledger.get(p.name, {})
        last = e.get("attempts", [{}])[-1]
        when = ("-" if not last else
                f"{last['device']}, {last['wall_s']} s of {last['timeout_s']} s"
                if last.get("wall_s") is not None else
                f"{last['device']}, started {last.get('started', '?')}, not finished")
        est = meas = "-"
        spec = PAPER_SCALE.get(p.name.removeprefix("paper-"))
        if spec is not None:
            total = paper_scale_flops(spec)
            est = (f"{total / 1e15:.2f} PFLOP; {hours_text(paper_scale_seconds(spec, by_T, rate))} "
                   f"at {rates_text(spec, by_T, rate)}" if rate else
                   f"{total / 1e15:.2f} PFLOP")
            prog = piece_progress(Path(root), spec.name)
            if prog["seconds"]:
                meas = (f"{min(1.0, prog['flops'] / total):.0%} done in "
                        f"{hours_text(prog['seconds'])}")
        lines.append(f"| {p.name} | {p.step} | {p.about} | {state(ledger, p.name)} | {when} |"
                     + (f" {est} | {meas} |" if live else ""))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- RESULTS.md rows
def _record(root: Path, piece: str, name: str) -> dict | None:
    """A finished piece's saved JSON (``name`` under its folder), else None."""
    f = Path(root) / piece / name
    if state(load_ledger(root), piece) != "done" or not f.exists():
        return None
    return json.loads(f.read_text())


def _device(root: Path, piece: str) -> str:
    return load_ledger(root)[piece]["attempts"][-1]["device"]


def claims(root: Path = ROOT, plan: Sequence[Piece] | None = None) -> list:
    """RESULTS.md rows of the finished pieces, each naming its GPU: Table 1 at paper scale (by
    ``initialisation.table1_claim``, once every preset's pieces of an N are done), Figure 1a and
    Finding 2.2 (their claim functions), and the precision measurements (measured)."""
    from experiments.initialisation import claims as initialisation
    from bornbiased_jax.verdicts import MEASURED, Claim

    plan = list(pieces() if plan is None else plan)
    ledger = load_ledger(root)
    out = []
    t = _record(root, "precision-timing", "precision_timing.json")
    if t is not None:
        ok = [r for r in t["rows"] if r["status"] == "ok"]
        ours = "; ".join(
            f"{r['variant']}: compile {r['compile_s']} s, steady {r['steady_s']} s "
            f"({r['model_tflops']} TFLOP/s)" + (f", agreement {r['agreement']:.2%}"
                                                if "agreement" in r else "") for r in ok)
        other = "; ".join(f"{r['variant']}: {r['status']}" for r in t["rows"]
                          if r["status"] != "ok")
        out.append(Claim(f"float32 sweep timing by precision ({_device(root, 'precision-timing')})",
                         "-", ours + (f"; {other}" if other else ""), MEASURED,
                         "details: results/campaign/precision-timing/precision_timing.md",
                         "step 0"))
    c = _record(root, "precision-table1", "precision.json")
    if c is not None:
        rows = c["rows"]
        ours = "; ".join(
            f"{x}: per-sequence agreement {min(r['agreement'][x] for r in rows):.2%}-"
            f"{max(r['agreement'][x] for r in rows):.2%}, the same top-1 id in "
            f"{sum(r['same_top1'][x] for r in rows)} of {len(rows)} (preset, seed, T) rows"
            for x in c["precisions"])
        out.append(Claim(f"Table 1's predictions in other precisions vs full float32 "
                         f"({c['device']})", "-", ours, MEASURED,
                         "details: results/campaign/precision-table1/precision.json",
                         "step 0"))
    for N in (10_000, 2_000):
        mine = [p for p in plan if p.name.startswith("table1-") and p.name.split("-N")[-1]
                .split("-")[0] == str(N)]
        if not mine or any(state(ledger, p.name) != "done" for p in mine):
            continue
        recs = []
        for p in mine:
            recs += json.loads((Path(root) / p.name / "token_preference.json").read_text())[
                "records"]
        c1 = initialisation.table1_claim({"records": recs})
        c1.claim = f"Table 1 / Finding 1 at paper scale, N = {N:,} ({_device(root, mine[0].name)})"
        out.append(c1)
    for piece, name, fn in (("figure1a", "figure1", initialisation.figure1a_claim),
                            ("finding22", "figure2_finding22", initialisation.finding22_claim)):
        d = _record(root, piece, f"{name}.json")
        if d is not None:
            cl = fn(d)
            cl.claim = f"{cl.claim} at paper scale ({_device(root, piece)})"
            out.append(cl)
    return out


def section(root: Path = ROOT) -> str:
    """The RESULTS.md section of the campaign: its rows, then every piece's state."""
    from bornbiased_jax.verdicts import table
    from experiments.campaign import TITLE

    rows = claims(root)
    ledger = load_ledger(root)
    gpu = [p for p in pieces() if not p.resumable]
    ran = sum(bool(ledger.get(p.name, {}).get("attempts")) for p in gpu)
    on_gpu = _paper_scale_on_gpu(ledger)
    lines = [f"## {TITLE}", "",
             "Generated from results/campaign/ (`python -m experiments.campaign`: "
             "experiments/campaign/plan.py lists the pieces, their commands and limits). "
             + (f"{ran} of the {len(gpu)} GPU-only pieces have been attempted." if ran else
                f"None of the {len(gpu)} GPU-only pieces has run yet.")
             + (" Paper-scale passes of Sec. 3-4 have been attempted on a GPU: the last "
                "table below." if on_gpu else "")
             + " The paper-scale forward passes of Sec. 3-4 that a CPU can finish "
               "(`python -m experiments.paper_scale`, run by the same driver) are rows of the "
               "initialisation and SeedPrint sections, from their records.", ""]
    if rows:
        lines += [table(rows), ""]
    lines += ["GPU pieces:", "", status_markdown(root, gpu, live=False).rstrip("\n")]
    if on_gpu:
        lines += ["", "Paper-scale passes attempted on a GPU (their rows, once finished, are in "
                  "the initialisation and SeedPrint sections; a stopped attempt keeps only the "
                  "blocks it finished, in results/campaign/summaries/):", "",
                  "| piece | what | state | attempts on a GPU |", "|---|---|---|---|", *on_gpu]
    return "\n".join(lines)


def _paper_scale_on_gpu(ledger: dict) -> list[str]:
    """Table rows of the resumable paper-scale pieces with an attempt on a GPU: the piece, its
    state, and each GPU attempt's device, wall time of its limit and outcome."""
    rows = []
    for p in pieces():
        tries = [a for a in ledger.get(p.name, {}).get("attempts", [])
                 if a.get("device", "cpu") != "cpu"]
        if p.resumable and tries:
            said = "; ".join(f"{a['device']}: {a['wall_s']} s of {a['timeout_s']} s, "
                             f"{a['state']}" for a in tries)
            rows.append(f"| {p.name} | {p.about} | {state(ledger, p.name)} | {said} |")
    return rows
