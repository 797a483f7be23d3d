"""GPT-2 (``model_type`` gpt2, GPT2LMHeadModel): LayerNorm, learned positions, biases
everywhere, GELU (tanh approximation, ``gelu_new``), a tied head by default; its Q|K|V are one
``Conv1D`` ``c_attn`` (d, 3d), already (in, out), split along its last axis. No GGUF reader."""

from __future__ import annotations

from bornbiased_jax.architectures.base import ACT_TO_HF, Architecture, activation
from bornbiased_jax.architectures.rope_config import refuse
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.architectures.tensors import TensorSpec


class GPT2(Architecture):
    name = model_type = "gpt2"
    hf_class = "GPT2LMHeadModel"
    what = "LayerNorm, learned positions, biases everywhere, GELU, fused Conv1D c_attn"
    reads = frozenset({"vocab_size", "n_embd", "n_layer", "n_head", "n_inner", "n_positions",
                       "activation_function", "layer_norm_epsilon", "tie_word_embeddings",
                       "scale_attn_weights", "scale_attn_by_inverse_layer_idx"})
    # reorder_and_upcast_attn only moves float32 upcasts (half precision); n_ctx is the old
    # name of n_positions; summary_* configure GPT2DoubleHeadsModel's classifier
    ignores = frozenset({"reorder_and_upcast_attn", "n_ctx", "summary_activation",
                         "summary_first_dropout", "summary_proj_to_labels", "summary_type",
                         "summary_use_proj"})
    base_prefix = "transformer."
    embed_name = "transformer.wte.weight"

    def fields(self, d: dict) -> dict:
        for f, ok in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False)):
            if d.get(f, ok) != ok:
                raise refuse(self.name, f, d[f], f"only {f}={ok} (plain GPT-2 attention) is "
                             f"implemented")
        d_model = d.get("n_embd", 768)
        return dict(
            vocab_size=d.get("vocab_size", 50257), d_model=d_model,
            n_layers=d.get("n_layer", 12), n_heads=d.get("n_head", 12),
            d_ff=d.get("n_inner") or 4 * d_model, max_seq_len=d.get("n_positions", 1024),
            activation=activation(d, self.name, "activation_function", "gelu_new"),
            gated_mlp=False, norm="layernorm", norm_eps=float(d.get("layer_norm_epsilon", 1e-5)),
            position="learned", linear_bias=True, qkv_bias=False,
            tie_embeddings=bool(d.get("tie_word_embeddings", True)),
            init_std=float(d.get("initializer_range", 0.02)), scale_residual_init=True)

    def differences(self, cfg: ModelConfig) -> list[str]:
        why = []
        if (cfg.position, cfg.norm, cfg.gated_mlp) != ("learned", "layernorm", False):
            why.append(f"GPT-2 has learned positions, LayerNorm and a plain MLP (got position="
                       f"{cfg.position!r}, norm={cfg.norm!r}, gated_mlp={cfg.gated_mlp})")
        if not cfg.linear_bias:
            why.append("GPT-2 has biases on every linear (linear_bias=True)")
        if cfg.n_groups != 1 or cfg.resolved_head_dim * cfg.n_heads != cfg.d_model:
            why.append("GPT-2 has n_kv_heads = n_heads and head_dim = d_model / n_heads")
        return why + no_extras(cfg, "GPT-2")

    def to_hf(self, cfg: ModelConfig) -> dict:
        return {"n_embd": cfg.d_model, "n_layer": cfg.n_layers, "n_head": cfg.n_heads,
                "n_inner": cfg.d_ff, "n_positions": cfg.max_seq_len,
                "activation_function": ACT_TO_HF[cfg.activation],
                "layer_norm_epsilon": cfg.norm_eps, "scale_attn_weights": True,
                "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}

    def tensor_specs(self, cfg: ModelConfig) -> list[TensorSpec]:
        d, F, V = cfg.d_model, cfg.d_ff, cfg.vocab_size
        specs = [TensorSpec("transformer.wte.weight", (V, d), ("embed/embedding",), "copy"),
                 TensorSpec("transformer.wpe.weight", (cfg.max_seq_len, d),
                            ("pos_embed/embedding",), "copy")]
        for i in range(cfg.n_layers):
            h, ours = f"transformer.h.{i}", f"layers_{i}"
            qkv = tuple(f"{ours}/attn/{p}_proj" for p in "qkv")
            specs += [
                TensorSpec(f"{h}.ln_1.weight", (d,), (f"{ours}/attn_norm/scale",), "copy"),
                TensorSpec(f"{h}.ln_1.bias", (d,), (f"{ours}/attn_norm/bias",), "copy"),
                TensorSpec(f"{h}.attn.c_attn.weight", (d, 3 * d),
                           tuple(f"{p}/kernel" for p in qkv), "split3"),
                TensorSpec(f"{h}.attn.c_attn.bias", (3 * d,), tuple(f"{p}/bias" for p in qkv),
                           "split3"),
                TensorSpec(f"{h}.attn.c_proj.weight", (d, d), (f"{ours}/attn/o_proj/kernel",),
                           "copy"),
                TensorSpec(f"{h}.attn.c_proj.bias", (d,), (f"{ours}/attn/o_proj/bias",), "copy"),
                TensorSpec(f"{h}.ln_2.weight", (d,), (f"{ours}/mlp_norm/scale",), "copy"),
                TensorSpec(f"{h}.ln_2.bias", (d,), (f"{ours}/mlp_norm/bias",), "copy"),
                TensorSpec(f"{h}.mlp.c_fc.weight", (d, F), (f"{ours}/mlp/up_proj/kernel",),
                           "copy"),
                TensorSpec(f"{h}.mlp.c_fc.bias", (F,), (f"{ours}/mlp/up_proj/bias",), "copy"),
                TensorSpec(f"{h}.mlp.c_proj.weight", (F, d), (f"{ours}/mlp/down_proj/kernel",),
                           "copy"),
                TensorSpec(f"{h}.mlp.c_proj.bias", (d,), (f"{ours}/mlp/down_proj/bias",),
                           "copy"),
            ]
        specs += [TensorSpec("transformer.ln_f.weight", (d,), ("final_norm/scale",), "copy"),
                  TensorSpec("transformer.ln_f.bias", (d,), ("final_norm/bias",), "copy")]
        return specs


def no_extras(cfg: ModelConfig, family: str, rope_scaling: bool = False) -> list[str]:
    """What no LayerNorm family here has: the newer families' switches (RoPE scaling unless
    ``rope_scaling``)."""
    extras = {f: getattr(cfg, f) for f in ("qk_norm", "post_norms", "norm_unit_offset",
                                           "embed_scale")}
    why = [f"{family} has none of {sorted(k for k, v in extras.items() if v)}"] \
        if any(extras.values()) else []
    if not cfg.pre_norms:
        why.append(f"{family}'s norms sit before the sublayers")
    if cfg.sliding_window is not None or cfg.query_pre_attn_scalar is not None:
        why.append(f"{family} has no sliding window nor query_pre_attn_scalar")
    if cfg.rope_scaling is not None and not rope_scaling:
        why.append(f"{family} has no RoPE scaling")
    return why
