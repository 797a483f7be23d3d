"""The campaign's driver: order, skipping, budgets, limits, backends, resumable pieces, the
ledger, and RESULTS.md rows from finished pieces (on CPU, with small stand-in commands)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bornbiased_jax import __version__, cli
from bornbiased_jax.errors import UserError
from experiments.campaign import plan as campaign
from experiments.campaign import driver, progress, report
from experiments.campaign.plan import Piece
from bornbiased_jax.verdicts import REPRODUCED


def py(code: str) -> tuple:
    return ("{python}", "-c", code)


WRITE = py("import os, sys; open(sys.argv[1] + '/out.txt', 'w').write("
           "os.environ.get('CAMPAIGN_TEST', 'unset'))")
PLAN = [
    Piece("first", "0", WRITE + ("{out}",), 20, backend="any"),
    Piece("slow", "0", py("import subprocess, sys, time; "
                          "child = subprocess.Popen([sys.executable, '-c', "
                          "'import time; time.sleep(60)']); "
                          "open(sys.argv[1] + '/child.pid', 'w').write(str(child.pid)); "
                          "time.sleep(60)") + ("{out}",), 2, backend="any"),
    Piece("broken", "1", py("import sys; sys.exit(3)"), 20, backend="any"),
    Piece("after-broken", "1", WRITE + ("{out}",), 20, needs=("broken",), backend="any"),
    Piece("after-first", "1", WRITE + ("{out}",), 20, needs=("first",), backend="any"),
    Piece("too-long", "2", WRITE + ("{out}",), 10_000, backend="any"),
]


def test_runs_in_order_records_every_attempt_and_skips_what_is_finished(tmp_path):
    logs = []
    attempts = driver.run(tmp_path, 600, plan=PLAN, env={"CAMPAIGN_TEST": "yes"},
                            log=logs.append)
    assert [(a["piece"], a["state"]) for a in attempts] == [
        ("first", "done"), ("slow", "timeout"), ("broken", "failed"), ("after-first", "done")]
    assert attempts[1]["exit_status"] is None and attempts[2]["exit_status"] == 3
    assert attempts[0]["command"][-1] == "{out}" and attempts[0]["env"] == {"CAMPAIGN_TEST": "yes"}
    # the ledger and the log name no folder of this machine: the interpreter is {python}
    assert attempts[0]["command"][0] == "{python}"
    assert not any(sys.executable in m or str(tmp_path) in m for m in logs)
    assert (tmp_path / "first" / "out.txt").read_text() == "yes"  # the environment reached it
    # the time limit stopped the piece's whole process group, its own child included
    assert _gone(int((tmp_path / "slow" / "child.pid").read_text()))
    assert "after-broken: waits for broken" in logs
    assert any(m.startswith("too-long: needs up to 10000 s") for m in logs)
    ledger = driver.load_ledger(tmp_path)
    assert {n: e["state"] for n, e in ledger.items()} == {
        "first": "done", "slow": "timeout", "broken": "failed", "after-first": "done"}
    # the next window: nothing finished is repeated, known failures are not retried
    assert driver.run(tmp_path, 600, plan=PLAN, log=logs.append) == []
    again = driver.run(tmp_path, 600, plan=PLAN, retry=True, log=logs.append)
    assert [a["piece"] for a in again] == ["slow", "broken"]
    assert len(driver.load_ledger(tmp_path)["broken"]["attempts"]) == 2
    # asked for by name, a piece runs without its prerequisites
    only = driver.run(tmp_path, 600, plan=PLAN, only=["after-broken"], log=logs.append)
    assert [(a["piece"], a["state"]) for a in only] == [("after-broken", "done")]
    status = report.status_markdown(tmp_path, PLAN)
    assert "| broken | 1 |  | failed | cpu, " in status and "| too-long | 2 |  | not run | - |" \
        in status


def _gone(pid: int, wait_s: float = 10.0) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting for its parent counts)."""
    import time

    t0 = time.monotonic()
    while time.monotonic() - t0 < wait_s:
        try:
            if "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text():
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


def test_a_driver_stopped_mid_piece_leaves_it_interrupted(tmp_path):
    """The attempt is in the ledger before the piece starts, so a driver killed by the window's
    own limit leaves a trace, read as interrupted (not retried unless asked) next time."""
    import signal

    code = ("import sys; from experiments.campaign import driver, plan as campaign; "
            "driver.run(sys.argv[1], 60, plan=[campaign.Piece('hang', '0', "
            "('{python}', '-c', 'import time; time.sleep(20)'), 30, backend='any')])")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=campaign.REPO)
    ledger = tmp_path / campaign.LEDGER
    import time

    t0 = time.monotonic()
    while not ledger.exists() and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (attempt,) = driver.load_ledger(tmp_path)["hang"]["attempts"]
    assert attempt["state"] == "running" and attempt["wall_s"] is None and attempt["started"]
    plan = [Piece("hang", "0", WRITE + ("{out}",), 20, backend="any")]
    assert "started " in report.status_markdown(tmp_path, plan)
    assert driver.run(tmp_path, 60, plan=plan, log=lambda m: None) == []
    assert driver.state(driver.load_ledger(tmp_path), "hang") == "interrupted"
    (again,) = driver.run(tmp_path, 60, plan=plan, retry=True, log=lambda m: None)
    assert again["state"] == "done"


def test_the_matmul_precision_reaches_pieces_in_jax_spelling(tmp_path):
    plan = [Piece("env", "0", py("import os, sys; open(sys.argv[1] + '/out.txt', 'w').write("
                                 "os.environ['JAX_DEFAULT_MATMUL_PRECISION'])") + ("{out}",), 20,
                  backend="any")]
    (a,) = driver.run(tmp_path, 60, plan=plan, env={"JAX_DEFAULT_MATMUL_PRECISION": "bf16x6"},
                        log=lambda m: None)
    assert (tmp_path / "env" / "out.txt").read_text() == "BF16_BF16_F32_X6"
    assert a["env"] == {"JAX_DEFAULT_MATMUL_PRECISION": "BF16_BF16_F32_X6"}
    with pytest.raises(UserError, match="unknown matmul precision 'fp32'"):
        driver.run(tmp_path, 60, plan=plan, env={"JAX_DEFAULT_MATMUL_PRECISION": "fp32"})


def test_bad_requests_are_clear_errors(tmp_path):
    with pytest.raises(UserError, match=r"unknown piece\(s\) \['nope'\]"):
        driver.run(tmp_path, 60, plan=PLAN, only=["nope"])
    with pytest.raises(UserError, match="budget must be positive"):
        driver.run(tmp_path, 0, plan=PLAN)
    assert not (tmp_path / campaign.LEDGER).exists()


