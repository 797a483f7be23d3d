"""Sec. 6.2.1 at initialisation: does each attention-output variant flatten the 1/sqrt(i) decay
of the per-position output std (Eq. 2, Figure 9)?

One random pre-norm attention block (the preset's width, heads and norm; T = 32 as Figure 9),
Gaussian inputs x ~ N(0, I) normalised by the block's norm, the same weights for every variant
(Linen draws each parameter from its path, so the variants share W_Q, W_K, W_V, W_O). For each
position i we report std(o~_i), the per-head output that enters W_O (pooled over sequences,
heads and channels; its mean is 0), relative to its mean over positions, and the slope of
log std against log i: -1/2 under 1/sqrt(i), 0 when flat. Standard errors come from the spread
over independent weight draws. Variants: baseline, Positional Amplification sqrt(i),
Positional Attenuation sqrt(i/T_max) (T_max = max_seq_len, fixed), head-wise RMSNorm (gamma = 1
at init) and a sigmoid output gate (not from the paper). ``python -m experiments.sinks_init``
runs it; RESULTS.md's rows come from its record through :mod:`experiments.sinks.claims`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from bornbiased_jax import layers, plots
from bornbiased_jax.presets import get_preset

CPU = dict(preset="llama2-nano", seq_len=32, num_seqs=64, reps=16)
PAPER = dict(preset="llama2-nano", seq_len=32, num_seqs=2000, reps=16)
VARIANTS = {
    "baseline": {},
    "amplification sqrt(i)": dict(attn_output_transform="sqrt_i"),
    "attenuation sqrt(i/T)": dict(attn_output_transform="sqrt_i_over_T"),
    "head-wise RMSNorm": dict(attn_output_transform="headwise_rmsnorm"),
    "sigmoid gate (not in paper)": dict(attn_output_gate=True),
}


def mean_square_per_position(cfg, key, x_STd):
    """E[o~_i^2] over sequences, heads and channels (T,), and the softmax factor
    i E[sum_j A_ij^2] over sequences and heads (T,) (1 for uniform attention), for one weight
    draw ``key``."""
    norm_p = layers.Norm(cfg).init(key, x_STd[0])["params"] if cfg.norm != "none" else {}
    attn_p = layers.Attention(cfg).init(key, x_STd[0])["params"]

    def one(x_Td):
        xn = layers.Norm(cfg).apply({"params": norm_p}, x_Td)
        _, st = layers.Attention(cfg).apply({"params": attn_p}, xn, mutable=["intermediates"])
        o_THK = st["intermediates"]["head_outputs"][0]
        A_HTT = st["intermediates"]["attention_probs"][0]
        i_T = jnp.arange(1, x_Td.shape[0] + 1)
        return ((o_THK.astype(jnp.float32) ** 2).mean(axis=(1, 2)),
                i_T * (A_HTT.astype(jnp.float32) ** 2).sum(-1).mean(0))
    ms_ST, f_ST = jax.jit(jax.vmap(one))(x_STd)
    return ms_ST.mean(0), f_ST.mean(0)


def slope(log_i, log_s) -> float:
    """Least-squares slope of log std against log position."""
    return float(np.polyfit(log_i, log_s, 1)[0])


def measure_variant(cfg, s: dict) -> tuple[dict, tuple[np.ndarray, np.ndarray]]:
    """One variant's record over ``reps`` weight draws (the same draws for every variant), and
    its relative-std curve with standard errors."""
    T, S, R = s["seq_len"], s["num_seqs"], s["reps"]
    i = np.arange(1, T + 1)
    ms_RT, f_RT = [], []
    for r in range(R):
        kx, kw = jax.random.split(jax.random.key(r))
        x = jax.random.normal(kx, (S, T, cfg.d_model))
        ms, f = mean_square_per_position(cfg, kw, x)
        ms_RT.append(np.asarray(ms, np.float64))
        f_RT.append(np.asarray(f, np.float64))
    std_RT, f_RT = np.sqrt(np.stack(ms_RT)), np.stack(f_RT)
    ratio_R = std_RT[:, -1] / std_RT[:, 0]
    rel_RT = std_RT / std_RT.mean(1, keepdims=True)  # each draw relative to its mean
    rel, rel_se = rel_RT.mean(0), rel_RT.std(0, ddof=1) / np.sqrt(R)
    slopes = np.array([slope(np.log(i), np.log(row)) for row in std_RT])
    record = {"std_mean_over_positions": float(std_RT.mean()),
              "relative_std": rel.round(5).tolist(),
              "relative_std_se": rel_se.round(5).tolist(),
              "loglog_slope": float(slopes.mean()),
              "loglog_slope_se": float(slopes.std(ddof=1) / np.sqrt(R)),
              "std_ratio_last_to_first": float(ratio_R.mean()),
              "std_ratio_se": float(ratio_R.std(ddof=1) / np.sqrt(R)),
              # sqrt(f_T / f_1): what the sqrt(i) rescaling leaves of Eq. 2's decay when
              # attention is not exactly uniform (f_1 = 1).
              "softmax_factor_T": float(f_RT[:, -1].mean()),
              "softmax_ratio_pred": float(np.sqrt(f_RT[:, -1] / f_RT[:, 0]).mean())}
    return record, (rel, rel_se)


def measure(s: dict) -> tuple[dict, dict]:
    """Every variant's record ({variant: record}) and curve, on the attention-only block of
    preset ``s['preset']``."""
    base = get_preset(s["preset"]).ablate(block="attn_only")
    records, curves = {}, {}
    for name, changes in VARIANTS.items():
        records[name], curves[name] = measure_variant(dataclasses.replace(base, **changes), s)
    return records, curves


def markdown(records: dict, T: int) -> str:
    """The variants' std ratio and log-log slope, and what non-uniform softmax weights leave."""
    md = ("| variant | std of o~ (mean over i) | std(o~_T) / std(o~_1) (+- SE) | slope of log "
          "std vs log i (+- SE) |\n|---|---:|---:|---:|\n")
    for name, rec in records.items():
        md += (f"| {name} | {rec['std_mean_over_positions']:.4g} | "
               f"{rec['std_ratio_last_to_first']:.3f} +- {rec['std_ratio_se']:.3f} | "
               f"{rec['loglog_slope']:+.3f} +- {rec['loglog_slope_se']:.3f} |\n")
    amp = records["amplification sqrt(i)"]
    md += (f"\nUniform attention (Eq. 2) gives std(o_T)/std(o_1) = 1/sqrt(T) = "
           f"{1 / np.sqrt(T):.3f} and slope -0.5; a flat curve gives 1 and 0. Softmax weights "
           f"at init are not exactly uniform: i E[sum_j A_ij^2] = "
           f"{amp['softmax_factor_T']:.4f} at i = T (measured), so sqrt(i) rescaling leaves a "
           f"ratio of {amp['softmax_ratio_pred']:.3f} (measured: "
           f"{amp['std_ratio_last_to_first']:.3f} +- {amp['std_ratio_se']:.3f}).\n")
    return md


