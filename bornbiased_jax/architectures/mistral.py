"""Mistral (``model_type`` mistral, MistralForCausalLM): LLaMA without biases whose every layer
attends through a sliding window (``sliding_window``, 4,096 in Mistral 7B v0.1; null from v0.2
on, then it is LLaMA). llama.cpp writes Mistral as a ``llama`` GGUF and drops the window (its
llama graph has none), so a Mistral GGUF file is read by the LLaMA record, as llama.cpp runs
it: with every layer global."""

from __future__ import annotations

from bornbiased_jax.architectures.llama import LLAMA_READS, Llama
from bornbiased_jax.config import ModelConfig


class Mistral(Llama):
    name = model_type = "mistral"
    hf_class = "MistralForCausalLM"
    gguf_arch = None
    gguf_as = "llama"  # what llama.cpp's converter writes it as (without the window)
    what = "LLaMA without biases, a sliding window on every layer"
    reads = LLAMA_READS | {"sliding_window"}
    ignores = frozenset()
    defaults = dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                    num_hidden_layers=32, num_attention_heads=32,
                    max_position_embeddings=131_072, rms_norm_eps=1e-6,
                    tie_word_embeddings=False, sliding_window=4096)
    bias, windows = "none", "all"

    def presets(self) -> dict[str, ModelConfig]:
        """Mistral 7B v0.1's shape (``mistral-7b``, its config.json: 32 blocks, d = 4,096, 32
        query / 8 K/V heads, SwiGLU 14,336, vocabulary 32,000, untied head, RoPE base 10,000,
        RMSNorm eps 1e-5, window 4,096, context 32,768) and its test size ``mistral-tiny``
        (window 16 at a context of 128). Init: HF's default (std 0.02)."""
        def make(name, d, L, H, N, F, V, T, W):
            return ModelConfig(
                name=name, vocab_size=V, d_model=d, n_layers=L, n_heads=H, n_kv_heads=N,
                d_ff=F, max_seq_len=T, activation="silu", gated_mlp=True, norm="rmsnorm",
                position="rope", rope_theta=10_000.0, linear_bias=False, qkv_bias=False,
                tie_embeddings=False, norm_eps=1e-5, scale_residual_init=False,
                sliding_window=W, architecture=self.name)
        return {"mistral-7b": make("mistral-7b", 4096, 32, 32, 8, 14336, 32000, 32768, 4096),
                "mistral-tiny": make("mistral-tiny", 64, 2, 4, 2, 176, 512, 128, 16)}
