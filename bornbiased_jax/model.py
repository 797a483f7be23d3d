"""The decoder as a Flax Linen module, and its functional API: ``init(config, key)`` -> a plain
nested dict of parameters, ``forward(params, config, tokens)`` -> logits.

One model is one key. Parameter paths follow HF naming: ``embed/embedding`` (V, d),
``pos_embed/embedding`` (T_max, d) with learned positions, ``lm_head/kernel`` (d, V) when
untied, ``layers_{i}/{attn_norm,mlp_norm}/{scale,bias}``,
``layers_{i}/attn/{q,k,v,o}_proj/{kernel,bias}`` (with the Sec. 6.2 variants also
``attn/head_norm/scale`` and ``attn/gate_proj/...``; with Gemma's QK-norm ``attn/{q,k}_norm/scale``
and with its sandwich norms ``layers_{i}/{attn,mlp}_post_norm/scale``),
``layers_{i}/mlp/{gate,up,down}_proj/...``,
``final_norm/{scale,bias}``; kernels are (in, out); ``schema.py`` lists every path with its
role and logical axes. An importer of HF checkpoints renames their
tensors to these paths and transposes PyTorch's (out, in) linear weights (GPT-2's Conv1D
weights are already (in, out); its fused ``c_attn`` splits into q, k and v).

Linen folds each submodule's name into its PRNG key, so the same seed gives the same weights
however the code is arranged. The parameters split into two groups drawn from two rng streams:
  * embeddings (``embed``, ``pos_embed``, ``lm_head``) from the ``embed`` stream, whose key by
    default is the same for every seed (paper footnote 2, App. B.2): :func:`embed_key`;
  * blocks (``layers_*``, ``final_norm``) from the ``params`` stream, the model key: what
    differs between seeds.
Sweeps build the blocks for many seeds (:func:`init_blocks`) and share one copy of the
embeddings (:func:`init_embeddings`).

Shapes: T tokens, Q query positions (T, or 1 with ``last_only``), d = d_model,
V = vocab_size, L = n_layers, H = n_heads.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.keys import fold_in_name, stream_key
from bornbiased_jax.layers import MLP, Attention, Norm, normal_init, rope_cos_sin


# --- the embedding group: drawn from the "embed" rng stream ----------------------------------
def _embed_stream_param(module: nn.Module, name: str, shape: tuple[int, ...], std: float,
                        dtype: Any) -> jax.Array:
    """A parameter ~ N(0, std^2) whose key comes from the ``embed`` stream, not ``params``."""
    def init():
        # make_rng would fall back to the "params" stream silently; the group must not.
        if not module.has_rng("embed"):
            raise ValueError("the embedding group is drawn from the 'embed' rng stream; "
                             "initialise with rngs={'embed': key, ...}")
        return normal_init(std)(module.make_rng("embed"), shape, dtype)
    return module.variable("params", name, init).value


class Embedding(nn.Module):
    """A table W (n, d) ~ N(0, std^2): token embeddings W_E or learned positions."""

    num: int
    features: int
    std: float
    param_dtype: Any = jnp.float32

    def setup(self):
        self.embedding = _embed_stream_param(self, "embedding", (self.num, self.features),
                                             self.std, self.param_dtype)

    def __call__(self, ids_T: jax.Array) -> jax.Array:
        return self.embedding[ids_T]  # (T, d)


class LMHead(nn.Module):
    """An untied unembedding W_U (d, V) ~ N(0, std^2)."""

    features: int
    vocab_size: int
    std: float
    param_dtype: Any = jnp.float32

    def setup(self):
        self.kernel = _embed_stream_param(self, "kernel", (self.features, self.vocab_size),
                                          self.std, self.param_dtype)


# --- the decoder ------------------------------------------------------------------------------
class Block(nn.Module):
    """One pre-norm block (paper Sec. 2.1): H = X + MHA(Norm(X)), then Y = H + MLP(Norm(H)).

    Without ``residual`` the sublayers replace the stream; ``block`` removes either sublayer.
    With ``post_norms`` (Gemma's sandwich norms) each sublayer's output is normalised before
    it joins the stream: H = X + Norm_post(MHA(Norm(X))), Y = H + Norm_post(MLP(Norm(H))),
    with ``attn_post_norm`` and ``mlp_post_norm`` of their own; without ``pre_norms`` (OLMo 2)
    the sublayers read the stream itself: H = X + Norm_post(MHA(X))."""

    cfg: ModelConfig
    param_dtype: Any = jnp.float32

    def setup(self):
        cfg, dt = self.cfg, self.param_dtype
        if cfg.has_attn:
            if cfg.pre_norms:
                self.attn_norm = Norm(cfg, dt)
            self.attn = Attention(cfg, dt)
            if cfg.post_norms:
                self.attn_post_norm = Norm(cfg, dt)
        if cfg.has_mlp:
            if cfg.pre_norms:
                self.mlp_norm = Norm(cfg, dt)
            self.mlp = MLP(cfg, dt)
            if cfg.post_norms:
                self.mlp_post_norm = Norm(cfg, dt)

    def __call__(self, x_Td: jax.Array, rope=None, last_only: bool = False,
                 window: int | None = None) -> jax.Array:
        """(T, d) -> (Q, d); with ``last_only`` the block runs at the last position only;
        ``window``: the attention's sliding window (None: global)."""
        cfg = self.cfg
        x_Qd = x_Td[-1:] if last_only else x_Td
        if cfg.has_attn:  # H^(l) = X^(l-1) + MHA(Norm(X^(l-1)))
            a_Qd = self.attn(self.attn_norm(x_Td) if cfg.pre_norms else x_Td, rope, last_only,
                             window)
            if cfg.post_norms:
                a_Qd = self.attn_post_norm(a_Qd)
            x_Qd = x_Qd + a_Qd if cfg.residual else a_Qd
        if cfg.has_mlp:  # X^(l) = H^(l) + MLP(Norm(H^(l)))
            m_Qd = self.mlp(self.mlp_norm(x_Qd) if cfg.pre_norms else x_Qd)
            if cfg.post_norms:
                m_Qd = self.mlp_post_norm(m_Qd)
            x_Qd = x_Qd + m_Qd if cfg.residual else m_Qd
        return x_Qd


class Decoder(nn.Module):
    """Embedding, L blocks, final norm and unembedding of ONE sequence (batch with vmap)."""

    cfg: ModelConfig
    param_dtype: Any = jnp.float32

    def setup(self):
        cfg, dt = self.cfg, self.param_dtype
        self.embed = Embedding(cfg.vocab_size, cfg.d_model, cfg.init_std, dt)  # W_E (V, d)
        if cfg.position == "learned":
            self.pos_embed = Embedding(cfg.max_seq_len, cfg.d_model, cfg.init_std, dt)
        if cfg.unembed and not cfg.tie_embeddings:
            self.lm_head = LMHead(cfg.d_model, cfg.vocab_size, cfg.init_std, dt)  # W_U (d, V)
        self.layers = [Block(cfg, dt) for _ in range(cfg.n_layers)]  # named layers_0, ...
        self.final_norm = Norm(cfg, dt)

    def embedding_group(self) -> None:
        """Touch (so ``init`` creates) the embedding group alone."""
        self.embed.embedding  # noqa: B018
        if self.cfg.unembed:
            self.unembedding()
        if self.cfg.position == "learned":
            self.pos_embed.embedding  # noqa: B018

    def unembedding(self) -> jax.Array:
        """W_U (d, V): W_E^T when tied (Eq. 1)."""
        return self.embed.embedding.T if self.cfg.tie_embeddings else self.lm_head.kernel

    def inputs(self, tokens_T: jax.Array | None, embeds_Td: jax.Array | None) -> jax.Array:
        """X^(0) (T, d): Embed(tokens) (times sqrt(d) with ``embed_scale``) or the given
        embeddings (never scaled: they replace the scaled embedding, as ``inputs_embeds`` do
        in transformers), plus learned positions."""
        if embeds_Td is None:
            x_Td = self.embed(tokens_T)
            if self.cfg.embed_scale:  # Gemma: sqrt(d) rounded to float32, then to the dtype
                x_Td = x_Td * jnp.asarray(np.float32(math.sqrt(self.cfg.d_model)), x_Td.dtype)
        else:
            x_Td = embeds_Td
        if self.cfg.position == "learned":
            x_Td = x_Td + self.pos_embed.embedding[:x_Td.shape[0]]
        return x_Td

    def blocks(self, x_Td: jax.Array, last_only: bool = False,
               return_hidden: bool = False) -> tuple[jax.Array, list[jax.Array]]:
        """Norm_final(X^(L)) at the last position (1, d) or all (T, d), and [X^(0), ..., X^(L)]
        when ``return_hidden`` (else [])."""
        cfg = self.cfg
        T = x_Td.shape[0]
        ropes = {}  # one table per RoPE (Gemma 3: the global layers' and the sliding ones')
        if cfg.position == "rope":
            for rope in dict.fromkeys(cfg.layer_rope(i) for i in range(cfg.n_layers)):
                ropes[rope] = rope_cos_sin(T, cfg.resolved_head_dim, *rope, cfg.max_seq_len)
        hidden = [x_Td] if return_hidden else []
        for i, block in enumerate(self.layers):
            # Without hidden states, the last block is needed at the last position only.
            last = last_only and not return_hidden and i == cfg.n_layers - 1
            x_Td = block(x_Td, ropes.get(cfg.layer_rope(i)), last, cfg.layer_window(i))
            if return_hidden:
                hidden.append(x_Td)
        h_Qd = x_Td[-1:] if last_only else x_Td
        return self.final_norm(h_Qd), hidden

    def __call__(self, tokens_T: jax.Array | None = None, embeds_Td: jax.Array | None = None,
                 last_only: bool = False, return_hidden: bool = False) -> "ForwardOutput":
        x_Td = self.inputs(tokens_T, embeds_Td)
        normed_Qd, hidden = self.blocks(x_Td, last_only, return_hidden)
        # Eq. 1: L = Norm_final(X^(L)) W_U; a head-free program (cfg.unembed False) ends before
        logits_QV = normed_Qd @ self.unembedding() if self.cfg.unembed else None
        return ForwardOutput(logits_QV, jnp.stack(hidden) if return_hidden else None, normed_Qd)


# --- functional API ---------------------------------------------------------------------------
class ForwardOutput(NamedTuple):
    """logits (T, V) or (1, V) with ``last_only`` (None for a head-free config,
    ``cfg.unembed`` False); hidden (L+1, T, d): X^(0), X^(1), ..., X^(L)
    when ``return_hidden``; normed: Norm_final(X^(L)) at the positions logits were computed;
    attention (L, H, Q, T): every layer's softmax probabilities at those Q positions when
    ``return_attention``."""

    logits: jax.Array
    hidden: jax.Array | None
    normed: jax.Array
    attention: jax.Array | None = None


def embed_key(cfg: ModelConfig, key: jax.Array) -> jax.Array:
    """The key of the embedding group: shared across seeds unless ``cfg.shared_embedding`` is off."""
    if cfg.shared_embedding:
        return stream_key(cfg.embed_seed, "embed")
    return fold_in_name(key, "stream/embed")


def _as_dict_layout(cfg: ModelConfig, params: dict) -> dict:
    """Linen omits modules without parameters; keep an empty dict for each (``final_norm`` with
    ``norm="none"``, Attn0's ``attn``), so that every block has the same keys."""
    out = dict(params)
    pre, post = cfg.pre_norms, cfg.post_norms
    names = ((("attn_norm",) if pre else ()) + ("attn",) + (("attn_post_norm",) if post else ())
             if cfg.has_attn else ()) + (
        (("mlp_norm",) if pre else ()) + ("mlp",) + (("mlp_post_norm",) if post else ())
        if cfg.has_mlp else ())
    for i in range(cfg.n_layers):
        blk = params.get(f"layers_{i}", {})
        out[f"layers_{i}"] = {n: blk.get(n, {}) for n in names}
    out["final_norm"] = params.get("final_norm", {})
    return out


def init_embeddings(cfg: ModelConfig, key: jax.Array, dtype=jnp.float32) -> dict:
    """Embedding W_E (V, d), learned positions if any, untied LM head W_U (d, V); N(0, init_std).

    ``key`` is the embedding group's key itself (see :func:`embed_key`)."""
    v = Decoder(cfg, dtype).init({"embed": key}, method=Decoder.embedding_group)
    return dict(v["params"])


def init_blocks(cfg: ModelConfig, key: jax.Array, dtype=jnp.float32) -> dict:
    """The seed-dependent parameters: L blocks and the final norm (App. B.1 initialisation)."""
    x_1d = jnp.zeros((1, cfg.d_model), dtype)  # shapes only: jit drops the computation
    v = Decoder(cfg, dtype).init({"params": key}, x_1d, method=Decoder.blocks)
    return _as_dict_layout(cfg, v.get("params", {}))


def init(cfg: ModelConfig, key: jax.Array, dtype=jnp.float32) -> dict:
    """All parameters of the model whose seed is ``key``. Call under ``jax.jit`` for sweeps.

    Equal, bitwise, to
    ``{**init_embeddings(cfg, embed_key(cfg, key)), **init_blocks(cfg, key)}``."""
    rngs = {"params": key, "embed": embed_key(cfg, key)}
    v = Decoder(cfg, dtype).init(rngs, jnp.zeros((1,), jnp.int32))
    return _as_dict_layout(cfg, v["params"])


def param_shapes(cfg: ModelConfig) -> dict:
    """``init(cfg, key)``'s parameters as ``jax.ShapeDtypeStruct`` leaves (float32), traced
    once per architecture (tracing a 30-layer model's init takes seconds; the config's name
    plays no part). A fresh tree each call, so a caller may change it."""
    return jax.tree.map(lambda x: x, _param_shapes(dataclasses.replace(cfg, name="")))


@functools.lru_cache(maxsize=32)
def _param_shapes(cfg: ModelConfig) -> dict:
    # the tied model's tree and W_U (d, V): one trace serves both
    if cfg.unembed and not cfg.tie_embeddings:
        tied = _param_shapes(dataclasses.replace(cfg, tie_embeddings=True))
        return {**tied, "lm_head": {"kernel": jax.ShapeDtypeStruct(
            (cfg.d_model, cfg.vocab_size), jnp.float32)}}
    return jax.eval_shape(lambda k: init(cfg, k), jax.random.key(0))


def head_free(cfg: ModelConfig, params: dict, name: str) -> tuple[ModelConfig, dict]:
    """``cfg`` and ``params`` for a program that ends before the unembedding: the config named
    ``name`` with ``unembed`` False (no W_U built or read, no logits computed), the parameters
    without ``lm_head``. Such configs ignore ``tie_embeddings``, so two checkpoints of one
    architecture share one config, and a program cached or compiled per config serves both
    whatever their names and whether their heads are tied."""
    return (dataclasses.replace(cfg, name=name, unembed=False),
            {k: v for k, v in params.items() if k != "lm_head"})


def unembedding(params: dict, cfg: ModelConfig) -> jax.Array:
    """W_U of shape (d, V): W_E^T when tied (Eq. 1)."""
    if not cfg.unembed:
        raise UserError(f"{cfg.name} is a head-free config (unembed=False): its programs end "
                        f"before the unembedding")
    if cfg.tie_embeddings:
        return params["embed"]["embedding"].T
    return params["lm_head"]["kernel"]


def check_seq_len(cfg: ModelConfig, T: int) -> None:
    if not 1 <= T <= cfg.max_seq_len:
        raise UserError(f"sequence length T={T} is outside [1, max_seq_len={cfg.max_seq_len}] "
                        f"of {cfg.name}; use a shorter sequence or a preset with longer context")


def check_has_attention(cfg: ModelConfig, need: str) -> None:
    """A ``UserError`` unless ``cfg`` has softmax attention maps; ``need`` says what needed them."""
    if not cfg.has_attn_params:
        raise UserError(f"{cfg.name} has no softmax attention (block={cfg.block!r}, "
                        f"attention={cfg.attention!r}): {need}")


def forward(params: dict, cfg: ModelConfig, tokens_T: jax.Array | None = None, *,
            embeds_Td: jax.Array | None = None, last_only: bool = False,
            return_hidden: bool = False, return_attention: bool = False) -> ForwardOutput:
    """Run one sequence through the decoder (paper Sec. 2.1, pre-norm).

    Args:
      tokens_T: int token ids (T,), or None when ``embeds_Td`` (T, d) is given instead (the
        Gaussian inputs of Sec. 4.1 replace Embed(i)).
      last_only: compute the final norm and logits at the last position only.
      return_hidden: also return every block's output.
      return_attention: also return the softmax attention probabilities (L, H, Q, T), as
        sown by each layer (``Attention``); with ``last_only``, Q = 1 (the last row).
    """
    if (tokens_T is None) == (embeds_Td is None):
        raise UserError("give exactly one of tokens_T and embeds_Td")
    if embeds_Td is not None and (embeds_Td.ndim != 2 or embeds_Td.shape[1] != cfg.d_model):
        raise UserError(f"expected one sequence of shape (T,) or (T, {cfg.d_model}), "
                        f"got {embeds_Td.shape}; batch with jax.vmap")
    if tokens_T is not None and jnp.ndim(tokens_T) != 1:
        raise UserError(f"expected one sequence of shape (T,) or (T, {cfg.d_model}), "
                        f"got {jnp.shape(tokens_T)}; batch with jax.vmap")
    T = (embeds_Td if tokens_T is None else tokens_T).shape[0]
    check_seq_len(cfg, T)
    decoder, variables = Decoder(cfg), {"params": params}
    if not return_attention:
        return decoder.apply(variables, tokens_T, embeds_Td, last_only, return_hidden)
    check_has_attention(cfg, "return_attention needs attention maps")
    out, state = decoder.apply(variables, tokens_T, embeds_Td, last_only, return_hidden,
                               mutable=["intermediates"])
    sown = state["intermediates"]
    A_LHQT = jnp.stack([sown[f"layers_{i}"]["attn"]["attention_probs"][0][:, -out.normed.shape[0]:]
                        for i in range(cfg.n_layers)])
    return out._replace(attention=A_LHQT)


def forward_input(params: dict, cfg: ModelConfig, x: jax.Array, **kw) -> ForwardOutput:
    """:func:`forward` on one probe input ``x``, told apart by its rank: token ids (T,) or input
    embeddings (T, d) (e.g. the Gaussian inputs of Sec. 4.1). Keywords go to ``forward``."""
    if jnp.ndim(x) == 1:
        return forward(params, cfg, x, **kw)
    return forward(params, cfg, embeds_Td=x, **kw)
