"""The architecture record: everything the toolkit knows of one model family, in one class.

An :class:`Architecture` says, for its family:

  * its HF ``model_type`` and causal-LM class, and the ``config.json`` keys it knows: those it
    maps onto a :class:`~bornbiased_jax.config.ModelConfig` (``reads``) and those it knows do
    not change the forward pass (``ignores``, with :data:`GENERIC_IGNORED`); any other key is
    refused naming the key and the family (:meth:`Architecture.config`), since it might;
  * the other way, whether its HF class computes a given config (:meth:`differences`) and the
    ``config.json`` that says so (:meth:`to_hf`);
  * its tensor names and layouts (:meth:`tensor_specs`, :class:`~bornbiased_jax.hf.names.TensorSpec`),
    fused projections included;
  * its llama.cpp GGUF architecture: the metadata keys read (:meth:`gguf_config`), tensor names
    (:meth:`gguf_name`), the fix-ups between a GGUF tensor and an HF one both ways
    (:meth:`from_gguf`, :meth:`to_gguf`) and what a converter writes (:meth:`gguf_metadata`);
  * its presets (:meth:`presets`).

Families register in :mod:`bornbiased_jax.architectures`; nothing else in the toolkit names one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bornbiased_jax.architectures.rope_config import refuse
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.architectures.tensors import TensorSpec

# Keys every transformers config may carry that do not change the forward pass: bookkeeping,
# token ids, generation defaults (transformers < 5 saved them in config.json), output switches
# and training-time dropouts.
GENERIC_IGNORED = frozenset({
    "_name_or_path", "name_or_path", "transformers_version", "torch_dtype", "dtype",
    "use_cache", "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id",
    "decoder_start_token_id", "output_attentions", "output_hidden_states", "return_dict",
    "id2label", "label2id", "num_labels", "problem_type", "finetuning_task", "tokenizer_class",
    "prefix", "task_specific_params", "chunk_size_feed_forward", "torchscript",
    "use_bfloat16", "tf_legacy_loss", "auto_map", "_attn_implementation",
    "attn_implementation", "_commit_hash", "xla_device", "is_decoder",
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams",
    "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p", "typical_p",
    "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
    "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens",
    "begin_suppress_tokens", "architectures", "model_type", "initializer_range",
    "attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "classifier_dropout", "cache_implementation"})
# Keys accepted only with this value (or absent): other values change what the model is.
GENERIC_FIXED = {"is_encoder_decoder": False, "add_cross_attention": False,
                 "tie_encoder_decoder": False, "cross_attention_hidden_size": None,
                 "pruned_heads": {}}
# HF activation names (transformers' ACT2FN) -> ours. gelu_new and gelu_pytorch_tanh are the
# same tanh approximation (one in Python, one in torch); "gelu" is the exact erf form.
ACT_FROM_HF = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu",
               "relu": "relu", "silu": "silu", "swish": "silu", "tanh": "tanh"}
ACT_TO_HF = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu", "silu": "silu",
             "tanh": "tanh"}
_MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size",
             "num_experts_per_tok")


class Architecture:
    """One model family (see the module docstring). Subclasses set the class attributes and
    implement :meth:`fields`, :meth:`differences`, :meth:`to_hf` and :meth:`tensor_specs`; a
    family without a GGUF reader leaves ``gguf_arch`` None."""

    name: str = ""  # the family, as the registry and --help name it
    model_type: str = ""  # HF config.json model_type
    hf_class: str = ""  # HF causal-LM class (config.json "architectures")
    what: str = ""  # what the family adds, one line for docs and errors
    reads: frozenset = frozenset()  # config keys mapped onto ModelConfig
    ignores: frozenset = frozenset()  # family keys that do not change the forward pass
    fixed: dict = {}  # family keys accepted with one value only
    base_prefix = "model."  # checkpoints saved from the base model lack it
    embed_name = "model.embed_tokens.weight"
    head_alias: str | None = None  # another name of lm_head.weight in some checkpoints
    gguf_arch: str | None = None  # llama.cpp general.architecture, or None: not read
    gguf_as: str | None = None  # the GGUF architecture its files are written as, when another's
    gguf_consumed: tuple = ()  # GGUF tensors the config reads (RoPE factors), not weights
    relatives: dict = {}  # GGUF architectures of related families refused, and how they differ
    gguf_spm_tokenizer = False  # its GGUF SentencePiece vocabulary is rebuilt (merge order known)

    # ------------------------------------------------------------ HF config.json -> ModelConfig
    def config(self, d: dict, name: str | None = None) -> ModelConfig:
        """The :class:`ModelConfig` of an HF config dict of this family; a UserError naming
        the key and the family for anything it cannot represent."""
        self.check_keys(d)
        try:
            return ModelConfig(name=name or f"hf-{self.model_type}", shared_embedding=False,
                               architecture=self.name, **self.fields(d))
        except UserError:
            raise
        except (TypeError, ValueError, ZeroDivisionError) as e:
            raise UserError(f"config.json describes no valid {self.name} model: {e}") from None

    def check_keys(self, d: dict) -> None:
        q = d.get("quantization_config")
        if q:
            method = q.get("quant_method", "?") if isinstance(q, dict) else q
            raise refuse(self.name, "quantization_config", method, "quantised weights; use an "
                         "unquantised float16/bfloat16/float32 checkpoint")
        for k in _MOE_KEYS:
            if d.get(k):
                raise refuse(self.name, k, d[k], "mixture-of-experts models are not implemented")
        archs = d.get("architectures") or [self.hf_class]
        if list(archs) != [self.hf_class]:
            raise refuse(self.name, "architectures", archs, f"a {self.model_type} checkpoint "
                         f"must be [{self.hf_class!r}] (a causal LM with its head)")
        for k, want in {**GENERIC_FIXED, **self.fixed}.items():
            if k in d and d[k] != want and not (want in (None, {}) and not d[k]):
                raise refuse(self.name, k, d[k], f"only {want!r} is implemented")
        known = self.reads | self.ignores | GENERIC_IGNORED | set(GENERIC_FIXED) | set(self.fixed)
        unknown = sorted(k for k in d if k not in known)
        if unknown:
            raise UserError(
                f"config.json: key {unknown[0]!r} is not one the {self.name} architecture record "
                f"knows ({self.hf_class}); it may change the forward pass, so the model is "
                f"refused" + (f" (also unknown: {', '.join(unknown[1:6])})" if unknown[1:] else "")
                + f". Known keys: {', '.join(sorted(self.reads))}")

    def fields(self, d: dict) -> dict:
        """ModelConfig's fields (all but name, shared_embedding, architecture) of ``d``."""
        raise NotImplementedError

    # ------------------------------------------------------------ ModelConfig -> HF config.json
    def differences(self, cfg: ModelConfig) -> list[str]:
        """Why this family's HF class does not compute what ``cfg`` computes ([] when it
        does)."""
        raise NotImplementedError

    def to_hf(self, cfg: ModelConfig) -> dict:
        """The family's config.json fields for ``cfg`` (which :meth:`differences` accepts),
        without the common head (architectures, model_type, vocab_size, token ids, ...)."""
        raise NotImplementedError

    # ------------------------------------------------------------ tensors
    def tensor_specs(self, cfg: ModelConfig) -> list[TensorSpec]:
        """Every tensor of a checkpoint of ``cfg`` but the untied head, in checkpoint order."""
        raise NotImplementedError

    # ------------------------------------------------------------ GGUF
    def gguf_config(self, meta: "GGUFMeta") -> dict:
        """The HF config dict a GGUF file's metadata describes (``meta``: its reader)."""
        raise UserError(f"{meta.path}: general.architecture={meta.arch!r} is not read here")

    def gguf_name(self, hf_name: str) -> str:
        """The GGUF tensor name of an HF tensor name of this family."""
        raise NotImplementedError

    def from_gguf(self, gguf_name: str, a: np.ndarray, cfg: ModelConfig) -> np.ndarray:
        """A GGUF tensor as the HF tensor of the same name holds it (converter fix-ups undone)."""
        return a

    def to_gguf(self, gguf_name: str, a: np.ndarray, cfg: ModelConfig) -> np.ndarray:
        """An HF tensor as llama.cpp's converter writes it (the inverse of :meth:`from_gguf`)."""
        return a

    def gguf_extra_tensors(self, cfg: ModelConfig) -> dict[str, np.ndarray]:
        """Tensors a converter writes beside the weights (RoPE factors), which the config
        reads back: {GGUF name: array}."""
        return {}

    def gguf_metadata(self, cfg: ModelConfig) -> dict[str, Any]:
        """The ``{arch}.*`` metadata a converter writes for ``cfg`` (keys without the prefix)."""
        raise NotImplementedError

    # ------------------------------------------------------------ presets
    def presets(self) -> dict[str, ModelConfig]:
        """The family's named presets (sizes of the paper, released shapes, test sizes)."""
        return {}


