"""The trained family shared by the lineage study (Sec. 5-6.1, Figure 11, Tables 4b/4c/5) and the
attention-sink study (Sec. 6.2, Figure 12, Table 7), at CPU scale.

Every run is a ``bornbiased train`` run folder under one runs directory (default ``runs/family``,
not committed: checkpoints are ~60 MB each). ``ensure(name, runs_dir)`` trains a run or resumes it
from its latest complete Orbax checkpoint; a finished run is left as it is. All runs of a study
share the data seed and therefore the data order (Sec. 6.1.2: "the same data order").

Corpora (on this machine; hub corpora cannot be downloaded here):
  * base (the OpenWebText role): Vim's help files, English technical prose, first 8 MB;
  * prose shift (the TinyStories role): the Node.js API documentation, Markdown files only;
  * code shift (The Stack role): the Python standard library's sources.

Pretraining (Table 14 optimiser; App. B.2 LLaMA-style model at CPU size): ``llama2-small``
(d = 256, 4 layers, 4 heads, d_ff 688, RoPE, untied, every parameter seed-dependent) with the
context fixed at T = 256 (``max_seq_len=256``, also the T of Positional Attenuation), batch
16 x 256 tokens, 500 steps (2.05M tokens), warmup 50, cosine 6e-4 -> 6e-5, a checkpoint every 50
steps kept. Continued pretraining (Table 5; the paper's code uses lr 2e-5 after 3e-4, 2 epochs):
200 steps of 16 x 256 tokens from the base's final checkpoint, lr 1e-4 -> 1e-5, warmup 20,
weight decay 0.01, a checkpoint every 50 steps. The ``paper`` scale names the paper's settings
for a GPU; its corpora (OpenWebText, TinyStories, The Stack) must be provided as local files.
"""

from __future__ import annotations

import dataclasses
import glob
import json
from pathlib import Path
from typing import NamedTuple

from bornbiased_jax.sources import run_steps
from bornbiased_jax.train import Run, TrainConfig

VIM_DOCS = "/usr/share/vim/vim90/doc"
NODE_DOCS_MD = "/usr/share/doc/nodejs/api/*.md"

# name -> corpus list (globs expanded at use)
CORPORA = {"base": [VIM_DOCS], "prose": [NODE_DOCS_MD], "code": ["python-stdlib"]}

PRETRAIN = TrainConfig(
    preset="llama2-small", model_set=("max_seq_len=256",), seq_len=256, batch_size=16,
    steps=500, warmup=50, lr=6e-4, min_lr=6e-5, weight_decay=0.1, vocab_size=4096,
    corpus_max_mb=8.0, data_seed=0, save_every=50, keep_every=50, keep_last=2, eval_every=50,
    eval_batches=8, log_every=10)
CONTINUE = dict(steps=200, warmup=20, lr=1e-4, min_lr=1e-5, weight_decay=0.01, save_every=50,
                keep_every=50, keep_last=2, eval_every=50)

LINEAGE_SEEDS = (42, 123, 1000, 2000)
# Sec. 6.2.1 arms, all from seed 42 with the same data and order; "baseline" is base-s42 of the
# family they are trained in (SINKS below: the lineage family's 2M tokens gave no sinks).
SINK_ARMS = {
    "baseline": (),
    "amplification": ("attn_output_transform=sqrt_i",),
    "attenuation": ("attn_output_transform=sqrt_i_over_T",),
    "headwise_rmsnorm": ("attn_output_transform=headwise_rmsnorm",),
    "gate": ("attn_output_gate=true",),  # not from the paper
}


class Family(NamedTuple):
    """What a family's runs are trained with: pretraining config, continuation overrides and
    corpora. ``DEFAULT`` is the family above; :func:`smoke_family` a tiny one for tests."""

    pretrain: TrainConfig
    cont: dict
    corpora: dict


DEFAULT = Family(PRETRAIN, CONTINUE, CORPORA)


# The attention-sink family (Sec. 6.2). The lineage family's base-s42 (2.05M tokens) has no
# sink head at any length (alpha^1 at T = 256 is 0.018-0.024, the uniform head's H_T / T is
# 0.024), so the sink arms get a longer schedule on a larger corpus: a narrower llama2-small
# (d = 192, 4 layers, 4 heads, d_ff 512, T = 256), 4,000 steps of 16 x 256 tokens (16.4M
# tokens, ~1.6 epochs of 32 MB of Python standard-library code), warmup 200, a checkpoint
# every 250 steps, so that the emergence of sinks can be located. Shifted text for Table 7:
# Vim's help (prose) and the Node.js API documentation.
SINKS_PRETRAIN = TrainConfig(
    preset="llama2-small", model_set=("max_seq_len=256", "d_model=192", "d_ff=512"),
    seq_len=256, batch_size=16, steps=4000, warmup=200, lr=6e-4, min_lr=6e-5,
    weight_decay=0.1, vocab_size=4096, corpus_max_mb=32.0, data_seed=0, save_every=250,
    keep_every=250, keep_last=2, eval_every=250, eval_batches=8, log_every=25)
SINKS = Family(SINKS_PRETRAIN, {}, {"base": ["python-stdlib"], "prose": [VIM_DOCS],
                                    "docs": [NODE_DOCS_MD]})


