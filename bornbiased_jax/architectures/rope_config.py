"""RoPE in HF ``config.json`` files, read and written: the base and a :class:`RopeScaling`.

transformers 5 writes ``rope_parameters`` ({"rope_type", "rope_theta", scaling keys}); earlier
versions ``rope_theta`` beside ``rope_scaling`` ({"rope_type" or "type", scaling keys}); Phi-3
keeps ``original_max_position_embeddings`` at the top level. Every value transformers derives
when a config leaves it out (``modeling_rope_utils``: the original length, YaRN's betas,
truncation and attention factor, LongRoPE's attention factor) is resolved here, so the
:class:`RopeScaling` read fixes the angles alone and is written back whole.
"""

from __future__ import annotations

import math
from typing import Any

from bornbiased_jax.rope import RopeScaling
from bornbiased_jax.errors import UserError

# HF rope_type -> ours; "su" is LongRoPE's first name in Phi-3's configs
_KINDS = {"linear": "linear", "dynamic": "dynamic", "yarn": "yarn", "llama3": "llama3",
          "longrope": "longrope", "su": "longrope"}


def refuse(family: str, key: str, value: Any, why: str) -> UserError:
    """The error for a config value that has no counterpart here, naming key and family."""
    return UserError(f"config.json: {key}={value!r} is not supported by the {family} "
                     f"architecture record: {why}")


def read_rope(d: dict, family: str, *, theta_keys=("rope_theta",), default_theta: float = 1e4,
              params: dict | None = None, rotary_keys=("partial_rotary_factor",),
              rotary_default: float = 1.0) -> tuple[float, RopeScaling | None]:
    """(base, scaling) of an HF config ``d`` (or of ``params``, one layer type's entry of a
    per-type ``rope_parameters``). Partial rotation is refused (every coordinate of a head
    rotates here), as are rope types without an implementation, naming the key and family."""
    p = params if params is not None else (d.get("rope_parameters") or d.get("rope_scaling")
                                          or {})
    if not isinstance(p, dict):
        raise refuse(family, "rope_parameters", p, "expected a JSON object")
    if p and all(isinstance(v, dict) for v in p.values()):
        raise refuse(family, "rope_parameters", sorted(p), "RoPE that differs between layer "
                     "types belongs to architectures with layer types of their own (Gemma 3)")
    kind = p.get("rope_type", p.get("type", "default"))
    if kind not in ("default", *_KINDS):
        raise refuse(family, "rope_type", kind, f"implemented: default, "
                     f"{', '.join(sorted(set(_KINDS) - {'su'}))}")
    rotary = p.get("partial_rotary_factor")
    if rotary is None:
        rotary = next((d[k] for k in rotary_keys if d.get(k) is not None), rotary_default)
    if rotary != 1:
        raise refuse(family, "partial_rotary_factor", rotary,
                     "RoPE rotates every coordinate of a head here (1.0)")
    theta = p.get("rope_theta")
    if theta is None:
        theta = next((d[k] for k in theta_keys if d.get(k) is not None), default_theta)
    theta = float(theta)
    if kind == "default":
        return theta, None
    return theta, _scaling(_KINDS[kind], p, d, family)


def _scaling(kind: str, p: dict, d: dict, family: str) -> RopeScaling:
    def need(key):
        if p.get(key) is None:
            raise refuse(family, "rope_parameters", p, f"RoPE scaling {kind!r} needs {key}")
        return p[key]

    max_pos = d.get("max_position_embeddings")
    # transformers' standardize_rope_params: a top-level original length wins (Phi-3), then the
    # scaling's own, then max_position_embeddings
    orig = d.get("original_max_position_embeddings") or p.get(
        "original_max_position_embeddings") or max_pos
    try:
        if kind in ("linear", "dynamic"):
            return RopeScaling(kind, factor=float(need("factor")))
        if kind == "llama3":
            return RopeScaling(kind, factor=float(need("factor")),
                               low_freq_factor=float(need("low_freq_factor")),
                               high_freq_factor=float(need("high_freq_factor")),
                               original_max_position_embeddings=int(orig))
        if kind == "yarn":
            factor = p.get("factor") or max_pos / orig
            att = p.get("attention_factor")
            if att is None:
                m, m_all = p.get("mscale"), p.get("mscale_all_dim")
                att = (_mscale(factor, m) / _mscale(factor, m_all) if m and m_all
                       else _mscale(factor))
            truncate = p.get("truncate")
            return RopeScaling(kind, factor=float(factor), original_max_position_embeddings=int(orig),
                               beta_fast=float(p.get("beta_fast") or 32),
                               beta_slow=float(p.get("beta_slow") or 1),
                               truncate=True if truncate is None else bool(truncate),
                               attention_factor=float(att))
        # longrope
        factor = p.get("factor") or max_pos / orig
        att = p.get("attention_factor")
        if att is None:
            att = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))
        return RopeScaling(kind, short_factor=tuple(need("short_factor")),
                           long_factor=tuple(need("long_factor")),
                           original_max_position_embeddings=int(orig),
                           attention_factor=float(att))
    except (TypeError, ValueError, ZeroDivisionError) as e:
        raise refuse(family, "rope_parameters", p, f"not a valid {kind!r} scaling ({e})") \
            from None


def _mscale(scale: float, m: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def rope_to_hf(theta: float, scaling: RopeScaling | None) -> dict:
    """The ``rope_parameters`` entry of (base, scaling), every value spelled out."""
    out = {"rope_type": "default" if scaling is None else scaling.kind, "rope_theta": theta}
    if scaling is not None:
        out.update({k: v for k, v in scaling.record().items() if k != "kind"})
    return out


def rope_fields(theta: float, scaling: RopeScaling | None) -> dict:
    """Both spellings of a config's RoPE: transformers >= 5 reads ``rope_parameters``, earlier
    versions ``rope_theta`` and ``rope_scaling``."""
    params = rope_to_hf(theta, scaling)
    out = {"rope_theta": theta, "rope_parameters": params}
    if scaling is not None:
        out["rope_scaling"] = dict(params)
    return out
