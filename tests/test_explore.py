"""A researcher's own changes to a compiled formulation are certified as the problem actually solved.

Each solution is checked against an independent reference written here: the same problem stated in
plain CVXPY on explicit pairs (``D`` formed by hand from the grades), solved by Clarabel at tight
tolerances. Strong convexity gives two checks that fail if the certificate is not a bound:

- the reference is feasible, so ``M(w_ref) ≥ M(w*) ≥ M(w) − gap_M``;
- ``‖w − w*‖ ≤ distance_bound`` and ``‖w_ref − w*‖ ≤ sqrt(2 (M(w_ref) − M(w) + gap_M))``.
"""

from __future__ import annotations

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest

import cvxrank as cr
from cvxrank.exceptions import InaccurateSolutionWarning, SolverNotAvailableError, ValidationError
from cvxrank.variants import Variant

LAM = 0.1


@pytest.fixture(scope="module")
def data():
    return cr.make_ranking(n_queries=6, n_features=6, random_state=3)


def _pairs_by_hand(data):
    """``D`` (rows ``x_better − x_worse``) from the grades, query by query, without cvxrank's pairs."""
    rows = []
    for q in np.unique(data.qid):
        idx = np.flatnonzero(data.qid == q)
        for i in idx:
            for j in idx:
                if data.y[i] > data.y[j]:
                    rows.append(data.X[i] - data.X[j])
    return np.asarray(rows)


