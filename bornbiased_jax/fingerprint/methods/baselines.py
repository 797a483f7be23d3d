"""The four fingerprints the paper compares SeedPrint with (App. B.3.2), for models of this zoo.

Each returns a :class:`BaselineResult`: a similarity, and "same lineage" when it is at least
``THRESHOLD`` = 0.8 (the REEF threshold the paper applies to all four).

  ``pcs``        HuRef's parameter cosine similarity: the cosine of all parameters flattened,
                 except the token embedding, learned positions and LM head. The norm gains are
                 included (as in HuRef and the authors' code): they are 1 at initialisation, so
                 two unrelated *initialisations* have PCS = G / (G + S) > 0, with G the number
                 of gain entries and S = sum over kernels of count * std^2
                 (:func:`pcs_unrelated_init`); ``include_norms=False`` leaves them out.
  ``ics``        HuRef's invariant-terms cosine similarity: with X (k, d) the embeddings of a
                 fixed list of k token ids (HuRef: the least frequent tokens of a corpus,
                 :func:`least_frequent_tokens`), the k x k matrices X W_Q W_K^T X^T,
                 X W_V W_O X^T and X W_up W_down X^T of the last two blocks, flattened and
                 concatenated; ICS is the cosine of the two models' vectors. They are invariant
                 to permuting MLP hidden units, attention heads (with their K/V groups) and the
                 residual basis (X -> X P with every weight permuted to match).
                 Grouped-query attention: K and V are repeated to the query heads they serve
                 (HF's ``repeat_kv``, also the authors' code), so
                 W_Q W_K^T = sum_h W_Q^h W_K^{n(h)T} and W_V W_O = sum_h W_V^{n(h)} W_O^h. Gated MLP: W_up W_down only, as HuRef and
                 the authors' code; W_gate W_down is equally permutation-invariant but not used.
                 Norm gains and biases are not part of the invariants (as HuRef).
  ``intrinsic``  Yoon et al.'s intrinsic fingerprint: per-block std of the W_Q, W_K, W_V, W_O
                 entries, z-scored across blocks, the Pearson r of the two models' profiles per
                 projection, averaged over the four. Profiles of different depths are linearly
                 interpolated to the longer one (the authors' code). With L = 2 blocks every r
                 is +-1, and for small L it is a noisy statistic (for L = 4 independent
                 profiles r has sd 0.58).
  ``reef``       REEF: linear CKA between the two models' last-token final hidden states (after
                 the final norm, HF's ``last_hidden_state``) on one fixed set of real-text
                 windows (:func:`text_windows`). CKA is invariant to orthogonal maps and
                 scaling of either representation, so to permuting the residual basis. Linear
                 CKA is biased upward for unrelated representations when n is not much larger
                 than d: for independent isotropic n x p and n x q Gaussian features it is about
                 sqrt(pq / ((n + p)(n + q))) (0.56 at n = 200, p = q = 256).

Every function takes plain parameter dicts (``model.init`` layout) and the model configs, so it
runs on any :class:`~bornbiased_jax.sources.LoadedModel` (``m.cfg``, ``m.params``).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from bornbiased_jax import data, schema
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.defaults import BASELINE_THRESHOLD
from bornbiased_jax.errors import UserError

THRESHOLD = BASELINE_THRESHOLD  # Zhang et al. (REEF); the paper uses it for all four (B.3.2)
EMBEDDING_GROUP = ("embed", "pos_embed", "lm_head")


@dataclasses.dataclass(frozen=True)
class BaselineResult:
    """One baseline's similarity of two models; ``same_lineage`` when it reaches ``threshold``."""

    method: str
    similarity: float
    threshold: float = THRESHOLD
    details: dict = dataclasses.field(default_factory=dict)

    @property
    def same_lineage(self) -> bool:
        return bool(self.similarity >= self.threshold)

    def to_json(self) -> dict:
        return {"method": self.method, "similarity": float(self.similarity),
                "threshold": self.threshold, "same_lineage": self.same_lineage,
                "details": dict(self.details)}


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    den = np.linalg.norm(a) * np.linalg.norm(b)
    if den == 0:
        raise UserError("cosine similarity of an all-zero parameter vector is undefined")
    return float(a @ b / den)


