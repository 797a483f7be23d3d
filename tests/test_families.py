"""The families auditors hold -- Llama 3, Qwen3, Mistral, Phi-3, OLMo 2 -- each one record of
``bornbiased_jax.architectures``: parity with transformers on random-weight checkpoints, round
trips, GGUF files, released configs, bad input, and what each family's own piece changes.

The fixtures (``tests/fixtures/make_hf_fixtures.py``: 2 layers, d = 32, T = 12, every tensor
redrawn) exercise each family's piece at a length beyond its window: Llama 3's RoPE scaling
(base 100, so that of four frequency pairs one is kept, one on the ramp, two divided), Qwen3's
per-head QK-norm, YaRN and a global then a sliding layer (window 4), Mistral's window of 4 on
every layer, Phi-3's fused projections, window 6 and LongRoPE (long factors at T = 12, short at
the 6-token prefix), OLMo 2's post-norms and projection-wide QK-norm.

Tolerance (float32): both sides run the same float32 arithmetic in another order, so they
differ by rounding, accumulated over the depth (test_hf.py derives it: 1e-5 is 10.5 ulps at
|value| in [8, 16), about twice the largest deviation of its 2-layer fixtures). Measured here
with transformers 5.24 / torch 2.13 on CPU, the largest deviations over logits, every hidden
state and the final norm's output are 1.8e-6 .. 6.0e-6 for values up to 7.5; the same bound
holds. Every piece moves the logits by far more (``test_each_familys_piece_changes_the_output``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gguf_files import write_gguf
from safetensors.numpy import load_file

from bornbiased_jax import architectures, model
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf import config_from_hf, load_hf, save_hf
from bornbiased_jax.hf.gguf import load_gguf
from bornbiased_jax.presets import get_preset

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
FAMILY = {"llama3": "llama", "qwen3": "qwen3", "mistral": "mistral", "phi3": "phi3",
          "olmo2": "olmo2"}
NAMES = list(FAMILY)
ATOL_F32 = 1e-5  # see the module docstring
RTOL_RMS_BF16_PER_LAYER = 4 * 2.0 ** -8  # test_hf.py's bound: 4 bfloat16 spacings per layer


def _forward(cfg, params, tokens_BT):
    return jax.jit(jax.vmap(lambda t: model.forward(params, cfg, t, return_hidden=True)))(
        jnp.asarray(tokens_BT))


def _equal(a, b) -> bool:
    la, ta = jax.tree_util.tree_flatten_with_path(a)
    lb, tb = jax.tree_util.tree_flatten_with_path(b)
    return ta == tb and all(np.array_equal(np.asarray(x), np.asarray(y))
                            for (_, x), (_, y) in zip(la, lb))


@pytest.fixture(scope="module")
def loaded():
    return {n: load_hf(FIXTURES / n) for n in NAMES}


# --- parity with transformers ------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_float32_parity_with_transformers(name, loaded):
    cfg, params = loaded[name]
    assert cfg.architecture == FAMILY[name]
    ref = np.load(FIXTURES / name / "expected.npz")
    out = _forward(cfg, params, ref["tokens"])
    for key, ours in (("logits", out.logits), ("hidden", out.hidden), ("normed", out.normed)):
        np.testing.assert_allclose(np.asarray(ours), ref[key], rtol=0, atol=ATOL_F32,
                                   err_msg=f"{name}: {key}")
    if "short_logits" in ref:  # LongRoPE: the short factors while T <= the original length
        T = ref["short_logits"].shape[1]
        short = _forward(cfg, params, ref["tokens"][:, :T]).logits
        np.testing.assert_allclose(np.asarray(short), ref["short_logits"], rtol=0,
                                   atol=ATOL_F32)
        assert np.abs(np.asarray(short) - np.asarray(out.logits[:, :T])).max() > 1e-2


@pytest.mark.parametrize("name", NAMES)
def test_bfloat16_parity_with_transformers(name):
    cfg, params = load_hf(FIXTURES / name, dtype=jnp.bfloat16)
    ref = np.load(FIXTURES / name / "expected.npz")
    out = _forward(cfg, params, ref["tokens"])
    for key, ours in (("logits", out.logits), ("hidden", out.hidden), ("normed", out.normed)):
        err = np.asarray(ours, np.float32) - ref[key]
        rel = np.sqrt((err ** 2).mean() / (ref[key] ** 2).mean())
        assert rel < RTOL_RMS_BF16_PER_LAYER * cfg.n_layers, f"{name}: {key} {rel:.4f}"


def _without(cfg, name):
    """The fixture's config without its family's piece(s), one at a time."""
    r = dataclasses.replace
    return {"llama3": lambda: [r(cfg, rope_scaling=None)],
            "qwen3": lambda: [r(cfg, rope_scaling=None),
                              r(cfg, sliding_window=None, layer_types=None)],
            "mistral": lambda: [r(cfg, sliding_window=None)],
            "phi3": lambda: [r(cfg, rope_scaling=None), r(cfg, sliding_window=None)],
            "olmo2": lambda: [r(cfg, qk_norm_scope="head", qk_norm=False)]}[name]()


@pytest.mark.parametrize("name", NAMES)
def test_each_familys_piece_changes_the_output(name, loaded):
    """The fixtures see each piece: without it (RoPE scaling, the window, OLMo 2's QK-norm)
    the logits move by 100x the parity bound or more."""
    cfg, params = loaded[name]
    ref = np.load(FIXTURES / name / "expected.npz")["logits"]
    for other in _without(cfg, name):
        p = params
        if not other.qk_norm and cfg.qk_norm:  # drop the norms' gains with them
            p = jax.tree.map(lambda x: x, params)
            for layer in range(cfg.n_layers):
                attn = p[f"layers_{layer}"]["attn"]
                attn.pop("q_proj_norm"), attn.pop("k_proj_norm")
        moved = np.abs(np.asarray(_forward(other, p, np.load(
            FIXTURES / name / "expected.npz")["tokens"]).logits) - ref).max()
        assert moved > 100 * ATOL_F32, (name, moved)


# --- round trips and export --------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_import_export_import_is_bitwise_in_the_familys_format(name, loaded, tmp_path):
    """Fused projections (Phi-3) are split on load and fused again on save: the exported file
    holds the original tensors, bitwise, under the original names, and config.json names the
    family's class."""
    cfg, params = loaded[name]
    out = save_hf(cfg, params, tmp_path / "export")
    cfg2, params2 = load_hf(out)
    assert cfg2 == dataclasses.replace(cfg, name="export") and cfg2.architecture == FAMILY[name]
    assert _equal(params, params2)
    orig, back = (load_file(f / "model.safetensors") for f in (FIXTURES / name, out))
    assert orig.keys() == back.keys() and all(np.array_equal(orig[k], back[k]) for k in orig)
    hf = json.loads((out / "config.json").read_text())
    assert hf["architectures"] == [architectures.get(FAMILY[name]).hf_class]


@pytest.mark.parametrize("preset", ["llama3-tiny", "qwen3-tiny", "mistral-tiny", "phi3-tiny",
                                    "olmo2-tiny"])
def test_presets_export_and_reimport(preset, tmp_path):
    cfg = get_preset(preset)
    params = model.init(cfg, jax.random.key(0))
    cfg2, params2 = load_hf(save_hf(cfg, params, tmp_path / preset))
    assert cfg2 == dataclasses.replace(cfg, name=preset, shared_embedding=False)
    assert cfg2.architecture == cfg.architecture and _equal(params, params2)


live = pytest.mark.skipif(
    not (importlib.util.find_spec("torch") and importlib.util.find_spec("transformers")),
    reason="needs torch and transformers (the committed-fixture tests above run without them)")


@live
@pytest.mark.parametrize("preset", ["llama3-tiny", "qwen3-tiny", "mistral-tiny", "phi3-tiny",
                                    "olmo2-tiny"])
def test_live_export_opens_in_transformers_with_equal_logits(preset, tmp_path):
    """Each family's test-size preset, every tensor redrawn, written by save_hf: transformers
    loads it into the family's class and computes the same logits at T = 40, beyond the
    windows (16) and, for phi3-tiny, beyond LongRoPE's original 32 positions."""
    import torch
    from transformers import AutoModelForCausalLM

    cfg = get_preset(preset)
    keys = iter(jax.random.split(jax.random.key(1), 256))

    def redraw(path, a):
        z = jax.random.normal(next(keys), a.shape)
        leaf = path[-1].key
        if leaf == "scale":
            return 1 + 0.2 * z
        return 0.3 * z if leaf == "embedding" else z / a.shape[0] ** 0.5
    params = jax.tree_util.tree_map_with_path(redraw, model.init(cfg, jax.random.key(0)))
    out = save_hf(cfg, params, tmp_path / "export")
    hf = AutoModelForCausalLM.from_pretrained(out, attn_implementation="eager").eval()
    assert type(hf).__name__ == architectures.get(cfg.architecture).hf_class
    tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, (2, 40))
    with torch.no_grad():
        ref = hf(input_ids=torch.from_numpy(tokens)).logits.numpy()
    ours = np.asarray(_forward(cfg, params, tokens).logits)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=2e-5 * max(1.0, np.abs(ref).max()))


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
                               logits.numpy(), rtol=0, atol=ATOL_F32)


# --- GGUF --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_gguf_of_each_family_is_its_hf_model(name, loaded, tmp_path):
    """Written as llama.cpp's converter writes the family (Llama 3's ``rope_freqs`` divisors,
    Phi-3's fused tensors and LongRoPE factors, OLMo 2's projection-wide QK-norm gains, YaRN's
    keys), read back: the same weights bitwise and the same function, save for what a GGUF
    does not carry -- the windows of Mistral (written as a ``llama`` file) and Qwen3, which
    llama.cpp runs without -- and float32 metadata (eps, RoPE factors)."""
    cfg, params = loaded[name]
    g_cfg, g_params = load_gguf(write_gguf(tmp_path / f"{name}.gguf", FIXTURES / name))
    assert _equal(params, g_params)
    want = cfg if name not in ("mistral", "qwen3") else dataclasses.replace(
        cfg, sliding_window=None, layer_types=None)
    tokens = np.load(FIXTURES / name / "expected.npz")["tokens"]
    a = np.asarray(_forward(want, params, tokens).logits)
    b = np.asarray(_forward(g_cfg, g_params, tokens).logits)
    np.testing.assert_allclose(b, a, rtol=0, atol=ATOL_F32)
    assert g_cfg.architecture == ("llama" if name == "mistral" else FAMILY[name])
    if name == "llama3":  # the rope_freqs divisors read back as Llama 3's scaling
        assert g_cfg.rope_scaling.kind == "llama3" and g_cfg.rope_scaling.factor == 8.0


