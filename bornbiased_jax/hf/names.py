"""Tensor names: which HF tensor holds which of our parameters, in which layout.

Our kernels are (in, out); ``torch.nn.Linear`` stores (out, in), so LLaMA/Qwen2 weights and
every untied ``lm_head`` are transposed. GPT-2 uses ``Conv1D``, already (in, out), and fuses
Q|K|V into one ``c_attn`` of shape (d, 3d) (bias (3d,)), split along its last axis. GPT-NeoX
fuses them too, but head by head: ``query_key_value`` is a Linear (3d, d) whose rows are
[q_0 k_0 v_0 q_1 k_1 v_1 ...], K rows each.

Shapes: V vocab, d d_model, H heads, Hkv kv heads, K head_dim, F d_ff, Tmax max positions.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax.config import ModelConfig

# HF saves GPT2LMHeadModel / LlamaForCausalLM with these prefixes on the base model; some
# checkpoints (the original ``gpt2`` on the Hub) were saved from the base model, without them.
BASE_PREFIX = {"gpt2": "transformer.", "llama": "model.", "qwen2": "model.",
               "gpt_neox": "gpt_neox.", "gemma3_text": "model."}
EMBED_NAME = {"gpt2": "transformer.wte.weight", "llama": "model.embed_tokens.weight",
              "qwen2": "model.embed_tokens.weight", "gpt_neox": "gpt_neox.embed_in.weight",
              "gemma3_text": "model.embed_tokens.weight"}
LM_HEAD = "lm_head.weight"
# GPT-NeoX checkpoints (Pythia) and transformers < 5 call the head ``embed_out``; exports use
# that name, which every version reads.
HEAD_ALIAS = {"gpt_neox": "embed_out.weight"}
# Non-parameter buffers that older checkpoints contain: GPT-2's causal mask, LLaMA's RoPE
# frequencies. They are recomputed, never read.
_BUFFERS = re.compile(r"(^|\.)(h\.\d+\.attn\.(masked_)?bias|layers\.\d+\.attention\.(masked_)?bias"
                      r"|layers\.\d+\.(self_attn|attention)\.rotary_emb\.inv_freq)$")


class TensorSpec(NamedTuple):
    """One HF tensor: its name and shape, our parameter path(s), and the layout between them.

    layout: "copy" (same array), "transpose" (Linear (out, in) <-> kernel (in, out)), "split3"
    (GPT-2's fused c_attn: the last axis is [q | k | v], one path each), or "heads3"
    (GPT-NeoX's query_key_value: the first axis is ``heads`` groups of [q_h | k_h | v_h]).
    """

    hf_name: str
    hf_shape: tuple[int, ...]
    paths: tuple[str, ...]
    layout: str
    heads: int = 0


def is_buffer(hf_name: str) -> bool:
    return bool(_BUFFERS.search(hf_name))


def _gpt2_specs(cfg: ModelConfig) -> list[TensorSpec]:
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
            TensorSpec(f"{h}.attn.c_attn.weight", (d, 3 * d), tuple(f"{p}/kernel" for p in qkv),
                       "split3"),
            TensorSpec(f"{h}.attn.c_attn.bias", (3 * d,), tuple(f"{p}/bias" for p in qkv),
                       "split3"),
            TensorSpec(f"{h}.attn.c_proj.weight", (d, d), (f"{ours}/attn/o_proj/kernel",), "copy"),
            TensorSpec(f"{h}.attn.c_proj.bias", (d,), (f"{ours}/attn/o_proj/bias",), "copy"),
            TensorSpec(f"{h}.ln_2.weight", (d,), (f"{ours}/mlp_norm/scale",), "copy"),
            TensorSpec(f"{h}.ln_2.bias", (d,), (f"{ours}/mlp_norm/bias",), "copy"),
            TensorSpec(f"{h}.mlp.c_fc.weight", (d, F), (f"{ours}/mlp/up_proj/kernel",), "copy"),
            TensorSpec(f"{h}.mlp.c_fc.bias", (F,), (f"{ours}/mlp/up_proj/bias",), "copy"),
            TensorSpec(f"{h}.mlp.c_proj.weight", (F, d), (f"{ours}/mlp/down_proj/kernel",),
                       "copy"),
            TensorSpec(f"{h}.mlp.c_proj.bias", (d,), (f"{ours}/mlp/down_proj/bias",), "copy"),
        ]
    specs += [TensorSpec("transformer.ln_f.weight", (d,), ("final_norm/scale",), "copy"),
              TensorSpec("transformer.ln_f.bias", (d,), ("final_norm/bias",), "copy")]
    return specs


def _gpt_neox_specs(cfg: ModelConfig) -> list[TensorSpec]:
    d, F, V, H = cfg.d_model, cfg.d_ff, cfg.vocab_size, cfg.n_heads
    specs = [TensorSpec("gpt_neox.embed_in.weight", (V, d), ("embed/embedding",), "copy")]
    for i in range(cfg.n_layers):
        h, ours = f"gpt_neox.layers.{i}", f"layers_{i}"
        qkv = tuple(f"{ours}/attn/{p}_proj" for p in "qkv")
        for hf_norm, our_norm in (("input_layernorm", "attn_norm"),
                                  ("post_attention_layernorm", "mlp_norm")):
            specs += [TensorSpec(f"{h}.{hf_norm}.weight", (d,), (f"{ours}/{our_norm}/scale",),
                                 "copy"),
                      TensorSpec(f"{h}.{hf_norm}.bias", (d,), (f"{ours}/{our_norm}/bias",), "copy")]
        specs += [TensorSpec(f"{h}.attention.query_key_value.weight", (3 * d, d),
                             tuple(f"{p}/kernel" for p in qkv), "heads3", H),
                  TensorSpec(f"{h}.attention.query_key_value.bias", (3 * d,),
                             tuple(f"{p}/bias" for p in qkv), "heads3", H)]
        specs += _linear(f"{h}.attention.dense", f"{ours}/attn/o_proj", d, d, True)
        specs += _linear(f"{h}.mlp.dense_h_to_4h", f"{ours}/mlp/up_proj", d, F, True)
        specs += _linear(f"{h}.mlp.dense_4h_to_h", f"{ours}/mlp/down_proj", F, d, True)
    specs += [TensorSpec("gpt_neox.final_layer_norm.weight", (d,), ("final_norm/scale",), "copy"),
              TensorSpec("gpt_neox.final_layer_norm.bias", (d,), ("final_norm/bias",), "copy")]
    return specs


def _linear(hf: str, ours: str, d_in: int, d_out: int, bias: bool) -> list[TensorSpec]:
    specs = [TensorSpec(f"{hf}.weight", (d_out, d_in), (f"{ours}/kernel",), "transpose")]
    if bias:
        specs.append(TensorSpec(f"{hf}.bias", (d_out,), (f"{ours}/bias",), "copy"))
    return specs


def _llama_specs(cfg: ModelConfig) -> list[TensorSpec]:
    d, F, V = cfg.d_model, cfg.d_ff, cfg.vocab_size
    K = cfg.resolved_head_dim
    HK, HkvK = cfg.n_heads * K, cfg.resolved_n_kv_heads * K
    qkv_b, b = cfg.qkv_bias or cfg.linear_bias, cfg.linear_bias
    specs = [TensorSpec("model.embed_tokens.weight", (V, d), ("embed/embedding",), "copy")]
    for i in range(cfg.n_layers):
        h, ours = f"model.layers.{i}", f"layers_{i}"
        specs += [TensorSpec(f"{h}.input_layernorm.weight", (d,), (f"{ours}/attn_norm/scale",),
                             "copy")]
        specs += _linear(f"{h}.self_attn.q_proj", f"{ours}/attn/q_proj", d, HK, qkv_b)
        specs += _linear(f"{h}.self_attn.k_proj", f"{ours}/attn/k_proj", d, HkvK, qkv_b)
        specs += _linear(f"{h}.self_attn.v_proj", f"{ours}/attn/v_proj", d, HkvK, qkv_b)
        specs += _linear(f"{h}.self_attn.o_proj", f"{ours}/attn/o_proj", HK, d, b)
        specs += [TensorSpec(f"{h}.post_attention_layernorm.weight", (d,),
                             (f"{ours}/mlp_norm/scale",), "copy")]
        specs += _linear(f"{h}.mlp.gate_proj", f"{ours}/mlp/gate_proj", d, F, b)
        specs += _linear(f"{h}.mlp.up_proj", f"{ours}/mlp/up_proj", d, F, b)
        specs += _linear(f"{h}.mlp.down_proj", f"{ours}/mlp/down_proj", F, d, b)
    specs += [TensorSpec("model.norm.weight", (d,), ("final_norm/scale",), "copy")]
    return specs


def _gemma3_specs(cfg: ModelConfig) -> list[TensorSpec]:
    """Gemma3ForCausalLM's tensors. Its RMSNorm weights are w of the gain (1 + w), which our
    ``scale`` holds too (``norm_unit_offset``), so they are copied as they are."""
    d, F, V, K = cfg.d_model, cfg.d_ff, cfg.vocab_size, cfg.resolved_head_dim
    HK, HkvK = cfg.n_heads * K, cfg.resolved_n_kv_heads * K
    specs = [TensorSpec("model.embed_tokens.weight", (V, d), ("embed/embedding",), "copy")]
    for i in range(cfg.n_layers):
        h, ours = f"model.layers.{i}", f"layers_{i}"
        norm = lambda hf, our, n=d: TensorSpec(f"{h}.{hf}.weight", (n,), (f"{ours}/{our}/scale",),
                                               "copy")
        specs += [norm("input_layernorm", "attn_norm")]
        specs += _linear(f"{h}.self_attn.q_proj", f"{ours}/attn/q_proj", d, HK, False)
        specs += _linear(f"{h}.self_attn.k_proj", f"{ours}/attn/k_proj", d, HkvK, False)
        specs += _linear(f"{h}.self_attn.v_proj", f"{ours}/attn/v_proj", d, HkvK, False)
        specs += _linear(f"{h}.self_attn.o_proj", f"{ours}/attn/o_proj", HK, d, False)
        specs += [norm("self_attn.q_norm", "attn/q_norm", K),
                  norm("self_attn.k_norm", "attn/k_norm", K),
                  norm("post_attention_layernorm", "attn_post_norm"),
                  norm("pre_feedforward_layernorm", "mlp_norm"),
                  norm("post_feedforward_layernorm", "mlp_post_norm")]
        specs += _linear(f"{h}.mlp.gate_proj", f"{ours}/mlp/gate_proj", d, F, False)
        specs += _linear(f"{h}.mlp.up_proj", f"{ours}/mlp/up_proj", d, F, False)
        specs += _linear(f"{h}.mlp.down_proj", f"{ours}/mlp/down_proj", F, d, False)
    specs += [TensorSpec("model.norm.weight", (d,), ("final_norm/scale",), "copy")]
    return specs


def tensor_specs(cfg: ModelConfig, kind: str) -> list[TensorSpec]:
    """Every tensor of an HF ``kind`` (model_type) checkpoint of ``cfg``, in checkpoint order;
    ``lm_head.weight`` (V, d) only when the head is untied."""
    specs = {"gpt2": _gpt2_specs, "gpt_neox": _gpt_neox_specs,
             "gemma3_text": _gemma3_specs}.get(kind, _llama_specs)(cfg)
    if not cfg.tie_embeddings:
        specs.append(TensorSpec(LM_HEAD, (cfg.vocab_size, cfg.d_model), ("lm_head/kernel",),
                                "transpose"))
    return specs


def to_ours(spec: TensorSpec, a: jax.Array) -> list[jax.Array]:
    """The arrays of ``spec.paths`` from the HF tensor ``a`` (on the device: a transpose there
    is cheaper than numpy's strided copy on the host)."""
    if spec.layout == "copy":
        return [a]
    if spec.layout == "transpose":
        return [a.T]
    if spec.layout == "heads3":  # (3HK, ...) -> (H, 3, K, ...) -> q, k, v of (HK, ...)
        a = a.reshape(spec.heads, 3, -1, *a.shape[1:])
        return [a[:, j].reshape(-1, *a.shape[3:]).T for j in range(3)]
    return jnp.split(a, 3, axis=-1)  # split3: [q | k | v]


def to_hf(spec: TensorSpec, arrays: list[np.ndarray]) -> np.ndarray:
    """The HF tensor of ``spec`` from our arrays (the inverse of :func:`to_ours`)."""
    if spec.layout == "copy":
        return arrays[0]
    if spec.layout == "transpose":
        return arrays[0].T
    if spec.layout == "heads3":
        per_head = [a.T.reshape(spec.heads, -1, *a.shape[:-1]) for a in arrays]  # (H, K, ...)
        return np.stack(per_head, axis=1).reshape(-1, *per_head[0].shape[2:])
    return np.concatenate(arrays, axis=-1)