PARSE_ONLY = """
import argparse, json, runpy, sys
class Parsed(Exception):
    pass
parse = argparse.ArgumentParser.parse_args
def parse_then_stop(self, args=None, namespace=None):
    parse(self, args, namespace)
    raise Parsed
argparse.ArgumentParser.parse_args = parse_then_stop
for argv in json.loads(sys.argv[1]):
    sys.argv = argv[1:] if argv[0] == "-m" else argv
    try:
        if argv[0] == "-m":
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(__import__("pathlib").Path(argv[0]).parent))
            runpy.run_path(argv[0], run_name="__main__")
    except Parsed:
        print("parsed")
"""


def test_the_plan_is_well_formed_and_its_commands_parse():
    everything = campaign.pieces()
    names = [p.name for p in everything]
    assert len(names) == len(set(names))
    plan = [p for p in everything if not p.resumable]  # the GPU window's pieces
    for p in plan:
        assert set(p.needs) <= set(names[:names.index(p.name)]), p.name  # needs come first
        assert 0 < p.timeout_s <= 480, p.name  # a piece fits the driver's default budget
        argv = [a.replace("{out}", "/tmp/x") for a in p.command]
        if argv[1:3] == ["-m", "bornbiased_jax.cli"]:
            args = cli.build_parser().parse_args(argv[3:])
            assert args.command == "sweep" and args.num_seqs in (2_000, 10_000)
    # every other piece's flags and values pass its script's own parser (in a child process:
    # the scripts are run, not imported, and stop right after parsing)
    others = [[a.replace("{out}", "/tmp/x") for a in p.command[1:]] for p in plan
              if p.command[1:3] != ("-m", "bornbiased_jax.cli")]
    assert len(others) == 8  # timing, precision, SmolLM2-shaped negatives, Figure 1a, Finding
    # 2.2, three speed pieces
    out = subprocess.run([sys.executable, "-c", PARSE_ONLY, json.dumps(others)],
                         cwd=campaign.REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["parsed"] * len(others)
    # Table 1 at the paper's settings: every preset, length and seed, at both N
    sweeps = [p for p in plan if p.name.startswith("table1-")]
    covered = set()
    for p in sweeps:
        a = cli.build_parser().parse_args([x.replace("{out}", "/tmp/x") for x in p.command[3:]])
        for seed in a.seeds:
            covered.add((a.preset[0], a.seq_len[0], a.num_seqs, int(seed)))
    assert covered == {(m, T, N, s) for m in ("gpt2-rope-nano", "llama2-nano", "gpt2-rope-1.2b")
                       for T in (64, 256, 1024) for N in (2_000, 10_000) for s in (42, 43)}


def _finish(root: Path, name: str, files: dict, device: str = "NVIDIA H100 80GB HBM3"):
    ledger = driver.load_ledger(root)
    ledger[name] = {"state": "done", "attempts": [dict(piece=name, state="done", device=device,
                                                       wall_s=1.0, timeout_s=9)]}
    (root / campaign.LEDGER).write_text(json.dumps(ledger))
    for fname, obj in files.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / fname).write_text(json.dumps(obj))


def test_the_section_lists_paper_scale_passes_attempted_on_a_gpu(tmp_path):
    """A resumable paper-scale piece shows in the campaign's section once it has an attempt on a
    GPU (each such attempt with its device, wall time, limit and outcome); its CPU attempts
    and pieces only ever run on a CPU do not."""
    from bornbiased_jax import files

    def attempt(device, wall, limit, st):
        return {"device": device, "wall_s": wall, "timeout_s": limit, "state": st}

    assert "attempted on a GPU" not in report.section(tmp_path)
    assert "have been attempted on a GPU" not in report.section(tmp_path)
    files.write_json(tmp_path / campaign.LEDGER, {
        "paper-table1a": {"state": "done", "attempts": [attempt("cpu", 10.0, 99, "done")]},
        "paper-table1c-t256": {"state": "partial", "attempts": [
            attempt("cpu", 5.0, 9, "partial"), attempt("H100", 151.8, 151, "partial")]}})
    text = report.section(tmp_path)
    assert "| paper-table1c-t256 | Table 1(c) at a second length" in text
    assert "| partial | H100: 151.8 s of 151 s, partial |" in text
    assert "None of the" in text
    assert "Paper-scale passes of Sec. 3-4 have been attempted on a GPU" in text
    assert "| paper-table1a |" not in text and "cpu: 5.0 s" not in text

def _pref(preset, seed, T, freq, log10_p, N=10_000):
    return dict(preset=preset, seed=seed, seq_len=T, num_seqs=N, vocab_size=50304,
                input="tokens", top1_id=seed, top1_count=int(freq * N), top1_freq=freq,
                log10_p=log10_p, distinct_tokens=100, top_counts=[])


def test_rows_come_from_finished_pieces_only(tmp_path):
    plan = [p for p in campaign.pieces() if p.name.startswith("table1-") and "N10000" in p.name]
    assert report.claims(tmp_path, plan) == []
    assert "None of the" in report.section(tmp_path)
    assert "GPU-only pieces has run yet." in report.section(tmp_path)
    for i, p in enumerate(plan):
        a = cli.build_parser().parse_args([x.replace("{out}", "/tmp/x") for x in p.command[3:]])
        gpt2 = a.preset[0].startswith("gpt2")
        recs = [_pref(a.preset[0], int(s), a.seq_len[0], 0.05 if gpt2 else 0.0008,
                      -150.0 if gpt2 else -2.0) for s in a.seeds]
        if i < len(plan) - 1:
            _finish(tmp_path, p.name, {"token_preference.json": {"run": {}, "records": recs}})
    assert report.claims(tmp_path, plan) == []  # one piece missing: no Table 1 row yet
    _finish(tmp_path, plan[-1].name, {"token_preference.json": {"run": {}, "records": recs}})
    (row,) = report.claims(tmp_path, plan)
    assert row.claim == "Table 1 / Finding 1 at paper scale, N = 10,000 (NVIDIA H100 80GB HBM3)"
    assert row.verdict == REPRODUCED and "GPT-2 (N = 10,000, T = [64, 256, 1024])" in row.ours


def test_precision_rows_name_every_setting_and_failures(tmp_path):
    _finish(tmp_path, "precision-timing", {"precision_timing.json": {"settings": {}, "rows": [
        dict(variant="default", status="ok", compile_s=30.1, steady_s=1.2, model_tflops=140.0,
             agreement=0.998),
        dict(variant="highest", status="timeout")]}})
    _finish(tmp_path, "precision-table1", {"precision.json": {
        "device": "NVIDIA H100 80GB HBM3", "precisions": ["default", "bf16x6"], "rows": [
            dict(agreement={"default": 0.99, "bf16x6": 1.0},
                 same_top1={"default": False, "bf16x6": True}),
            dict(agreement={"default": 0.995, "bf16x6": 1.0},
                 same_top1={"default": True, "bf16x6": True})]}})
    timing, table1 = report.claims(tmp_path)
    assert "default: compile 30.1 s, steady 1.2 s (140.0 TFLOP/s), agreement 99.80%" in timing.ours
    assert "highest: timeout" in timing.ours
    assert ("default: per-sequence agreement 99.00%-99.50%, the same top-1 id in 1 of 2"
            in table1.ours)
    assert "bf16x6: per-sequence agreement 100.00%-100.00%, the same top-1 id in 2 of 2" \
        in table1.ours


