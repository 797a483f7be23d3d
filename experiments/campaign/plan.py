"""The GPU campaign: paper-scale measurements cut into pieces of a few minutes, so that short,
occasional GPU windows advance it piece by piece.

A :class:`Piece` is one command (a ``bornbiased`` command, an experiment or a benchmark) with
its output folder ``ROOT/<piece>/`` and a time limit. :func:`run` goes down :func:`pieces` in
priority order, skips the finished ones (and those whose prerequisites are not finished), starts
a piece only when its limit fits in what is left of the budget, and records every attempt in
``ROOT/ledger.json`` (written atomically after each piece): the command, the environment it
added, the device, start time, wall time, exit status and the piece's state (``done``,
``timeout``, ``failed``; ``interrupted`` when the driver itself was stopped while the piece ran:
the attempt is written as ``running`` before the piece starts; and ``interrupted`` too when a
resumable piece was stopped by SIGTERM, SIGINT or SIGHUP, a person's or a machine's stop rather
than the piece's failure, so that the next run resumes it; SIGKILL, the kernel's out-of-memory
killer's signal, leaves it ``failed``). A time limit stops the piece's
whole process group, its worker processes included. A piece's own output and its log (``log.txt``: the command's stdout and stderr) stay
in its folder, partial output of a stopped piece included. A piece that timed out or failed is
not retried unless asked (``retry=True``): retrying the same command in the same window would
spend the window on a known failure.

``JAX_DEFAULT_MATMUL_PRECISION`` given in ``env`` may use the short names of
:mod:`bornbiased_jax.precision` (``bf16x6``); it reaches the pieces in JAX's spelling.

The driver imports no JAX (the pieces need the whole device) and runs each piece as a child
process in the repository's root. On a machine where only ``ROOT`` comes back (a lent GPU), copy
the committed ``ROOT`` there first, run, and copy it back (results/campaign/README.md)::

    cp -r results/campaign "$OUT"/ && python -m experiments.campaign \\
        --root "$OUT"/campaign --records "$OUT"/records --budget 480

The rows RESULTS.md shows (:func:`claims`, rendered by :mod:`experiments.render`)
come from the finished pieces' own records.

Not yet cut into pieces (each needs chunking of its experiment first): SeedPrint's
false-positive rates at the paper's shape (step 3 of the campaign), the sinks at GPU scale (5) and
the lineage family at a scale where training moves the weights (6); a trained model does not fit
through a window's 64 MiB of carried files, so training pieces must finish within one window.
"""

from __future__ import annotations

import contextlib
import dataclasses
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
from experiments.common.paper_records import PAPER_RECORDS, RECORDS  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "results" / "campaign"
LEDGER = "ledger.json"
STATE = "state"  # ROOT/state/<piece>/: the resumable pieces' saved chunks (not committed)
SUMMARIES = "summaries"  # ROOT/summaries/<piece>/: per-block sums, kept parts (small; committed)
# Signals that stop a piece from outside without saying it is broken (see the module docstring).
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
MIN_RESUMABLE_S = 60  # a resumable piece starts when at least this much budget is left


@dataclasses.dataclass(frozen=True)
class Piece:
    """One step of the campaign: ``command`` (argv; ``{out}`` stands for the piece's folder,
    ``{python}`` for the interpreter, ``{state}`` for ROOT/state, ``{records}`` for the
    records' folder), run from the repository root under ``timeout_s``.

    ``backend``: 'gpu' pieces run only where a GPU is found; 'any' pieces run wherever the
    driver runs (after the GPU pieces on a GPU). ``resumable``: the piece saves its progress
    and continues where it stopped when run again, so it starts whenever a little budget is
    left, is stopped when the budget ends ('partial', not a failure) and is run again next
    time without ``retry``."""

    name: str
    step: str
    command: tuple[str, ...]
    timeout_s: int
    needs: tuple[str, ...] = ()
    about: str = ""
    backend: str = "gpu"
    resumable: bool = False


