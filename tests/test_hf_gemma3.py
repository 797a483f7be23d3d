"""Gemma 3 HF folders (``model_type`` gemma3_text, Gemma3ForCausalLM): the config mapping both
ways, the (1 + w) gains as the file stores them, the released 270M config, export and the refusals.
Parity of the committed fixture with transformers is in tests/test_hf.py (``gemma3``)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file

from bornbiased_jax import model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf import (config_from_hf, config_to_hf, expected_shapes, hf_architecture,
                               load_hf, save_hf)

FIXTURE = Path(__file__).parent / "fixtures" / "hf" / "gemma3"

# google/gemma-3-270m's config.json (transformers 4.55 wrote it; older spelling of RoPE)
GEMMA3_270M = {
    "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
    "_sliding_window_pattern": 6, "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": None, "bos_token_id": 2, "eos_token_id": 1,
    "final_logit_softcapping": None, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 640, "initializer_range": 0.02, "intermediate_size": 2048,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"]
    + ["sliding_attention"] * 5 + ["full_attention"]
    + ["sliding_attention"] * 5 + ["full_attention"],
    "max_position_embeddings": 32768, "num_attention_heads": 4, "num_hidden_layers": 18,
    "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": None,
    "rope_theta": 1000000.0, "sliding_window": 512, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "use_bidirectional_attention": False, "use_cache": True,
    "vocab_size": 262144}
ARCH = ("vocab_size", "d_model", "n_layers", "n_heads", "resolved_n_kv_heads",
        "resolved_head_dim", "d_ff", "max_seq_len", "activation", "gated_mlp", "norm",
        "position", "rope_theta", "linear_bias", "qkv_bias", "tie_embeddings", "norm_eps",
        "qk_norm", "post_norms", "norm_unit_offset", "embed_scale", "attn_scalar",
        "sliding_window", "sliding_window_pattern", "rope_local_theta")


def test_the_released_270m_config_is_the_preset():
    cfg = config_from_hf(GEMMA3_270M)
    preset = get_preset("gemma3-270m")
    assert {f: getattr(cfg, f) for f in ARCH} == {f: getattr(preset, f) for f in ARCH}
    assert sum(int(np.prod(s)) for s in expected_shapes(cfg).values()) == 268_098_176
    # transformers 5's spelling: rope_parameters per layer type
    new = {k: v for k, v in GEMMA3_270M.items()
           if k not in ("rope_theta", "rope_local_base_freq", "rope_scaling")}
    new["rope_parameters"] = {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                              "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}
    assert config_from_hf(new) == cfg
    # no layer_types: transformers' default pattern (6)
    old = {k: v for k, v in GEMMA3_270M.items() if k not in ("layer_types",
                                                            "_sliding_window_pattern")}
    assert config_from_hf(old) == cfg


def test_the_fixture_is_gemma3_and_its_gains_are_the_files_w():
    """HF stores w of the gain 1 + w; the parameters hold the same w, bitwise (the forward adds
    the 1; test_hf.py's parity shows it does)."""
    cfg, params = load_hf(FIXTURE)
    assert (cfg.qk_norm, cfg.post_norms, cfg.norm_unit_offset, cfg.embed_scale) == (True,) * 4
    assert (cfg.sliding_window, cfg.sliding_window_pattern, cfg.attn_scalar) == (4, 6, 24.0)
    assert (cfg.rope_theta, cfg.rope_local_theta, cfg.resolved_head_dim) == (1e6, 1e4, 16)
    assert (cfg.resolved_n_kv_heads, cfg.tie_embeddings, cfg.activation) == (1, True, "gelu_tanh")
    files = load_file(FIXTURE / "model.safetensors")
    for hf, ours in (("model.layers.2.post_feedforward_layernorm.weight", ("layers_2",
                                                                          "mlp_post_norm")),
                     ("model.layers.0.self_attn.q_norm.weight", ("layers_0", "attn", "q_norm")),
                     ("model.norm.weight", ("final_norm",))):
        p = params
        for k in ours:
            p = p[k]
        np.testing.assert_array_equal(p["scale"], files[hf])
        assert np.abs(files[hf] - 1).max() < 1  # the fixture's w = 1 + N(0, 0.2^2): gain ~2


def test_export_writes_w_and_a_config_transformers_reads(tmp_path):
    cfg, params = load_hf(FIXTURE)
    out = save_hf(cfg, params, tmp_path / "g")
    hf = json.loads((out / "config.json").read_text())
    assert (hf["model_type"], hf["architectures"]) == ("gemma3_text", ["Gemma3ForCausalLM"])
    assert hf["layer_types"] == ["sliding_attention"] * 5 + ["full_attention"]
    assert (hf["query_pre_attn_scalar"], hf["sliding_window"]) == (24, 4)
    assert hf["rope_parameters"]["sliding_attention"]["rope_theta"] == 1e4
    assert load_file(out / "model.safetensors").keys() == load_file(
        FIXTURE / "model.safetensors").keys()
    assert config_from_hf(out) == dataclasses.replace(cfg, name="hf-gemma3_text")


def test_the_tiny_preset_exports_and_reimports(tmp_path):
    cfg = get_preset("gemma3-tiny")
    params = model.init(cfg, jax.random.key(0))
    cfg2, params2 = load_hf(save_hf(cfg, params, tmp_path / "tiny"))
    assert {f: getattr(cfg2, f) for f in ARCH} == {f: getattr(cfg, f) for f in ARCH}
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), params, params2))


