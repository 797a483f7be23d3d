"""Config dataclasses and presets: validation, derived values, big shapes without allocation."""

import math

import jax
import pytest

from bornbiased_jax import model
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.presets import PRESETS, get_preset


def n_params(cfg: ModelConfig) -> int:
    shapes = jax.eval_shape(lambda k: model.init(cfg, k), jax.random.key(0))
    return sum(math.prod(x.shape) for x in jax.tree.leaves(shapes))


def test_paper_sizes_by_eval_shape():
    # Table 1 (a)/(b)/(c) and Table 13, counted without allocating anything.
    gpt2 = get_preset("gpt2-rope-nano")
    assert (gpt2.n_layers, gpt2.n_heads, gpt2.d_model, gpt2.vocab_size) == (12, 12, 768, 50257)
    # 12 blocks x (4 d^2 attention + 8 d^2 MLP + biases + 2 LN) + tied W_E (no position table).
    per_block = 12 * 768**2 + (4 * 768 + 4 * 768 + 768) + 4 * 768
    assert n_params(gpt2) == 12 * per_block + 2 * 768 + 50257 * 768  # ~124M
    llama = get_preset("llama2-nano")
    assert (llama.d_ff, llama.vocab_size, llama.tie_embeddings) == (2048, 32000, False)
    assert n_params(llama) == 12 * (4 * 768**2 + 3 * 768 * 2048 + 2 * 768) + 768 + 2 * 32000 * 768
    big = get_preset("gpt2-rope-1.2b")
    assert (big.n_layers, big.n_heads, big.d_model) == (24, 32, 2048)
    assert 1.2e9 < n_params(big) < 1.35e9


def test_residual_std_is_gpt2_scaled():
    cfg = get_preset("gpt2-rope-nano")
    assert cfg.residual_std == pytest.approx(0.02 / math.sqrt(24))
    assert cfg.ablate(scale_residual_init=False).residual_std == 0.02


def test_every_preset_is_registered_under_its_name():
    for name, cfg in PRESETS.items():
        assert cfg.name == name and get_preset(name) is cfg


@pytest.mark.parametrize("changes, message", [
    (dict(n_heads=5), "does not divide d_model"),
    (dict(d_model=0), "positive integer"),
    (dict(activation="swish"), "allowed"),
    (dict(norm="batchnorm"), "allowed"),
    (dict(attn_output_transform="gate"), "allowed"),
])
def test_bad_config_is_a_clear_error(changes, message):
    with pytest.raises(ValueError, match=message):
        get_preset("gpt2-rope-tiny").ablate(**changes)


def test_unknown_preset_lists_the_valid_ones():
    with pytest.raises(ValueError, match="gpt2-rope-nano"):
        get_preset("gpt3")
