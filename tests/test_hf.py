"""HF checkpoints in and out: parity with ``transformers``, round trips, and bad input.

The parity tests compare against outputs that ``transformers`` computed for tiny random
models (``tests/fixtures/make_hf_fixtures.py``; float32, eager attention), so they run without
torch. Measured with transformers 5.23 / torch 2.13 on CPU: the largest deviation of logits,
every hidden state and the final norm's output is 1.1e-6 .. 4.9e-6 for values of size ~1-9
(RoPE tables here are float64-rounded, HF's float32, a difference that grows with position;
the fixtures use T = 12).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from bornbiased_jax import model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf import config_from_hf, load_hf, load_hf_tokenizer, save_hf

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
NAMES = ["gpt2", "llama_gqa", "llama_tied", "qwen2", "gpt_neox", "gemma3"]
# Both sides run the same float32 arithmetic in a different order (XLA's fused reductions,
# torch's kernels; RoPE tables rounded from float64 here, computed in float32 there), so they
# differ by rounding alone, and rounding accumulates along the depth: each of the fixtures'
# L = 2 layers chains about ten reductions (two norms, the Q/K/V/O and MLP matmuls over d = 32
# or d_ff = 64 terms, softmax and attention sums over T = 12), each step's error carried into
# every later one. The largest deviation measured over logits, hidden states and normed outputs
# of the five fixtures is 3-10 ulps of the largest |value| of its output (4.9e-6 at 8.77, where
# an ulp is 2^-20 = 9.5e-7). The bound 1e-5 is 10.5 ulps at |value| in [8, 16), the range of
# the largest values here, about twice the largest deviation seen; it would have to grow with
# L for deeper models. Defects that move outputs by less (a norm eps of 1e-6 for 1e-5) are
# caught by the config tests instead (norm_eps is compared field by field).
ATOL_F32 = 1e-5
# The Gemma 3 fixture is deeper (6 layers) and its values larger (hidden states up to 25.5):
# measured (transformers 5.24, torch 2.13, CPU) its largest deviations are 2.5e-5 on logits up to
# 12.4, 5.7e-5 on hidden states up to 25.5 and 1.3e-5 on normed outputs up to 6.7, i.e. 1.9 to
# 2.2e-6 of each array's largest |value| (16 to 19 float32 spacings at that value: its chain per
# layer is longer, four norms and the QK-norm, each dividing by a root mean square that passes
# its relative rounding on). The bound is 1e-5 of the largest |value| of each compared array,
# ~4.5x the largest deviation seen; the wrong architectures this fixture guards against (a gain
# w for 1 + w, sqrt(head_dim) for sqrt(24), a window off by one, a swapped RoPE base) move the
# outputs by 1e-2 or more (tests/test_gemma3_model.py shows each flag changing the logits).
REL_OF_MAX_GEMMA3 = 1e-5


def _bound(name: str, ref: np.ndarray) -> float:
    """The absolute bound of a float32 parity comparison against ``ref``."""
    return REL_OF_MAX_GEMMA3 * float(np.abs(ref).max()) if name == "gemma3" else ATOL_F32
# bfloat16 keeps 8 significant bits (spacing 2^-8 = 0.0039 relative). Loading the float32
# fixtures in bfloat16 and running the forward in bfloat16 gave a relative RMS error
# ||out - ref|| / ||ref|| of 0.0066 .. 0.0110 (1.7 .. 2.8 spacings) over the logits, hidden
# states and normed outputs of the five 2-layer fixtures. The error grows linearly with depth:
# the 6-layer Gemma 3 fixture's block outputs carry 0.6, 2.5, 4.1, 5.9, 6.9, 8.1 and 10.1
# spacings after 0..6 blocks (~1.7 per block), its logits 9.8 and normed outputs 10.2. The
# bound is 4 spacings per layer: 8 at L = 2 (~3x the largest seen), 24 at L = 6 (~2.4x).
RTOL_RMS_BF16_PER_LAYER = 4 * 2.0 ** -8


def _forward(cfg, params, tokens_BT):
    fwd = jax.vmap(lambda t: model.forward(params, cfg, t, return_hidden=True))
    return jax.jit(fwd)(jnp.asarray(tokens_BT))


def _tree_equal(a, b) -> bool:
    la, ta = jax.tree_util.tree_flatten_with_path(a)
    lb, tb = jax.tree_util.tree_flatten_with_path(b)
    return ta == tb and all(x.dtype == y.dtype and np.array_equal(np.asarray(x), np.asarray(y))
                            for (_, x), (_, y) in zip(la, lb))


@pytest.fixture(scope="module")
def loaded():
    return {n: load_hf(FIXTURES / n) for n in NAMES}


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


# --- parity with transformers ------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_float32_parity_with_transformers(name, loaded):
    cfg, params = loaded[name]
    ref = np.load(FIXTURES / name / "expected.npz")
    out = _forward(cfg, params, ref["tokens"])
    assert out.hidden.shape == (2, cfg.n_layers + 1, 12, cfg.d_model)
    for key, ours in (("logits", out.logits), ("hidden", out.hidden), ("normed", out.normed)):
        np.testing.assert_allclose(np.asarray(ours), ref[key], rtol=0,
                                   atol=_bound(name, ref[key]), err_msg=f"{name}: {key}")


@pytest.mark.parametrize("name", NAMES)
def test_bfloat16_parity_with_transformers(name):
    cfg, params = load_hf(FIXTURES / name, dtype=jnp.bfloat16)
    assert {a.dtype for a in jax.tree_util.tree_leaves(params)} == {jnp.dtype(jnp.bfloat16)}
    ref = np.load(FIXTURES / name / "expected.npz")
    out = _forward(cfg, params, ref["tokens"])
    assert out.logits.dtype == jnp.bfloat16
    for key, ours in (("logits", out.logits), ("hidden", out.hidden), ("normed", out.normed)):
        err = np.asarray(ours, np.float32) - ref[key]
        rel = np.sqrt((err ** 2).mean() / (ref[key] ** 2).mean())
        assert rel < RTOL_RMS_BF16_PER_LAYER * cfg.n_layers, \
            f"{name}: {key} relative RMS error {rel:.4f}"


def test_config_of_each_fixture(loaded):
    gpt2, gqa, tied, qwen, neox = (loaded[n][0] for n in NAMES if n != "gemma3")
    assert (gpt2.position, gpt2.norm, gpt2.activation, gpt2.linear_bias, gpt2.tie_embeddings,
            gpt2.max_seq_len, gpt2.d_ff) == ("learned", "layernorm", "gelu_tanh", True, True, 32,
                                             64)
    # GPT-NeoX as exported here computes exactly the gpt2-rope presets' model
    rope_gpt2 = get_preset("gpt2-rope-tiny")
    assert all(getattr(neox, f) == getattr(rope_gpt2, f) for f in
               ("position", "norm", "activation", "gated_mlp", "linear_bias", "qkv_bias",
                "tie_embeddings", "rope_theta", "norm_eps"))
    assert (gqa.n_heads, gqa.resolved_n_kv_heads, gqa.rope_theta, gqa.tie_embeddings) == (4, 2, 5e5, False)
    assert (tied.resolved_head_dim, tied.tie_embeddings) == (16, True)
    assert (qwen.qkv_bias, qwen.linear_bias, qwen.resolved_n_kv_heads, qwen.rope_theta) == (True, False, 2,
                                                                                  1e6)
    assert not any(c.shared_embedding for c in (gpt2, gqa, tied, qwen, neox))
    assert gqa.name == "llama_gqa"  # named after the folder
    assert config_from_hf(FIXTURES / "qwen2", name="x") == dataclasses.replace(qwen, name="x")


# --- round trips -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_import_export_import_is_bitwise(name, loaded, tmp_path):
    cfg, params = loaded[name]
    out = save_hf(cfg, params, tmp_path / "export")
    cfg2, params2 = load_hf(out)
    assert cfg2 == dataclasses.replace(cfg, name="export")
    assert _tree_equal(params, params2)
    # The exported file holds the original tensors, bitwise, under the same names.
    orig = load_file(FIXTURES / name / "model.safetensors")
    back = load_file(out / "model.safetensors")
    assert orig.keys() == back.keys()
    assert all(np.array_equal(orig[k], back[k]) for k in orig)


def test_bfloat16_export_round_trip(loaded, tmp_path):
    cfg, params = load_hf(FIXTURES / "qwen2", dtype=jnp.bfloat16)
    out = save_hf(cfg, params, tmp_path / "bf16", extra_config={"eos_token_id": 7})
    hf_config = json.loads((out / "config.json").read_text())
    assert (hf_config["torch_dtype"], hf_config["eos_token_id"]) == ("bfloat16", 7)
    embed = load_file(out / "model.safetensors")["model.embed_tokens.weight"]
    assert embed.dtype.name == "bfloat16"
    assert _tree_equal(params, load_hf(out, dtype=jnp.bfloat16)[1])
    # bfloat16 -> float32 is exact
    f32 = load_hf(out, dtype=jnp.float32)[1]
    assert _tree_equal(jax.tree.map(lambda a: a.astype(jnp.float32), params), f32)


@pytest.mark.parametrize("preset", ["llama2-tiny", "qwen2-tiny", "gpt2-rope-tiny"])
def test_presets_export_and_reimport(preset, tmp_path):
    cfg = get_preset(preset)
    params = model.init(cfg, jax.random.key(0))
    cfg2, params2 = load_hf(save_hf(cfg, params, tmp_path / preset))
    arch = ("vocab_size", "d_model", "n_layers", "n_heads", "resolved_n_kv_heads",
            "resolved_head_dim", "d_ff", "max_seq_len", "activation", "gated_mlp", "norm",
            "position", "rope_theta", "linear_bias", "qkv_bias", "tie_embeddings", "norm_eps",
            "init_std")
    assert all(getattr(cfg2, f) == getattr(cfg, f) for f in arch)
    assert _tree_equal(params, params2)


@pytest.mark.parametrize("changes, match", [
    ({"linear_bias": False}, "GPT-NeoX has biases on every linear"),
    ({"attention": "attn0_causal"}, "softmax attention"),
    ({"norm": "none"}, "norm='none': every HF family has norms"),
    ({"attn_output_transform": "sqrt_i"}, "attn_output_transform='sqrt_i'"),
])
def test_unexportable_config_is_refused(changes, match, tmp_path):
    cfg = get_preset("gpt2-rope-tiny").ablate(**changes)
    with pytest.raises(UserError, match="cannot be exported.*" + match):
        save_hf(cfg, model.init(cfg, jax.random.key(0)), tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_export_refuses_mismatched_params_and_existing_folder(loaded, tmp_path):
    cfg, params = loaded["llama_gqa"]
    bad = {**params, "layers_0": {**params["layers_0"], "extra": {"kernel": jnp.zeros(3)}}}
    with pytest.raises(UserError, match="layers_0/extra/kernel"):
        save_hf(cfg, bad, tmp_path / "a")
    save_hf(cfg, params, tmp_path / "a")
    with pytest.raises(UserError, match="exists.*overwrite=True"):
        save_hf(cfg, params, tmp_path / "a")
    save_hf(cfg, params, tmp_path / "a", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]  # no temporary folders left


def test_failed_export_leaves_nothing(loaded, tmp_path, monkeypatch):
    import bornbiased_jax.hf as hf

    def fail(path, tensors):
        Path(path).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(hf, "write_safetensors", fail)
    with pytest.raises(OSError, match="disk full"):
        save_hf(*loaded["gpt2"], tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_sharded_checkpoint_loads_like_a_single_file(loaded, tmp_path):
    folder = _copy("llama_gqa", tmp_path)
    tensors = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2],
              "model-00002-of-00002.safetensors": names[1::2]}
    for f, ns in shards.items():
        save_file({n: tensors[n] for n in ns}, folder / f, metadata={"format": "pt"})
    index = {"metadata": {}, "weight_map": {n: f for f, ns in shards.items() for n in ns}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    assert _tree_equal(load_hf(folder)[1], loaded["llama_gqa"][1])

    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(UserError, match="missing.*model-00002-of-00002.safetensors"):
        load_hf(folder)


def test_sharded_export(loaded, tmp_path):
    cfg, params = loaded["qwen2"]  # 27 tensors, 105 KiB
    out = save_hf(cfg, params, tmp_path / "sharded", max_shard_bytes=20_000)
    files = sorted(p.name for p in out.iterdir())
    assert "model.safetensors" not in files and "model.safetensors.index.json" in files
    shards = [f for f in files if f.startswith("model-")]
    assert len(shards) > 4 and all(f.endswith(f"-of-{len(shards):05d}.safetensors") for f in shards)
    assert all((out / f).stat().st_size < 20_000 + 2_000 for f in shards)  # 2 kB: the headers
    assert _tree_equal(load_hf(out)[1], params)
    with pytest.raises(UserError, match="max_shard_bytes must be a positive integer"):
        save_hf(cfg, params, tmp_path / "x", max_shard_bytes=0)


def test_base_model_names_and_old_buffers_are_accepted(loaded, tmp_path):
    """The Hub's original ``gpt2`` was saved without ``transformer.`` and with causal-mask
    buffers; old LLaMA checkpoints carry ``rotary_emb.inv_freq``."""
    folder = _copy("gpt2", tmp_path)
    t = load_file(folder / "model.safetensors")
    t = {k.removeprefix("transformer."): v for k, v in t.items()}
    t["h.0.attn.bias"] = np.tril(np.ones((1, 1, 32, 32), np.float32))
    t["h.0.attn.masked_bias"] = np.array(-1e4, np.float32)
    save_file(t, folder / "model.safetensors")
    assert _tree_equal(load_hf(folder)[1], loaded["gpt2"][1])

    folder = _copy("gpt_neox", tmp_path)  # Pythia-era names: embed_out, attention buffers
    t = load_file(folder / "model.safetensors")
    head = np.random.default_rng(0).normal(size=(128, 32)).astype(np.float32)
    t.update({"embed_out.weight": head, "gpt_neox.layers.0.attention.bias": np.ones((1, 1, 4, 4)),
              "gpt_neox.layers.1.attention.rotary_emb.inv_freq": np.ones(4, np.float32)})
    save_file(t, folder / "model.safetensors")
    hf_config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**hf_config, "tie_word_embeddings": False}))
    cfg, params = load_hf(folder)
    assert not cfg.tie_embeddings and np.array_equal(params["lm_head"]["kernel"], head.T)
    out = save_hf(cfg, params, tmp_path / "neox_export")
    assert np.array_equal(load_file(out / "model.safetensors")["embed_out.weight"], head)

    folder = _copy("llama_tied", tmp_path)
    t = load_file(folder / "model.safetensors")
    t["model.layers.1.self_attn.rotary_emb.inv_freq"] = np.ones(8, np.float32)
    t["lm_head.weight"] = t["model.embed_tokens.weight"]  # tied, stored anyway: accepted
    save_file(t, folder / "model.safetensors")
    assert _tree_equal(load_hf(folder)[1], loaded["llama_tied"][1])


# --- bad checkpoints ---------------------------------------------------------------------------
def _edit_tensors(folder: Path, edit) -> None:
    t = load_file(folder / "model.safetensors")
    edit(t)
    save_file(t, folder / "model.safetensors")


def test_missing_config_or_weights_or_folder(tmp_path):
    folder = _copy("qwen2", tmp_path)
    (folder / "config.json").unlink()
    with pytest.raises(UserError, match="config.json"):
        load_hf(folder)
    folder = _copy("gpt2", tmp_path / "b")
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(UserError, match="neither model.safetensors.*pytorch_model.bin"):
        load_hf(folder)
    with pytest.raises(UserError, match="not a folder"):
        load_hf(tmp_path / "nowhere")
    with pytest.raises(UserError, match="dtype float16 is not supported"):
        load_hf(FIXTURES / "gpt2", dtype=jnp.float16)
    with pytest.raises(UserError, match="dtype 'f32' is not supported.*bfloat16"):
        load_hf(FIXTURES / "gpt2", dtype="f32")
    params = load_hf(FIXTURES / "gpt2", dtype="bfloat16")[1]  # dtype names work too
    assert params["embed"]["embedding"].dtype == jnp.bfloat16


def test_wrong_shape_names_tensor_and_both_shapes(tmp_path):
    folder = _copy("llama_gqa", tmp_path)
    _edit_tensors(folder, lambda t: t.update({"model.layers.1.self_attn.k_proj.weight":
                                              np.zeros((32, 32), np.float32)}))
    with pytest.raises(UserError, match=r"model\.layers\.1\.self_attn\.k_proj\.weight has shape "
                                        r"\(32, 32\), expected \(16, 32\)"):
        load_hf(folder)


def test_missing_and_extra_tensors_are_named(tmp_path):
    folder = _copy("qwen2", tmp_path)
    _edit_tensors(folder, lambda t: t.pop("model.layers.0.self_attn.q_proj.bias"))
    with pytest.raises(UserError, match=r"missing.*model\.layers\.0\.self_attn\.q_proj\.bias"):
        load_hf(folder)
    folder = _copy("qwen2", tmp_path / "b")
    _edit_tensors(folder, lambda t: t.update({"model.layers.0.self_attn.o_proj.bias":
                                              np.zeros(32, np.float32),
                                              "score.weight": np.zeros((2, 32), np.float32)}))
    with pytest.raises(UserError, match=r"unexpected.*o_proj\.bias.*score\.weight"):
        load_hf(folder)


def test_untied_head_that_differs_from_embedding_is_refused(tmp_path):
    folder = _copy("gpt2", tmp_path)  # tie_word_embeddings = true
    _edit_tensors(folder, lambda t: t.update({"lm_head.weight": np.ones((128, 32), np.float32)}))
    with pytest.raises(UserError, match="lm_head.weight differs from transformer.wte.weight"):
        load_hf(folder)


def test_integer_weights_are_refused(tmp_path):
    folder = _copy("gpt2", tmp_path)
    _edit_tensors(folder, lambda t: t.update({"transformer.ln_f.bias": np.zeros(32, np.int8)}))
    with pytest.raises(UserError, match="transformer.ln_f.bias has dtype I8"):
        load_hf(folder)


@pytest.mark.parametrize("damage", ["truncated", "garbage_header", "empty"])
def test_corrupt_safetensors(damage, tmp_path):
    folder = _copy("llama_tied", tmp_path)
    f = folder / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes({"truncated": data[:-100],
                   "garbage_header": (16).to_bytes(8, "little") + b"{not json at all" + data[24:],
                   "empty": b""}[damage])
    with pytest.raises(UserError, match="model.safetensors: not a readable safetensors file"):
        load_hf(folder)


# --- config.json mapping -----------------------------------------------------------------------
LLAMA = dict(model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=64,
             hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)


# Released configs, as their config.json files read (weights not needed): parameter counts
# as transformers 5.23 counts them on the meta device (GPT-2 124,439,808; Llama-2-7B
# 6,738,415,616; Qwen2-0.5B 494,032,768).
GPT2_SMALL = dict(architectures=["GPT2LMHeadModel"], model_type="gpt2", vocab_size=50257,
                  n_ctx=1024, n_positions=1024, n_embd=768, n_head=12, n_layer=12,
                  activation_function="gelu_new", layer_norm_epsilon=1e-5)
LLAMA2_7B = dict(architectures=["LlamaForCausalLM"], model_type="llama", bos_token_id=1,
                 eos_token_id=2, hidden_act="silu", hidden_size=4096, initializer_range=0.02,
                 intermediate_size=11008, max_position_embeddings=4096, num_attention_heads=32,
                 num_hidden_layers=32, num_key_value_heads=32, pretraining_tp=1,
                 rms_norm_eps=1e-5, rope_scaling=None, tie_word_embeddings=False,
                 torch_dtype="float16", vocab_size=32000)
QWEN2_05B = dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_act="silu",
                 hidden_size=896, intermediate_size=4864, max_position_embeddings=131072,
                 max_window_layers=24, num_attention_heads=14, num_hidden_layers=24,
                 num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=1000000.0,
                 sliding_window=131072, tie_word_embeddings=True, torch_dtype="bfloat16",
                 use_sliding_window=False, vocab_size=151936)


def _n_params(cfg) -> int:
    from bornbiased_jax.hf import expected_shapes

    return sum(int(np.prod(s)) for s in expected_shapes(cfg).values())


def test_released_configs():
    gpt2, llama, qwen = (config_from_hf(c) for c in (GPT2_SMALL, LLAMA2_7B, QWEN2_05B))
    assert _n_params(gpt2) == 124_439_808
    assert _n_params(llama) == 6_738_415_616
    assert _n_params(qwen) == 494_032_768
    assert (llama.resolved_head_dim, llama.resolved_n_kv_heads, llama.max_seq_len, llama.norm_eps) == (
        128, 32, 4096, 1e-5)
    assert (qwen.resolved_n_kv_heads, qwen.resolved_head_dim, qwen.tie_embeddings, qwen.rope_theta) == (
        2, 64, True, 1e6)
    pythia = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
              "rotary_pct": 0.25, "use_parallel_residual": True}
    with pytest.raises(UserError, match="use_parallel_residual"):
        config_from_hf(pythia)
    llama31 = {**LLAMA2_7B, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    with pytest.raises(UserError, match="RoPE scaling 'llama3' needs low_freq_factor"):
        config_from_hf(llama31)


def test_old_style_rope_fields_are_read():
    old = config_from_hf({**LLAMA, "rope_theta": 5e5, "rope_scaling": None})
    new = config_from_hf({**LLAMA, "rope_parameters": {"rope_type": "default",
                                                       "rope_theta": 5e5}})
    assert old == new and old.rope_theta == 5e5
    assert config_from_hf(LLAMA).rope_theta == 10000.0
    both = config_from_hf({**LLAMA, "attention_bias": True, "mlp_bias": True})
    assert both.linear_bias and not both.qkv_bias


@pytest.mark.parametrize("change, match", [
    ({"model_type": "mixtral"}, "model_type='mixtral' is not supported; supported: gpt2"),
    ({"architectures": ["LlamaForSequenceClassification"]}, "architectures"),
    ({"rope_scaling": {"type": "proportional", "factor": 2.0}},
     "rope_type='proportional' is not supported by the llama architecture record"),
    ({"rope_parameters": {"rope_type": "llama3", "factor": 8.0}},
     "RoPE scaling 'llama3' needs low_freq_factor"),
    ({"partial_rotary_factor": 0.5}, "partial_rotary_factor=0.5 is not supported by the llama"),
    ({"hidden_activation_quantum": 1}, "key 'hidden_activation_quantum' is not one the llama "
                                       "architecture record knows"),
    ({"num_local_experts": 8}, "num_local_experts=8.*mixture-of-experts"),
    ({"attention_bias": True}, "attention_bias/mlp_bias"),
    ({"hidden_act": "gelu_fast"}, "hidden_act='gelu_fast'"),
    ({"quantization_config": {"quant_method": "gptq"}}, "quantization_config='gptq'"),
    ({"layer_types": ["full_attention", "sliding_attention"]}, "layer_types"),
    ({"num_key_value_heads": 3}, "n_kv_heads=3 does not divide n_heads=4"),
    ({"hidden_size": "big"}, "hidden_size|d_model"),
])
def test_unsupported_llama_fields_are_named(change, match):
    with pytest.raises(UserError, match=match):
        config_from_hf({**LLAMA, **change})


@pytest.mark.parametrize("hf, match", [
    ({"model_type": "qwen2", "layer_types": ["full_attention"]}, "layer_types=.1 entries"),
    ({"model_type": "gpt_neox", "rotary_pct": 1.0}, "use_parallel_residual=True"),  # Pythia
    ({"model_type": "gpt_neox", "use_parallel_residual": False}, "partial_rotary_factor=0.25"),
    ({"model_type": "gpt_neox", "use_parallel_residual": False, "rotary_pct": 1.0,
      "attention_bias": False}, "attention_bias=False"),
    ({"model_type": "gpt2", "scale_attn_by_inverse_layer_idx": True},
     "scale_attn_by_inverse_layer_idx"),
    ({"model_type": "gpt2", "add_cross_attention": True}, "add_cross_attention"),
    ({"model_type": "gpt2", "activation_function": "quick_gelu"}, "activation_function"),
    ({}, "model_type=None"),
])
def test_unsupported_gpt2_and_qwen2_fields_are_named(hf, match):
    with pytest.raises(UserError, match=match):
        config_from_hf(hf)


def test_malformed_config_json(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        config_from_hf(tmp_path)


# --- tokenizer ---------------------------------------------------------------------------------
def test_tokenizer_is_loaded_when_present(loaded, tmp_path):
    tok = load_hf_tokenizer(FIXTURES / "gpt2")
    assert tok.encode("the transformer is born biased").ids == [1, 3, 4, 5, 6]
    assert load_hf_tokenizer(FIXTURES / "qwen2") is None
    out = save_hf(*loaded["gpt2"], tmp_path / "with_tok", tokenizer=tok)
    assert load_hf_tokenizer(out).encode("some tokens").ids == [8, 9]
    (out / "tokenizer.json").write_text("{}")
    with pytest.raises(UserError, match="tokenizer.json: not a tokenizers JSON file"):
        load_hf_tokenizer(out)


# --- live comparison, where torch and transformers are installed -------------------------------
live = pytest.mark.skipif(
    not (importlib.util.find_spec("torch") and importlib.util.find_spec("transformers")),
    reason="needs torch and transformers (the committed-fixture tests above run without them)")


@live
@pytest.mark.parametrize("preset, changes", [
    ("llama2-tiny", {"n_kv_heads": 2}), ("qwen2-tiny", {"n_kv_heads": 2}),
    ("gpt2-rope-tiny", {}), ("gpt2-rope-tiny", {"tie_embeddings": False})])
def test_live_export_opens_in_transformers_with_equal_logits(preset, changes, tmp_path):
    """Also sharded: the untied GPT-2 with RoPE is written in shards of at most 100 kB."""
    import torch
    from transformers import AutoModelForCausalLM

    cfg = dataclasses.replace(get_preset(preset), **changes)
    keys = iter(jax.random.split(jax.random.key(1), 64))
    # Redrawn weights (see make_hf_fixtures.py): init's zero biases and unit scales would hide
    # a misplaced bias or scale.
    def redraw(path, a):
        z = jax.random.normal(next(keys), a.shape)
        leaf = path[-1].key
        if leaf == "scale":
            return 1 + 0.2 * z
        if leaf == "bias":
            return 0.2 * z
        return 0.3 * z if leaf == "embedding" else z / a.shape[0] ** 0.5
    params = jax.tree_util.tree_map_with_path(redraw, model.init(cfg, jax.random.key(0)))
    out = save_hf(cfg, params, tmp_path / "export",
                  max_shard_bytes=100_000 if changes == {"tie_embeddings": False} else 5 * 10**9)
    hf = AutoModelForCausalLM.from_pretrained(out, attn_implementation="eager").eval()
    tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, (2, 12))
    with torch.no_grad():
        ref = hf(input_ids=torch.from_numpy(tokens), output_hidden_states=True)
    ours = _forward(cfg, params, tokens)
    np.testing.assert_allclose(np.asarray(ours.logits), ref.logits.numpy(), rtol=0, atol=ATOL_F32)
    for i in range(cfg.n_layers):  # hidden_states[L] is after the final norm in transformers 5
        np.testing.assert_allclose(np.asarray(ours.hidden[:, i]), ref.hidden_states[i].numpy(),
                                   rtol=0, atol=ATOL_F32)


@live
@pytest.mark.parametrize("name", NAMES)
def test_live_fixture_still_matches_installed_transformers(name, loaded):
    import torch
    from transformers import AutoModelForCausalLM

    ref = np.load(FIXTURES / name / "expected.npz")
    hf = AutoModelForCausalLM.from_pretrained(FIXTURES / name, attn_implementation="eager")
    with torch.no_grad():
        logits = hf.eval()(input_ids=torch.from_numpy(ref["tokens"].astype(np.int64))).logits
    cfg, params = loaded[name]
    np.testing.assert_allclose(np.asarray(_forward(cfg, params, ref["tokens"]).logits),
                               logits.numpy(), rtol=0, atol=_bound(name, logits.numpy()))
