"""Tolerance profiles low / mid / high and what they mean for each solver.

A profile is one accuracy level ``ε``. Every solver is asked for it in its own
option names (:data:`TOLERANCE_OPTIONS`, the one table of the translation),
and cvxrank's own certificate is held to it: a run is reported ``"optimal"``
only when its certified relative duality gap ``(L(w) - L_D(α)) / L(w)`` is at
most ``ε`` (``tol`` of :func:`cvxrank.solve`; weak duality between (14) and
(18)-(19) of Cao et al., SIGIR 2006).

A run of a study is *found* (qpbenchmark's word) when its status is
``"optimal"`` and :func:`passes` holds: the certified relative gap is at most
``ε`` and, when the profile sets them, the residuals are within their limits.
The default profiles check the gap only. The gap bounds what the residuals
would say: ``M`` is 1-strongly convex, so a gap ``G`` of (14) gives
``‖w - w*‖ ≤ sqrt(2G)`` and ``‖w - Dᵀα‖ ≤ 2 sqrt(2G)``; and cvxrank evaluates
every objective at ``w`` with the exact slacks ``ξ = [1 - <w, d_i>]_+``, so a
backend's violation of its own constraints (the ``primal_residual`` column)
never enters the reported solution. Both residuals are reported in every row;
a :class:`Profile` with ``max_primal_residual`` / ``max_dual_residual``
checks them too (qpbenchmark's stricter reading).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from cvxrank._validation import check_tol
from cvxrank.exceptions import ValidationError
from cvxrank.solvers.registry import SOLVERS

__all__ = ["PROFILES", "TOLERANCE_OPTIONS", "Profile", "get_profile", "options_table", "passes", "solver_options"]


@dataclass(frozen=True)
class Profile:
    """An accuracy level.

    Attributes
    ----------
    name : str
    tol : float
        ``ε``: the solver tolerances of :data:`TOLERANCE_OPTIONS` and the
        certified relative gap a run must reach.
    max_primal_residual, max_dual_residual : float or None
        Extra checks on the ``primal_residual`` / ``dual_residual`` columns
        (None: reported, not checked).
    """

    name: str
    tol: float
    max_primal_residual: float | None = None
    max_dual_residual: float | None = None

    def __post_init__(self):
        check_tol(self.tol, f"profile {self.name!r}: tol")


#: The three profiles of the study (qpbenchmark's low / mid / high accuracy).
PROFILES = {
    "low": Profile("low", 1e-3),
    "mid": Profile("mid", 1e-6),
    "high": Profile("high", 1e-9),
}

#: Solver -> its option names that are set to ``ε``: a view of the solver registry
#: (:data:`cvxrank.solvers.registry.SOLVERS`, field ``tolerance_options``).
#: Every solver also gets cvxrank's ``tol=ε`` (the certificate's threshold,
#: and the stopping rule of native solvers, which have no other tolerance).
#: A solver missing here (a new native solver, a CVXPY solver cvxrank does
#: not know) gets ``tol`` only.
TOLERANCE_OPTIONS = {name: spec.tolerance_options for name, spec in SOLVERS.items()}


def get_profile(profile) -> Profile:
    """A :class:`Profile` from its name (``"low"``, ``"mid"``, ``"high"``) or itself."""
    if isinstance(profile, Profile):
        return profile
    if profile not in PROFILES:
        raise ValidationError(f"unknown profile {profile!r}; choose from {', '.join(PROFILES)}")
    return PROFILES[profile]


def solver_options(solver: str, profile) -> dict:
    """Keyword arguments of :func:`cvxrank.solve` for ``solver`` at ``profile``.

    Examples
    --------
    >>> solver_options("clarabel", "mid")
    {'tol': 1e-06, 'tol_gap_abs': 1e-06, 'tol_gap_rel': 1e-06, 'tol_feas': 1e-06}
    >>> solver_options("subgradient", "low")
    {'tol': 0.001}
    """
    eps = get_profile(profile).tol
    return {"tol": eps, **{name: eps for name in TOLERANCE_OPTIONS.get(str(solver).lower(), ())}}


def _within(value, limit) -> bool:
    return limit is None or (value is not None and not math.isnan(value) and value <= limit)


def passes(profile, *, status: str, relative_gap: float, primal_residual: float = math.nan,
           dual_residual: float = math.nan) -> bool:
    """The profile's checks on one run: status ``"optimal"``, gap and (optional) residual limits.

    Examples
    --------
    >>> passes("mid", status="optimal", relative_gap=3e-7)
    True
    >>> passes("high", status="optimal", relative_gap=3e-7)
    False
    """
    p = get_profile(profile)
    return (status == "optimal" and _within(relative_gap, p.tol)
            and _within(primal_residual, p.max_primal_residual) and _within(dual_residual, p.max_dual_residual))


def options_table(solvers, profiles=tuple(PROFILES)) -> pd.DataFrame:
    """Solver x profile table of the solver's own options each run receives (for reports).

    cvxrank's ``tol`` is left out: it is no solver option but the certified gap a run must reach
    (and the native solvers' stopping rule); a solver with no tolerance option of its own shows
    ``(cvxrank's tol only)``.

    Examples
    --------
    >>> options_table(["ecos", "subgradient"], ["mid"])["mid"].tolist()
    ['abstol=1e-06, reltol=1e-06, feastol=1e-06', "(cvxrank's tol only)"]
    """
    rows = {}
    for s in solvers:
        rows[s] = {get_profile(p).name: ", ".join(f"{k}={v:g}" for k, v in solver_options(s, p).items() if k != "tol")
                   or "(cvxrank's tol only)" for p in profiles}
    return pd.DataFrame.from_dict(rows, orient="index")
