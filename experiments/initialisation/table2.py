"""Table 2's rule (Findings 3.1-3.2): full vs attention-only vs MLP-only models on Gaussian
inputs."""

from __future__ import annotations

from bornbiased_jax.stats import format_log10_p
from bornbiased_jax.verdicts import Claim
from experiments.common.paper_values import PAPER_TABLE2, printed
from experiments.initialisation.levels import ok_verdict


def table2_claim(d: dict) -> Claim:
    """Reproduced when full > MLP-only > 0.05, |attention-only| < 0.01 with p > 0.01."""
    m = {r["mode"]: r for r in d["records"]}
    full, att, mlp = m["full model"], m["self-attention-only"], m["MLP-only"]
    ok = full["avg_sim"] > mlp["avg_sim"] > 0.05 and abs(att["avg_sim"]) < 0.01 \
        and att["log10_p"] > -2
    (f_sim, _), (a_sim, a_p), (m_sim, _) = (PAPER_TABLE2[k] for k in (
        "full model", "self-attention-only", "MLP-only"))
    return Claim("Table 2 / Findings 3.1-3.2", f"full {f_sim:.2f}, attention-only "
                 f"{printed(a_sim)} (p {a_p}), MLP-only {m_sim:.2f}",
                 f"full {full['avg_sim']:.3f} (p {format_log10_p(full['log10_p'])}), attention-only "
                 f"{att['avg_sim']:.2e} (p {format_log10_p(att['log10_p'])}), MLP-only "
                 f"{mlp['avg_sim']:.3f} (p {format_log10_p(mlp['log10_p'])}); p: z-test of H0 "
                 "'no common direction' (bornbiased_jax/probes/contraction.py)",
                 ok_verdict(ok), section="Sec. 4.1")


# --- the measurement: python -m experiments table2_figure3 ----------------------------------
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=64, num_seqs=600)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=2000)
MODES = {"full model": "attn_mlp", "self-attention-only": "attn_only", "MLP-only": "mlp_only"}


def main(argv: list[str]) -> None:
    """Table 2 and Figure 3: full vs attention-only vs MLP-only models on Gaussian inputs: the
    mean pairwise cosine of final (post-norm) last-token states with its significance, and the
    rank-frequency of predicted tokens (paper Sec. 4.1)."""
    import time

    import matplotlib.pyplot as plt
    import numpy as np

    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.contraction import inter_sequence_profile
    from bornbiased_jax.probes.inputs import probe_inputs
    from bornbiased_jax.probes.token_preference import summarize
    from bornbiased_jax.stats import uniform_rank_frequency
    from experiments.common.cli import parse, write

    args, s = parse("table2_figure3", main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    base_cfg = get_preset(s["preset"])
    rows, fig = [], plt.figure(figsize=(6, 4))
    for label, block in MODES.items():
        cfg = base_cfg.ablate(block=block)
        xs = probe_inputs("gaussian", cfg, s["num_seqs"], s["seq_len"])
        prof = inter_sequence_profile(cfg, [s["seed"]], xs, progress=True)
        sim = prof["final"][0]
        pref = summarize(prof["top"][0], cfg.vocab_size, preset=cfg.name, seed=s["seed"],
                         seq_len=s["seq_len"], input="gaussian")
        rows.append({"mode": label, "avg_sim": sim.mean, "log10_p": sim.log10_p, "z": sim.z,
                     "top1_freq": pref.top1_freq, "top1_log10_p": pref.log10_p})
        plt.plot(range(1, 51), np.array(pref.top_counts[:50]) / pref.num_seqs, "o-", ms=3,
                 label=label)
    base = uniform_rank_frequency(s["num_seqs"], base_cfg.vocab_size, 50) / s["num_seqs"]
    plt.plot(range(1, 51), base, "r--", label="uniform sampling")
    plt.yscale("log"); plt.xlabel("rank"); plt.ylabel("frequency"); plt.legend(fontsize=8)
    plt.title(f"Figure 3: {base_cfg.name}, Gaussian inputs, T={s['seq_len']}")
    md = ("| Model mode | Avg. Sim | p-value (H0: no common direction) | top-1 freq | "
          "top-1 binomial p |\n|---|---:|---:|---:|---:|\n"
          + "".join(f"| {r['mode']} | {r['avg_sim']:.3g} | {format_log10_p(r['log10_p'])} | "
                    f"{100 * r['top1_freq']:.2f}% | {format_log10_p(r['top1_log10_p'])} |\n"
                    for r in rows))
    write(args, "table2_figure3", s, rows, md, fig, t0)
