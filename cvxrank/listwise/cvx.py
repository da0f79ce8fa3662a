"""Problem (3) of He et al. declared in CVXPY (exponential cone), for Clarabel, ECOS, SCS, MOSEK.

Each non-zero loss term ``ℓ_ij = log Σ_{k≥j} exp(s_k) − s_j`` (every position
of a list but its last, whose term is identically 0) gets an epigraph
variable ``t_j ≥ log Σ_{k≥j} exp(s_k)``, written as CVXPY writes
``cp.log_sum_exp(s[j:]) <= t_j`` internally, but for all terms in one
vectorised constraint:

.. math::

    \\min_{w, t}\\; \\tfrac12\\|w\\|^2 + \\sum_j \\omega_j (t_j - s_j)
    \\quad\\text{s.t.}\\quad \\sum_{k \\ge j} \\exp(s_k - t_j) \\le 1 \\;\\; \\forall j,
    \\qquad s = Xw,\\; \\omega_j = \\frac{C}{m}\\frac{U(i,j)}{V(i,j)} .

As ``ω > 0``, every ``t_j`` is pushed down onto its log-sum-exp, so the
optimum is that of (3). ``ω`` is one ``cp.Parameter(nonneg=True)`` vector,
so the problem is DPP: :meth:`ListwiseProgram.set_costs` changes ``C`` and
``pCf`` without recompiling.

Size: ``n_features + n_terms`` variables and one exponential cone per pair
``(j, k ≥ j)`` of a term, ``Σ_i (n_i − 1)(n_i + 2)/2`` cones for lists of
``n_i`` documents: about 125 per document at 250 documents a query. Fine for
small data and for checking :func:`~cvxrank.listwise.solve_newton`; use
Newton for anything large.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from cvxrank._groups import positions_in_group, within_query_pairs
from cvxrank._validation import check_tol
from cvxrank.exceptions import SolverError, SolverNotAvailableError
from cvxrank.listwise.loss import ListwiseLayout, _as_layout, check_C, check_pcf
from cvxrank.listwise.result import ListwiseResult, make_result
from cvxrank.solvers.cvxpy_backend import _version, installed_cvxpy_solvers
from cvxrank.solvers.registry import SOLVERS

__all__ = ["EXP_CONE_SOLVERS", "LISTWISE_DEFAULT_OPTIONS", "ListwiseProgram", "build_listwise",
           "solve_listwise_cvxpy"]

#: CVXPY solvers (cvxrank names) that handle the exponential cone (registry field ``exp_cone``).
EXP_CONE_SOLVERS = tuple(s.name for s in SOLVERS.values() if s.exp_cone)

#: Solver defaults for this problem (registry field ``listwise_defaults``), overridden key by key.
LISTWISE_DEFAULT_OPTIONS = {s.name: s.listwise_defaults for s in SOLVERS.values() if s.listwise_defaults}


def _unit_rows(index: np.ndarray, n_cols: int) -> sp.csr_matrix:
    """Sparse 0/1 matrix with a single 1 per row, at column ``index[r]``."""
    r = np.arange(index.size)
    return sp.csr_matrix((np.ones(index.size), (r, index)), shape=(index.size, n_cols))


@dataclass(eq=False)
class ListwiseProgram:
    """The CVXPY form of (3): problem, variables and the cost parameter.

    Attributes
    ----------
    problem : cvxpy.Problem
        DPP (``problem.is_dcp(dpp=True)``).
    w : cvxpy.Variable of shape (n_features,)
    t : cvxpy.Variable of shape (n_terms,)
        Epigraph variables of the log-sum-exps.
    omega : cvxpy.Parameter of shape (n_terms,)
        ``(C/m) U/V`` of each term; set through :meth:`set_costs`.
    layout : ListwiseLayout
    term_rows : ndarray of int64, shape (n_terms,)
        The layout row (position ``j``) of each term.
    n_cones : int
        Exponential cones: ``Σ_i (n_i − 1)(n_i + 2)/2``.
    C : float
    pcf : float or None
    """

    problem: cp.Problem
    w: cp.Variable
    t: cp.Variable
    omega: cp.Parameter
    layout: ListwiseLayout
    term_rows: np.ndarray
    n_cones: int
    C: float
    pcf: float | None

    def set_costs(self, *, C=None, pcf="keep") -> ListwiseProgram:
        """Change ``C`` and/or ``pCf`` (``None``: plain ListMLE) in place; no recompilation."""
        if C is not None:
            self.C = check_C(C)
        if not (isinstance(pcf, str) and pcf == "keep"):
            self.pcf = check_pcf(pcf)
            self.layout = self.layout.with_pcf(self.pcf)
        self.omega.value = self.C / self.layout.n_queries * self.layout.weights[self.term_rows]
        return self

    def solve(self, solver: str = "clarabel", *, tol: float = 1e-6, warm_start: bool = False,
              verbose: bool = False, **options) -> ListwiseResult:
        """Solve with an exponential-cone solver and certify ``w`` by its gradient.

        Parameters
        ----------
        solver : str, default "clarabel"
            One of :data:`EXP_CONE_SOLVERS` that is installed.
        tol : float, default 1e-6
            ``"optimal"`` iff ``½‖∇f(w)‖² / f(w) ≤ tol`` (else a warning).
        warm_start, verbose : bool
            Passed to CVXPY.
        **options
            The solver's own options, over :data:`LISTWISE_DEFAULT_OPTIONS`.

        Raises
        ------
        SolverNotAvailableError
            For a solver without exponential cones or not installed.
        SolverError
            When the solver fails or reports anything but (inaccurately) optimal.
        """
        name = _check_solver(solver)
        check_tol(tol)
        const, package = SOLVERS[name].cvxpy_name, SOLVERS[name].package
        merged = {**LISTWISE_DEFAULT_OPTIONS.get(name, {}), **options}
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
                self.problem.solve(solver=const, warm_start=warm_start, verbose=verbose, **merged)
        except cp.error.SolverError as exc:
            others = [s for s in _installed_exp_cone() if s != name]
            raise SolverError(f"{name} failed on the listwise problem ({exc}); try another solver: "
                              f"{', '.join(others + ['solve_newton'])}") from None
        wall = time.perf_counter() - start
        status = self.problem.status
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE, cp.USER_LIMIT) or self.w.value is None:
            raise SolverError(f"{name} returned status {status!r} on the listwise problem, which is always "
                              "feasible and bounded; try another solver or solve_newton")
        stats = self.problem.solver_stats
        setup = self.problem.compilation_time or 0.0
        solve_time = stats.solve_time if stats.solve_time is not None else max(wall - setup, 0.0)
        return make_result(
            self.layout, self.w.value, C=self.C, tol=float(tol), solver=name, solver_version=_version(package),
            solver_status=status, iterations=stats.num_iters, setup_time=setup, solve_time=solve_time,
            extras={"solver_objective": self.problem.value, "n_cones": self.n_cones, "options": merged,
                    "wall_time": wall},
        )


def _installed_exp_cone() -> list[str]:
    installed = installed_cvxpy_solvers()
    return [s for s in EXP_CONE_SOLVERS if s in installed]


def _check_solver(solver) -> str:
    name = str(solver).lower()
    if name in _installed_exp_cone():
        return name
    if name in EXP_CONE_SOLVERS:
        why = f"{name} handles the exponential cone but is not installed (pip install {SOLVERS[name].package})"
    else:
        why = f"{solver!r} is not a CVXPY solver with exponential cones"
    raise SolverNotAvailableError(f"{why}; installed exponential-cone solvers: {', '.join(_installed_exp_cone())} "
                                  "(or use solve_newton)")


def build_listwise(data, *, C=1.0, pcf=None) -> ListwiseProgram:
    """Declare problem (3) of He et al. in CVXPY (module notes give the form and its size).

    Parameters
    ----------
    data : RankingData or ListwiseLayout
    C : float, default 1.0
    pcf : float ≥ 1 or None, default None
        ``None``: plain ListMLE.

    Returns
    -------
    ListwiseProgram

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> prog = build_listwise(make_ranking(n_queries=2, docs_per_query=4, n_features=2), C=1.0, pcf=2.0)
    >>> prog.problem.is_dcp(dpp=True), prog.n_cones
    (True, 18)
    """
    C = check_C(C)
    layout = _as_layout(data, pcf)
    counts = np.diff(layout.offsets)
    lists = np.repeat(np.arange(counts.size), counts)
    pos = positions_in_group(lists, layout.offsets)
    is_term = pos < counts[lists] - 1
    term_rows = np.flatnonzero(is_term)
    term_of_row = np.cumsum(is_term) - 1
    first, later = within_query_pairs(counts)  # every (j, k > j) of a list; j is never a list's last row
    j = np.concatenate([term_rows, first])
    k = np.concatenate([term_rows, later])
    n_rows, n_terms = layout.n_rows, term_rows.size

    w = cp.Variable(layout.n_features, name="w")
    t = cp.Variable(n_terms, name="t")
    omega = cp.Parameter(n_terms, nonneg=True, name="omega")
    s = layout.X @ w
    cone_args = _unit_rows(k, n_rows) @ s - _unit_rows(term_of_row[j], n_terms) @ t
    sum_per_term = _unit_rows(term_of_row[j], n_terms).T
    constraints = [sum_per_term @ cp.exp(cone_args) <= 1]
    objective = 0.5 * cp.sum_squares(w) + omega @ (t - _unit_rows(term_rows, n_rows) @ s)
    program = ListwiseProgram(cp.Problem(cp.Minimize(objective), constraints), w, t, omega, layout, term_rows,
                              int(j.size), C, layout.pcf)
    return program.set_costs()


def solve_listwise_cvxpy(data, *, C=1.0, pcf=None, solver: str = "clarabel", tol: float = 1e-6,
                         verbose: bool = False, **options) -> ListwiseResult:
    """Build (:func:`build_listwise`) and solve (:meth:`ListwiseProgram.solve`) problem (3) in CVXPY.

    ``setup_time`` includes building the problem and CVXPY's compilation.

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> res = solve_listwise_cvxpy(make_ranking(n_queries=3, docs_per_query=5, n_features=2), C=2.0)
    >>> res.status, res.solver
    ('optimal', 'clarabel')
    """
    _check_solver(solver)
    start = time.perf_counter()
    program = build_listwise(data, C=C, pcf=pcf)
    build_time = time.perf_counter() - start
    result = program.solve(solver, tol=tol, verbose=verbose, **options)
    result.setup_time += build_time
    result.extras["build_time"] = build_time
    return result
