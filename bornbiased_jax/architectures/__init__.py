"""The model families, one record each, registered here: the only place the toolkit names a
family. Each record (``base``'s ``Architecture``) owns its HF ``model_type`` and class, the
config keys it reads or knowingly ignores, its tensor names both ways, its llama.cpp GGUF
architecture (metadata keys, tensor names, converter fix-ups) and its presets;
``hf/configs.py``, ``hf/names.py``, ``hf/gguf.py`` and ``presets.py`` iterate :data:`FAMILIES`.

  ===========  =================  =========  =============================================
  family       HF class           GGUF       what it adds
  ===========  =================  =========  =============================================
  ``gpt2``     GPT2LMHeadModel    -          LayerNorm, learned positions, fused Conv1D
  ``gpt_neox`` GPTNeoXForCausalLM -          the paper's GPT-2 with RoPE (gpt2-rope-*)
  ``llama``    LlamaForCausalLM   llama      RMSNorm, RoPE (Llama 3's scaling), SwiGLU, GQA
  ``qwen2``    Qwen2ForCausalLM   qwen2      biases on Q, K, V; sliding-window layers
  ``qwen3``    Qwen3ForCausalLM   qwen3      QK-norm per head, no biases
  ``mistral``  MistralForCausalLM as llama   a sliding window on every layer
  ``phi3``     Phi3ForCausalLM    phi3       fused qkv / gate_up projections, LongRoPE
  ``olmo2``    Olmo2ForCausalLM   olmo2      norms after the sublayers, QK-norm over the
                                             whole projection
  ``gemma3``   Gemma3ForCausalLM  gemma3     QK-norm, sandwich (1 + w) norms, sqrt(d)
                                             embeddings, local / global layers
  ===========  =================  =========  =============================================

Modules: ``base`` (the record: config keys, checks, tensor and GGUF hooks), ``tensors`` (the
layouts between an HF tensor and our parameters), ``rope_config`` (RoPE in config.json files),
``sizes`` (the zoo's sizes), one module per family (the table's names; the LLaMA family's
presets in ``llama_presets``), and this registry.
Adding a family is one new module (a subclass of the closest record, as ``qwen3`` of
``qwen2``), one line in :data:`FAMILIES`, its fixture (``tests/fixtures/make_hf_fixtures.py``)
and its presets; docs/hf.md walks through OLMo 2's.
"""

from __future__ import annotations

from bornbiased_jax.architectures.base import Architecture
from bornbiased_jax.architectures.gemma3 import Gemma3
from bornbiased_jax.architectures.gpt2 import GPT2
from bornbiased_jax.architectures.gpt_neox import GPTNeoX
from bornbiased_jax.architectures.llama import Llama
from bornbiased_jax.architectures.mistral import Mistral
from bornbiased_jax.architectures.olmo2 import Olmo2
from bornbiased_jax.architectures.phi3 import Phi3
from bornbiased_jax.architectures.qwen2 import Qwen2
from bornbiased_jax.architectures.qwen3 import Qwen3
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError

# In the order an export tries them: where two families compute the same function (LLaMA and
# Mistral without a window), the first one that does is written, unless the config names its
# own (``ModelConfig.architecture``: the family a checkpoint was read from).
FAMILIES: tuple[Architecture, ...] = (GPT2(), GPTNeoX(), Llama(), Qwen2(), Qwen3(), Mistral(),
                                      Phi3(), Olmo2(), Gemma3())
REGISTRY: dict[str, Architecture] = {a.name: a for a in FAMILIES}


