"""The architecture registry (``bornbiased_jax.architectures``) is the one place the toolkit
names a model family: no module outside it compares with, or keys a table by, a family's
name, HF ``model_type`` or class, or llama.cpp architecture; and every family's record is
complete (its keys, presets, tensor names both ways)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bornbiased_jax import architectures
from bornbiased_jax.presets import PRESETS

PACKAGE = Path(__file__).resolve().parents[1] / "bornbiased_jax"
# String literals outside the registry that equal a family's identifier but name something
# else, each with what it names.
ALLOWED = {
    ("hf/gguf_tokenizer.py", "gpt2"): "tokenizer.ggml.model and .pre's name of GPT-2's byte-level "
                                      "BPE and its pre-tokenizer",
    ("hf/gguf_tokenizer.py", "llama"): "tokenizer.ggml.model's name of a SentencePiece vocabulary",
    ("hf/gguf_tokenizer.py", "qwen2"): "tokenizer.ggml.pre's name of Qwen2's pre-tokenizer",
}


def _identifiers() -> set[str]:
    out = set()
    for a in architectures.FAMILIES:
        out |= {a.name, a.model_type, a.hf_class} | {x for x in (a.gguf_arch, a.gguf_as) if x}
    return out


def _literals(tree: ast.AST):
    """The string constants of a module but its docstrings."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node


def test_the_registry_is_the_only_place_a_family_is_named():
    names = _identifiers()
    found, allowed_seen = [], set()
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE).as_posix()
        if rel.startswith("architectures/"):
            continue
        for node in _literals(ast.parse(f.read_text())):
            if node.value in names and (rel, node.value) in ALLOWED:
                allowed_seen.add((rel, node.value))
            elif node.value in names:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not found, "a family named outside bornbiased_jax/architectures: " + "; ".join(found)
    assert allowed_seen == set(ALLOWED), f"allowed but gone: {set(ALLOWED) - allowed_seen}"


@pytest.mark.parametrize("family", list(architectures.REGISTRY))
def test_each_record_is_whole(family):
    a = architectures.REGISTRY[family]
    assert a.model_type and a.hf_class and a.what and a.reads
    assert not (a.reads & a.ignores), sorted(a.reads & a.ignores)
    assert architectures.by_model_type(a.model_type) is a
    if a.gguf_arch:
        assert architectures.by_gguf(a.gguf_arch) is a
    for name, cfg in a.presets().items():
        assert PRESETS[name] is not None and not a.differences(cfg), (name, a.differences(cfg))
        specs = a.tensor_specs(cfg)
        assert len({s.hf_name for s in specs}) == len(specs)
        if a.gguf_arch or a.gguf_as:  # names both ways, one to one
            gg = [a.gguf_name(s.hf_name) for s in specs]
            assert len(set(gg)) == len(gg), name


def test_a_config_exports_as_its_own_family_where_several_compute_it():
    """Phi-3 without LongRoPE computes what Mistral computes, and Mistral without a window
    what LLaMA does: each exports as its own family when its config names it, else as the
    first family that computes it."""
    import dataclasses

    from bornbiased_jax.presets import get_preset

    phi = dataclasses.replace(get_preset("phi3-tiny"), rope_scaling=None)
    assert architectures.of_config(phi).name == "phi3"
    assert architectures.of_config(dataclasses.replace(phi, architecture=None)).name == "mistral"
    plain = dataclasses.replace(phi, architecture=None, sliding_window=None)
    assert architectures.of_config(plain).name == "llama"
