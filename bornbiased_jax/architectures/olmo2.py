"""OLMo 2 (``model_type`` olmo2, Olmo2ForCausalLM): LLaMA without biases whose norms sit after
the sublayers only (H = X + Norm(MHA(X)), Y = H + Norm(MLP(H)): ``post_attention_layernorm``
and ``post_feedforward_layernorm``, no pre-norms) and whose QK-norm is an RMSNorm over the whole
query and key projections (gains of H K and N K) before they split into heads. GGUF (llama.cpp
arch ``olmo2``): ``attn_q_norm`` / ``attn_k_norm`` of the projections' widths,
``post_attention_norm`` and ``post_ffw_norm``; its RoPE rotates halves (rows as they are)."""

from __future__ import annotations

from bornbiased_jax.architectures.llama import LLAMA_READS, Llama
from bornbiased_jax.config import ModelConfig


class Olmo2(Llama):
    name = model_type = gguf_arch = "olmo2"
    hf_class = "Olmo2ForCausalLM"
    what = "norms after the sublayers only; QK-norm over the whole projection"
    reads = LLAMA_READS | {"attention_bias"}
    ignores = frozenset()
    defaults = dict(vocab_size=50304, hidden_size=4096, intermediate_size=11008,
                    num_hidden_layers=32, num_attention_heads=32, max_position_embeddings=2048,
                    rms_norm_eps=1e-5, tie_word_embeddings=False)
    bias, qk_norm = "none", "projection"
    pre_norms, post_norms = False, True
    hf_norms = {"attn_post_norm": "post_attention_layernorm",
                "mlp_post_norm": "post_feedforward_layernorm"}
    gguf_names = (("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                  ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                  ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm"),
                  ("post_attention_layernorm", "post_attention_norm"),
                  ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"),
                  ("mlp.down_proj", "ffn_down"), ("post_feedforward_layernorm", "post_ffw_norm"))
    gguf_permute = False
    gguf_consumed = ()

    def presets(self) -> dict[str, ModelConfig]:
        """OLMo 2 1B's shape (``olmo2-1b``, OLMo-2-0425-1B's config.json: 16 blocks, d = 2,048,
        16 heads (no GQA), SwiGLU 8,192, vocabulary 100,352, untied head, RoPE base 500,000,
        RMSNorm eps 1e-6, context 4,096) and its test size ``olmo2-tiny``. Init: HF's default
        (std 0.02)."""
        def make(name, d, L, H, F, V, T):
            return ModelConfig(
                name=name, vocab_size=V, d_model=d, n_layers=L, n_heads=H, d_ff=F,
                max_seq_len=T, activation="silu", gated_mlp=True, norm="rmsnorm",
                position="rope", rope_theta=500_000.0, linear_bias=False, qkv_bias=False,
                tie_embeddings=False, norm_eps=1e-6, scale_residual_init=False, qk_norm=True,
                qk_norm_scope="projection", pre_norms=False, post_norms=True,
                architecture=self.name)
        return {"olmo2-1b": make("olmo2-1b", 2048, 16, 16, 8192, 100_352, 4096),
                "olmo2-tiny": make("olmo2-tiny", 64, 2, 4, 176, 512, 128)}
