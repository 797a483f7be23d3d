"""The parameter schema (bornbiased_jax/schema.py) against every parameter tree the decoder
builds: each preset's, and the variants that add the parameters no preset has (the output gate
and its bias, the head-wise norm, learned positions, LayerNorm biases, a gated MLP's biases, an
untied head). Shapes
only (``model.param_shapes``): nothing is allocated."""

import dataclasses

import jax
import numpy as np
import pytest

from bornbiased_jax import model, schema, sharding
from bornbiased_jax.errors import UserError
from bornbiased_jax.presets import PRESETS, get_preset


def variants():
    """Every preset, and tiny variants with the optional parameters switched on."""
    tiny = get_preset("llama2-tiny")
    return {**PRESETS,
            "gate+bias, untied": tiny.ablate(attn_output_gate=True, attn_output_gate_bias=True,
                                             tie_embeddings=False),
            "head-wise norm": tiny.ablate(attn_output_transform="headwise_rmsnorm"),
            "gated, biases": tiny.ablate(linear_bias=True),
            "layernorm, biases, learned positions, post-norms": dataclasses.replace(
                get_preset("gpt2-rope-tiny"), position="learned", linear_bias=True,
                post_norms=True),
            "gemma3 untied": get_preset("gemma3-tiny").ablate(tie_embeddings=False)}


def sizes(cfg) -> dict[str, set[int]]:
    """The sizes each logical axis may have in ``cfg``."""
    K = cfg.resolved_head_dim
    return {"vocab": {cfg.vocab_size}, "position": {cfg.max_seq_len}, schema.RESIDUAL:
            {cfg.d_model}, "qkv": {cfg.n_heads * K, cfg.resolved_n_kv_heads * K},
            "mlp": {cfg.d_ff}, "heads": {cfg.n_heads}, "head_dim": {K}}


def leaves(tree, path=()):
    for k, v in tree.items():
        if hasattr(v, "items"):
            yield from leaves(v, path + (k,))
        else:
            yield path + (k,), v


VARIANTS = variants()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_leaf_of_every_tree_is_in_the_schema(name):
    cfg = VARIANTS[name]
    shapes = model.param_shapes(cfg)
    present = {"/".join(p[:-1]) for p, _ in leaves(shapes)}
    for path, x in leaves(shapes):
        entry = schema.leaf(path)  # a UserError for a path the schema lacks
        where = "/".join(path)
        assert len(entry.axes) == x.ndim, where
        for axis, n in zip(entry.axes, x.shape):
            assert n in sizes(cfg)[axis], (where, axis, n)
        read = schema.norm_read_by(path)
        # without pre-norms (OLMo 2's block) a block's matrices read the stream itself
        no_pre = not cfg.pre_norms and read != "final_norm"
        assert read is None or read in present or cfg.norm == "none" or no_pre, where
        assert entry.residual_axis is None or x.shape[entry.residual_axis] == cfg.d_model
        names = sharding.logical_axes([jax.tree_util.DictKey(k) for k in path], x.ndim)
        assert names == (entry.axes if x.ndim > 1 else (None,)), where


def test_every_entry_has_a_parameter():
    """No entry outlives its parameter: the tiny trees hold every pattern."""
    used = {schema.leaf(path).pattern for name, cfg in VARIANTS.items()
            if "tiny" in cfg.name for path, _ in leaves(model.param_shapes(cfg))}
    assert used == {e.pattern for e in schema.LEAVES}


def test_one_entry_per_pattern_and_the_two_gates_apart():
    assert len({e.pattern for e in schema.LEAVES}) == len(schema.LEAVES)
    attn = schema.leaf(("layers_0", "attn", "gate_proj", "kernel"))
    mlp = schema.leaf(("layers_7", "mlp", "gate_proj", "kernel"))
    assert (attn.reads, attn.axes, mlp.reads, mlp.axes) == (
        "attn_norm", ("embed", "qkv"), "mlp_norm", ("embed", "mlp"))
    assert "output gate" in attn.what and "MLP's gate" in mlp.what
    assert schema.residual_axis(("layers_0", "attn", "gate_proj", "bias")) is None
    assert schema.residual_axis(("layers_0", "mlp", "down_proj", "bias")) == 0
    assert schema.norm_read_by(("layers_3", "mlp", "up_proj", "kernel")) == "layers_3/mlp_norm"
    assert schema.norm_read_by(("lm_head", "kernel")) == "final_norm"
    assert schema.BLOCK_NORMS_READ == ("attn_norm", "mlp_norm")
    assert [schema.writes_residual(("layers_0", m, p, "kernel")) for m, p in (
        ("attn", "o_proj"), ("mlp", "down_proj"), ("attn", "q_proj"), ("mlp", "gate_proj"))
            ] == [True, True, False, False]


@pytest.mark.parametrize("path", [("layers_0", "mystery", "kernel"), ("lm_head", "bias"),
                                  ("layers_x", "attn_norm", "scale")])
def test_a_path_the_schema_lacks_is_named(path):
    with pytest.raises(UserError, match=f"no schema entry for parameter {'/'.join(path)}"):
        schema.parameter_role(path)
    assert schema.find(path) is None


@pytest.mark.parametrize("offset", [False, True])
def test_gain_and_scale_are_inverse(offset):
    cfg = get_preset("gemma3-tiny").ablate(norm_unit_offset=offset)
    w = np.array([-0.5, 0.0, 0.25, 2.0])
    assert np.array_equal(schema.norm_scale(cfg, schema.norm_gain(cfg, w)), w)
    assert np.array_equal(schema.norm_gain(cfg, w), w + 1.0 if offset else w)
