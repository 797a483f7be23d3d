"""Named presets: a family (``gpt2-rope``, ``llama2``, ``qwen2``) crossed with a size (``tiny``
for tests, ``cpu`` for first runs on a laptop, ``small``, ``nano`` for the paper's 12L/12H/768d
models and ``1.2b`` for the paper's large GPT-2), and released models' shapes (``smollm2-135m``,
``gemma3-270m`` and its test-size ``gemma3-tiny``). Each is a :class:`ModelConfig`.
"""

from __future__ import annotations

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError

GPT2_VOCAB = 50_257
LLAMA_VOCAB = 32_000

_SIZES = {
    # size: (d_model, n_layers, n_heads, max_seq_len).
    # The width matters beyond cost: with the fixed N(0, 0.02^2) init, a post-LayerNorm MLP
    # pre-activation has std 0.02 * sqrt(d) (0.55 at d = 768, the sigma of Finding 4.1), so a
    # narrow model sits in GELU's near-linear regime and shows far less preference. "cpu" keeps
    # d = 512 (sigma ~ 0.45) and trades depth for speed.
    "tiny": (64, 2, 4, 128),
    "cpu": (512, 6, 8, 1024),
    "small": (256, 4, 4, 512),  # trains in minutes on a CPU (SeedPrint's power experiment)
    "nano": (768, 12, 12, 2048),
    "1.2b": (2048, 24, 32, 2048),
}


def _gpt2_rope(size: str) -> ModelConfig:
    d, n_layers, n_heads, max_t = _SIZES[size]
    return ModelConfig(
        name=f"gpt2-rope-{size}", vocab_size=512 if size == "tiny" else GPT2_VOCAB,
        d_model=d, n_layers=n_layers, n_heads=n_heads, d_ff=4 * d, max_seq_len=max_t,
        activation="gelu", gated_mlp=False, norm="layernorm", position="rope",
        linear_bias=True, qkv_bias=False, tie_embeddings=True)


def _llama2(size: str) -> ModelConfig:
    d, n_layers, n_heads, max_t = _SIZES[size]
    # Table 13: d_ffn = 2048 at d = 768, i.e. ~ (8/3) d; the same ratio elsewhere.
    d_ff = {"tiny": 176, "cpu": 1376, "small": 688, "nano": 2048, "1.2b": 5504}[size]
    return ModelConfig(
        name=f"llama2-{size}", vocab_size=512 if size == "tiny" else LLAMA_VOCAB,
        d_model=d, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff, max_seq_len=max_t,
        activation="silu", gated_mlp=True, norm="rmsnorm", position="rope",
        linear_bias=False, qkv_bias=False, tie_embeddings=False, norm_eps=1e-6)


QWEN2_VOCAB = 151_936


def _qwen2(size: str) -> ModelConfig:
    """Qwen2's architecture at the zoo's sizes.

    Copied from the released Qwen2 configs (0.5B, 1.5B, 7B): grouped-query attention, biases
    on Q, K and V only, RoPE base 1,000,000, RMSNorm with eps 1e-6, SwiGLU, vocabulary 151,936.
    Copied from the paper's Qwen-style model (App. B.3.3 and its released code):
    d_ff = 4d (3,072 at d = 768) and an untied LM head (as Qwen2-7B; the 0.5B and 1.5B
    checkpoints tie it). The paper does not state its K/V head count; we take 2 K/V heads, as
    Qwen2-0.5B (14 query heads) and Qwen2-1.5B (12): 12 / 2 at ``nano`` is Qwen2-1.5B's
    grouping; ``cpu`` has 8 / 2 and ``tiny`` 4 / 2.
    """
    d, n_layers, n_heads, max_t = _SIZES[size]
    return ModelConfig(
        name=f"qwen2-{size}", vocab_size=512 if size == "tiny" else QWEN2_VOCAB,
        d_model=d, n_layers=n_layers, n_heads=n_heads, n_kv_heads=2, d_ff=4 * d,
        max_seq_len=max_t, activation="silu", gated_mlp=True, norm="rmsnorm", position="rope",
        rope_theta=1_000_000.0, linear_bias=False, qkv_bias=True, tie_embeddings=False,
        norm_eps=1e-6)


