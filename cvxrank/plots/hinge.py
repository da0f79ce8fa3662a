"""Fig. 2 of Cao et al. (SIGIR 2006): hinge losses with different penalties ``τ·μ``."""

from __future__ import annotations

import numpy as np

from cvxrank.exceptions import ValidationError
from cvxrank.plots.ranking import new_axes

__all__ = ["DEFAULT_SLOPES", "plot_weighted_hinge"]

#: Penalties drawn by default; 1 is Ranking SVM's hinge loss.
DEFAULT_SLOPES = (0.5, 1.0, 2.0, 3.0)


def plot_weighted_hinge(slopes=DEFAULT_SLOPES, ax=None, *, z_range=(-2.0, 2.0), title: str | None = None):
    """The weighted hinge loss ``τμ [1 - z]_+`` for several ``τμ`` (Fig. 2, SIGIR 2006).

    ``z = z_i f(x_i^(1) - x_i^(2))`` is the pair's margin. Every loss is 0 for
    ``z ≥ 1`` and decreases linearly with slope ``-τμ`` below, the term of
    pair ``i`` in the loss (9); ``τμ = 1`` (solid black) is Ranking SVM's
    hinge loss (7).

    Parameters
    ----------
    slopes : sequence of positive float, default (0.5, 1, 2, 3)
        The values of ``τ·μ``, one line each; the legend writes them to 3 significant digits.
    ax : matplotlib Axes, optional
    z_range : (float, float), default (-2, 2)
        Range of the margin ``z`` on the x-axis; must contain 1.
    title : str, optional
        Default "Hinge loss with different penalty parameters τ·μ".

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = plot_weighted_hinge((1.0, 2.0))
    >>> [line.get_label() for line in ax.lines]
    ['τ·μ = 1 (Ranking SVM)', 'τ·μ = 2']
    >>> float(ax.lines[1].get_ydata()[0])  # 2 * (1 - (-2))
    6.0
    """
    try:
        values = [float(s) for s in slopes]
    except (TypeError, ValueError):
        raise ValidationError(f"slopes must be a sequence of positive numbers, got {slopes!r}") from None
    if not values or not all(np.isfinite(v) and v > 0 for v in values):
        raise ValidationError(f"slopes must be a non-empty sequence of positive finite numbers, got {slopes!r}")
    try:
        lo, hi = (float(v) for v in z_range)
    except (TypeError, ValueError):
        raise ValidationError(f"z_range must be two numbers, got {z_range!r}") from None
    if not (lo < 1.0 < hi):
        raise ValidationError(f"z_range must contain the hinge point z = 1, got {z_range!r}")
    ax = new_axes(ax, figsize=(5.5, 4.0))
    z = np.array([lo, 1.0, hi])  # piecewise linear: three points are exact
    dashes = ["--", "-.", ":", (0, (5, 1, 1, 1))]
    others = 0
    for slope in values:
        loss = slope * np.maximum(1.0 - z, 0.0)
        if slope == 1.0:
            ax.plot(z, loss, "-", color="black", linewidth=2.2, label="τ·μ = 1 (Ranking SVM)")
        else:
            ax.plot(z, loss, linestyle=dashes[others % len(dashes)], color=f"C{others}", linewidth=1.6,
                    label=f"τ·μ = {slope:.3g}")
            others += 1
    ax.set_xlabel("z · f(x⁽¹⁾ − x⁽²⁾)")
    ax.set_ylabel("loss")
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom=-0.03 * ax.get_ylim()[1])  # the flat part (z >= 1) stays above the frame
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "Hinge loss with different penalty parameters τ·μ")
    return ax