@dataclasses.dataclass(frozen=True)
class PaperScale:
    """A piece of Sec. 3-4 at the paper's shapes that a CPU can finish
    (``experiments/paper_scale.py`` runs it): its forward passes, ((preset, block, T,
    sequences), ...), give its FLOPs and so its time estimate."""

    name: str
    about: str
    passes: tuple
    memory_budget_gb: float | None = None


def _table1_passes(preset: str, seq_lens, n: int) -> tuple:
    return tuple((preset, "attn_mlp", T, 2 * n) for T in seq_lens)


# The N that the paper's Table 1 p-values imply (`bornbiased theory`): 2,000 for its GPT-2
# parts (a) and (c); 10,000 (the text's N) for its LLaMA-2 part (b), whose rows are top-1
# counts of 6-9 (0.06-0.09 %), which at N = 2,000 would be 1.2-1.8 sequences.
PAPER_N = 2000
PAPER_N_LLAMA = 10_000
SPREAD_SEEDS = tuple(range(44, 64))  # Table 1(a)'s seed spread at T = 64, beside seeds 42, 43
# Run in this order: the shorter pieces first, so that a session's hours finish records.
PAPER_SCALE = {s.name: s for s in [
    PaperScale("table1a", "Table 1(a), Figure 1a, Figure 2: GPT-2+RoPE nano, seeds 42/43, "
               "T = 64/256/1,024, N = 2,000",
               _table1_passes("gpt2-rope-nano", (64, 256, 1024), PAPER_N)),
    PaperScale("table1b", "Table 1(b): LLaMA-2 nano, seeds 42/43, T = 64/256/1,024, N = 2,000",
               _table1_passes("llama2-nano", (64, 256, 1024), PAPER_N)),
    PaperScale("table1b-n10k", "Table 1(b) at the N its p-values imply: LLaMA-2 nano, seeds "
               "42/43, T = 64/256, N = 10,000",
               _table1_passes("llama2-nano", (64, 256), PAPER_N_LLAMA)),
    PaperScale("table1a-seeds", "Table 1(a)'s seed spread: GPT-2+RoPE nano, 20 more seeds "
               f"({SPREAD_SEEDS[0]}-{SPREAD_SEEDS[-1]}) with their own embedding draws, "
               "T = 64, N = 2,000",
               (("gpt2-rope-nano", "attn_mlp", 64, len(SPREAD_SEEDS) * PAPER_N),)),
    PaperScale("table1c", "Table 1(c): GPT-2+RoPE 1.2B, seeds 42/43, T = 64, N = 2,000",
               _table1_passes("gpt2-rope-1.2b", (64,), PAPER_N), memory_budget_gb=16.0),
    PaperScale("table4a", "Table 4a: LLaMA-2 nano inits 42/123/1000/2000, n = 2,000, T = 256, "
               "token and Gaussian inputs, HF and GPT-2-scaled init",
               tuple(("llama2-nano", "attn_mlp", 256, 4 * PAPER_N) for _ in range(4))),
    PaperScale("table4a-n10k", "Table 4a's HF-init Gaussian-input rows at n = 10,000 (T = 256): "
               "LLaMA-2 nano inits 42/123/1000/2000, does the confound grow with n",
               (("llama2-nano", "attn_mlp", 256, 4 * PAPER_N_LLAMA),)),
    PaperScale("table1c-t256", "Table 1(c) at a second length: GPT-2+RoPE 1.2B, seeds 42/43, "
               "T = 256, N = 2,000", _table1_passes("gpt2-rope-1.2b", (256,), PAPER_N),
               memory_budget_gb=16.0),
    PaperScale("table1c-t1024", "Table 1(c) at the paper's longest length: GPT-2+RoPE 1.2B, "
               "seeds 42/43, T = 1,024, N = 2,000 (a GPU's piece: about 17 h on 2 CPU cores)",
               _table1_passes("gpt2-rope-1.2b", (1024,), PAPER_N), memory_budget_gb=16.0),
    PaperScale("table1b-n10k-t1024", "Table 1(b) at T = 1,024 and the N its p-values imply: "
               "LLaMA-2 nano, seeds 42/43, N = 10,000",
               _table1_passes("llama2-nano", (1024,), PAPER_N_LLAMA)),
    PaperScale("figure10", "Figure 10 at the paper's shape: GPT-2+RoPE nano, seed 42, T = 1,024, "
               "N = 10,000: the predicted token's and the max hidden dimension's frequencies",
               (("gpt2-rope-nano", "attn_mlp", 1024, PAPER_N_LLAMA),)),
    PaperScale("gemma3-init-n10k", "Is a fresh Gemma 3 born biased, at Table 1(b)'s N: "
               "gemma3-270m and its no-QK-norm, no-post-norm and no-sqrt(d)-embedding-scale "
               "arms, seeds 0-2, T = 64, N = 10,000",
               tuple(("gemma3-270m", "attn_mlp", 64, 3 * PAPER_N_LLAMA) for _ in range(4))),
    PaperScale("table2", "Table 2, Figures 3 and 7: full / attention-only / MLP-only "
               "GPT-2+RoPE nano, seed 42, Gaussian inputs, T = 1,024, N = 2,000",
               tuple(("gpt2-rope-nano", b, 1024, PAPER_N)
                     for b in ("attn_mlp", "attn_only", "mlp_only"))),
]}


