"""Figure 5's rule (Prop. 2): ReLU vs tanh in MLP0 blocks."""

from __future__ import annotations

from bornbiased_jax.verdicts import Claim
from experiments.initialisation.levels import ok_verdict


def figure5_claim(d: dict) -> Claim:
    """Reproduced when ReLU MLP0's block-1 cosine exceeds 0.25 (1/pi = 0.318), |tanh| < 0.02 at
    every block, and the LN + residual block ends above 0 and below ReLU MLP0."""
    r = d["records"]
    relu, tanh, blk = r["ReLU MLP0"], r["tanh MLP0"], r["ReLU MLP block (LN + residual)"]
    ok = relu[1] > 0.25 and max(abs(x) for x in tanh[1:]) < 0.02 and 0 < blk[-1] < relu[-1]
    return Claim("Figure 5 / Prop. 2", "ReLU MLP0 rises fast, tanh stays ~0, LN+residual block "
                 "rises slower", f"after {len(relu) - 1} blocks: ReLU MLP0 {relu[-1]:.3f} "
                 f"(block 1: {relu[1]:.3f} vs 1/pi), tanh {tanh[-1]:.1e}, ReLU block {blk[-1]:.3f}",
                 ok_verdict(ok), section="Sec. 4.2")


# --- the measurement: python -m experiments figure5 ------------------------------------
def main(argv: list[str]) -> None:
    """Figure 5: ReLU vs tanh in MLP0 blocks (no LayerNorm, no residual; identical weights),
    with the standard ReLU MLP block (LayerNorm + residual) for reference, against Proposition
    2's recurrence (paper Sec. 4.2). The measurement, table and figure are
    :func:`bornbiased_jax.theory.plots.figure5`."""
    from experiments.common.cli import theory_plot

    theory_plot("figure5", main.__doc__, argv)
