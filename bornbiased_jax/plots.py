"""Figures without pyplot, and small shared plots.

:func:`figure` makes a ``matplotlib.figure.Figure`` directly: no backend is selected and no
display is needed (saving a PNG renders with Agg), nothing is registered with pyplot, so a long
process drawing many figures keeps none of them. The library draws every figure this way;
``files.save_figure`` writes it.
"""

from __future__ import annotations

import numpy as np


def figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], squeeze: bool = True,
           **subplots_kw):
    """``(fig, axes)`` as ``pyplot.subplots`` returns them, for a figure outside pyplot."""
    from matplotlib.figure import Figure  # Matplotlib only when a figure is drawn

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, squeeze=squeeze, **subplots_kw)


def __getattr__(name: str):
    """``plots.plt``: pyplot itself, imported on first use, for scripts that draw through it."""
    if name == "plt":
        import matplotlib.pyplot

        return matplotlib.pyplot
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def loss_curve(records: list[dict], title: str = ""):
    """Training loss per logged step and validation loss at evaluation steps; for a run of
    several seeds (records holding per-seed lists) one thin line per seed of each, in one
    figure."""
    fig, ax = figure(figsize=(6, 4))
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
