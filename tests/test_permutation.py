"""The residual-basis permutation test (fingerprint/methods/permutation.py).

  * piA, built by permuting A's weights, has A's features with permuted coordinates (token
    inputs; three architectures covering every parameter kind);
  * its p-value is uniform on pairs of independent models (real initialisations: 60 disjoint
    pairs, K = 999; trained pairs are measured by experiments/seedprint_trained.py);
  * it detects a planted lineage;
  * the null's closed-form moments equal enumeration over all d! permutations;
  * it refuses logits, Gaussian inputs, too few permutations and mismatched widths.

Tolerances: uniformity by a KS test at level 1e-3 over R = 60 independent p-values (so a
correct implementation fails with probability 1e-3; the seeds are fixed, so the test is
deterministic); float32 feature equality within 8 d u max|F| (d-term sums in another order,
u = 2^-24, a margin of 8 for the layers).
"""

import dataclasses
import itertools
import math

import jax
import numpy as np
import pytest
from scipy import stats

from bornbiased_jax import model
from bornbiased_jax.config_io import apply_overrides
from bornbiased_jax.presets import get_preset
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.edits.obfuscation import permute_residual
from bornbiased_jax.fingerprint.methods import permutation as P
from bornbiased_jax.fingerprint.runner.compare import Settings, compare
from bornbiased_jax.fingerprint.runner.features import init_features, model_features
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sources import LoadedModel

ARCHITECTURES = [
    ("llama2-tiny", []),  # RMSNorm, SwiGLU, no biases, untied head
    ("qwen2-tiny", []),  # Q/K/V biases, grouped KV heads
    ("gpt2-rope-tiny", ["position=learned", "attn_output_gate=true",  # LayerNorm, biases,
                        "attn_output_gate_bias=true",  # learned positions, output gate,
                        "attn_output_transform=headwise_rmsnorm"]),  # head-wise norm
]


def loaded(cfg, params, label="m"):
    return LoadedModel(cfg, params, label, "init", None, None)


def independent(name, overrides=()):
    """A preset whose every parameter, the embedding included, depends on the seed."""
    return dataclasses.replace(apply_overrides(get_preset(name), list(overrides)),
                               shared_embedding=False)


def _outputs(params, tokens_NT, cfg):
    """(prenorm, normed, logits) at the last position of every sequence."""
    def one(t):
        out = model.forward(params, cfg, t, return_hidden=True)
        return {"prenorm": out.hidden[-1, -1], "normed": out.normed[-1],
                "logits": out.logits[-1]}
    return jax.vmap(one)(tokens_NT)


@pytest.mark.parametrize("name, overrides", ARCHITECTURES)
def test_permuted_weights_give_permuted_features(name, overrides):
    cfg = independent(name, overrides)
    params = jax.device_get(model.init(cfg, jax.random.key(3)))
    perm = np.random.default_rng(1).permutation(cfg.d_model)
    permuted = permute_residual(params, perm)
    tokens = np.asarray(probe_inputs("tokens", cfg, 40, 16, 0)[:40])
    run = jax.jit(_outputs, static_argnums=2)
    outs, outs_pi = run(params, tokens, cfg), run(permuted, tokens, cfg)
    u = 2.0 ** -24
    for output in ("normed", "prenorm", "logits"):
        F, F_pi = np.asarray(outs[output]), np.asarray(outs_pi[output])
        expect = F if output == "logits" else F[:, perm]  # piA computes A's function
        bound = 8 * cfg.d_model * u * np.abs(F).max()
        assert np.abs(F_pi - expect).max() <= bound, output
        if output != "logits":  # and it is not the identity: the columns did move
            assert np.abs(F_pi - F).max() > 1e3 * bound


@pytest.fixture(scope="module")
def independent_pairs():
    """Features of 120 independent llama2-tiny initialisations on shared token inputs."""
    cfg = independent("llama2-tiny")
    xs = probe_inputs("tokens", cfg, 300, 16, 0)
    return [F for _, F in init_features(cfg, range(120), xs, "normed")]


def test_p_uniform_on_independent_models(independent_pairs):
    F = independent_pairs
    p = np.array([P.permutation_test(F[2 * i], F[2 * i + 1], permutations=999,
                                     rng=np.random.default_rng(i)).p for i in range(60)])
    # Exact p-values on the grid {1/1000, ..., 1}: continuous-uniform KS is valid up to 1e-3.
    assert stats.kstest(p, "uniform").pvalue > 1e-3


def test_detects_planted_lineage():
    """B = A's weights plus independent noise of the weights' own size (signal-to-noise 1 in
    every matrix): far from an initialisation's neighbourhood, still detected."""
    cfg = independent("llama2-tiny")
    xs = probe_inputs("tokens", cfg, 300, 16, 0)
    for seed in range(3):
        A = jax.device_get(model.init(cfg, jax.random.key(seed)))
        noise = jax.device_get(model.init(cfg, jax.random.key(1000 + seed)))
        B = jax.tree_util.tree_map(lambda a, e: (a + e) / math.sqrt(2), A, noise)
        F_A = model_features(loaded(cfg, A), xs)
        F_B = model_features(loaded(cfg, B), xs)
        r = P.permutation_test(F_A, F_B, permutations=999)
        assert r.p == 1 / 1000 and r.same_lineage
        assert r.details["z"] > 5


