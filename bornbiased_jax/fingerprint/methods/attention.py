"""The attention test: a lineage test that reads the attention heads' weights under every
renaming the matched test sees through, residual rotations included (beyond the paper).

Why. The matched test reads MLP units only: a copy that keeps BASE's attention, embeddings and
norms, re-learns every MLP from a fresh initialisation and rotates its residual stream leaves it
nothing (and the rotation blinds the permutation test). Its attention heads are still BASE's.

Views. Per layer and query head, two vectors of log singular values (``head_spectra``): the QK
view (with RoPE per frequency pair) and the OV view, with the norms' gains folded in. They are
unchanged by residual rotations, per-head maps (for RoPE, every map that preserves the
function) and head permutations; ``head_spectra`` states what each is invariant to.

Statistic. For a pair of layers (l_A of A = BASE, l_B of B = SUSPECT) and each view, the heads
are paired one to one by the assignment of least total Euclidean distance between their views
(:func:`partners`; a dead head, a zero circuit, is nobody's partner). K = #{i : m_QK(i) =
m_OV(i)}: the heads whose QK partner and OV partner are the same head. A copy, however renamed,
has every head doubly matched; independent models about one per layer. Matching by one view
alone is no evidence: at initialisation the spectra of independent Gaussian products
concentrate (Marchenko-Pastur), and the QK partner of a head in an unrelated initialisation is
about as near as the nearest other head of its own model (measured in
``tests/test_attention_test.py``); two views agreeing is what the null below prices.

Null. Re-pair A's OV circuits with its QK circuits: head h keeps its QK circuit and takes the OV
circuit of head sigma(h). At initialisation W_Q, W_K are drawn independently of W_V, W_O and
every head alike, so for sigma in the group Gamma of permutations that keep the K/V grouping
(query heads permuted within their K/V head, K/V heads permuted with their groups: S_G wr S_N)
the re-paired model has A's law. The matchings follow the views: the QK matching stays, the OV
matching becomes m_OV o sigma, so K(sigma) = #{i : sigma(i) = phi(i)}, phi = m_OV^-1 o m_QK
where both are defined: with G = 1 the partial rencontres law of ``rencontres`` (n = H, m =
|dom phi|), with G > 1 its analogue on Gamma (:func:`layer_log_pmf`: given the permutation of
the K/V heads, a partial rencontres law per group, averaged over the N! permutations of the
groups as a permanent of generating functions). Layers re-pair independently and no layer's
views depend on another's weights, so K_total = sum_l K_l has the convolution of the layers'
laws (exactly; no Fisher combination), and p = P(K_total' >= K_total) is valid (super-uniform)
when A is an initialisation independent of B, whatever B is. Re-pairing B's heads instead gives
the law of B's heads, valid when B is an initialisation; with neither known, the larger p.

Layers across depths. Which layer of B descends from which of A is chosen by a screen of QK
views only: S(l_A, l_B) = the mean over A's live heads of the distance to the nearest head of
l_B; each layer of A takes the layer of B with the smallest S (and each layer of B, by the
same screen read from B's side, a layer of A). The re-pairing moves OV views only, so the
choice costs nothing: the p stays valid given it.

Two trained models. Training couples a head's QK and OV circuits (a previous-token head, a
sink head), so the re-pairing no longer keeps a trained model's law, and unrelated models
trained alike may share head roles. Between two trained models the level of this test is an
assumption: on unrelated seeds trained on the same data (the long level cells of the
reproduction) they share more doubly matched heads than the re-pairing law's mean, and their
rejection rate at alpha was not rejected, but by a rule of low power at those few models, and
at some checkpoints the observed rate is several times alpha. It is reported as its own column
and is no leg of the any-pair verdict.

Cost: weights only, no forward pass: per layer and head two QR factorisations of (d, K) and
the singular values of K x K products; the distances of every layer pair's heads.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError
from bornbiased_jax.fingerprint.methods import head_spectra as S
from bornbiased_jax.fingerprint.methods.rencontres import partial_log_pmf
from bornbiased_jax.fingerprint.methods.result import ALPHA, LineageResult, check_alpha

MAX_KV_GROUPS = 12  # K/V heads up to which the law on S_G wr S_N is computed (2^N N terms)
NULL_DRAWS = 2000  # draws of the null law kept for the figure
DIRECTIONS = ("a", "b", "both")


# ----------------------------------------------------------------------- matching heads
def distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(H_A, H_B) Euclidean distances between the rows of two views (H_A, V) and (H_B, V)."""
    if x.shape[1] != y.shape[1]:
        raise UserError(f"head views of {x.shape[1]} and {y.shape[1]} values: the models' "
                        f"heads must have the same head_dim to be compared")
    return np.sqrt(np.maximum(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1), 0.0))


