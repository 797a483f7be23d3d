"""The copy the MLP and permutation legs miss, found by the attention test: BASE's attention,
embeddings, head and norms kept, every MLP re-learned from a fresh initialisation with the rest
frozen (on other text), the residual stream rotated. Two unrelated models trained alike are not
called related; ``bornbiased fingerprint BASE SUSPECT --test attention`` runs and prints it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from bornbiased_jax import model
from bornbiased_jax.fingerprint.edits.rotation import random_orthogonal, rotate_residual
from bornbiased_jax.fingerprint.methods.attention import attention_test
from bornbiased_jax.keys import seed_key
from bornbiased_jax.presets import get_preset

# every parameter seed-dependent (as `bornbiased train` builds it): unrelated seeds share no
# embedding
CFG = get_preset("llama2-tiny").ablate(shared_embedding=False)
SEQ, BATCH, STEPS = 32, 8, 120


def _batches(seed: int, chain_seed: int) -> np.ndarray:
    """(STEPS, BATCH, SEQ + 1) token ids of a random bigram chain over 64 tokens: the chain
    is the 'text' (``chain_seed``), ``seed`` picks the samples."""
    chain = np.random.default_rng(chain_seed).dirichlet(np.full(64, 0.1), size=64)
    rng = np.random.default_rng(seed)
    out = np.empty((STEPS, BATCH, SEQ + 1), np.int32)
    out[..., 0] = rng.integers(0, 64, (STEPS, BATCH))
    for t in range(1, SEQ + 1):
        u = rng.random((STEPS, BATCH, 1))
        out[..., t] = (np.cumsum(chain[out[..., t - 1]], -1) < u).sum(-1).clip(0, 63)
    return out


def _with_mlps(params: dict, mlps: dict) -> dict:
    return {k: ({**v, "mlp": mlps[k]} if k in mlps else v) for k, v in params.items()}


def _loss(params: dict, blocks) -> jax.Array:
    logits = jax.vmap(lambda x: model.forward(params, CFG, x).logits)(blocks[:, :-1])
    return optax.softmax_cross_entropy_with_integer_labels(logits, blocks[:, 1:]).mean()


OPT = optax.adam(3e-3)


@jax.jit
def _step(t, s, frozen, blocks):
    """One Adam step on the trainable part ``t``: every parameter, or (``frozen`` not None)
    the MLPs alone, the rest ``frozen``, a constant of the loss."""
    full = (lambda t: t) if frozen is None else (lambda t: _with_mlps(frozen, t))
    u, s = OPT.update(jax.grad(lambda t: _loss(full(t), blocks))(t), s, t)
    return optax.apply_updates(t, u), s


def _train(params: dict, data: np.ndarray, mlp_only: bool = False) -> dict:
    """Adam at 3e-3 on next-token cross-entropy; with ``mlp_only`` the MLPs alone move."""
    t = {k: v["mlp"] for k, v in params.items() if k.startswith("layers_")} if mlp_only \
        else params
    frozen = params if mlp_only else None
    s = OPT.init(t)
    for blocks in data:
        t, s = _step(t, s, frozen, jnp.asarray(blocks))
    return _with_mlps(params, t) if mlp_only else t


@pytest.fixture(scope="module")
def family():
    init = lambda seed: model.init(CFG, seed_key(seed))  # noqa: E731
    base = _train(init(1), _batches(0, 123))
    other = _train(init(2), _batches(0, 123))  # same data, another seed
    fresh = init(3)
    relearned = _train(_with_mlps(base, {k: v["mlp"] for k, v in fresh.items()
                                         if k.startswith("layers_")}),
                       _batches(7, 321), mlp_only=True)  # other text
    cfg_r, copy = rotate_residual(relearned, CFG, random_orthogonal(CFG.d_model,
                                                                    jax.random.key(9)))
    return {"base": base, "other": other, "relearned": relearned, "copy": copy,
            "cfg_copy": cfg_r}


def test_the_copy_keeps_attention_and_relearns_every_mlp(family):
    base, relearned = family["base"], family["relearned"]
    for k in base:
        for part in base[k]:
            same = jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)),
                                             base[k][part], relearned[k][part]))
            assert same == (part != "mlp"), (k, part)  # all but the MLPs bit for bit


def test_the_attention_test_finds_the_rotated_relearned_copy(family):
    """Every head doubly matched: K = 8 of 8, p = (1/4!)^2 = 1/576, the smallest p two layers of
    four heads allow, in either direction (BASE is trained: neither model is an
    initialisation, so the larger p of the two re-pairings)."""
    r = attention_test(family["base"], CFG, family["copy"], family["cfg_copy"], alpha=0.01)
    assert r.statistic == 8 and r.details["K_per_layer"] == [4, 4]
    assert r.details["base_layer_of"] == [0, 1]
    assert r.p == pytest.approx(1 / 576) and r.same_lineage


def test_two_unrelated_trained_models_are_not_called_related(family):
    r = attention_test(family["base"], CFG, family["other"], CFG, alpha=0.01)
    assert not r.same_lineage and r.p > 0.01
    # the golden values docs/seedprint.md quotes (4 of 8 heads doubly matched, p = 0.14)
    assert r.statistic == 4 and round(r.p, 2) == 0.14


@pytest.mark.parametrize("suspect, related", [("preset:llama2-tiny@1", True),
                                              ("preset:llama2-tiny@2", False)])
def test_the_command_runs_and_prints_it(suspect, related, capsys, tmp_path):
    from bornbiased_jax.cli import main

    out = tmp_path / "fp"
    assert main(["fingerprint", "preset:llama2-tiny@1", suspect, "--test", "attention",
                 "--num-seqs", "8", "--seq-len", "8", "--no-progress", "--out",
                 str(out)]) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("attention "))
    assert "re-paired heads" in row
    assert row.rstrip().endswith("same lineage" if related else "unrelated")
    assert (out / "fingerprint.json").exists()
