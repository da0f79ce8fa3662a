"""Plots: the papers' figures and general-purpose ranking plots (matplotlib, Agg, no pyplot).

Every function takes an optional ``ax``, draws on it (or on a new stand-alone
Figure) and returns the Axes; :func:`save_figure` writes a Figure or Axes to a
file atomically, :func:`save_figures` several figures as PNG and a vector format
(PDF or SVG) into one folder. matplotlib is imported only when a plot is drawn.
Every figure gets the one look of :mod:`cvxrank._style`.

- :func:`plot_simulation_data`: Fig. 2 of ECML 2006, simulated data and ranking directions
- :func:`plot_ndcg_at_n`: Fig. 3 of ECML 2006, NDCG@N of both methods
- :func:`plot_weighted_hinge`: Fig. 2 of SIGIR 2006, hinge losses with slopes τ·μ
- :func:`plot_fold_metrics`: cross-validation per metric, fold values and mean ± sd (the demo's figure)
- :func:`plot_metric_table`: bar chart of a methods x metrics table
- :func:`plot_ndcg_curve`: NDCG@k against k, one line per method
"""

from cvxrank.plots.hinge import plot_weighted_hinge
from cvxrank.plots.ranking import (
    VECTOR_FORMATS,
    interactive_backend,
    new_axes,
    plot_fold_metrics,
    plot_metric_table,
    plot_ndcg_curve,
    save_figure,
    save_figures,
)
from cvxrank.plots.simulation import plot_ndcg_at_n, plot_simulation_data

__all__ = [
    "VECTOR_FORMATS",
    "interactive_backend",
    "new_axes",
    "plot_fold_metrics",
    "plot_metric_table",
    "plot_ndcg_at_n",
    "plot_ndcg_curve",
    "plot_simulation_data",
    "plot_weighted_hinge",
    "save_figure",
    "save_figures",
]
