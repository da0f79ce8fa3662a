"""Numerically hard problems: no solver may report "optimal" unless the certificate really passes.

For every installed solver (``cvxrank.available_solvers()``) on problems with
costs spanning 1e-6..1e6, features on scales 1e-4..1e4, duplicate documents,
a query of ties, (nearly) separable and inseparable data, and λ of 1e-6 and
1e6, each result is re-checked here from ``w`` and ``α`` alone:

* the reported objective is ``L(w)`` recomputed in numpy (not the solver's number);
* ``α`` lies in the box ``0 ≤ α ≤ C`` and the certified lower bound ``M − gap_M`` is the dual
  value ``L_D(α)`` less a positive rounding allowance (:mod:`cvxrank.rounding`) of float64 size;
* status ``"optimal"`` implies: the gap ``L(w) - 2λ L_D(α)`` is within ``tol``;
  the KKT stationarity residual ``‖w - Dᵀα‖ ≤ 2 sqrt(2 G)`` (``G`` the gap on
  the QP scale, both ``M`` and ``-L_D`` being 1-strongly convex in ``w``); and no
  other point found (a Clarabel reference at tol 1e-9, every other solver's
  ``w``) is better than ``w`` by more than ``tol``;
* status not ``"optimal"`` comes with an :class:`InaccurateSolutionWarning`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from cvxrank.data import RankingData
from cvxrank.exceptions import (
    CvxrankError,
    InaccurateSolutionWarning,
    SolverError,
    SolverNotAvailableError,
    ValidationError,
)
from cvxrank.formulations import build
from cvxrank.objectives import dual_objective, hinge_objective, qp_objective
from cvxrank.pairs import make_pairs
from cvxrank.solvers import (
    FALLBACK_CHAIN,
    NATIVE_SOLVERS,
    available_solvers,
    solve,
)

SOLVERS = available_solvers()
#: Iteration caps that keep the native solvers quick here (they then report user_limit honestly).
NATIVE_CAPS = {"subgradient": {"max_iter": 300}, "gd": {"max_iter": 300}}


def _base(seed=0, n_queries=4, docs=6, n_features=4, noise=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * docs, n_features))
    y = np.digitize(X @ rng.normal(size=n_features) + noise * rng.normal(size=n_queries * docs), [-0.5, 0.5])
    return X, y, np.repeat(np.arange(n_queries), docs)


def _problem(name):
    """(pairs, weights, λ) of a named hard problem; hinge scale (C = weights / (2λ))."""
    X, y, q = _base()
    if name == "costs_1e-6_to_1e6":
        pairs = make_pairs(RankingData(X, y, q))
        return pairs, 10 ** np.random.default_rng(1).uniform(-6, 6, pairs.n_pairs), 0.5
    if name == "feature_scales_1e-4_to_1e4":
        pairs = make_pairs(RankingData(X * np.array([1e-4, 1.0, 1e2, 1e4]), y, q))
    elif name == "duplicate_documents":  # three documents repeated with other grades: d_i = 0 pairs
        pairs = make_pairs(RankingData(np.vstack([X, X[:3]]), np.concatenate([y, (y[:3] + 1) % 3]),
                                       np.concatenate([q, q[:3]])))
    elif name == "query_of_ties":
        yt = y.copy()
        yt[q == 0] = 1
        pairs = make_pairs(RankingData(X, yt, q))
        assert pairs.pairs_per_query[0] == 0
    elif name == "nearly_separable":
        pairs = make_pairs(RankingData(X, np.digitize(X @ np.array([1.0, -1.0, 0.5, 0.0]), [-0.5, 0.5]), q))
    elif name == "inseparable":  # every pair also appears reversed
        pairs = make_pairs(RankingData(np.vstack([X, X]), np.concatenate([y, 2 - y]), np.concatenate([q, q])))
    elif name in ("lam_1e-6", "lam_1e6"):
        pairs = make_pairs(RankingData(X, y, q))
        return pairs, np.ones(pairs.n_pairs), 1e-6 if name == "lam_1e-6" else 1e6
    else:
        raise AssertionError(name)
    return pairs, np.ones(pairs.n_pairs), 0.5


PROBLEMS = ["costs_1e-6_to_1e6", "feature_scales_1e-4_to_1e4", "duplicate_documents", "query_of_ties",
            "nearly_separable", "inseparable", "lam_1e-6", "lam_1e6"]


def _solve(form, solver, **options):
    """Solve, recording whether an InaccurateSolutionWarning was raised; SolverError gives None."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InaccurateSolutionWarning)
        try:
            result = solve(form, solver, **NATIVE_CAPS.get(solver, {}), **options)
        except SolverError:
            return None, False
    return result, any(issubclass(w.category, InaccurateSolutionWarning) for w in caught)


