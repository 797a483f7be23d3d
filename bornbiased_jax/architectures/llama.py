"""LLaMA (``model_type`` llama: LLaMA 1-3, SmolLM2, ...), and the LLaMA-like decoder that
Qwen2, Qwen3, Mistral, Phi-3, OLMo 2 and Gemma 3 vary by a few class attributes.

A LLaMA-like block is RMSNorm, RoPE, a gated MLP and grouped-query attention; a family says
  * ``bias``: "both" (LLaMA: ``attention_bias`` on Q, K, V, O and ``mlp_bias`` on the MLP,
    both or neither), "qkv" (Qwen2: on Q, K and V only) or "none" (``attention_bias`` refused);
  * ``windows``: "none", "all" (``sliding_window`` on every layer: Mistral, Phi-3) or "layers"
    (Qwen: ``use_sliding_window``, the layers from ``max_window_layers`` on, or ``layer_types``);
  * ``qk_norm``: None, "head" (Qwen3) or "projection" (OLMo 2);
  * ``pre_norms`` / ``post_norms``: where the norms sit (OLMo 2: after the sublayers only);
  * ``fused``: Q|K|V and gate|up stored as one Linear each (Phi-3);
  * ``hf_norms``: the HF names of its norms; ``gguf_names``: llama.cpp's names of its tensors.

LLaMA itself: rope_type "llama3" (Llama 3.1-3.3), "linear", "dynamic" and "yarn" are read;
llama.cpp writes Llama 3's scaling as a ``rope_freqs`` tensor (one divisor per frequency),
which is read back as the "llama3" scaling it came from (``rope.fit_llama3``), and its RoPE
rotates adjacent pairs, so its converter reorders Q and K rows (undone here).
"""

from __future__ import annotations

import math

import numpy as np

from bornbiased_jax import rope
from bornbiased_jax.architectures.base import (ACT_TO_HF, Architecture, GGUFMeta, activation,
                                               fused_specs, linear_specs)
from bornbiased_jax.architectures.rope_config import read_rope, refuse, rope_fields
from bornbiased_jax.config import FULL, SLIDING, ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.architectures.tensors import TensorSpec

LLAMA_READS = frozenset({
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "intermediate_size", "max_position_embeddings",
    "hidden_act", "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
    "partial_rotary_factor", "tie_word_embeddings"})
# llama.cpp's block tensor names of an HF LLaMA-like block (suffix after "model.layers.N.")
LLAMA_GGUF = (("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"),
              ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
              ("self_attn.o_proj", "attn_output"), ("mlp.gate_proj", "ffn_gate"),
              ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down"),
              ("post_attention_layernorm", "ffn_norm"))
GGUF_FIXED = {"model.embed_tokens.weight": "token_embd.weight", "lm_head.weight": "output.weight",
              "model.norm.weight": "output_norm.weight"}


def unpermute_rope_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's ``permute`` of a LLaMA Q or K projection (rows, or a bias): within
    each of ``n_heads`` heads its rows [x_0, y_0, x_1, y_1, ...] (pairs rotated together) go
    back to HF's [x_0, x_1, ..., y_0, y_1, ...] (halves rotated together)."""
    half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, half, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def permute_rope_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's ``permute`` (the inverse of :func:`unpermute_rope_rows`)."""
    half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, 2, half, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