def _pass_config(one_pass: tuple):
    from bornbiased_jax.presets import get_preset

    preset, block, _, _ = one_pass
    cfg = get_preset(preset)
    return cfg if block == "attn_mlp" else cfg.ablate(block=block)


def pass_flops(one_pass: tuple) -> int:
    """Model FLOPs of one forward pass (preset, block, T, sequences) of a piece
    (``bornbiased_jax.flops``, the LM head at the last position only, as the probes run it)."""
    from bornbiased_jax.flops import forward_flops

    _, _, T, n = one_pass
    return n * forward_flops(_pass_config(one_pass), T, last_only=True)


def paper_scale_flops(spec: PaperScale) -> int:
    """Model FLOPs of a piece's forward passes (:func:`pass_flops`)."""
    return sum(pass_flops(p) for p in spec.passes)


def _sweep_piece(preset: str, T: int, N: int, seeds: str, timeout_s: int) -> Piece:
    tag = f"{preset}-T{T}-N{N}" + ("" if seeds == "42,43" else f"-s{seeds.replace(',', '_')}")
    return Piece(f"table1-{tag}", "1 Table 1",
                 ("{python}", "-m", "bornbiased_jax.cli", "sweep", "--preset", preset, "--seeds", seeds, "--seq-len",
                  str(T), "--num-seqs", str(N), "--no-progress", "--out", "{out}"),
                 timeout_s, needs=("precision-timing",),
                 about=f"Table 1's token preference: {preset}, seeds {seeds}, T = {T:,}, N = {N:,}")


