"""The LLaMA family's presets: the paper's LLaMA-2 at the zoo's sizes (``llama2-*``), SmolLM2-135M's
shape (``smollm2-135m``), Llama 3.2 1B's (``llama3-1b``) and its test size (``llama3-tiny``)."""

from __future__ import annotations

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.rope import RopeScaling


def presets() -> dict[str, ModelConfig]:
    from bornbiased_jax.architectures.sizes import SIZES

    out = {f"llama2-{size}": llama2(size) for size in SIZES if size != "1.2b"}
    out["smollm2-135m"] = smollm2_135m()
    out.update(llama3_presets())
    return out


def llama2(size: str) -> ModelConfig:
    from bornbiased_jax.architectures.sizes import LLAMA_VOCAB, SIZES

    d, n_layers, n_heads, max_t = SIZES[size]
    # Table 13: d_ffn = 2048 at d = 768, i.e. ~ (8/3) d; the same ratio elsewhere.
    d_ff = {"tiny": 176, "cpu": 1376, "small": 688, "nano": 2048, "1.2b": 5504}[size]
    return ModelConfig(
        name=f"llama2-{size}", vocab_size=512 if size == "tiny" else LLAMA_VOCAB,
        d_model=d, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff, max_seq_len=max_t,
        activation="silu", gated_mlp=True, norm="rmsnorm", position="rope",
        linear_bias=False, qkv_bias=False, tie_embeddings=False, norm_eps=1e-6)


def smollm2_135m() -> ModelConfig:
    """SmolLM2-135M's architecture (HuggingFaceTB; the LLaMA decoder of its config.json and
    GGUF metadata): 30 blocks, d = 576, 9 query / 3 K/V heads of 64, SwiGLU 1,536, RoPE base
    1e5, RMSNorm eps 1e-5, vocabulary 49,152, tied embeddings, context 8,192. Its own init is
    not in the released files; this preset takes HF's default (std 0.02, no residual scaling),
    so ``preset:smollm2-135m@SEED`` is an unrelated model of the released one's shape."""
    return ModelConfig(
        name="smollm2-135m", vocab_size=49_152, d_model=576, n_layers=30, n_heads=9,
        n_kv_heads=3, d_ff=1536, max_seq_len=8192, activation="silu", gated_mlp=True,
        norm="rmsnorm", position="rope", rope_theta=100_000.0, linear_bias=False,
        qkv_bias=False, tie_embeddings=True, norm_eps=1e-5, scale_residual_init=False)


def llama3_presets() -> dict[str, ModelConfig]:
    """Llama 3.2 1B's shape (``llama3-1b``: its config.json: 16 blocks, d = 2,048, 32 query /
    8 K/V heads of 64, SwiGLU 8,192, vocabulary 128,256, tied head, RMSNorm eps 1e-5, RoPE base
    500,000 with the "llama3" scaling factor 32, low / high frequency factors 1 / 4 over an
    original 8,192 positions, context 131,072) and its test size ``llama3-tiny`` (the same
    structure and scaling at d = 64, head_dim 32, over an original 64 positions, so that of
    the 16 frequency pairs 0-1 are kept, 2 is on the ramp and 3-15 are divided by 32). Init: HF's default (std 0.02, no residual scaling); the released
    initialisation is unknown."""
    def make(name, d, L, H, N, K, F, V, T, orig):
        return ModelConfig(
            name=name, vocab_size=V, d_model=d, n_layers=L, n_heads=H, n_kv_heads=N,
            head_dim=K, d_ff=F, max_seq_len=T, activation="silu", gated_mlp=True,
            norm="rmsnorm", position="rope", rope_theta=500_000.0,
            rope_scaling=RopeScaling("llama3", factor=32.0, low_freq_factor=1.0,
                                     high_freq_factor=4.0,
                                     original_max_position_embeddings=orig),
            linear_bias=False, qkv_bias=False, tie_embeddings=True, norm_eps=1e-5,
            scale_residual_init=False, architecture="llama")
    return {"llama3-1b": make("llama3-1b", 2048, 16, 32, 8, 64, 8192, 128_256, 131_072, 8192),
            "llama3-tiny": make("llama3-tiny", 64, 2, 4, 2, 32, 176, 512, 1024, 64)}

