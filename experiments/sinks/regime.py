"""Where does the baseline grow attention sinks? The regime grid (paper Sec. 6.2's validity gate).

The sink study (:mod:`experiments.sinks.measure`) found no sink in its baseline on
Python source without a BOS token. Its Figure 12 comparison needs a baseline with sinks, so this
grid looks for the regime where one forms at CPU scale, as a measurement, in the directions the
literature points to:

  * Guo et al. (*Active-dormant attention heads*): on the Bigram-Backcopy task
    (:mod:`bornbiased_jax.bigram_backcopy`) 1-3 layer, 1-head models attend to ``<s>`` almost fully within
    about 1,000 steps;
  * Gu et al. (*When Attention Sink Emerges in Language Models*, ICLR 2025): sinks grow with
    weight decay (0.1 -> 0.5), shrink with a small learning rate, and jump when the same token
    sits at position 1 of every sequence (here ``--bos``).

A :class:`Cell` is one training run (a ``bornbiased train`` command line); a grid is a tuple of
cells (:data:`CPU`, :data:`PAPER`), checked by :func:`check_grid`. Each cell's checkpoints are
measured by :mod:`experiments.sinks.regime_measure`; this module turns the measured
record into verdicts (:func:`summarise`), a table (:func:`markdown`) and a figure
(:func:`figure`) without running anything, so its rules are unit-tested on hand-made records.

A cell *grew sinks* when, at its last checkpoint, the per-sample sink rate is above 0 by more
than 2 SE (over evaluation sequences) at every evaluated length, at the paper's eps = 0.25 and
in Gu et al.'s setting (eps 0.3, T = 64), and the Gu rate is *rising*: above the rate at
initialisation (step 0) by more than 2 SE (the two SEs combined in quadrature).
"""

from __future__ import annotations

import dataclasses
import glob
import math
import sysconfig
from pathlib import Path

from bornbiased_jax import bigram_backcopy, plots
from bornbiased_jax.config_io import apply_overrides
from bornbiased_jax.presets import get_preset
from bornbiased_jax.defaults import SINK_EPS, SINK_LENGTHS, SINK_SETTINGS, VIM_DOCS
from bornbiased_jax.errors import UserError

PAPER_EPS = SINK_EPS  # Sec. 6.2.1
GU_EPS, GU_T = SINK_SETTINGS["gu"][0], SINK_SETTINGS["gu"][1][0]  # Gu et al.: per sample, T = 64
PAPER_LENGTHS = SINK_LENGTHS  # Sec. 6.2.1's lengths; a cell uses those that fit
COPY_T = 128  # length of the Bigram-Backcopy sequences copy accuracy is scored on (or seq_len)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One training run of the grid: the ``bornbiased train`` settings that differ from its
    defaults. ``corpus`` is a ``bbm:PATH[:triggers=K]`` task or text files/folders;
    ``model_set`` holds ``KEY=VALUE`` settings on ``preset`` (e.g. ``n_layers=1``); the
    learning rate is ``lr`` after a linear warmup of ``warmup`` steps (``schedule``). Every
    ``save_every``-th checkpoint is kept and measured, and step 0 (the initialisation).
    ``seeds`` (instead of ``seed``) trains one model per initialisation seed on the same
    batches in one run (``train --seeds``); each is measured as ``RUN#SEED@STEP``."""

    name: str
    corpus: tuple[str, ...]
    preset: str = "llama2-tiny"
    model_set: tuple[str, ...] = ()
    seq_len: int = 128
    batch_size: int = 16
    steps: int = 1500
    lr: float = 1e-3
    warmup: int = 100
    weight_decay: float = 0.1
    schedule: str = "constant"
    bos: bool = False
    vocab_size: int = 4096
    corpus_max_mb: float = 4.0
    save_every: int = 250
    seed: int = 0
    data_seed: int = 0
    seeds: tuple[int, ...] = ()

    @property
    def is_bbm(self) -> bool:
        return bigram_backcopy.is_spec(list(self.corpus))

    def model_config(self):
        """The preset with ``model_set`` applied (the vocabulary comes from the data)."""
        return apply_overrides(get_preset(self.preset), self.model_set)

    def lengths(self) -> list[int]:
        """The paper's lengths (32 ... 512) that fit the model's context and the training
        length, and Gu et al.'s T = 64."""
        top = min(self.model_config().max_seq_len, self.seq_len)
        return sorted({T for T in PAPER_LENGTHS if T <= top} | {GU_T})

    def train_argv(self, out: str | Path) -> list[str]:
        """The ``bornbiased train`` arguments of this cell into run folder ``out``."""
        from bornbiased_jax.training.config import train_command

        return train_command(self.train_config(), self.corpus, out) + ["--no-progress"]

    def train_config(self):
        """The run's ``TrainConfig`` (to tell a finished run folder from another run's)."""
        from bornbiased_jax.training.config import TrainConfig

        return TrainConfig(preset=self.preset, seq_len=self.seq_len, batch_size=self.batch_size,
                           steps=self.steps, lr=self.lr, warmup=self.warmup,
                           weight_decay=self.weight_decay, schedule=self.schedule,
                           seed=self.seed, data_seed=self.data_seed,
                           vocab_size=self.vocab_size, corpus_max_mb=self.corpus_max_mb,
                           eval_every=self.save_every, save_every=self.save_every,
                           keep_every=self.save_every, model_set=self.model_set, bos=self.bos,
                           seeds=tuple(self.seeds))

    @property
    def init_seeds(self) -> tuple[int, ...]:
        """The initialisation seeds this cell trains, in the run's checkpoint order."""
        return self.train_config().init_seeds