def activation(d: dict, family: str, key: str, default: str) -> str:
    """Our activation of config key ``key`` (HF's name), or a UserError naming key and family."""
    act = d.get(key, default)
    if act not in ACT_FROM_HF:
        raise refuse(family, key, act, f"supported activations: {sorted(ACT_FROM_HF)}")
    return ACT_FROM_HF[act]


def linear_specs(hf: str, ours: str, d_in: int, d_out: int, bias: bool) -> list[TensorSpec]:
    """A torch Linear (out, in) and its bias, as our kernel (in, out) and bias."""
    specs = [TensorSpec(f"{hf}.weight", (d_out, d_in), (f"{ours}/kernel",), "transpose")]
    if bias:
        specs.append(TensorSpec(f"{hf}.bias", (d_out,), (f"{ours}/bias",), "copy"))
    return specs


def fused_specs(hf: str, ours: tuple[str, ...], d_in: int, sizes: tuple[int, ...]
                ) -> list[TensorSpec]:
    """One torch Linear whose output rows are several of our kernels in turn (Phi-3's
    ``qkv_proj`` = [q | k | v], ``gate_up_proj`` = [gate | up]), split on load, joined on save."""
    return [TensorSpec(f"{hf}.weight", (sum(sizes), d_in), tuple(f"{o}/kernel" for o in ours),
                       "rows", sizes=tuple(sizes))]


