"""Figure 4's rule (Finding 4): the inter-sequence cosine grows with depth."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.verdicts import UNTESTABLE, Claim
from experiments.initialisation.levels import ok_verdict


FIGURE4_DROP = 0.01  # Figure 4's "steadily increases": no block lowers the mean by more


def figure4_claim(d: dict) -> Claim:
    """Reproduced when no block after the first lowers the MLP-only cosine by more than 0.01 and
    the last block is above block 1; differs otherwise. ``d["records"]`` is the per-block curve
    ({"mean": ...} per block, block 0 the inputs). The row gives the smallest step after block
    1 and where it is."""
    mlp = [b["mean"] for b in d["records"]]
    steps = np.diff(mlp[1:])
    ok = bool(np.all(steps > -FIGURE4_DROP)) and mlp[-1] > mlp[1]
    why = ""
    if len(steps):
        i = int(np.argmin(steps))
        why = (f"{int((steps > 0).sum())} of {len(steps)} steps after block 1 rise; the "
               f"smallest {steps[i]:+.4f} (block {i + 1} -> {i + 2}; the rule allows "
               f"-{FIGURE4_DROP}); last block - block 1 {mlp[-1] - mlp[1]:+.4f}")
    return Claim("Figure 4 / Finding 4", "MLP-only similarity increases block by block",
                 ", ".join(f"{x:.3f}" for x in mlp), ok_verdict(ok), why, section="Sec. 4.2")


def figure4_from_figure7(d: dict) -> Claim:
    """Figure 4 from a Figure 7 record: its MLP-only curve is Figure 4's measurement (the
    MLP-only model, Gaussian inputs with the embedding's statistics, the mean pairwise cosine
    of last-token states after each block; experiments/figure4.py and figure7.py run the same
    pass at the same settings), judged by :func:`figure4_claim`'s rule. A record without the
    MLP-only curve or its per-block means is untestable, naming what is missing."""
    curve = d.get("records", {}).get("MLP-only")
    if not curve or not all("mean" in b for b in curve):
        return Claim("Figure 4 / Finding 4", "MLP-only similarity increases block by block",
                     "the Figure 7 record has no MLP-only per-block means; `python -m "
                     "experiments.paper_scale table2` measures them", UNTESTABLE,
                     "no MLP-only curve in the record", "Sec. 4.2")
    c = figure4_claim({"run": d.get("run", {}), "records": curve})
    c.why = (c.why + "; " if c.why else "") + ("the MLP-only curve of the Figure 7 record (the "
                                               "same model, inputs, N and T as Figure 4's)")
    return c


# --- the measurement: python -m experiments figure4 -----------------------------------------
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=64, num_seqs=400)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=2000)


def main(argv: list[str]) -> None:
    """Figure 4: mean and standard deviation of the inter-sequence cosine of last-token states
    after each MLP block of the MLP-only model, on Gaussian inputs with the embedding's
    statistics (paper Sec. 4.2)."""
    import time

    import matplotlib.pyplot as plt

    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.contraction import inter_sequence_profile
    from bornbiased_jax.probes.inputs import probe_inputs
    from experiments.common.cli import parse, write

    args, s = parse("figure4", main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    cfg = get_preset(s["preset"]).ablate(block="mlp_only")
    xs = probe_inputs("gaussian", cfg, s["num_seqs"], s["seq_len"])
    blocks = inter_sequence_profile(cfg, [s["seed"]], xs, progress=True)["blocks"][0]
    rows = [{"block": i, "mean": b.mean, "sd": b.sd, "log10_p": b.log10_p}
            for i, b in enumerate(blocks)]
    m, sd = np.array([b.mean for b in blocks]), np.array([b.sd for b in blocks])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(range(len(m)), m, "o-", color="tab:green", label="mean")
    ax.fill_between(range(len(m)), m - sd, m + sd, color="tab:green", alpha=0.2,
                    label="+- sd of pairwise cosines")
    ax.set_xlabel("MLP blocks (0 = inputs)"); ax.set_ylabel("pairwise cosine, last token")
    ax.set_title(f"Figure 4: MLP-only {cfg.name}, T={s['seq_len']}, N={s['num_seqs']}")
    ax.legend(fontsize=8)
    md = ("| block | mean | sd |\n|---:|---:|---:|\n"
          + "".join(f"| {r['block']} | {r['mean']:.4f} | {r['sd']:.4f} |\n" for r in rows))
    write(args, "figure4", s, rows, md, fig, t0)