def _leaves(tree, prefix=(), as_array=True):
    """(path, leaf) of every leaf of a nested dict, in sorted key order (leaves as numpy
    arrays, or as they are with ``as_array=False``)."""
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from _leaves(tree[k], prefix + (k,), as_array)
    else:
        yield prefix, (np.asarray(tree) if as_array else tree)


def _check_same_shapes(params_a: dict, params_b: dict, what: str) -> None:
    sa = {p: a.shape for p, a in _leaves(params_a)}
    sb = {p: b.shape for p, b in _leaves(params_b)}
    if sa != sb:
        diff = sorted(set(sa.items()) ^ set(sb.items()))[:4]
        raise UserError(f"{what} needs two models of the same architecture; their parameters "
                        f"differ, e.g. {diff}")


# --- PCS ---------------------------------------------------------------------------------------
def flat_params(params: dict, include_norms: bool = True) -> np.ndarray:
    """Every parameter except the embedding group, flattened and concatenated (float64)."""
    parts = [a.ravel() for path, a in _leaves(params) if path[0] not in EMBEDDING_GROUP
             and (include_norms or path[-1] != "scale")]
    return np.concatenate(parts).astype(np.float64)


def pcs(params_a: dict, params_b: dict, include_norms: bool = True) -> BaselineResult:
    """HuRef PCS: cosine of all non-embedding parameters (norm gains included by default)."""
    _check_same_shapes(params_a, params_b, "PCS")
    va, vb = flat_params(params_a, include_norms), flat_params(params_b, include_norms)
    return BaselineResult("pcs", _cosine(va, vb), details={"n_params": int(va.size),
                                                           "include_norms": include_norms})


def pcs_unrelated_init(cfg: ModelConfig) -> tuple[float, float]:
    """(expected PCS, its sd) of two independent initialisations of ``cfg`` (``model.init``).

    Gains are 1 in both, kernels independent N(0, std^2), biases 0, so PCS = (G + c) /
    sqrt((G + S + e_a)(G + S + e_b)) with the kernels' cross term c (variance S4 = sum
    count * std^4) and the squared norms' fluctuations e (variance 2 S4 each); to first order
    PCS = p + c / (G + S) - p (e_a + e_b) / (2 (G + S)), p = G / (G + S), whose sd is
    sqrt(S4 (1 + p^2)) / (G + S)."""

    from bornbiased_jax import model

    shapes = model.param_shapes(cfg)
    G = S = S4 = 0.0
    for path, leaf in _leaves(shapes, as_array=False):
        size = int(np.prod(leaf.shape))
        if path[0] in EMBEDDING_GROUP or path[-1] == "bias":
            continue
        if path[-1] == "scale":
            G += size
            continue
        std = cfg.residual_std if schema.writes_residual(path) else cfg.init_std
        S += size * std ** 2
        S4 += size * std ** 4
    p = G / (G + S)
    return p, float(np.sqrt(S4 * (1 + p * p))) / (G + S)


# --- ICS ---------------------------------------------------------------------------------------
def invariant_matrices(params: dict, cfg: ModelConfig, layer: int) -> dict[str, np.ndarray]:
    """The three (d, d) products of block ``layer`` whose sandwich X (.) X^T HuRef uses:
    W_Q W_K^T, W_V W_O (K and V heads repeated to the query heads they serve) and W_up W_down."""
    if not cfg.has_attn_params or not cfg.has_mlp:
        raise UserError(f"ICS needs softmax attention and an MLP in every block; {cfg.name} "
                        f"has block={cfg.block!r}, attention={cfg.attention!r}")
    blk = params[f"layers_{layer}"]
    d, H, N, K = cfg.d_model, cfg.n_heads, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    G = H // N
    attn = blk["attn"]
    q_dHK = np.asarray(attn["q_proj"]["kernel"], np.float64).reshape(d, H, K)
    k_dNK = np.asarray(attn["k_proj"]["kernel"], np.float64).reshape(d, N, K)
    v_dNK = np.asarray(attn["v_proj"]["kernel"], np.float64).reshape(d, N, K)
    o_HKd = np.asarray(attn["o_proj"]["kernel"], np.float64).reshape(H, K, d)
    k_dHK = np.repeat(k_dNK, G, axis=1)  # query head h = n G + g reads K/V head n
    v_dHK = np.repeat(v_dNK, G, axis=1)
    mlp = blk["mlp"]
    return {"qk": np.einsum("ahk,bhk->ab", q_dHK, k_dHK),
            "vo": np.einsum("ahk,hkb->ab", v_dHK, o_HKd),
            "ud": np.asarray(mlp["up_proj"]["kernel"], np.float64)
            @ np.asarray(mlp["down_proj"]["kernel"], np.float64)}