def _smollm2_135m() -> ModelConfig:
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


GEMMA3_VOCAB = 262_144


def _gemma3(size: str) -> ModelConfig:
    """Gemma 3's text decoder (Google; read in transformers' ``modeling_gemma3.py`` and
    llama.cpp's gemma3 graph): per-head QK-norm before RoPE, sandwich norms (before and after
    attention and the MLP), norm gains (1 + w), token embeddings times sqrt(d), GeGLU with
    tanh GELU, grouped (here single) K/V heads of head_dim 256 != d/H, five sliding-window
    layers (W = 512, RoPE base 10,000) then one global layer (base 1,000,000), attention
    logits over sqrt(query_pre_attn_scalar) = sqrt(256), tied head, RMSNorm eps 1e-6, no
    biases, no soft-capping.

    ``270m`` is Gemma 3 270M's shape (its GGUF metadata: 18 blocks, d = 640, 4 query / 1 K/V
    heads, MLP 2,048, vocabulary 262,144, context 32,768). ``tiny`` is a CPU-test size with
    the same structure (6 blocks: five sliding, one global; head_dim 32 != d/H = 16).

    Initialisation as Google's own Gemma code (google-deepmind/gemma, ``gemma/gm/nn``) does
    it: every weight -- the embedding table (``Embedder``, ``nn.initializers.normal()``) and
    every projection (``Einsum``, the same initializer) -- N(0, 0.01^2) (flax's default
    stddev), no depth scaling; every RMSNorm ``scale`` w = 0, i.e. gain 1 + w = 1.
    (transformers' ``Gemma3PreTrainedModel._init_weights`` differs: std 0.02 and the padding
    row of the embedding zeroed; the released weights come from Google's code.)
    """
    d, n_layers, n_heads, head_dim, d_ff, vocab, max_t = {
        "tiny": (64, 6, 4, 32, 128, 512, 1024),
        "270m": (640, 18, 4, 256, 2048, GEMMA3_VOCAB, 32_768)}[size]
    return ModelConfig(
        name=f"gemma3-{size}", vocab_size=vocab, d_model=d, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=1, head_dim=head_dim, d_ff=d_ff, max_seq_len=max_t,
        activation="gelu_tanh", gated_mlp=True, norm="rmsnorm", position="rope",
        rope_theta=1_000_000.0, linear_bias=False, qkv_bias=False, tie_embeddings=True,
        init_std=0.01, scale_residual_init=False, norm_eps=1e-6, qk_norm=True,
        post_norms=True, norm_unit_offset=True, embed_scale=True,
        query_pre_attn_scalar=float(head_dim), sliding_window=512, sliding_window_pattern=6,
        rope_local_theta=10_000.0)


_FAMILIES = {"gpt2-rope": _gpt2_rope, "llama2": _llama2, "qwen2": _qwen2}
PRESET_FAMILIES = tuple(_FAMILIES)  # a preset is FAMILY-SIZE, or a released model's shape
PRESET_SIZES = tuple(_SIZES)
PRESETS: dict[str, ModelConfig] = {
    **{f"{fam}-{size}": make(size)
       for fam, make in _FAMILIES.items()
       for size in _SIZES
       if not (size == "1.2b" and fam != "gpt2-rope")},
    # released models' shapes (the models themselves load from their files)
    "smollm2-135m": _smollm2_135m(),
    "gemma3-tiny": _gemma3("tiny"),
    "gemma3-270m": _gemma3("270m"),
}


def get_preset(name: str) -> ModelConfig:
    """The named preset; a ``UserError`` listing the valid names otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UserError(
            f"unknown preset {name!r}; available presets: {', '.join(sorted(PRESETS))}"
        ) from None


