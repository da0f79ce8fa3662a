"""The click experiment of Joachims et al. (WSDM 2017): test NDCG@10 against the number of sessions.

The functions draw the long frame of :func:`cvxrank.experiments.clicks.run_click_experiment`
(:attr:`~cvxrank.experiments.clicks.ClickExperimentResult.frame`); they compute nothing but
means and standard deviations over its repeats.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cvxrank.exceptions import ValidationError
from cvxrank.plots.ranking import new_axes

__all__ = ["plot_click_experiment", "plot_click_experiments"]

_STYLE = {  # model -> (colour, marker, line style)
    "naive": ("tab:grey", "o", "-"),
    "skip_above": ("tab:brown", "v", "-"),
    "propensity_true": ("tab:red", "s", "-"),
    "propensity_estimated": ("tab:blue", "^", "--"),
    "full_information": ("black", None, ":"),
    "production": ("tab:green", None, "-."),
}
_METRICS = {"ndcg": "test NDCG@10 (true grades)", "mean_rank": "mean rank of relevant test documents"}


def _frame(frame) -> pd.DataFrame:
    frame = getattr(frame, "frame", frame)
    if not isinstance(frame, pd.DataFrame) or not {"model", "eta", "n_sessions", "ndcg"} <= set(frame.columns):
        raise ValidationError("plot the frame of run_click_experiment (columns model, eta, n_sessions, ndcg, ...)")
    return frame


def plot_click_experiment(frame, eta: float, ax=None, *, metric: str = "ndcg", title: str | None = None):
    """One ``η`` of the click experiment: ``metric`` against the number of sessions, one line per model.

    The click models are lines with markers at their mean over repeats and bars of ± one
    standard deviation; the production ranker and the full-information ranker (trained once) are
    horizontal lines. The x axis is logarithmic.

    Parameters
    ----------
    frame : pandas.DataFrame or ClickExperimentResult
        The long frame of :func:`~cvxrank.experiments.clicks.run_click_experiment`.
    eta : float
        Which ``η`` to draw (a value of ``frame["eta"]``).
    ax : matplotlib Axes, optional
    metric : {"ndcg", "mean_rank"}, default "ndcg"
    title : str, optional
        Default ``"η = <eta>"``.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"model": ["production", "naive", "naive"], "eta": [float("nan"), 1.0, 1.0],
    ...                       "n_sessions": [float("nan"), 100, 400], "ndcg": [0.6, 0.62, 0.65]})
    >>> ax = plot_click_experiment(frame, 1.0)
    >>> ax.get_legend_handles_labels()[1]
    ['production ranker', 'naive (1/p = 1)']
    """
    from cvxrank.experiments.clicks import CLICK_MODEL_LABELS, CLICK_MODELS

    frame = _frame(frame)
    if metric not in _METRICS:
        raise ValidationError(f"metric must be one of {sorted(_METRICS)}, got {metric!r}")
    cells = frame[np.isclose(frame["eta"].astype(float), float(eta))]
    if cells.empty:
        raise ValidationError(f"eta={eta!r} is not in the frame (etas: {sorted(frame['eta'].dropna().unique())})")
    ax = new_axes(ax)
    for model in CLICK_MODELS:
        colour, marker, style = _STYLE[model]
        label = CLICK_MODEL_LABELS[model]
        if model in ("production", "full_information"):
            value = frame.loc[frame["model"] == model, metric]
            if len(value) and np.isfinite(value.iloc[0]):
                ax.axhline(float(value.iloc[0]), color=colour, linestyle=style, linewidth=1.2, label=label)
            continue
        rows = cells[cells["model"] == model]
        if rows.empty:
            continue
        stats = rows.groupby("n_sessions")[metric].agg(["mean", "std"]).sort_index()
        ax.errorbar(stats.index.to_numpy(dtype=float), stats["mean"], yerr=stats["std"].fillna(0.0), color=colour,
                    marker=marker, linestyle=style, capsize=3, markersize=5, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("sessions in the click log")
    ax.set_ylabel(_METRICS[metric])
    ax.set_title(f"η = {float(eta):g}" if title is None else title)
    return ax


def plot_click_experiments(frame, axes=None, *, metric: str = "ndcg"):
    """Every ``η`` of the frame side by side (:func:`plot_click_experiment` on each), one legend.

    Parameters
    ----------
    frame : pandas.DataFrame or ClickExperimentResult
    axes : sequence of matplotlib Axes, optional
        One per ``η`` (ascending); default a new stand-alone Figure with one row of panels
        sharing the y axis.
    metric : {"ndcg", "mean_rank"}, default "ndcg"

    Returns
    -------
    list of matplotlib.axes.Axes
    """
    frame = _frame(frame)
    etas = sorted(frame["eta"].dropna().unique())
    if not etas:
        raise ValidationError("the frame holds no click model (no eta)")
    if axes is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from cvxrank._style import style

        with style():
            fig = Figure(figsize=(4.0 * len(etas), 4.0), layout="constrained")
            FigureCanvasAgg(fig)
            axes = list(np.atleast_1d(fig.subplots(1, len(etas), sharey=True)))
    axes = list(axes)
    if len(axes) != len(etas):
        raise ValidationError(f"axes must hold one Axes per eta ({len(etas)}), got {len(axes)}")
    for ax, eta in zip(axes, etas):
        plot_click_experiment(frame, eta, ax, metric=metric)
    for ax in axes[1:]:
        ax.set_ylabel("")
    handles, labels = axes[0].get_legend_handles_labels()
    # two columns a panel: a one-panel figure is too narrow for the six entries in one row
    axes[0].figure.legend(handles, labels, loc="outside lower center", ncol=max(1, min(len(labels), 2 * len(axes))),
                          frameon=False, fontsize="small")
    return axes
