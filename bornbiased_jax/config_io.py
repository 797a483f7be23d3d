"""A :class:`~bornbiased_jax.config.ModelConfig` in records and on the command line: the
record written into run folders, sweep and blockwise states (:func:`config_record`), read back
whatever its age (:func:`from_record`), compared with a config field by field
(:func:`recorded_differences`), and ``--model-set KEY=VALUE`` (:func:`apply_overrides`)."""

from __future__ import annotations

import dataclasses

from bornbiased_jax.config import ModelConfig, gemma3_layer_types, positive_int
from bornbiased_jax.errors import UserError

# Fields added after records (run.json, probe and sweep states, campaign summaries) were first
# written, with the default that every earlier record means by its silence. A record leaves
# them out while they hold that default (:func:`config_record`), so a record made before they
# existed and one made after name the same model.
LATER_FIELDS = {"qk_norm": False, "post_norms": False, "norm_unit_offset": False,
                "embed_scale": False, "query_pre_attn_scalar": None, "sliding_window": None,
                "rope_local_theta": None, "unembed": True, "layer_types": None,
                "rope_scaling": None, "qk_norm_scope": "head", "pre_norms": True,
                "architecture": None}
# Records made before ``layer_types`` name Gemma's layers by their period; a record still does
# where the layers follow such a period (:func:`config_record`), so that its identity is the
# one a state or run folder was saved under.
_LEGACY_PATTERN = "sliding_window_pattern"


def config_record(cfg: ModelConfig) -> dict:
    """``dataclasses.asdict(cfg)`` for records and state identities, without the
    :data:`LATER_FIELDS` that hold their defaults, and with Gemma-style layer types written as
    their period ``sliding_window_pattern`` (what such records held before ``layer_types``);
    :func:`from_record` rebuilds cfg."""
    d = dataclasses.asdict(cfg)
    if cfg.rope_scaling is not None:
        d["rope_scaling"] = cfg.rope_scaling.record()
    if d["layer_types"] is not None:
        d["layer_types"] = list(d["layer_types"])
        if cfg.sliding_window_pattern is not None:
            d["layer_types"], d[_LEGACY_PATTERN] = None, cfg.sliding_window_pattern
    return {k: v for k, v in d.items() if not (k in LATER_FIELDS and v == LATER_FIELDS[k])}


def from_record(record: dict) -> ModelConfig:
    """The :class:`ModelConfig` of a record (:func:`config_record`, run.json's
    ``model_config``), old or new: a period ``sliding_window_pattern`` becomes ``layer_types``."""
    d = _canonical(record)
    return ModelConfig(**d)


def _canonical(record: dict) -> dict:
    """A record's fields as ModelConfig takes them (the period spelled out as layer types)."""
    d = dict(record)
    k = d.pop(_LEGACY_PATTERN, 1)
    if k not in (None, 1) and d.get("sliding_window") is not None and d.get("layer_types") is None:
        n = d.get("n_layers")
        if not positive_int(n) or not positive_int(k):
            raise UserError(f"a record's sliding_window_pattern={k!r} needs a positive n_layers "
                            f"and period")
        d["layer_types"] = gemma3_layer_types(n, k)
    return d



def recorded_differences(recorded: dict, cfg: ModelConfig) -> dict[str, tuple]:
    """{field: (recorded value, cfg's value)} for every field where a recorded config (a dict,
    e.g. run.json's ``model_config``) and ``cfg`` differ; "<absent>" where one lacks the
    field. ``head_dim`` and ``n_kv_heads`` are compared (and shown) resolved, so a record that
    spells out the derived values equals one that leaves them None; a record without one of
    the :data:`LATER_FIELDS` holds its default; both sides are compared as
    :func:`config_record` writes them (layer types as a period where they have one)."""
    rec = {**LATER_FIELDS, **dict(recorded)}
    try:  # the recorded config's own record, when it is a valid config
        rec = {**LATER_FIELDS, **config_record(from_record(rec))}
    except (UserError, TypeError):
        pass
    cur = {**LATER_FIELDS, **config_record(cfg)}
    d, h = rec.get("d_model"), rec.get("n_heads")
    if rec.get("head_dim") is None and positive_int(d) and positive_int(h) and d % h == 0:
        rec["head_dim"] = d // h
    if rec.get("n_kv_heads") is None and positive_int(h):
        rec["n_kv_heads"] = h
    cur.update(head_dim=cfg.resolved_head_dim, n_kv_heads=cfg.resolved_n_kv_heads)
    absent = "<absent>"
    return {k: (rec.get(k, absent), cur.get(k, absent)) for k in sorted(set(rec) | set(cur))
            if rec.get(k, absent) != cur.get(k, absent)}


def apply_overrides(cfg: ModelConfig, items: "tuple[str, ...] | list[str]") -> ModelConfig:
    """``cfg`` with ``KEY=VALUE`` settings applied (``--model-set``), e.g.
    ``attn_output_transform=headwise_rmsnorm`` or ``attn_output_gate=true``.

    Keys are ModelConfig fields (not ``name`` or ``unembed``); values are read by the field's
    type (bool: true/false, int, float, None for optional ones; text for the rest, checked by
    the config's own validation). Applied with :meth:`ModelConfig.ablate`."""
    fields = {f.name: f for f in dataclasses.fields(ModelConfig)
              if f.name not in ("name", "unembed", "architecture")}
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
    if typ.startswith("RopeScaling"):
        raise UserError(f"model setting {key} is a record of several values (kind, factor, ...) "
                        f"and cannot be given as KEY=VALUE; load a config.json that has it, or "
                        f"give {key}=none to drop it")
    if typ.startswith("tuple"):  # layer_types: one per layer, comma-separated
        return tuple(t.strip() for t in text.split(","))
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
