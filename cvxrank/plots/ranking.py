"""General-purpose ranking plots and the figure helpers every plot module uses.

Plot functions draw what they are given and compute nothing; each takes an
optional matplotlib ``ax`` and returns the Axes it drew on (its Figure is
``ax.figure``). Without ``ax`` they create a stand-alone
:class:`matplotlib.figure.Figure` (no pyplot, no global state, never shown),
which :func:`save_figure` writes to a file atomically. matplotlib is imported
inside the functions, so ``import cvxrank`` does not load it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from cvxrank._figures import VECTOR_FORMATS, save_figure, save_figures
from cvxrank.exceptions import ValidationError

__all__ = ["VECTOR_FORMATS", "interactive_backend", "new_axes", "plot_fold_metrics", "plot_metric_table",
           "plot_ndcg_curve", "save_figure", "save_figures"]

#: matplotlib's built-in backends that draw into files only (they cannot show a window).
_NON_INTERACTIVE = frozenset({"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"})


def new_axes(ax=None, figsize=(6.0, 4.0)):
    """``ax`` itself, or the Axes of a new stand-alone Figure (Agg canvas, constrained layout)."""
    if ax is not None:
        if not hasattr(ax, "figure") or not hasattr(ax, "plot"):
            raise ValidationError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
        return ax
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from cvxrank._style import style

    with style():
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        return fig.add_subplot()


def interactive_backend() -> bool:
    """Whether matplotlib's current backend shows windows (so ``pyplot.show()`` is worth calling).

    False for the backends that only write files (``agg``, ``pdf``, ``svg``, ... : a script run
    by the docs gallery, by the tests or over SSH without a display); True for the GUI backends
    (``tkagg``, ``qtagg``, ``macosx``, ...) and a notebook's. Asking resolves matplotlib's
    automatic backend choice, which imports ``matplotlib.pyplot``: call it from scripts that
    use pyplot, not from library code.
    """
    import matplotlib

    return matplotlib.get_backend().lower() not in _NON_INTERACTIVE


def _numeric_frame(df, what: str) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise ValidationError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    if df.empty:
        raise ValidationError(f"{what} is empty")
    return df


def plot_metric_table(df, metric=None, ax=None, *, title: str | None = None, labels: bool = True):
    """Bar chart of a methods x metrics table.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per method (the index, or a ``method`` column), one numeric
        column per metric, e.g. NDCG@1, NDCG@10, MAP.
    metric : str, list of str or None
        Column(s) to draw; None draws every numeric column. One metric gives
        one bar per method; several give groups of bars, one group per metric
        and one colour per method (legend).
    ax : matplotlib Axes, optional
    title : str, optional
    labels : bool, default True
        Write each bar's value on it.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> df = pd.DataFrame({"NDCG@1": [0.5, 0.6], "MAP": [0.4, 0.45]}, index=["RSVM", "RSVM-IR"])
    >>> ax = plot_metric_table(df)
    >>> len(ax.patches), [t.get_text() for t in ax.get_xticklabels()]
    (4, ['NDCG@1', 'MAP'])
    """
    df = _numeric_frame(df, "df")
    if "method" in df.columns:
        df = df.set_index("method")
    if metric is None:
        columns = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
        if not columns:
            raise ValidationError("df has no numeric column to plot")
    else:
        columns = [metric] if isinstance(metric, str) else list(metric)
        unknown = [c for c in columns if c not in df.columns]
        if unknown or not columns:
            raise ValidationError(f"unknown metric {unknown or metric!r}; df has {', '.join(map(str, df.columns))}")
        bad = [c for c in columns if not pd.api.types.is_numeric_dtype(df[c])]
        if bad:
            raise ValidationError(f"metric column(s) {bad} are not numeric")
    ax = new_axes(ax, figsize=(max(5.0, 1.2 * len(columns) * max(1, len(df)) ** 0.5 + 2), 4.0))
    methods = [str(m) for m in df.index]
    if len(columns) == 1:
        bars = ax.bar(methods, df[columns[0]].to_numpy(dtype=float), color=[f"C{i}" for i in range(len(df))])
        if labels:
            ax.bar_label(bars, fmt="%.3f", fontsize=8)
        ax.set_ylabel(str(columns[0]))
        ax.set_xlabel("method")
    else:
        x = np.arange(len(columns))
        width = 0.8 / len(df)
        for i, method in enumerate(methods):
            bars = ax.bar(x + (i - (len(df) - 1) / 2) * width, df[columns].iloc[i].to_numpy(dtype=float),
                          width, label=method, color=f"C{i}")
            if labels:
                ax.bar_label(bars, fmt="%.3f", fontsize=7, rotation=90, padding=2)
        ax.set_xticks(x, [str(c) for c in columns])
        ax.set_ylabel("value")
        ax.legend(fontsize=8)
    ax.margins(y=0.15)
    if title:
        ax.set_title(title)
    return ax


def plot_fold_metrics(per_fold, metrics=None, *, title: str | None = None, value_range=(0.0, 1.0)):
    """Cross-validation results for a paper: one panel per metric, methods down the side, each fold's
    value as a small point and the mean over folds with its spread (± one standard deviation over
    folds) as a bar; each panel's axis is zoomed to its data, so differences of 0.003-0.05 show.

    The bar of a method with mean ``m`` and standard deviation ``s`` runs over
    ``[max(m − s, lo), min(m + s, hi)]``: a metric cannot leave its range ``[lo, hi]``
    (``[0, 1]`` for NDCG@k, MAP and P@k), so neither does its bar.

    Parameters
    ----------
    per_fold : pandas.DataFrame
        One row per (method, fold): columns ``method``, ``fold`` and one numeric column per metric
        (e.g. the per-fold means of :attr:`cvxrank.experiments.cv.CVResult.per_query`).
    metrics : list of str, optional
        The panels, in order (default every numeric column).
    title : str, optional
    value_range : (float, float) or None, default (0, 1)
        The range ``[lo, hi]`` of every metric; the ± bars are clipped to it. None: no clipping.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> df = pd.DataFrame({"method": ["A", "A", "B", "B"], "fold": [1, 2, 1, 2],
    ...                    "ndcg@1": [0.50, 0.52, 0.55, 0.53], "map": [0.6, 0.61, 0.62, 0.64]})
    >>> fig = plot_fold_metrics(df)
    >>> [ax.get_title() for ax in fig.axes]
    ['ndcg@1', 'map']
    """
    df = _numeric_frame(per_fold, "per_fold")
    missing = [c for c in ("method", "fold") if c not in df.columns]
    if missing:
        raise ValidationError(f"per_fold needs columns method and fold; missing {missing}")
    if metrics is None:
        metrics = [c for c in df.columns if c not in ("method", "fold", "qid") and pd.api.types.is_numeric_dtype(df[c])]
    metrics = list(metrics)
    unknown = [m for m in metrics if m not in df.columns]
    if unknown or not metrics:
        raise ValidationError(f"unknown metric {unknown or metrics!r}; per_fold has {', '.join(map(str, df.columns))}")
    if value_range is None:
        lo_range, hi_range = -np.inf, np.inf
    else:
        try:
            lo_range, hi_range = (float(v) for v in value_range)
        except (TypeError, ValueError):
            raise ValidationError(f"value_range must be two numbers (lo, hi) or None, got {value_range!r}") from None
        if not lo_range < hi_range:
            raise ValidationError(f"value_range must have lo < hi, got {value_range!r}")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from cvxrank._style import style

    methods = list(dict.fromkeys(df["method"]))
    y = np.arange(len(methods))[::-1]
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    with style():
        fig = Figure(figsize=(1.2 + 2.4 * ncols, nrows * (0.7 + 0.3 * len(methods)) + 0.5), layout="constrained")
        FigureCanvasAgg(fig)
        grid = fig.subplots(nrows, ncols, sharey=True, squeeze=False)
        axes = grid.ravel()
        for ax in axes[len(metrics):]:
            ax.set_visible(False)
        for ax, metric in zip(axes, metrics):
            lo, hi = np.inf, -np.inf
            for yi, method in zip(y, methods):
                values = df.loc[df["method"] == method, metric].to_numpy(dtype=float)
                ax.plot(values, np.full(values.shape, yi), "o", ms=3, color="0.55", alpha=0.8, zorder=2)
                mean, spread = values.mean(), values.std(ddof=1) if values.size > 1 else 0.0
                left, right = max(mean - spread, lo_range), min(mean + spread, hi_range)  # the metric's range
                ax.errorbar(mean, yi, xerr=[[mean - left], [right - mean]], fmt="D", ms=5,
                            color=f"C{methods.index(method)}", capsize=3, lw=1.4, zorder=3)
                lo = min(lo, np.nanmin(values), left)
                hi = max(hi, np.nanmax(values), right)
            pad = max(0.06 * (hi - lo), 0.005)
            ax.set_xlim(lo - pad, hi + pad)
            ax.set_title(str(metric))
            ax.grid(True, axis="x")
            ax.grid(False, axis="y")
            ax.tick_params(axis="x", labelrotation=0)
        for row in grid:
            row[0].set_yticks(y, methods)
            row[0].set_ylim(-0.6, len(methods) - 0.4)
        fig.supxlabel("value per fold (grey points) and mean ± standard deviation over folds", fontsize=8)
        if title:
            fig.suptitle(title)
    return fig


def _curves(per_method) -> dict:
    """``{method: (k array, value array)}`` from a mapping of mappings or a DataFrame (index k)."""
    if isinstance(per_method, pd.DataFrame):
        per_method = {c: per_method[c].dropna() for c in per_method.columns}
    if not isinstance(per_method, Mapping) or not per_method:
        raise ValidationError("per_method must be a non-empty mapping {method: {k: value}} or a DataFrame")
    curves = {}
    for method, values in per_method.items():
        if isinstance(values, pd.Series):
            values = values.to_dict()
        if not isinstance(values, Mapping) or not values:
            raise ValidationError(f"values of {method!r} must be a non-empty mapping {{k: value}}")
        try:
            k = np.array([float(key) for key in values], dtype=np.float64)
            v = np.array([float(val) for val in values.values()], dtype=np.float64)
        except (TypeError, ValueError):
            raise ValidationError(f"values of {method!r} must map numeric k to numeric values") from None
        order = np.argsort(k)
        curves[method] = (k[order], v[order])
    return curves


def plot_ndcg_curve(per_method, ax=None, *, xlabel: str = "k", ylabel: str = "NDCG@k", title: str | None = None,
                    labels: Mapping | None = None):
    """NDCG@k (or any metric at a cut-off) against k, one line per method.

    Parameters
    ----------
    per_method : mapping or pandas.DataFrame
        ``{method: {k: value}}`` (keys may be strings such as ``"10"``, as in
        JSON), or a DataFrame with k as index and one column per method.
    ax : matplotlib Axes, optional
    xlabel, ylabel, title : str
    labels : mapping, optional
        Legend text per method (default: the method names).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> ax = plot_ndcg_curve({"RSVM": {1: 0.5, 5: 0.55, 10: 0.6}, "ListMLE": {"1": 0.52, "5": 0.5, "10": 0.61}})
    >>> [line.get_label() for line in ax.lines], ax.lines[1].get_xdata().tolist()
    (['RSVM', 'ListMLE'], [1.0, 5.0, 10.0])
    """
    curves = _curves(per_method)
    ax = new_axes(ax)
    markers = "osD^vP*X"
    for i, (method, (k, v)) in enumerate(curves.items()):
        label = (labels or {}).get(method, str(method))
        ax.plot(k, v, marker=markers[i % len(markers)], markersize=4, label=label, color=f"C{i}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return ax
