"""The optimiser of a run (paper Table 14): gradient clipping, AdamW with weight decay on
matrices only, and the learning-rate schedule.

The schedule spans ``steps`` (linear warmup, then cosine decay to ``min_lr`` at ``steps``, Table
14; or linear decay, ``schedule="linear"``, as the lineage models' code; or a constant rate
after the warmup), so ``steps`` is part of the run's identity: resuming with another ``steps``
would reshape the schedule mid-run and match no uninterrupted run, and is an error
(``config.TrainConfig.RESUMABLE``). To stop early and continue later on the same schedule, use
``stop_at`` (``--stop-at``), which may differ between resumes.
"""

from __future__ import annotations

import jax
import optax

from bornbiased_jax.training.config import TrainConfig


def lr_schedule(tc: TrainConfig) -> optax.Schedule:
    """Linear warmup from 0 to ``lr`` over ``warmup`` steps, then decay to ``min_lr`` at step
    ``steps``: cosine (Table 14) or linear (HF's ``get_linear_schedule_with_warmup`` with
    ``min_lr`` 0, which the lineage models' released code uses); or, ``schedule="constant"``,
    ``lr`` from the end of the warmup on (``min_lr`` unused)."""
    if tc.schedule == "cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0, peak_value=tc.lr, warmup_steps=tc.warmup, decay_steps=tc.steps,
            end_value=tc.min_lr)
    if tc.schedule == "constant":
        return optax.join_schedules(
            [optax.linear_schedule(0.0, tc.lr, tc.warmup), optax.constant_schedule(tc.lr)],
            [tc.warmup])
    return optax.join_schedules(
        [optax.linear_schedule(0.0, tc.lr, tc.warmup),
         optax.linear_schedule(tc.lr, tc.min_lr, tc.steps - tc.warmup)], [tc.warmup])


def make_optimizer(tc: TrainConfig) -> optax.GradientTransformation:
    """Clip to global norm 1.0, AdamW(0.9, 0.95), wd 0.1 on matrices only, warmup + decay
    (:func:`lr_schedule`).

    Norm scales are not decayed, including head-wise RMSNorm's gamma, a matrix (H, K)."""
    schedule = lr_schedule(tc)
    decay_mask = lambda params: jax.tree_util.tree_map_with_path(  # noqa: E731
        lambda path, p: p.ndim >= 2 and getattr(path[-1], "key", None) != "scale", params)
    return optax.chain(
        optax.clip_by_global_norm(tc.grad_clip),
        optax.adamw(schedule, b1=tc.b1, b2=tc.b2, eps=1e-8, weight_decay=tc.weight_decay,
                    mask=decay_mask))
