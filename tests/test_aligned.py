"""The aligned statistic of the calibrated test ('spearman_aligned'): unchanged by the edits
that rename a model's residual basis, and so able to find a copy that was permuted, rescaled
and then fine-tuned, where the per-dimension statistics cannot."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from bornbiased_jax import model
from bornbiased_jax.presets import get_preset
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.edits import obfuscation as O
from bornbiased_jax.fingerprint.methods.calibrated import calibrated_test, aligned_spearman, statistic
from bornbiased_jax.fingerprint.runner.features import init_features
from bornbiased_jax.keys import seed_key
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.probes.outputs import feature_probe
from bornbiased_jax.sweep import run_probe


def test_aligned_statistic_ignores_permuted_and_rescaled_dimensions():
    rng = np.random.default_rng(0)
    n, d = 300, 24
    common = rng.normal(size=(n, d))
    F_A = common + rng.normal(size=(n, d))
    F_B = common + rng.normal(size=(n, d))
    perm = rng.permutation(d)
    scale = rng.choice([-1.0, 1.0], d) * np.exp(rng.normal(size=d))
    F_B2 = F_B[:, perm] * scale
    A, B, B2 = (D.RankedFeatures.of(F) for F in (F_A, F_B, F_B2))
    s, cols, rho = aligned_spearman(A, B)
    s2, cols2, rho2 = aligned_spearman(A, B2)
    assert s == pytest.approx(s2, abs=1e-12)
    # A's dimension i is matched to B's column cols[i], which sits at perm^-1 in B2
    np.testing.assert_array_equal(perm[cols2], cols)
    # the matched pairs are the related ones: column j of A with column j of B
    np.testing.assert_array_equal(cols, np.arange(d))
    # the per-dimension statistic loses the copy once its columns are renamed
    assert statistic("spearman_all", A, B, d)[0] > 0.3
    assert abs(statistic("spearman_all", A, B2, d)[0]) < 0.1
    # the matching is the optimum: no other one-to-one matching scores higher
    C = np.abs(A.z_nd.T.astype(np.float64) @ B.z_nd) / n
    for _ in range(50):
        assert C[np.arange(d), rng.permutation(d)].mean() <= s + 1e-12


# -------------------------------------------------------- trained, obfuscated, fine-tuned copies
CFG = get_preset("llama2-tiny")
SEQ, BATCH = 32, 8


def _batches(seed, steps):
    """Sequences of a fixed random bigram chain over 64 tokens (the same chain for every seed,
    so the task is one; ``seed`` picks the samples)."""
    chain = np.random.default_rng(123).dirichlet(np.full(64, 0.1), size=64)
    rng = np.random.default_rng(seed)
    out = np.empty((steps, BATCH, SEQ + 1), np.int32)
    out[..., 0] = rng.integers(0, 64, (steps, BATCH))
    for t in range(1, SEQ + 1):
        u = rng.random((steps, BATCH, 1))
        out[..., t] = (np.cumsum(chain[out[..., t - 1]], -1) < u).sum(-1).clip(0, 63)
    return out


def _train(params, data_seed, steps, lr=3e-3):
    opt = optax.adamw(lr, weight_decay=0.1)

    def loss(p, blocks):
        logits = jax.vmap(lambda x: model.forward(p, CFG, x).logits)(blocks[:, :-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, blocks[:, 1:]).mean()

    @jax.jit
    def step(p, s, blocks):
        g = jax.grad(loss)(p, blocks)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s

    state = opt.init(params)
    for blocks in _batches(data_seed, steps):
        params, state = step(params, state, jnp.asarray(blocks))
    return params


@pytest.fixture(scope="module")
def family():
    init = lambda s: jax.jit(model.init, static_argnums=0)(CFG, seed_key(s))  # noqa: E731
    A0 = init(11)
    A = _train(A0, data_seed=0, steps=60)
    copy = O.obfuscate(A, CFG, jax.random.key(5))
    copy_ft = _train(copy, data_seed=1, steps=30)  # renamed, then fine-tuned on other samples
    other = _train(init(12), data_seed=0, steps=60)  # same data, another seed
    xs = probe_inputs("tokens", CFG, 256, 16)
    feats = lambda p: np.asarray(run_probe(feature_probe(CFG, "normed"), CFG, p, xs))  # noqa
    nulls = [F for _, F in init_features(CFG, range(1000, 1019), xs, group=19)]
    return {"A0": feats(A0), "A": feats(A), "copy": feats(copy), "copy_ft": feats(copy_ft),
            "other": feats(other), "nulls": nulls}


@pytest.mark.parametrize("suspect", ["copy", "copy_ft"])
@pytest.mark.parametrize("base", ["A0", "A"])
def test_aligned_test_finds_renamed_copies(family, base, suspect):
    """K = 19 fresh inits: the smallest exact p is 1/20; the copy (and its fine-tune) beats all
    of them by the aligned statistic, from the trained base and from its initialisation."""
    r = calibrated_test(family[base], family[suspect], family["nulls"],
                        statistic_name="spearman_aligned", alpha=0.05)
    assert r.p_values["exact"] == pytest.approx(1 / 20)
    assert r.details["z"] > 3
    # the renamed copy hides from the per-dimension statistic: no better than the null models
    per_dim = calibrated_test(family[base], family[suspect], family["nulls"],
                              statistic_name="spearman_all")
    assert per_dim.details["z"] < 3


def test_aligned_test_on_an_unrelated_model(family):
    """Another seed trained on the same data: from the initialisation base (where the p-value
    is exact) its aligned statistic sits among the fresh inits' (z well under a copy's 3). The
    statistic's level depends on the suspect (trained features match any init better than
    fresh ones do), which is why the verdict is its rank among null models, not its value."""
    r = calibrated_test(family["A0"], family["other"], family["nulls"],
                        statistic_name="spearman_aligned")
    assert r.details["z"] < 3
    assert r.p_values["exact"] > 1 / 20