def test_llama3_scaling_is_read_back_from_any_rope_freqs():
    """rope_freqs holds only the divisors: the fit finds thresholds that give them whatever
    the original length assumed, with several pairs on the ramp, one, or none."""
    from bornbiased_jax.rope import RopeScaling, fit_llama3, llama3_factors

    for K, theta, orig, low, high in ((128, 5e5, 8192, 1.0, 4.0), (64, 5e5, 8192, 1.0, 4.0),
                                      (8, 100.0, 32, 1.0, 4.0), (16, 1e4, 64, 2.0, 3.0)):
        s = RopeScaling("llama3", factor=8.0, low_freq_factor=low, high_freq_factor=high,
                        original_max_position_embeddings=orig)
        f = llama3_factors(K, theta, s).astype(np.float32)
        for assumed in (orig, 8192):
            fit = fit_llama3(f, K, theta, assumed)
            assert fit is not None and np.allclose(llama3_factors(K, theta, fit), f, rtol=1e-5)
    assert fit_llama3(np.linspace(1, 3, 8) ** 2, 16, 1e4, 64) is None  # no Llama 3 scaling


# --- released configs, as their config.json files read -----------------------------------------
LLAMA = dict(model_type="llama", architectures=["LlamaForCausalLM"], vocab_size=64,
             hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)


def _n_params(cfg) -> int:
    from bornbiased_jax.hf import expected_shapes

    return sum(int(np.prod(s)) for s in expected_shapes(cfg).values())