def check_grid(cells) -> tuple[Cell, ...]:
    """``cells`` as a tuple if they form a valid grid; a ``UserError`` saying what is wrong
    otherwise: no cells, repeated names, a name that cannot be a folder, a model setting the
    preset refuses, a checkpoint cadence that does not divide the steps, a training length
    below Gu et al.'s T = 64, or ``bos`` on a Bigram-Backcopy cell (its sequences always
    begin with ``<s>``)."""
    cells = tuple(cells)
    if not cells:
        raise UserError("a sink-regime grid needs at least one cell")
    names = [c.name for c in cells]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UserError(f"grid cell names must be distinct; repeated: {dup}")
    for c in cells:
        if not c.name or "/" in c.name or "#" in c.name or c.name.startswith("."):
            raise UserError(f"grid cell name {c.name!r} must be a plain folder name (no '/', "
                            f"'#', not empty, not starting with '.')")
        if not c.corpus:
            raise UserError(f"grid cell {c.name!r} has no corpus")
        if c.is_bbm and c.bos:
            raise UserError(f"grid cell {c.name!r}: Bigram-Backcopy sequences always begin "
                            f"with <s>; drop bos")
        if c.steps % c.save_every:
            raise UserError(f"grid cell {c.name!r}: save_every {c.save_every} must divide "
                            f"steps {c.steps} (the last step is measured)")
        if c.seq_len < GU_T:
            raise UserError(f"grid cell {c.name!r}: seq_len {c.seq_len} is below Gu et al.'s "
                            f"T = {GU_T}")
        c.train_config()  # the trainer's own checks (preset, model_set, warmup, ...)
        if c.model_config().max_seq_len < c.seq_len:
            raise UserError(f"grid cell {c.name!r}: seq_len {c.seq_len} exceeds the model's "
                            f"context {c.model_config().max_seq_len}")
    return cells


def _stdlib(name: str) -> str:
    return str(Path(sysconfig.get_paths()["stdlib"]) / name)


def _vim_docs() -> list[str]:
    """Vim's help folder on this machine (any Vim version), or the pattern itself where Vim is
    not installed: training such a cell then says which corpus is missing."""
    return sorted(glob.glob(VIM_DOCS)) or [VIM_DOCS]


def _bbm_cells(source: str, layers, wds, **kw) -> list[Cell]:
    return [Cell(f"bbm-L{n}-wd{wd}", (f"bbm:{source}",),
                 model_set=(f"n_layers={n}", "n_heads=1"), weight_decay=wd, **kw)
            for n in layers for wd in wds]


def _text_cells(prefix: str, corpus, wds, **kw) -> list[Cell]:
    return [Cell(f"{prefix}-{'bos' if bos else 'nobos'}-wd{wd}", tuple(corpus), bos=bos,
                 weight_decay=wd, **kw)
            for bos in (True, False) for wd in wds]


# CPU scale: minutes per cell on 2 cores. Bigram-Backcopy on a stdlib file (d = 64, one head,
# 1-3 layers) first, cheapest; then Vim's help text at llama2-tiny (d = 64, 2 layers, 4 heads)
# with and without a BOS token. Weight decay 0.1 and 0.5, constant learning rate after warmup.
_BBM2 = _bbm_cells(_stdlib("textwrap.py"), (2,), (0.5,))[0]
CPU = (tuple(_bbm_cells(_stdlib("textwrap.py"), (1, 2), (0.1, 0.5)))
       # the two-layer, weight-decay-0.5 cell trained three times as long
       + (dataclasses.replace(_BBM2, name="bbm-L2-wd0.5-long", steps=4500, save_every=500),)
       + tuple(_bbm_cells(_stdlib("textwrap.py"), (3,), (0.1, 0.5)))
       # ... and with a larger learning rate (Gu et al.: sinks shrink with a small one)
       + (dataclasses.replace(_BBM2, name="bbm-L2-wd0.5-lr3e-3", lr=3e-3),)
       + tuple(_text_cells("vim", _vim_docs(), (0.1, 0.5), steps=750,
                           save_every=250, vocab_size=2048)))
