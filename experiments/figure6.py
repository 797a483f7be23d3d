"""Figure 6 / Finding 4.1: GELU pre-activations with and without LayerNorm. With LayerNorm the
inputs to W_up have unit scale and the pre-activations std 0.02 sqrt(d); without it they keep the
embedding's scale and std 0.02 * 0.02 sqrt(d), where GELU is nearly linear (paper Sec. 4.2)."""

import time

import matplotlib.pyplot as plt
import numpy as np
from scipy import special

from experiments.common.cli import parse, write

from bornbiased_jax.presets import get_preset
from bornbiased_jax.probes.contraction import mlp_preactivation_probe
from bornbiased_jax.probes.inputs import probe_inputs
from bornbiased_jax.sweep import sweep
from bornbiased_jax.theory.kernels import first_layer_contraction, preactivation_std

NAME = "figure6"
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=16, num_seqs=64)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=64)

if __name__ == "__main__":
    args, s = parse(NAME, __doc__, CPU, PAPER)
    t0 = time.time()
    cfg = get_preset(s["preset"]).ablate(block="mlp_only")

    xs = probe_inputs("gaussian", cfg, s["num_seqs"], s["seq_len"])
    out = sweep(mlp_preactivation_probe(cfg), cfg, [s["seed"]], xs)
    rows = {}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, key, rms in [(axes[0], "norm", 1.0), (axes[1], "nonorm", cfg.init_std)]:
        u = out[key][0].ravel()
        pred = preactivation_std(cfg.init_std, cfg.d_model, rms)
        rows[key] = {"std": float(u.std()), "predicted_std": pred,
                     "gelu_first_layer_contraction": first_layer_contraction("gelu", pred)}
        ax.hist(u, bins=80, density=True, color="tab:blue", alpha=0.6, label="pre-activations")
        grid = np.linspace(u.min(), u.max(), 200)
        ax2 = ax.twinx()
        ax2.plot(grid, grid * special.ndtr(grid), "r-", label="GELU(x)")
        ax2.plot(grid, np.maximum(grid, 0), "k:", lw=0.8, label="ReLU(x)")
        ax.set_title(f"{'Norm' if key == 'norm' else 'NoNorm'}: std {u.std():.4f} "
                     f"(predicted {pred:.4f})", fontsize=9)
        ax.set_xlabel("pre-activation x W_up")
        ax2.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"Figure 6: GELU inputs with and without LayerNorm ({cfg.name}, d={cfg.d_model})")
    fig.tight_layout()
    md = ("| | pre-activation std | 0.02 sqrt(d) rms(x) | GELU contraction g(0; sigma) |\n"
          "|---|---:|---:|---:|\n"
          + "".join(f"| {'with LayerNorm' if k == 'norm' else 'without'} | {v['std']:.4f} | "
                    f"{v['predicted_std']:.4f} | {v['gelu_first_layer_contraction']:.2e} |\n"
                    for k, v in rows.items()))
    write(args, NAME, s, rows, md, fig, t0)
