"""Gemma 3 in the commands: ``<bos>`` follows a real model's tokenizer (an HF folder's
``tokenizer_config.json`` / ``tokenizer.json``, a GGUF's ``add_bos_token``) in ``sinks`` and
``train --init-from``, with ``--bos/--no-bos`` overriding; documents end with the tokenizer's own
end-of-text token (Gemma's ``<eos>``); the lineage edits on a model with QK-norm, sandwich norms
and (1 + w) gains, and the rotation they make impossible refused with the reason. The real
Gemma 3 270M through every command is ``benchmarks/gemma3_commands.py`` (and the study in
``experiments/gemma3``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from real_model import require_gemma3

from bornbiased_jax import data, model
from bornbiased_jax.cli import main
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits.derivatives import DERIVATIVES, derive
from bornbiased_jax.hf import model_bos
from bornbiased_jax.keys import seed_key

TINY = Path(__file__).parent / "fixtures" / "hf" / "gemma3"
DOCS = [f"doc {i}: the transformer is born biased toward some tokens " * (i % 3 + 1)
        for i in range(80)]


@pytest.fixture
def folder(tmp_path):
    """The tiny Gemma 3 fixture with a tokenizer (words of the corpus, end-of-text and
    '<|bos|>': within the fixture's vocabulary of 128) and a tokenizer_config.json that says it
    adds that BOS."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    f = tmp_path / "gemma-tiny"
    shutil.copytree(TINY, f)
    words = sorted({w for d in DOCS for w in d.split()})
    vocab = {data.EOT: 0, data.BOS: 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    vocab.update({f"<unused{i}>": i for i in range(len(vocab), 128)})  # the model's 128 ids
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken(data.EOT, special=True), AddedToken(data.BOS, special=True)])
    assert tok.get_vocab_size() == 128
    tok.save(str(f / "tokenizer.json"))
    (f / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True,
                                                        "bos_token": "<|bos|>"}))
    (tmp_path / "corpus").mkdir()
    for i in range(8):  # documents: one file each
        (tmp_path / "corpus" / f"{i}.txt").write_text("\n".join(DOCS[i::8]))
    return f


def _sinks(folder, out, *extra) -> dict:
    assert main(["sinks", str(folder), "--corpus", str(folder.parent / "corpus"),
                 "--seq-len", "16", "--num-seqs", "2", "--out", str(out), *extra]) == 0
    return json.loads((out / "sinks.json").read_text())["run"]


def test_model_bos_reads_each_way_a_tokenizer_says_it(tmp_path, folder):
    assert model_bos(folder) == (True, "<|bos|>", "tokenizer_config.json: add_bos_token")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"add_bos_token": False, "bos_token": {"content": "<|bos|>"}}))
    assert model_bos(folder)[:2] == (False, "<|bos|>")
    (folder / "tokenizer_config.json").unlink()
    assert model_bos(folder) == (False, None, "no add_bos_token in the folder's tokenizer files")
    tj = json.loads((folder / "tokenizer.json").read_text())
    tj["post_processor"] = {"type": "TemplateProcessing", "single": [
        {"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A"}}]}
    (folder / "tokenizer.json").write_text(json.dumps(tj))
    assert model_bos(folder) == (True, "<|bos|>", "tokenizer.json: post_processor")
    (folder / "tokenizer.json").write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        model_bos(folder)


def test_sinks_windows_follow_the_models_bos_and_the_flags_override(folder, tmp_path, capsys):
    r = _sinks(folder, tmp_path / "a")
    assert (r["bos_prepended"], r["bos_id"]) == (True, 1)
    assert "the model's tokenizer adds one (tokenizer_config.json: add_bos_token)" in \
        capsys.readouterr().out
    r = _sinks(folder, tmp_path / "b", "--no-bos")
    assert (r["bos_prepended"], r["bos_id"]) == (False, None)
    (folder / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": False,
                                                             "bos_token": "<|bos|>"}))
    r = _sinks(folder, tmp_path / "c")
    assert r["bos_prepended"] is False
    assert "the model's tokenizer adds none" in capsys.readouterr().out
    r = _sinks(folder, tmp_path / "d", "--bos")
    assert (r["bos_prepended"], r["bos_id"]) == (True, 1)


