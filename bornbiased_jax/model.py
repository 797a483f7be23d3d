"""The decoder: ``init(config, key)`` -> parameter pytree, ``forward(params, config, tokens)``.

One model is one key. Parameters live in a plain nested dict whose paths follow HF naming
(``layers_3/attn/q_proj/kernel``, ``layers_3/mlp/down_proj/kernel``, ``embed/embedding``,
``lm_head/kernel``) so imported checkpoints map onto them one to one. Each parameter's key is
``fold_in(key, crc32(path))``: the same seed gives the same weights however the code is arranged.

The parameters split into two groups:
  * embeddings (``embed``, ``pos_embed``, ``lm_head``) drawn from the *embedding key*, which by
    default is the same for every seed (paper footnote 2, App. B.2), and
  * blocks (``layers_*``, ``final_norm``) drawn from the model key: what differs between seeds.
Sweeps build the blocks for many seeds and share one copy of the embeddings.

Shapes: T tokens, d = d_model, V = vocab_size, L = n_layers.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from bornbiased_jax import layers
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.keys import fold_in_name, stream_key

EMBED_GROUP = ("embed", "pos_embed", "lm_head")


def _param_maker(key: jax.Array, dtype):
    def init_param(name: str, shape: tuple[int, ...], std):
        if std == "zeros":
            return jnp.zeros(shape, dtype)
        if std == "ones":
            return jnp.ones(shape, dtype)
        return (std * jax.random.normal(fold_in_name(key, name), shape, jnp.float32)).astype(dtype)
    return init_param


def embed_key(cfg: ModelConfig, key: jax.Array) -> jax.Array:
    """The key of the embedding group: shared across seeds unless ``cfg.shared_embedding`` is off."""
    if cfg.shared_embedding:
        return stream_key(cfg.embed_seed, "embed")
    return fold_in_name(key, "stream/embed")


def init_embeddings(cfg: ModelConfig, key: jax.Array, dtype=jnp.float32) -> dict:
    """Embedding W_E (V, d), learned positions if any, untied LM head W_U (d, V); N(0, init_std)."""
    init_param = _param_maker(key, dtype)
    p = {"embed": {"embedding": init_param("embed/embedding", (cfg.vocab_size, cfg.d_model),
                                           cfg.init_std)}}
    if cfg.position == "learned":
        p["pos_embed"] = {"embedding": init_param(
            "pos_embed/embedding", (cfg.max_seq_len, cfg.d_model), cfg.init_std)}
    if not cfg.tie_embeddings:
        p["lm_head"] = {"kernel": init_param("lm_head/kernel", (cfg.d_model, cfg.vocab_size),
                                             cfg.init_std)}
    return p


def init_blocks(cfg: ModelConfig, key: jax.Array, dtype=jnp.float32) -> dict:
    """The seed-dependent parameters: L blocks and the final norm (App. B.1 initialisation)."""
    init_param = _param_maker(key, dtype)
    p = {}
    for i in range(cfg.n_layers):
        blk = {}
        if cfg.has_attn:
            blk["attn_norm"] = layers.init_norm(cfg, init_param, f"layers_{i}/attn_norm")
            blk["attn"] = layers.init_attention(cfg, init_param, f"layers_{i}/attn")
        if cfg.has_mlp:
            blk["mlp_norm"] = layers.init_norm(cfg, init_param, f"layers_{i}/mlp_norm")
            blk["mlp"] = layers.init_mlp(cfg, init_param, f"layers_{i}/mlp")
        p[f"layers_{i}"] = blk
    p["final_norm"] = layers.init_norm(cfg, init_param, "final_norm")
    return p


def init(cfg: ModelConfig, key: jax.Array, dtype=jnp.float32) -> dict:
    """All parameters of the model whose seed is ``key``. Call under ``jax.jit`` for sweeps."""
    return {**init_embeddings(cfg, embed_key(cfg, key), dtype), **init_blocks(cfg, key, dtype)}


def split_params(params: dict) -> tuple[dict, dict]:
    """(blocks, embeddings) of a full parameter dict."""
    emb = {k: v for k, v in params.items() if k in EMBED_GROUP}
    return {k: v for k, v in params.items() if k not in EMBED_GROUP}, emb


class ForwardOutput(NamedTuple):
    """logits (T, V) or (1, V) with ``last_only``; hidden (L+1, T, d): X^(0), X^(1), ..., X^(L)
    when ``return_hidden``; normed: Norm_final(X^(L)) at the positions logits were computed."""

    logits: jax.Array
    hidden: jax.Array | None
    normed: jax.Array


def unembedding(params: dict, cfg: ModelConfig) -> jax.Array:
    """W_U of shape (d, V): W_E^T when tied (Eq. 1)."""
    if cfg.tie_embeddings:
        return params["embed"]["embedding"].T
    return params["lm_head"]["kernel"]


def check_seq_len(cfg: ModelConfig, T: int) -> None:
    if not 1 <= T <= cfg.max_seq_len:
        raise ValueError(f"sequence length T={T} is outside [1, max_seq_len={cfg.max_seq_len}] "
                         f"of {cfg.name}; use a shorter sequence or a preset with longer context")


def forward(params: dict, cfg: ModelConfig, tokens_T: jax.Array | None = None, *,
            embeds_Td: jax.Array | None = None, last_only: bool = False,
            return_hidden: bool = False) -> ForwardOutput:
    """Run one sequence through the decoder (paper Sec. 2.1, pre-norm).

    Args:
      tokens_T: int token ids (T,), or None when ``embeds_Td`` (T, d) is given instead (the
        Gaussian inputs of Sec. 4.1 replace Embed(i)).
      last_only: compute the final norm and logits at the last position only.
      return_hidden: also return every block's output.
    """
    if (tokens_T is None) == (embeds_Td is None):
        raise ValueError("give exactly one of tokens_T and embeds_Td")
    x_Td = params["embed"]["embedding"][tokens_T] if embeds_Td is None else embeds_Td
    if x_Td.ndim != 2 or x_Td.shape[1] != cfg.d_model:
        raise ValueError(f"expected one sequence of shape (T,) or (T, {cfg.d_model}), "
                         f"got {x_Td.shape}; batch with jax.vmap")
    T = x_Td.shape[0]
    check_seq_len(cfg, T)
    if cfg.position == "learned":
        x_Td = x_Td + params["pos_embed"]["embedding"][:T]
    rope = layers.rope_cos_sin(T, cfg.head_dim, cfg.rope_theta) if cfg.position == "rope" else None

    hidden = [x_Td]
    for i in range(cfg.n_layers):
        blk = params[f"layers_{i}"]
        # Without hidden states, the last block is needed at the last position only.
        last = last_only and not return_hidden and i == cfg.n_layers - 1
        if cfg.has_attn:  # H^(l) = X^(l-1) + MHA(Norm(X^(l-1)))
            a_Td = layers.attention(blk["attn"], cfg, layers.norm(blk["attn_norm"], cfg, x_Td),
                                    rope, last_only=last)
            x_Td = x_Td[-1:] if last else x_Td
            x_Td = x_Td + a_Td if cfg.residual else a_Td
        elif last:
            x_Td = x_Td[-1:]
        if cfg.has_mlp:  # X^(l) = H^(l) + MLP(Norm(H^(l)))
            m_Td = layers.mlp(blk["mlp"], cfg, layers.norm(blk["mlp_norm"], cfg, x_Td))
            x_Td = x_Td + m_Td if cfg.residual else m_Td
        if return_hidden:
            hidden.append(x_Td)

    h_Td = x_Td[-1:] if last_only else x_Td
    normed_Td = layers.norm(params["final_norm"], cfg, h_Td)
    logits_TV = normed_Td @ unembedding(params, cfg)  # Eq. 1: L = Norm_final(X^(L)) W_U
    return ForwardOutput(logits_TV, jnp.stack(hidden) if return_hidden else None, normed_Td)
