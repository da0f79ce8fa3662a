"""Figures of a study. Each function draws on a given ``ax`` from tables it is given; it computes nothing.

The tables come from :mod:`cvxrank.study.summary`. A method keeps its look
across figures: the colour says the solver, the line style (and marker) the
formulation.
"""

from __future__ import annotations

import numpy as np

from cvxrank._style import log_ticks, size_ticks

__all__ = ["method_label", "method_style", "plot_performance_profile", "plot_scaling"]

#: Solvers in colour order: the first ten get matplotlib's ten colours, the next ten tab20's light shades,
#: so no two solvers of the registry share a colour.
_SOLVER_ORDER = ("clarabel", "ecos", "osqp", "scs", "subgradient", "gd", "cutting_plane", "truncated_newton",
                 "piqp", "proxqp", "qoco", "daqp", "cvxopt", "gurobi", "mosek", "newton", "highs", "prox_newton")
_FORM_STYLE = {"primal": ("-", "o"), "lifted": ("--", "s"), "dual": (":", "^"), "hinge": ("-.", "D"),
               "auto": ((0, (5, 1, 1, 1)), "v"), "native": ((0, (1, 1)), "P")}


def _colour(index: int):
    if index < 10:
        return f"C{index}"
    from matplotlib import colormaps

    return colormaps["tab20"].colors[(2 * (index - 10) + 1) % 20]


def method_label(formulation: str, solver: str) -> str:
    """``"solver/formulation"``, the label of a method in legends."""
    return f"{solver}/{formulation}"


def method_style(formulation: str, solver: str) -> dict:
    """Matplotlib keywords of a method: colour by solver, line style and marker by formulation."""
    index = _SOLVER_ORDER.index(solver) if solver in _SOLVER_ORDER else len(_SOLVER_ORDER) + sum(map(ord, solver)) % 4
    line, marker = _FORM_STYLE.get(formulation, ("-", "x"))
    return {"color": _colour(index), "linestyle": line, "marker": marker}


def plot_performance_profile(profiles, ax, *, profile: str, tau_max: float | None = None):
    """Step curves ``ρ(τ)`` of :func:`~cvxrank.study.summary.performance_profiles` for one profile.

    Parameters
    ----------
    profiles : DataFrame
        Columns ``profile``, ``formulation``, ``solver``, ``tau``, ``fraction``.
    ax : matplotlib Axes
    profile : str
    tau_max : float, optional
        Right end of the ``τ`` axis (default: just past the largest finite ratio).
    """
    sub = profiles[profiles["profile"] == profile]
    finite = sub["tau"][np.isfinite(sub["tau"])]
    right = tau_max or max(2.0, 1.2 * float(finite.max()) if len(finite) else 2.0)
    order = {s: i for i, s in enumerate(_SOLVER_ORDER)}
    methods = sorted(sub.groupby(["formulation", "solver"]).groups,
                     key=lambda m: (order.get(m[1], len(order)), m[1], list(_FORM_STYLE).index(m[0])
                                    if m[0] in _FORM_STYLE else len(_FORM_STYLE), m[0]))
    for form, solver in methods:
        curve = sub[(sub["formulation"] == form) & (sub["solver"] == solver)]
        curve = curve[np.isfinite(curve["tau"])].sort_values("tau")
        taus = np.concatenate([[1.0], curve["tau"].to_numpy(), [right]])
        fracs = np.concatenate([[0.0], curve["fraction"].to_numpy(), [curve["fraction"].max() if len(curve) else 0]])
        style = method_style(form, solver)
        solved = "" if len(curve) else " (none found)"
        # clip_on=False and the margins below: a curve along rho = 0, rho = 1 or tau = 1 stays visible
        # instead of running under the frame. The formulation's marker sits on every step the curve takes
        # (not on the frame's ends), so curves that run together can still be told apart.
        ax.step(taus, fracs, where="post", label=method_label(form, solver) + solved, lw=1.4, clip_on=False,
                markevery=list(range(1, len(taus) - 1)), ms=4.5, markerfacecolor="none", **style)
    ax.set_xscale("log")
    ax.set_xlim(1.0 / 1.06, right * 1.02)
    log_ticks(ax.xaxis)
    ax.set_ylim(-0.04, 1.04)
    ax.set_xlabel("τ (time ratio to the fastest method)")
    ax.set_ylabel("share of problems found within τ")
    ax.set_title(f"performance profile, profile {profile}")
    ax.grid(True, which="both", alpha=0.3)
    # one entry per curve, grouped by solver (colour), with handles long enough to show the line style
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, handlelength=4.0,
              title="solver/formulation\n(colour: solver;\nline, marker: formulation)", title_fontsize="x-small",
              alignment="left")
    return ax


def plot_scaling(df, growth, ax, *, profile: str, instance: str, y: str = "wall_time", x: str = "pairs"):
    """``y`` against ``x`` on log-log axes, with the fitted power laws of ``growth``.

    Parameters
    ----------
    df : DataFrame
        Study rows to plot (found rows are drawn; others are left out).
    growth : DataFrame
        From :func:`~cvxrank.study.summary.growth_exponents` (its
        ``time_*`` columns are used for ``y="wall_time"``, ``memory_*`` for
        ``y="peak_memory"``).
    ax : matplotlib Axes
    profile, instance : str
    y : {"wall_time", "peak_memory"}
    x : str, default "pairs"
    """
    kind = "memory" if y == "peak_memory" else "time"
    sub = df[(df["profile"] == profile) & (df["instance"] == instance) & df["found"].astype(bool)]
    fits = growth[(growth["profile"] == profile) & (growth["instance"] == instance)]
    for (form, solver), pts in sub.groupby(["formulation", "solver"], sort=True):
        pts = pts[(pts[y] > 0) & (pts[x] > 0)]
        if pts.empty:
            continue
        style = method_style(form, solver)
        label = method_label(form, solver)
        fit = fits[(fits["formulation"] == form) & (fits["solver"] == solver)]
        if len(fit) and np.isfinite(fit[f"{kind}_exponent"].iloc[0]):
            b, a = fit[f"{kind}_exponent"].iloc[0], fit[f"{kind}_intercept"].iloc[0]
            xs = np.geomspace(pts[x].min(), pts[x].max(), 20)
            ax.loglog(xs, np.exp(a) * xs ** b, color=style["color"], linestyle=style["linestyle"], lw=1)
            label += f" (b={b:.2f})"
        ax.loglog(pts[x], pts[y], linestyle="none", marker=style["marker"], color=style["color"], ms=4, label=label)
    ax.set_xlabel(x)
    ax.set_ylabel("wall time (s)" if kind == "time" else "peak memory (MiB above baseline)")
    ax.set_title(f"{instance}: {kind} vs {x}, profile {profile}")
    size_ticks(ax.xaxis, sub[x][sub[x] > 0])  # ticks at the sizes run
    log_ticks(ax.yaxis)
    ax.grid(True, which="both", alpha=0.3)
    # below the axes, so that no marker or fitted line is hidden under it
    ax.legend(fontsize="xx-small", ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    return ax
