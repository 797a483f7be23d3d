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