# Paper scale (a GPU): the same questions on Vim help at llama2-small (d = 256, 4 layers,
# 4 heads; 20,000 steps of 64 x 256 tokens) and llama2-nano (d = 768, 12 layers, 12 heads;
# 20,000 steps of 64 x 512 tokens); Bigram-Backcopy as on CPU, 1-3 layers.
PAPER = (tuple(_bbm_cells(_stdlib("textwrap.py"), (1, 2, 3), (0.1, 0.5)))
         + tuple(_text_cells("vim-small", _vim_docs(), (0.1, 0.5),
                             preset="llama2-small", seq_len=256, batch_size=64, steps=20000,
                             warmup=1000, lr=6e-4, save_every=2000, corpus_max_mb=16.0))
         + tuple(_text_cells("vim-nano", _vim_docs(), (0.1, 0.5),
                             preset="llama2-nano", seq_len=512, batch_size=64, steps=20000,
                             warmup=1000, lr=6e-4, save_every=2000, corpus_max_mb=16.0,
                             vocab_size=8192)))


# ------------------------------------------------------------------ verdicts of a record --

def _above_zero(rate: float, se: float) -> bool:
    return rate > 2.0 * se and rate > 0.0


def summarise(cell: dict) -> dict:
    """The verdict of one measured cell (``cell["checkpoints"]``: per step, ``"paper"`` rows
    {T, rate, se, alpha_max, ...} at eps 0.25 and ``"gu"`` {rate, se}): the last step, its rates
    per length, the largest head alpha^1 per length, ``formed`` (every rate > 0 by 2 SE),
    ``rising`` (Gu rate above step 0's by 2 SE), ``grew_sinks`` (both) and ``first_step`` (the
    first checkpoint whose Gu rate is > 0 by 2 SE, or None)."""
    cks = sorted(cell["checkpoints"], key=lambda c: c["step"])
    if not cks:
        raise UserError(f"cell {cell.get('name')!r} has no measured checkpoint")
    last, first = cks[-1], cks[0]
    rates = {int(r["T"]): (r["rate"], r["se"]) for r in last["paper"]}
    formed = (all(_above_zero(*v) for v in rates.values())
              and _above_zero(last["gu"]["rate"], last["gu"]["se"]))
    diff = last["gu"]["rate"] - first["gu"]["rate"]
    rising = (first["step"] < last["step"]
              and diff > 2.0 * math.hypot(last["gu"]["se"], first["gu"]["se"]) and diff > 0)
    first_step = next((c["step"] for c in cks if _above_zero(c["gu"]["rate"], c["gu"]["se"])),
                      None)
    return {"name": cell["name"], "step": last["step"], "rates": rates,
            "gu": (last["gu"]["rate"], last["gu"]["se"]),
            "alpha_max": {int(r["T"]): r["alpha_max"] for r in last["paper"]},
            "copy_accuracy": last.get("copy_accuracy"), "val_loss": last.get("val_loss"),
            "formed": formed, "rising": rising, "grew_sinks": formed and rising,
            "first_step": first_step, "train_seconds": cell.get("train_seconds")}


def markdown(records: dict) -> str:
    """One row per cell: its settings, last step, sink rates per length (eps 0.25), Gu's rate,
    the strongest head's alpha^1 at the longest length, copy accuracy, val loss, verdict."""
    rows = ["| cell | layers x heads, d | wd | BOS | steps | sink rate (eps 0.25) by T | "
            "Gu rate (T = 64, eps 0.3) | max head alpha^1 (T) | copy acc. | val loss | "
            "sinks from step | grew sinks | train s |",
            "|---|---|---|---|---:|---|---|---|---:|---:|---:|---|---:|"]
    for cell in records["cells"]:
        s = summarise(cell)
        m = cell["model"]
        Tmax = max(s["alpha_max"])
        by_T = ", ".join(f"{T}: {r:.3f} ± {se:.3f}" for T, (r, se) in sorted(s["rates"].items()))
        ca = "" if s["copy_accuracy"] is None else f"{s['copy_accuracy']:.3f}"
        vl = "" if s["val_loss"] is None else f"{s['val_loss']:.3f}"
        rows.append(
            f"| {s['name']} | {m['n_layers']} x {m['n_heads']}, {m['d_model']} | "
            f"{cell['settings']['weight_decay']} | {'<s>' if cell['is_bbm'] else ('yes' if cell['settings']['bos'] else 'no')} | "
            f"{s['step']} | {by_T} | {s['gu'][0]:.3f} ± {s['gu'][1]:.3f} | "
            f"{s['alpha_max'][Tmax]:.3f} ({Tmax}) | {ca} | {vl} | "
            f"{'' if s['first_step'] is None else s['first_step']} | "
            f"{'yes' if s['grew_sinks'] else 'no'} | {s['train_seconds'] or ''} |")
    return "\n".join(rows) + "\n"


