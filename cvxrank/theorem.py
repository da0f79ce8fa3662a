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

Every solver runs within a limit on its work, never on the clock: an
iteration (or oracle-call) cap, :attr:`SolverSpec.work_limit
<cvxrank.solvers.registry.SolverSpec>` of the registry. A row whose solver
could not certify its tolerance within that cap is "not certified" and counts
neither way: it proves nothing, so it can disprove nothing. The same data
give the same verdicts on a quiet or a busy machine. A wall-clock limit is
opt-in (``time_limit``), a safety net: a row it stops is reported as
``"time limit"``, not judged. The verification holds when every certified
row passes and at least one does. No tolerance of the check is tighter than
the certificates prove.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from contextlib import contextmanager

import numpy as np
import pandas as pd

from cvxrank._validation import POSITIVE_INT, check, check_time_limit
from cvxrank.costs import DEFAULT_LAM, Costs, check_lam
from cvxrank.data import RankingData
from cvxrank.exceptions import CvxrankError, InaccurateSolutionWarning, SolverError, ValidationError
from cvxrank.formulations import FORMULATIONS, build, choose_formulation
from cvxrank.objectives import hinge_objective, qp_objective
from cvxrank.pairs import PairSet, make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import available_solvers, solve
from cvxrank.solvers.cvxpy_backend import installed_cvxpy_solvers
from cvxrank.solvers.registry import get_spec

__all__ = ["COLUMNS", "DEFAULT_FORMULATIONS", "DEFAULT_SOLVERS", "ROUNDING", "TIME_LIMIT_NOTE", "plan_rows",
           "verdict", "verify_theorem1", "work_unit"]

#: The solvers :func:`verify_theorem1` runs by default (the CVXPY ones when installed). Each certifies
#: its rows within its work limit on the LightGBM training file and on generated data
#: (measurements: docs/solvers.md, "Theorem 1, verified"). OSQP is not among them: the one form it
#: certifies on every problem tried (``primal``) takes it about 20,000 iterations on the LightGBM
#: file, slower than all the other rows together; the pure subgradient method's O(1/k) steps are
#: far from 1e-4 there. Both can be asked for (``solvers=``).
DEFAULT_SOLVERS = ("clarabel", "ecos", "scs", "cutting_plane")

#: The formulations each CVXPY solver gets unless told otherwise (``formulations=``): the forms on
#: which it certifies within its work limit. A CVXPY solver not listed gets ``("primal", "dual")``.
#: Native solvers solve the problem in their own form (one row).
DEFAULT_FORMULATIONS = {
    "clarabel": ("primal", "dual"),
    # ECOS stops on the dual form at its own tolerance with duals that prove only 1e-6 to 5e-5 on some
    # small problems (12 of 72 generated ones): the hinge form (9) instead, which it certifies everywhere.
    "ecos": ("primal", "hinge"),
    # SCS certifies every form in a few hundred to 2,300 iterations; the dense primal costs it the
    # most per iteration, the lifted form the least.
    "scs": ("lifted", "dual"),
    # OSQP's ADMM stalls on the lifted and dual forms of weighted problems; the primal certifies.
    "osqp": ("primal",),
}

#: Formulations of a CVXPY solver without an entry in :data:`DEFAULT_FORMULATIONS`.
OTHER_FORMULATIONS = ("primal", "dual")

#: What a native solver's work limit counts (the others count iterations).
#: The note of a row the opt-in wall-clock limit stopped.
TIME_LIMIT_NOTE = "time limit hit: a safety net, not a verdict"

#: Relative float64 rounding allowed for ``L = 2λM`` at one ``w`` (the two sums differ in rounding only).
ROUNDING = 64 * np.finfo(np.float64).eps

#: Columns of the table :func:`verify_theorem1` returns, in order.
COLUMNS = ["formulation", "solver", "stages", "status", "verdict", "work", "work_limit", "L", "M", "identity_error",
           "relative_gap", "gap_M", "w_distance", "w_bound", "objective_difference", "objective_bound", "certificate",
           "time", "note"]


