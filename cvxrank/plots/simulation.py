"""Figs. 2 and 3 of Xu et al. (ECML 2006): the simulated data with the two ranking
directions, and NDCG@N of both methods."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from cvxrank.exceptions import ValidationError
from cvxrank.plots.ranking import new_axes, plot_ndcg_curve

__all__ = ["plot_ndcg_at_n", "plot_simulation_data"]

_GRADE_STYLE = {  # grade -> (name, marker, colour, size, alpha)
    0: ("r1", "o", "0.6", 6, 0.35),
    1: ("r2", "^", "tab:blue", 14, 0.7),
    2: ("r3", "s", "tab:red", 14, 0.8),
}


def _labels() -> dict:
    from cvxrank.experiments.simulation import METHOD_LABELS

    return METHOD_LABELS


def plot_simulation_data(source, w=None, ax=None, *, show_paper: bool = False, title: str | None = None):
    """The simulated documents and the ranking directions (Fig. 2, ECML 2006).

    Each grade is a scatter (r1 grey dots, r2 blue triangles, r3 red
    squares); each ranking function ``f(x) = <w, x>`` is drawn as a line
    through the centre of the data along ``w``, with an arrow towards
    increasing scores, labelled with its angle from the x-axis.

    Parameters
    ----------
    source : SimulationResult or RankingData
        A result of :func:`cvxrank.experiments.run_ecml_simulation` (its data
        and weight vectors), or two-feature data with grades 0, 1, 2.
    w : mapping, optional
        ``{method: w}`` (2 coordinates each); default: the result's weight
        vectors (none for plain data).
    ax : matplotlib Axes, optional
    show_paper : bool, default False
        Also draw the paper's directions (:data:`cvxrank.experiments.PAPER_ECML`)
        as dotted lines.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        One scatter collection per grade and one line per direction.

    Examples
    --------
    >>> from cvxrank.datasets import make_ecml_simulation
    >>> ax = plot_simulation_data(make_ecml_simulation(sizes=(50, 10, 5)), {"ranksvm": [0.4, 1.3]})
    >>> len(ax.collections), [line.get_label() for line in ax.lines]
    (3, ['Ranking SVM: 72.9°'])
    """
    from cvxrank.experiments.simulation import PAPER_ECML, angle_degrees

    data = getattr(source, "data", source)
    if w is None:
        w = getattr(source, "w", None) or {}
    if not hasattr(data, "X") or not hasattr(data, "y"):
        raise ValidationError(f"source must be a SimulationResult or RankingData, got {type(source).__name__}")
    if data.n_features != 2:
        raise ValidationError(f"the simulation plot needs 2 features, the data has {data.n_features}")
    if not isinstance(w, Mapping):
        raise ValidationError(f"w must be a mapping {{method: weight vector}}, got {type(w).__name__}")
    X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
    y = np.asarray(data.y)
    ax = new_axes(ax, figsize=(6.0, 5.5))
    for grade in np.unique(y):
        name, marker, colour, size, alpha = _GRADE_STYLE.get(int(grade), (f"grade {grade}", "x", None, 10, 0.6))
        mask = y == grade
        ax.scatter(X[mask, 0], X[mask, 1], s=size, marker=marker, c=colour, alpha=alpha, linewidths=0,
                   label=f"{name} (n={int(mask.sum())})")
    centre = X.mean(axis=0)
    reach = 1.05 * np.max(np.linalg.norm(X - centre, axis=1))
    labels = _labels()

    def direction(vector, label, colour, style):
        try:
            vec = np.asarray(vector, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise ValidationError(f"weight vector of {label!r} is not numeric") from None
        norm = np.linalg.norm(vec) if vec.shape == (2,) else 0.0
        if not np.isfinite(norm) or norm == 0:
            raise ValidationError(f"weight vector of {label!r} must be 2 finite numbers, not all 0; got {vector!r}")
        u = vec / norm
        ends = np.vstack([centre - reach * u, centre + reach * u])
        ax.plot(ends[:, 0], ends[:, 1], linestyle=style, color=colour, linewidth=2,
                label=f"{label}: {angle_degrees(vec):.1f}°")
        ax.annotate("", xy=centre + reach * u, xytext=centre + 0.8 * reach * u,
                    arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 2})

    for i, (method, vector) in enumerate(w.items()):
        direction(vector, labels.get(method, str(method)), ("black", "tab:green", "tab:purple")[i % 3], "-")
    if show_paper:
        for i, (method, vector) in enumerate(PAPER_ECML["w"].items()):
            direction(vector, f"paper, {labels.get(method, method)}", ("black", "tab:green")[i % 2], ":")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title or "Simulation (ECML 2006, Fig. 2): data and ranking directions")
    return ax


def _ndcg_table(result) -> pd.DataFrame:
    if isinstance(result, pd.DataFrame):
        return result
    if isinstance(result, Mapping):
        return pd.DataFrame({m: pd.Series({int(k): float(v) for k, v in d.items()}) for m, d in result.items()})
    ndcg = getattr(result, "ndcg", None)
    if isinstance(ndcg, pd.DataFrame):
        return ndcg
    raise ValidationError(f"result must be a SimulationResult, a DataFrame or a mapping, got {type(result).__name__}")


def plot_ndcg_at_n(result, ax=None, *, show_paper: bool = True, title: str | None = None):
    """NDCG@N against N for both methods (Fig. 3, ECML 2006).

    Parameters
    ----------
    result : SimulationResult, DataFrame or mapping
        A result of :func:`cvxrank.experiments.run_ecml_simulation`, its
        ``ndcg`` table (index N, one column per method), or the ``"ndcg"``
        entry of its JSON (``{method: {"1": value, ...}}``).
    ax : matplotlib Axes, optional
    show_paper : bool, default True
        Mark the values the paper's text states (the cost-sensitive NDCG@N is
        1.0 for N < 90) as hollow circles.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
        One line per method (plus one marker-only line for the paper).

    Examples
    --------
    >>> ax = plot_ndcg_at_n({"ranksvm": {"1": 1.0, "10": 0.9}, "cost_sensitive": {"1": 1.0, "10": 1.0}})
    >>> [line.get_label() for line in ax.lines]
    ['Ranking SVM', 'cost-sensitive', 'paper (text): cost-sensitive = 1.0 for N < 90']
    """
    from cvxrank.experiments.simulation import PAPER_ECML

    table = _ndcg_table(result)
    ax = plot_ndcg_curve(table, ax, xlabel="N", ylabel="NDCG@N", labels=_labels(),
                         title=title or "Simulation (ECML 2006, Fig. 3): NDCG@N")
    if show_paper:
        for method, values in PAPER_ECML["ndcg"].items():
            n = np.array(sorted(values), dtype=float)
            colour = f"C{list(table.columns).index(method)}" if method in table.columns else "black"
            ax.plot(n, [values[int(k)] for k in n], linestyle="none", marker="o", markersize=9,
                    markerfacecolor="none", markeredgecolor=colour,
                    label=f"paper (text): {_labels().get(method, method)} = 1.0 for N < 90")
        ax.legend(fontsize=8)
    ax.set_ylim(top=1.02)
    return ax