def test_null_moments_equal_enumeration():
    rng = np.random.default_rng(0)
    C = rng.standard_normal((5, 5)) + 0.3
    values = [P.matched_statistic(C, np.array(pi)) for pi in itertools.permutations(range(5))]
    mean, var = P.null_moments(C)
    assert mean == pytest.approx(np.mean(values), abs=1e-12)
    assert var == pytest.approx(np.var(values), abs=1e-12)


def test_exact_p_counts_ties_and_the_observed_value():
    F = np.tile(np.arange(10.0)[:, None], (1, 4))  # every column identical: every draw ties
    r = P.permutation_test(F, F, statistic="pearson", permutations=99)
    assert r.p == 1.0  # s(pi A, B) = s(A, B) for every pi: nothing distinguishes A
    rng = np.random.default_rng(0)
    A = rng.standard_normal((200, 32))
    r = P.permutation_test(A, A + 0.1 * rng.standard_normal(A.shape), permutations=99)
    assert r.p == 0.01 and r.statistic > 0.9


@pytest.mark.parametrize("output", ["logits"])
def test_refuses_logits(output):
    with pytest.raises(UserError, match="vocabulary ids are not exchangeable"):
        Settings(tests=("permutation",), output=output)


def test_refuses_gaussian_inputs_and_too_few_draws():
    with pytest.raises(UserError, match="one forward pass of the base per null draw"):
        Settings(tests=("permutation",), input="gaussian")
    with pytest.raises(UserError, match="K >= 1/alpha - 1 = 99"):
        Settings(tests=("permutation",), permutations=98, alpha=0.01)
    Settings(tests=("permutation",), permutations=99, alpha=0.01)  # the smallest valid K
    with pytest.raises(UserError, match="K >= 1/alpha - 1 = 19"):
        P.permutation_test(np.eye(5), np.eye(5), permutations=18, alpha=0.05)


def test_refuses_other_residual_width():
    small = independent("llama2-tiny")
    wide = dataclasses.replace(small, d_model=128, head_dim=32)
    a = loaded(small, jax.device_get(model.init(small, jax.random.key(0))), "a")
    b = loaded(wide, jax.device_get(model.init(wide, jax.random.key(0))), "b")
    with pytest.raises(UserError, match=r"residual widths \(d_model\) differ \(64 vs 128\)"):
        compare(a, b, Settings(n=10, seq_len=8))


# --- the Table 6 path: two HF folders, bfloat16, a plan before loading ------------------------
@pytest.fixture(scope="module")
def hf_folders(tmp_path_factory):
    """Three tiny LLaMA folders: a base, a 'fine-tune' (the base's weights plus noise of a
    third of their size) and an unrelated model."""
    from bornbiased_jax.hf import save_hf

    root = tmp_path_factory.mktemp("hf")
    cfg = independent("llama2-tiny")
    A = jax.device_get(model.init(cfg, jax.random.key(0)))
    noise = jax.device_get(model.init(cfg, jax.random.key(1)))
    tuned = jax.tree_util.tree_map(lambda a, e: a + e / 3, A, noise)
    other = jax.device_get(model.init(cfg, jax.random.key(2)))
    for name, params in (("base", A), ("tuned", tuned), ("other", other)):
        save_hf(cfg, params, root / name)
    return root


@pytest.mark.slow
def test_hf_folders_in_bfloat16(hf_folders, tmp_path, capsys):
    import json

    from bornbiased_jax.cli import main

    fast = ["--num-seqs", "100", "--seq-len", "8", "--no-progress", "--dtype", "bfloat16"]
    for suspect, related in (("tuned", True), ("other", False)):
        out = tmp_path / suspect
        assert main(["fingerprint", str(hf_folders / "base"), str(hf_folders / suspect),
                     *fast, "--out", str(out)]) == 0
        saved = json.loads((out / "fingerprint.json").read_text())
        assert saved["results"]["permutation"]["same_lineage"] is related
        assert saved["run"]["dtype"] == "bfloat16"
        printed = capsys.readouterr().out
        assert printed.startswith("plan: base ") and "in bfloat16" in printed


def test_refused_before_loading_when_the_models_do_not_fit(hf_folders, tmp_path, capsys,
                                                           monkeypatch):
    from bornbiased_jax import sources
    from bornbiased_jax.cli import main
    from bornbiased_jax.fingerprint.runner.memory_plan import param_count

    def no_load(*a, **k):
        raise AssertionError("loaded a model although the plan refused the run")

    monkeypatch.setattr(sources, "load_source", no_load)
    weights_gib = 2 * param_count(independent("llama2-tiny")) * 4 / 2**30
    out = tmp_path / "fp"
    rc = main(["fingerprint", str(hf_folders / "base"), str(hf_folders / "tuned"),
               "--device-memory-gib", str(weights_gib), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "--dtype bfloat16 halves it" in err and not out.exists()


def test_column_ranks_are_scipys_average_ranks():
    """``identity_dims.column_ranks`` (numpy, no scipy.stats import) gives what
    ``scipy.stats.rankdata(axis=0)`` gives: ordinal ranks without ties, average ranks for
    ties, NaN columns all NaN, a constant column all (n + 1) / 2."""
    from scipy import stats

    from bornbiased_jax.fingerprint.methods.identity_dims import column_ranks

    rng = np.random.default_rng(0)
    tied = rng.integers(0, 4, (37, 9)).astype(np.float64)
    tied[:, 0] = 1.0
    tied[5, 1] = np.nan
    for F in (rng.standard_normal((37, 64)), tied):
        np.testing.assert_array_equal(column_ranks(F), stats.rankdata(F, axis=0))