def work_unit(solver: str) -> str:
    """What ``solver``'s work limit counts (the registry's ``SolverSpec.work_unit``): ``"iterations"``,
    ``"oracle calls"`` or ``"Newton steps"``; ``"iterations"`` for a name the registry does not know."""
    try:
        return get_spec(solver).work_unit
    except CvxrankError:
        return "iterations"


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


def _check_limit(value, name, *, integer):
    return check(name, value, POSITIVE_INT.or_none()) if integer else check_time_limit(value, name)


def plan_rows(solvers=None, formulations=None, work_limits=None) -> list[dict]:
    """The rows :func:`verify_theorem1` solves, in order, checked: ``{"solver", "formulation", "work_limit"}``.

    ``formulation`` is None for a native solver (it solves the problem in its own form). The
    arguments are those of :func:`verify_theorem1`.
    """
    if solvers is None:
        installed = installed_cvxpy_solvers()
        solvers = [s for s in DEFAULT_SOLVERS if get_spec(s).kind == "native" or s in installed]
    if isinstance(solvers, str):
        raise ValidationError(f"solvers must be a sequence of names, got the string {solvers!r}")
    solvers = [str(s).lower() for s in solvers]
    missing = [s for s in solvers if s not in available_solvers()]
    if missing:
        raise ValidationError(f"solvers not available: {missing}; installed: {', '.join(available_solvers())}")
    if len(set(solvers)) != len(solvers):
        raise ValidationError(f"a solver is named twice in {solvers}")
    if formulations is None:
        per_solver = {}
    elif isinstance(formulations, dict):
        per_solver = {str(k).lower(): tuple(v) for k, v in formulations.items()}
        stray = [k for k in per_solver if k not in solvers]
        if stray:
            raise ValidationError(f"formulations given for solvers that are not run: {stray}")
    elif isinstance(formulations, str):
        raise ValidationError(f"formulations must be a sequence of names, got the string {formulations!r}")
    else:
        per_solver = {s: tuple(formulations) for s in solvers}
    named = {f for forms in per_solver.values() for f in forms}
    bad = sorted(str(f) for f in named if f not in FORMULATIONS)
    if bad:
        raise ValidationError(f"unknown formulations {bad}; choose from {', '.join(FORMULATIONS)}")
    limits = {} if work_limits is None else {str(k).lower(): v for k, v in dict(work_limits).items()}
    stray = [k for k in limits if k not in solvers]
    if stray:
        raise ValidationError(f"work limits given for solvers that are not run: {stray}")
    rows = []
    for solver in solvers:
        spec = get_spec(solver)
        limit = _check_limit(limits[solver], f"the work limit of {solver}", integer=True) if solver in limits \
            else spec.work_limit
        if spec.kind == "native":
            forms = [None]
        else:
            forms = list(per_solver.get(solver, DEFAULT_FORMULATIONS.get(solver, OTHER_FORMULATIONS)))
            if not forms:
                raise ValidationError(f"no formulation given for {solver}")
        rows += [{"solver": solver, "formulation": form, "work_limit": limit} for form in forms]
    return rows


def _limit_options(solver, work_limit, time_limit) -> dict:
    spec = get_spec(solver)
    options = spec.max_iter(work_limit) if work_limit is not None else {}
    if time_limit is not None:
        options.update(spec.time_limit(time_limit))
    return options


def _work_done(res):
    """The work ``res`` did, in its solver's work unit (:meth:`SolverSpec.work_done`)."""
    return get_spec(res.solver).work_done(res)


def _time_limit_hit(res, work, work_limit, time_limit, elapsed) -> bool:
    """Whether the opt-in wall-clock limit, not the work limit or the certificate, ended the run."""
    return (time_limit is not None and res.status != "optimal" and elapsed >= time_limit
            and get_spec(res.solver).time_limit_option is not None
            and (work_limit is None or work is None or work < work_limit))


