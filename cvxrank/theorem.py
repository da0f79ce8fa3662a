"""Numerical verification of Theorem 1 (SIGIR 2006) and Proposition 1 (ECML 2006).

Theorem 1 of Cao et al. (2006): the weighted hinge problem (9) and the QP
(14) with ``C_i = τ_k(i) μ_q(i) / (2λ)`` have the same minimiser, and
``L(w) = 2λ M(w)`` at every ``w`` when ``ξ_i = [1 - z_i <w, d_i>]_+``.
Proposition 1 of Xu et al. (2006) is the case ``μ = 1``; Ranking SVM's
equivalence of (6) and (7) is ``τ = μ = 1``.

:func:`verify_theorem1` solves one :class:`~cvxrank.problem.RankingProblem`
in several formulations (the hinge form, the QP and its dual (18)-(19)) with
several solvers, and checks each solution against its own certificate:

* **identity** — ``L(w) = 2λ M(w)`` at the row's own ``w``, to rounding
  (``|L − 2λM| ≤ 64 ε L``);
* **same minimiser** — ``‖w − w_ref‖ ≤ b(row) + b(ref)``, where
  ``b = sqrt(2 gap_M)`` is the distance to ``w*`` that each certificate
  proves (``M`` is 1-strongly convex);
* **same optimum** — ``|L(w) − L(w_ref)| ≤ max(gap_L(row), gap_L(ref))``.

A row whose solver could not certify its tolerance within its limits is
"not certified" and counts neither way: it proves nothing, so it can
disprove nothing. The verification holds when every certified row passes and
at least one does. No tolerance of the check is tighter than the
certificates prove.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from cvxrank.costs import Costs, check_lam
from cvxrank.data import RankingData
from cvxrank.exceptions import InaccurateSolutionWarning, SolverError, ValidationError
from cvxrank.formulations import FORMULATIONS, build
from cvxrank.objectives import hinge_objective, qp_objective
from cvxrank.pairs import PairSet, make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import available_solvers, solve
from cvxrank.solvers.cvxpy_backend import installed_cvxpy_solvers
from cvxrank.solvers.registry import get_spec, time_limit_options

__all__ = ["COLUMNS", "DEFAULT_TIME_LIMIT", "ROUNDING", "verify_theorem1", "verdict"]

#: Seconds each solver may run (its own time-limit option; CVXPY's compilation is not limited).
DEFAULT_TIME_LIMIT = 10.0

#: Relative float64 rounding allowed for ``L = 2λM`` at one ``w`` (the two sums differ in rounding only).
ROUNDING = 64 * np.finfo(np.float64).eps

#: Columns of the table :func:`verify_theorem1` returns, in order.
COLUMNS = ["formulation", "solver", "stages", "status", "verdict", "L", "M", "identity_error", "relative_gap",
           "gap_M", "w_distance", "w_bound", "objective_difference", "objective_bound", "certificate", "time", "note"]


def verdict(row: dict, ref: dict) -> str:
    """``"pass"``, ``"FAIL"`` or ``"not certified"`` for a solved row against the reference row.

    Fills ``row`` with ``w_distance``, ``w_bound``, ``objective_difference`` and ``objective_bound``.
    """
    row["w_distance"] = float(np.linalg.norm(row["w"] - ref["w"]))
    row["w_bound"] = float(row["distance_bound"] + ref["distance_bound"])
    row["objective_difference"] = abs(row["L"] - ref["L"])
    row["objective_bound"] = max(row["gap_L"], ref["gap_L"]) + ROUNDING * max(row["L"], ref["L"])
    if row["status"] != "optimal":
        return "not certified"
    ok = (row["identity_error"] <= ROUNDING and row["w_distance"] <= row["w_bound"]
          and row["objective_difference"] <= row["objective_bound"])
    return "pass" if ok else "FAIL"


def _run(problem, form, solver, time_limit):
    """Solve one row; return the row dict (with ``w`` and the certificate's numbers) or an error row."""
    start = time.perf_counter()
    spec = get_spec(solver)
    options = time_limit_options(solver, time_limit) if time_limit is not None else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
            target = problem if spec.kind == "native" else build(problem, formulation=form)
            res = solve(target, solver, **options)
    except SolverError as exc:
        return {"formulation": form, "solver": solver, "status": "error", "verdict": "error",
                "note": " ".join(str(exc).split()), "time": time.perf_counter() - start}
    pairs, w = problem.pairs, res.w
    L = hinge_objective(pairs, w, problem.weights, problem.lam)
    M = qp_objective(pairs, w, problem.C)
    return {
        "formulation": res.formulation if spec.kind == "native" else form, "solver": solver,
        "stages": "+".join(res.stages), "status": res.status, "L": L, "M": M,
        "identity_error": abs(L - 2.0 * problem.lam * M) / L, "relative_gap": res.relative_gap,
        "gap_M": res.gap_M, "gap_L": res.gap_L, "distance_bound": res.distance_bound,
        "certificate": res.certificate, "time": time.perf_counter() - start, "w": w,
        "note": "" if res.status == "optimal" else
        f"certified gap {res.relative_gap:.1e} > tol {res.tol:.0e} within the limits ({res.solver_status})",
    }


def verify_theorem1(data, *, tau=None, mu=None, costs: Costs | None = None, lam: float = 0.1, solvers=None,
                    formulations=("primal", "dual"), time_limit: float | None = DEFAULT_TIME_LIMIT,
                    reference: str = "clarabel", on_row=None) -> pd.DataFrame:
    """Solve the hinge form, the QP and its dual of one problem; check Theorem 1 on every solution.

    Parameters
    ----------
    data : RankingData, PairSet or RankingProblem
        A ranking problem brings its own costs and ``λ`` (then ``tau``,
        ``mu``, ``costs`` and ``lam`` must not be given).
    tau, mu, costs : optional
        The costs (:class:`~cvxrank.costs.Costs`); default all ones (then
        this checks Ranking SVM's (6) = (7); with ``tau`` only, Proposition 1).
    lam : float, default 0.1
        ``λ`` of (9).
    solvers : sequence of str, optional
        Default: every installed CVXPY solver among clarabel, ecos, osqp, scs,
        plus the native ``subgradient`` (pure subgradient steps, certified to
        1e-4). Native solvers solve the problem directly (one row each); CVXPY
        solvers one row per formulation.
    formulations : sequence of str, default ("primal", "dual")
        Formulations given to the CVXPY solvers, from ``primal``, ``lifted``,
        ``dual``, ``hinge``.
    time_limit : float or None, default 10
        Seconds per solver run, through each solver's own option (ECOS has
        none; CVXPY's compilation is not limited). A run stopped there is
        "not certified".
    reference : str, default "clarabel"
        Solver of the reference solution (automatic formulation, ``tol``
        1e-8); its certified distance bound enters every row's check.
    on_row : callable, optional
        Called with each finished row (a dict with the table's columns), in
        order; the reference first, as ``formulation`` ``"reference"``.

    Returns
    -------
    pandas.DataFrame
        One row per (formulation, solver), columns :data:`COLUMNS`:
        ``verdict`` (``"pass"``, ``"FAIL"``, ``"not certified"``, ``"error"``);
        ``L`` and ``M`` at the row's ``w``; ``identity_error`` ``|L − 2λM|/L``;
        the certified ``relative_gap`` and ``gap_M``; ``w_distance``
        ``‖w − w_ref‖`` against ``w_bound`` ``b(row) + b(ref)``;
        ``objective_difference`` ``|L − L_ref|`` against ``objective_bound``.
        ``df.attrs`` holds ``lam``, ``n_pairs``, the reference and
        ``verified`` (every certified row passes, and at least one is certified).

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> df = verify_theorem1(make_ranking(n_queries=4, random_state=0), lam=0.1,
    ...                      solvers=["clarabel", "subgradient"])
    >>> df.attrs["verified"], df["verdict"].tolist()
    (True, ['pass', 'pass', 'pass'])
    """
    if isinstance(data, RankingProblem):
        if tau is not None or mu is not None or costs is not None:
            raise ValidationError("a RankingProblem brings its own costs: do not give tau, mu or costs")
        problem = data
    else:
        if isinstance(data, RankingData):
            pairs = make_pairs(data)
        elif isinstance(data, PairSet):
            pairs = data
        else:
            raise ValidationError(f"data must be RankingData, PairSet or RankingProblem, got {type(data).__name__}")
        problem = RankingProblem(pairs, costs=costs, tau=tau, mu=mu, lam=check_lam(lam))
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not time_limit > 0 or not np.isfinite(time_limit)):
        raise ValidationError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    if solvers is None:
        solvers = [s for s in ("clarabel", "ecos", "osqp", "scs") if s in installed_cvxpy_solvers()] + ["subgradient"]
    solvers = [str(s).lower() for s in solvers]
    missing = [s for s in solvers if s not in available_solvers()]
    if missing:
        raise ValidationError(f"solvers not available: {missing}; installed: {', '.join(available_solvers())}")
    if len(set(solvers)) != len(solvers):
        raise ValidationError(f"a solver is named twice in {solvers}")
    bad = [f for f in formulations if f not in FORMULATIONS]
    if bad:
        raise ValidationError(f"unknown formulations {bad}; choose from {', '.join(FORMULATIONS)}")
    if reference not in installed_cvxpy_solvers():
        raise ValidationError(f"reference solver {reference!r} is not an installed CVXPY solver")

    # The reference: a tight certified solution; its distance bound enters every check.
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        ref_res = solve(problem, reference, tol=1e-8)
    if ref_res.status != "optimal":
        raise SolverError(f"the reference solve ({reference}) did not certify: relative gap "
                          f"{ref_res.relative_gap:.1e}; try reference='ecos'")
    ref = {"w": ref_res.w, "L": ref_res.hinge_objective, "gap_L": ref_res.gap_L,
           "distance_bound": ref_res.distance_bound}
    if on_row is not None:
        on_row({"formulation": "reference", "solver": reference, "stages": "+".join(ref_res.stages),
                "status": ref_res.status, "verdict": "", "L": ref_res.hinge_objective, "M": ref_res.qp_objective,
                "relative_gap": ref_res.relative_gap, "gap_M": ref_res.gap_M, "w_bound": ref_res.distance_bound,
                "certificate": ref_res.certificate, "time": time.perf_counter() - start, "note": ""})

    rows = []
    for solver in solvers:
        forms = [None] if get_spec(solver).kind == "native" else list(formulations)
        for form in forms:
            row = _run(problem, form, solver, time_limit)
            if row["status"] != "error":
                row["verdict"] = verdict(row, ref)
                if row["verdict"] == "FAIL":
                    row["note"] = "the certificate and the check disagree: please report this as a bug"
            rows.append(row)
            if on_row is not None:
                on_row({k: row.get(k) for k in COLUMNS})
    df = pd.DataFrame(rows).reindex(columns=COLUMNS)
    certified = df["verdict"].isin(["pass", "FAIL"])
    df.attrs.update({
        "lam": problem.lam, "n_pairs": problem.n_pairs, "n_features": problem.n_features,
        "reference": f"{ref_res.formulation}/{reference}", "reference_relative_gap": ref_res.relative_gap,
        "reference_distance_bound": ref_res.distance_bound, "time_limit": time_limit,
        "n_certified": int(certified.sum()), "n_passed": int((df["verdict"] == "pass").sum()),
        "verified": bool(certified.any() and (df.loc[certified, "verdict"] == "pass").all()),
    })
    return df
