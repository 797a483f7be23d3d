"""SeedPrint on pools of fresh initialisations (Figure 13, Table 4a, the false-positive rates and
the width/depth confound): the CPU-scale model shapes, a pool's features on one shared probe
set, the paper's and the released test over many pairs (one bank of Gaussian-null draws), the
calibrated test over every pair of a pool (leave-two-out null) or against a disjoint null, and
a false-positive rate with its exact interval. Pools of *trained* models, whose pairs share
models, are :mod:`bornbiased_jax.fingerprint.runner.rejection`'s."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

import numpy as np

from bornbiased_jax import files
from bornbiased_jax.presets import get_preset
from bornbiased_jax.fingerprint.methods import calibrated as C
from bornbiased_jax.fingerprint.methods import identity_dims as D
from bornbiased_jax.fingerprint.methods.algorithm1 import null_taus, paper_test
from bornbiased_jax.fingerprint.runner.features import init_features
from bornbiased_jax.fingerprint.methods.official import official_test
from bornbiased_jax.files import progress
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.stats import clopper_pearson
from bornbiased_jax.fingerprint.runner.rejection import all_pairs

from bornbiased_jax.fingerprint.methods.result import ALPHA


def cpu_model(scaled: bool, shared_embedding: bool = False):
    """A small LLaMA-style decoder: d = 128, 4 blocks, 4 heads, SwiGLU d_ff = 344, RMSNorm,
    RoPE, untied, |V| = 32,000. ``scaled``: GPT-2 residual init (App. B.1: W_O, W_down at
    0.02/sqrt(2L)); otherwise every matrix at 0.02 (the HF default the authors' code uses)."""
    base = get_preset("llama2-tiny")
    tag = "gpt2init" if scaled else "hfinit"
    return dataclasses.replace(base, name=f"llama-d128x4-{tag}", d_model=128, n_layers=4,
                               n_heads=4, d_ff=344, vocab_size=32_000, max_seq_len=128,
                               scale_residual_init=scaled, shared_embedding=shared_embedding)


def nano_model(scaled: bool, shared_embedding: bool = False):
    """The paper's 12-layer, 12-head, d = 768 LLaMA shape (``llama2-nano``). Like
    :func:`cpu_model`, each seed draws its own embedding by default, as a seed's whole
    initialisation does in the paper: with token inputs, models that share one embedding
    draw see the same input vectors, a dependence between "unrelated" models that every
    lineage test rightly detects (the preset shares it, for Table 1's probes)."""
    tag = "gpt2init" if scaled else "hfinit"
    return dataclasses.replace(get_preset("llama2-nano"), name=f"llama2-nano-{tag}",
                               scale_residual_init=scaled, shared_embedding=shared_embedding)


def pool(cfg, seeds, kind: str, n: int, T: int, probe_seed: int = 0, cache: Path | None = None,
         log=progress):
    """(M, n, d) features of fresh initialisations on one shared probe set (normed outputs).

    With ``cache`` (a folder), the features are saved there and reused by later runs with the
    same config, seeds, inputs and sizes. ``log`` gets a line with the time taken."""
    t0 = time.time()
    seeds = list(seeds)
    key = hashlib.sha256(repr((dataclasses.asdict(cfg), seeds, kind, n, T, probe_seed))
                         .encode()).hexdigest()[:16]
    f = cache / f"{cfg.name}-{kind}-{key}.npy" if cache else None
    if f is not None and f.exists():
        return np.load(f)
    xs = probe_inputs(kind, cfg, n, T, probe_seed)
    F = np.stack([F for _, F in init_features(cfg, seeds, xs, group=25, progress=False)])
    if f is not None:
        files.atomic_write(f, lambda fh: np.save(fh, F), mode="wb")
    log(f"  {cfg.name} {kind}: {len(seeds)} models x n = {n}, T = {T} in "
        f"{time.time() - t0:.0f} s")
    return F


def false_positive_rate(ps, alpha: float = ALPHA) -> dict:
    """False-positive rate of p-values at alpha, with its 95 % Clopper-Pearson interval, and
    whether alpha lies inside the interval (the pairs counted as independent trials; for
    pairs that share models see ``fingerprint.runner.rejection.rate``)."""
    ps = np.asarray(ps)
    k, N = int((ps <= alpha).sum()), int(ps.size)
    lo, hi = clopper_pearson(k, N)
    return {"rejections": k, "pairs": N, "fpr": k / N, "ci95": [lo, hi],
            "alpha_inside": bool(lo <= alpha <= hi)}


def pairs_of(M: int, limit: int | None, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Unordered pairs (a < b) of M models, all or a random subset of ``limit``."""
    allp = all_pairs(M)
    if limit is not None and limit < len(allp):
        idx = rng.choice(len(allp), size=limit, replace=False)
        allp = [allp[i] for i in sorted(idx)]
    return allp


def paper_and_official(F, pairs, m=None, k=None, bank_size: int = 100, trials: int = 10,
                       seed: int = 0) -> dict:
    """Paper and official p-values of each pair (base a, suspect b). The paper test's null
    draws come from a bank of ``bank_size`` Gaussian-matrix draws (each pair uses ``trials``
    distinct draws at random) so that many pairs do not each simulate their own."""
    rng = np.random.default_rng(seed)
    M, n, d = F.shape
    m = m or D.default_size(d)
    bank = [null_taus(n, d, m, rng) for _ in range(bank_size)]
    out = {"paper": {"t_mean": [], "u_mean": [], "t_pooled": [], "u_pooled": []},
           "official": {"two_phi_bar": [], "one_sided": []}, "paper_mean_tau": [],
           "paper_S": [], "official_mean_tau": [], "official_S": []}
    for a, b in pairs:
        draws = [bank[i] for i in rng.choice(bank_size, size=trials, replace=False)]
        r = paper_test(F[a], F[b], m, null_draws=draws)
        for key in out["paper"]:
            out["paper"][key].append(r.p_values[key])
        out["paper_mean_tau"].append(r.statistic)
        out["paper_S"].append(r.n_dims)
        o = official_test(F[a], F[b], k)
        for key in out["official"]:
            out["official"][key].append(o.p_values[key])
        out["official_mean_tau"].append(o.statistic)
        out["official_S"].append(o.n_dims)
    return out


def spearman_all_matrix(F, columns: int | None = None) -> np.ndarray:
    """S[a, b] = the 'spearman_all' statistic of base a and suspect b, the mean over dimensions
    of Spearman's rho of their features = sum_{i, j} Z_a Z_b / (n d) for the rank-standardised
    columns Z, for every model a of the pool F (M, n, d) and the first ``columns`` models b (all
    by default): one matrix product."""
    Z = np.stack([D.RankedFeatures.of(f).z_nd for f in F]).astype(np.float32)  # (M, n, d)
    flat = Z.reshape(len(F), -1)
    return (flat @ (flat.T if columns is None else flat.T[:, :columns])).astype(np.float64) \
        / flat.shape[1]


def calibrated_all_pairs(F, statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact exchangeability p of every ordered pair (base a, suspect b), the null models of a
    pair being the M - 2 other models of the pool (independent of both): (p_exact (M, M),
    p_gauss (M, M)), NaN on the diagonal."""
    M = F.shape[0]
    if statistic == "spearman_all":
        S = spearman_all_matrix(F)  # S[a, b], symmetric
        stat_of = lambda b: S[:, b]  # noqa: E731  statistics s(j, b) for every j
    elif statistic == "residual_all":
        total = F.astype(np.float64).sum(0)

        def stat_of(b):
            # The pool without b: for the pair (a, b) these are A = a and the M - 2 others,
            # and M_b is their common response.
            others = [j for j in range(M) if j != b]
            s = np.full(M, np.nan)
            s[others] = C.residual_corrs((F[j] for j in others), (total - F[b]) / (M - 1),
                                         F[b])
            return s
    else:
        raise ValueError(statistic)
    pe = np.full((M, M), np.nan)
    pg = np.full((M, M), np.nan)
    for b in range(M):
        s = stat_of(b)
        for a in range(M):
            if a == b:
                continue
            null = np.delete(s, [a, b])
            pe[a, b], pg[a, b], _ = C.exchangeable_p(s[a], null)
    return pe, pg


def calibrated_disjoint(F, n_pair_models: int, statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact and Gaussian-tail p of the pairs (a < b) among the first ``n_pair_models`` models,
    against the *other* models of the pool as a fixed, disjoint null (K = M - n_pair_models).

    Unlike the leave-two-out null of :func:`calibrated_all_pairs` (where, for each suspect b,
    exactly one base a gets the smallest p by construction), a disjoint null does not force the
    rejection count, so this is an independent check of the exchangeability argument."""
    P, nulls = F[:n_pair_models], list(F[n_pair_models:])
    if statistic == "spearman_all":  # s(j, b) for every model j: one matrix product
        S = spearman_all_matrix(F, n_pair_models)
    pe, pg = [], []
    for a in range(n_pair_models):
        for b in range(a + 1, n_pair_models):
            if statistic == "spearman_all":
                e, g, _ = C.exchangeable_p(S[a, b], S[n_pair_models:, b])
            else:
                r = C.calibrated_test(P[a], P[b], nulls, statistic_name=statistic)
                e, g = r.p_values["exact"], r.p_values["gaussian_tail"]
            pe.append(e)
            pg.append(g)
    return np.asarray(pe), np.asarray(pg)


def fmt_fpr(r: dict) -> str:
    lo, hi = r["ci95"]
    return f"{r['fpr']:.3f} [{lo:.3f}, {hi:.3f}] ({r['rejections']}/{r['pairs']})"