def _run(problem, form, solver, work_limit, time_limit):
    """Solve one row; return the row dict (with ``w`` and the certificate's numbers) or an error row."""
    start = time.perf_counter()
    spec = get_spec(solver)
    options = _limit_options(solver, work_limit, time_limit)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
            target = problem if spec.kind == "native" else build(problem, formulation=form)
            res = solve(target, solver, **options)
    except CvxrankError as exc:  # a solver failure, a refusal (per-pair weights for cutting_plane), a budget
        return {"formulation": form or "", "solver": solver, "status": "error", "verdict": "error",
                "work_limit": work_limit, "note": " ".join(str(exc).split()), "time": time.perf_counter() - start}
    elapsed = time.perf_counter() - start
    pairs, w = problem.pairs, res.w
    L = hinge_objective(pairs, w, problem.weights, problem.lam)
    M = qp_objective(pairs, w, problem.C)
    work = _work_done(res)
    row = {
        "formulation": res.formulation if spec.kind == "native" else form, "solver": solver,
        "stages": "+".join(res.stages), "status": res.status, "work": work, "work_limit": work_limit,
        "L": L, "M": M, "identity_error": abs(L - 2.0 * problem.lam * M) / L, "relative_gap": res.relative_gap,
        "gap_M": res.gap_M, "gap_L": res.gap_L, "distance_bound": res.distance_bound,
        "certificate": res.certificate.kind, "time": elapsed, "w": w, "note": "",
        "time_limit_hit": _time_limit_hit(res, work, work_limit, time_limit, elapsed),
    }
    if res.status != "optimal":
        unit = work_unit(solver)
        within = f"{work} {unit}" if work is not None else "its run"
        if row["time_limit_hit"]:
            row["note"] = (f"{TIME_LIMIT_NOTE} (stopped at {time_limit:g} s after {within}, certified gap "
                           f"{res.relative_gap:.1e} > tol {res.tol:.0e})")
        else:
            cap = f"its work limit of {work_limit} {unit}" if work_limit is not None else "its own iteration cap"
            row["note"] = (f"certified gap {res.relative_gap:.1e} > tol {res.tol:.0e} after {within}, within "
                           f"{cap} ({res.solver_status})")
    return row


@contextmanager
def _progress_bar(total: int, enabled: bool | None):
    """A tqdm bar over the rows on stderr, its clock ticking while a row solves (None: when stderr is a terminal)."""
    if enabled is None:
        enabled = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if not enabled:
        yield None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="verify", unit="row", file=sys.stderr, leave=False, dynamic_ncols=True)
    stop = threading.Event()

    def tick():  # the solvers report nothing while they run: refresh the elapsed time once a second
        while not stop.wait(1.0):
            bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield bar
    finally:
        stop.set()
        thread.join()
        bar.close()


def _check_reference_fits(problem: RankingProblem) -> None:
    """Refuse, from counts and before any pair is formed, a problem whose reference solve (a CVXPY
    solver on the automatic formulation) would exceed the memory budget."""
    problem.check_formulation(
        choose_formulation(problem),
        advice="the reference solve compiles the whole problem with CVXPY, so verify Theorem 1 on fewer or "
               "shorter queries (RankingData.select_queries), or raise the budget")


