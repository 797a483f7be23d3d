"""The attention test's views of a model: per layer and query head, the spectra of the head's two
circuits, which no function-preserving renaming of the residual stream or of the head moves
(beyond the paper; GhostSpec's observation that such spectra survive rotations).

Circuits. Layer l, query head h reading K/V head n = h // G (d = d_model, K = head_dim, G query
heads per K/V head). A matrix W that reads the attention's input norm, whose gain is g, acts on
the stream as diag(g) W (the gain folded, as ``rotation.rotate_residual`` folds it), so

  QK^h = diag(g) W_Q^h diag(c_q c_k) W_K^n^T diag(g)          (d, d), rank <= K,
  OV^h = diag(g) W_V^n diag(c_o^h) W_O^h diag(g_post)          (d, d), rank <= K,

with W_Q^h (d, K) head h's columns of q_proj, W_K^n and W_V^n K/V head n's, W_O^h (K, d) head
h's rows of o_proj; c_q, c_k the QK-norm's gains (ones without a QK-norm), c_o^h head h's gain of
the head-wise RMSNorm (ones without it), g_post the attention's post-norm gain (sandwich norms;
ones without). Query x attends to key y by x QK^h y^T without RoPE; with RoPE by
x W_Q^h R_{s-t} W_K^n^T y^T (gains aside), R the block-diagonal rotation of the K / 2 frequency
pairs (coordinates i and i + K/2 of a head: the HF layout of ``layers.apply_rope``).

Views (K values per head each, natural logs of singular values; a zero one floored at
:data:`FLOOR` times the layer's largest):

  * QK: with RoPE, per frequency pair f the two singular values of QK^h_f, the product of the
    pair's two columns of each side (d, d, rank 2): pairs in frequency order, each pair's two
    in decreasing order. Without RoPE, the K singular values of QK^h.
  * OV: the K singular values of OV^h.

Invariances (``tests/test_attention_test.py`` checks each to float rounding):

  * Residual rotations x -> x Q (Q orthogonal; gains folded first): every circuit becomes
    Q^T C Q, with the same singular values. Residual permutations and sign flips are rotations;
    a norm gain rescaled and compensated in its readers (``obfuscation.rescale_norms``) leaves
    diag(g) W unchanged.
  * Per-head maps. W_V^n -> W_V^n B, W_O^h -> B^-1 W_O^h for every head h reading n
    (``rotation.mix_value_heads``) leave OV^h unchanged. W_Q^h -> W_Q^h A, W_K^n -> W_K^n A^-T
    leave QK^h unchanged for any invertible A; with RoPE only the A that commute with every
    R_t preserve the function: block-diagonal over the frequency pairs (the frequencies are
    distinct), each block a scaled rotation c R_phi (a complex number acting on the pair),
    whose A^-T block is R_phi / c, so each QK^h_f is unchanged too. A map that mixes
    frequency pairs, or reflects a pair, changes the function and the per-pair view: it is no
    renaming, and the view is not invariant to it.
  * Head permutations (``obfuscation.permute_heads``, K/V heads with their groups): the views
    are relabelled; the test matches heads and does not read their order.
  * Scales a norm makes free. With a QK-norm per head (Gemma 3, Qwen3) W_Q^h or W_K^n times
    c > 0 leaves the normalised q and k unchanged (eps aside), so each head's QK view is
    centred (its mean removed); with a QK-norm over the whole projection (OLMo 2) only a
    common scale of the layer's heads is free and the layer's mean over its live heads is
    removed. Likewise the OV view per head with the head-wise RMSNorm, per layer with a
    post-norm.

Not read: biases (q, k, v, o and LayerNorm's), the attention's output gate. LayerNorm's mean
subtraction makes rotations no renaming of such models (``rotation.check_rotatable``);
permutations and the per-head maps still are.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bornbiased_jax import schema
from bornbiased_jax.config import ModelConfig
from bornbiased_jax.errors import UserError

FLOOR = 1e-12  # a singular value below FLOOR x the layer's largest is floored there (log 0)
DEAD_RTOL = 1e-6  # a head whose circuit's norm is below this share of the layer's largest is dead


@dataclasses.dataclass(frozen=True)
class HeadViews:
    """One layer's views: ``qk`` and ``ov`` (H, K) log singular values per query head, each
    view's live heads (a dead head, a zero circuit, is nobody's partner in that view) and the
    layer's K/V heads ``n_kv`` (query head h reads K/V head h // (H / n_kv))."""

    qk: np.ndarray
    ov: np.ndarray
    live_qk: np.ndarray
    live_ov: np.ndarray
    n_kv: int

    @property
    def heads(self) -> int:
        return len(self.qk)

    @property
    def group(self) -> int:
        return self.heads // self.n_kv