def get(name: str) -> Architecture:
    """The family ``name``; a UserError listing the registered ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise UserError(f"unknown architecture family {name!r}; registered: "
                        f"{', '.join(REGISTRY)}") from None


def by_model_type(model_type) -> Architecture:
    """The family of an HF ``model_type``; a UserError listing those supported."""
    for a in FAMILIES:
        if a.model_type == model_type:
            return a
    for a in FAMILIES:  # a multimodal sibling of a text family (Gemma 3's gemma3)
        if model_type == a.gguf_arch and a.model_type != model_type:
            both = a.hf_class.replace("ForCausalLM", "ForConditionalGeneration")
            raise UserError(f"config.json: model_type={model_type!r} ({both}, text and vision) "
                            f"is not supported; only the text decoder, model_type "
                            f"{a.model_type!r} ({a.hf_class}, as its text-only checkpoints are "
                            f"saved)")
    raise UserError(f"config.json: model_type={model_type!r} is not supported; supported: "
                    + ", ".join(f"{a.model_type} ({a.hf_class})" for a in FAMILIES))


def by_gguf(arch, path="") -> Architecture:
    """The family reading GGUF files of llama.cpp architecture ``arch``; a UserError naming
    it, and how it differs from a family here where a record knows."""
    for a in FAMILIES:
        if a.gguf_arch == arch:
            return a
    supported = ", ".join(a.gguf_arch for a in FAMILIES if a.gguf_arch)
    written_as = {a.name: a.gguf_as for a in FAMILIES if getattr(a, "gguf_as", None)}
    for a in FAMILIES:
        why = getattr(a, "relatives", {}).get(arch)
        if why:
            raise UserError(f"{path}: general.architecture={arch!r} is not supported; "
                            f"supported: {supported} ({arch} differs from {a.gguf_arch}: {why})")
    note = "".join(f"; {n} files are written as {g!r}" for n, g in written_as.items())
    raise UserError(f"{path}: general.architecture={arch!r} is not supported; supported: "
                    f"{supported}{note}")


def of_config(cfg: ModelConfig) -> Architecture:
    """The family whose HF class computes exactly what ``cfg`` computes: the config's own
    (``cfg.architecture``) when it does, else the first of :data:`FAMILIES` that does; a
    UserError naming what the closest family lacks otherwise."""
    general = _general_differences(cfg)
    if cfg.architecture in REGISTRY and not general \
            and not REGISTRY[cfg.architecture].differences(cfg):
        return REGISTRY[cfg.architecture]
    found = {a.name: a.differences(cfg) for a in FAMILIES}
    if not general:
        for a in FAMILIES:
            if not found[a.name]:
                return a
    fewest = min(len(v) for v in found.values())
    closest = [a for a in FAMILIES if len(found[a.name]) == fewest]
    why = general + [f"the closest family, {a.name} ({a.hf_class}): " + "; ".join(found[a.name])
                     for a in closest if found[a.name]]
    raise UserError(f"model {cfg.name!r} cannot be exported to an HF architecture: "
                    + "; ".join(why))


def _general_differences(cfg: ModelConfig) -> list[str]:
    """What no HF family computes: the paper's ablations and Sec. 6.2's variants."""
    from bornbiased_jax.architectures.base import ACT_TO_HF

    why = []
    if cfg.block != "attn_mlp" or cfg.attention != "softmax" or not cfg.residual:
        why.append("HF decoders have softmax attention and MLP in every residual block")
    if cfg.attn_output_transform != "none":
        why.append(f"attn_output_transform={cfg.attn_output_transform!r} has no HF counterpart")
    if cfg.attn_output_gate:
        why.append("the attention output gate (attn_output_gate) has no HF counterpart")
    if cfg.activation not in ACT_TO_HF:
        why.append(f"activation {cfg.activation!r} has no HF name")
    if cfg.norm == "none":
        why.append("norm='none': every HF family has norms")
    return why


def presets() -> dict[str, ModelConfig]:
    """Every family's presets, in family order."""
    out: dict[str, ModelConfig] = {}
    for a in FAMILIES:
        for name, cfg in a.presets().items():
            if name in out:
                raise AssertionError(f"preset {name!r} is defined twice")
            out[name] = cfg
    return out


def table() -> list[dict]:
    """One row per family: name, HF model_type and class, GGUF architecture, what it adds."""
    return [{"family": a.name, "model_type": a.model_type, "hf_class": a.hf_class,
             "gguf": a.gguf_arch or (f"as {a.gguf_as}" if getattr(a, "gguf_as", None) else "-"),
             "what": a.what} for a in FAMILIES]
