"""The pair-free truncated Newton method (squared hinge) against an independent CVXPY problem, its
certificate at every iteration, and its limits."""

import warnings

import cvxpy as cp
import numpy as np
import pytest

import cvxrank as cr
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.native import cost_table
from cvxrank.native.truncated_newton import truncated_newton
from cvxrank.native.variant_oracle import VariantOracle
from cvxrank.variants import Variant
from tests.conftest import assert_agree, brute_force_pairs
from tests.test_native_oracle import random_instance


def independent_optimum(data, tau, mu, margin, lam):
    """``min F`` of the squared-hinge problem written from pairs by hand (Clarabel, tight tolerances)."""
    D, c, m = brute_force_pairs(data, tau=tau, mu=mu, margin=margin)
    w = cp.Variable(D.shape[1])
    prob = cp.Problem(cp.Minimize(c @ cp.square(cp.pos(m - D @ w)) + lam * cp.sum_squares(w)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        # any point gives a valid upper bound F(w_ref) ≥ min F; tight tolerances only make it sharper
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    w_ref = np.asarray(w.value)
    F_ref = float(c @ np.maximum(m - D @ w_ref, 0.0) ** 2 + lam * w_ref @ w_ref)  # F at a point: ≥ min F
    return w_ref, F_ref


CASES = [pytest.param(seed, integer, sparse, margin, id=f"seed{seed}-{'int' if integer else 'float'}"
                      f"{'-sparse' if sparse else ''}-{margin}")
         for seed in range(3) for integer in (False, True) for sparse in (False, True)
         for margin in (None, "grade_difference")]


@pytest.mark.parametrize("seed,integer,sparse,margin", CASES)
def test_newton_matches_clarabel_and_its_bound_is_sound(seed, integer, sparse, margin):
    data, _, tau, _, _ = random_instance(seed, integer=integer, sparse=sparse)
    mu = "balanced" if seed % 2 else None
    lam = [0.01, 0.3, 3.0][seed % 3]
    variant = Variant(loss="squared_hinge", margin=margin)
    problem = cr.RankingProblem(data, tau=tau, mu=mu, lam=lam, variant=variant)
    res = cr.solve(problem, "truncated_newton", tol=1e-9)
    assert res.status == "optimal" and res.formulation == "pairfree" and not problem.has_pairs
    assert res.certificate.kind == "squared-hinge dual bound (pair-free)"
    ref = cr.solve(cr.RankingProblem(data, tau=tau, mu=mu, lam=lam, variant=variant), "clarabel")
    assert_agree(res, ref)
    w_ind, F_ind = independent_optimum(data, tau, mu, margin, lam)
    # soundness: every iteration's lower bound stays below an independent upper bound on min F
    assert np.all(res.history["dual_objective"] <= F_ind * (1 + 1e-10) + 1e-12)
    assert res.hinge_objective == pytest.approx(problem.hinge_objective(res.w), rel=1e-10)
    # strong convexity: ‖w − w_ind‖² ≤ (gap + F(w_ind) − lower) / λ
    lower = res.hinge_objective - res.gap_L
    rounding = 64 * np.finfo(float).eps * F_ind
    assert np.linalg.norm(res.w - w_ind) ** 2 <= (res.gap_L + max(F_ind - lower, 0.0) + rounding) / lam


def test_newton_converges_and_history_is_monotone():
    data = cr.make_ranking(n_queries=30, n_features=8, random_state=2)
    oracle = VariantOracle.from_data(data, cost_table(data))
    run = truncated_newton(oracle, 0.05, tol=1e-10, max_iter=200)
    assert run.status == "optimal" and run.iterations < 200  # certified before max_iter
    h = run.history
    assert np.all(np.diff(h["objective"]) <= 1e-12 * h["objective"].iloc[0])  # Armijo: F decreases
    assert np.all(np.diff(h["dual_objective"]) >= 0)


def test_newton_leaves_room_for_the_certificates_allowance():
    """Once its gap reaches tol, the run reads the allowance the certificate will add: when gap plus allowance
    would pass tol it goes on to tol less 1.25 times the allowance; when the allowance is above 0.8 tol, aiming lower
    would prove nothing, and it stops as before. (Here the gaps run 0.107, 1.9e-4, 3.6e-9: tol = 2.5e-4 stops at
    1.9e-4, which an allowance of half of tol does not leave room for.)"""
    data = cr.make_ranking(n_queries=30, n_features=8, random_state=2)
    oracle = VariantOracle.from_data(data, cost_table(data))
    tol = 2.5e-4
    plain = truncated_newton(oracle, 0.05, tol=tol, max_iter=200)
    gap = plain.objective - plain.lower_bound
    room = 0.5 * tol * plain.objective  # the certificate's allowance, as far as this run knows
    assert plain.status == "optimal" and gap <= tol * plain.objective < gap + room
    aimed = truncated_newton(oracle, 0.05, tol=tol, max_iter=200, allowance=lambda w: room)
    assert aimed.status == "optimal" and aimed.iterations > plain.iterations
    assert aimed.objective - aimed.lower_bound + room <= tol * aimed.objective
    hopeless = truncated_newton(oracle, 0.05, tol=tol, max_iter=200, allowance=lambda w: 2.0 * room)
    assert hopeless.iterations == plain.iterations and hopeless.objective == plain.objective


def test_limits_warm_start_and_floor():
    data = cr.make_ranking(n_queries=10, n_features=5, random_state=4)
    problem = cr.RankingProblem(data, mu="balanced", lam=0.1, variant=Variant(loss="squared_hinge"))
    with pytest.warns(InaccurateSolutionWarning):
        capped = cr.solve(problem, "truncated_newton", max_iter=1)
    assert capped.status == "user_limit" and capped.relative_gap > 1e-6 and capped.gap_L >= 0
    done = cr.solve(problem, "truncated_newton")
    again = cr.solve(problem, "truncated_newton", warm_start_w=done.w)
    assert again.iterations == 0 and again.status == "optimal"
    with pytest.warns(InaccurateSolutionWarning) as caught:  # the solver's floor, then the status's warning
        low = cr.solve(problem, "truncated_newton", tol=1e-15)
    assert any("below the relative gap float64 can certify" in str(w.message) for w in caught)
    assert low.status == "optimal_inaccurate" and low.relative_gap < 1e-10


@pytest.mark.parametrize("kwargs, message", [
    ({"max_iter": 0}, "max_iter must be a positive integer"),
    ({"cg_max_iter": 1.5}, "cg_max_iter must be a positive integer"),
    ({"forcing": 1.0}, "forcing must be a number in"),
    ({"time_limit": -1}, "time_limit must be a positive"),
    ({"warm_start_w": [1.0]}, "warm_start_w must be 5 finite numbers"),
])
def test_bad_options_are_refused(kwargs, message):
    data = cr.make_ranking(n_queries=4, n_features=5, random_state=0)
    problem = cr.RankingProblem(data, lam=0.1, variant=Variant(loss="squared_hinge"))
    with pytest.raises(ValidationError, match=message):
        cr.solve(problem, "truncated_newton", **kwargs)


def test_variants_it_cannot_take_are_refused_naming_the_solvers_that_can():
    data = cr.make_ranking(n_queries=4, n_features=3, random_state=0)
    for variant in (Variant(loss="squared_hinge", l1=0.1), Variant(loss="squared_hinge", lower=0.0)):
        with pytest.raises(cr.exceptions.SolverNotAvailableError, match="solvers that can: clarabel"):
            cr.solve(cr.RankingProblem(data, lam=0.1, variant=variant), "truncated_newton")
    with pytest.raises(cr.exceptions.SolverNotAvailableError, match="'truncated_newton' does not solve the papers'"):
        cr.solve(cr.RankingProblem(data, lam=0.1), "truncated_newton")