def smoke_family(folder: Path) -> Family:
    """A tiny family for end-to-end tests: ``llama2-tiny`` (d = 64, 2 blocks, context 32),
    2 pretraining steps and 1 continuation step of 4 x 16 tokens, a checkpoint at every step,
    on three small corpora written into ``folder`` (base, prose and code text)."""
    folder = Path(folder)
    words = {"base": "the help file lists each command and its options in order",
             "prose": "once upon a time a small fox walked into the quiet wood",
             "code": "def f(x):\n    return [i * x for i in range(10)]\n"}
    corpora = {}
    for name, text in words.items():
        d = folder / name
        d.mkdir(parents=True, exist_ok=True)
        for i in range(8):
            (d / f"{i}.txt").write_text(f"{text} {i} " * 40)
        corpora[name] = [str(d)]
    pre = TrainConfig(preset="llama2-tiny", model_set=("max_seq_len=32",), seq_len=16,
                      batch_size=4, steps=2, warmup=1, vocab_size=320, data_seed=0,
                      save_every=1, keep_every=1, keep_last=2, eval_every=2, eval_batches=1,
                      log_every=1)
    cont = dict(steps=1, warmup=0, lr=1e-4, min_lr=1e-5, weight_decay=0.01, save_every=1,
                keep_every=1, keep_last=2, eval_every=1)
    return Family(pre, cont, corpora)


def corpus(name: str, fam: Family = DEFAULT) -> list[str]:
    """The file and folder list of corpus ``name`` (globs expanded, sorted)."""
    out = []
    for spec in fam.corpora[name]:
        out.extend(sorted(glob.glob(spec)) if any(c in spec for c in "*?[") else [spec])
    return out


def run_name(kind: str, seed: int = 42, arm: str = "baseline", shift: str | None = None) -> str:
    """Folder names: base-s42, sink-amplification-s42, cont-prose-s1000."""
    if kind == "base":
        return f"base-s{seed}"
    if kind == "sink":
        return f"base-s{seed}" if arm == "baseline" else f"sink-{arm}-s{seed}"
    if kind == "cont":
        return f"cont-{shift}-s{seed}"
    raise ValueError(kind)


def spec(name: str, runs_dir: Path,
         fam: Family = DEFAULT) -> tuple[TrainConfig, list[str], str | None]:
    """(train config, corpus, tokenizer path) of run ``name``. Every run uses the tokenizer
    base-s42 trained, so that all models share one vocabulary."""
    runs_dir = Path(runs_dir)
    tok = None if name == "base-s42" else str(runs_dir / "base-s42" / "tokenizer.json")
    parts = name.split("-")
    seed = int(parts[-1][1:])
    pre = fam.pretrain
    if parts[0] == "base":
        return dataclasses.replace(pre, seed=seed), corpus("base", fam), tok
    if parts[0] == "sink":
        arm = "-".join(parts[1:-1])
        return (dataclasses.replace(pre, seed=seed, model_set=pre.model_set + SINK_ARMS[arm]),
                corpus("base", fam), tok)
    if parts[0] == "cont":
        shift = parts[1]
        source = runs_dir / f"base-s{seed}"
        tc = dataclasses.replace(pre, preset=pre.preset, model_set=(), seed=seed,
                                 init_from=f"{source.absolute()}@{pre.steps}", **fam.cont)
        return tc, corpus(shift, fam), None  # the tokenizer comes from the source run
    raise ValueError(name)


def finished(name: str, runs_dir: Path, fam: Family = DEFAULT) -> bool:
    folder = Path(runs_dir) / name
    tc, _, _ = spec(name, runs_dir, fam)
    return (folder / "run.json").is_file() and tc.steps in run_steps(folder)


def ensure(name: str, runs_dir: Path, progress: bool = False, fam: Family = DEFAULT) -> Path:
    """Train run ``name`` to its last step, resuming it if it has checkpoints; return its
    folder. Runs it depends on (base-s42's tokenizer, a continuation's source) must be
    finished first."""
    folder = Path(runs_dir) / name
    if finished(name, runs_dir, fam):
        return folder
    tc, docs, tok = spec(name, runs_dir, fam)
    Run(tc, docs, folder, tokenizer_path=tok).train(progress=progress)
    return folder


def summary(name: str, runs_dir: Path) -> dict:
    """Tokens, steps, wall time (from the logged throughput) and final losses of a run."""
    folder = Path(runs_dir) / name
    info = json.loads((folder / "run.json").read_text())
    tc = info["train_config"]
    recs = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()
            if line.strip()]
    steps = max(r["step"] for r in recs)
    tokens = steps * tc["batch_size"] * tc["seq_len"]
    train_s = sum(tc["log_every"] * tc["batch_size"] * tc["seq_len"] / r["tokens_per_s"]
                  for r in recs if "tokens_per_s" in r)
    val = [r for r in recs if "val_loss" in r]
    return {"run": name, "steps": steps, "tokens": tokens, "train_seconds": round(train_s),
            "final_val_loss": val[-1]["val_loss"] if val else None,
            "corpus": info.get("corpus"), "init_from": info.get("init_from")}
