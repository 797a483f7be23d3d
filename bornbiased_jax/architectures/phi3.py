"""Phi-3 (``model_type`` phi3, Phi3ForCausalLM): LLaMA without biases whose Q, K, V and whose
gate and up projections are each one fused Linear (``qkv_proj`` = [q | k | v] rows,
``gate_up_proj`` = [gate | up]), split on load and fused again on save; a sliding window on
every layer (``sliding_window``, 2,047 in Phi-3-mini-4k); LongRoPE (``rope_scaling`` "longrope",
first called "su") in the 128k models, with ``original_max_position_embeddings`` at the top
level of its config. Partial rotation (``partial_rotary_factor`` < 1, Phi-4-mini) is refused.

GGUF (llama.cpp arch ``phi3``): the fused tensors as they are (``attn_qkv``, and ``ffn_up`` of
2 d_ff rows, gate first), LongRoPE as ``rope_factors_short`` / ``rope_factors_long`` tensors
with ``phi3.rope.scaling.original_context_length`` and ``attn_factor``; llama.cpp disables
Phi-3's window ("Phi SWA is currently disabled") while its file states it
(``phi3.attention.sliding_window``): read here as the HF model computes it, with the window.
"""

from __future__ import annotations

import numpy as np

from bornbiased_jax.architectures.base import GGUFMeta
from bornbiased_jax.architectures.llama import LLAMA_READS, Llama
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.rope import RopeScaling
from bornbiased_jax.errors import UserError


class Phi3(Llama):
    name = model_type = gguf_arch = "phi3"
    hf_class = "Phi3ForCausalLM"
    what = "fused qkv_proj and gate_up_proj; a window on every layer; LongRoPE"
    reads = LLAMA_READS | {"sliding_window", "original_max_position_embeddings",
                           "partial_rotary_factor", "attention_bias"}
    ignores = frozenset()
    defaults = dict(vocab_size=32064, hidden_size=3072, intermediate_size=8192,
                    num_hidden_layers=32, num_attention_heads=32, max_position_embeddings=4096,
                    rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=None)
    bias, windows, fused = "none", "all", True
    gguf_names = (("input_layernorm", "attn_norm"), ("self_attn.qkv_proj", "attn_qkv"),
                  ("self_attn.o_proj", "attn_output"), ("mlp.gate_up_proj", "ffn_up"),
                  ("mlp.down_proj", "ffn_down"), ("post_attention_layernorm", "ffn_norm"))
    gguf_permute = False
    gguf_consumed = ("rope_factors_long.weight", "rope_factors_short.weight")

    def to_hf(self, cfg: ModelConfig) -> dict:
        body = super().to_hf(cfg)
        s = cfg.rope_scaling
        # Phi3Config's own field wins over the scaling's (transformers' standardize_rope_params)
        body["original_max_position_embeddings"] = (
            s.original_max_position_embeddings if s is not None
            and s.original_max_position_embeddings is not None else cfg.max_seq_len)
        body["partial_rotary_factor"] = 1.0
        return body

    def gguf_config(self, meta: GGUFMeta) -> dict:
        hf = super().gguf_config(meta)
        w = meta.get("attention.sliding_window")
        hf["sliding_window"] = int(w) if w else None
        return hf

    def gguf_rope(self, meta: GGUFMeta, theta: float, head_dim: int) -> dict:
        long_ = "rope_factors_long.weight" in meta.tensors
        short = "rope_factors_short.weight" in meta.tensors
        if not (long_ or short):
            return super().gguf_rope(meta, theta, head_dim)
        if not (long_ and short):
            raise UserError(f"{meta.path}: a LongRoPE phi3 GGUF needs both "
                            f"rope_factors_long.weight and rope_factors_short.weight")
        orig = meta.get("rope.scaling.original_context_length")
        if orig is None:
            raise UserError(f"{meta.path}: metadata key phi3.rope.scaling.original_context_length "
                            f"is missing; LongRoPE (rope_factors_*) needs it")
        return {"rope_type": "longrope", "rope_theta": theta,
                "short_factor": meta.tensor("rope_factors_short.weight").tolist(),
                "long_factor": meta.tensor("rope_factors_long.weight").tolist(),
                "original_max_position_embeddings": int(orig),
                "attention_factor": float(meta.get("rope.scaling.attn_factor", 1.0))}

    def gguf_extra_tensors(self, cfg: ModelConfig) -> dict:
        s = cfg.rope_scaling
        if s is None or s.kind != "longrope":
            return {}
        return {"rope_factors_long.weight": np.asarray(s.long_factor, np.float32),
                "rope_factors_short.weight": np.asarray(s.short_factor, np.float32)}

    def gguf_metadata(self, cfg: ModelConfig) -> dict:
        s = cfg.rope_scaling
        meta = super().gguf_metadata(cfg.ablate(rope_scaling=None) if s is not None
                                     and s.kind == "longrope" else cfg)
        meta["attention.sliding_window"] = cfg.sliding_window or 0
        if s is not None and s.kind == "longrope":
            meta.update({"rope.scaling.original_context_length":
                         s.original_max_position_embeddings,
                         "rope.scaling.attn_factor": s.attention_factor})
        return meta

    def presets(self) -> dict[str, ModelConfig]:
        """Phi-3-mini-4k's shape (``phi3-mini``, its config.json: 32 blocks, d = 3,072, 32
        heads of 96 (no GQA), SwiGLU 8,192, vocabulary 32,064, untied head, RoPE base 10,000,
        RMSNorm eps 1e-5, window 2,047, context 4,096) and its test size ``phi3-tiny`` (LongRoPE
        over an original 32 positions at a context of 128, window 16). Init: HF's default
        (std 0.02)."""
        def make(name, d, L, H, F, V, T, W, scaling=None):
            return ModelConfig(
                name=name, vocab_size=V, d_model=d, n_layers=L, n_heads=H, d_ff=F,
                max_seq_len=T, activation="silu", gated_mlp=True, norm="rmsnorm",
                position="rope", rope_theta=10_000.0, rope_scaling=scaling, linear_bias=False,
                qkv_bias=False, tie_embeddings=False, norm_eps=1e-5, scale_residual_init=False,
                sliding_window=W, architecture=self.name)
        K = 16  # tiny: d 64 / 4 heads
        longrope = RopeScaling(
            "longrope", short_factor=tuple(1.0 + 0.05 * i for i in range(K // 2)),
            long_factor=tuple(1.0 + 0.5 * i for i in range(K // 2)),
            original_max_position_embeddings=32,
            attention_factor=float(np.sqrt(1 + np.log(128 / 32) / np.log(32))))
        return {"phi3-mini": make("phi3-mini", 3072, 32, 32, 8192, 32064, 4096, 2047),
                "phi3-tiny": make("phi3-tiny", 64, 2, 4, 176, 512, 128, 16, longrope)}
