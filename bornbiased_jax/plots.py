"""Figures without pyplot, and small shared plots.

:func:`figure` makes a ``matplotlib.figure.Figure`` directly: no backend is selected and no
display is needed (saving a PNG renders with Agg), nothing is registered with pyplot, so a long
process drawing many figures keeps none of them. The library draws every figure this way;
``io.save_figure`` writes it.
"""

from __future__ import annotations

from matplotlib.figure import Figure


def figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float], squeeze: bool = True,
           **subplots_kw):
    """``(fig, axes)`` as ``pyplot.subplots`` returns them, for a figure outside pyplot."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, squeeze=squeeze, **subplots_kw)


def __getattr__(name: str):
    """``plots.plt``: pyplot itself, imported on first use, for scripts that draw through it."""
    if name == "plt":
        import matplotlib.pyplot

        return matplotlib.pyplot
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def loss_curve(records: list[dict], title: str = ""):
    """Training loss per logged step and validation loss at evaluation steps."""
    fig, ax = figure(figsize=(6, 4))
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