LLAMA32_1B = dict(architectures=["LlamaForCausalLM"], attention_bias=False, attention_dropout=0.0,
                  bos_token_id=128000, eos_token_id=128001, head_dim=64, hidden_act="silu",
                  hidden_size=2048, initializer_range=0.02, intermediate_size=8192,
                  max_position_embeddings=131072, mlp_bias=False, model_type="llama",
                  num_attention_heads=32, num_hidden_layers=16, num_key_value_heads=8,
                  pretraining_tp=1, rms_norm_eps=1e-5,
                  rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                "original_max_position_embeddings": 8192,
                                "rope_type": "llama3"},
                  rope_theta=500000.0, tie_word_embeddings=True, torch_dtype="bfloat16",
                  transformers_version="4.45.0.dev0", use_cache=True, vocab_size=128256)
QWEN3_06B = dict(architectures=["Qwen3ForCausalLM"], attention_bias=False, attention_dropout=0.0,
                 bos_token_id=151643, eos_token_id=151645, head_dim=128, hidden_act="silu",
                 hidden_size=1024, initializer_range=0.02, intermediate_size=3072,
                 max_position_embeddings=40960, max_window_layers=28, model_type="qwen3",
                 num_attention_heads=16, num_hidden_layers=28, num_key_value_heads=8,
                 rms_norm_eps=1e-6, rope_scaling=None, rope_theta=1000000, sliding_window=None,
                 tie_word_embeddings=True, torch_dtype="bfloat16", transformers_version="4.51.0",
                 use_cache=True, use_sliding_window=False, vocab_size=151936)
MISTRAL_7B = dict(architectures=["MistralForCausalLM"], bos_token_id=1, eos_token_id=2,
                  hidden_act="silu", hidden_size=4096, initializer_range=0.02,
                  intermediate_size=14336, max_position_embeddings=32768, model_type="mistral",
                  num_attention_heads=32, num_hidden_layers=32, num_key_value_heads=8,
                  rms_norm_eps=1e-5, rope_theta=10000.0, sliding_window=4096,
                  tie_word_embeddings=False, torch_dtype="bfloat16",
                  transformers_version="4.34.0.dev0", use_cache=True, vocab_size=32000)
PHI3_MINI = dict(_name_or_path="Phi-3-mini-4k-instruct", architectures=["Phi3ForCausalLM"],
                 attention_dropout=0.0, auto_map={"AutoConfig": "configuration_phi3.Phi3Config"},
                 bos_token_id=1, embd_pdrop=0.0, eos_token_id=32000, hidden_act="silu",
                 hidden_size=3072, initializer_range=0.02, intermediate_size=8192,
                 max_position_embeddings=4096, model_type="phi3", num_attention_heads=32,
                 num_hidden_layers=32, num_key_value_heads=32,
                 original_max_position_embeddings=4096, pad_token_id=32000, resid_pdrop=0.0,
                 rms_norm_eps=1e-5, rope_scaling=None, rope_theta=10000.0, sliding_window=2047,
                 tie_word_embeddings=False, torch_dtype="bfloat16",
                 transformers_version="4.40.2", use_cache=True, attention_bias=False,
                 vocab_size=32064)
OLMO2_1B = dict(architectures=["Olmo2ForCausalLM"], attention_bias=False, attention_dropout=0.0,
                eos_token_id=100257, hidden_act="silu", hidden_size=2048,
                initializer_range=0.02, intermediate_size=8192, max_position_embeddings=4096,
                model_type="olmo2", num_attention_heads=16, num_hidden_layers=16,
                num_key_value_heads=16, pad_token_id=100277, rms_norm_eps=1e-6,
                rope_scaling=None, rope_theta=500000, tie_word_embeddings=False,
                torch_dtype="float32", transformers_version="4.48.0", use_cache=True,
                vocab_size=100352)