def pieces() -> list[Piece]:
    """The campaign in priority order (the issue's steps 0, 1, 2 and 4)."""
    out: list[Piece] = [
        Piece("precision-timing", "0 float32 on the GPU",
              ("{python}", "benchmarks/precision_timing.py", "--out", "{out}", "--budget", "420",
               "--row-timeout", "90"), 480,
              about="compile, autotuning and run time of one sweep per matmul precision and "
                    "XLA setting, and each precision's agreement with full float32"),
        Piece("precision-table1", "0 float32 on the GPU",
              ("{python}", "benchmarks/matmul_precision.py", "--presets", "gpt2-rope-nano",
               "llama2-nano", "--seeds", "42", "43", "--seq-lens", "64", "256", "--num-seqs",
               "10000", "--precisions", "default", "bf16x6", "--out",
               "{out}/precision.json"), 480, needs=("precision-timing",),
              about="what TF32 and a 6-pass bfloat16 dot change in Table 1's rows"),
    ]
    for N in (10_000, 2_000):
        for preset in ("gpt2-rope-nano", "llama2-nano"):
            for T in (64, 256, 1024):
                out.append(_sweep_piece(preset, T, N, "42,43", 420))
        for T in (64, 256):
            out.append(_sweep_piece("gpt2-rope-1.2b", T, N, "42,43", 480))
        for seed in ("42", "43"):  # the 1.2B model at T = 1,024, one seed per piece
            out.append(_sweep_piece("gpt2-rope-1.2b", 1024, N, seed, 480))
    out += [
        Piece("figure1a", "2 Figure 1a and Finding 2.2",
              ("{python}", "-m", "experiments.figure1", "--scale", "paper", "--out", "{out}",
               "--records", "{out}/records"), 300, needs=("precision-timing",),
              about="the top-1 token's multiple of the uniform top-1 (nano, T = 1,024, N = 2,000)"),
        Piece("finding22", "2 Figure 1a and Finding 2.2",
              ("{python}", "-m", "experiments.figure2_finding22", "--scale", "paper", "--out",
               "{out}", "--records", "{out}/records"), 480, needs=("precision-timing",),
              about="Figure 2 and Finding 2.2 with 100 nano models (T = 1,024, N = 2,000)"),
        Piece("speed-sweep", "4 speed",
              ("{python}", "benchmarks/sweep_throughput.py", "--preset", "gpt2-rope-nano",
               "--seq-len", "256", "--num-seqs", "512", "--seeds", "8", "--repeats", "3",
               "--strategies", "vmap", "map:1", "map:4", "loop"), 480,
              needs=("precision-timing",),
              about="sweep tokens/s and fraction of the matmul rate per seed strategy"),
        Piece("speed-many-seeds", "4 speed",
              ("{python}", "benchmarks/sweep_throughput.py", "--preset", "gpt2-rope-nano",
               "--seq-len", "256", "--strategies", "--many-seeds", "1000",
               "--many-seeds-seqs", "16"), 300, needs=("precision-timing",),
              about="1,000 seeds' peak device memory against the planner"),
        Piece("speed-train", "4 speed",
              ("{python}", "benchmarks/train_throughput.py", "--preset", "llama2-nano",
               "--seq-len", "1024", "--batch-size", "16", "--bf16", "--steps", "20"), 300,
              needs=("precision-timing",), about="bornbiased train tokens/s and MFU in bf16"),
    ]
    for spec in PAPER_SCALE.values():
        out.append(Piece(f"paper-{spec.name}", "5 Sec. 3-4 at paper scale (CPU or GPU)",
                         ("{python}", "-m", "experiments.paper_scale", spec.name, "--state",
                          "{state}", "--summaries", "{summaries}", "--records", "{records}",
                          "--resume-across-versions"),
                         12 * 3600, about=spec.about, backend="any", resumable=True))
    return out


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


def _model_config(model: dict):
    from bornbiased_jax.config_io import from_record

    return from_record(model)


def state_chunks(state_file: Path) -> list[tuple[int, float]]:
    """(model FLOPs, compute seconds) of each finished chunk of the resumable state saved in
    ``state_file`` (a ``state.json``): the chunk's seeds x sequences x
    ``flops.forward_flops`` of its model at its length, the LM head at the last position.
    Empty for a state that has no chunk plan yet; seconds are 0 for a chunk saved without."""
    from bornbiased_jax.flops import forward_flops

    st = json.loads(Path(state_file).read_text())
    ident, plan = st["identity"], st.get("plan")
    if plan is None:
        return []
    cfg = _model_config(ident["model"])
    N, T = ident["inputs"]["shape"][:2]
    S = len(ident.get("seeds", [0]))
    per_seq = forward_flops(cfg, T, last_only=True)
    out = []
    for name in st["done"]:
        s0, n0 = (int(x[1:]) for x in name[len("chunk-"):-len(".npz")].split("-"))
        out.append((min(plan["seed_chunk"], S - s0) * min(plan["seq_chunk"], N - n0) * per_seq,
                    st.get("seconds", {}).get(name, 0.0)))
    return out