def invariant_terms(params: dict, cfg: ModelConfig, token_ids: Sequence[int],
                    layers: Sequence[int] | None = None) -> np.ndarray:
    """HuRef's invariant vector: X M X^T for M in (W_Q W_K^T, W_V W_O, W_up W_down) of each of
    ``layers`` (default: the last two blocks), X = the embeddings of ``token_ids``, flattened."""
    ids = np.asarray(token_ids, dtype=int)
    if ids.ndim != 1 or ids.size < 1 or ids.min() < 0 or ids.max() >= cfg.vocab_size:
        raise UserError(f"ICS token ids must be a non-empty list of ids in [0, {cfg.vocab_size})")
    layers = list(range(max(0, cfg.n_layers - 2), cfg.n_layers)) if layers is None else layers
    for li in layers:
        if not 0 <= li < cfg.n_layers:
            raise UserError(f"layer {li} is outside [0, {cfg.n_layers}) of {cfg.name}")
    X_kd = np.asarray(params["embed"]["embedding"], np.float64)[ids]
    out = []
    for li in layers:
        for M_dd in invariant_matrices(params, cfg, li).values():
            out.append((X_kd @ M_dd @ X_kd.T).ravel())
    return np.concatenate(out)


def ics(params_a: dict, cfg_a: ModelConfig, params_b: dict, cfg_b: ModelConfig,
        token_ids: Sequence[int], layers: Sequence[int] | None = None) -> BaselineResult:
    """HuRef ICS: cosine of the two models' invariant vectors on the same token ids."""
    if (cfg_a.vocab_size, cfg_a.n_layers) != (cfg_b.vocab_size, cfg_b.n_layers):
        raise UserError(f"ICS compares the same token ids and blocks; the models differ in "
                        f"vocabulary or depth ({cfg_a.vocab_size}/{cfg_a.n_layers} vs "
                        f"{cfg_b.vocab_size}/{cfg_b.n_layers})")
    if layers is None:
        layers = list(range(max(0, cfg_a.n_layers - 2), cfg_a.n_layers))
    va = invariant_terms(params_a, cfg_a, token_ids, layers)
    vb = invariant_terms(params_b, cfg_b, token_ids, layers)
    if va.shape != vb.shape:
        raise UserError("the two models' invariant terms differ in size")
    return BaselineResult("ics", _cosine(va, vb), details={"n_tokens": len(token_ids),
                                                           "layers": [int(li) for li in layers]})


def least_frequent_tokens(docs: Sequence[str], tokenizer, k: int) -> list[int]:
    """The k token ids least frequent in ``docs`` (ties by id; unseen ids first), HuRef's
    choice: rare tokens' embeddings move least in training. The end-of-text token is skipped."""
    V = tokenizer.get_vocab_size()
    counts = np.zeros(V, np.int64)
    for ids in data.token_chunks(docs, tokenizer):
        counts += np.bincount(ids, minlength=V)[:V]
    eot = tokenizer.token_to_id(data.EOT)
    order = sorted((int(counts[i]), i) for i in range(V) if i != eot)
    if not 1 <= k <= len(order):
        raise UserError(f"k = {k} tokens: choose 1 <= k <= {len(order)}")
    return [i for _, i in order[:k]]


# --- Intrinsic ---------------------------------------------------------------------------------
def std_profiles(params: dict, cfg: ModelConfig) -> dict[str, np.ndarray]:
    """Per-block std of the W_Q, W_K, W_V, W_O entries, each z-scored across the L blocks."""
    if not cfg.has_attn_params:
        raise UserError(f"the intrinsic fingerprint needs attention weights; {cfg.name} has none")
    out = {}
    for name in ("q", "k", "v", "o"):
        s = np.array([np.asarray(params[f"layers_{i}"]["attn"][f"{name}_proj"]["kernel"],
                                 np.float64).std() for i in range(cfg.n_layers)])
        sd = s.std()
        out[name] = (s - s.mean()) / (sd if sd > 0 else 1.0)
    return out


