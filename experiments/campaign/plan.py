"""The GPU campaign: paper-scale measurements cut into pieces of a few minutes, so that short,
occasional GPU windows advance it piece by piece.

A :class:`Piece` is one command (a ``bornbiased`` command, an experiment or a benchmark) with
its output folder ``ROOT/<piece>/`` and a time limit; :func:`pieces` is the plan, in priority
order. The driver (:func:`experiments.campaign.driver.run`) goes down :func:`pieces` in
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
process in the repository's root. On a machine where only a few files of an output folder come
back (a lent GPU), run in the checkout and pack what the call wrote into one archive
(:mod:`experiments.campaign.bundle`), then unpack it here (results/campaign/README.md)::

    python -m experiments.campaign --budget 480 --bundle "$OUT"/campaign.tar.gz

How far the pieces got and their time estimates are :mod:`experiments.campaign.progress`'s; the
status table and the rows RESULTS.md shows (:mod:`experiments.campaign.report`, rendered by
:mod:`experiments.render`) come from the ledger and the finished pieces' own records.

Not yet cut into pieces (each needs chunking of its experiment first): SeedPrint's
false-positive rates at the paper's shape (step 3 of the campaign), the sinks at GPU scale (5) and
the lineage family at a scale where training moves the weights (6); a trained model does not fit
through a window's 64 MiB of carried files, so training pieces must finish within one window.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

# the paper-scale records' folder and each one's study (RESULTS.md's renderer reads them too)
from experiments.common.paper_records import PAPER_RECORDS, RECORDS  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "results" / "campaign"
LEDGER = "ledger.json"
STATE = "state"  # ROOT/state/<piece>/: the resumable pieces' saved chunks (not committed)
SUMMARIES = "summaries"  # ROOT/summaries/<piece>/: per-block sums, kept parts (small; committed)
# Signals that stop a piece from outside without saying it is broken (see the module docstring).


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


def pass_config(one_pass: tuple):
    from bornbiased_jax.presets import get_preset

    preset, block, _, _ = one_pass
    cfg = get_preset(preset)
    return cfg if block == "attn_mlp" else cfg.ablate(block=block)


def pass_flops(one_pass: tuple) -> int:
    """Model FLOPs of one forward pass (preset, block, T, sequences) of a piece
    (``bornbiased_jax.flops``, the LM head at the last position only, as the probes run it)."""
    from bornbiased_jax.flops import forward_flops

    _, _, T, n = one_pass
    return n * forward_flops(pass_config(one_pass), T, last_only=True)


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
    out.append(Piece(
        "smollm2-shaped-negatives", "6 the lineage level along training",
        ("{python}", "-m", "experiments", "lineage_level_long", "--train", "--measure", "--cells",
         "L30-F1536-smollm2", "--train-seconds", "270",
         "--cache", "{out}", "--records", "{out}"), 480,
        about="SmolLM2-135M's whole shape, 4 seeds from scratch on the same text in bfloat16, "
              "trained for 270 s and measured where trained (its checkpoints stay on the GPU, "
              "in runs/level-long, outside the output): "
              "the cache files go to results/records/lineage_level/long-gpu/ "
              "(results/records/lineage_level/long-gpu/README.md)"))
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