def verify_theorem1(data, *, tau=None, mu=None, costs: Costs | None = None, lam: float = DEFAULT_LAM, solvers=None,
                    formulations=None, work_limits=None, time_limit: float | None = None,
                    reference: str = "clarabel", on_row=None, progress: bool | None = False) -> pd.DataFrame:
    """Solve the hinge form, the QP and its dual of one problem; check Theorem 1 on every solution.

    Every solver runs within a limit on its work (iterations, or oracle calls), never on the
    clock, so the verdicts do not depend on the machine's speed or load.

    Parameters
    ----------
    data : RankingData, PairSet or RankingProblem
        A ranking problem brings its own costs and ``λ`` (then ``tau``,
        ``mu``, ``costs`` and ``lam`` must not be given).
    tau, mu, costs : optional
        The costs (:class:`~cvxrank.costs.Costs`); default all ones (then
        this checks Ranking SVM's (6) = (7); with ``tau`` only, Proposition 1).
    lam : float, default 0.5 (:data:`cvxrank.costs.DEFAULT_LAM`)
        ``λ`` of (9).
    solvers : sequence of str, optional
        Default :data:`DEFAULT_SOLVERS`: the installed ones of clarabel, ecos
        and scs, and the native pair-free ``cutting_plane`` (it solves (9)
        directly). ``osqp``, ``subgradient`` and any other installed solver
        can be named. Native solvers solve the problem in their own form (one
        row each); CVXPY solvers one row per formulation.
    formulations : sequence of str or dict, optional
        Formulations given to the CVXPY solvers, from ``primal``, ``lifted``,
        ``dual``, ``hinge``: a sequence for every CVXPY solver, or a dict
        ``{solver: formulations}`` for some. Default
        :data:`DEFAULT_FORMULATIONS`: each solver's forms on which it
        certifies (clarabel ``primal`` and ``dual``, ecos ``primal`` and
        ``hinge``, scs ``lifted`` and ``dual``, osqp ``primal``); other CVXPY
        solvers ``primal`` and ``dual``.
    work_limits : dict, optional
        ``{solver: n}``: the iteration (``cutting_plane``: oracle-call) cap of
        a solver, over the registry's :attr:`~cvxrank.solvers.registry.SolverSpec.work_limit`
        (a solver without one runs to its own default cap). The reference gets its solver's.
    time_limit : float, optional
        Seconds per solver run, through each solver's own option: an opt-in
        safety net (ECOS has no such option; CVXPY's compilation is not
        limited). A row it stops is reported with verdict ``"time limit"``
        (:data:`TIME_LIMIT_NOTE`) and counts neither way.
    reference : str, default "clarabel"
        Solver of the reference solution (automatic formulation, ``tol``
        1e-8); its certified distance bound enters every row's check.
    on_row : callable, optional
        Called with each finished row (a dict with the table's columns), in
        order; the reference first, as ``formulation`` ``"reference"``.
    progress : bool or None, default False
        Show a progress bar over the rows on stderr (None: when stderr is a terminal).

    Raises
    ------
    cvxrank.MemoryBudgetError
        When the reference solve would exceed the memory budget: estimated from the pair count,
        before a pair is formed.

    Returns
    -------
    pandas.DataFrame
        One row per (formulation, solver), columns :data:`COLUMNS`:
        ``verdict`` (``"pass"``, ``"FAIL"``, ``"not certified"``, ``"time limit"``,
        ``"error"``); ``work`` done against ``work_limit``; ``L`` and ``M`` at the
        row's ``w``; ``identity_error`` ``|L − 2λM|/L``; the certified
        ``relative_gap`` and ``gap_M``; ``w_distance`` ``‖w − w_ref‖`` against
        ``w_bound`` ``b(row) + b(ref)``; ``objective_difference`` ``|L − L_ref|``
        against ``objective_bound``. ``df.attrs`` holds ``lam``, ``n_pairs``, the
        reference, ``work_limits``, ``time_limit`` and ``verified`` (every certified
        row passes, and at least one is certified).

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> df = verify_theorem1(make_ranking(n_queries=4, random_state=0), lam=0.1,
    ...                      solvers=["clarabel", "cutting_plane"])
    >>> df.attrs["verified"], df["verdict"].tolist()
    (True, ['pass', 'pass', 'pass'])
    """
    if isinstance(data, RankingProblem):
        if tau is not None or mu is not None or costs is not None:
            raise ValidationError("a RankingProblem brings its own costs: do not give tau, mu or costs")
        _check_reference_fits(data)
        problem = data
    else:
        if isinstance(data, RankingData):
            _check_reference_fits(RankingProblem(data, lam=check_lam(lam)))  # counts only: no pair formed
            pairs = make_pairs(data)
        elif isinstance(data, PairSet):
            pairs = data
        else:
            raise ValidationError(f"data must be RankingData, PairSet or RankingProblem, got {type(data).__name__}")
        problem = RankingProblem(pairs, costs=costs, tau=tau, mu=mu, lam=check_lam(lam))
    time_limit = _check_limit(time_limit, "time_limit", integer=False)
    rows_planned = plan_rows(solvers, formulations, work_limits)
    if reference not in installed_cvxpy_solvers():
        raise ValidationError(f"reference solver {reference!r} is not an installed CVXPY solver")
    ref_limit = {str(k).lower(): v for k, v in dict(work_limits or {}).items()}.get(reference,
                                                                                    get_spec(reference).work_limit)

    rows = []
    with _progress_bar(len(rows_planned) + 1, progress) as bar:
        # The reference: a tight certified solution; its distance bound enters every check.
        if bar is not None:
            bar.set_description_str(f"verify: reference/{reference}")
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
            ref_res = solve(problem, reference, tol=1e-8, **_limit_options(reference, ref_limit, time_limit))
        ref_time = time.perf_counter() - start
        if ref_res.status != "optimal":
            why = (TIME_LIMIT_NOTE if _time_limit_hit(ref_res, _work_done(ref_res), ref_limit, time_limit, ref_time)
                   else f"{_work_done(ref_res)} of its {ref_limit} iterations")
            raise SolverError(f"the reference solve ({reference}) did not certify: relative gap "
                              f"{ref_res.relative_gap:.1e} ({why}); try reference='ecos'")
        ref = {"w": ref_res.w, "L": ref_res.hinge_objective, "gap_L": ref_res.gap_L,
               "distance_bound": ref_res.distance_bound}
        if bar is not None:
            bar.update(1)
        if on_row is not None:
            on_row({"formulation": "reference", "solver": reference, "stages": "+".join(ref_res.stages),
                    "status": ref_res.status, "verdict": "", "work": _work_done(ref_res), "work_limit": ref_limit,
                    "L": ref_res.hinge_objective, "M": ref_res.qp_objective, "relative_gap": ref_res.relative_gap,
                    "gap_M": ref_res.gap_M, "w_bound": ref_res.distance_bound,
                    "certificate": ref_res.certificate.kind, "time": ref_time,
                    "note": ""})

        for planned in rows_planned:
            solver, form = planned["solver"], planned["formulation"]
            if bar is not None:
                bar.set_description_str(f"verify: {form or 'native'}/{solver}")
            row = _run(problem, form, solver, planned["work_limit"], time_limit)
            if row["status"] != "error":
                if row.pop("time_limit_hit"):
                    verdict(row, ref)  # fills the distances; a run the clock stopped is not judged
                    row["verdict"] = "time limit"
                else:
                    row["verdict"] = verdict(row, ref)
                if row["verdict"] == "FAIL":
                    row["note"] = "the certificate and the check disagree: please report this as a bug"
            rows.append(row)
            if bar is not None:
                bar.update(1)
            if on_row is not None:
                on_row({k: row.get(k) for k in COLUMNS})
    df = pd.DataFrame(rows).reindex(columns=COLUMNS)
    for col in ("work", "work_limit"):  # counts: whole numbers or None, never floats or pandas' NA
        df[col] = pd.Series([None if pd.isna(v) else int(v) for v in df[col]], index=df.index, dtype=object)
    certified = df["verdict"].isin(["pass", "FAIL"])
    df.attrs.update({
        "lam": problem.lam, "n_pairs": problem.n_pairs, "n_features": problem.n_features,
        "reference": f"{ref_res.formulation}/{reference}", "reference_relative_gap": ref_res.relative_gap,
        "reference_distance_bound": ref_res.distance_bound,
        "work_limits": {r["solver"]: r["work_limit"] for r in rows_planned}, "time_limit": time_limit,
        "n_certified": int(certified.sum()), "n_passed": int((df["verdict"] == "pass").sum()),
        "n_time_limit": int((df["verdict"] == "time limit").sum()),
        "verified": bool(certified.any() and (df.loc[certified, "verdict"] == "pass").all()),
    })
    return df
