"""Figure 3's "flat" judged against the model's own unembedding: the top-1 count that N final
states with no common direction give when they pass through the model's final LayerNorm and its
(tied) unembedding, simulated R times.

Uniform sampling over the vocabulary is not that null: the rows of a random W_E differ in norm
and direction, so even isotropic final states favour some tokens more than others, and the
largest of N arg-max counts sits above the uniform top-1. A top-1 count that is significant
against uniform sampling can therefore still be what a model with no preference of its own
gives through its unembedding. Each replicate draws N states z ~ N(0, I_d), applies the final
LayerNorm as the model does (centre, divide by the root mean square with the model's epsilon,
multiply by its gain, add its bias: 1 and 0 at initialisation), multiplies by W_U (W_E^T when
tied) and counts the most frequent arg-max token.

    python -m experiments figure3_null                 # the CPU-scale record
    python -m experiments figure3_null --scale paper   # the paper-scale record

The first (:data:`CPU`, as the other CPU-scale experiments) writes
results/records/initialisation/figure3_null.json for the CPU-scale Table 2 / Figure 3 record's
model (GPT-2+RoPE cpu, seed 42, N = 600), R = 200: 120,000 arg-maxes over 50,257 tokens at
d = 512. The second (:data:`PAPER`) writes results/records/paper/initialisation/figure3_null.json
for the model of the paper-scale Table 2 / Figure 3 record (GPT-2+RoPE nano, seed 42, N = 2,000:
the three block types share its embedding draw and final norm, which :func:`simulate` checks),
R = 200: 400,000 arg-maxes over 50,257 tokens in batched matrix products, 1,006 s for the
committed record on 2 shared CPU cores (its run.wall_seconds).
"""

from __future__ import annotations

import numpy as np

NAME = "figure3_null"
PAPER = dict(preset="gpt2-rope-nano", seed=42, num_seqs=2000, reps=200, rng_seed=0)
# the CPU-scale Table 2 / Figure 3 record's model and N (the table2_figure3 experiment's CPU)
CPU = dict(preset="gpt2-rope-cpu", seed=42, num_seqs=600, reps=200, rng_seed=0)
BLOCKS = ("attn_mlp", "attn_only", "mlp_only")  # Figure 3's three models


def final_states(z_Nd: np.ndarray, gain_d: np.ndarray, bias_d: np.ndarray,
                 eps: float) -> np.ndarray:
    """``z`` through a LayerNorm with ``gain`` and ``bias`` (as ``bornbiased_jax.layers.Norm``)."""
    x = z_Nd - z_Nd.mean(-1, keepdims=True)
    x = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * gain_d + bias_d