def check_applicable(cfg: ModelConfig, what: str = "the model") -> None:
    """A UserError unless ``cfg`` has softmax attention heads with parameters."""
    if not cfg.has_attn_params:
        raise UserError(f"the attention test reads the heads' Q/K/V/O weights; {what} "
                        f"({cfg.name}) has none (block={cfg.block!r}, "
                        f"attention={cfg.attention!r}): use --test permutation or matched")


def _gain(cfg: ModelConfig, node: dict | None) -> np.ndarray | None:
    """A norm's gain (float64), or None where the norm is absent or has no parameter."""
    if not node or "scale" not in node:
        return None
    return schema.norm_gain(cfg, node["scale"])


def circuits(params: dict, cfg: ModelConfig, layer: int) -> dict[str, np.ndarray]:
    """Layer ``layer``'s per-head factors with every gain folded in, float64: ``q`` (H, d, K)
    from diag(g) W_Q^h and ``k`` (H, d, K) from diag(g) W_K^n (K/V head n repeated for each of
    its query heads), the QK-norm's gains c_q, c_k on their columns; ``v`` (H, d, K) =
    diag(g) W_V^n diag(c_o^h) and ``o`` (H, d, K) = (W_O^h diag(g_post))^T: QK^h = q_h k_h^T
    and OV^h = v_h o_h^T (module docstring)."""
    check_applicable(cfg)
    blk = params[f"layers_{layer}"]
    attn = blk["attn"]
    H, N, K = cfg.n_heads, cfg.resolved_n_kv_heads, cfg.resolved_head_dim
    G = H // N
    W = {n: np.asarray(attn[f"{n}_proj"]["kernel"], np.float64) for n in "qkvo"}
    d = W["q"].shape[0]
    g = _gain(cfg, blk.get("attn_norm")) if cfg.pre_norms else None
    g = np.ones(d) if g is None else g
    q_HdK = (g[:, None] * W["q"]).reshape(d, H, K).transpose(1, 0, 2)
    k_NdK = (g[:, None] * W["k"]).reshape(d, N, K).transpose(1, 0, 2)
    v_NdK = (g[:, None] * W["v"]).reshape(d, N, K).transpose(1, 0, 2)
    if cfg.qk_norm and cfg.qk_norm_scope == "head":  # one gain (K,) on every head's q, k
        q_HdK = q_HdK * (_gain(cfg, attn["q_norm"]) * _gain(cfg, attn["k_norm"]))
    elif cfg.qk_norm:  # gains (H K,) and (N K,) over the whole projections (OLMo 2)
        cq = _gain(cfg, attn["q_proj_norm"]).reshape(H, 1, K)
        ck = _gain(cfg, attn["k_proj_norm"]).reshape(N, 1, K)
        q_HdK, k_NdK = q_HdK * cq, k_NdK * ck
    k_HdK = np.repeat(k_NdK, G, axis=0)
    v_HdK = np.repeat(v_NdK, G, axis=0)
    if "head_norm" in attn:  # the head-wise RMSNorm's gain (H, K) on what enters W_O
        v_HdK = v_HdK * np.asarray(attn["head_norm"]["scale"], np.float64)[:, None, :]
    o_HKd = W["o"].reshape(H, K, -1)
    post = _gain(cfg, blk.get("attn_post_norm"))
    if post is not None:
        o_HKd = o_HKd * post
    return {"q": q_HdK, "k": k_HdK, "v": v_HdK, "o": o_HKd.transpose(0, 2, 1)}


