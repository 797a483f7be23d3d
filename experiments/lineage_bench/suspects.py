"""Every descendant the benchmark builds from a base: what an auditor meets downstream.

Each base is a trained model of the seed family (``experiments.common.seed_family``: 32
llama2-tiny seeds trained on identical data in one program); its suspects are

  continued     the family's continuation: 800 more steps on another corpus (prose)
  ft            a full fine-tune: ``FT_STEPS`` steps on a third corpus (Vim help)
  lora          rank-8 LoRA adapters on every projection, trained with the base frozen on the
                same data, merged into the weights
  int8          weight-only int8, per output channel (``fingerprint.edits.downstream``)
  int4-g32      weight-only int4, groups of 32 input rows
  int4-g128     groups of 128
  prune-50      unstructured magnitude pruning to 50 % sparsity
  prune-2:4     2:4 structured magnitude pruning
  merge         the average of two fine-tunes of the base (ft and continued)
  task-sum      task arithmetic: base + (ft - base) + (continued - base)
  renamed       every function-preserving obfuscation at once (norm rescaling, head, MLP-unit
                and residual-basis permutations: ``fingerprint.edits.obfuscation.obfuscate``)
  renamed-ft    the renamed copy fine-tuned as ``ft`` is
  signs-units   residual sign flips and signed per-unit MLP scales (``fingerprint.edits.rotation``)
  rotated       the residual stream rotated by a Haar-random orthogonal matrix, norm gains
                folded (``fingerprint.edits.rotation.rotate_residual``): function-preserving
  rotated-ft    the rotated copy fine-tuned as ``ft`` is
  quarot-int4   QuaRot-style: a randomized Hadamard rotation, then int4 (groups of 32)
  distilled     a fresh initialisation (another seed) trained on the base's logits: a
                knowledge lineage without a weight lineage, reported apart

Built suspects are saved as ``.npz`` files of their parameters (``save``/``load``), so a
stopped run rebuilds only what is missing.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from bornbiased_jax import files
from bornbiased_jax.fingerprint.edits import downstream as E
from bornbiased_jax.fingerprint.edits.derivatives import DERIVATIVES, derive
from experiments.lineage_bench import EDITS
from experiments.common.tune import tune

FT_STEPS, FT_LR = 200, 1e-3
LORA_STEPS, LORA_LR, LORA_RANK = 200, 2e-3, 8
DISTILL_STEPS, DISTILL_LR = 400, 3e-3
DISTILL_SEED_OFFSET = 1000  # the student of base seed k starts from seed k + 1000's init


def save(path: Path, params: dict) -> None:
    flat = {jax.tree_util.keystr(p): np.asarray(v)
            for p, v in jax.tree_util.tree_leaves_with_path(params)}
    files.atomic_write(path, lambda f: np.savez(f, **flat), mode="wb")


def load(path: Path, like: dict) -> dict:
    """The parameters saved in ``path``, in the tree of ``like``."""
    with np.load(path, allow_pickle=False) as z:
        leaves = [z[jax.tree_util.keystr(p)] for p, _ in jax.tree_util.tree_leaves_with_path(like)]
    return jax.tree.unflatten(jax.tree.structure(like), leaves)


def build(edit: str, base: dict, cfg, *, continued: dict, ft: dict | None, blocks: np.ndarray,
          seed: int, init_of) -> dict:
    """Suspect ``edit`` of ``base`` (seed ``seed``'s trained model); ``continued`` is its
    continuation, ``ft`` its fine-tune (None while ``edit`` is 'ft' itself), ``blocks`` the
    fine-tuning data, ``init_of(s)`` the initialisation of seed s."""
    if edit == "continued":
        return continued
    if edit == "ft":
        return tune(base, cfg, blocks, steps=FT_STEPS, lr=FT_LR, data_seed=seed)
    if edit == "lora":
        return tune(base, cfg, blocks, mode="lora", steps=LORA_STEPS, lr=LORA_LR,
                    rank=LORA_RANK, data_seed=seed)
    if edit == "merge":
        return E.average([ft, continued])
    if edit == "task-sum":
        return E.task_arithmetic(base, [ft, continued], [1.0, 1.0])
    if edit in ("renamed-ft", "rotated-ft"):  # renamed or rotated, then fine-tuned as 'ft'
        _, edited = derive(edit.removesuffix("-ft"), base, cfg, jax.random.key(seed))
        return tune(edited, cfg, blocks, steps=FT_STEPS, lr=FT_LR, data_seed=seed)
    if edit == "distilled":
        return tune(init_of(seed + DISTILL_SEED_OFFSET), cfg, blocks, mode="distill",
                    teacher=base, steps=DISTILL_STEPS, lr=DISTILL_LR, data_seed=seed)
    if edit in DERIVATIVES:  # the one-model edits, e.g. quantization, pruning, renaming
        edited_cfg, edited = derive(edit, base, cfg, jax.random.key(seed))
        if edited_cfg != cfg:
            raise ValueError(f"edit {edit!r} changes the config (unties the head); the "
                             f"benchmark's suspects keep the base's")
        return edited
    raise ValueError(f"unknown edit {edit!r}; the edits are {EDITS}")
