"""Qwen2 (``model_type`` qwen2, Qwen2ForCausalLM; Qwen1.5, Qwen2, Qwen2.5): LLaMA with biases on
Q, K and V only, and sliding-window layers when ``use_sliding_window`` (from
``max_window_layers`` on, or as ``layer_types`` says). llama.cpp's RoPE for it rotates halves,
as HF's does, so its GGUF rows are stored as they are."""

from __future__ import annotations

from bornbiased_jax.architectures.llama import LLAMA_GGUF, LLAMA_READS, Llama
from bornbiased_jax.config import ModelConfig


class Qwen2(Llama):
    name = model_type = gguf_arch = "qwen2"
    hf_class = "Qwen2ForCausalLM"
    what = "LLaMA with biases on Q, K and V only; sliding-window layers"
    reads = LLAMA_READS | {"use_sliding_window", "sliding_window", "max_window_layers",
                           "layer_types"}
    ignores = frozenset()
    defaults = dict(vocab_size=151_936, hidden_size=4096, intermediate_size=22016,
                    num_hidden_layers=32, num_attention_heads=32, max_position_embeddings=32768,
                    rms_norm_eps=1e-6, tie_word_embeddings=False)
    bias, windows = "qkv", "layers"
    gguf_names = LLAMA_GGUF
    gguf_permute = False
    gguf_consumed = ()

    def presets(self) -> dict[str, ModelConfig]:
        from bornbiased_jax.architectures.sizes import SIZES

        return {f"qwen2-{size}": qwen2(size) for size in SIZES if size != "1.2b"}


def qwen2(size: str) -> ModelConfig:
    """Qwen2's architecture at the zoo's sizes.

    Copied from the released Qwen2 configs (0.5B, 1.5B, 7B): grouped-query attention, biases
    on Q, K and V only, RoPE base 1,000,000, RMSNorm with eps 1e-6, SwiGLU, vocabulary 151,936.
    Copied from the paper's Qwen-style model (App. B.3.3 and its released code):
    d_ff = 4d (3,072 at d = 768) and an untied LM head (as Qwen2-7B; the 0.5B and 1.5B
    checkpoints tie it). The paper does not state its K/V head count; we take 2 K/V heads, as
    Qwen2-0.5B (14 query heads) and Qwen2-1.5B (12): 12 / 2 at ``nano`` is Qwen2-1.5B's
    grouping; ``cpu`` has 8 / 2 and ``tiny`` 4 / 2.
    """
    from bornbiased_jax.architectures.sizes import QWEN2_VOCAB, SIZES

    d, n_layers, n_heads, max_t = SIZES[size]
    return ModelConfig(
        name=f"qwen2-{size}", vocab_size=512 if size == "tiny" else QWEN2_VOCAB,
        d_model=d, n_layers=n_layers, n_heads=n_heads, n_kv_heads=2, d_ff=4 * d,
        max_seq_len=max_t, activation="silu", gated_mlp=True, norm="rmsnorm", position="rope",
        rope_theta=1_000_000.0, linear_bias=False, qkv_bias=True, tie_embeddings=False,
        norm_eps=1e-6)