def figure(records: dict):
    """Per cell over its checkpoints: Gu's sink rate (T = 64, eps 0.3), the strongest head's
    alpha^1 at T = 64 (with the uniform head's H_T/T) and the validation loss."""
    fig, axes = plots.figure(1, 3, figsize=(16, 4.6))
    for cell in records["cells"]:
        cks = sorted(cell["checkpoints"], key=lambda c: c["step"])
        steps = [c["step"] for c in cks]
        style = "-" if cell["is_bbm"] else "--"
        line, = axes[0].plot(steps, [c["gu"]["rate"] for c in cks], style, marker="o", ms=3,
                             label=cell["name"])
        a64 = [next(r["alpha_max"] for r in c["paper"] if r["T"] == GU_T) for c in cks]
        axes[1].plot(steps, a64, style, marker="o", ms=3, color=line.get_color())
        vl = [(c["step"], c["val_loss"]) for c in cks if c.get("val_loss") is not None]
        if vl:
            axes[2].plot(*zip(*vl), style, marker="o", ms=3, color=line.get_color())
    uniform = sum(1.0 / i for i in range(1, GU_T + 1)) / GU_T
    axes[1].axhline(uniform, color="grey", lw=0.8, ls=":", label=f"uniform H_T/T = {uniform:.3f}")
    axes[1].axhline(GU_EPS, color="red", lw=0.8, ls=":", label=f"eps = {GU_EPS}")
    axes[0].set(xlabel="step", ylabel="sink rate", ylim=(-0.02, 1.02),
                title="Gu et al. sink rate (T = 64, eps 0.3)")
    axes[1].set(xlabel="step", ylabel="alpha^1", ylim=(0, 1.02),
                title="strongest head's alpha^1 (T = 64)")
    axes[2].set(xlabel="step", ylabel="validation loss", title="validation loss")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.suptitle("Sink regime grid (solid: Bigram-Backcopy; dashed: text)")
    fig.tight_layout()
    return fig


def claims(record: dict) -> list:
    """RESULTS.md rows of the regime grid: the validity gate of Sec. 6.2 (does a baseline grow
    sinks within this project's means?) and, per family of cells, what formed."""
    from bornbiased_jax.verdicts import MEASURED, Claim

    cells = record["records"]["cells"]
    sums = [summarise(c) for c in cells]
    grew = [x for x in sums if x["grew_sinks"]]

    def cell_text(x):
        rates = ", ".join(f"T={T}: {r:.2f} +- {se:.2f}" for T, (r, se) in sorted(x["rates"].items()))
        return (f"{x['name']} (step {x['step']}): {rates}; Gu {x['gu'][0]:.2f} +- "
                f"{x['gu'][1]:.2f}; Gu rate > 0 (2 SE) from step "
                f"{'never' if x['first_step'] is None else x['first_step']}")
    out = [Claim(
        "Sec. 6.2 validity gate at CPU scale: a baseline whose sink rate is above 0 at every "
        "length and rising over checkpoints (grid of Bigram-Backcopy and natural text, BOS, "
        "weight decay, depth)", "high sink rate at all lengths 32-512 (Figure 12, 52.4B "
        "tokens)", "; ".join(cell_text(x) for x in grew) if grew else "no cell",
        MEASURED,
        (f"{len(grew)} of {len(sums)} cells grew sinks ({', '.join(x['name'] for x in grew)}), "
         f"at the lengths measured ({', '.join(str(T) for T in sorted(grew[0]['rates']))}); "
         f"per-sample rates over 100 sequences, +- one standard error; one seed per cell"
         if grew else f"none of the {len(sums)} cells formed sinks"), "Sec. 6.2.2")]
    none = [x for x in sums if not x["grew_sinks"]]
    if none:
        out.append(Claim(
            "Cells without sinks (same grid)", "-", "; ".join(cell_text(x) for x in none),
            MEASURED, f"{len(none)} cells: not above 0 (2 SE) at every length, or not rising",
            "Sec. 6.2.2"))
    return out