class GGUFMeta:
    """A GGUF file's metadata as one architecture reads it: :meth:`get` and :meth:`need` of the
    ``{arch}.*`` keys (a missing needed key is a UserError naming it and the family), the tensor
    names, and :meth:`tensor` to decode a small tensor that the config reads (RoPE factors)."""

    def __init__(self, path, reader, arch: str, family: str):
        from bornbiased_jax.hf.gguf_reader import field

        self.path, self.reader, self.arch, self.family = path, reader, arch, family
        self._field = field
        self.tensors = {t.name: t for t in reader.tensors}

    def get(self, key: str, default=None):
        return self._field(self.reader, f"{self.arch}.{key}", default)

    def raw(self, key: str, default=None):
        return self._field(self.reader, key, default)

    def need(self, key: str):
        v = self.get(key)
        if v is None:
            raise UserError(f"{self.path}: metadata key {self.arch}.{key} is missing; a "
                            f"{self.arch} GGUF ({self.family} architecture record) needs it")
        return v

    def refuse(self, key: str, value, why: str) -> UserError:
        return UserError(f"{self.path}: {self.arch}.{key}={value!r} is not supported by the "
                         f"{self.family} architecture record: {why}")

    def tensor(self, name: str) -> np.ndarray:
        from bornbiased_jax.hf.gguf_reader import dequantized

        return dequantized(self.path, self.tensors[name])
