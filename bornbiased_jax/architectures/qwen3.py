"""Qwen3 (``model_type`` qwen3, Qwen3ForCausalLM): Qwen2 without biases and with QK-norm, an
RMSNorm over each head's K coordinates of queries and keys (one gain (K,) each, shared by the
heads) before RoPE; head_dim given apart from d / H (128 at every size). Its GGUF (llama.cpp
arch ``qwen3``) adds ``attn_q_norm`` and ``attn_k_norm`` of head_dim each."""

from __future__ import annotations

from bornbiased_jax.architectures.llama import LLAMA_GGUF
from bornbiased_jax.architectures.qwen2 import Qwen2
from bornbiased_jax.config import ModelConfig


class Qwen3(Qwen2):
    name = model_type = gguf_arch = "qwen3"
    hf_class = "Qwen3ForCausalLM"
    what = "no biases; QK-norm per head; head_dim of its own; sliding-window layers"
    reads = Qwen2.reads | {"attention_bias"}
    bias, qk_norm = "none", "head"
    gguf_names = LLAMA_GGUF + (("self_attn.q_norm", "attn_q_norm"),
                               ("self_attn.k_norm", "attn_k_norm"))

    def presets(self) -> dict[str, ModelConfig]:
        """Qwen3-0.6B's shape (``qwen3-0.6b``, its config.json: 28 blocks, d = 1,024, 16 query /
        8 K/V heads of 128, SwiGLU 3,072, vocabulary 151,936, tied head, RoPE base 10^6,
        RMSNorm eps 1e-6, context 40,960) and its test size ``qwen3-tiny`` (head_dim 32 != d / H
        = 16, as Qwen3's 128 != 1,024 / 16). Init: HF's default (std 0.02)."""
        def make(name, d, L, H, N, K, F, V, T):
            return ModelConfig(
                name=name, vocab_size=V, d_model=d, n_layers=L, n_heads=H, n_kv_heads=N,
                head_dim=K, d_ff=F, max_seq_len=T, activation="silu", gated_mlp=True,
                norm="rmsnorm", position="rope", rope_theta=1_000_000.0, linear_bias=False,
                qkv_bias=False, tie_embeddings=True, norm_eps=1e-6, scale_residual_init=False,
                qk_norm=True, architecture=self.name)
        return {"qwen3-0.6b": make("qwen3-0.6b", 1024, 28, 16, 8, 128, 3072, 151_936, 40_960),
                "qwen3-tiny": make("qwen3-tiny", 64, 2, 4, 2, 32, 192, 512, 128)}
