"""Numerical verification of Theorem 1 (SIGIR 2006) and Proposition 1 (ECML 2006).

Theorem 1 of Cao et al. (2006): the weighted hinge problem (9) and the QP
(14) with ``C_i = τ_k(i) μ_q(i) / (2λ)`` have the same minimiser, and
``L(w) = 2λ M(w)`` at every ``w`` when ``ξ_i = [1 - z_i <w, d_i>]_+``.
Proposition 1 of Xu et al. (2006) is the case ``μ = 1``; Ranking SVM's
equivalence of (6) and (7) is ``τ = μ = 1``. :func:`verify_theorem1` solves
the hinge form, the primal QP and its dual (18)-(19) with several solvers and
checks all of it.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from cvxrank.costs import check_lam, pair_weights, theorem1_C
from cvxrank.data import RankingData
from cvxrank.exceptions import InaccurateSolutionWarning, SolverError, ValidationError
from cvxrank.formulations import FORMULATIONS, build
from cvxrank.objectives import hinge_objective, qp_objective
from cvxrank.pairs import PairSet, make_pairs
from cvxrank.solvers import NATIVE_SOLVERS, available_solvers, solve
from cvxrank.solvers.cvxpy_backend import installed_cvxpy_solvers

__all__ = ["verify_theorem1", "DEFAULT_TOLERANCES"]

#: Pass/fail thresholds of :func:`verify_theorem1`.
DEFAULT_TOLERANCES = {
    "w": 1e-5,  # relative distance of w to the reference
    "gap": 1e-6,  # certified relative duality gap
    "objective": 1e-6,  # solver's optimum vs the reference optimum, relative, in L scale
    "identity": 1e-12,  # |L(w) - 2λ M(w)| / L(w) at the row's own w
}


def verify_theorem1(data, *, tau=None, mu=None, lam: float = 0.1, solvers=None,
                    formulations=("primal", "dual"), tolerances=None) -> pd.DataFrame:
    """Solve the hinge form, the QP and its dual; check Theorem 1 on the results.

    Parameters
    ----------
    data : RankingData or PairSet
    tau : mapping, optional
        ``{(higher grade, lower grade): τ}``; default all ones.
    mu : None, "balanced" or mapping, optional
        Query weights; default all ones (then this checks Proposition 1).
    lam : float, default 0.1
        ``λ`` of (9).
    solvers : sequence of str, optional
        Default: every installed CVXPY solver among clarabel, ecos, osqp, scs,
        plus the native ``subgradient``. Native solvers run on the hinge form
        only (that is the form they solve); CVXPY solvers on each of
        ``formulations``.
    formulations : sequence of str, default ("primal", "dual")
        Formulations given to the CVXPY solvers, from ``primal``, ``lifted``,
        ``dual``, ``hinge``.
    tolerances : dict, optional
        Overrides of :data:`DEFAULT_TOLERANCES`.

    Returns
    -------
    pandas.DataFrame
        One row per (formulation, solver) with columns ``formulation``,
        ``solver``, ``status``, ``w_error`` (relative distance of ``w`` to the
        reference ``w``: the row with the smallest certified gap),
        ``w_bound`` (what the row's gap proves: ``‖w - w*‖ / ‖w_ref‖ ≤
        sqrt(2 G)/‖w_ref‖`` with ``G`` the gap of (14), since ``M`` is
        1-strongly convex), ``L`` (hinge objective (9) at the row's ``w``), ``M`` (QP objective
        (14) at the row's ``w``), ``identity_error`` (``|L - 2λM| / L``),
        ``objective_error`` (the solver's own optimum, converted to the scale
        of (9), against ``L`` at the reference ``w``), ``relative_gap``
        (certified), ``time`` (seconds, setup + solve) and ``passed``. A
        solver that fails gets a row with status ``"error"``. ``df.attrs``
        holds ``lam``, ``n_pairs``, the tolerances and the reference row.

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> df = verify_theorem1(make_ranking(n_queries=4, random_state=0), lam=0.1,
    ...                      solvers=["clarabel", "subgradient"])
    >>> bool(df["passed"].all())
    True
    """
    lam = check_lam(lam)
    tols = {**DEFAULT_TOLERANCES, **(tolerances or {})}
    unknown_tols = set(tols) - set(DEFAULT_TOLERANCES)
    if unknown_tols:
        raise ValidationError(f"unknown tolerance names {sorted(unknown_tols)}; known: {sorted(DEFAULT_TOLERANCES)}")
    if isinstance(data, RankingData):
        pairs = make_pairs(data)
    elif isinstance(data, PairSet):
        pairs = data
    else:
        raise ValidationError(f"data must be RankingData or PairSet, got {type(data).__name__}")
    if solvers is None:
        solvers = [s for s in ("clarabel", "ecos", "osqp", "scs") if s in installed_cvxpy_solvers()] + ["subgradient"]
    solvers = [str(s).lower() for s in solvers]
    missing = [s for s in solvers if s not in available_solvers()]
    if missing:
        raise ValidationError(f"solvers not available: {missing}; installed: {', '.join(available_solvers())}")
    bad = [f for f in formulations if f not in FORMULATIONS]
    if bad:
        raise ValidationError(f"unknown formulations {bad}; choose from {', '.join(FORMULATIONS)}")

    weights = pair_weights(pairs, tau=tau, mu=mu)
    C = theorem1_C(weights, lam)
    runs = []
    for solver in solvers:
        forms = ["hinge"] if solver in NATIVE_SOLVERS else list(formulations)
        for form in forms:
            runs.append((form, solver))

    rows, results = [], []
    for form, solver in runs:
        problem = build(pairs, C, weights=weights, lam=lam, formulation=form)
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InaccurateSolutionWarning)
                res = solve(problem, solver)
        except SolverError as exc:
            rows.append({"formulation": form, "solver": solver, "status": "error", "note": str(exc),
                         "time": time.perf_counter() - start})
            results.append(None)
            continue
        # The solver's own optimum in the scale of (9): the QP forms have λ = 1/2.
        reported = res.solver_objective if np.isfinite(res.solver_objective) else res.objective
        if form != "hinge":
            reported = 2.0 * lam * reported
        L = hinge_objective(pairs, res.w, weights, lam)
        M = qp_objective(pairs, res.w, C)
        rows.append({
            "formulation": form, "solver": solver, "status": res.status, "L": L, "M": M,
            "identity_error": abs(L - 2.0 * lam * M) / L, "reported_L": reported,
            "relative_gap": res.relative_gap, "time": res.setup_time + res.solve_time, "note": "",
        })
        results.append(res)

    solved = [i for i, r in enumerate(results) if r is not None]
    if not solved:
        raise SolverError("every solver failed; see cvxrank.available_solvers()")
    certified = [i for i in solved if results[i].status == "optimal"] or solved
    ref = min(certified, key=lambda i: results[i].relative_gap)
    w_ref = results[ref].w
    L_ref = rows[ref]["L"]
    norm = max(np.linalg.norm(w_ref), 1e-300)
    for i in solved:
        row = rows[i]
        row["w_error"] = float(np.linalg.norm(results[i].w - w_ref) / norm)
        # M is 1-strongly convex: ½‖w - w*‖² ≤ M(w) - M(w*) ≤ gap (QP scale).
        gap_qp = max(results[i].duality_gap, 0.0) / (2.0 * lam)
        row["w_bound"] = float(np.sqrt(2.0 * gap_qp) / norm)
        row["objective_error"] = abs(row.pop("reported_L") - L_ref) / L_ref
        row["passed"] = bool(
            row["status"] == "optimal"
            and row["w_error"] <= tols["w"]
            and row["relative_gap"] <= tols["gap"]
            and row["objective_error"] <= tols["objective"]
            and row["identity_error"] <= tols["identity"]
        )
    for row in rows:
        row.setdefault("passed", False)
    columns = ["formulation", "solver", "status", "w_error", "w_bound", "L", "M", "identity_error", "objective_error",
               "relative_gap", "time", "passed", "note"]
    df = pd.DataFrame(rows).reindex(columns=columns)
    df.attrs.update({
        "lam": lam, "n_pairs": pairs.n_pairs, "n_features": pairs.n_features, "tolerances": tols,
        "reference": f"{rows[ref]['formulation']}/{rows[ref]['solver']}",
    })
    return df
