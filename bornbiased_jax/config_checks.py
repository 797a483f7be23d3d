"""What a valid :class:`~bornbiased_jax.config.ModelConfig` is: the choices of each field
(the ``Literal`` types) and :func:`validate`, which names the field and what is allowed for
anything else (a ``UserError``)."""

from __future__ import annotations

from typing import Literal

from bornbiased_jax.errors import UserError

Activation = Literal["relu", "gelu", "gelu_tanh", "tanh", "silu"]
Norm = Literal["layernorm", "rmsnorm", "none"]
Block = Literal["attn_mlp", "attn_only", "mlp_only"]
# "softmax" is standard causal self-attention. "attn0_causal" / "attn0_full" are the paper's
# Attn0 (Definition 3): uniform weights and identity W_V, W_O, i.e. the causal running average
# o_i = (1/i) sum_{j<=i} x_j, or the full average over the sequence at every position.
Attention = Literal["softmax", "attn0_causal", "attn0_full"]
Position = Literal["rope", "learned", "none"]
# Per-head transform of the aggregated attention output o_i (before W_O), paper Sec. 6.2.1:
# "sqrt_i" multiplies o_i by sqrt(i) (positional amplification), "sqrt_i_over_T" by sqrt(i/T)
# with T = max_seq_len (positional attenuation), "headwise_rmsnorm" RMS-normalises each head's
# o_i and multiplies it by a learned per-head scale gamma (H, K) initialised to 1 (the companion
# paper's head-wise RMSNorm; that paper gives no formula, so this form is our reading).
OutputTransform = Literal["none", "sqrt_i", "sqrt_i_over_T", "headwise_rmsnorm"]
# Each layer's attention, in HF's words: the whole prefix, or the last ``sliding_window`` keys.
LayerType = Literal["full_attention", "sliding_attention"]
FULL, SLIDING = "full_attention", "sliding_attention"
# What the QK-norm normalises: each head's K coordinates (one gain (K,) shared by the heads), or
# the whole projection at once (H K coordinates for q, N K for k, one gain each).
QKNormScope = Literal["head", "projection"]