class Llama(Architecture):
    name, model_type, hf_class, gguf_arch = "llama", "llama", "LlamaForCausalLM", "llama"
    what = "RMSNorm, RoPE (Llama 3's scaling too), SwiGLU, grouped-query attention"
    reads = LLAMA_READS | {"attention_bias", "mlp_bias", "layer_types"}
    ignores = frozenset({"pretraining_tp"})  # slices the matmuls, same sums
    defaults = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                    num_hidden_layers=32, num_attention_heads=32, max_position_embeddings=2048,
                    rms_norm_eps=1e-6, tie_word_embeddings=False)
    bias = "both"
    windows = "none"
    qk_norm: str | None = None
    pre_norms, post_norms, fused = True, False, False
    hf_norms = {"attn_norm": "input_layernorm", "mlp_norm": "post_attention_layernorm"}
    gguf_names = LLAMA_GGUF
    gguf_permute = True  # llama.cpp's LLaMA RoPE rotates adjacent pairs
    gguf_consumed = ("rope_freqs.weight",)

    # --------------------------------------------------------------- config.json in
    def get(self, d: dict, key: str):
        return d.get(key, self.defaults.get(key))

    def fields(self, d: dict) -> dict:
        n_heads, n_layers = self.get(d, "num_attention_heads"), self.get(d, "num_hidden_layers")
        qkv_bias, linear_bias = self.biases(d)
        theta, scaling = read_rope(d, self.name)
        window, types = self.read_windows(d, n_layers)
        return dict(
            vocab_size=self.get(d, "vocab_size"), d_model=self.get(d, "hidden_size"),
            n_layers=n_layers, n_heads=n_heads,
            n_kv_heads=d.get("num_key_value_heads") or n_heads, head_dim=d.get("head_dim"),
            d_ff=self.get(d, "intermediate_size"),
            max_seq_len=self.get(d, "max_position_embeddings"),
            activation=activation(d, self.name, "hidden_act", "silu"), gated_mlp=True,
            norm="rmsnorm", norm_eps=float(self.get(d, "rms_norm_eps")), position="rope",
            rope_theta=theta, rope_scaling=scaling, linear_bias=linear_bias, qkv_bias=qkv_bias,
            tie_embeddings=bool(self.get(d, "tie_word_embeddings")),
            init_std=float(d.get("initializer_range", 0.02)), scale_residual_init=False,
            sliding_window=window, layer_types=types, qk_norm=self.qk_norm is not None,
            qk_norm_scope=self.qk_norm or "head", pre_norms=self.pre_norms,
            post_norms=self.post_norms)

    def biases(self, d: dict) -> tuple[bool, bool]:
        """(qkv_bias, linear_bias) of the config."""
        if self.bias == "qkv":
            return True, False
        attn_b, mlp_b = bool(d.get("attention_bias", False)), bool(d.get("mlp_bias", False))
        if self.bias == "none" and attn_b:
            raise refuse(self.name, "attention_bias", True, "biases on the attention's "
                         "projections but not the MLP's have no counterpart here")
        if attn_b != mlp_b:
            raise refuse(self.name, "attention_bias/mlp_bias", (attn_b, mlp_b), "biases on the "
                         "attention linears but not the MLP (or the reverse) have no "
                         "counterpart; both false (LLaMA) or both true are supported")
        return False, attn_b

    def read_windows(self, d: dict, n_layers: int) -> tuple[int | None, tuple | None]:
        """(sliding_window, layer_types) of the config."""
        types = d.get("layer_types")
        if self.windows == "none":
            if types is not None and any(t != FULL for t in types):
                raise refuse(self.name, "layer_types", sorted(set(types)),
                             "only 'full_attention' layers")
            if d.get("sliding_window"):
                raise refuse(self.name, "sliding_window", d["sliding_window"],
                             "sliding-window attention is not part of this family")
            return None, None
        if self.windows == "all":
            w = d.get("sliding_window", self.defaults.get("sliding_window"))
            return (int(w), None) if w else (None, None)
        # "layers" (Qwen): the window only when use_sliding_window; then the layer types given,
        # or sliding from max_window_layers on
        w = d.get("sliding_window") if d.get("use_sliding_window") else None
        if types is not None:
            bad = sorted(set(types) - {FULL, SLIDING})
            if bad:
                raise refuse(self.name, "layer_types", bad,
                             "layer types other than 'full_attention' and 'sliding_attention'")
            if len(types) != n_layers:
                raise refuse(self.name, "layer_types", f"{len(types)} entries",
                             f"one per layer (num_hidden_layers={n_layers})")
        if not w:
            return None, None
        if types is None:
            k = d.get("max_window_layers", n_layers)
            types = [SLIDING if i >= k else FULL for i in range(n_layers)]
        return (int(w), tuple(types)) if SLIDING in types else (None, None)

    # --------------------------------------------------------------- config.json out
    def differences(self, cfg: ModelConfig) -> list[str]:
        why = []
        if (cfg.position, cfg.norm, cfg.gated_mlp) != ("rope", "rmsnorm", True):
            why.append(f"{self.name} has RoPE, RMSNorm and a gated MLP (got position="
                       f"{cfg.position!r}, norm={cfg.norm!r}, gated_mlp={cfg.gated_mlp})")
        want_bias = {"both": None, "qkv": (True, False), "none": (False, False)}[self.bias]
        got_bias = (cfg.qkv_bias and not cfg.linear_bias, cfg.linear_bias)
        if want_bias is None and cfg.qkv_bias and not cfg.linear_bias:
            why.append(f"{self.name} has biases on every linear or none (not on Q, K, V only)")
        elif want_bias is not None and got_bias != want_bias:
            why.append(f"{self.name} has " + ("biases on Q, K and V only" if self.bias == "qkv"
                                              else "no biases"))
        got_qk = cfg.qk_norm_scope if cfg.qk_norm else None
        if got_qk != self.qk_norm:
            why.append(f"{self.name}'s QK-norm: {self.qk_norm or 'none'} (got "
                       f"{cfg.qk_norm_scope if cfg.qk_norm else 'none'})")
        if (cfg.pre_norms, cfg.post_norms) != (self.pre_norms, self.post_norms):
            why.append(f"{self.name}'s norms sit " + {(True, False): "before the sublayers",
                                                      (False, True): "after the sublayers"}[
                (self.pre_norms, self.post_norms)])
        if cfg.norm_unit_offset or cfg.embed_scale or cfg.query_pre_attn_scalar is not None:
            why.append("(1 + w) gains, sqrt(d) embeddings and query_pre_attn_scalar are Gemma's")
        if cfg.sliding_window is not None:
            if self.windows == "none":
                why.append(f"{self.name} has no sliding-window layers")
            elif self.windows == "all" and cfg.layer_types is not None:
                why.append(f"{self.name}'s window covers every layer (got {cfg.attention_types})")
        if cfg.rope_local_theta is not None:
            why.append("a RoPE base of the sliding layers' own is Gemma's")
        return why

    def to_hf(self, cfg: ModelConfig) -> dict:
        body = {"hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layers,
                "num_attention_heads": cfg.n_heads,
                "num_key_value_heads": cfg.resolved_n_kv_heads,
                "head_dim": cfg.resolved_head_dim, "intermediate_size": cfg.d_ff,
                "max_position_embeddings": cfg.max_seq_len,
                "hidden_act": ACT_TO_HF[cfg.activation], "rms_norm_eps": cfg.norm_eps,
                "attention_dropout": 0.0, **rope_fields(cfg.rope_theta, cfg.rope_scaling)}
        if self.bias == "both":
            body.update(attention_bias=cfg.linear_bias, mlp_bias=cfg.linear_bias)
        elif self.bias == "none" and "attention_bias" in self.reads:
            body.update(attention_bias=False)
        if self.windows == "all":
            body.update(sliding_window=cfg.sliding_window)
        elif self.windows == "layers":
            body.update(use_sliding_window=cfg.sliding_window is not None,
                        sliding_window=cfg.sliding_window, max_window_layers=cfg.n_layers,
                        layer_types=list(cfg.attention_types))
        return body

    # --------------------------------------------------------------- tensors
    def tensor_specs(self, cfg: ModelConfig) -> list[TensorSpec]:
        d, F, V, K = cfg.d_model, cfg.d_ff, cfg.vocab_size, cfg.resolved_head_dim
        HK, NK = cfg.n_heads * K, cfg.resolved_n_kv_heads * K
        qkv_b, b = cfg.qkv_bias or cfg.linear_bias, cfg.linear_bias
        specs = [TensorSpec(self.embed_name, (V, d), ("embed/embedding",), "copy")]
        for i in range(cfg.n_layers):
            h, ours = f"model.layers.{i}", f"layers_{i}"

            def norm(key, our, n=d):
                return TensorSpec(f"{h}.{key}.weight", (n,), (f"{ours}/{our}/scale",), "copy")
            if cfg.pre_norms:
                specs.append(norm(self.hf_norms["attn_norm"], "attn_norm"))
            att = f"{ours}/attn"
            if self.fused:
                specs += fused_specs(f"{h}.self_attn.qkv_proj",
                                     (f"{att}/q_proj", f"{att}/k_proj", f"{att}/v_proj"), d,
                                     (HK, NK, NK))
            else:
                for p, n in (("q", HK), ("k", NK), ("v", NK)):
                    specs += linear_specs(f"{h}.self_attn.{p}_proj", f"{att}/{p}_proj", d, n,
                                          qkv_b)
            specs += linear_specs(f"{h}.self_attn.o_proj", f"{att}/o_proj", HK, d, b)
            if cfg.qk_norm and cfg.qk_norm_scope == "head":
                specs += [norm("self_attn.q_norm", "attn/q_norm", K),
                          norm("self_attn.k_norm", "attn/k_norm", K)]
            elif cfg.qk_norm:
                specs += [norm("self_attn.q_norm", "attn/q_proj_norm", HK),
                          norm("self_attn.k_norm", "attn/k_proj_norm", NK)]
            if cfg.post_norms:
                specs.append(norm(self.hf_norms["attn_post_norm"], "attn_post_norm"))
            if cfg.pre_norms:
                specs.append(norm(self.hf_norms["mlp_norm"], "mlp_norm"))
            mlp = f"{ours}/mlp"
            if self.fused:
                specs += fused_specs(f"{h}.mlp.gate_up_proj", (f"{mlp}/gate_proj",
                                                                f"{mlp}/up_proj"), d, (F, F))
            else:
                specs += linear_specs(f"{h}.mlp.gate_proj", f"{mlp}/gate_proj", d, F, b)
                specs += linear_specs(f"{h}.mlp.up_proj", f"{mlp}/up_proj", d, F, b)
            specs += linear_specs(f"{h}.mlp.down_proj", f"{mlp}/down_proj", F, d, b)
            if cfg.post_norms:
                specs.append(norm(self.hf_norms["mlp_post_norm"], "mlp_post_norm"))
        specs.append(TensorSpec("model.norm.weight", (d,), ("final_norm/scale",), "copy"))
        return specs

    # --------------------------------------------------------------- GGUF
    def gguf_name(self, hf_name: str) -> str:
        if hf_name in GGUF_FIXED:
            return GGUF_FIXED[hf_name]
        _, _, i, *rest = hf_name.split(".")
        rest = ".".join(rest)
        for hf, gg in self.gguf_names:
            if rest.startswith(hf + "."):
                return f"blk.{i}.{gg}{rest[len(hf):]}"
        raise AssertionError(f"no GGUF name for {hf_name} in the {self.name} record")

    def _rows_permuted(self, gguf_name: str) -> bool:
        return self.gguf_permute and (".attn_q." in gguf_name or ".attn_k." in gguf_name)

    def from_gguf(self, gguf_name, a, cfg):
        if self._rows_permuted(gguf_name):
            return unpermute_rope_rows(a, cfg.n_heads if ".attn_q." in gguf_name
                                       else cfg.resolved_n_kv_heads)
        return a

    def to_gguf(self, gguf_name, a, cfg):
        if self._rows_permuted(gguf_name):
            return permute_rope_rows(a, cfg.n_heads if ".attn_q." in gguf_name
                                     else cfg.resolved_n_kv_heads)
        return a

    def gguf_config(self, meta: GGUFMeta) -> dict:
        """LLaMA-like metadata (llama.cpp's ``{arch}.*`` keys) as an HF config dict."""
        for key in ("expert_count", "expert_used_count"):
            if meta.get(key, 0):
                raise meta.refuse(key, meta.get(key), "mixture-of-experts models are not "
                                  "implemented")
        d, n_heads = int(meta.need("embedding_length")), int(meta.need("attention.head_count"))
        head_dim = int(meta.get("attention.key_length", d // n_heads))
        if int(meta.get("attention.value_length", head_dim)) != head_dim:
            raise meta.refuse("attention.value_length", meta.get("attention.value_length"),
                              "heads here have one head_dim (key_length)")
        rot = int(meta.get("rope.dimension_count", head_dim))
        if rot != head_dim:
            raise meta.refuse("rope.dimension_count", rot, f"RoPE rotates every coordinate of "
                              f"a head here ({head_dim})")
        tokens = meta.reader.fields.get("tokenizer.ggml.tokens")
        vocab = meta.get("vocab_size") or (len(tokens.data) if tokens else None)
        if vocab is None and "token_embd.weight" in meta.tensors:
            vocab = int(meta.tensors["token_embd.weight"].shape[1])
        if vocab is None:
            raise UserError(f"{meta.path}: no vocabulary size ({meta.arch}.vocab_size, "
                            f"tokenizer.ggml.tokens or token_embd.weight)")
        theta = float(meta.get("rope.freq_base", 10000.0))
        hf = {"model_type": self.model_type, "vocab_size": int(vocab), "hidden_size": d,
              "num_hidden_layers": int(meta.need("block_count")), "num_attention_heads": n_heads,
              "num_key_value_heads": int(meta.get("attention.head_count_kv", n_heads)),
              "head_dim": head_dim, "intermediate_size": int(meta.need("feed_forward_length")),
              "max_position_embeddings": int(meta.get("context_length", 2048)),
              "rms_norm_eps": float(meta.need("attention.layer_norm_rms_epsilon")),
              "hidden_act": "silu", "tie_word_embeddings": "output.weight" not in meta.tensors,
              "rope_parameters": self.gguf_rope(meta, theta, head_dim)}
        if self.bias == "both":
            hf["attention_bias"] = "blk.0.attn_q.bias" in meta.tensors
            hf["mlp_bias"] = "blk.0.ffn_up.bias" in meta.tensors
        return hf

    def gguf_rope(self, meta: GGUFMeta, theta: float, head_dim: int) -> dict:
        """The ``rope_parameters`` the file's RoPE keys (and ``rope_freqs``) describe."""
        kind = meta.get("rope.scaling.type", "none")
        if "rope_freqs.weight" in meta.tensors:  # Llama 3.1's scaling, as llama.cpp stores it
            orig = int(meta.get("rope.scaling.original_context_length", 8192))
            fit = rope.fit_llama3(meta.tensor("rope_freqs.weight"), head_dim, theta, orig)
            if fit is None:
                raise meta.refuse("rope_freqs", "tensor", "its frequency divisors follow no "
                                  "Llama 3 scaling (rope_type 'llama3'), the one read here")
            return {"rope_theta": theta, "rope_type": "llama3",
                    **{k: v for k, v in fit.record().items() if k != "kind"}}
        factor = meta.get("rope.scaling.factor")
        if kind in ("none", None) or (kind == "linear" and factor in (None, 0, 1.0)):
            return {"rope_type": "default", "rope_theta": theta}
        if kind == "linear":
            return {"rope_type": "linear", "rope_theta": theta, "factor": float(factor)}
        if kind == "yarn":  # llama.cpp's YaRN: cos, sin times attn_factor (1 + 0.1 ln factor)
            factor = float(meta.need("rope.scaling.factor"))
            return {"rope_type": "yarn", "rope_theta": theta, "factor": factor,
                    "original_max_position_embeddings": int(meta.get(
                        "rope.scaling.original_context_length", meta.need("context_length"))),
                    "beta_fast": float(meta.get("rope.scaling.yarn_beta_fast", 32.0)),
                    "beta_slow": float(meta.get("rope.scaling.yarn_beta_slow", 1.0)),
                    "attention_factor": float(meta.get("rope.scaling.attn_factor", 1.0))
                    * (1 + 0.1 * math.log(factor) if factor > 1 else 1.0)}
        raise meta.refuse("rope.scaling.type", kind, "of llama.cpp's scaled RoPEs linear, YaRN "
                          "and Llama 3's (rope_freqs) are read from a GGUF; load the model's "
                          "HF folder instead")

    def gguf_extra_tensors(self, cfg: ModelConfig) -> dict:
        s = cfg.rope_scaling
        if s is not None and s.kind == "llama3":
            return {"rope_freqs.weight": rope.llama3_factors(cfg.resolved_head_dim,
                                                             cfg.rope_theta, s).astype(np.float32)}
        return {}

    def gguf_metadata(self, cfg: ModelConfig) -> dict:
        K = cfg.resolved_head_dim
        meta = {"block_count": cfg.n_layers, "context_length": cfg.max_seq_len,
                "embedding_length": cfg.d_model, "feed_forward_length": cfg.d_ff,
                "attention.head_count": cfg.n_heads,
                "attention.head_count_kv": cfg.resolved_n_kv_heads,
                "attention.key_length": K, "attention.value_length": K,
                "rope.dimension_count": K, "rope.freq_base": cfg.rope_theta,
                "attention.layer_norm_rms_epsilon": cfg.norm_eps, "vocab_size": cfg.vocab_size}
        s = cfg.rope_scaling
        if s is not None and s.kind == "linear":
            meta.update({"rope.scaling.type": "linear", "rope.scaling.factor": s.factor})
        elif s is not None and s.kind == "yarn" and s.truncate:
            meta.update({"rope.scaling.type": "yarn", "rope.scaling.factor": s.factor,
                         "rope.scaling.original_context_length":
                             s.original_max_position_embeddings,
                         "rope.scaling.yarn_beta_fast": s.beta_fast,
                         "rope.scaling.yarn_beta_slow": s.beta_slow,
                         "rope.scaling.attn_factor": s.attention_factor / (
                             1 + 0.1 * math.log(s.factor) if s.factor > 1 else 1.0)})
        elif s is not None and s.kind != "llama3":
            raise UserError(f"a {self.name} GGUF cannot hold RoPE scaling {s.kind!r} here "
                            f"(llama.cpp's files hold linear, YaRN with truncation and Llama 3's)")
        return meta

    # --------------------------------------------------------------- presets
    def presets(self) -> dict[str, ModelConfig]:
        from bornbiased_jax.architectures.llama_presets import presets

        return presets()
