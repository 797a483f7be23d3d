"""Tensor layouts between an HF checkpoint and our parameter tree: one :class:`TensorSpec` per
HF tensor, and the conversions both ways (:func:`to_ours`, :func:`to_hf`). The family records
(:mod:`bornbiased_jax.architectures`) list their tensors as specs.

Our kernels are (in, out); ``torch.nn.Linear`` stores (out, in), so Linear weights and every
untied ``lm_head`` are transposed. GPT-2 uses ``Conv1D``, already (in, out), and fuses Q|K|V
into one ``c_attn`` of shape (d, 3d) (bias (3d,)), split along its last axis. GPT-NeoX fuses
them too, but head by head: ``query_key_value`` is a Linear (3d, d) whose rows are
[q_0 k_0 v_0 q_1 k_1 v_1 ...], K rows each. Phi-3 fuses Q|K|V and gate|up as plain row blocks.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class TensorSpec(NamedTuple):
    """One HF tensor: its name and shape, our parameter path(s), and the layout between them.

    layout: "copy" (same array), "transpose" (Linear (out, in) <-> kernel (in, out)), "split3"
    (GPT-2's fused c_attn: the last axis is [q | k | v], one path each), "heads3"
    (GPT-NeoX's query_key_value: the first axis is ``heads`` groups of [q_h | k_h | v_h]), or
    "rows" (a fused Linear whose output rows are our kernels in turn, ``sizes`` rows each:
    Phi-3's qkv_proj and gate_up_proj).
    """

    hf_name: str
    hf_shape: tuple[int, ...]
    paths: tuple[str, ...]
    layout: str
    heads: int = 0
    sizes: tuple[int, ...] = ()


def to_ours(spec: TensorSpec, a):
    """The arrays of ``spec.paths`` from the HF tensor ``a``, a numpy or JAX array (on the
    device a transpose is cheaper than numpy's strided copy on the host)."""
    if spec.layout == "copy":
        return [a]
    if spec.layout == "transpose":
        return [a.T]
    if spec.layout == "heads3":  # (3HK, ...) -> (H, 3, K, ...) -> q, k, v of (HK, ...)
        a = a.reshape(spec.heads, 3, -1, *a.shape[1:])
        return [a[:, j].reshape(-1, *a.shape[3:]).T for j in range(3)]
    if spec.layout == "rows":  # (sum sizes, in) -> kernels (in, size) in turn
        ends = np.cumsum(spec.sizes).tolist()
        return [a[e - n:e].T for n, e in zip(spec.sizes, ends)]
    n = a.shape[-1] // 3  # split3: [q | k | v]
    return [a[..., i * n:(i + 1) * n] for i in range(3)]


def to_hf(spec: TensorSpec, arrays: list[np.ndarray]) -> np.ndarray:
    """The HF tensor of ``spec`` from our arrays (the inverse of :func:`to_ours`)."""
    if spec.layout == "copy":
        return arrays[0]
    if spec.layout == "transpose":
        return arrays[0].T
    if spec.layout == "heads3":
        per_head = [a.T.reshape(spec.heads, -1, *a.shape[:-1]) for a in arrays]  # (H, K, ...)
        return np.stack(per_head, axis=1).reshape(-1, *per_head[0].shape[2:])
    if spec.layout == "rows":
        return np.concatenate([a.T for a in arrays], axis=0)
    return np.concatenate(arrays, axis=-1)