def state_progress(folder: Path, *, skip=lambda d: False) -> dict:
    """What the resumable states under ``folder`` hold: model FLOPs and compute seconds of
    their finished chunks (:func:`state_chunks`). A state whose folder ``skip`` names is
    left out."""
    chunks = [c for f in sorted(Path(folder).glob("**/state.json")) if not skip(f.parent)
              for c in state_chunks(f)]
    return {"flops": sum(fl for fl, _ in chunks), "seconds": sum(s for _, s in chunks)}


def kept_parts(folder: Path) -> list[tuple]:
    """(model config, sequence length, library version, model FLOPs, compute seconds) of each
    finished part kept under ``folder`` (the ``<part>.json`` files of ``paper_pieces._kept``:
    the part's seeds x sequences x ``flops.forward_flops`` of its model at its length, the
    version it was computed under and its saved seconds)."""
    from bornbiased_jax.flops import forward_flops

    out = []
    for f in sorted(Path(folder).glob("**/*.json")):
        saved = json.loads(f.read_text())
        ident = saved.get("identity") if isinstance(saved, dict) else None
        if not isinstance(ident, dict) or "result" not in saved or "model" not in ident:
            continue
        N = ident.get("num_seqs", ident.get("n"))
        cfg = _model_config(ident["model"])
        out.append((cfg, ident["seq_len"], _code_version(saved.get("versions")),
                    len(ident["seeds"]) * N
                    * forward_flops(cfg, ident["seq_len"], last_only=True), saved["seconds"]))
    return out


def kept_progress(folder: Path) -> dict:
    """Model FLOPs and compute seconds of the finished parts kept under ``folder``
    (:func:`kept_parts`)."""
    parts = kept_parts(folder)
    return {"flops": sum(p[3] for p in parts), "seconds": sum(p[4] for p in parts)}


def _code_version(versions) -> str | None:
    """The bornbiased_jax version a saved state or kept part was computed under (a state keeps
    the list of every attempt's versions, a kept part one dict); None when a state was resumed
    across versions (its chunks do not say which version computed each) or says nothing."""
    if isinstance(versions, dict):
        versions = [versions]
    found = {v.get("bornbiased_jax") for v in versions or []}
    return found.pop() if len(found) == 1 else None


def architecture(cfg):
    """``cfg`` less what only sets the initial values (name, init scales, embedding sharing):
    what a forward pass computes, and so its speed. Table 4a's ``llama2-nano-gpt2init`` and
    ``llama2-nano-hfinit`` share the ``llama2-nano`` preset's architecture."""
    return dataclasses.replace(cfg, name="", init_std=0.02, scale_residual_init=False,
                               shared_embedding=False, embed_seed=0)


def rates_by_length(root: Path = ROOT) -> dict:
    """FLOP/s achieved by every saved chunk and kept part under ``root``'s state and summaries
    folders, keyed (model architecture (:func:`architecture`), sequence length) and sequence
    length alone (every model at that length pooled), and both again with the library
    version that computed them ((architecture, T, version) and (None, T, version)): a code
    change (blockwise attention at T > 64 in 0.2.0) changes the speed. A block's seconds are
    wall time: a busy machine lowers the rate."""
    acc: dict = {}

    def add(cfg, T: int, version, fl: int, sec: float) -> None:
        if sec > 0:
            arch = architecture(cfg)
            for key in ((arch, T), T, (arch, T, version), (None, T, version)):
                a = acc.setdefault(key, [0, 0.0])
                a[0] += fl
                a[1] += sec

    for folder in (Path(root) / STATE, Path(root) / SUMMARIES):
        for f in sorted(folder.glob("**/state.json")):
            st = json.loads(f.read_text())
            ident, version = st["identity"], _code_version(st.get("versions"))
            for fl, sec in state_chunks(f):
                add(_model_config(ident["model"]), ident["inputs"]["shape"][1], version, fl,
                    sec)
        for cfg, T, version, fl, sec in kept_parts(folder):
            add(cfg, T, version, fl, sec)
    return {k: fl / sec for k, (fl, sec) in acc.items()}