def _resample(x: np.ndarray, n: int) -> np.ndarray:
    return x if len(x) == n else np.interp(np.linspace(0, len(x) - 1, n), np.arange(len(x)), x)


def intrinsic(params_a: dict, cfg_a: ModelConfig, params_b: dict,
              cfg_b: ModelConfig) -> BaselineResult:
    """Mean over Q, K, V, O of the Pearson r of the two models' z-scored std profiles."""
    pa, pb = std_profiles(params_a, cfg_a), std_profiles(params_b, cfg_b)
    L = max(cfg_a.n_layers, cfg_b.n_layers)
    if L < 2:
        raise UserError("the intrinsic fingerprint needs at least two blocks")
    r = {}
    for name in pa:
        a, b = _resample(pa[name], L), _resample(pb[name], L)
        r[name] = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else 0.0
    return BaselineResult("intrinsic", float(np.mean(list(r.values()))),
                          details={f"r_{k}": v for k, v in r.items()} | {"blocks": L})


# --- REEF --------------------------------------------------------------------------------------
def linear_cka(X_np: np.ndarray, Y_nq: np.ndarray) -> float:
    """Linear CKA of two representations of the same n samples (columns centred):
    ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F)."""
    X, Y = np.asarray(X_np, np.float64), np.asarray(Y_nq, np.float64)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0] or X.shape[0] < 2:
        raise UserError(f"CKA needs (n, p) and (n, q) representations of the same n >= 2 "
                        f"samples, got {X.shape} and {Y.shape}")
    X, Y = X - X.mean(0), Y - Y.mean(0)
    den = np.linalg.norm(X.T @ X) * np.linalg.norm(Y.T @ Y)
    if den == 0:
        raise UserError("CKA of a constant representation is undefined")
    return float(np.linalg.norm(Y.T @ X) ** 2 / den)


def reef(H_a: np.ndarray, H_b: np.ndarray) -> BaselineResult:
    """REEF: linear CKA of the two models' hidden states (n, d) on the same text windows."""
    return BaselineResult("reef", linear_cka(H_a, H_b), details={"n": int(np.shape(H_a)[0])})


def text_windows(docs: Sequence[str], tokenizer, n: int, seq_len: int) -> np.ndarray:
    """(n, seq_len) int32 token windows of real text, evenly spaced over ``docs`` tokenised and
    joined with end-of-text: a fixed probe set (REEF uses one set of real sentences)."""
    arr = data.token_ids(docs, tokenizer)
    if n < 2 or seq_len < 1 or len(arr) < n * seq_len:
        raise UserError(f"{len(arr)} tokens of text cannot give {n} disjoint windows of "
                        f"{seq_len} tokens (need n >= 2 and n * seq_len tokens)")
    starts = np.linspace(0, len(arr) - seq_len, n).astype(int)
    return np.stack([arr[s:s + seq_len] for s in starts])


def reef_features(m, windows_NT: np.ndarray, *, progress: bool = False) -> np.ndarray:
    """(N, d) last-token hidden states after the final norm of loaded model ``m`` on the
    windows (the SeedPrint feature probe run on text)."""
    from bornbiased_jax.fingerprint.runner.features import model_features

    return model_features(m, np.asarray(windows_NT, np.int32), "normed", progress=progress)


def all_baselines(base, suspect, *, token_ids: Sequence[int], H_base: np.ndarray,
                  H_suspect: np.ndarray) -> dict[str, BaselineResult]:
    """The four baselines of loaded models ``base`` and ``suspect`` (``.cfg``, ``.params``),
    given their REEF features on the same text windows and the ICS token list."""
    return {"intrinsic": intrinsic(base.params, base.cfg, suspect.params, suspect.cfg),
            "reef": reef(H_base, H_suspect),
            "pcs": pcs(base.params, suspect.params),
            "ics": ics(base.params, base.cfg, suspect.params, suspect.cfg, token_ids)}