@pytest.mark.parametrize("change, match", [
    ({"final_logit_softcapping": 30.0}, "final_logit_softcapping=30.0 .*soft-capping"),
    ({"attn_logit_softcapping": 50.0}, "attn_logit_softcapping=50.0 .*soft-capping"),
    ({"layer_types": ["chunked_attention"] * 18}, "layer_types=\\['chunked_attention'\\]"),
    ({"layer_types": ["full_attention"] * 17}, "one per layer"),
    ({"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                          "sliding_attention": {"rope_type": "linear", "factor": 8.0,
                                                "rope_theta": 1e4}}},
     "sliding_attention='linear' .*the sliding layers' RoPE is unscaled"),
    ({"rope_scaling": {"rope_type": "su"}}, "RoPE scaling 'longrope' needs short_factor"),
    ({"use_bidirectional_attention": True}, "use_bidirectional_attention"),
    ({"attention_bias": True}, "attention_bias=True"),
    ({"model_type": "gemma3"}, "model_type='gemma3' .*text and vision"),
    ({"hidden_activation": "gelu_fast"}, "hidden_activation='gelu_fast'"),
])
def test_what_gemma3_cannot_be_here_is_named(change, match):
    with pytest.raises(UserError, match=match):
        config_from_hf({**GEMMA3_270M, **change})


def test_a_refusal_names_the_folder_and_the_file(tmp_path):
    folder = tmp_path / "my-gemma"
    shutil.copytree(FIXTURE, folder)
    hf = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**hf, "final_logit_softcapping": 30.0}))
    with pytest.raises(UserError, match=rf"^{folder / 'config.json'}: final_logit_softcapping"):
        load_hf(folder)
    with pytest.raises(UserError, match=rf"^{folder / 'config.json'}: final_logit_softcapping"):
        config_from_hf(folder)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", "sweep", "--model",
                        str(folder), "--num-seqs", "2", "--seq-len", "8", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"{folder / 'config.json'}: final_logit_softcapping=30.0 is not supported" in r.stderr
    assert not out.exists()


def test_only_a_whole_gemma_is_exported():
    """Sandwich norms alone are no family's: Gemma 3 has them with QK-norm, (1 + w) gains and
    sqrt(d) embeddings. (QK-norm alone is Qwen3's and exports as Qwen3.)"""
    assert hf_architecture(get_preset("llama2-tiny").ablate(qk_norm=True)) == "qwen3"
    half = get_preset("llama2-tiny").ablate(post_norms=True)
    with pytest.raises(UserError, match="cannot be exported.*part of Gemma 3's architecture"):
        config_to_hf(half)


@pytest.mark.skipif(not (importlib.util.find_spec("torch")
                         and importlib.util.find_spec("transformers")),
                    reason="needs torch and transformers (the fixture tests run without them)")
def test_live_gemma3_export_opens_in_transformers_with_equal_outputs(tmp_path):
    """gemma3-tiny with every weight redrawn (w of the norms N(0, 0.3^2): init's zeros would
    hide a gain read as w instead of 1 + w) and a window of 8 at T = 20, exported and opened by
    AutoModelForCausalLM: logits and every block's output within test_hf.py's Gemma bound."""
    import torch
    from transformers import AutoModelForCausalLM

    from test_hf import REL_OF_MAX_GEMMA3

    cfg = get_preset("gemma3-tiny").ablate(sliding_window=8)
    keys = iter(jax.random.split(jax.random.key(1), 128))

    def redraw(path, a):
        z = jax.random.normal(next(keys), a.shape)
        return 0.3 * z if path[-1].key == "scale" else (
            0.3 * z if path[-1].key == "embedding" else z / a.shape[0] ** 0.5)
    params = jax.tree_util.tree_map_with_path(redraw, model.init(cfg, jax.random.key(0)))
    hf = AutoModelForCausalLM.from_pretrained(save_hf(cfg, params, tmp_path / "e"),
                                              attn_implementation="eager").eval()
    tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, (2, 20))
    with torch.no_grad():
        ref = hf(input_ids=torch.from_numpy(tokens), output_hidden_states=True)
    ours = jax.vmap(lambda t: model.forward(params, cfg, t, return_hidden=True))(
        jnp.asarray(tokens))
    theirs = ref.logits.numpy()
    assert np.abs(np.asarray(ours.logits) - theirs).max() <= REL_OF_MAX_GEMMA3 * np.abs(
        theirs).max()
    for i in range(cfg.n_layers):
        h = ref.hidden_states[i].numpy()
        assert np.abs(np.asarray(ours.hidden[:, i]) - h).max() <= REL_OF_MAX_GEMMA3 * np.abs(
            h).max(), i