def partners(D: np.ndarray, live_a: np.ndarray, live_b: np.ndarray) -> np.ndarray:
    """m[i]: B's head paired with A's head i, or -1: the one-to-one assignment of A's live
    heads to B's live heads of least total distance ``D`` (H_A, H_B) (scipy's
    ``linear_sum_assignment``; with unequal numbers of live heads, the surplus heads of the
    larger side unpaired), dead heads paired with none. A partial injection that commutes
    with any relabelling of either side's heads (the optimum is unique with probability 1 for
    continuous views), which the null's law needs."""
    from scipy.optimize import linear_sum_assignment

    m = np.full(D.shape[0], -1, np.int64)
    ia, ib = np.nonzero(live_a)[0], np.nonzero(live_b)[0]
    if len(ia) and len(ib):
        rows, cols = linear_sum_assignment(D[np.ix_(ia, ib)])
        m[ia[rows]] = ib[cols]
    return m


def inverse(m: np.ndarray, size: int) -> np.ndarray:
    """The partial injection m^-1 on ``size`` heads (-1 where undefined)."""
    out = np.full(size, -1, np.int64)
    out[m[m >= 0]] = np.nonzero(m >= 0)[0]
    return out


def agreement(m_qk: np.ndarray, m_ov: np.ndarray, size_b: int) -> tuple[int, np.ndarray]:
    """(K, phi): the heads whose QK and OV partners agree, and phi = m_OV^-1 o m_QK, the head
    sigma must send each head to for it to agree once re-paired (-1 where undefined)."""
    K = int(np.sum((m_qk >= 0) & (m_qk == m_ov)))
    inv_ov = inverse(m_ov, size_b)
    phi = np.where(m_qk >= 0, inv_ov[np.maximum(m_qk, 0)], -1)
    return K, phi