def check_certificate(result, pairs, C, best_known, warned):
    """The independent re-check of one result (see the module docstring), on the QP scale ``M``."""
    M = qp_objective(pairs, result.w, C)
    scale = 2.0 * result.lam  # both scales are stated: L = 2λ M
    assert result.qp_objective == pytest.approx(M, rel=1e-12, abs=1e-300), "objective not recomputed from w"
    assert result.hinge_objective == pytest.approx(scale * M, rel=1e-12, abs=1e-300)
    assert result.objective == result.hinge_objective  # L(w) of (9), whatever was solved
    slack = 1e-12 * abs(M)
    alpha = result.alpha
    if alpha is not None:
        assert np.all(alpha >= 0) and np.all(alpha <= C * (1 + 1e-15)), "dual point outside the box 0 <= alpha <= C"
        dual = dual_objective(pairs, alpha)
        # The certified lower bound is the dual value less the rounding allowance of the two sums
        # (cvxrank.rounding): never above the dual value, and below it by at most that allowance.
        allowance = result.gap_M - max(M - dual, 0.0)
        assert allowance > 0, "a gap without its rounding allowance"
        assert allowance <= 1e-6 * (abs(M) + abs(dual)) + 1e-300, f"rounding allowance {allowance:.2e} out of scale"
    else:  # the native cutting plane's own bound: a lower bound can never exceed a known feasible value
        assert result.certificate.kind in ("cutting-plane bound", "band dual bound")
        dual = M - result.gap_M
        assert dual <= best_known + slack, "a lower bound above a feasible objective"
    assert (result.status != "optimal") == warned, f"status {result.status} but warned={warned}"
    if result.status != "optimal":
        return
    gap = M - dual
    assert gap <= result.tol * M + slack, f"'optimal' with gap {gap / M:.2e} > tol"
    if alpha is not None:
        kkt = np.linalg.norm(result.w - pairs.rmatvec(alpha))  # M and -L_D are 1-strongly convex in w
        assert kkt <= 2.0 * math.sqrt(2.0 * max(gap, 0.0)) + 1e-9 * (1.0 + np.linalg.norm(result.w)), "KKT residual"
    assert M - best_known <= result.tol * M + slack, (
        f"{result.solver} says optimal at M = {M!r}, but a point with M = {best_known!r} exists")


@pytest.mark.parametrize("name", PROBLEMS)
def test_no_false_optimal_on_hard_problems(name):
    pairs, weights, lam = _problem(name)
    ref, _ = _solve(build(pairs, weights=weights, lam=lam, formulation="primal"), "clarabel", tol=1e-9)
    results = []
    for solver in SOLVERS:
        native = solver in NATIVE_SOLVERS  # reads the pairs and costs only: one formulation suffices
        for formulation in ["primal"] if native else ["hinge" if solver == "osqp" else "primal", "dual"]:
            form = build(pairs, weights=weights, lam=lam, formulation=formulation)
            try:
                result, warned = _solve(form, solver)
            except ValidationError as exc:  # the pair-free solver takes tau_k * mu_q weights only
                assert solver == "cutting_plane" and "one weight per (query, grade pair)" in str(exc)
                continue
            if result is not None:
                results.append((result, warned))
    assert results, "no solver returned anything"
    C = weights / (2.0 * lam)
    best = min(qp_objective(pairs, r.w, C) for r, _ in results + ([(ref, None)] if ref is not None else []))
    for result, warned in results:
        check_certificate(result, pairs, C, best, warned)
    assert any(r.status == "optimal" for r, _ in results), "no solver certified this problem"


def test_osqp_large_objective_scaling_is_caught():
    """CVXPY #1489: a large factor on the objective (here C = 1/(2λ) = 5000) derails OSQP.

    Measured with OSQP 1.x: on the primal QP OSQP returns "unbounded" (cvxrank
    raises SolverError); whatever it does, cvxrank never reports an
    uncertified "optimal", and the fallback chain ends at a certified solution.
    """
    if "osqp" not in SOLVERS:
        pytest.skip("osqp is not installed")
    pairs, _, _ = _problem("lam_1e6")
    weights, lam = np.ones(pairs.n_pairs), 1e-4
    C = weights / (2.0 * lam)
    form = build(pairs, weights=weights, lam=lam, formulation="primal")
    best = qp_objective(pairs, solve(build(pairs, C=C, formulation="primal"), "clarabel").w, C)
    result, warned = _solve(form, "osqp")
    if result is not None:
        check_certificate(result, pairs, C, best, warned)
    chained = solve(form, ["osqp", "clarabel"])
    assert chained.status == "optimal" and chained.solver in ("osqp", "clarabel")
    check_certificate(chained, pairs, C, best, warned=False)
    first = chained.extras["attempts"][0]
    assert first["solver"] == "osqp"
    if result is None:
        assert first["status"] == "error" and "unbounded" in first["message"]
        assert chained.solver == "clarabel"


