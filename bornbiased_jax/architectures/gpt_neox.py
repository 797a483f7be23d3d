"""GPT-NeoX (``model_type`` gpt_neox, GPTNeoXForCausalLM): LayerNorm, RoPE, biases everywhere,
GELU -- the paper's "GPT-2 with RoPE" (the ``gpt2-rope-*`` presets), provided
``use_parallel_residual`` is false (Pythia's parallel blocks are refused) and RoPE is
full-width (``rotary_pct`` 1; Pythia's 0.25 is refused). Its Q|K|V are one Linear
``query_key_value`` whose rows are grouped by head: [q_0 k_0 v_0 q_1 k_1 v_1 ...]. No GGUF
reader."""

from __future__ import annotations

from bornbiased_jax.architectures.base import ACT_TO_HF, Architecture, activation, linear_specs
from bornbiased_jax.architectures.gpt2 import no_extras
from bornbiased_jax.architectures.rope_config import read_rope, refuse, rope_to_hf
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.architectures.tensors import TensorSpec


class GPTNeoX(Architecture):
    name = model_type = "gpt_neox"
    hf_class = "GPTNeoXForCausalLM"
    what = "LayerNorm, RoPE, biases everywhere, GELU: the paper's GPT-2 with RoPE"
    reads = frozenset({"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                       "intermediate_size", "max_position_embeddings", "hidden_act",
                       "layer_norm_eps", "use_parallel_residual", "attention_bias",
                       "rotary_pct", "rotary_emb_base", "rope_parameters", "rope_scaling",
                       "rope_theta", "partial_rotary_factor", "tie_word_embeddings"})
    base_prefix = "gpt_neox."
    embed_name = "gpt_neox.embed_in.weight"
    # Pythia checkpoints and transformers < 5 call the head ``embed_out``; exports use that name,
    # which every version reads
    head_alias = "embed_out.weight"

    def fields(self, d: dict) -> dict:
        if d.get("use_parallel_residual", True):
            raise refuse(self.name, "use_parallel_residual", d.get("use_parallel_residual", True),
                         "attention and MLP side by side (Pythia) is not implemented; blocks "
                         "here are sequential (use_parallel_residual=false)")
        if not d.get("attention_bias", True):
            raise refuse(self.name, "attention_bias", False, "GPT-NeoX's MLP and LayerNorms "
                         "always have biases; only attention_bias=true matches a model with "
                         "biases everywhere")
        theta, scaling = read_rope(d, self.name, theta_keys=("rotary_emb_base", "rope_theta"),
                                   rotary_keys=("rotary_pct", "partial_rotary_factor"),
                                   rotary_default=0.25)
        return dict(
            vocab_size=d.get("vocab_size", 50432), d_model=d.get("hidden_size", 6144),
            n_layers=d.get("num_hidden_layers", 44), n_heads=d.get("num_attention_heads", 64),
            d_ff=d.get("intermediate_size", 24576),
            max_seq_len=d.get("max_position_embeddings", 2048),
            activation=activation(d, self.name, "hidden_act", "gelu"), gated_mlp=False,
            norm="layernorm", norm_eps=float(d.get("layer_norm_eps", 1e-5)), position="rope",
            rope_theta=theta, rope_scaling=scaling, linear_bias=True, qkv_bias=False,
            tie_embeddings=bool(d.get("tie_word_embeddings", False)),
            init_std=float(d.get("initializer_range", 0.02)), scale_residual_init=True)

    def differences(self, cfg: ModelConfig) -> list[str]:
        why = []
        if (cfg.position, cfg.norm, cfg.gated_mlp) != ("rope", "layernorm", False):
            why.append(f"GPT-NeoX has RoPE, LayerNorm and a plain MLP (got position="
                       f"{cfg.position!r}, norm={cfg.norm!r}, gated_mlp={cfg.gated_mlp})")
        if not cfg.linear_bias:
            why.append("GPT-NeoX has biases on every linear and LayerNorm (linear_bias=True)")
        if cfg.n_groups != 1 or cfg.resolved_head_dim * cfg.n_heads != cfg.d_model:
            why.append("GPT-NeoX has n_kv_heads = n_heads and head_dim = d_model / n_heads")
        return why + no_extras(cfg, "GPT-NeoX", rope_scaling=True)

    def to_hf(self, cfg: ModelConfig) -> dict:
        rope = rope_to_hf(cfg.rope_theta, cfg.rope_scaling)
        # old and new spellings (transformers < 5 reads rotary_*, >= 5 rope_parameters);
        # full-width rotation
        return {"hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layers,
                "num_attention_heads": cfg.n_heads, "intermediate_size": cfg.d_ff,
                "max_position_embeddings": cfg.max_seq_len,
                "hidden_act": ACT_TO_HF[cfg.activation], "layer_norm_eps": cfg.norm_eps,
                "use_parallel_residual": False, "attention_bias": True,
                "rotary_pct": 1.0, "rotary_emb_base": cfg.rope_theta,
                "rope_parameters": {**rope, "partial_rotary_factor": 1.0},
                "attention_dropout": 0.0, "hidden_dropout": 0.0}

    def tensor_specs(self, cfg: ModelConfig) -> list[TensorSpec]:
        d, F, V, H = cfg.d_model, cfg.d_ff, cfg.vocab_size, cfg.n_heads
        specs = [TensorSpec("gpt_neox.embed_in.weight", (V, d), ("embed/embedding",), "copy")]
        for i in range(cfg.n_layers):
            h, ours = f"gpt_neox.layers.{i}", f"layers_{i}"
            qkv = tuple(f"{ours}/attn/{p}_proj" for p in "qkv")
            for hf_norm, our_norm in (("input_layernorm", "attn_norm"),
                                      ("post_attention_layernorm", "mlp_norm")):
                specs += [TensorSpec(f"{h}.{hf_norm}.weight", (d,),
                                     (f"{ours}/{our_norm}/scale",), "copy"),
                          TensorSpec(f"{h}.{hf_norm}.bias", (d,), (f"{ours}/{our_norm}/bias",),
                                     "copy")]
            specs += [TensorSpec(f"{h}.attention.query_key_value.weight", (3 * d, d),
                                 tuple(f"{p}/kernel" for p in qkv), "heads3", H),
                      TensorSpec(f"{h}.attention.query_key_value.bias", (3 * d,),
                                 tuple(f"{p}/bias" for p in qkv), "heads3", H)]
            specs += linear_specs(f"{h}.attention.dense", f"{ours}/attn/o_proj", d, d, True)
            specs += linear_specs(f"{h}.mlp.dense_h_to_4h", f"{ours}/mlp/up_proj", d, F, True)
            specs += linear_specs(f"{h}.mlp.dense_4h_to_h", f"{ours}/mlp/down_proj", F, d, True)
        specs += [TensorSpec("gpt_neox.final_layer_norm.weight", (d,), ("final_norm/scale",),
                             "copy"),
                  TensorSpec("gpt_neox.final_layer_norm.bias", (d,), ("final_norm/bias",),
                             "copy")]
        return specs

    def presets(self) -> dict[str, ModelConfig]:
        """The paper's RoPE-enhanced GPT-2 at the zoo's sizes (``gpt2-rope-*``): what
        GPTNeoXForCausalLM computes with sequential blocks and full-width RoPE."""
        from bornbiased_jax.architectures.sizes import SIZES

        return {f"gpt2-rope-{size}": gpt2_rope(size) for size in SIZES}


def gpt2_rope(size: str) -> ModelConfig:
    from bornbiased_jax.architectures.sizes import GPT2_VOCAB, SIZES

    d, n_layers, n_heads, max_t = SIZES[size]
    return ModelConfig(
        name=f"gpt2-rope-{size}", vocab_size=512 if size == "tiny" else GPT2_VOCAB,
        d_model=d, n_layers=n_layers, n_heads=n_heads, d_ff=4 * d, max_seq_len=max_t,
        activation="gelu", gated_mlp=False, norm="layernorm", position="rope",
        linear_bias=True, qkv_bias=False, tie_embeddings=True)
