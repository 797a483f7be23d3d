"""Small shared plots."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def loss_curve(records: list[dict], title: str = ""):
    """Training loss per logged step and validation loss at evaluation steps."""
    fig, ax = plt.subplots(figsize=(6, 4))
    tr = [(r["step"], r["loss"]) for r in records if "loss" in r]
    va = [(r["step"], r["val_loss"]) for r in records if "val_loss" in r]
    if tr:
        ax.plot(*zip(*tr), "-", color="tab:blue", lw=1, label="train loss")
    if va:
        ax.plot(*zip(*va), "o-", color="tab:red", label="validation loss")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig
