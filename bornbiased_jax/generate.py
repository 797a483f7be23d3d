"""Greedy decoding, the check that an imported model is the model it claims to be: the same
prompt must continue token for token as in the reference implementation.

    ids = greedy(params, cfg, prompt_ids, max_new_tokens=24)

Every step runs the whole buffer of ``len(prompt) + max_new_tokens`` positions (one compiled
program, no cache): causal attention makes the positions after the one read irrelevant, so this
is plain greedy decoding at the cost of recomputing the prefix, which is small for the short
continuations it is meant for.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError


def greedy(params: dict, cfg: ModelConfig, prompt_ids, max_new_tokens: int,
           eos_id: int | None = None) -> np.ndarray:
    """The ``max_new_tokens`` token ids (fewer if ``eos_id`` is produced, which is kept) that
    greedy decoding appends to ``prompt_ids`` (a non-empty 1-D sequence of ids)."""
    prompt = np.asarray(prompt_ids, np.int32)
    if prompt.ndim != 1 or prompt.size == 0:
        raise UserError(f"the prompt must be a non-empty 1-D sequence of token ids, got shape "
                        f"{prompt.shape}")
    if not (isinstance(max_new_tokens, int) and max_new_tokens >= 1):
        raise UserError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    if prompt.min() < 0 or prompt.max() >= cfg.vocab_size:
        raise UserError(f"prompt token ids must lie in [0, {cfg.vocab_size}) for {cfg.name}")
    length = prompt.size + max_new_tokens
    model.check_seq_len(cfg, length)
    argmax_L = jax.jit(lambda p, t: jnp.argmax(model.forward(p, cfg, t).logits, axis=-1))
    buf = np.zeros(length, np.int32)
    buf[:prompt.size] = prompt
    out = []
    for t in range(prompt.size, length):
        nxt = int(argmax_L(params, jnp.asarray(buf))[t - 1])
        buf[t] = nxt
        out.append(nxt)
        if eos_id is not None and nxt == eos_id:
            break
    return np.asarray(out, np.int32)
