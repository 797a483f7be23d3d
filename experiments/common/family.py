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
weight decay 0.01, a checkpoint every 50 steps.

The paper-scale families, for GPUs, are ``SINKS_PAPER`` (Tables 13 and 14) and
``LINEAGE_PAPER`` (the lineage models' released training code); their corpora stream from the
HF hub (``hf:`` specs, with the ``datasets`` package) unless replaced by local plain-text files
or folders (``with_corpora``, the scripts' ``--corpus NAME=PATH``).
"""

from __future__ import annotations

import dataclasses
import glob
from pathlib import Path
from typing import NamedTuple

from bornbiased_jax.defaults import NODE_DOCS_MD, VIM_DOCS
from bornbiased_jax.errors import UserError
from bornbiased_jax.training import run_folder
from bornbiased_jax.training.config import TrainConfig


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


# The sink family at the paper's scale (App. B.4, for a GPU): Table 13's model is llama2-nano
# (d = 768, 12 layers, 12 heads of 64, d_ff 2048, SwiGLU, RMSNorm, RoPE, context 2048, vocabulary
# 32,000) and Table 14's optimiser: AdamW (0.9, 0.95), lr 6e-4 -> 6e-5 cosine, 2,000 warmup
# steps, 200,000 steps of 128 x 2048 tokens (52.4B tokens), weight decay 0.1, clipping 1.0,
# bfloat16. The global batch of 128 is taken as 32 micro-batches of 4 sequences, split further
# over the devices: the attention maps are materialised (float32 softmax, no rematerialisation),
# ~8.7 GiB of activations per 2048-token sequence in a training step (XLA's estimate), so
# Table 14's micro-batch of 32 would need ~275 GiB; the gradient of the global batch is the
# same. Differences the paper leaves open or that this code cannot match, stated, not hidden:
#   * data: OpenWebText read from the HF hub (``hf:Skylion007/openwebtext``, needs the
#     ``datasets`` package and its cache or a network), its first 16 GiB of text (~4B tokens,
#     held in host memory: the text, 16-32 GB as Python strings, and ~16 GB of int32 ids, plus
#     a copy of the ids while the data fingerprint is taken), so ~13 epochs against the
#     paper's ~6 over all ~9B tokens ("multiple epochs ... repeated sampling"); a local copy
#     can be given with --corpus base=PATH;
#   * tokenizer: a byte-level BPE of 32,000 tokens trained on that text, not the Llama 2
#     SentencePiece model;
#   * Table 7's evaluation sets: WikiText-2 (raw, test split, its lines joined into one
#     document, as a local wiki.test.raw reads) and C4 (en, validation split), tokenised with
#     the run's tokenizer, so perplexities are comparable between arms and not to the paper's
#     digits; the sink rates are measured on WikiText-2, as Sec. 6.2.1;
#   * checkpoints (~1.6 GB each with Adam moments in float32): every 5,000 steps, those at
#     multiples of 20,000 kept for the emergence curve (11 per arm with the last two, ~18 GB);
#   * the HF datasets are not pinned to a revision (the paper names none): should the hub's
#     data change, resuming stops at the data-fingerprint check rather than train on other
#     text; ``--corpus base=hf:Skylion007/openwebtext@COMMIT:train`` pins one.
SINKS_PAPER_PRETRAIN = TrainConfig(
    preset="llama2-nano", model_set=(), seq_len=2048, batch_size=128, grad_accum=32,
    steps=200_000, warmup=2_000, lr=6e-4, min_lr=6e-5, weight_decay=0.1, grad_clip=1.0,
    b1=0.9, b2=0.95, bf16=True, vocab_size=32_000, corpus_max_mb=16384.0, data_seed=0,
    save_every=5_000, keep_every=20_000, keep_last=2, eval_every=5_000, eval_batches=16,
    log_every=100)
SINKS_PAPER = Family(SINKS_PAPER_PRETRAIN, {}, {
    "base": ["hf:Skylion007/openwebtext:train"],
    "wikitext2": ["hf:Salesforce/wikitext:test:wikitext-2-raw-v1:joined"],
    "c4": ["hf:allenai/c4:validation:en"]})


# The lineage family at the paper's scale (Sec. 6.1.2, for GPUs), with the settings of the
# lineage models' released training code (HF Trainer defaults where it sets none): the
# 12L/12H/768d LLaMA-style model (llama2-nano: d_ff 2048, vocabulary 32,000, untied, context
# 2048) with HF's default init (std 0.02, no residual scaling); one epoch of "~10B" OpenWebText
# tokens in 2048-token blocks; AdamW (0.9, 0.999), lr 3e-4 with 200 warmup steps and linear
# decay to 0, weight decay 0.1, clipping 1.0, bf16; a global batch of 64 (the code's 4 per
# device x 8 accumulation steps, taken on App. B.4.3's two GPUs; 16 micro-batches of 4 here,
# for memory as in SINKS_PAPER): 76,294 steps = 10.0B tokens. Continued pretraining (Table 5):
# lr 2e-5, warmup 100, weight decay 0.01, on TinyStoriesV2_cleaned and on the Python subset of
# The Stack the code uses. The code pads one story per 2048-token sequence and takes 2 epochs
# of a 1/20 subset in batches of 64 (some thousands of updates); packed text here, the first
# 100 MB of each corpus (~25M tokens) in 3,000 steps of 8 x 2048 tokens, ~2 epochs with an
# update count of that order. As for SINKS_PAPER: a 32,000-token BPE trained on the corpus,
# not Llama 2's, and the first 16 GiB of OpenWebText (~4B tokens), so 10B tokens are ~2.5
# epochs, not one. Checkpoints (~1.6 GB each): every 2,000 steps (the code's cadence), every
# 10,000th kept.
LINEAGE_PAPER_PRETRAIN = TrainConfig(
    preset="llama2-nano", model_set=("scale_residual_init=false",), seq_len=2048,
    batch_size=64, grad_accum=16, steps=76_294, warmup=200, lr=3e-4, min_lr=0.0,
    schedule="linear", b1=0.9, b2=0.999, weight_decay=0.1, grad_clip=1.0, bf16=True,
    vocab_size=32_000,
    corpus_max_mb=16384.0, data_seed=0, save_every=2_000, keep_every=10_000, keep_last=2,
    eval_every=2_000, eval_batches=16, log_every=100)
LINEAGE_PAPER = Family(
    LINEAGE_PAPER_PRETRAIN,
    dict(steps=3_000, batch_size=8, grad_accum=2, warmup=100, lr=2e-5, min_lr=0.0,
         weight_decay=0.01, corpus_max_mb=100.0, save_every=500, keep_every=500, keep_last=2,
         eval_every=500),
    {"base": ["hf:Skylion007/openwebtext:train"],
     "prose": ["hf:fhswf/TinyStoriesV2_cleaned:train"],
     "code": ["hf:tyzhu/the-stack-py:train"]})


# The Qwen-style repeat (App. B.3.3: Tables 9-12, Figure 14). The paper trains its Qwen-style
# model (Qwen2's architecture: grouped-query attention, biases on Q, K and V only, RoPE base
# 1,000,000, RMSNorm eps 1e-6, d_ff = 4d, untied head; config.py ``qwen2-*``) with the LLaMA-style
# model's data, seeds and optimiser, so each family here is its LLaMA-style counterpart with only
# the preset changed: ``qwen2-small`` (d = 256, 4 layers, 4 query / 2 K/V heads, d_ff 1024) at
# CPU scale, ``qwen2-nano`` (d = 768, 12 layers, 12 / 2 heads, d_ff 3072) at the paper's.
LINEAGE_QWEN2 = DEFAULT._replace(pretrain=dataclasses.replace(PRETRAIN, preset="qwen2-small"))
LINEAGE_QWEN2_PAPER = LINEAGE_PAPER._replace(
    pretrain=dataclasses.replace(LINEAGE_PAPER_PRETRAIN, preset="qwen2-nano"))
# architecture -> (CPU-scale family, paper-scale family) of the lineage study
LINEAGE_ARCHS = {"llama2": (DEFAULT, LINEAGE_PAPER), "qwen2": (LINEAGE_QWEN2, LINEAGE_QWEN2_PAPER)}


def with_hf_init(fam: Family) -> Family:
    """``fam`` initialised as the lineage models' released code initialises them (HF's default:
    every weight N(0, 0.02), no 1/sqrt(2L) on W_O and W_down) instead of App. B.1's GPT-2-scaled
    residual init, everything else equal. Continuations start from their base's checkpoint, so
    only the pretraining config changes."""
    pre = fam.pretrain
    return fam._replace(pretrain=dataclasses.replace(
        pre, model_set=pre.model_set + ("scale_residual_init=false",)))


# The init each family can be trained with: "gpt2" (App. B.1, the default) or "hf" (the released
# code's); the HF-init family lives in runs/family[-ARCH]-hfinit.
INITS = ("gpt2", "hf")


def with_corpora(fam: Family, corpora: dict) -> Family:
    """``fam`` with some corpora replaced (name -> list of paths or ``hf:`` specs); an unknown
    corpus name is an error."""
    unknown = sorted(set(corpora) - set(fam.corpora))
    if unknown:
        raise UserError(f"unknown corpus name(s) {unknown}; this family's corpora are "
                        f"{sorted(fam.corpora)}")
    return fam._replace(corpora={**fam.corpora, **corpora})


def parse_corpus_flags(items: list[str] | None) -> dict:
    """``["base=/data/owt", "c4=hf:allenai/c4:validation:en"]`` -> ``{"base": [...], ...}``;
    a name given twice collects both paths, in order."""
    out: dict = {}
    for item in items or []:
        name, sep, spec = item.partition("=")
        if not sep or not name or not spec:
            raise UserError(f"--corpus {item!r}: expected NAME=PATH (or NAME=hf:DATASET"
                            f"[@REVISION][:SPLIT[:CONFIG[:joined]]]), e.g. base=/data/openwebtext")
        out.setdefault(name, []).append(spec)
    return out


def smoke_family(folder: Path, preset: str = "llama2-tiny") -> Family:
    """A tiny family for end-to-end tests: ``preset`` (``llama2-tiny``: d = 64, 2 blocks;
    ``qwen2-tiny`` for the Qwen-style repeat; context 32), 2 pretraining steps and 1
    continuation step of 4 x 16 tokens, a checkpoint at every step, on three small corpora
    written into ``folder`` (base, prose and code text)."""
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
    pre = TrainConfig(preset=preset, model_set=("max_seq_len=32",), seq_len=16,
                      batch_size=4, steps=2, warmup=1, vocab_size=320, data_seed=0,
                      save_every=1, keep_every=1, keep_last=2, eval_every=2, eval_batches=1,
                      log_every=1)
    cont = dict(steps=1, warmup=0, lr=1e-4, min_lr=1e-5, weight_decay=0.01, save_every=1,
                keep_every=1, keep_last=2, eval_every=1)
    return Family(pre, cont, corpora)


def corpus(name: str, fam: Family = DEFAULT) -> list[str]:
    """The file and folder list of corpus ``name`` (globs expanded, sorted)."""
    return expand(fam.corpora[name], name)


def expand(specs, name: str) -> list[str]:
    """Files and folders of corpus specs, each glob expanded (sorted); a UserError naming corpus
    ``name`` when a glob matches nothing on this machine."""
    out = []
    for spec in specs:
        found = sorted(glob.glob(spec)) if any(c in spec for c in "*?[") else [spec]
        if not found:
            raise UserError(f"corpus {name!r}: nothing matches {spec!r} on this machine; install "
                            f"it (e.g. the vim-runtime or nodejs-doc package) or give "
                            f"--corpus {name}=PATH")
        out.extend(found)
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
    """(train config, corpus, tokenizer path) of run ``name``. Every run uses one vocabulary:
    the one placed in the runs directory (:func:`vocabulary`) or else the tokenizer base-s42
    trained (None for base-s42 itself, which trains it)."""
    runs_dir = Path(runs_dir)
    tok = vocabulary(runs_dir)
    tok = None if tok is None and name == "base-s42" else str(
        tok or run_folder.tokenizer_path(runs_dir / "base-s42"))
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


SHARED_VOCABULARY = run_folder.TOKENIZER


def vocabulary(runs_dir: Path) -> Path | None:
    """The vocabulary given to every run of ``runs_dir``: ``runs_dir/tokenizer.json`` if one
    was placed there (a study's committed vocabulary, so that runs trained on different
    machines or at different times share it), else None (runs use base-s42's own)."""
    f = Path(runs_dir) / SHARED_VOCABULARY
    return f if f.is_file() else None


def tokenizer_path(runs_dir: Path) -> Path:
    """The tokenizer the family's runs in ``runs_dir`` read text with (it may not exist yet)."""
    return vocabulary(runs_dir) or run_folder.tokenizer_path(Path(runs_dir) / "base-s42")


def finished(name: str, runs_dir: Path, fam: Family = DEFAULT) -> bool:
    """Whether run ``name`` of family ``fam`` has its run.json and a checkpoint at its last
    step (``run_folder.finished``). A folder of that name made with other settings (another
    family's run, a stale run left in the folder) stops the study with the differences, rather
    than being measured as this family's run or trained over."""
    tc, _, _ = spec(name, runs_dir, fam)
    return run_folder.finished(Path(runs_dir) / name, tc, what=f"this family's {name}",
                               remedy="use another --runs-dir")


def ensure(name: str, runs_dir: Path, progress: bool = False, fam: Family = DEFAULT) -> Path:
    """Train run ``name`` to its last step, resuming it if it has checkpoints; return its
    folder. Runs it depends on (base-s42's tokenizer, a continuation's source) must be
    finished first."""
    tc, docs, tok = spec(name, runs_dir, fam)
    # JAX and the optimiser only when there is training
    from bornbiased_jax.training import loop as train

    return train.ensure(tc, docs, Path(runs_dir) / name, tokenizer_path=tok, progress=progress,
                        what=f"this family's {name}", remedy="use another --runs-dir")


def summary(name: str, runs_dir: Path) -> dict:
    """Tokens, steps, wall time and final losses of run ``name`` (``run_folder.summary``)."""
    return run_folder.summary(Path(runs_dir) / name)