def test_released_configs_of_the_families_auditors_hold():
    """Each family's smallest released shape, from its config.json, is its preset (the name
    and the family record aside), with the parameter count the model card states."""
    from bornbiased_jax.rope import RopeScaling

    want = {"llama3-1b": (LLAMA32_1B, 1_235_814_400), "qwen3-0.6b": (QWEN3_06B, 596_049_920),
            "mistral-7b": (MISTRAL_7B, 7_241_732_096), "phi3-mini": (PHI3_MINI, 3_821_079_552),
            "olmo2-1b": (OLMO2_1B, 1_484_916_736)}
    for preset, (hf, n) in want.items():
        cfg = config_from_hf(hf, name=preset)
        assert cfg == dataclasses.replace(get_preset(preset), shared_embedding=False), preset
        assert _n_params(cfg) == n, (preset, _n_params(cfg))
    llama = config_from_hf(LLAMA32_1B)
    assert llama.rope_scaling == RopeScaling("llama3", factor=32.0, low_freq_factor=1.0,
                                             high_freq_factor=4.0,
                                             original_max_position_embeddings=8192)
    assert config_from_hf(MISTRAL_7B).attention_types == ("sliding_attention",) * 32
    assert config_from_hf(PHI3_MINI).sliding_window == 2047
    olmo = config_from_hf(OLMO2_1B)
    assert (olmo.pre_norms, olmo.post_norms, olmo.qk_norm_scope) == (False, True, "projection")
    # Phi-3-mini-128k: LongRoPE over 4,096 of 131,072 positions; transformers' attention factor
    long128k = {**PHI3_MINI, "max_position_embeddings": 131072, "sliding_window": 262144,
                "rope_scaling": {"type": "longrope", "long_factor": [1.0] * 48,
                                 "short_factor": [1.0] * 48}}
    s = config_from_hf(long128k).rope_scaling
    assert s.kind == "longrope" and s.original_max_position_embeddings == 4096
    assert s.attention_factor == pytest.approx((1 + np.log(32) / np.log(4096)) ** 0.5, rel=1e-12)


def test_scaled_and_windowed_configs_are_read():
    """RoPE scalings read with what transformers derives when a config leaves it out, and
    Qwen's sliding layers from max_window_layers on."""
    lin = config_from_hf({**LLAMA, "rope_scaling": {"type": "linear", "factor": 2.0}})
    assert (lin.rope_scaling.kind, lin.rope_scaling.factor) == ("linear", 2.0)
    yarn = config_from_hf({**LLAMA, "max_position_embeddings": 64, "rope_parameters": {
        "rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0,
        "original_max_position_embeddings": 16}}).rope_scaling
    assert (yarn.beta_fast, yarn.beta_slow, yarn.truncate) == (32.0, 1.0, True)
    assert yarn.attention_factor == pytest.approx(0.1 * np.log(4.0) + 1.0, rel=1e-12)
    qwen = config_from_hf({"model_type": "qwen2", "num_hidden_layers": 4, "hidden_size": 32,
                           "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 64,
                           "use_sliding_window": True, "sliding_window": 8,
                           "max_window_layers": 2})
    assert qwen.attention_types == ("full_attention",) * 2 + ("sliding_attention",) * 2
    off = config_from_hf({"model_type": "qwen2", "use_sliding_window": False,
                          "sliding_window": 131072})
    assert off.sliding_window is None


# --- bad input ---------------------------------------------------------------------------------
def _folder(tmp_path: Path, name: str, **changes) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    hf = json.loads((dst / "config.json").read_text())
    hf.update(changes)
    (dst / "config.json").write_text(json.dumps(hf))
    return dst


def _sweep(folder: Path, tmp_path: Path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", "sweep", "--model",
                        str(folder), "--num-seqs", "2", "--seq-len", "8", "--out", str(out)],
                       capture_output=True, text=True)
    return r, out


@pytest.mark.parametrize("name, changes, match", [
    ("qwen3", {"rope_parameters": {"rope_type": "mrope", "rope_theta": 1e4}},
     "rope_type='mrope' is not supported by the qwen3 architecture record"),
    ("phi3", {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                  "partial_rotary_factor": 0.75}},
     "partial_rotary_factor=0.75 is not supported by the phi3 architecture record"),
    ("olmo2", {"attention_bias": True},
     "attention_bias=True is not supported by the olmo2 architecture record"),
    ("mistral", {"layer_types": ["sliding_attention"] * 2},
     "key 'layer_types' is not one the mistral architecture record knows"),
    ("llama3", {"rope_parameters": {"rope_type": "llama3", "rope_theta": 1e4, "factor": 8.0}},
     "RoPE scaling 'llama3' needs low_freq_factor"),
])
def test_what_a_family_cannot_be_is_named(name, changes, match, tmp_path):
    with pytest.raises(UserError, match=match):
        config_from_hf(_folder(tmp_path, name, **changes))