def figure(curves: dict, s: dict):
    """Each variant's relative std per position (± 2 SE) beside 1/sqrt(i)."""
    base = get_preset(s["preset"])
    T, R = s["seq_len"], s["reps"]
    i = np.arange(1, T + 1)
    fig, ax = plots.figure(figsize=(6.5, 4.2))
    ref = 1 / np.sqrt(i)
    ax.plot(i, ref / ref.mean(), "k:", lw=2, label="1/sqrt(i) (Eq. 2), same normalisation")
    # amplification and attenuation coincide: relative to their mean they are the same curve
    for (name, (rel, se)), m in zip(curves.items(), "osd^v"):
        ax.errorbar(i, rel, yerr=2 * se, fmt=m + "-", ms=3, lw=1, capsize=2, label=name)
    ax.set_xlabel("position i")
    ax.set_ylabel("std(o~_i) / mean over positions")
    ax.set_title(f"Attention output std at init ({base.d_model}d, {base.n_heads} heads, T={T}, "
                 f"{R} draws)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return fig


def main(argv: list[str]) -> None:
    """Sec. 6.2.1 at initialisation: does each attention-output variant (amplification,
    attenuation, head-wise RMSNorm, a sigmoid gate) flatten the 1/sqrt(i) decay of the
    per-position output std (Eq. 2, Figure 9)? What and how: this module's docstring."""
    import time

    from experiments.common.cli import parse, write

    args, s = parse("sinks_init", main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    records, curves = measure(s)
    for name, rec in records.items():
        print(f"{name}: slope {rec['loglog_slope']:+.3f}")
    write(args, "sinks_init", s, records, markdown(records, s["seq_len"]), figure(curves, s), t0)
