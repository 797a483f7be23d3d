"""Model configuration: one frozen dataclass for every decoder in the zoo (the named presets are
:mod:`bornbiased_jax.presets`).

Ablations are the same config with flags changed via :meth:`ModelConfig.ablate`, so a variant
is always a small, named delta.

The fields also describe released checkpoints (the families of :mod:`bornbiased_jax.architectures`):
grouped-query attention (``n_kv_heads``), an explicit head size (``head_dim``), the RoPE base
and its scaling (:class:`RopeScaling`), norm epsilon, tied or untied LM head, Q/K/V biases,
GPT-2's biases everywhere, learned absolute positions, QK-norm per head or over the whole
projection, norms before and/or after each sublayer, and each layer's attention type
(``layer_types``: full or sliding window).
"""

from __future__ import annotations

import dataclasses
from typing import Literal, Sequence

from bornbiased_jax.config_checks import (FULL, SLIDING, Activation, Attention,  # noqa: F401
                                          Block, LayerType, Norm, OutputTransform, Position,
                                          QKNormScope, positive_int, validate)
from bornbiased_jax.rope import RopeScaling

@dataclasses.dataclass(frozen=True, eq=False)
class ModelConfig:
    """A decoder-only transformer, pre-norm, as in paper Sec. 2.1.

    Attributes:
      name: preset name, for reports.
      vocab_size: |V|.
      d_model: hidden size d.
      n_layers: number of blocks L.
      n_heads: attention (query) heads h; must divide d_model unless ``head_dim`` is given.
      n_kv_heads: key/value heads; None means n_heads (multi-head attention). Fewer heads give
        grouped-query attention (GQA; 1 is multi-query attention, MQA): each K/V head serves
        n_heads / n_kv_heads query heads, so it must divide n_heads. The value in use is
        :attr:`resolved_n_kv_heads`.
      head_dim: d_k, the size of one head; None means d_model // n_heads. Given explicitly, Q
        has n_heads * head_dim columns, which need not equal d_model. The value in use is
        :attr:`resolved_head_dim`.
      d_ff: MLP hidden size d_MLP (for gated MLPs, the width of gate and up projections).
      max_seq_len: largest T accepted by ``forward``; also the T of the sqrt(i/T) transform.
      block: which sublayers a block has (the ablation of Sec. 4.1).
      attention: softmax attention or the paper's Attn0 simplification.
      activation: MLP nonlinearity phi.
      gated_mlp: phi(x W_gate) * (x W_up) then W_down (SwiGLU when activation="silu").
      norm: pre-sublayer and final normalisation; "none" removes all of them.
      residual: whether sublayers add to the residual stream (False gives Y = sublayer(X)).
      position: rotary, learned absolute (GPT-2's ``wpe``) or none.
      rope_theta: RoPE base (10,000 in LLaMA-2; 1,000,000 in Qwen2).
      linear_bias: biases on every linear layer and LayerNorm shift (GPT-2 style).
      qkv_bias: biases on the Q, K, V projections only (Qwen2 style).
      tie_embeddings: W_U = W_E^T (paper Eq. 1).
      init_std: std of embeddings and linear weights (App. B.1: N(0, 0.02), read as std 0.02).
      scale_residual_init: W_O and W_down get std init_std / sqrt(2L) (App. B.1, GPT-2).
      norm_eps: epsilon of LayerNorm / RMSNorm.
      shared_embedding: embeddings (and LM head, positions) are drawn from the ``embed`` rng
        stream, whose key comes from ``embed_seed`` and is the same for every model seed
        (paper footnote 2, App. B.2); False derives that key from the model seed, so every
        parameter depends on it.
      embed_seed: the seed of the shared embedding key.
      attn_output_transform: per-head transform of the attention output (Sec. 6.2.1); softmax
        attention only (Attn0 and MLP-only blocks have no heads to transform).
      attn_output_gate: NOT from the paper: a sigmoid output gate o_i <- sigma(x_i W_g) * o_i,
        element-wise per head, W_g (d, H K) ~ N(0, init_std^2), applied after the transform
        (the gate recent LLMs put after attention against attention sinks); softmax only.
      attn_output_gate_bias: a bias b_g (H K,) on the gate, initialised to 0; needs the gate.
      qk_norm: RMS-normalise queries and keys before RoPE (Gemma 3, Qwen3: each head over its
        K coordinates; OLMo 2: the whole projection, ``qk_norm_scope``); needs norm="rmsnorm".
      qk_norm_scope: "head" (one gain (K,) shared by the heads) or "projection" (one gain
        (H K,) for q and (N K,) for k, the RMS taken over all heads at once).
      pre_norms: normalise each sublayer's input (the pre-norm block of Sec. 2.1); False with
        ``post_norms`` is OLMo 2's block, H = X + Norm(MHA(X)), norms after the sublayers only.
      post_norms: the attention's and the MLP's outputs are normalised before they join the
        residual (with ``pre_norms``, Gemma 2 and 3's sandwich norms: H = X + Norm(MHA(Norm(X)))).
      norm_unit_offset: every norm (and the QK-norm) multiplies by (1 + w), w initialised to
        0 (Gemma's convention; HF checkpoints store w, GGUF files 1 + w); False: by w, = 1.
      embed_scale: token embeddings are multiplied by sqrt(d_model) on input (Gemma); the tied
        unembedding reads the unscaled matrix.
      query_pre_attn_scalar: attention logits are q k^T / sqrt(query_pre_attn_scalar); None
        means head_dim (Gemma 3 sets it explicitly, equal to head_dim).
      sliding_window: W, the keys a sliding-window layer sees: query i attends to keys j with
        i - W < j <= i. None: every layer attends to the whole prefix.
      layer_types: each layer's attention, "full_attention" or "sliding_attention" (gemma's
        ``attention_types``, HF's ``layer_types``); None: every layer sliding when a window is
        given (Mistral), every layer full otherwise. A tuple of all one type is stored as None.
        Gemma 3's five sliding layers then one full is ``gemma3_layer_types(L, 6)``; the period
        of such a pattern is the derived :attr:`sliding_window_pattern`.
      rope_local_theta: the RoPE base of the sliding-window layers (Gemma 3: 10,000, while
        ``rope_theta`` = 1,000,000 serves the global ones); None: ``rope_theta``.
      rope_scaling: a scaled RoPE (:class:`RopeScaling`: Llama 3's, YaRN, LongRoPE, linear,
        dynamic) of the layers that use ``rope_theta``; None: unscaled.
      architecture: the family record (``bornbiased_jax.architectures``) that read this model
        from a checkpoint, or whose preset it is, so that an export writes it in that family's
        format (Phi-3's fused projections) when several families compute the same function;
        None: the first family that computes it. Not part of equality: it names a storage
        format, not a function.
      unembed: False ends the program at Norm_final (``model.head_free``): no W_U built or
        read, logits None, ``tie_embeddings`` ignored by equality and hashing (one program).

    The fields hold what was given: ``head_dim`` and ``n_kv_heads`` stay None when left out, and
    the properties ``resolved_head_dim`` and ``resolved_n_kv_heads`` derive the values in use
    from the current fields, so ``dataclasses.replace(cfg, d_model=128, n_heads=4)`` and
    ``ablate(n_heads=8)`` get d_model // n_heads. Equality and hashing compare the resolved
    values: a config that spells out the derived values (as run.json files written before
    this distinction do) equals one that leaves them None.
    """

    name: str
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_seq_len: int
    n_kv_heads: int | None = None
    head_dim: int | None = None
    block: Block = "attn_mlp"
    attention: Attention = "softmax"
    activation: Activation = "gelu"
    gated_mlp: bool = False
    norm: Norm = "layernorm"
    residual: bool = True
    position: Position = "rope"
    rope_theta: float = 10000.0
    linear_bias: bool = True
    qkv_bias: bool = False
    tie_embeddings: bool = True
    init_std: float = 0.02
    scale_residual_init: bool = True
    norm_eps: float = 1e-5
    shared_embedding: bool = True
    embed_seed: int = 0
    attn_output_transform: OutputTransform = "none"
    attn_output_gate: bool = False
    attn_output_gate_bias: bool = False
    qk_norm: bool = False
    post_norms: bool = False
    norm_unit_offset: bool = False
    embed_scale: bool = False
    query_pre_attn_scalar: float | None = None
    sliding_window: int | None = None
    rope_local_theta: float | None = None
    unembed: bool = True
    layer_types: tuple[LayerType, ...] | None = None
    rope_scaling: RopeScaling | None = None
    qk_norm_scope: QKNormScope = "head"
    pre_norms: bool = True
    architecture: str | None = None

    def __post_init__(self):
        # Records (JSON) give lists and dicts: held as a tuple and a RopeScaling.
        if isinstance(self.rope_scaling, dict):
            object.__setattr__(self, "rope_scaling", RopeScaling(**self.rope_scaling))
        if isinstance(self.layer_types, list):
            object.__setattr__(self, "layer_types", tuple(self.layer_types))
        validate(self)
        types = self.layer_types  # all one type: None says it (see the docstring), where it
        if types is not None and (set(types) == {SLIDING} or (  # means the same
                set(types) == {FULL} and self.sliding_window is None)):
            object.__setattr__(self, "layer_types", None)

    # Derived values -------------------------------------------------------------------------
    @property
    def resolved_head_dim(self) -> int:
        """d_k, the size of one head: ``head_dim``, or d_model // n_heads when it is None."""
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def resolved_n_kv_heads(self) -> int:
        """Key/value heads: ``n_kv_heads``, or n_heads when it is None."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def n_groups(self) -> int:
        """Query heads per key/value head, G = n_heads / n_kv_heads (1 without GQA)."""
        return self.n_heads // self.resolved_n_kv_heads

    @property
    def has_attn(self) -> bool:
        return self.block in ("attn_mlp", "attn_only")

    @property
    def has_mlp(self) -> bool:
        return self.block in ("attn_mlp", "mlp_only")

    @property
    def has_attn_params(self) -> bool:
        return self.has_attn and self.attention == "softmax"

    def is_sliding(self, layer: int) -> bool:
        """Whether block ``layer`` (0-based) attends through the sliding window."""
        if self.sliding_window is None:
            return False
        return self.layer_types is None or self.layer_types[layer] == SLIDING

    @property
    def attention_types(self) -> tuple[LayerType, ...]:
        """Every layer's attention type (``layer_types`` with None spelled out)."""
        return tuple(SLIDING if self.is_sliding(i) else FULL for i in range(self.n_layers))

    @property
    def sliding_window_pattern(self) -> int | None:
        """Derived from ``layer_types``: 1 when no layer slides; k when layer l is full exactly
        where (l + 1) is a multiple of k >= 2 (Gemma 3: 6; records made before ``layer_types``
        stored this number); None for any other arrangement (every layer sliding included)."""
        if self.sliding_window is None:
            return 1
        if self.layer_types is None:
            return None
        k = self.layer_types.index(FULL) + 1
        return k if self.layer_types == gemma3_layer_types(self.n_layers, k) else None

    def relayered(self, origin: Sequence[int | None]) -> "ModelConfig":
        """This config with ``len(origin)`` layers, layer j a copy of layer ``origin[j]`` (its
        attention type kept) or, where ``origin[j]`` is None, a new full-attention layer: the
        config of a depth edit (layers dropped, inserted, stacked)."""
        types = tuple(FULL if o is None else self.attention_types[o] for o in origin)
        if SLIDING not in types:  # no window left
            return dataclasses.replace(self, n_layers=len(origin), layer_types=None,
                                       sliding_window=None, rope_local_theta=None)
        return dataclasses.replace(self, n_layers=len(origin), layer_types=types)

    def layer_window(self, layer: int) -> int | None:
        """W of block ``layer``: ``sliding_window`` on a sliding layer, None on a global one."""
        return self.sliding_window if self.is_sliding(layer) else None

    def layer_rope_theta(self, layer: int) -> float:
        """The RoPE base of block ``layer``: ``rope_local_theta`` on a sliding layer (when
        given), else ``rope_theta``."""
        return self.layer_rope(layer)[0]

    def layer_rope(self, layer: int) -> tuple[float, "RopeScaling | None"]:
        """(base, scaling) of block ``layer``'s RoPE: a sliding layer with its own base
        (``rope_local_theta``) is unscaled; every other layer has ``rope_theta`` and
        ``rope_scaling`` (Gemma 3's larger models scale their global layers only)."""
        if self.is_sliding(layer) and self.rope_local_theta is not None:
            return self.rope_local_theta, None
        return self.rope_theta, self.rope_scaling

    @property
    def attn_scalar(self) -> float:
        """The d in the attention logits' q k^T / sqrt(d): query_pre_attn_scalar or head_dim."""
        if self.query_pre_attn_scalar is None:
            return self.resolved_head_dim
        return self.query_pre_attn_scalar

    @property
    def residual_std(self) -> float:
        """std of W_O and W_down: 0.02 / sqrt(2L) under GPT-2 scaling (App. B.1)."""
        if self.scale_residual_init:
            return self.init_std / (2 * self.n_layers) ** 0.5
        return self.init_std

    def ablate(self, **changes) -> "ModelConfig":
        """A copy with ``changes`` applied and the name suffixed with them."""
        suffix = ",".join(f"{k}={v}" for k, v in sorted(changes.items()))
        return dataclasses.replace(self, name=f"{self.name}[{suffix}]", **changes)

    def _key(self) -> tuple:
        """The fields, with ``head_dim`` and ``n_kv_heads`` resolved: what equality compares
        (``unembed`` only when False, and then not ``tie_embeddings``: there is no head)."""
        resolved = {"head_dim": self.resolved_head_dim, "n_kv_heads": self.resolved_n_kv_heads,
                    **({} if self.unembed else {"tie_embeddings": None})}
        return tuple(resolved.get(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)
                     if (f.name != "unembed" or not self.unembed) and f.name != "architecture")

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def gemma3_layer_types(n_layers: int, k: int) -> tuple[LayerType, ...]:
    """k - 1 sliding layers then one full, repeated over ``n_layers`` (Gemma 3: k = 6; gemma's
    ``make_attention_layers_types``); k = 1: every layer full."""
    return tuple(FULL if (i + 1) % k == 0 else SLIDING for i in range(n_layers))


# What a descendant keeps whatever its widths, depths and vocabulary: the architecture family
# (lineage tests compare models of one family only:
# ``fingerprint.runner.compare.check_pair``). A new architecture's switches belong here.
FAMILY_FIELDS = ("block", "attention", "norm", "activation", "gated_mlp", "position",
                 "linear_bias", "qkv_bias", "attn_output_transform", "attn_output_gate",
                 "qk_norm", "post_norms", "norm_unit_offset", "embed_scale", "qk_norm_scope",
                 "pre_norms")


def family(cfg: ModelConfig) -> dict:
    """The fields of ``cfg`` that make its architecture family (:data:`FAMILY_FIELDS`)."""
    return {f: getattr(cfg, f) for f in FAMILY_FIELDS}
