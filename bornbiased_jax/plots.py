"""Small shared plots."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def loss_curve(records: list[dict], title: str = ""):
    """Training loss per logged step and validation loss at evaluation steps; for a run of
    several seeds (records holding per-seed lists) one thin line per seed of each, in one
    figure."""
    fig, ax = plt.subplots(figsize=(6, 4))
    tr = [(r["step"], np.atleast_1d(r["loss"])) for r in records if "loss" in r]
    va = [(r["step"], np.atleast_1d(r["val_loss"])) for r in records if "val_loss" in r]
    n_seeds = max([len(v) for _, v in tr + va] or [1])
    lw, alpha = (1, 1.0) if n_seeds == 1 else (0.6, max(0.25, 1 / n_seeds ** 0.5))
    of = "" if n_seeds == 1 else f" ({n_seeds} seeds)"
    for k in range(n_seeds):
        if tr:
            ax.plot([t for t, _ in tr], [v[k] for _, v in tr], "-", color="tab:blue", lw=lw,
                    alpha=alpha, label=None if k else f"train loss{of}")
        if va:
            ax.plot([t for t, _ in va], [v[k] for _, v in va], "o-" if n_seeds == 1 else "-",
                    color="tab:red", lw=1.5 if n_seeds == 1 else lw, alpha=alpha,
                    label=None if k else f"validation loss{of}")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig
