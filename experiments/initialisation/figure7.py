"""Figure 7's rule (Finding 3.2a): inter-sequence cosine after each block for the full,
MLP-only and attention-only models."""

from __future__ import annotations

import numpy as np

from bornbiased_jax.verdicts import DIFFERS, REPRODUCED, UNDERPOWERED, Claim
from experiments.initialisation.levels import ALPHA


def mean_cosine_se(sd: float, n: int) -> float:
    """An upper bound on the standard error of a mean pairwise cosine over n vectors whose
    pairwise cosines have standard deviation ``sd``: the mean is a U-statistic of order 2, whose
    variance is 4 zeta_1 / n to first order, with zeta_1 (the variance of one vector's mean
    cosine to the others) at most sd^2. So 2 sd / sqrt(n)."""
    return 2.0 * sd / np.sqrt(n)


def figure7_claim(d: dict) -> Claim:
    """Figure 7 (Finding 3.2a) by its two statements, each by a test:

      * attention-only flat: at no block does the z-test of "no common direction" reject
        (p > 0.01 / the number of blocks, Bonferroni), where the record keeps per-block
        p-values; otherwise |mean| < 0.02 at every block;
      * full above MLP-only from block 2: at block 2 and at the last block the full model's mean
        cosine exceeds the MLP-only one by more than 2 standard errors of the difference
        (:func:`mean_cosine_se` of each, N the record's sequences).

    Reproduced when both hold; differs when attention-only is not flat or full lies more than
    2 SE below MLP-only at one of those blocks; consistent, underpowered when the difference
    is within 2 SE."""
    r = d["records"]
    n = d.get("run", {}).get("settings", {}).get("num_seqs")
    mlp, full, att = r["MLP-only"], r["full"], r["attention-only"]
    with_p = all("log10_p" in b for b in att)
    if with_p:
        cut = np.log10(ALPHA / len(att))
        bad_att = [b["block"] for b in att if b["log10_p"] <= cut]
        flat_rule = f"attention-only: no block's p <= {ALPHA}/{len(att)}"
    else:
        bad_att = [b["block"] for b in att if abs(b["mean"]) >= 0.02]
        flat_rule = "attention-only: |mean| < 0.02 at every block"
    gaps, why = [], []
    for i in (2, len(full) - 1):
        diff = full[i]["mean"] - mlp[i]["mean"]
        se = (float(np.hypot(mean_cosine_se(full[i]["sd"], n), mean_cosine_se(mlp[i]["sd"], n)))
              if n and "sd" in full[i] and "sd" in mlp[i] else None)
        gaps.append((i, diff, se))
    above = all(se is not None and diff > 2 * se for _, diff, se in gaps)
    below = [i for i, diff, se in gaps if se is not None and diff < -2 * se]
    gap_text = "; ".join(f"block {i}: full - MLP-only {diff:+.4f}"
                         + (f" (2 SE {2 * se:.4f})" if se is not None else " (no SE recorded)")
                         for i, diff, se in gaps)
    if bad_att:
        why.append(f"attention-only has a common direction at block(s) {bad_att}")
    if below:
        why.append(f"full below MLP-only at block(s) {below}")
    verdict = (DIFFERS if bad_att or below else REPRODUCED if above else UNDERPOWERED)
    if verdict == UNDERPOWERED:
        why.append("full - MLP-only within 2 SE")
    why.append(f"{flat_rule}; {gap_text}")
    ours = (f"last block: full {full[-1]['mean']:.3f}, MLP-only {mlp[-1]['mean']:.3f}, "
            f"attention-only {att[-1]['mean']:.1e}; block 2: full {full[2]['mean']:.3f} vs "
            f"MLP-only {mlp[2]['mean']:.3f}")
    return Claim("Figure 7 / Finding 3.2a", "attention-only flat; full above MLP-only from block 2",
                 ours, verdict, "; ".join(why), section="Sec. 4.3")


# --- the measurement: python -m experiments figure7 -----------------------------------------
CPU = dict(preset="gpt2-rope-cpu", seed=42, seq_len=64, num_seqs=400)
PAPER = dict(preset="gpt2-rope-nano", seed=42, seq_len=1024, num_seqs=2000)
MODES = {"full": "attn_mlp", "MLP-only": "mlp_only", "attention-only": "attn_only"}


def main(argv: list[str]) -> None:
    """Figure 7: inter-sequence cosine of last-token states after each block for the full,
    MLP-only and attention-only models, on Gaussian inputs with the embedding's statistics
    (paper Sec. 4.3)."""
    import time

    import matplotlib.pyplot as plt

    from bornbiased_jax.presets import get_preset
    from bornbiased_jax.probes.contraction import inter_sequence_profile
    from bornbiased_jax.probes.inputs import probe_inputs
    from experiments.common.cli import parse, write

    args, s = parse("figure7", main.__doc__, CPU, PAPER, argv=argv)
    t0 = time.time()
    base = get_preset(s["preset"])
    rows = {}
    fig, a7 = plt.subplots(figsize=(6, 4))
    for label, block in MODES.items():
        cfg = base.ablate(block=block)
        xs = probe_inputs("gaussian", cfg, s["num_seqs"], s["seq_len"])
        prof = inter_sequence_profile(cfg, [s["seed"]], xs, progress=True)
        blocks = prof["blocks"][0]
        rows[label] = [{"block": i, "mean": b.mean, "sd": b.sd, "log10_p": b.log10_p}
                       for i, b in enumerate(blocks)]
        m = np.array([b.mean for b in blocks])
        a7.plot(range(len(m)), m, "o-", label=label)
    a7.set_xlabel("block (0 = inputs)"); a7.set_ylabel("pairwise cosine, last token")
    a7.set_title(f"Figure 7: per-block contraction ({base.name})"); a7.legend(fontsize=8)
    L = base.n_layers
    md = ("| block | full | MLP-only | attention-only |\n|---:|---:|---:|---:|\n"
          + "".join(f"| {i} | " + " | ".join(f"{rows[k][i]['mean']:.4f}" for k in MODES) + " |\n"
                    for i in range(L + 1)))
    write(args, "figure7", s, rows, md, fig, t0)
