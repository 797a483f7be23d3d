"""Gemma 3's text decoder (``model_type`` gemma3_text, Gemma3ForCausalLM; llama.cpp arch
``gemma3``): QK-norm per head, sandwich norms (before and after each sublayer), norm gains
(1 + w) (HF stores w, GGUF 1 + w), token embeddings times sqrt(d), GeGLU (tanh), grouped K/V
heads of a head_dim of their own, sliding-window layers with a RoPE base of their own
(``layer_types``; every 6th layer global), attention logits over
sqrt(``query_pre_attn_scalar``). transformers' ``Gemma3TextConfig`` defaults fill what a config
leaves out, as llama.cpp's gemma3 graph hard-codes them for GGUF files (the sliding layers' base
10,000, every 6th layer global, the scalar = head_dim, d / H for the 62-block 27B model, no
soft-capping, GELU (tanh)). Gemma, Gemma 2 and Gemma 3n files are refused, saying how they
differ."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.architectures.base import ACT_TO_HF, GGUFMeta, activation
from bornbiased_jax.architectures.llama import LLAMA_GGUF, Llama
from bornbiased_jax.architectures.rope_config import read_rope, refuse, rope_to_hf
from bornbiased_jax.config import FULL, SLIDING, ModelConfig, gemma3_layer_types
from bornbiased_jax.errors import UserError

GEMMA3_LOCAL_THETA, GEMMA3_PATTERN = 10_000.0, 6
GEMMA3_VOCAB = 262_144


class Gemma3(Llama):
    name, model_type, gguf_arch = "gemma3", "gemma3_text", "gemma3"
    hf_class = "Gemma3ForCausalLM"
    what = ("QK-norm, sandwich norms with (1 + w) gains, sqrt(d) embeddings, GeGLU, "
            "sliding-window layers with their own RoPE base")
    reads = frozenset({
        "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "intermediate_size", "max_position_embeddings",
        "hidden_activation", "hidden_act", "rms_norm_eps", "rope_theta", "rope_scaling",
        "rope_parameters", "rope_local_base_freq", "tie_word_embeddings",
        "query_pre_attn_scalar", "sliding_window", "layer_types", "sliding_window_pattern",
        "_sliding_window_pattern", "final_logit_softcapping", "attn_logit_softcapping",
        "use_bidirectional_attention", "attention_bias"})
    ignores = frozenset()
    relatives = {"gemma": "no QK-norm nor sandwich norms", "gemma2": "logit soft-capping, no "
                 "QK-norm", "gemma3n": "per-layer embeddings, AltUp and more"}
    bias, windows, qk_norm = "none", "layers", "head"
    pre_norms = post_norms = True
    hf_norms = {"attn_norm": "input_layernorm", "attn_post_norm": "post_attention_layernorm",
                "mlp_norm": "pre_feedforward_layernorm",
                "mlp_post_norm": "post_feedforward_layernorm"}
    # one HF name means two things: LLaMA's post_attention_layernorm is the norm before the MLP
    # (GGUF ffn_norm), Gemma's the norm after attention
    gguf_names = LLAMA_GGUF[:-1] + (
        ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm"),
        ("post_attention_layernorm", "post_attention_norm"),
        ("pre_feedforward_layernorm", "ffn_norm"), ("post_feedforward_layernorm", "post_ffw_norm"))
    gguf_permute = False
    gguf_consumed = ()
    gguf_spm_tokenizer = True  # its SentencePiece merges follow the vocabulary's order

    def fields(self, d: dict) -> dict:
        for f in ("final_logit_softcapping", "attn_logit_softcapping"):
            if d.get(f) is not None:
                raise refuse(self.name, f, d[f], "logit soft-capping (Gemma 2's) is not "
                             "implemented; Gemma 3 has none (null)")
        if d.get("use_bidirectional_attention"):
            raise refuse(self.name, "use_bidirectional_attention", True,
                         "the decoder here is causal")
        if d.get("attention_bias"):
            raise refuse(self.name, "attention_bias", True, "biases on the attention "
                         "projections but not the MLP have no counterpart here; Gemma 3 has none")
        n_layers = d.get("num_hidden_layers", 26)
        types = d.get("layer_types")
        if types is None:
            k = d.get("sliding_window_pattern", d.get("_sliding_window_pattern", GEMMA3_PATTERN))
            types = gemma3_layer_types(n_layers, k)
        bad = sorted(set(types) - {FULL, SLIDING})
        if bad:
            raise refuse(self.name, "layer_types", bad, "layer types other than "
                         "'sliding_attention' and 'full_attention' are not implemented")
        if len(types) != n_layers:
            raise refuse(self.name, "layer_types", f"{len(types)} entries",
                         f"one per layer (num_hidden_layers={n_layers})")
        rope = d.get("rope_parameters") or {}
        if not isinstance(rope, dict):
            raise refuse(self.name, "rope_parameters", rope, "expected a JSON object")
        if rope and all(isinstance(v, dict) for v in rope.values()):  # transformers 5: per type
            full, scaling = read_rope(d, self.name, params=rope.get(FULL) or {},
                                      default_theta=1_000_000.0)
            local, local_scaling = read_rope(d, self.name, params=rope.get(SLIDING) or {},
                                             default_theta=GEMMA3_LOCAL_THETA)
        else:  # older: rope_theta and rope_scaling for global layers, rope_local_base_freq
            full, scaling = read_rope(d, self.name, default_theta=1_000_000.0)
            local, local_scaling = float(d.get("rope_local_base_freq", GEMMA3_LOCAL_THETA)), None
        if local_scaling is not None:
            raise refuse(self.name, "rope_parameters.sliding_attention", local_scaling.kind,
                         "the sliding layers' RoPE is unscaled here (Gemma 3 scales its global "
                         "layers only)")
        sliding = SLIDING in types
        return dict(
            vocab_size=d.get("vocab_size", 262_208), d_model=d.get("hidden_size", 2304),
            n_layers=n_layers, n_heads=d.get("num_attention_heads", 8),
            n_kv_heads=d.get("num_key_value_heads", 4), head_dim=d.get("head_dim", 256),
            d_ff=d.get("intermediate_size", 9216),
            max_seq_len=d.get("max_position_embeddings", 131_072),
            activation=activation(d, self.name, "hidden_activation" if "hidden_activation" in d
                                  else "hidden_act", "gelu_pytorch_tanh"),
            gated_mlp=True, norm="rmsnorm", norm_eps=float(d.get("rms_norm_eps", 1e-6)),
            position="rope", rope_theta=full, rope_scaling=scaling, linear_bias=False,
            qkv_bias=False, tie_embeddings=bool(d.get("tie_word_embeddings", True)),
            init_std=float(d.get("initializer_range", 0.02)), scale_residual_init=False,
            qk_norm=True, post_norms=True, norm_unit_offset=True, embed_scale=True,
            query_pre_attn_scalar=float(d.get("query_pre_attn_scalar", 256)),
            sliding_window=int(d.get("sliding_window") or 4096) if sliding else None,
            layer_types=tuple(types) if sliding else None,
            rope_local_theta=local if sliding else None)

    def differences(self, cfg: ModelConfig) -> list[str]:
        why = []
        gemma = {f: getattr(cfg, f) for f in ("qk_norm", "post_norms", "norm_unit_offset",
                                              "embed_scale", "pre_norms")}
        if not all(gemma.values()) or cfg.qk_norm_scope != "head":
            why.append(f"{gemma} (QK-norm per head) is part of Gemma 3's architecture; "
                       f"Gemma3ForCausalLM has all five")
        if (cfg.position, cfg.norm, cfg.gated_mlp, cfg.linear_bias, cfg.qkv_bias) != (
                "rope", "rmsnorm", True, False, False):
            why.append("Gemma 3 has RoPE, RMSNorm, a gated MLP and no biases")
        return why

    def to_hf(self, cfg: ModelConfig) -> dict:
        """Gemma3TextConfig's fields for ``cfg``, in both the spellings of transformers 5
        (``rope_parameters`` per layer type) and earlier (``rope_theta``,
        ``rope_local_base_freq``)."""
        local = cfg.layer_rope_theta(cfg.attention_types.index(SLIDING)) \
            if SLIDING in cfg.attention_types else GEMMA3_LOCAL_THETA
        out = {"hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layers,
               "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.resolved_n_kv_heads,
               "head_dim": cfg.resolved_head_dim, "intermediate_size": cfg.d_ff,
               "max_position_embeddings": cfg.max_seq_len,
               "hidden_activation": ACT_TO_HF[cfg.activation].replace("gelu_new",
                                                                      "gelu_pytorch_tanh"),
               "rms_norm_eps": cfg.norm_eps,
               "query_pre_attn_scalar": _int_if_whole(cfg.attn_scalar),
               "sliding_window": cfg.sliding_window, "layer_types": list(cfg.attention_types),
               "rope_parameters": {FULL: rope_to_hf(cfg.rope_theta, cfg.rope_scaling),
                                   SLIDING: rope_to_hf(local, None)},
               "rope_theta": cfg.rope_theta, "rope_local_base_freq": local,
               "attention_bias": False, "attention_dropout": 0.0,
               "final_logit_softcapping": None, "attn_logit_softcapping": None,
               "use_bidirectional_attention": False}
        return out

    # --------------------------------------------------------------- GGUF
    def from_gguf(self, gguf_name, a, cfg):
        # llama.cpp stores Gemma's gain 1 + w; our scale (and HF's weight) is w
        return a - np.float32(1) if gguf_name.endswith("norm.weight") else a

    def to_gguf(self, gguf_name, a, cfg):
        return a + np.float32(1) if gguf_name.endswith("norm.weight") else a

    def gguf_config(self, meta: GGUFMeta) -> dict:
        for key in ("attn_logit_softcapping", "final_logit_softcapping"):
            v = meta.get(key)
            if v:
                raise meta.refuse(key, v, "logit soft-capping (Gemma 2's) is not implemented, "
                                  "and Gemma 3 has none")
        hf = super().gguf_config(meta)
        n = hf["num_hidden_layers"]
        pattern = meta.get("attention.sliding_window_pattern", GEMMA3_PATTERN)
        if isinstance(pattern, list):  # per layer: True where the layer is sliding
            types = [SLIDING if bool(x) else FULL for x in pattern]
        elif isinstance(pattern, int) and not isinstance(pattern, bool) and pattern >= 1:
            types = list(gemma3_layer_types(n, pattern))
        else:
            raise meta.refuse("attention.sliding_window_pattern", pattern,
                              "not a layer pattern (a period or one flag per layer)")
        window = meta.need("attention.sliding_window")
        d, heads = hf["hidden_size"], hf["num_attention_heads"]
        theta = hf.pop("rope_parameters")
        hf.pop("hidden_act")
        hf.update({"hidden_activation": "gelu_pytorch_tanh", "sliding_window": int(window),
                   "layer_types": types,
                   "query_pre_attn_scalar": d // heads if n == 62 else hf["head_dim"],
                   "rope_parameters": {FULL: theta,
                                       SLIDING: {"rope_type": "default",
                                                 "rope_theta": GEMMA3_LOCAL_THETA}},
                   "final_logit_softcapping": None, "attn_logit_softcapping": None})
        return hf

    def gguf_metadata(self, cfg: ModelConfig) -> dict:
        meta = super().gguf_metadata(cfg)
        if cfg.sliding_window is not None:  # what convert_hf_to_gguf.py's Gemma3Model writes
            meta["attention.sliding_window"] = cfg.sliding_window
        return meta

    def presets(self) -> dict[str, ModelConfig]:
        return {"gemma3-tiny": gemma3("tiny"), "gemma3-270m": gemma3("270m")}


def gemma3(size: str) -> ModelConfig:
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
        query_pre_attn_scalar=float(head_dim), sliding_window=512,
        layer_types=gemma3_layer_types(n_layers, GEMMA3_PATTERN), rope_local_theta=10_000.0)


def _int_if_whole(x: float) -> int | float:
    """transformers' Gemma3TextConfig types query_pre_attn_scalar as an int (and refuses a
    float); a whole number is written as one."""
    return int(x) if float(x).is_integer() else x
