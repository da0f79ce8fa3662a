"""The one look of every cvxrank figure: fonts, sizes, grid, frame, ticks and resolution.

:data:`RC` holds the matplotlib settings; :func:`style` is a context in which figures are created
(every plot module creates its figures through :func:`cvxrank.plots.ranking.new_axes`, which uses
it; the study report wraps its subplots in it). :func:`finish` gives an Axes the common frame and
grid, :func:`log_ticks` makes log-scale ticks read like numbers (``1``, ``2``, ``5``, ``10``, ``200``
rather than ``10^0``, ``2×10^2``). matplotlib is imported inside the functions.
"""

from __future__ import annotations

__all__ = ["DPI", "RC", "finish", "log_ticks", "size_ticks", "style"]

#: Resolution of saved figures (dots per inch).
DPI = 150

#: matplotlib settings of every figure: readable at the width of a paper column or a docs page.
RC = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.5,
    "savefig.dpi": DPI,
    "savefig.bbox": "tight",
    "figure.dpi": 100,
}


def style():
    """A context manager in which new figures get :data:`RC`."""
    import matplotlib

    return matplotlib.rc_context(RC)


def finish(ax) -> None:
    """The common frame of an Axes drawn outside :func:`style`: no top/right spine, a light grid."""
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, alpha=RC["grid.alpha"], linewidth=RC["grid.linewidth"])


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:g}"


def log_ticks(axis, *, minor: bool = True) -> None:
    """Ticks of a log axis written as plain numbers (``0.5``, ``1``, ``10``, ``2,000``); with ``minor``,
    the minor ticks at 2 and 5 times a power of ten are labelled too."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis.set_major_formatter(FuncFormatter(lambda v, _: _number(v)))
    axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: _number(v) if minor else ""))


def size_ticks(axis, values) -> None:
    """Major ticks exactly at ``values`` (the sizes run), written as numbers; no minor ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    values = sorted({float(v) for v in values})
    axis.set_major_locator(FixedLocator(values))
    axis.set_major_formatter(FuncFormatter(lambda v, _: _number(v)))
    axis.set_minor_locator(NullLocator())