def top1_null_counts(W_U_dV: np.ndarray, gain_d: np.ndarray, bias_d: np.ndarray, n: int,
                     reps: int, rng: np.random.Generator, eps: float = 1e-5,
                     chunk: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """(R top-1 counts, the pooled arg-max counts per token): ``reps`` replicates of ``n``
    isotropic Gaussian final states through the final LayerNorm (``gain``, ``bias``, ``eps``)
    and the unembedding ``W_U`` (d, V); each replicate's top-1 count is that of its most
    frequent arg-max token. The states are drawn in batches of ``chunk`` (one matrix product
    each, float32 as the model's logits)."""
    W = np.ascontiguousarray(W_U_dV, dtype=np.float32)
    d, V = W.shape
    gain = np.asarray(gain_d, np.float64)
    bias = np.asarray(bias_d, np.float64)
    tops = np.empty(n * reps, np.int64)
    for start in range(0, n * reps, chunk):
        m = min(chunk, n * reps - start)
        h = final_states(rng.standard_normal((m, d)), gain, bias, eps).astype(np.float32)
        tops[start:start + m] = np.argmax(h @ W, axis=1)
    counts = np.array([np.bincount(tops[r * n:(r + 1) * n], minlength=V).max()
                       for r in range(reps)])
    return counts, np.bincount(tops, minlength=V)


def _model(preset: str, block: str, seed: int):
    """The config of Figure 3's ``block`` model (as experiments/campaign/paper_pieces.py builds
    it) and its parameters at ``seed``."""
    import jax

    from bornbiased_jax import model
    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.keys import seed_key

    cfg = get_preset(preset).ablate(block=block)
    params = jax.jit(lambda k: model.init(cfg, k))(seed_key(seed))
    return cfg, params


def simulate(s: dict) -> tuple[dict, dict]:
    """(settings, records) of the null for settings ``s`` (:data:`PAPER` or :data:`CPU`, or
    another ``reps``): the model's three block types are built at ``s["seed"]``, checked to
    share the unembedding and the final norm, and :func:`top1_null_counts` runs through them.
    The records hold the R top-1 counts, N, R, the 20 tokens most often the arg-max over
    every replicate, and the final norm's gain, bias and epsilon."""
    from bornbiased_jax import model
    from experiments.common.paper_records import shape

    unemb, norms = {}, {}
    for block in BLOCKS:
        cfg, params = _model(s["preset"], block, s["seed"])
        unemb[block] = np.asarray(model.unembedding(params, cfg))
        fn = params["final_norm"]
        norms[block] = (np.asarray(fn["scale"]), np.asarray(fn.get("bias", np.zeros(cfg.d_model))),
                        cfg.norm_eps)
        if block == "attn_only":
            used = cfg
    same = all(np.array_equal(unemb[b], unemb["attn_only"]) and
               all(np.array_equal(x, y) for x, y in zip(norms[b][:2], norms["attn_only"][:2]))
               for b in BLOCKS)
    if not same:
        raise SystemExit("the three block types do not share the unembedding and final norm: "
                         "one null does not serve them")
    gain, bias, eps = norms["attn_only"]
    counts, pooled = top1_null_counts(unemb["attn_only"], gain, bias, s["num_seqs"], s["reps"],
                                      np.random.default_rng(s["rng_seed"]), eps)
    order = np.argsort(-pooled, kind="stable")[:20]
    rec = {"top1_counts": counts.tolist(), "num_seqs": s["num_seqs"], "reps": s["reps"],
           "vocab_size": int(unemb["attn_only"].shape[1]),
           "pooled_top_ids": order.tolist(), "pooled_top_counts": pooled[order].tolist(),
           "final_norm": {"gain_min": float(gain.min()), "gain_max": float(gain.max()),
                          "bias_abs_max": float(np.abs(bias).max()), "eps": eps},
           "shared_by": list(BLOCKS)}
    settings = {**shape(used), "preset": s["preset"], "blocks": list(BLOCKS),
                "seed": s["seed"], "num_seqs": s["num_seqs"],
                "reps": s["reps"], "rng_seed": s["rng_seed"],
                "tie_embeddings": used.tie_embeddings,
                "shared_embedding": used.shared_embedding, "embed_seed": used.embed_seed,
                "states": "z ~ N(0, I_d) through the final LayerNorm"}
    return settings, rec


def summary(rec: dict) -> str:
    """'top-1 count of 2,000 null arg-maxes over 200 replicates: median 3, 95 % 3, ...'."""
    counts = np.asarray(rec["top1_counts"])
    q = np.quantile(counts, [0.5, 0.95, 0.99])
    return (f"top-1 count of {rec['num_seqs']:,} null arg-maxes over {rec['reps']} replicates: "
            f"median {q[0]:g}, 95 % {q[1]:g}, 99 % {q[2]:g}, max {counts.max()}")


def main(argv: list[str]) -> None:
    """Figure 3's null through the model's own unembedding: the top-1 counts that N isotropic
    final states give through the Table 2 / Figure 3 model's final LayerNorm and tied
    unembedding, simulated R times (paper Sec. 4.1). Against it, not against uniform sampling
    over the vocabulary, the Figure 3 row judges whether a top-1 count is a preference of the
    model (what and how: this module's docstring)."""
    import time

    import matplotlib.pyplot as plt

    from experiments.common.cli import parse, write

    def reps(p):
        p.add_argument("--reps", type=int, default=None,
                       help=f"replicates R (default {CPU['reps']})")

    args, s = parse(NAME, main.__doc__, CPU, PAPER, extra=reps, argv=argv)
    t0 = time.time()
    settings, rec = simulate(dict(s, reps=args.reps or s["reps"]))
    counts = np.asarray(rec["top1_counts"])
    values, freq = np.unique(counts, return_counts=True)
    md = ("| top-1 count of N | replicates |\n|---:|---:|\n"
          + "".join(f"| {v} | {f} |\n" for v, f in zip(values, freq))
          + f"\n{summary(rec)} ({settings['preset']}, N = {rec['num_seqs']:,}).\n")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(values, freq, color="tab:gray")
    ax.set_xlabel(f"top-1 count of N = {rec['num_seqs']:,} isotropic final states")
    ax.set_ylabel(f"replicates (of R = {rec['reps']})")
    ax.set_title(f"Figure 3's null through the unembedding ({settings['preset']})")
    write(args, NAME, settings, rec, md, fig, t0)