@pytest.mark.slow
@pytest.mark.parametrize("name, changes, match", [
    ("qwen3", {"qwen_moe_gate": 4}, "key 'qwen_moe_gate' is not one the qwen3 architecture "
                                    "record knows"),
    ("phi3", {"rope_parameters": {"rope_type": "ntk-by-parts", "rope_theta": 1e4}},
     "rope_type='ntk-by-parts' is not supported by the phi3 architecture record"),
    ("qwen3", {"layer_types": ["full_attention"] * 3},
     "layer_types='3 entries' is not supported by the qwen3 architecture record: one per layer"),
])
def test_bad_input_is_one_clear_error_a_failed_exit_and_nothing_written(name, changes, match,
                                                                       tmp_path):
    """An unknown config key, an unknown RoPE type, layer types of the wrong length: the command
    exits non-zero with one line naming the key and the family, no traceback, no --out."""
    r, out = _sweep(_folder(tmp_path, name, **changes), tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr and not out.exists()
    assert match.replace("\\", "") in r.stderr or __import__("re").search(match, r.stderr)


def test_a_gguf_of_an_unknown_architecture_is_named(tmp_path):
    f = write_gguf(tmp_path / "x.gguf", FIXTURES / "olmo2", arch="olmo3")
    with pytest.raises(UserError, match="general.architecture='olmo3' is not supported; "
                                        "supported: llama, qwen2, qwen3, phi3, olmo2, gemma3"):
        load_gguf(f)
    with pytest.raises(UserError, match="mistral files are written as 'llama'"):
        load_gguf(f)


# --- the lineage edits on each family ----------------------------------------------------------
def _trained_like(cfg, seed: int) -> dict:
    """A fresh init with every gain 1 + N(0, 0.3^2) (QK-norm and post-norms too, so that a
    gain an edit forgets to move shows) and biases N(0, 0.1^2)."""
    from bornbiased_jax.fingerprint.edits.tree import map_roles
    from bornbiased_jax.keys import seed_key

    rng = np.random.default_rng(seed)

    def fn(path, role, leaf):
        w = np.asarray(leaf)
        if role in ("norm", "qk_norm") and path[-1] == "scale":
            return (1 + 0.3 * rng.standard_normal(w.shape)).astype(w.dtype)
        return (0.1 * rng.standard_normal(w.shape)).astype(w.dtype) if role == "bias" else w
    return map_roles(model.init(cfg, seed_key(seed)), fn)


# what each family refuses, and why (the rest run)
REFUSED = {"olmo2-tiny": {"rotated", "quarot-int4", "pad-rotated", "layer-shift-rotated"}}


@pytest.mark.parametrize("preset", ["llama3-tiny", "qwen3-tiny", "mistral-tiny", "phi3-tiny",
                                    "olmo2-tiny"])
def test_every_derivative_runs_or_is_refused_with_its_reason(preset):
    """Every registered derivative (renamings, rotations, quantizations, prunings, width,
    depth and vocabulary edits) on a trained-like model of each family, at T = 40 (beyond the
    windows and LongRoPE's original length): a function-preserving one keeps the logits of
    the ids both models have to 1e-5 of their largest (test_rotation.py's bound); the others
    run; OLMo 2's post-norms (gains on a sublayer's normalised output) refuse a residual
    rotation, naming them."""
    from bornbiased_jax.fingerprint.edits import derivatives

    cfg = get_preset(preset)
    base = _trained_like(cfg, 3)
    toks = np.asarray(jax.random.randint(jax.random.key(1), (2, 40), 0, cfg.vocab_size))
    for name, d in derivatives.DERIVATIVES.items():
        key = jax.random.key(5)
        if name in REFUSED.get(preset, ()):
            with pytest.raises(UserError, match="not function-preserving.*post"):
                derivatives.derive(name, base, cfg, key)
            continue
        cfg2, edited = derivatives.derive(name, base, cfg, key)
        if not d.function_preserving:
            continue
        old = d.vocab_origin(cfg, key)
        kept = np.flatnonzero(old >= 0)
        t2 = kept[toks % kept.size]
        a = np.asarray(jax.vmap(lambda t: model.forward(base, cfg, t).logits)(
            jnp.asarray(old[t2])))[:, :, old[kept]]
        b = np.asarray(jax.vmap(lambda t: model.forward(edited, cfg2, t).logits)(
            jnp.asarray(t2)))[:, :, kept]
        assert np.abs(a - b).max() <= 1e-5 * np.abs(a).max(), (preset, name)


# --- every command on every family ------------------------------------------------------------
def _tiny_tokenizer(size: int):
    """A word-level tokenizer of exactly ``size`` tokens (a few common words of Python source,
    then fillers), with an end-of-text token: what train, sinks and fingerprint need of one."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = "the a of def return self import if for in is not to and or".split()
    words += [f"w{i}" for i in range(size - 2 - len(words))]
    vocab = {"<unk>": 0, "</s>": 1, **{w: i + 2 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tok


def _run(*args):
    return subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", *map(str, args)],
                          capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["llama3-tiny", "qwen3-tiny", "mistral-tiny", "phi3-tiny",
                                    "olmo2-tiny"])
def test_every_command_runs_on_each_family(preset, tmp_path):
    """Random-weight checkpoints of each family as HF folders (written by save_hf, in the
    family's format): ``bornbiased fingerprint`` finds a renamed copy (residual, head and unit
    permutations, rescaled norms) and no evidence against a model of another seed and embedding; ``sweep --model``,
    ``sinks`` and ``train --init-from`` run on it."""
    from bornbiased_jax.fingerprint.edits.derivatives import derive
    from bornbiased_jax.keys import seed_key

    cfg = get_preset(preset)
    tok = _tiny_tokenizer(cfg.vocab_size)
    base = save_hf(cfg, model.init(cfg, seed_key(0)), tmp_path / "base", tokenizer=tok)
    # An unrelated model: its own seed and its own embedding (the presets share the embedding
    # across seeds, as the paper's probes do, and a shared embedding is a shared lineage).
    other_cfg = dataclasses.replace(cfg, shared_embedding=False)
    save_hf(cfg, model.init(other_cfg, seed_key(1)), tmp_path / "other", tokenizer=tok)
    save_hf(*derive("renamed", model.init(cfg, seed_key(0)), cfg, jax.random.key(9)),
            tmp_path / "renamed", tokenizer=tok)
    r = _run("fingerprint", base, tmp_path / "renamed", tmp_path / "other", "--num-seqs", 16,
             "--seq-len", 24, "--no-progress", "--out", tmp_path / "fp")
    assert r.returncode == 0, r.stderr
    rows = {line.split("|")[1].strip(): line for line in r.stdout.splitlines()
            if line.startswith("| renamed") or line.startswith("| other")}
    assert rows["renamed"].rstrip().endswith("| related (any_pair) |"), r.stdout
    assert rows["other"].rstrip().endswith("| no evidence (any_pair) |"), r.stdout
    r = _run("sweep", "--model", base, "--num-seqs", 8, "--seq-len", 24, "--no-progress",
             "--out", tmp_path / "sweep")
    assert r.returncode == 0 and (tmp_path / "sweep" / "token_preference.json").is_file(), \
        r.stderr
    r = _run("sinks", base, "--seq-len", 24, "--num-seqs", 4, "--no-progress",
             "--out", tmp_path / "sinks")
    assert r.returncode == 0 and (tmp_path / "sinks" / "sinks.json").is_file(), r.stderr
    r = _run("train", "--init-from", base, "--corpus", "python-stdlib", "--corpus-max-mb", 0.2,
             "--steps", 2, "--warmup", 0, "--seq-len", 16, "--batch-size", 4, "--no-progress",
             "--out", tmp_path / "run")
    assert r.returncode == 0, r.stderr
    trained = json.loads((tmp_path / "run" / "run.json").read_text())["model_config"]
    assert trained.get("architecture") == cfg.architecture