def product_singular_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The singular values of a_i b_i^T (d, d) for stacks a, b (..., d, k), in decreasing
    order, (..., min(d, k)): with a = U_a R_a and b = U_b R_b (QR, U orthonormal columns) a b^T =
    U_a (R_a R_b^T) U_b^T, so they are those of the small R_a R_b^T."""
    ra, rb = np.linalg.qr(a, mode="r"), np.linalg.qr(b, mode="r")
    return np.linalg.svd(ra @ np.swapaxes(rb, -1, -2), compute_uv=False)


def _logs(s: np.ndarray) -> np.ndarray:
    top = float(s.max()) if s.size else 0.0
    return np.log(np.maximum(s, FLOOR * top if top > 0 else FLOOR))


def _live(s_HK: np.ndarray) -> np.ndarray:
    norm = np.sqrt((s_HK ** 2).sum(-1))
    top = norm.max() if norm.size else 0.0
    return norm > DEAD_RTOL * top if top > 0 else np.zeros(len(norm), bool)


def _centred(x_HK: np.ndarray, live: np.ndarray, scope: str | None) -> np.ndarray:
    """``x_HK`` less the mean a free scale moves: per head ('head'), over the layer's live
    heads ('layer'), or as it is (None)."""
    if scope == "head":
        return x_HK - x_HK.mean(1, keepdims=True)
    if scope == "layer" and live.any():
        return x_HK - x_HK[live].mean()
    return x_HK


def free_scales(cfg: ModelConfig) -> tuple[str | None, str | None]:
    """(QK's, OV's) scale that a norm leaves free (module docstring): 'head', 'layer' or None."""
    qk = ("head" if cfg.qk_norm_scope == "head" else "layer") if cfg.qk_norm else None
    ov = ("head" if cfg.attn_output_transform == "headwise_rmsnorm"
          else "layer" if cfg.post_norms else None)
    return qk, ov


def layer_views(params: dict, cfg: ModelConfig, layer: int) -> HeadViews:
    """Layer ``layer``'s :class:`HeadViews` (module docstring)."""
    c = circuits(params, cfg, layer)
    H, K = cfg.n_heads, cfg.resolved_head_dim
    if cfg.position == "rope":
        if K % 2:
            raise UserError(f"{cfg.name}: RoPE pairs coordinate i with i + K/2 of a head, "
                            f"so head_dim must be even, got {K}")
        half = K // 2
        pairs = np.stack([np.arange(half), np.arange(half) + half], -1)  # (K/2, 2)
        qf = c["q"][:, :, pairs].transpose(0, 2, 1, 3)  # (H, K/2, d, 2)
        kf = c["k"][:, :, pairs].transpose(0, 2, 1, 3)
        s_qk = product_singular_values(qf, kf).reshape(H, K)
    else:
        s_qk = product_singular_values(c["q"], c["k"])
    s_ov = product_singular_values(c["v"], c["o"])
    live_qk, live_ov = _live(s_qk), _live(s_ov)
    scope_qk, scope_ov = free_scales(cfg)
    return HeadViews(_centred(_logs(s_qk), live_qk, scope_qk),
                     _centred(_logs(s_ov), live_ov, scope_ov), live_qk, live_ov,
                     cfg.resolved_n_kv_heads)


def head_views(params: dict, cfg: ModelConfig) -> list[HeadViews]:
    """Every layer's :class:`HeadViews`, first layer first."""
    check_applicable(cfg)
    return [layer_views(params, cfg, l) for l in range(cfg.n_layers)]
