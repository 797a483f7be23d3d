"""A real model's strongest negatives: shallower cousins trained from scratch.

Models of the real model's architecture family and widths (SmolLM2-135M-Instruct's: d = 576,
9 heads, 3 KV heads, SwiGLU F = 1,536, tied embeddings, its own 49,152-token tokenizer read from
the GGUF file), but fewer layers (4 instead of 30: a 30-layer model trains at several seconds a
step on a 2-core CPU), each from its own seed (HF's default init, the preset's), trained on
Vim's help files -- the text the real model's fine-tuned descendants were tuned on -- in one
``bornbiased train --seeds`` program per group of seeds (the same batches in the same order).
They share the real model's tokenizer, widths and the descendants' data, and none of its
weights: a lineage test that calls one related to the real model is wrong. The depth differs,
which the matched test's layer screen handles; the permutation leg compares residual
coordinates, the same width.

Their settings are the model record's ``cousins`` (:mod:`experiments.real_model.record`):
``run`` (a ``TrainConfig``'s fields but its seeds), ``programs`` (each a ``folder`` and its
``seeds``: eight 135M-wide states do not fit 24 GB at once, so four seeds a program) and
``tokenizer`` (where the file's tokenizer is written). SmolLM2's: seed K is the model source
``runs/smollm2/cousins#K`` (K = 0-3), ``runs/smollm2/cousins-b#K`` (4-7) or
``runs/smollm2/cousins-c#K`` (8-11), eleven trained negatives, none flagged, bounding the
false-positive rate below 0.3 (experiments/real_model/claims.py).

    python -m experiments real_model smollm2 --model M.gguf --steps cousins   # train (resume)
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from bornbiased_jax.defaults import VIM_DOCS
from bornbiased_jax.training.config import TrainConfig, train_command

CORPUS = [VIM_DOCS]  # a glob: expanded when read (corpus())


def programs(spec: dict) -> list[tuple[TrainConfig, Path]]:
    """(run config, folder) of every cousins' program of a record's ``cousins``."""
    run = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["run"].items()}
    return [(TrainConfig(**run, seeds=tuple(p["seeds"])), Path(p["folder"]))
            for p in spec["programs"]]


def tokenizer(model: Path, spec: dict) -> Path:
    """The model file's own tokenizer written as a tokenizer.json (once)."""
    path = Path(spec["tokenizer"])
    if not path.is_file():
        from bornbiased_jax import files
        from experiments.common.pretrained import tokenizer as model_tokenizer

        files.write_text(path, model_tokenizer(model).to_str())
    return path


def command(model: Path, spec: dict) -> str:
    """The first program's ``bornbiased train`` command."""
    tc, folder = programs(spec)[0]
    return shlex.join(["bornbiased", *train_command(tc, corpus(), folder), "--tokenizer",
                       str(tokenizer(model, spec)), "--no-progress"])


def corpus() -> list[str]:
    """:data:`CORPUS` with its glob expanded (Vim's help folder of the installed version)."""
    import glob

    from bornbiased_jax.errors import UserError

    found = sorted(p for g in CORPUS for p in glob.glob(g))
    if not found:
        raise UserError(f"the cousins' text is not on this machine: {CORPUS} matches nothing "
                        f"(Debian's vim-runtime installs it)")
    return found


def ensure(model: Path, spec: dict, progress: bool = True) -> list[Path]:
    """Train the cousins, every program (resuming from the latest checkpoint); finished ones
    are kept."""
    from bornbiased_jax.training import loop as train

    return [train.ensure(tc, corpus, f, tokenizer_path=tokenizer(model, spec),
                         progress=progress, what="the cousins", remedy="use another folder")
            for tc, f in programs(spec)]


def trained(spec: dict) -> list[tuple]:
    """(run config, folder) of each cousins' program that is trained to its last step."""
    from bornbiased_jax.training import run_folder

    return [(tc, f) for tc, f in programs(spec)
            if run_folder.is_run(f) and run_folder.finished(f, tc)]


def sources(spec: dict) -> list[str]:
    return [f"{f}#{k}" for tc, f in trained(spec) for k in tc.seeds]


def depth(tc: TrainConfig) -> str:
    """'a 4-layer' for a program whose model_set sets n_layers=4, else 'a'."""
    m = next((re.fullmatch(r"n_layers=(\d+)", s) for s in tc.model_set
              if s.startswith("n_layers=")), None)
    return f"a {m.group(1)}-layer" if m else "a"


def negatives(spec: dict) -> list[dict]:
    """The trained cousins as the lineage record's negatives list keeps them."""
    return [{"name": f"{f.name}#{k}", "kind": "trained", "trained_steps": tc.steps,
             "same_data": True, "tokens": tc.steps * tc.batch_size * tc.seq_len,
             "what": f"{depth(tc)} cousin of the base (its widths, heads and tokenizer), seed "
                     f"{k}, trained from scratch {tc.steps} steps of {tc.batch_size} x "
                     f"{tc.seq_len} tokens on Vim's help (the fine-tunes' text)"}
            for tc, f in trained(spec) for k in tc.seeds]