def _rate_key(one_pass: tuple, rates: dict):
    """The key of ``rates`` a pass is estimated at: its model at its length under this
    library version, else under any version, else any model at its length under this
    version, else under any; None (the overall rate) when its length has no chunk at all."""
    from bornbiased_jax import __version__

    arch, T = architecture(_pass_config(one_pass)), one_pass[2]
    return next((k for k in ((arch, T, __version__), (arch, T), (None, T, __version__), T)
                 if k in rates), None)


def _pass_rate(one_pass: tuple, rates: dict, overall: float) -> float:
    """The rate measured for this pass (:func:`_rate_key`), else ``overall``."""
    key = _rate_key(one_pass, rates)
    return overall if key is None else rates[key]


def paper_scale_seconds(spec: "PaperScale", rates: dict, overall: float) -> float:
    """A piece's estimated compute seconds: each pass's FLOPs at the rate measured for its
    model at its length under this library version (:func:`rates_by_length`), else at its
    length under this version, else the same under any version, else ``overall``."""
    return sum(pass_flops(p) / _pass_rate(p, rates, overall) for p in spec.passes)


def _progress(root: Path, piece: str = "") -> dict:
    """A piece's (or every piece's) progress: its scratch states' chunks (less those of parts
    already kept), its committed per-block sums and its kept parts, together."""
    state, kept = Path(root) / STATE / piece, Path(root) / SUMMARIES / piece

    def is_kept(d: Path) -> bool:  # a part's state may sit below its folder (group-0/)
        rel = d.relative_to(state)
        return any(Path(f"{kept / a}.json").exists() for a in (rel, *rel.parents)
                   if a != Path("."))

    parts = (state_progress(state, skip=is_kept), state_progress(kept), kept_progress(kept))
    return {k: sum(p[k] for p in parts) for k in parts[0]}


def measured_rate(root: Path = ROOT) -> float | None:
    """FLOP/s the resumable pieces have achieved so far on this campaign's machine(s), from
    their saved chunks; None before any chunk."""
    prog = _progress(Path(root))
    return prog["flops"] / prog["seconds"] if prog["seconds"] > 0 else None


def _rates_text(spec: PaperScale, rates: dict, overall: float) -> str:
    """'220 GFLOP/s (llama2-nano, T = 64), ...': the rate each pass's estimate uses and what
    it was measured on."""
    out = []
    for p in dict.fromkeys((p[0], p[1], p[2], 0) for p in spec.passes):
        name, T = _pass_config(p).name, p[2]
        key = _rate_key(p, rates)
        if key is None:
            what = f"{name}, T = {T:,}: no chunk yet, the overall rate"
        elif key == T:
            what = f"T = {T:,}, other models, other versions"
        else:
            what = (f"{name}, T = {T:,}" if key[0] is not None else f"T = {T:,}, other models") + (
                "" if len(key) == 3 else ", other versions")
        out.append(f"{_pass_rate(p, rates, overall) / 1e9:.0f} GFLOP/s ({what})")
    return ", ".join(dict.fromkeys(out))


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


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
            est = (f"{total / 1e15:.2f} PFLOP; {_hours(paper_scale_seconds(spec, by_T, rate))} "
                   f"at {_rates_text(spec, by_T, rate)}" if rate else
                   f"{total / 1e15:.2f} PFLOP")
            prog = _progress(Path(root), spec.name)
            if prog["seconds"]:
                meas = (f"{min(1.0, prog['flops'] / total):.0%} done in "
                        f"{_hours(prog['seconds'])}")
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
