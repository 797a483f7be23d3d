"""Table 3's rule (Prop. 4): MLP0, MLP0 o MLP0 and Attn0 o MLP0 with ReLU."""

from __future__ import annotations

from bornbiased_jax.stats import format_log10_p
from bornbiased_jax.verdicts import Claim
from experiments.common.paper_values import PAPER_TABLE3
from experiments.initialisation.levels import ok_verdict


def table3_claim(d: dict) -> Claim:
    """Reproduced when every setting is within 0.02 of the paper's value."""
    rs = d["records"]
    ok = all(abs(r["avg_sim"] - r["paper"]) < 0.02 for r in rs)
    return Claim("Table 3 / Prop. 4", ", ".join(f"{v:.2f}" for v in PAPER_TABLE3),
                 ", ".join(f"{r['avg_sim']:.3f} (p {format_log10_p(r['log10_p'])})" for r in rs)
                 + " (closed forms 0.318, 0.494, 0.984)", ok_verdict(ok), section="Sec. 4.3")


# --- the measurement: python -m experiments table3 -------------------------------------
def main(argv: list[str]) -> None:
    """Table 3: MLP0, MLP0 o MLP0 and Attn0 o MLP0 with ReLU: mean pairwise cosine of
    last-token outputs across sequences, its significance, and Propositions 2 and 4 (paper Sec.
    4.3). The measurement, table and figure are :func:`bornbiased_jax.theory.plots.table3`."""
    from experiments.common.cli import theory_plot

    theory_plot("table3", main.__doc__, argv)