def _reference(data, constraints=lambda w: [], term=lambda w: 0):
    """``(M(w_ref), w_ref)`` of ``½‖w‖² + C Σ ξ + term(w)`` (QP scale, ``C = 1/(2λ)``) under ``constraints``."""
    D = _pairs_by_hand(data)
    w = cp.Variable(D.shape[1])
    C = 1.0 / (2.0 * LAM)
    objective = 0.5 * cp.sum_squares(w) + C * cp.sum(cp.pos(1 - D @ w)) + term(w)
    with warnings.catch_warnings():  # CVXPY's "may be inaccurate" at these tolerances: checked by _agrees
        warnings.simplefilter("ignore", UserWarning)
        cp.Problem(cp.Minimize(objective), constraints(w)).solve(
            solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return float(objective.value), np.asarray(w.value)


def _agrees(result, reference):
    """The two strong-convexity checks of the module docstring (``result`` on the QP scale ``M``)."""
    M_ref, w_ref = reference
    gap = result.certificate.gap_M
    assert M_ref >= result.qp_objective - gap - 1e-9 * abs(M_ref)  # the bound really is below the optimum
    ref_distance = math.sqrt(2.0 * max(M_ref - result.qp_objective + gap, 0.0))
    assert np.linalg.norm(result.w - w_ref) <= result.distance_bound + ref_distance + 1e-6


@pytest.mark.parametrize("form", ["primal", "lifted", "hinge"])
def test_a_hand_edited_problem_is_noticed_and_certified(data, form):
    """Non-negativity on some features added to ``Formulation.problem`` by hand: the certificate is of
    the edited problem (cvxrank used to certify the unedited one and report a gap of 0.94)."""
    f = cr.build(cr.RankingProblem(data, lam=LAM), form)
    w = f.w_variable
    f.problem = cp.Problem(f.problem.objective, f.problem.constraints + [w[:3] >= 0])
    res = cr.solve(f, "clarabel")
    assert res.status == "optimal" and res.certificate.kind.startswith("Lagrangian dual (user constraints")
    assert res.certificate.feasible and np.all(res.w[:3] >= -res.certificate.infeasibility)
    reference = _reference(data, lambda v: [v[:3] >= 0])
    _agrees(res, reference)
    free = cr.solve(cr.RankingProblem(data, lam=LAM), "clarabel")
    assert free.w[:3].min() < -1e-3  # the constraint binds: the edit changed the problem


@pytest.mark.parametrize("how", ["variant", "add_constraints"])
def test_a_norm_ball_is_certified_through_its_linearisation(data, how):
    radius = 0.5
    problem = cr.RankingProblem(data, lam=LAM)
    if how == "variant":
        res = cr.solve(problem.with_variant(Variant(constraints=lambda w: [cp.norm(w) <= radius])), "clarabel")
    else:
        f = cr.build(problem, "lifted")
        f.add_constraints(cp.norm(f.w_variable) <= radius)
        res = cr.solve(f, "clarabel")
    assert res.status == "optimal"
    assert res.certificate.kind == "Lagrangian dual (user constraints; convex ones linearised at w)"
    assert np.linalg.norm(res.w) <= radius + res.certificate.infeasibility
    _agrees(res, _reference(data, lambda v: [cp.norm(v) <= radius]))


def test_an_l1_term_of_the_variant_is_certified_by_its_exact_dual(data):
    rho_L = 3.0  # ρ_L ‖w‖₁ on the scale of (9): ρ = ρ_L / (2λ) on the QP scale
    res = cr.solve(cr.RankingProblem(data, lam=LAM, variant=Variant(l1=rho_L)), "clarabel")
    assert res.status == "optimal" and res.certificate.kind == "duality gap (variant's dual)"
    _agrees(res, _reference(data, term=lambda v: rho_L / (2 * LAM) * cp.norm1(v)))


def test_an_added_smooth_term_enters_the_objective_and_the_certificate(data):
    target = np.linspace(-1.0, 1.0, data.X.shape[1])
    f = cr.build(cr.RankingProblem(data, lam=LAM), "primal")
    f.add_term(2.0 * cp.sum_squares(f.w_variable - target))
    res = cr.solve(f, "clarabel")
    assert res.status == "optimal" and "added terms linearised at w" in res.certificate.kind
    M_ref, w_ref = _reference(data, term=lambda v: 2.0 * cp.sum_squares(v - target))
    assert res.qp_objective == pytest.approx(M_ref, rel=1e-6)  # the term is part of the objective reported
    assert res.objective == pytest.approx(2 * LAM * res.qp_objective, rel=1e-12)  # one scale, L = 2λM
    _agrees(res, (M_ref, w_ref))


def test_a_term_on_the_hinge_form_is_on_its_own_scale(data):
    """On the hinge form (9) an added term is on the scale L: M gains term / (2λ)."""
    f = cr.build(cr.RankingProblem(data, lam=LAM), "hinge")
    f.add_term(0.4 * cp.sum_squares(f.w_variable))
    res = cr.solve(f, "clarabel")
    assert res.status == "optimal"
    _agrees(res, _reference(data, term=lambda v: 0.4 / (2 * LAM) * cp.sum_squares(v)))


def test_an_l1_term_with_a_kink_at_the_solution_still_gives_a_valid_bound(data):
    """CVXPY's gradient of ‖w‖₁ at a zero weight is one subgradient: its linearisation is a valid
    minorant, so the bound holds, but it need not be tight (Variant(l1=...) is exact)."""
    rho = 60.0
    f = cr.build(cr.RankingProblem(data, lam=LAM), "primal")
    f.add_term(rho * cp.norm1(f.w_variable))
    with warnings.catch_warnings():  # not certified to tol when the bound is loose: that is the point
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = cr.solve(f, "clarabel", tol=1e-9)
    assert 0 < res.relative_gap < 1 and np.sum(np.abs(res.w) < 1e-7) >= 1  # a weight at the kink
    _agrees(res, _reference(data, term=lambda v: rho * cp.norm1(v)))
    exact = cr.solve(cr.RankingProblem(data, lam=LAM, variant=Variant(l1=rho * 2 * LAM)), "clarabel")
    assert exact.status == "optimal" and exact.qp_objective == pytest.approx(res.qp_objective, rel=1e-6)


def test_refused_edits_say_what_is_wrong(data):
    problem = cr.RankingProblem(data, lam=LAM)
    f = cr.build(problem, "primal")
    f.problem = cp.Problem(f.problem.objective, f.problem.constraints[1:])
    with pytest.raises(ValidationError, match="was removed"):
        cr.solve(f, "clarabel")
    f = cr.build(problem, "primal")
    f.problem = cp.Problem(cp.Minimize(cp.sum_squares(f.w_variable)), f.problem.constraints)
    with pytest.raises(ValidationError, match="replaced, not extended"):
        cr.solve(f, "clarabel")
    f = cr.build(problem, "primal")
    t = cp.Variable(name="t_epigraph")
    with pytest.raises(ValidationError, match="t_epigraph, not w alone"):
        f.add_constraints(cp.norm(f.w_variable) <= t)
    with pytest.raises(ValidationError, match="not a convex scalar term"):
        f.add_term(-cp.norm(f.w_variable))
    with pytest.raises(ValidationError, match="not a convex constraint"):
        f.add_constraints(cp.norm(f.w_variable) >= 1)
    with pytest.raises(ValidationError, match="dual variables"):
        cr.build(problem, "dual").add_constraints(cp.sum(cr.build(problem, "dual").variables["alpha"]) <= 1)


def test_native_solvers_refuse_an_edited_formulation_and_a_chain_moves_on(data):
    f = cr.build(cr.RankingProblem(data, lam=LAM), "primal")
    f.add_constraints(f.w_variable >= 0)
    with pytest.raises(SolverNotAvailableError, match="not the CVXPY problem"):
        cr.solve(f, "cutting_plane")
    res = cr.solve(f, ["cutting_plane", "clarabel"])
    assert res.solver == "clarabel" and res.status == "optimal" and res.w.min() >= -res.certificate.infeasibility
    assert res.extras["attempts"][0]["status"] == "error"


def test_an_unedited_formulation_is_certified_as_before(data):
    f = cr.build(cr.RankingProblem(data, lam=LAM), "primal")
    assert f.edits() == ([], [])
    res = cr.solve(f, "clarabel")
    assert res.status == "optimal" and res.certificate.kind == "duality gap"
