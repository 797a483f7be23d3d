"""Model configuration: one frozen dataclass for every decoder in the zoo (the named presets are
:mod:`bornbiased_jax.presets`).

Ablations are the same config with flags changed via :meth:`ModelConfig.ablate`, so a variant
is always a small, named delta.

The fields also describe released checkpoints (GPT-2, LLaMA-2, Qwen2, Gemma 3): grouped-query attention
(``n_kv_heads``), an explicit head size (``head_dim``), the RoPE base, norm epsilon, tied or
untied LM head, Q/K/V biases, GPT-2's biases everywhere and learned absolute positions.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from bornbiased_jax.errors import UserError

Activation = Literal["relu", "gelu", "gelu_tanh", "tanh", "silu"]
Norm = Literal["layernorm", "rmsnorm", "none"]
Block = Literal["attn_mlp", "attn_only", "mlp_only"]
# "softmax" is standard causal self-attention. "attn0_causal" / "attn0_full" are the paper's
# Attn0 (Definition 3): uniform weights and identity W_V, W_O, i.e. the causal running average
# o_i = (1/i) sum_{j<=i} x_j, or the full average over the sequence at every position.
Attention = Literal["softmax", "attn0_causal", "attn0_full"]
Position = Literal["rope", "learned", "none"]
# Per-head transform of the aggregated attention output o_i (before W_O), paper Sec. 6.2.1:
# "sqrt_i" multiplies o_i by sqrt(i) (positional amplification), "sqrt_i_over_T" by sqrt(i/T)
# with T = max_seq_len (positional attenuation), "headwise_rmsnorm" RMS-normalises each head's
# o_i and multiplies it by a learned per-head scale gamma (H, K) initialised to 1 (the companion
# paper's head-wise RMSNorm; that paper gives no formula, so this form is our reading).
OutputTransform = Literal["none", "sqrt_i", "sqrt_i_over_T", "headwise_rmsnorm"]


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
      qk_norm: RMS-normalise each head's query and key (over its K coordinates, one gain (K,)
        shared by the heads) before RoPE (Gemma 3's QK-norm); needs norm="rmsnorm".
      post_norms: sandwich norms: the attention's and the MLP's outputs are normalised too
        before they join the residual (Gemma 2 and 3): H = X + Norm(MHA(Norm(X))).
      norm_unit_offset: every norm (and the QK-norm) multiplies by (1 + w), w initialised to
        0 (Gemma's convention; HF checkpoints store w, GGUF files 1 + w); False: by w, = 1.
      embed_scale: token embeddings are multiplied by sqrt(d_model) on input (Gemma); the tied
        unembedding reads the unscaled matrix.
      query_pre_attn_scalar: attention logits are q k^T / sqrt(query_pre_attn_scalar); None
        means head_dim (Gemma 3 sets it explicitly, equal to head_dim).
      sliding_window: W, the keys a sliding-window layer sees: query i attends to keys j with
        i - W < j <= i. None: every layer attends to the whole prefix.
      sliding_window_pattern: with a window, layer l (0-based) is global when (l + 1) is a
        multiple of this and sliding otherwise (Gemma 3: 6, five sliding layers then one
        global); 1 without a window.
      rope_local_theta: the RoPE base of the sliding-window layers (Gemma 3: 10,000, while
        ``rope_theta`` = 1,000,000 serves the global ones); None: ``rope_theta``.
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
    sliding_window_pattern: int = 1
    rope_local_theta: float | None = None
    unembed: bool = True

    def __post_init__(self):
        def need(ok: bool, msg: str):
            if not ok:
                raise UserError(f"invalid ModelConfig {self.name!r}: {msg}")

        for f in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len"):
            need(_positive_int(getattr(self, f)),
                 f"{f} must be a positive integer, got {getattr(self, f)!r}")
        for f in ("head_dim", "n_kv_heads"):
            v = getattr(self, f)
            need(v is None or _positive_int(v),
                 f"{f} must be a positive integer or None, got {v!r}")
        need(self.head_dim is not None or self.d_model % self.n_heads == 0,
             f"n_heads={self.n_heads} does not divide d_model={self.d_model}; choose "
             f"n_heads among the divisors of d_model, or give head_dim explicitly")
        need(self.n_heads % self.resolved_n_kv_heads == 0,
             f"n_kv_heads={self.n_kv_heads} does not divide n_heads={self.n_heads}; each "
             f"key/value head must serve the same number of query heads (1 <= n_kv_heads "
             f"<= n_heads, a divisor of n_heads)")
        choices = {
            "block": Block, "attention": Attention, "activation": Activation, "norm": Norm,
            "position": Position, "attn_output_transform": OutputTransform,
        }
        for f, lit in choices.items():
            allowed = lit.__args__
            need(getattr(self, f) in allowed, f"{f}={getattr(self, f)!r}; allowed: {allowed}")
        need(self.position != "rope" or self.resolved_head_dim % 2 == 0,
             f"RoPE rotates pairs of coordinates, so it needs an even head_dim, got "
             f"{self.resolved_head_dim}; choose an even head_dim or position='learned'/'none'")
        need(not self.attn_output_gate_bias or self.attn_output_gate,
             "attn_output_gate_bias=True needs attn_output_gate=True (the bias belongs to the gate)")
        for f in ("attn_output_gate", "attn_output_gate_bias"):
            need(isinstance(getattr(self, f), bool), f"{f} must be True or False, "
                 f"got {getattr(self, f)!r}")
        if not self.has_attn:
            need(self.attn_output_transform == "none" and not self.attn_output_gate,
                 f"block={self.block!r} has no attention, so attn_output_transform must be "
                 f"'none' and attn_output_gate False (got {self.attn_output_transform!r}, "
                 f"{self.attn_output_gate}); use block='attn_mlp' or 'attn_only'")
        if self.attention != "softmax":
            need(not self.attn_output_gate,
                 f"attention={self.attention!r} (Attn0) has no per-head output to gate; "
                 f"attn_output_gate must be False, or use attention='softmax'")
            need(self.attn_output_transform == "none",
                 f"attention={self.attention!r} (Attn0) has no per-head output to transform; "
                 f"attn_output_transform must be 'none' (got {self.attn_output_transform!r}), "
                 f"or use attention='softmax'")
            need(self.resolved_n_kv_heads == self.n_heads,
                 f"attention={self.attention!r} (Attn0) has no key/value heads; n_kv_heads must "
                 f"equal n_heads={self.n_heads} (or be None), got {self.n_kv_heads}")
        for f in ("qk_norm", "post_norms", "norm_unit_offset", "embed_scale", "unembed"):
            need(isinstance(getattr(self, f), bool), f"{f} must be True or False, "
                 f"got {getattr(self, f)!r}")
        need(not self.qk_norm or (self.norm == "rmsnorm" and self.has_attn_params),
             f"qk_norm=True RMS-normalises each head's queries and keys: it needs "
             f"norm='rmsnorm' and softmax attention (got norm={self.norm!r}, "
             f"attention={self.attention!r}, block={self.block!r})")
        need(not self.post_norms or self.norm != "none",
             "post_norms=True normalises the sublayers' outputs: it needs a norm "
             "(norm='rmsnorm' or 'layernorm'), not norm='none'")
        need(self.query_pre_attn_scalar is None or (
            isinstance(self.query_pre_attn_scalar, (int, float))
            and not isinstance(self.query_pre_attn_scalar, bool)
            and self.query_pre_attn_scalar > 0),
             f"query_pre_attn_scalar must be a number > 0 or None, got "
             f"{self.query_pre_attn_scalar!r}")
        need(self.sliding_window is None or _positive_int(self.sliding_window),
             f"sliding_window must be a positive integer or None, got {self.sliding_window!r}")
        need(_positive_int(self.sliding_window_pattern),
             f"sliding_window_pattern must be a positive integer, got "
             f"{self.sliding_window_pattern!r}")
        if self.sliding_window is None:
            need(self.sliding_window_pattern == 1 and self.rope_local_theta is None,
                 f"sliding_window_pattern={self.sliding_window_pattern} and rope_local_theta="
                 f"{self.rope_local_theta} describe sliding-window layers; give sliding_window "
                 f"too, or leave them at 1 and None")
        else:
            need(self.sliding_window_pattern >= 2,
                 f"sliding_window={self.sliding_window} with sliding_window_pattern=1 makes "
                 f"every layer global; give a pattern >= 2 (Gemma 3: 6)")
            need(self.has_attn_params, f"sliding_window needs softmax attention (got "
                 f"attention={self.attention!r}, block={self.block!r})")
        need(self.rope_local_theta is None or self.rope_local_theta > 0,
             "rope_local_theta must be > 0 or None")
        need(self.init_std > 0, "init_std must be > 0")
        need(self.norm_eps > 0, "norm_eps must be > 0")
        need(self.rope_theta > 0, "rope_theta must be > 0")

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
        return self.sliding_window is not None and (layer + 1) % self.sliding_window_pattern != 0

    def layer_window(self, layer: int) -> int | None:
        """W of block ``layer``: ``sliding_window`` on a sliding layer, None on a global one."""
        return self.sliding_window if self.is_sliding(layer) else None

    def layer_rope_theta(self, layer: int) -> float:
        """The RoPE base of block ``layer``: ``rope_local_theta`` on a sliding layer (when
        given), else ``rope_theta``."""
        if self.is_sliding(layer) and self.rope_local_theta is not None:
            return self.rope_local_theta
        return self.rope_theta

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
                     if f.name != "unembed" or not self.unembed)

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


# What a descendant keeps whatever its widths, depths and vocabulary: the architecture family
# (lineage tests compare models of one family only:
# ``fingerprint.runner.compare.check_pair``). A new architecture's switches belong here.
FAMILY_FIELDS = ("block", "attention", "norm", "activation", "gated_mlp", "position",
                 "linear_bias", "qkv_bias", "attn_output_transform", "attn_output_gate",
                 "qk_norm", "post_norms", "norm_unit_offset", "embed_scale")


def family(cfg: ModelConfig) -> dict:
    """The fields of ``cfg`` that make its architecture family (:data:`FAMILY_FIELDS`)."""
    return {f: getattr(cfg, f) for f in FAMILY_FIELDS}


# Fields added after records (run.json, probe and sweep states, campaign summaries) were first
# written, with the default that every earlier record means by its silence. A record leaves
# them out while they hold that default (:func:`config_record`), so a record made before they
# existed and one made after name the same model.
LATER_FIELDS = {"qk_norm": False, "post_norms": False, "norm_unit_offset": False,
                "embed_scale": False, "query_pre_attn_scalar": None, "sliding_window": None,
                "sliding_window_pattern": 1, "rope_local_theta": None, "unembed": True}


def config_record(cfg: ModelConfig) -> dict:
    """``dataclasses.asdict(cfg)`` for records and state identities, without the
    :data:`LATER_FIELDS` that hold their defaults (``ModelConfig(**record)`` rebuilds cfg)."""
    d = dataclasses.asdict(cfg)
    return {k: v for k, v in d.items() if not (k in LATER_FIELDS and v == LATER_FIELDS[k])}


def recorded_differences(recorded: dict, cfg: ModelConfig) -> dict[str, tuple]:
    """{field: (recorded value, cfg's value)} for every field where a recorded config (a dict,
    e.g. run.json's ``model_config``) and ``cfg`` differ; "<absent>" where one lacks the
    field. ``head_dim`` and ``n_kv_heads`` are compared (and shown) resolved, so a record that
    spells out the derived values equals one that leaves them None; a record without one of
    the :data:`LATER_FIELDS` holds its default."""
    rec, cur = {**LATER_FIELDS, **dict(recorded)}, dataclasses.asdict(cfg)
    d, h = rec.get("d_model"), rec.get("n_heads")
    if rec.get("head_dim") is None and _positive_int(d) and _positive_int(h) and d % h == 0:
        rec["head_dim"] = d // h
    if rec.get("n_kv_heads") is None and _positive_int(h):
        rec["n_kv_heads"] = h
    cur.update(head_dim=cfg.resolved_head_dim, n_kv_heads=cfg.resolved_n_kv_heads)
    absent = "<absent>"
    return {k: (rec.get(k, absent), cur.get(k, absent)) for k in sorted(set(rec) | set(cur))
            if rec.get(k, absent) != cur.get(k, absent)}


def _positive_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def apply_overrides(cfg: ModelConfig, items: "tuple[str, ...] | list[str]") -> ModelConfig:
    """``cfg`` with ``KEY=VALUE`` settings applied (``--model-set``), e.g.
    ``attn_output_transform=headwise_rmsnorm`` or ``attn_output_gate=true``.

    Keys are ModelConfig fields (not ``name`` or ``unembed``); values are read by the field's
    type (bool: true/false, int, float, None for optional ones; text for the rest, checked by
    the config's own validation). Applied with :meth:`ModelConfig.ablate`."""
    fields = {f.name: f for f in dataclasses.fields(ModelConfig)
              if f.name not in ("name", "unembed")}
    changes = {}
    for item in items:
        key, sep, text = str(item).partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise UserError(f"cannot read model setting {item!r}: use KEY=VALUE, e.g. "
                            f"attn_output_transform=sqrt_i")
        if key not in fields:
            raise UserError(f"unknown model setting {key!r}; allowed: {', '.join(fields)}")
        changes[key] = _parse_value(key, str(fields[key].type), text.strip())
    return cfg.ablate(**changes) if changes else cfg


def _parse_value(key: str, typ: str, text: str):
    if "None" in typ and text.lower() == "none":
        return None
    try:
        if typ == "bool":
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return text.lower() in ("true", "1")
        if typ.startswith("int"):
            return int(text)
        if typ.startswith("float"):
            return float(text)
    except ValueError:
        raise UserError(f"model setting {key}={text!r}: expected a value of type {typ}") from None
    return text