def test_the_driver_command_line(tmp_path, capsys):
    out = subprocess.run([sys.executable, "-m", "experiments.campaign", "--list", "--root",
                          str(tmp_path)], cwd=campaign.REPO, capture_output=True, text=True)
    assert out.returncode == 0 and "| precision-timing | 0 float32 on the GPU |" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "experiments.campaign", "--env", "X",
                          "--root", str(tmp_path)], cwd=campaign.REPO, capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "--env takes KEY=VALUE, got 'X'" in bad.stderr
    outside = subprocess.run([sys.executable, "-m", "experiments.campaign", "--root",
                              str(tmp_path), "--bundle", str(tmp_path / "b.tar.gz")],
                             cwd=campaign.REPO, capture_output=True, text=True)
    assert outside.returncode == 2 and "lies outside it" in outside.stderr
    assert not (tmp_path / "b.tar.gz").exists()


def test_gpu_pieces_wait_for_a_gpu_and_run_first_on_one(tmp_path):
    plan = [Piece("on-gpu", "0", WRITE + ("{out}",), 20),
            Piece("anywhere", "1", WRITE + ("{out}",), 20, backend="any")]
    logs = []
    got = driver.run(tmp_path, 60, plan=plan, device="cpu", log=logs.append)
    assert [a["piece"] for a in got] == ["anywhere"] and "on-gpu: needs a GPU" in logs
    got = driver.run(tmp_path / "gpu", 60, plan=plan, device="NVIDIA H100", log=logs.append)
    assert [a["piece"] for a in got] == ["on-gpu", "anywhere"]


RESUMABLE = py("import os, sys, time; f = sys.argv[1] + '/count'; "
               "n = int(open(f).read()) if os.path.exists(f) else 0; "
               "open(f, 'w').write(str(n + 1)); "
               "time.sleep(0 if n >= 1 else 30)") + ("{out}",)


def test_a_resumable_piece_runs_to_the_budget_and_continues_next_time(tmp_path, monkeypatch):
    """A resumable piece starts with any budget above the minimum, is stopped when the budget
    ends ('partial', not a failure), and runs again next time without being asked."""
    monkeypatch.setattr(driver, "MIN_RESUMABLE_S", 1)
    plan = [Piece("long", "5", RESUMABLE, 12 * 3600, backend="any", resumable=True)]
    (a,) = driver.run(tmp_path, 3, plan=plan, device="cpu", log=lambda m: None)
    assert a["state"] == "partial" and a["timeout_s"] <= 3 and a["wall_s"] < 20
    (b,) = driver.run(tmp_path, 60, plan=plan, device="cpu", log=lambda m: None)
    assert b["state"] == "done" and (tmp_path / "long" / "count").read_text() == "2"
    assert driver.run(tmp_path, 60, plan=plan, device="cpu", log=lambda m: None) == []


def test_a_resumable_piece_stopped_by_a_signal_is_interrupted_not_failed(tmp_path):
    """SIGTERM / SIGINT / SIGHUP stop a resumable piece from outside: 'interrupted', resumed
    next time without being asked; SIGKILL (the out-of-memory killer's) and a non-resumable
    piece's stop stay 'failed'."""
    import signal

    def stop(sig):  # the second run of the piece finishes
        # the signal's default action first: a shell may have set SIGHUP or SIGINT ignored
        dfl = "" if sig == signal.SIGKILL else f"signal.signal({int(sig)}, signal.SIG_DFL); "
        return py("import os, sys, signal; f = sys.argv[1] + '/count'; "
                  "n = int(open(f).read()) if os.path.exists(f) else 0; "
                  f"open(f, 'w').write(str(n + 1)); {dfl}"
                  f"n or os.kill(os.getpid(), {int(sig)})") + ("{out}",)

    plan = [Piece(f"r{int(sig)}", "5", stop(sig), 60, backend="any", resumable=True)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL)]
    plan.append(Piece("once", "5", stop(signal.SIGTERM), 60, backend="any"))
    first = driver.run(tmp_path, 600, plan=plan, log=lambda m: None)
    assert [(a["piece"], a["state"], a["exit_status"]) for a in first] == [
        ("r15", "interrupted", -15), ("r2", "interrupted", -2), ("r1", "interrupted", -1),
        ("r9", "failed", -9), ("once", "failed", -15)]
    again = driver.run(tmp_path, 600, plan=plan, log=lambda m: None)
    assert [(a["piece"], a["state"]) for a in again] == [
        ("r15", "done"), ("r2", "done"), ("r1", "done")]


