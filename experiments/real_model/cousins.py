"""The real model's strongest negatives: SmolLM2's shallower cousins trained from scratch.

Models of SmolLM2-135M-Instruct's architecture family and widths (d = 576, 9 heads, 3 KV heads,
SwiGLU F = 1,536, tied embeddings, its own 49,152-token tokenizer read from the GGUF file), but
4 layers instead of 30 (a 30-layer model trains at several seconds a step on a 2-core CPU), each
from its own seed (HF's default init, the preset's), trained on Vim's help files -- the text the
real model's fine-tuned descendants were tuned on -- in one ``bornbiased train --seeds`` program
(the same batches in the same order). They share the real model's tokenizer, widths and the
descendants' data, and none of its weights: a lineage test that calls one related to the real
model is wrong. The depth differs, which the matched test's layer screen handles; the
permutation leg compares residual coordinates, the same width.

    python -m experiments.real_model --steps cousins   # train (or resume) them

Seed K is the model source ``runs/smollm2/cousins#K`` (K = 0-3), ``runs/smollm2/cousins-b#K``
(4-7) or ``runs/smollm2/cousins-c#K`` (8-11): three programs of the same settings.
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

from bornbiased_jax.defaults import VIM_DOCS
from bornbiased_jax.training import loop as train
from bornbiased_jax.training.config import TrainConfig, train_command

FOLDER = Path("runs/smollm2/cousins")
# More cousins, each program of four seeds (eight 135M-wide states do not fit 24 GB at once):
# the same settings, other seeds, so that the real model's trained negatives can bound the
# false-positive rate (eleven trained negatives, none flagged, bound it below 0.3;
# experiments/real_model/claims.py)
MORE_FOLDERS = (Path("runs/smollm2/cousins-b"), Path("runs/smollm2/cousins-c"))
TOKENIZER = Path("runs/smollm2/tokenizer.json")
CORPUS = [VIM_DOCS]  # a glob: expanded when read (corpus())
RUN = TrainConfig(
    preset="smollm2-135m", model_set=("n_layers=4",), seeds=(0, 1, 2, 3), seq_len=64,
    batch_size=16, steps=300, warmup=30, lr=1e-3, min_lr=1e-4, weight_decay=0.1,
    corpus_max_mb=8.0, data_seed=0, save_every=50, keep_last=1, eval_every=100,
    eval_batches=4, log_every=10)
MORE = (dataclasses.replace(RUN, seeds=(4, 5, 6, 7)), dataclasses.replace(RUN, seeds=(8, 9, 10, 11)))


def tokenizer(model: Path, path: Path = TOKENIZER) -> Path:
    """The GGUF file's own tokenizer written as a tokenizer.json (once)."""
    if not path.is_file():
        from bornbiased_jax import files
        from bornbiased_jax.hf.gguf import load_gguf_tokenizer

        files.write_text(path, load_gguf_tokenizer(model).to_str())
    return path


def command(model: Path, folder: Path = FOLDER) -> str:
    return shlex.join(["bornbiased", *train_command(RUN, corpus(), folder), "--tokenizer",
                       str(tokenizer(model)), "--no-progress"])


def corpus() -> list[str]:
    """:data:`CORPUS` with its glob expanded (Vim's help folder of the installed version)."""
    import glob

    from bornbiased_jax.errors import UserError

    found = sorted(p for g in CORPUS for p in glob.glob(g))
    if not found:
        raise UserError(f"the cousins' text is not on this machine: {CORPUS} matches nothing "
                        f"(Debian's vim-runtime installs it)")
    return found


def programs() -> list[tuple]:
    """(run config, folder) of every cousins' program."""
    return [(RUN, FOLDER), *zip(MORE, MORE_FOLDERS)]


def ensure(model: Path, progress: bool = True) -> list[Path]:
    """Train the cousins, every program (resuming from the latest checkpoint); finished ones
    are kept."""
    return [train.ensure(tc, corpus, f, tokenizer_path=tokenizer(model), progress=progress,
                         what="the SmolLM2 cousins", remedy="use another folder")
            for tc, f in programs()]


def trained() -> list[tuple]:
    """(run config, folder) of each cousins' program that is trained to its last step."""
    from bornbiased_jax.training import run_folder

    return [(tc, f) for tc, f in programs()
            if run_folder.is_run(f) and run_folder.finished(f, tc)]


def sources() -> list[str]:
    return [f"{f}#{k}" for tc, f in trained() for k in tc.seeds]


def negatives() -> list[dict]:
    """The trained cousins as the lineage record's negatives list keeps them."""
    return [{"name": f"{f.name}#{k}", "kind": "trained", "trained_steps": tc.steps,
             "same_data": True, "tokens": tc.steps * tc.batch_size * tc.seq_len,
             "what": f"a 4-layer cousin of the base (its widths, heads and tokenizer), seed {k}, "
                     f"trained from scratch {tc.steps} steps of {tc.batch_size} x "
                     f"{tc.seq_len} tokens on Vim's help (the fine-tunes' text)"}
            for tc, f in trained() for k in tc.seeds]