# ----------------------------------------------------------------------------- the law
def layer_log_pmf(phi: np.ndarray, n_kv: int) -> np.ndarray:
    """log P(K = k), k = 0..H, of K(sigma) = #{i : sigma(i) = phi(i)} for sigma uniform on the
    permutations of H = len(phi) query heads that keep the grouping into ``n_kv`` K/V heads
    (head i in group i // G). G = 1: the partial rencontres law (n = H, m = |dom phi|).
    G > 1: sigma = (pi on the groups, rho_n within each); given pi, the heads of group n whose
    phi lies in group pi(n) agree independently across groups, each group's count partial
    rencontres (G, m_{n, pi(n)}); averaging over pi is the permanent of the generating
    functions P_{n n'}(x), by a dynamic programme over subsets of groups (N 2^(N-1) products).
    Beyond :data:`MAX_KV_GROUPS` K/V heads the within-group permutations alone (pi = identity,
    a subgroup: still valid, coarser)."""
    H = len(phi)
    if H % n_kv:
        raise UserError(f"{H} query heads do not split into {n_kv} K/V groups")
    G = H // n_kv
    out = np.full(H + 1, -np.inf)
    if G == 1:
        lp = partial_log_pmf(H, int(np.sum(phi >= 0)))
        out[:len(lp)] = lp
        return out
    m_NN = np.zeros((n_kv, n_kv), np.int64)
    src = np.nonzero(phi >= 0)[0]
    np.add.at(m_NN, (src // G, phi[src] // G), 1)
    pgf = [[_pad(np.exp(partial_log_pmf(G, int(m_NN[a, b]))), H + 1) for b in range(n_kv)]
           for a in range(n_kv)]
    if n_kv > MAX_KV_GROUPS:
        poly = np.zeros(H + 1)
        poly[0] = 1.0
        for a in range(n_kv):
            poly = np.convolve(poly, pgf[a][a])[:H + 1]
    else:
        dp = {0: _pad(np.ones(1), H + 1)}
        for a in range(n_kv):  # group a assigned, in turn, to each group b not yet taken
            nxt: dict = {}
            for mask, poly in dp.items():
                for b in range(n_kv):
                    if not mask >> b & 1:
                        q = np.convolve(poly, pgf[a][b])[:H + 1]
                        key = mask | 1 << b
                        nxt[key] = nxt[key] + q if key in nxt else q
            dp = nxt
        poly = dp[(1 << n_kv) - 1] / math.factorial(n_kv)
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(poly, 0.0))


def _pad(x: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n)
    out[:min(n, len(x))] = x[:n]
    return out


def log_convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log of the convolution of two pmfs given as logs (the law of a sum of independent
    counts), without leaving log space."""
    E = np.full((len(a) + len(b) - 1, len(b)), -np.inf)
    for j in range(len(b)):
        E[j:j + len(a), j] = a + b[j]
    return special.logsumexp(E, axis=1)


def log_sf(log_pmf: np.ndarray, k: int) -> float:
    """log P(K >= k) of a law given by its log pmf on 0..len - 1."""
    if k <= 0:
        return 0.0
    if k >= len(log_pmf):
        return -math.inf
    return min(0.0, float(special.logsumexp(log_pmf[k:])))


# --------------------------------------------------------------------------- the layers
def screen(views_a: list, views_b: list) -> np.ndarray:
    """S (L_A, L_B): the mean over A's live heads of the QK distance to the nearest live head
    of B's layer (QK views only, which the re-pairing leaves in place; inf where either layer
    has no live head)."""
    out = np.full((len(views_a), len(views_b)), np.inf)
    for i, a in enumerate(views_a):
        for j, b in enumerate(views_b):
            if a.live_qk.any() and b.live_qk.any():
                D = distances(a.qk[a.live_qk], b.qk[b.live_qk])
                out[i, j] = float(D.min(1).mean())
    return out


@dataclasses.dataclass(frozen=True)
class Direction:
    """One direction of the test, X's heads re-paired against Y's: per layer of X its doubly
    matched heads ``K_L`` and the layer of Y the screen chose (``to_y``), the mean QK distance
    of the heads the QK matching paired (``qk_distance_L``), and the null law of
    K_total = sum K_L (``log_pmf``, on 0..sum of X's heads)."""

    K_L: np.ndarray
    to_y: np.ndarray
    qk_distance_L: np.ndarray
    log_pmf: np.ndarray

    @property
    def K(self) -> int:
        return int(self.K_L.sum())

    @property
    def log_p(self) -> float:
        """log P(K_total' >= K_total) under the re-pairing of X's heads."""
        return log_sf(self.log_pmf, self.K)

    @staticmethod
    def of(views_x: list, views_y: list) -> "Direction":
        """The direction that re-pairs X's heads (``head_spectra.head_views`` of each): each
        layer of X takes its nearest layer of Y by the :func:`screen`, the heads of the pair
        are matched in each view, and the layers' laws convolve."""
        to_y = screen(views_x, views_y).argmin(1)
        K_L, qk_L, law = [], [], np.zeros(1)
        for x, l_y in zip(views_x, to_y):
            y = views_y[l_y]
            D_qk = distances(x.qk, y.qk)
            m_qk = partners(D_qk, x.live_qk, y.live_qk)
            m_ov = partners(distances(x.ov, y.ov), x.live_ov, y.live_ov)
            K, phi = agreement(m_qk, m_ov, y.heads)
            K_L.append(K)
            paired = np.nonzero(m_qk >= 0)[0]
            qk_L.append(float(D_qk[paired, m_qk[paired]].mean()) if len(paired) else math.nan)
            law = log_convolve(law, layer_log_pmf(phi, x.n_kv))
        return Direction(np.array(K_L), to_y, np.array(qk_L), law)


def attention_test(params_a: dict, cfg_a: ModelConfig, params_b: dict, cfg_b: ModelConfig, *,
                   alpha: float = ALPHA, direction: str = "both") -> LineageResult:
    """The attention test of H0 "B is independent of A" from the two models' weights (module
    docstring). ``direction``: whose heads the null re-pairs: 'a' where A is an
    initialisation, 'b' where B is (each valid), 'both' (the larger p) otherwise.

    Returns the primary p 'head_repairing'; details: K per SUSPECT layer and the BASE layer
    the screen chose for it, the mean QK distance of paired heads, each direction's K_total
    and log10 p."""
    alpha = check_alpha(alpha)
    if direction not in DIRECTIONS:
        raise UserError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    S.check_applicable(cfg_a, "BASE")
    S.check_applicable(cfg_b, "SUSPECT")
    check_head_dims(cfg_a, cfg_b)
    va, vb = S.head_views(params_a, cfg_a), S.head_views(params_b, cfg_b)
    dirs = {"a": Direction.of(va, vb), "b": Direction.of(vb, va)}
    used = direction if direction != "both" else max(dirs, key=lambda k: dirs[k].log_p)
    d = dirs[used]
    pmf = np.exp(d.log_pmf - d.log_pmf.max())
    null = np.random.default_rng(0).choice(len(pmf), NULL_DRAWS, p=pmf / pmf.sum())
    heads = len(d.log_pmf) - 1
    details = {"direction": direction, "decided_by_direction": used,
               "statistic_name": "doubly matched heads", "heads": heads,
               "K_total_a": dirs["a"].K, "K_total_b": dirs["b"].K,
               "log10_p_a": dirs["a"].log_p / math.log(10),
               "log10_p_b": dirs["b"].log_p / math.log(10),
               "null_mean": float(np.sum(np.exp(d.log_pmf) * np.arange(len(d.log_pmf)))),
               "K_per_layer": [int(k) for k in dirs["b"].K_L],
               "base_layer_of": [int(l) for l in dirs["b"].to_y],
               "suspect_layer_of": [int(l) for l in dirs["a"].to_y],
               "qk_distance": float(np.nanmean(d.qk_distance_L))}
    return LineageResult("attention", {"head_repairing": math.exp(d.log_p)}, alpha, heads,
                         cfg_a.d_model, np.arange(0), np.zeros(0), "doubly_matched_heads",
                         float(d.K), null.astype(np.float64), details)


def check_head_dims(cfg_a: ModelConfig, cfg_b: ModelConfig, suspect: str = "SUSPECT") -> None:
    if cfg_a.resolved_head_dim != cfg_b.resolved_head_dim:
        raise UserError(f"{suspect}: the attention test compares heads of one size, and the "
                        f"models' head_dim differ ({cfg_a.resolved_head_dim} vs "
                        f"{cfg_b.resolved_head_dim}): choose another --test")


def check_pair(base_cfg, suspect_cfg, settings, suspect: str = "SUSPECT") -> None:
    """A UserError when the two configurations' heads cannot be compared (their head sizes
    differ); models without attention heads pass here and get p = 1 (:func:`from_context`)."""
    if base_cfg.has_attn_params and suspect_cfg.has_attn_params:
        check_head_dims(base_cfg, suspect_cfg, suspect)


def from_context(ctx) -> LineageResult:
    """The attention test of one pair that ``compare`` prepared (``runner.context.Context``):
    the null re-pairs the heads of whichever model is an initialisation (BASE first), else
    the larger p of the two; a pair without attention heads gets p = 1 and says why."""
    s, a, b = ctx.settings, ctx.base, ctx.suspect
    if not (a.cfg.has_attn_params and b.cfg.has_attn_params):
        return LineageResult("attention", {"head_repairing": 1.0}, s.alpha, 0, ctx.d_out,
                             np.arange(0), np.zeros(0), "doubly_matched_heads", math.nan,
                             np.zeros(0), {"statistic_name": "doubly matched heads"},
                             f"{a.cfg.name} has no attention heads to compare")
    direction = "a" if a.is_init else "b" if b.is_init else "both"
    r = attention_test(a.params, a.cfg, b.params, b.cfg, alpha=s.alpha, direction=direction)
    if direction == "both":
        r.note = ("neither model is a known initialisation: the re-pairing null is an "
                  "assumption for two trained models (not rejected on unrelated same-data seeds, "
                  "by a rule of low power, though their observed rate exceeds alpha at some "
                  "checkpoints)")
    return r
