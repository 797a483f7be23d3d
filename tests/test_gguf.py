"""GGUF files in: the metadata, the tensor map, llama.cpp's Q/K row order, every supported
weight type, the file's tokenizer, model sources and bad input, on tiny files written from the
HF fixtures (``gguf_files.write_gguf``) and checked against the same ``transformers`` outputs
as ``test_hf.py``. SmolLM2-135M itself is ``test_gguf_real.py``."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gguf_files import quantized_roundtrip, write_gguf
from safetensors.numpy import load_file

from bornbiased_jax import model
from bornbiased_jax.errors import UserError
from bornbiased_jax.hf import load_hf, save_hf
from bornbiased_jax.architectures import REGISTRY
from bornbiased_jax.hf.gguf import (SUPPORTED_TYPES, load_gguf, load_gguf_tokenizer,
                                    permute_rope_rows, unpermute_rope_rows)

_gguf_name = REGISTRY["llama"].gguf_name
from bornbiased_jax.sources import check_source, load_source, parse_source

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
NAMES = ["llama_gqa", "llama_tied", "qwen2"]
# test_hf.py's bound: float32 rounding through the fixtures' two layers (see there).
ATOL_F32 = 1e-5
# the types gguf.quants can also write, so that a round trip pins each decoder's values
WRITABLE = ["F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]


def _forward(cfg, params, tokens_BT):
    return jax.jit(jax.vmap(lambda t: model.forward(params, cfg, t, return_hidden=True)))(
        jnp.asarray(tokens_BT))


def _flat(params) -> dict:
    return {"/".join(k.key for k in p): np.asarray(a)
            for p, a in jax.tree_util.tree_flatten_with_path(params)[0]}


@pytest.mark.parametrize("name", NAMES)
def test_float32_gguf_is_the_hf_model_bitwise_and_matches_transformers(name, tmp_path):
    f = write_gguf(tmp_path / f"{name}.gguf", FIXTURES / name)
    cfg, params = load_gguf(f)
    hf_cfg, hf_params = load_hf(FIXTURES / name)
    # GGUF stores the norm eps as a float32 (1e-5 -> 9.99999974e-06), as transformers reads it
    assert cfg == dataclasses.replace(hf_cfg, name=name,
                                      norm_eps=float(np.float32(hf_cfg.norm_eps)))
    ours, theirs = _flat(params), _flat(hf_params)
    assert ours.keys() == theirs.keys()
    assert all(np.array_equal(ours[k], theirs[k]) for k in ours)
    ref = np.load(FIXTURES / name / "expected.npz")
    out = _forward(cfg, params, ref["tokens"])
    for key, got in (("logits", out.logits), ("hidden", out.hidden), ("normed", out.normed)):
        np.testing.assert_allclose(np.asarray(got), ref[key], rtol=0, atol=ATOL_F32,
                                   err_msg=f"{name}: {key}")


def test_rope_row_order_is_undone_and_leaving_it_fails_parity(tmp_path):
    """A file written without llama.cpp's permutation, read as a real one (rows 'unpermuted'
    that never were), still runs but far from transformers: parity is what catches it."""
    a = np.arange(4 * 2 * 3 * 2, dtype=np.float32).reshape(4 * 2 * 3, 2)
    assert np.array_equal(unpermute_rope_rows(permute_rope_rows(a, 4), 4), a)
    assert not np.array_equal(permute_rope_rows(a, 4), a)
    f = write_gguf(tmp_path / "unpermuted.gguf", FIXTURES / "llama_gqa", permute=False)
    cfg, params = load_gguf(f)
    ref = np.load(FIXTURES / "llama_gqa" / "expected.npz")
    err = np.abs(np.asarray(_forward(cfg, params, ref["tokens"]).logits) - ref["logits"]).max()
    assert err > 1000 * ATOL_F32


@pytest.mark.parametrize("qtype", WRITABLE)
def test_each_weight_type_decodes_to_what_was_quantized(qtype, tmp_path):
    f = write_gguf(tmp_path / f"{qtype}.gguf", FIXTURES / "qwen2", qtype)
    cfg, params = load_gguf(f)
    hf_cfg, _ = load_hf(FIXTURES / "qwen2")
    tensors = load_file(str(FIXTURES / "qwen2" / "model.safetensors"))
    ours = _flat(params)
    from bornbiased_jax.hf.names import tensor_specs, to_ours

    for spec in tensor_specs(hf_cfg, "qwen2"):
        a = np.asarray(tensors[spec.hf_name], np.float32)
        want = quantized_roundtrip(a, qtype) if a.ndim == 2 else a
        if a.ndim == 2:
            assert not np.array_equal(want, a) or qtype in ("F16", "BF16"), spec.hf_name
        for path, w in zip(spec.paths, to_ours(spec, jnp.asarray(want))):
            np.testing.assert_array_equal(ours[path], np.asarray(w), err_msg=spec.hf_name)


def test_bfloat16_load_and_supported_types_named(tmp_path):
    f = write_gguf(tmp_path / "m.gguf", FIXTURES / "llama_tied", "Q8_0")
    cfg, params = load_gguf(f, dtype="bfloat16")
    assert {a.dtype for a in jax.tree_util.tree_leaves(params)} == {jnp.dtype(jnp.bfloat16)}
    assert cfg.tie_embeddings and cfg.resolved_head_dim == 16
    assert {"Q4_K", "Q6_K", "Q8_0", "Q4_1"} <= set(SUPPORTED_TYPES)
    with pytest.raises(UserError, match="dtype float16 is not supported"):
        load_gguf(f, dtype="float16")


def _raw_tensor(name: str, rows: int, cols: int, qtype: str):
    """A matrix of type ``qtype`` with all-zero bytes (a type gguf cannot write)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    q = GGMLQuantizationType[qtype]
    block, size = GGML_QUANT_SIZES[q]
    return lambda w: w.add_tensor(name, np.zeros((rows, cols // block * size), np.uint8),
                                  raw_dtype=q)


def test_bad_files_are_one_clear_error(tmp_path):
    good = write_gguf(tmp_path / "good.gguf", FIXTURES / "llama_gqa", "Q8_0")
    data = good.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(UserError, match="truncated or corrupt"):
        load_gguf(cut)
    (tmp_path / "text.gguf").write_text("not a model")
    with pytest.raises(UserError, match="not a GGUF file"):
        load_gguf(tmp_path / "text.gguf")
    with pytest.raises(UserError, match="general.architecture='gemma' is not supported"):
        load_gguf(write_gguf(tmp_path / "gemma.gguf", FIXTURES / "llama_gqa", arch="gemma"))
    iq = write_gguf(tmp_path / "iq.gguf", FIXTURES / "llama_gqa", drop=("blk.0.ffn_up.weight",),
                    extra=_raw_tensor("blk.0.ffn_up.weight", 64, 32, "IQ4_NL"))
    with pytest.raises(UserError, match=r"blk.0.ffn_up.weight has type IQ4_NL, which is not "
                                        r"supported; supported types: F32, F16"):
        load_gguf(iq)
    with pytest.raises(UserError, match="IQ4_NL"):
        check_source(parse_source(str(iq)))
    with pytest.raises(UserError, match=r"missing from the file: blk.1.attn_v.weight"):
        load_gguf(write_gguf(tmp_path / "m.gguf", FIXTURES / "llama_gqa",
                             drop=("blk.1.attn_v.weight",)))
    scaled = write_gguf(tmp_path / "s.gguf", FIXTURES / "llama_gqa",
                        extra=lambda w: w.add_string("llama.rope.scaling.type", "longrope"))
    with pytest.raises(UserError, match="rope.scaling.type='longrope' is not supported by the "
                                        "llama architecture record"):
        load_gguf(scaled)
    yarn = write_gguf(tmp_path / "y.gguf", FIXTURES / "llama_gqa",
                      extra=lambda w: w.add_string("llama.rope.scaling.type", "yarn"))
    with pytest.raises(UserError, match="metadata key llama.rope.scaling.factor is missing"):
        load_gguf(yarn)


def test_gguf_is_a_model_source(tmp_path):
    f = write_gguf(tmp_path / "tiny.Q8_0.gguf", FIXTURES / "llama_gqa", "Q8_0")
    src = load_source(str(f))
    assert (src.kind, src.label, src.seed, src.step, src.folder) == (
        "gguf", "tiny.Q8_0", None, None, f)
    assert not src.is_init
    assert check_source(parse_source(str(f))) == src.cfg
    for bad, what in ((f"{f}@3", "'@3'"), (f"{f}#1", "'#1'")):
        with pytest.raises(UserError, match=f"GGUF model file, which has no seeds or training "
                                            f"steps; drop {what}"):
            load_source(bad)
    with pytest.raises(UserError, match="no such file"):
        load_source(str(tmp_path / "absent.gguf"))


def test_a_files_header_is_parsed_once_until_the_file_changes(tmp_path, monkeypatch):
    """Config, check and load of one file parse its header once; a file written again in its
    place (another type here) is parsed again and read as it now is."""
    from bornbiased_jax.hf import gguf as G

    parses = []
    real = G._check_file
    monkeypatch.setattr(G, "_check_file", lambda p: parses.append(p) or real(p))
    f = write_gguf(tmp_path / "tiny.gguf", FIXTURES / "llama_gqa", "Q8_0")
    cfg = check_source(parse_source(str(f)))
    assert load_source(str(f)).cfg == cfg and len(parses) == 1
    first = load_gguf(f)[1]
    write_gguf(tmp_path / "other.gguf", FIXTURES / "llama_gqa", "F32").replace(f)
    again = load_gguf(f)[1]
    assert len(parses) == 2  # the new file's header
    w = lambda params: np.asarray(params["layers_0"]["mlp"]["up_proj"]["kernel"])
    assert not np.array_equal(w(first), w(again))  # Q8_0 then float32 weights


def test_save_hf_of_a_gguf_model_round_trips(tmp_path):
    f = write_gguf(tmp_path / "m.gguf", FIXTURES / "qwen2", "Q4_1")
    cfg, params = load_gguf(f)
    back_cfg, back = load_hf(save_hf(cfg, params, tmp_path / "export"))
    assert dataclasses.replace(back_cfg, name=cfg.name) == cfg
    a, b = _flat(params), _flat(back)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_the_files_tokenizer_is_rebuilt(tmp_path):
    from gguf_files import byte_level_bpe

    tok = byte_level_bpe()
    f = write_gguf(tmp_path / "t.gguf", FIXTURES / "llama_gqa", tokenizer=tok)
    ours = load_gguf_tokenizer(f)
    for s in ["the model is born biased", "<|im_start|>def f(x): return x", "tokens  toward\n"]:
        assert ours.encode(s).ids == tok.encode(s).ids, s
        assert ours.decode(ours.encode(s).ids, skip_special_tokens=False) == s
    with pytest.raises(UserError, match="has no tokenizer"):
        load_gguf_tokenizer(write_gguf(tmp_path / "n.gguf", FIXTURES / "llama_gqa"))


def test_tensor_names_follow_llama_cpp():
    assert _gguf_name("model.layers.3.self_attn.o_proj.weight") == "blk.3.attn_output.weight"
    assert _gguf_name("model.layers.0.self_attn.q_proj.bias") == "blk.0.attn_q.bias"
    assert _gguf_name("model.layers.1.post_attention_layernorm.weight") == "blk.1.ffn_norm.weight"
    assert _gguf_name("model.embed_tokens.weight") == "token_embd.weight"
    assert _gguf_name("lm_head.weight") == "output.weight"


def test_cli_refuses_a_bad_gguf_and_writes_nothing(tmp_path):
    cut = tmp_path / "cut.gguf"
    data = write_gguf(tmp_path / "good.gguf", FIXTURES / "llama_gqa").read_bytes()
    cut.write_bytes(data[:1000])
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", "sweep", "--model", str(cut),
                        "--num-seqs", "4", "--seq-len", "8", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "truncated or corrupt" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_fingerprint_of_a_gguf_suspect_of_another_vocabulary_reads_the_shared_ids(tmp_path):
    """Without tokenizers to align them by string, the ids both vocabularies have are drawn
    (the output says so) and the verdict is written."""
    import dataclasses as dc

    from bornbiased_jax.hf import config_from_hf
    from bornbiased_jax.keys import seed_key

    base = write_gguf(tmp_path / "base.gguf", FIXTURES / "llama_gqa")
    cfg = dc.replace(config_from_hf(FIXTURES / "llama_gqa"), vocab_size=256)
    other = save_hf(cfg, model.init(cfg, seed_key(0)), tmp_path / "v256")
    suspect = write_gguf(tmp_path / "v256.gguf", other)
    out = tmp_path / "fp"
    r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", "fingerprint", str(base),
                        str(suspect), "--num-seqs", "8", "--seq-len", "8", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert ("inputs drawn from the 128 ids both have (0 ids of BASE's and 128 of SUSPECT's "
            "beyond the other's vocabulary are never drawn)") in r.stdout
    assert "verdict (any_pair test" in r.stdout and (out / "fingerprint.json").exists()


def test_the_fast_header_parser_reads_what_gguf_reads(tmp_path):
    """The reader's one-pass array parsing gives the fields gguf's own reader gives (parts,
    data indices, types, contents) for arrays of strings and numbers and an array of arrays (the stock parser's path), and the same tensors."""
    import gguf

    from bornbiased_jax.hf.gguf import open_reader as _reader

    def extra(w):
        w.add_array("test.strings", ["a", "", "ünïcode", "x" * 300])
        w.add_array("test.floats", [0.5, -1.25, 3.0])
        w.add_array("test.ints", [1, 2, 3, 2 ** 31 - 1])
        w.add_array("test.nested", [[1, 2], [3]])
        w.add_bool("test.flag", True)

    f = write_gguf(tmp_path / "a.gguf", FIXTURES / "llama_gqa", "Q8_0", extra=extra)
    ours, stock = _reader(f), gguf.GGUFReader(str(f), "r")
    assert list(ours.fields) == list(stock.fields)
    for k, b in stock.fields.items():
        a = ours.fields[k]
        assert (a.types, a.data, len(a.parts)) == (b.types, b.data, len(b.parts)), k
        assert all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a.parts, b.parts))
        assert a.contents() == b.contents(), k
    assert ours.fields["test.strings"].contents() == ["a", "", "ünïcode", "x" * 300]
    assert ours.fields["test.nested"].types[:2] == [gguf.GGUFValueType.ARRAY] * 2
    assert [(t.name, t.tensor_type, t.data_offset) for t in ours.tensors] == \
        [(t.name, t.tensor_type, t.data_offset) for t in stock.tensors]
    assert all(np.array_equal(a.data, b.data) for a, b in zip(ours.tensors, stock.tensors))