def test_osqp_optimal_with_loose_tolerance_is_not_reported_optimal():
    """OSQP calls a loose ADMM iterate "optimal"; the certificate does not."""
    if "osqp" not in SOLVERS:
        pytest.skip("osqp is not installed")
    pairs, weights, _ = _problem("lam_1e6")
    lam = 1e-2
    form = build(pairs, weights=weights, lam=lam, formulation="hinge")
    ref = solve(build(pairs, weights=weights, lam=lam, formulation="hinge"), "clarabel")
    polish = "polishing" if "polishing" in str(__import__("cvxrank").solvers.SOLVERS["osqp"].defaults) else "polish"
    with pytest.warns(InaccurateSolutionWarning, match="certified relative gap"):
        result = solve(form, "osqp", eps_abs=1e-3, eps_rel=1e-3, **{polish: False})
    assert result.solver_status == "optimal" and result.status == "optimal_inaccurate"
    true_gap = (result.objective - ref.objective) / result.objective
    assert true_gap > result.tol  # the hazard is real here: OSQP's "optimal" is off by more than tol
    assert result.relative_gap >= true_gap * (1 - 1e-6)  # and the certificate bounds it


def test_objective_is_never_the_solvers_own_number():
    """SCS reports an objective off by orders of magnitude on the lifted form at λ = 1e6 (measured: 660x);
    cvxrank's objectives are ``L(w)`` and ``M(w)`` recomputed from ``w`` for every solver."""
    pairs, weights, lam = _problem("lam_1e6")
    for solver in [s for s in ("scs", "osqp", "ecos", "clarabel") if s in SOLVERS]:
        form = build(pairs, weights=weights, lam=lam, formulation="lifted")
        result, _ = _solve(form, solver)
        if result is not None:
            assert result.hinge_objective == hinge_objective(pairs, result.w, weights, lam)
            assert result.qp_objective == qp_objective(pairs, result.w, weights / (2 * lam))
            assert result.objective == result.hinge_objective  # L(w) of (9): one scale
            assert result.formulation_objective == result.qp_objective  # the lifted QP's own M


def test_difference_norms_do_not_overflow():
    """Regression (found by the long fuzz run): ``‖d_i‖`` squared entries of 1e300 into inf."""
    data = RankingData(np.array([[1e300, 3.0], [0.0, 1.0], [2e-300, 0.0]]), [2, 1, 0], [1, 1, 1])
    pairs = make_pairs(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        norms = pairs.difference_norms
    expected = [math.hypot(*row) for row in pairs.difference_rows(np.arange(pairs.n_pairs))]
    np.testing.assert_allclose(norms, expected, rtol=1e-15)


# -- the fallback chain ------------------------------------------------------------------------
@pytest.fixture
def small():
    pairs, weights, _ = _problem("nearly_separable")
    return pairs, build(pairs, weights=weights, lam=0.5, formulation="primal")


def test_fallback_default_chain_and_attempts(small):
    _, form = small
    result = solve(form, "fallback")
    assert result.status == "optimal" and result.solver == FALLBACK_CHAIN[0]
    assert [a["solver"] for a in result.extras["attempts"]] == [FALLBACK_CHAIN[0]]
    assert set(result.extras["attempts"][0]) == {"solver", "status", "relative_gap", "time", "message"}


def test_fallback_moves_on_from_an_uncertified_solution(small):
    _, form = small
    result = solve(form, ["gd", "clarabel"], gd={"max_iter": 2})
    attempts = result.extras["attempts"]
    assert [a["solver"] for a in attempts] == ["gd", "clarabel"]
    assert attempts[0]["status"] == "user_limit" and attempts[0]["relative_gap"] > 1e-6
    assert result.solver == "clarabel" and result.status == "optimal"


def test_fallback_never_reports_optimal_when_nothing_certifies(small):
    _, form = small
    with pytest.warns(InaccurateSolutionWarning, match="no solver of the fallback chain certified"):
        result = solve(form, ["gd", "subgradient"], gd={"max_iter": 2}, subgradient={"max_iter": 2, "polish": False})
    assert result.status != "optimal"
    gaps = [a["relative_gap"] for a in result.extras["attempts"]]
    assert result.relative_gap == min(gaps)  # the best of the attempts, with its honest status


def test_fallback_errors(small, monkeypatch):
    _, form = small
    with pytest.raises(SolverNotAvailableError, match="unknown solver"):
        solve(form, ["clarabel", "no-such-solver"])
    missing = [s for s in ("gurobi", "mosek", "piqp", "daqp") if s not in SOLVERS]
    if missing:
        result = solve(form, [missing[0], "clarabel"])
        assert result.extras["attempts"][0]["status"] == "not installed"
        with pytest.raises(SolverNotAvailableError, match="no solver of the fallback chain is installed"):
            solve(form, [missing[0]])
    import cvxrank.solvers as solvers_module

    def broken(*args, **kwargs):
        raise SolverError("simulated failure")

    monkeypatch.setitem(solvers_module.NATIVE_SOLVERS, "subgradient", broken)
    with pytest.raises(SolverError, match="every solver of the fallback chain failed.*simulated failure"):
        solve(form, ["subgradient"])
    result = solve(form, ["subgradient", *FALLBACK_CHAIN])
    assert [a["solver"] for a in result.extras["attempts"]][:2] == ["subgradient", FALLBACK_CHAIN[0]]
    assert isinstance(SolverError("x"), CvxrankError)
