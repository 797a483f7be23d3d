"""The trained edits of the lineage benchmark: a full fine-tune, LoRA adapters trained with the
base frozen and merged, and distillation of a fresh seed on a teacher's logits, each a short
AdamW run on a (N, T + 1) array of token blocks.

One loop serves the three (``mode``): the loss is next-token cross-entropy for 'full' and
'lora', and KL(teacher || student) over the vocabulary at every position for 'distill'; for
'lora' only the adapters train (``optax.multi_transform`` with the base set to zero, as
``fingerprint.edits.downstream.lora_trainable_mask`` prescribes) and the result is the merged model.
Batches are drawn in a fixed order from ``data_seed``, so an edit is a function of its
arguments. The optimiser and the next-token loss are the training package's
(``training.optimizer.make_optimizer`` with a constant rate after the warmup,
``training.step.loss_fn``): clipping at 1.0, AdamW(0.9, 0.95), weight decay on matrices only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits import downstream as E
from bornbiased_jax.training.config import TrainConfig
from bornbiased_jax.training.optimizer import make_optimizer
from bornbiased_jax.training.step import loss_fn

MODES = ("full", "lora", "distill")


def _batches(blocks: np.ndarray, steps: int, batch: int, data_seed: int) -> np.ndarray:
    rng = np.random.default_rng(data_seed)
    return np.stack([blocks[rng.choice(len(blocks), batch, replace=False)]
                     for _ in range(steps)])


def tune(params: dict, cfg: ModelConfig, blocks: np.ndarray, *, mode: str = "full",
         steps: int = 200, lr: float = 1e-3, batch: int = 16, data_seed: int = 0,
         teacher: dict | None = None, rank: int = 8, lora_alpha: float = 16.0,
         weight_decay: float = 0.1) -> dict:
    """``params`` trained ``steps`` AdamW steps (linear warmup over the first tenth, then
    constant ``lr``) on ``blocks``; see the module docstring for ``mode``. Returns host-side
    parameters of the same tree as ``params``."""
    if mode not in MODES:
        raise UserError(f"unknown tuning mode {mode!r}; choose one of {MODES}")
    if mode == "distill" and teacher is None:
        raise UserError("distillation needs the teacher's parameters")
    if blocks.ndim != 2 or len(blocks) < batch:
        raise UserError(f"need at least {batch} blocks of T + 1 tokens, got {blocks.shape}")
    params = jax.tree.map(jnp.asarray, params)
    teacher = None if teacher is None else jax.tree.map(jnp.asarray, teacher)
    tx = make_optimizer(TrainConfig(steps=steps, lr=lr, warmup=min(max(1, steps // 10), steps - 1),
                                    schedule="constant", weight_decay=weight_decay))

    def logits_of(p, x_BT):
        return jax.vmap(lambda x: model.forward(p, cfg, x).logits)(x_BT)

    if mode == "lora":
        adapters = E.init_lora(params, cfg, rank, jax.random.key(data_seed))
        scale = lora_alpha / rank
        joint = {"params": params, "lora": adapters}
        labels = jax.tree.map(lambda m: "lora" if m else "frozen",
                              E.lora_trainable_mask(params, adapters))
        tx = optax.multi_transform({"lora": tx, "frozen": optax.set_to_zero()}, labels)
        trainable = joint

        def as_model(t):
            return E.lora_merge(t["params"], t["lora"], scale)
    else:
        trainable = params

        def as_model(t):
            return t

    def loss(t, blk_BT1):
        if mode != "distill":
            return loss_fn(as_model(t), cfg, blk_BT1, bf16=False)
        target = jax.nn.log_softmax(logits_of(teacher, blk_BT1[:, :-1]))
        logq = jax.nn.log_softmax(logits_of(as_model(t), blk_BT1[:, :-1]))
        return jnp.mean(jnp.sum(jnp.exp(target) * (target - logq), axis=-1))

    @jax.jit
    def step(t, opt_state, blk):
        value, grads = jax.value_and_grad(loss)(t, blk)
        updates, opt_state = tx.update(grads, opt_state, t)
        return optax.apply_updates(t, updates), opt_state, value

    opt_state = tx.init(trainable)
    for blk in _batches(np.asarray(blocks, np.int32), steps, batch, data_seed):
        trainable, opt_state, _ = step(trainable, opt_state, jnp.asarray(blk))
    return jax.tree.map(np.asarray, as_model(trainable))