def positive_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def validate(cfg) -> None:
    """A UserError naming the first field of ``cfg`` that is not valid (see each message)."""
    from bornbiased_jax.rope import RopeScaling

    def need(ok: bool, msg: str):
        if not ok:
            raise UserError(f"invalid ModelConfig {cfg.name!r}: {msg}")

    need(cfg.rope_scaling is None or isinstance(cfg.rope_scaling, RopeScaling),
         f"rope_scaling must be a RopeScaling or None, got {cfg.rope_scaling!r}")
    if cfg.layer_types is not None:
        types = tuple(cfg.layer_types) if isinstance(cfg.layer_types, (list, tuple)) \
            else None
        need(types is not None and all(t in LayerType.__args__ for t in types),
             f"layer_types must be a list of {' / '.join(LayerType.__args__)}, one per "
             f"layer, got {cfg.layer_types!r}")
        need(len(types) == cfg.n_layers, f"layer_types has {len(types)} entries, one per "
             f"layer is {cfg.n_layers} (n_layers)")
        need(cfg.sliding_window is not None or SLIDING not in types,
             "layer_types names sliding_attention layers but sliding_window is None; give "
             "the window W too")

    for f in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len"):
        need(positive_int(getattr(cfg, f)),
             f"{f} must be a positive integer, got {getattr(cfg, f)!r}")
    for f in ("head_dim", "n_kv_heads"):
        v = getattr(cfg, f)
        need(v is None or positive_int(v),
             f"{f} must be a positive integer or None, got {v!r}")
    need(cfg.head_dim is not None or cfg.d_model % cfg.n_heads == 0,
         f"n_heads={cfg.n_heads} does not divide d_model={cfg.d_model}; choose "
         f"n_heads among the divisors of d_model, or give head_dim explicitly")
    need(cfg.n_heads % cfg.resolved_n_kv_heads == 0,
         f"n_kv_heads={cfg.n_kv_heads} does not divide n_heads={cfg.n_heads}; each "
         f"key/value head must serve the same number of query heads (1 <= n_kv_heads "
         f"<= n_heads, a divisor of n_heads)")
    choices = {
        "block": Block, "attention": Attention, "activation": Activation, "norm": Norm,
        "position": Position, "attn_output_transform": OutputTransform,
    }
    for f, lit in choices.items():
        allowed = lit.__args__
        need(getattr(cfg, f) in allowed, f"{f}={getattr(cfg, f)!r}; allowed: {allowed}")
    need(cfg.position != "rope" or cfg.resolved_head_dim % 2 == 0,
         f"RoPE rotates pairs of coordinates, so it needs an even head_dim, got "
         f"{cfg.resolved_head_dim}; choose an even head_dim or position='learned'/'none'")
    need(not cfg.attn_output_gate_bias or cfg.attn_output_gate,
         "attn_output_gate_bias=True needs attn_output_gate=True (the bias belongs to the gate)")
    for f in ("attn_output_gate", "attn_output_gate_bias"):
        need(isinstance(getattr(cfg, f), bool), f"{f} must be True or False, "
             f"got {getattr(cfg, f)!r}")
    if not cfg.has_attn:
        need(cfg.attn_output_transform == "none" and not cfg.attn_output_gate,
             f"block={cfg.block!r} has no attention, so attn_output_transform must be "
             f"'none' and attn_output_gate False (got {cfg.attn_output_transform!r}, "
             f"{cfg.attn_output_gate}); use block='attn_mlp' or 'attn_only'")
    if cfg.attention != "softmax":
        need(not cfg.attn_output_gate,
             f"attention={cfg.attention!r} (Attn0) has no per-head output to gate; "
             f"attn_output_gate must be False, or use attention='softmax'")
        need(cfg.attn_output_transform == "none",
             f"attention={cfg.attention!r} (Attn0) has no per-head output to transform; "
             f"attn_output_transform must be 'none' (got {cfg.attn_output_transform!r}), "
             f"or use attention='softmax'")
        need(cfg.resolved_n_kv_heads == cfg.n_heads,
             f"attention={cfg.attention!r} (Attn0) has no key/value heads; n_kv_heads must "
             f"equal n_heads={cfg.n_heads} (or be None), got {cfg.n_kv_heads}")
    need(cfg.architecture is None or isinstance(cfg.architecture, str),
         f"architecture must be a family's name or None, got {cfg.architecture!r}")
    for f in ("qk_norm", "post_norms", "norm_unit_offset", "embed_scale", "unembed",
              "pre_norms"):
        need(isinstance(getattr(cfg, f), bool), f"{f} must be True or False, "
             f"got {getattr(cfg, f)!r}")
    need(not cfg.qk_norm or (cfg.norm == "rmsnorm" and cfg.has_attn_params),
         f"qk_norm=True RMS-normalises each head's queries and keys: it needs "
         f"norm='rmsnorm' and softmax attention (got norm={cfg.norm!r}, "
         f"attention={cfg.attention!r}, block={cfg.block!r})")
    need(cfg.qk_norm_scope in QKNormScope.__args__,
         f"qk_norm_scope={cfg.qk_norm_scope!r}; allowed: {QKNormScope.__args__}")
    need(cfg.qk_norm_scope == "head" or cfg.qk_norm,
         f"qk_norm_scope={cfg.qk_norm_scope!r} says what the QK-norm normalises: it needs "
         f"qk_norm=True")
    need(not cfg.post_norms or cfg.norm != "none",
         "post_norms=True normalises the sublayers' outputs: it needs a norm "
         "(norm='rmsnorm' or 'layernorm'), not norm='none'")
    need(cfg.pre_norms or cfg.post_norms,
         "pre_norms=False leaves the blocks without norms unless post_norms=True (OLMo 2's "
         "block); for a model without norms use norm='none'")
    need(cfg.query_pre_attn_scalar is None or (
        isinstance(cfg.query_pre_attn_scalar, (int, float))
        and not isinstance(cfg.query_pre_attn_scalar, bool)
        and cfg.query_pre_attn_scalar > 0),
         f"query_pre_attn_scalar must be a number > 0 or None, got "
         f"{cfg.query_pre_attn_scalar!r}")
    need(cfg.sliding_window is None or positive_int(cfg.sliding_window),
         f"sliding_window must be a positive integer or None, got {cfg.sliding_window!r}")
    if cfg.sliding_window is None:
        need(cfg.rope_local_theta is None,
             f"rope_local_theta={cfg.rope_local_theta} is the RoPE base of sliding-window "
             f"layers; give sliding_window too, or leave it None")
    else:
        need(cfg.has_attn_params, f"sliding_window needs softmax attention (got "
             f"attention={cfg.attention!r}, block={cfg.block!r})")
    need(cfg.rope_scaling is None or cfg.position == "rope",
         f"rope_scaling scales RoPE's angles: it needs position='rope' (got "
         f"{cfg.position!r})")
    if cfg.rope_scaling is not None and cfg.rope_scaling.kind == "longrope":
        need(len(cfg.rope_scaling.short_factor) == cfg.resolved_head_dim // 2,
             f"longrope's short_factor and long_factor need one entry per rotated pair, "
             f"head_dim / 2 = {cfg.resolved_head_dim // 2}; got "
             f"{len(cfg.rope_scaling.short_factor)}")
    need(cfg.rope_local_theta is None or cfg.rope_local_theta > 0,
         "rope_local_theta must be > 0 or None")
    need(cfg.init_std > 0, "init_std must be > 0")
    need(cfg.norm_eps > 0, "norm_eps must be > 0")
    need(cfg.rope_theta > 0, "rope_theta must be > 0")