@pytest.mark.slow
def test_train_init_from_follows_the_models_bos(folder, tmp_path, capsys):
    args = ["train", "--init-from", str(folder), "--corpus", str(folder.parent / "corpus"),
            "--steps", "2", "--warmup", "1", "--seq-len", "16", "--batch-size", "4",
            "--eval-every", "2", "--eval-batches", "1", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert "windows: '<|bos|>' first, as the model's tokenizer adds it" in capsys.readouterr().out
    info = json.loads((tmp_path / "a" / "run.json").read_text())
    assert (info["train_config"]["bos"], info["train_config"]["bos_token"],
            info["data"]["bos_id"]) == (True, "<|bos|>", 1)
    assert main([*args, "--no-bos", "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "b" / "run.json").read_text())["train_config"]["bos"] is False


def test_documents_end_with_the_tokenizers_own_end_token():
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"<eos>": 0, "a": 1, "b": 2, "<unk>": 3}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    assert data.eot_id(tok) == 0
    assert data.token_ids(["a b", "b"], tok).tolist() == [1, 2, 0, 2, 0]
    bare = Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>"))
    bare.pre_tokenizer = pre_tokenizers.Whitespace()
    with pytest.raises(UserError, match="no end-of-text token"):
        data.make_blocks(["a a"] * 10, bare, seq_len=2)


# --- lineage edits on Gemma's architecture ------------------------------------------------------
def _random_gemma():
    cfg = get_preset("gemma3-tiny")
    keys = iter(jax.random.split(jax.random.key(1), 256))

    def redraw(path, a):
        z = jax.random.normal(next(keys), a.shape)
        return 0.3 * z if path[-1].key == "scale" else (
            z if path[-1].key == "embedding" else z / a.shape[0] ** 0.5)
    return cfg, jax.tree_util.tree_map_with_path(redraw, model.init(cfg, seed_key(0)))


@pytest.mark.parametrize("name", [n for n, d in DERIVATIVES.items() if d.function_preserving
                                  and not d.rotates and d.layers is None])
def test_function_preserving_edits_preserve_gemmas_function(name):
    """Renamings (with norm gains rescaled as 1 + w), sign flips, unit scales, MLP padding and
    vocabulary edits leave the logits of the old ids unchanged to float32 rounding (1e-5 of
    their largest value)."""
    cfg, p = _random_gemma()
    key = jax.random.key(3)
    cfg2, p2 = derive(name, p, cfg, key)
    old_of_new = DERIVATIVES[name].vocab_origin(cfg, key)
    kept = np.flatnonzero(old_of_new >= 0)
    toks = kept[np.arange(24) * 7 % kept.size]  # ids of the result that BASE has too
    base = np.asarray(model.forward(p, cfg, jnp.asarray(old_of_new[toks])).logits)
    out = np.asarray(model.forward(p2, cfg2, jnp.asarray(toks)).logits)[:, kept]
    assert np.abs(out - base[:, old_of_new[kept]]).max() <= 1e-5 * np.abs(base).max()
    a, b = jax.tree.leaves(p), jax.tree.leaves(p2)  # and the weights did change
    assert len(a) != len(b) or not all(np.array_equal(x, y) for x, y in zip(a, b))


def test_an_inserted_identity_block_keeps_gemmas_layer_types():
    """A block inserted into Gemma leaves every copied layer its own attention type (five
    sliding-window layers, RoPE base 10,000, per global one, 10^6): the new block is global and
    adds nothing, so the edit preserves the function, as it does for a model without sliding
    layers. (While the layers were named by a period, the insertion shifted every later layer
    one place in the pattern and changed the function.)"""
    cfg, p = _random_gemma()
    toks = jnp.arange(24) * 7 % cfg.vocab_size
    base = np.asarray(model.forward(p, cfg, toks).logits)
    cfg2, p2 = derive("insert-identity", p, cfg, jax.random.key(3))
    at = cfg.n_layers // 2
    assert cfg2.attention_types == (cfg.attention_types[:at] + ("full_attention",)
                                    + cfg.attention_types[at:])
    assert np.abs(np.asarray(model.forward(p2, cfg2, toks).logits) - base).max() <= \
        1e-5 * np.abs(base).max()


@pytest.mark.parametrize("name", [n for n, d in DERIVATIVES.items() if d.rotates])
def test_a_rotation_of_a_model_with_sandwich_norms_is_refused_saying_why(name):
    cfg, p = _random_gemma()
    with pytest.raises(UserError, match="not function-preserving for gemma3-tiny: its sandwich "
                                        "norms .* diag\\(g\\) does not commute with a rotation"):
        derive(name, p, cfg, jax.random.key(3))
    # without the post-norms the rotation is exact again, with (1 + w) gains folded as such
    c = cfg.ablate(post_norms=False)
    q = {k: ({n: b for n, b in v.items() if "post" not in n} if k.startswith("layers_") else v)
         for k, v in p.items()}
    toks = jnp.arange(24) * 7 % cfg.vocab_size
    base = np.asarray(model.forward(q, c, toks).logits)
    c2, q2 = derive("rotated", q, c, jax.random.key(3))
    assert np.abs(np.asarray(model.forward(q2, c2, toks).logits) - base).max() <= \
        1e-5 * np.abs(base).max()


def test_cli_refuses_a_gemma_file_with_softcapping_and_writes_nothing(tmp_path):
    from gguf_files import write_gguf

    bad = write_gguf(tmp_path / "soft.gguf", TINY,
                     extra=lambda w: w.add_float32("gemma3.final_logit_softcapping", 30.0))
    for cmd in (["sinks", str(bad)], ["sweep", "--model", str(bad), "--num-seqs", "2",
                                      "--seq-len", "8"],
                ["fingerprint", str(bad), "preset:gemma3-tiny@0", "--num-seqs", "8", "--seq-len", "8"]):
        out = tmp_path / cmd[0]
        r = subprocess.run([sys.executable, "-m", "bornbiased_jax.cli", *cmd, "--out", str(out)],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "Traceback" not in r.stderr, cmd
        assert "gemma3.final_logit_softcapping=30.0 is not supported" in r.stderr, cmd
        assert not out.exists()


@pytest.mark.slow
def test_sinks_on_gemma_3_270m_with_and_without_bos(tmp_path):
    """The real model: windows carry <bos> because its GGUF says add_bos_token; with it most
    heads are sinks at T = 64, without it none (RESULTS.md has the measurement at scale)."""
    path = require_gemma3()
    rates = {}
    for flag in ([], ["--no-bos"]):
        out = tmp_path / ("a" if not flag else "b")
        assert main(["sinks", str(path), "--seq-len", "64", "--num-seqs", "4",
                     "--corpus-max-mb", "0.3", "--out", str(out), *flag]) == 0
        rec = json.loads((out / "sinks.json").read_text())
        rates[bool(rec["run"]["bos_prepended"])] = rec["results"][0]["sink_rate"]
        assert rec["run"]["bos_id"] == (2 if not flag else None)
    assert rates[True] > 0.5 and rates[False] < 0.1, rates