def test_paper_scale_pieces_parse_and_estimate_from_measured_chunks(tmp_path):
    pieces = [p for p in campaign.pieces() if p.resumable]
    assert [p.name for p in pieces] == [f"paper-{n}" for n in campaign.PAPER_SCALE]
    others = [[a.replace("{state}", "/tmp/s").replace("{records}", "/tmp/r")
               for a in p.command[1:]] for p in pieces]
    out = subprocess.run([sys.executable, "-c", PARSE_ONLY, json.dumps(others)],
                         cwd=campaign.REPO, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split() == ["parsed"] * len(others), out.stderr
    # the estimate comes from the chunks saved so far: their FLOPs over their seconds
    import dataclasses

    from bornbiased_jax import resume
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.flops import forward_flops

    cfg = get_preset("gpt2-rope-tiny")
    store = resume.ChunkStore(tmp_path / campaign.STATE / "table1a" / "T8", {
        "probe": "p", "model": dataclasses.asdict(cfg), "seeds": [1, 2],
        "inputs": {"shape": [10, 8]}})
    store.set_plan({"seed_chunk": 2, "seq_chunk": 5})
    store.save((0, 0), {"a": np.zeros(1)}, seconds=120.0)
    store.save((0, 5), {"a": np.zeros(1)}, seconds=120.0)
    rate = progress.measured_rate(tmp_path)
    assert rate == pytest.approx(2 * 10 * forward_flops(cfg, 8, last_only=True) / 240.0)
    listing = report.status_markdown(tmp_path)
    spec = campaign.PAPER_SCALE["table1a"]
    hours = campaign.paper_scale_flops(spec) / rate / 3600
    assert f"{campaign.paper_scale_flops(spec) / 1e15:.2f} PFLOP; {hours:.1f} h at" in listing
    assert "| paper-table1a |" in listing and "done in 4 min" in listing


def test_table2_parts_are_kept_and_read_back_not_recomputed(tmp_path, monkeypatch):
    """table2 keeps each block type's results in --summaries as soon as it is done: a run
    after a new machine (no state folder) reads the kept parts instead of computing them, and
    returns the same record; a part kept for another setting, or under other versions without
    --resume-across-versions, is refused naming the difference."""
    import json
    from types import SimpleNamespace as NS

    import numpy as np

    from bornbiased_jax.errors import UserError
    from experiments.campaign import paper_pieces as PS

    calls = []

    def fake_profile(cfg, seeds, kind, T, state, budget_gb=None):
        calls.append(cfg.block)
        stat = NS(mean=0.5, sd=0.1, log10_p=-3.0, z=4.0)
        top = (np.arange(PS.N_SEQS, dtype=np.int32) % 50)[None]  # 40 of each of 50 tokens
        top[0, :1100] = 7
        return {"final": [stat], "blocks": [[stat, stat]], "top": top}

    monkeypatch.setattr(PS, "_profile", fake_profile)
    first = PS.run_table2(tmp_path / "state", tmp_path / "kept")
    assert calls == ["attn_mlp", "attn_only", "mlp_only"]
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == [
        "attn_mlp.json", "attn_only.json", "mlp_only.json"]
    again = PS.run_table2(tmp_path / "elsewhere", tmp_path / "kept")  # a new machine
    assert calls == ["attn_mlp", "attn_only", "mlp_only"] and again == first
    assert first["table2_figure3"][1][0]["top1_freq"] == (1100 + 18) / PS.N_SEQS
    f = tmp_path / "kept" / "attn_only.json"
    saved = json.loads(f.read_text())
    saved["identity"]["seq_len"] = 512
    f.write_text(json.dumps(saved))
    with pytest.raises(UserError, match=r"another setting \(differs in \['seq_len'\]\)"):
        PS.run_table2(tmp_path / "state", tmp_path / "kept")
    saved["identity"]["seq_len"] = 1024
    saved["versions"] = {**saved["versions"], "jax": "0.0.1"}
    f.write_text(json.dumps(saved))
    with pytest.raises(UserError, match="other versions"):
        PS.run_table2(tmp_path / "state", tmp_path / "kept")
    monkeypatch.setattr(PS, "ALLOW_VERSIONS", True)
    assert PS.run_table2(tmp_path / "state", tmp_path / "kept") == first


def test_progress_counts_kept_parts_once(tmp_path):
    """A kept part of table2 counts in --list's progress with its FLOPs and saved seconds,
    and the scratch state it was computed from is not counted a second time."""
    import dataclasses

    from bornbiased_jax import resume
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.flops import forward_flops
    from experiments.campaign import paper_pieces as PS

    cfg = get_preset("gpt2-rope-tiny")
    ident = {"model": dataclasses.asdict(cfg), "seeds": [42], "input": "gaussian",
             "seq_len": 8, "num_seqs": 10, "probe": "last_token", "probe_seed": 0}
    PS._kept(tmp_path / campaign.SUMMARIES / "table2", "attn_mlp", ident,
             lambda: ({"row": {}}, 600.0))
    store = resume.ChunkStore(tmp_path / campaign.STATE / "table2" / "attn_mlp", {
        "probe": "p", "model": dataclasses.asdict(cfg), "seeds": [42],
        "inputs": {"shape": [10, 8]}})
    store.set_plan({"seed_chunk": 1, "seq_chunk": 10})
    store.save((0, 0), {"a": np.zeros(1)}, seconds=600.0)
    one = 10 * forward_flops(cfg, 8, last_only=True)
    assert progress.piece_progress(tmp_path, "table2") == {"flops": one, "seconds": 600.0}
    # the part in progress (not yet kept) counts from its chunks
    store = resume.ChunkStore(tmp_path / campaign.STATE / "table2" / "attn_only", {
        "probe": "p", "model": dataclasses.asdict(cfg), "seeds": [42],
        "inputs": {"shape": [10, 8]}})
    store.set_plan({"seed_chunk": 1, "seq_chunk": 5})
    store.save((0, 0), {"a": np.zeros(1)}, seconds=300.0)
    got = progress.piece_progress(tmp_path, "table2")
    assert got == {"flops": one + one // 2, "seconds": 900.0}
    assert progress.measured_rate(tmp_path) == pytest.approx(got["flops"] / 900.0)
    assert "| paper-table2 |" in report.status_markdown(tmp_path)
    # table4a's features keep their chunks one folder below the part's (group-0/)
    name = "llama2-tiny-tokens"
    ident4 = {"model": dataclasses.asdict(cfg), "seeds": [42, 123], "seq_len": 8, "n": 10}
    PS._kept(tmp_path / campaign.SUMMARIES / "table4a", name, ident4, lambda: ([], 60.0))
    store = resume.ChunkStore(tmp_path / campaign.STATE / "table4a" / name / "group-0", {
        "probe": "p", "model": dataclasses.asdict(cfg), "seeds": [42, 123],
        "inputs": {"shape": [10, 8]}})
    store.set_plan({"seed_chunk": 2, "seq_chunk": 10})
    store.save((0, 0), {"a": np.zeros(1)}, seconds=60.0)
    assert progress.piece_progress(tmp_path, "table4a") == {"flops": 2 * one, "seconds": 60.0}


def test_a_records_command_names_repository_paths_relative_to_its_root():
    """The campaign passes absolute folders; a record's command names those inside the
    repository relative to its root (it runs from there) and leaves others as they are."""
    from experiments.artifacts import REPO, repo_relative

    args = ["table1a", "--state", str(REPO / "results/campaign/state"),
            f"--records={REPO / 'results/records/paper'}", "--summaries", "/elsewhere/summaries"]
    got = " ".join(map(repo_relative, args))
    assert got == ("table1a --state results/campaign/state "
                   "--records=results/records/paper --summaries /elsewhere/summaries")


def test_the_seed_spread_piece_writes_one_table1_row_per_seed(tmp_path, monkeypatch):
    """table1a-seeds runs the summarised T = 64 pass of its 20 seeds (kept in --summaries)
    and writes one Table 1 row per seed with the shape, N, T and seeds in its settings."""
    import numpy as np

    from experiments.campaign import paper_pieces as PS

    seen = {}

    def fake(cfg, seeds, kind, T, state, budget_gb=None):
        seen.update(preset=cfg.name, seeds=list(seeds), kind=kind, T=T, state=state,
                    shared_embedding=cfg.shared_embedding)
        top = np.tile(np.arange(PS.N_SEQS, dtype=np.int32) % 100, (len(seeds), 1))
        top[:, :60] = 7  # 60 + 19 of 2,000 predict token 7
        return {"top": top}

    monkeypatch.setattr(PS, "_summarised", fake)
    out = PS.RUNNERS["table1a-seeds"](tmp_path / "state", tmp_path / "kept")
    assert seen == {"preset": "gpt2-rope-nano", "seeds": list(range(44, 64)), "kind": "tokens",
                    "T": 64, "state": tmp_path / "kept" / "T64", "shared_embedding": False}
    settings, recs, _ = out["table1a_seeds"]
    assert settings["seeds"] == list(range(44, 64)) and settings["num_seqs"] == 2000
    assert settings["layers"] == 12 and settings["seq_len"] == 64
    assert settings["shared_embedding"] is False  # each seed its own embedding draw
    assert [r.seed for r in recs] == list(range(44, 64))
    assert all(r.top1_id == 7 and r.top1_count == 79 for r in recs)
    assert PS.STUDY["table1a_seeds"] == "initialisation"


def test_state_chunks_count_each_ragged_chunk_and_its_seconds(tmp_path):
    """A chunk at the edge of the grid holds fewer seeds or sequences: its FLOPs count those
    alone (3 seeds in chunks of 2, 10 sequences in chunks of 4); a chunk saved without seconds
    counts 0 s."""
    import dataclasses

    from bornbiased_jax import resume
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.flops import forward_flops

    cfg = get_preset("gpt2-rope-tiny")
    ident = {"probe": "p", "model": dataclasses.asdict(cfg), "seeds": [1, 2, 3],
             "inputs": {"shape": [10, 8]}}
    store = resume.ChunkStore(tmp_path / "s", ident)
    store.set_plan({"seed_chunk": 2, "seq_chunk": 4})
    store.save((0, 0), {"a": np.zeros(1)}, seconds=10.0)
    store.save((2, 8), {"a": np.zeros(1)}, seconds=3.0)
    store.save((0, 8), {"a": np.zeros(1)})
    per_seq = forward_flops(cfg, 8, last_only=True)
    assert sorted(progress.state_chunks(tmp_path / "s" / "state.json")) == sorted(
        [(2 * 4 * per_seq, 10.0), (1 * 2 * per_seq, 3.0), (2 * 2 * per_seq, 0.0)])
    assert progress.state_progress(tmp_path) == {"flops": 14 * per_seq, "seconds": 13.0}


def test_a_pieces_compute_seconds_sum_its_chunks_wherever_their_state_sits(tmp_path):
    """A sweep keeps its state.json in its folder; the SeedPrint feature pass (table4a) one
    per seed group below it (group-0/, group-1/): a piece's compute seconds sum every chunk
    of both, and an empty or missing folder counts 0 s."""
    import dataclasses

    from bornbiased_jax import resume
    from bornbiased_jax.presets import get_preset
    from experiments.campaign import paper_pieces as PS

    cfg = get_preset("gpt2-rope-tiny")
    ident = {"probe": "p", "model": dataclasses.asdict(cfg), "seeds": [1, 2],
             "inputs": {"shape": [10, 8]}}
    for folder, secs in (("sweep", (10.0, 2.5)), ("part/group-0", (7.0,)),
                         ("part/group-1", (1.25, 0.5))):
        store = resume.ChunkStore(tmp_path / folder, ident)
        store.set_plan({"seed_chunk": 2, "seq_chunk": 5})
        for i, s in enumerate(secs):
            store.save((0, 5 * i), {"a": np.zeros(1)}, seconds=s)
    assert PS._seconds(tmp_path / "sweep") == 12.5
    assert PS._seconds(tmp_path / "part") == 8.8  # 7 + 1.25 + 0.5, rounded to 0.1 s
    assert PS._seconds(tmp_path / "sweep", tmp_path / "part") == 21.2
    assert PS._seconds(tmp_path / "missing") == 0.0


def test_table4a_at_the_nano_shape_gives_each_seed_its_own_embedding(tmp_path, monkeypatch):
    """Table 4a's four parts (GPT-2-scaled and HF init, token and Gaussian inputs) compare
    unrelated seeds: each seed draws its own embedding, in the parts' identities and in the
    record's settings (a shared draw would feed every model the same token vectors)."""
    from experiments.campaign import paper_pieces as PS

    seen = []

    def fake(cfg, kind, folder):
        seen.append((cfg.name, kind, cfg.shared_embedding, cfg.n_layers, cfg.d_model))
        return [{"model": cfg.name, "input": kind}], 1.0

    monkeypatch.setattr(PS, "_table4a_part", fake)
    out = PS.RUNNERS["table4a"](tmp_path / "state", tmp_path / "kept")
    assert sorted(seen) == sorted((f"llama2-nano-{i}", k, False, 12, 768)
                                  for i in ("gpt2init", "hfinit") for k in ("tokens", "gaussian"))
    settings, recs, secs = out["table4a"]
    assert settings["shared_embedding"] is False and settings["n"] == 2000
    assert len(recs) == 4 and secs == 4.0
    kept = [json.loads(f.read_text()) for f in sorted((tmp_path / "kept").glob("*.json"))]
    assert len(kept) == 4 and all(k["identity"]["model"]["shared_embedding"] is False
                                  for k in kept)


def test_table1b_at_the_papers_n_runs_the_llama_passes_on_10000_sequences(tmp_path,
                                                                         monkeypatch):
    """table1b-n10k: Table 1(b)'s LLaMA-2 rows at N = 10,000, the N their p-values imply,
    T = 64 and 256, kept as per-block sums; the record says N = 10,000."""
    import numpy as np

    from experiments.campaign import paper_pieces as PS

    seen = []

    def fake(cfg, seeds, kind, T, state, budget_gb=None, n=PS.N_SEQS):
        seen.append((cfg.name, list(seeds), T, n, state))
        top = np.tile(np.arange(n, dtype=np.int32) % 5000, (len(seeds), 1))
        return {"top": top}

    monkeypatch.setattr(PS, "_summarised", fake)
    out = PS.RUNNERS["table1b-n10k"](tmp_path / "state", tmp_path / "kept")
    assert seen == [("llama2-nano", [42, 43], T, 10_000, tmp_path / "kept" / f"T{T}")
                    for T in (64, 256)]
    settings, recs, _ = out["table1b_n10k"]
    assert settings["num_seqs"] == 10_000 and settings["seq_lens"] == [64, 256]
    assert [(r.seed, r.seq_len, r.num_seqs) for r in recs] == [
        (42, 64, 10_000), (43, 64, 10_000), (42, 256, 10_000), (43, 256, 10_000)]
    assert PS.STUDY["table1b_n10k"] == "initialisation"
    spec = campaign.PAPER_SCALE["table1b-n10k"]
    assert [p[2:] for p in spec.passes] == [(64, 20_000), (256, 20_000)]



def test_the_second_length_and_larger_n_pieces_run_the_passes_they_name(tmp_path, monkeypatch):
    """table1c-t256 (1.2B, T = 256, N = 2,000, the 1.2B piece's memory budget),
    table1b-n10k-t1024 (LLaMA-2 nano, T = 1,024, N = 10,000) and table4a-n10k (the HF init's
    Gaussian pairs at n = 10,000, each seed its own embedding): the passes their runners ask
    for, the records they name, and the FLOPs the plan counts for them."""
    import numpy as np

    from experiments.campaign import paper_pieces as PS

    seen, parts = [], []

    def fake(cfg, seeds, kind, T, state, budget_gb=None, n=PS.N_SEQS):
        seen.append((cfg.name, list(seeds), kind, T, n, budget_gb, state))
        return {"top": np.tile(np.arange(n, dtype=np.int32) % 5000, (len(seeds), 1))}

    def part(cfg, kind, folder, n=PS.N_SEQS):
        parts.append((cfg.name, kind, cfg.shared_embedding, n, folder))
        return [{"model": cfg.name, "input": kind}], 2.0

    monkeypatch.setattr(PS, "_summarised", fake)
    monkeypatch.setattr(PS, "_table4a_part", part)
    kept = tmp_path / "kept"
    out = PS.RUNNERS["table1c-t256"](tmp_path / "state", kept)
    out.update(PS.RUNNERS["table1b-n10k-t1024"](tmp_path / "state", kept))
    out.update(PS.RUNNERS["table4a-n10k"](tmp_path / "state", kept))
    assert seen == [("gpt2-rope-1.2b", [42, 43], "tokens", 256, 2000, 16.0, kept / "T256"),
                    ("llama2-nano", [42, 43], "tokens", 1024, 10_000, None, kept / "T1024")]
    assert parts == [("llama2-nano-hfinit", "gaussian", False, 10_000,
                      tmp_path / "state" / "llama2-nano-hfinit-gaussian-n10000")]
    assert out["table1c_t256"][0]["seq_lens"] == [256]
    assert out["table1b_n10k_t1024"][0]["num_seqs"] == 10_000
    settings, recs, secs = out["table4a_n10k"]
    assert settings["n"] == 10_000 and settings["inputs"] == ["gaussian"] and secs == 2.0
    assert {PS.STUDY[n] for n in ("table1c_t256", "table1b_n10k_t1024")} == {"initialisation"}
    assert PS.STUDY["table4a_n10k"] == "seedprint"
    assert [p[2:] for p in campaign.PAPER_SCALE["table1b-n10k-t1024"].passes] == [(1024, 20_000)]
    assert [p[2:] for p in campaign.PAPER_SCALE["table4a-n10k"].passes] == [(256, 40_000)]
    # the kept part is read back, not recomputed, on the next run
    PS.RUNNERS["table4a-n10k"](tmp_path / "state", kept)
    assert len(parts) == 1


def test_figure10_at_the_papers_shape_keeps_tokens_and_max_dimensions_per_block(tmp_path,
                                                                                 monkeypatch):
    """figure10: GPT-2+RoPE nano, seed 42, T = 1,024, N = 10,000 in 8 blocks of 1,250 kept as
    each sequence's predicted token and max hidden dimension (of the final block's last-token
    state); the record's rows are Figure 10's (largest counts, Bonferroni p), and its RESULTS.md
    row stands beside the CPU one, untestable until the record exists."""
    import numpy as np

    from bornbiased_jax import blockwise
    from experiments.campaign import paper_pieces as PS
    from experiments.initialisation import paper_claims

    out = {"top": np.array([[7, 7, 3]]), "hidden": np.zeros((1, 3, 13, 4))}
    out["hidden"][0, :, -1] = [[0, 5, 0, 0], [0, 0, 0, 9], [0, 5, 1, 0]]
    out["hidden"][0, :, 0, 0] = 99  # an earlier block's maximum plays no part
    sums = PS.figure10_sums(out)
    assert sums["top"].tolist() == [[7, 7, 3]] and sums["maxdim"].tolist() == [[1, 3, 1]]
    seen = {}

    def fake(probe, cfg, seeds, xs, *, summarise, block, state, **k):
        seen.update(preset=cfg.name, seeds=list(seeds), shape=xs.shape, block=block,
                    state=state, probe=k["state_identity"]["probe"])
        n = xs.shape[0] // block
        return [{"top": np.full((1, block), 11 if b < 2 else b), "maxdim":
                 np.full((1, block), 5)} for b in range(n)]

    monkeypatch.setattr(blockwise, "blockwise_sweep", fake)
    res = PS.RUNNERS["figure10"](tmp_path / "state", tmp_path / "kept")
    assert seen == {"preset": "gpt2-rope-nano", "seeds": [42], "shape": (10_000, 1024),
                    "block": 1250, "state": tmp_path / "kept" / "T1024",
                    "probe": "figure10_counts"}
    settings, rows, _ = res["figure10"]
    assert settings["num_seqs"] == 10_000 and settings["seq_len"] == 1024
    assert rows["token_top_counts"][0] == 2500 and rows["dim_counts_sorted"][0] == 10_000
    assert rows["token_log10_p"] < -5 and PS.STUDY["figure10"] == "initialisation"
    rec = {"run": {"settings": settings}, "records": rows}
    row = paper_claims.paper_scale_claims({"figure10": rec})["Figure 10 / Finding 1 (extended)"]
    assert row.claim.startswith("Figure 10 / Finding 1 (extended) [paper scale: 12L, 12H, "
                                "d = 768, N = 10,000, T = 1,024, seed 42]")
    assert row.verdict == "reproduced" and "target_num_seqs" not in settings
    assert "so far" not in row.claim + row.why
    none = paper_claims.paper_scale_claims({})["Figure 10 / Finding 1 (extended)"]
    assert none.verdict == "untestable" and "paper_scale figure10" in none.ours

FAKE_PIECE = """
import json, os, runpy, sys
import jax
from bornbiased_jax import precision
from experiments.campaign import paper_pieces as PS
seen = sys.argv.pop(1)
def fake(state, summaries):
    open(seen, "w").write(precision.current() + chr(10) + str(jax.config.jax_compilation_cache_dir))
    return {"table1b_n10k": ({"layers": 12}, [{"seed": 42}], 1.5)}
PS.RUNNERS["table1b-n10k"] = fake
sys.argv[0] = "paper_scale"
runpy.run_module("experiments.paper_scale", run_name="__main__")
"""


def test_paper_scale_runs_its_piece_in_full_float32_and_records_it(tmp_path):
    """A paper-scale piece asks for full float32 matrix products unless told otherwise (TF32
    on a GPU would move near-tied arg-maxes) and its record says which it used; a bad piece
    name is refused by the parser. Run in a fresh process with no precision in the
    environment, where JAX's own setting is "default". Its programs go to the persistent XLA
    cache (``bornbiased_jax.xla_cache``), so that a piece stopped during its first block
    (compiling takes 40-90 s a program on an H100) does not compile again when resumed on the
    same machine."""
    import json
    import os

    from bornbiased_jax import precision

    env = {k: v for k, v in os.environ.items()
           if k not in (precision.ENV, "JAX_COMPILATION_CACHE_DIR")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    seen = tmp_path / "precision.txt"
    run = subprocess.run([sys.executable, "-c", FAKE_PIECE, str(seen), "table1b-n10k",
                          "--state", str(tmp_path / "s"), "--summaries", str(tmp_path / "k"),
                          "--records", str(tmp_path / "r")], cwd=campaign.REPO, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert seen.read_text().split("\n") == ["highest",
                                             str(tmp_path / "cache" / "bornbiased-jax" / "xla")]
    rec = json.loads((tmp_path / "r" / "initialisation" / "table1b_n10k.json").read_text())
    assert rec["run"]["matmul_precision"] == "highest" and rec["records"] == [{"seed": 42}]
    bad = subprocess.run([sys.executable, "-m", "experiments.paper_scale", "table9"],
                         cwd=campaign.REPO, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice: 'table9'" in bad.stderr


def test_estimates_use_the_rate_measured_at_each_length(tmp_path):
    """A pass is estimated at the rate its own sequence length achieved (chunks and kept parts
    at that length), not at the campaign's overall rate; a length with no chunk yet falls back
    to the overall rate."""
    import dataclasses

    from bornbiased_jax import resume
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.flops import forward_flops
    from experiments.campaign import paper_pieces as PS

    cfg = get_preset("gpt2-rope-tiny")
    for T, secs in ((8, 10.0), (16, 80.0)):
        store = resume.ChunkStore(tmp_path / campaign.STATE / "x" / f"T{T}", {
            "probe": "p", "model": dataclasses.asdict(cfg), "seeds": [1],
            "inputs": {"shape": [4, T]}})
        store.set_plan({"seed_chunk": 1, "seq_chunk": 4})
        store.save((0, 0), {"a": np.zeros(1)}, seconds=secs)
    ident = {"model": dataclasses.asdict(cfg), "seeds": [1], "seq_len": 16, "num_seqs": 4}
    PS._kept(tmp_path / campaign.SUMMARIES / "y", "part", ident, lambda: ({}, 80.0))
    f8, f16 = (4 * forward_flops(cfg, T, last_only=True) for T in (8, 16))
    rates = progress.rates_by_length(tmp_path)
    name, arch, v = cfg.name, progress.architecture(cfg), __version__
    assert rates == pytest.approx({8: f8 / 10.0, 16: 2 * f16 / 160.0, (arch, 8): f8 / 10.0,
                                   (arch, 16): 2 * f16 / 160.0, (arch, 8, v): f8 / 10.0,
                                   (None, 8, v): f8 / 10.0, (arch, 16, v): 2 * f16 / 160.0,
                                   (None, 16, v): 2 * f16 / 160.0})
    spec = campaign.PaperScale("z", "z", (("gpt2-rope-tiny", "attn_mlp", 8, 40),
                                          ("gpt2-rope-tiny", "attn_mlp", 16, 8),
                                          ("gpt2-rope-tiny", "attn_mlp", 32, 4)))
    f32 = 4 * forward_flops(cfg, 32, last_only=True)
    assert progress.paper_scale_seconds(spec, rates, overall=1e9) == pytest.approx(
        10 * 10.0 + 2 * 80.0 + f32 / 1e9)
    # another model at a measured length: that length's pooled rate, not the overall one
    other = campaign.PaperScale("w", "w", (("llama2-tiny", "attn_mlp", 8, 4),))
    f8l = 4 * forward_flops(get_preset("llama2-tiny"), 8, last_only=True)
    assert progress.paper_scale_seconds(other, rates, overall=1e9) == pytest.approx(
        f8l / (f8 / 10.0))
    text = progress.rates_text(spec, rates, 1e9)
    assert f"({name}, T = 8)" in text
    assert "T = 32: no chunk yet, the overall rate" in text
    assert "(T = 8, other models)" in progress.rates_text(other, rates, 1e9)


def test_estimates_prefer_the_rate_this_library_version_measured(tmp_path):
    """Code changes change speed (blockwise attention in 0.2.0): a pass is estimated at its
    own model's rate at its length under this version, else under other versions, before any
    other model's; a state resumed across versions counts under no version."""
    import dataclasses

    from bornbiased_jax import resume
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.flops import forward_flops

    def chunk(cfg, folder, secs, versions=None):
        store = resume.ChunkStore(tmp_path / campaign.STATE / folder, {
            "probe": "p", "model": dataclasses.asdict(cfg), "seeds": [1],
            "inputs": {"shape": [4, 8]}})
        store.set_plan({"seed_chunk": 1, "seq_chunk": 4})
        store.save((0, 0), {"a": np.zeros(1)}, seconds=secs)
        if versions:  # as if computed (or resumed) under these releases
            f = tmp_path / campaign.STATE / folder / "state.json"
            st = json.loads(f.read_text())
            st["versions"] = [{**st["versions"][-1], "bornbiased_jax": v} for v in versions]
            f.write_text(json.dumps(st))

    gpt, llama = get_preset("gpt2-rope-tiny"), get_preset("llama2-tiny")
    chunk(gpt, "old", 40.0, ["0.1.0"])
    chunk(gpt, "new", 10.0)
    chunk(llama, "llama", 5.0)
    f8 = 4 * forward_flops(gpt, 8, last_only=True)
    rates = progress.rates_by_length(tmp_path)
    arch = progress.architecture(gpt)
    assert rates[(arch, 8)] == pytest.approx(2 * f8 / 50.0)  # pooled over versions
    assert rates[(arch, 8, "0.1.0")] == pytest.approx(f8 / 40.0)
    spec = campaign.PaperScale("z", "z", (("gpt2-rope-tiny", "attn_mlp", 8, 4),))
    assert progress.paper_scale_seconds(spec, rates, overall=1e9) == pytest.approx(10.0)
    # without this version's chunk of its model: its own model's older rate, not llama's
    shutil.rmtree(tmp_path / campaign.STATE / "new")
    rates = progress.rates_by_length(tmp_path)
    assert progress.paper_scale_seconds(spec, rates, overall=1e9) == pytest.approx(40.0)
    assert f"({gpt.name}, T = 8, other versions)" in progress.rates_text(spec, rates, 1e9)
    # a model with no chunk at that length: another model's rate under this version first
    other = campaign.PaperScale("w", "w", (("gpt2-rope-nano", "attn_mlp", 8, 4),))
    nano = 4 * forward_flops(get_preset("gpt2-rope-nano"), 8, last_only=True)
    l8 = 4 * forward_flops(llama, 8, last_only=True)
    assert progress.paper_scale_seconds(other, rates, overall=1e9) == pytest.approx(
        nano / (l8 / 5.0))
    assert "(T = 8, other models)" in progress.rates_text(other, rates, 1e9)
    # a state resumed across versions does not say which computed each chunk: no version
    chunk(gpt, "mixed", 20.0, ["0.1.0", __version__])
    rates = progress.rates_by_length(tmp_path)
    assert (arch, 8, __version__) not in rates and (arch, 8, None) in rates


def test_estimates_count_a_model_by_its_architecture_not_its_name(tmp_path):
    """Speed depends on what a pass computes, not on the initial values: chunks of a renamed,
    re-initialised copy of a preset (as Table 4a's ``llama2-nano-gpt2init`` and ``-hfinit``)
    give the rate of a pass of that preset; another architecture's do not count as its own."""
    import dataclasses

    from bornbiased_jax import resume
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.flops import forward_flops

    llama = get_preset("llama2-tiny")
    for scaled, secs in ((True, 10.0), (False, 30.0)):
        cfg = dataclasses.replace(llama, name=f"llama2-tiny-{scaled}", init_std=0.01,
                                  scale_residual_init=scaled, shared_embedding=False)
        store = resume.ChunkStore(tmp_path / campaign.STATE / cfg.name, {
            "probe": "p", "model": dataclasses.asdict(cfg), "seeds": [1],
            "inputs": {"shape": [4, 8]}})
        store.set_plan({"seed_chunk": 1, "seq_chunk": 4})
        store.save((0, 0), {"a": np.zeros(1)}, seconds=secs)
    wider = dataclasses.replace(llama, name="llama2-tiny", d_ff=2 * llama.d_ff)
    store = resume.ChunkStore(tmp_path / campaign.STATE / "wider", {
        "probe": "p", "model": dataclasses.asdict(wider), "seeds": [1],
        "inputs": {"shape": [4, 8]}})
    store.set_plan({"seed_chunk": 1, "seq_chunk": 4})
    store.save((0, 0), {"a": np.zeros(1)}, seconds=1.0)
    rates = progress.rates_by_length(tmp_path)
    spec = campaign.PaperScale("z", "z", (("llama2-tiny", "attn_mlp", 8, 8),))
    assert progress._rate_key(spec.passes[0], rates) == (progress.architecture(llama), 8,
                                                         __version__)
    f8 = 4 * forward_flops(llama, 8, last_only=True)
    assert progress.paper_scale_seconds(spec, rates, overall=1e9) == pytest.approx(
        2 * f8 / (2 * f8 / 40.0))
    assert "(llama2-tiny, T = 8)" in progress.rates_text(spec, rates, 1e9)


def test_a_pass_at_another_precision_on_a_gpu_has_another_identity(monkeypatch):
    """Chunks computed in TF32 (or a dot algorithm) on a GPU are never resumed as full
    float32 ones, nor the reverse: the precision enters a pass's identity there. Full float32
    adds nothing, so a CPU's states keep their identity on a GPU in full float32."""
    import jax

    from bornbiased_jax import precision
    from experiments.campaign import paper_pieces as PS

    base = {"probe": "last_token_sums", "probe_seed": 0}
    with precision.scoped("default"):
        assert PS.probe_identity("last_token_sums") == base  # a CPU: always full float32
        monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
        assert PS.probe_identity("last_token_sums") == {**base, "matmul_precision": "default"}
    with precision.scoped("highest"):
        assert PS.probe_identity("last_token_sums") == base


def test_a_summarised_pass_keeps_the_leave_one_block_out_cosines(tmp_path):
    """A summarised pass (per-block sums, as the paper-scale pieces keep them) returns, beside
    each seed's mean pairwise cosine per block, the same cosine leaving out each saved block of
    sequences: (B, S, L+1), whose jackknife is Figure 2's paper-scale standard error."""
    import numpy as np

    from bornbiased_jax.presets import get_preset
    from experiments.campaign import paper_pieces as PS

    cfg = get_preset("gpt2-rope-tiny")
    prof = PS._summarised(cfg, [1, 2], "tokens", 8, tmp_path / "T8", n=500)
    loo = prof["block_mean_loo"]
    assert loo.shape == (2, 2, cfg.n_layers + 1)  # two blocks of 250 sequences
    assert prof["block_mean"].shape == (2, cfg.n_layers + 1)
    from bornbiased_jax.probes.contraction import mean_similarity_from_sums
    for b, other in ((0, 250), (1, 0)):  # leaving one block out leaves the other's sequences
        kept = np.load(tmp_path / "T8" / f"chunk-s0-n{other}.npz")
        np.testing.assert_allclose(loo[b], mean_similarity_from_sums(kept["unit_blocks"], 250),
                                   rtol=1e-12)
    # unequal blocks would make the delete-one-block jackknife approximate: refused
    for n in (600, 250, 10_001):
        with pytest.raises(UserError, match=f"{n:,} sequences do not split into two or more "
                                            "equal blocks.*a multiple of 250 from 500 to "
                                            "2,000, or a multiple of 8 above"):
            PS._summarised(cfg, [1, 2], "tokens", 8, tmp_path / "T8b", n=n)
    assert not (tmp_path / "T8b").exists()


def test_table1_records_name_the_platforms_that_added_blocks(tmp_path):
    """A Table 1 pass begun on one platform and finished on another names both in its
    record's settings (blocks_platforms, in order of appearance); folders without a
    blockwise state add nothing."""
    from experiments.campaign import paper_pieces as PS

    def state(folder, identity_devices, used=None):
        folder.mkdir(parents=True)
        st = {"format": 1, "identity": {"devices": identity_devices}, "versions": [],
              "plan": None, "done": [], "tree": None}
        if used:
            st["devices_used"] = used
        (folder / "state.json").write_text(json.dumps(st))

    cpu, gpu = {"platform": "cpu", "count": 1}, {"platform": "gpu", "count": 1}
    state(tmp_path / "T64", cpu)
    state(tmp_path / "T256", cpu, used=[cpu, gpu])
    assert PS._platforms([tmp_path / "T64", tmp_path / "T256", tmp_path / "none"]) == {
        "blocks_platforms": ["cpu", "gpu"]}
    assert PS._platforms([tmp_path / "none"]) == {}


def test_a_bundle_packs_what_the_call_wrote_to_be_unpacked_in_the_checkout(tmp_path):
    import tarfile

    from experiments.campaign import bundle
    base = tmp_path / "checkout"
    root, other = base / "results" / "campaign", base / "results" / "records"
    (root / "first").mkdir(parents=True)
    other.mkdir(parents=True)
    (other / "untouched.json").write_text("{}")
    (root / "first" / "out.txt").write_text("an earlier window's")
    before = bundle.snapshot((base / "results", root), base)
    driver.run(root, 60, plan=PLAN[:1], device="cpu", log=lambda _: None,
               env={"CAMPAIGN_TEST": "this window's"})
    names = bundle.changed(before, (base / "results", root), base)
    assert names == ["results/campaign/first/log.txt", "results/campaign/first/out.txt",
                     "results/campaign/ledger.json"]
    size = bundle.write(tmp_path / "campaign.tar.gz", names, base)
    assert 0 < size < bundle.RETURN_LIMIT_BYTES
    here = tmp_path / "here"
    with tarfile.open(tmp_path / "campaign.tar.gz") as tar:
        tar.extractall(here, filter="data")
    assert (here / "results/campaign/first/out.txt").read_text() == "this window's"
    assert not (here / "results/records").exists()
    with pytest.raises(UserError, match="lies outside it"):
        bundle.snapshot((tmp_path / "elsewhere",), base)
