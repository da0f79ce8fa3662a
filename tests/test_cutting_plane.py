"""The pair-free cutting-plane solver against CVXPY/Clarabel, its certificate and its limits."""

import warnings

import cvxpy as cp
import numpy as np
import pytest

from cvxrank.costs import pair_weights, theorem1_C
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.formulations import build, build_hinge, build_primal
from cvxrank.native import (
    Bundle,
    PairFreeOracle,
    cost_table,
    cutting_plane,
)
from cvxrank.objectives import hinge_objective
from cvxrank.pairs import make_pairs, preference_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import Instance, assert_agree


def reference_result(inst):
    """Clarabel's certified solution of the QP (14)."""
    res = solve(build_primal(inst.pairs, C=inst.C), "clarabel", tol=1e-9)
    assert res.status == "optimal"
    return res


def reference(inst):
    """Clarabel's solution of the QP (14), on the hinge scale of (9)."""
    res = reference_result(inst)
    return res.w, 2 * inst.lam * res.qp_objective


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("seed", range(6))
def test_pairfree_matches_clarabel_with_costs(seed):
    inst = Instance(seed, lam=[0.01, 0.1, 1.0][seed % 3], n_grades=3 + seed % 2)
    w_ref, F_ref = reference(inst)
    res = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-8)
    assert res.status == "optimal" and res.found
    assert (res.solver, res.formulation, res.alpha) == ("cutting_plane", "pairfree", None)
    assert 0 <= res.relative_gap <= 1e-8
    assert_agree(res, reference_result(inst))
    # the objective is (9) recomputed with explicit pairs
    assert res.objective == pytest.approx(hinge_objective(inst.pairs, res.w, inst.weights, inst.lam), rel=1e-12)
    # soundness: the certified lower bound never exceeds the optimum, the objective never goes below it
    assert res.lower_bound <= F_ref * (1 + 1e-10)
    # the optimum lies above Clarabel's certified lower bound (its point is within its own gap of it; the
    # pair-free solver's exact finish may land below that point, on the optimum)
    assert res.objective >= (F_ref - 2 * inst.lam * reference_result(inst).gap_M) * (1 - 1e-10)
    assert res.objective - F_ref <= res.duality_gap * (1 + 1e-6) + 1e-12 * F_ref
    # strong convexity: ‖w - w*‖² ≤ gap / λ
    assert np.linalg.norm(res.w - w_ref) ** 2 <= res.duality_gap / inst.lam + 1e-7 * np.linalg.norm(w_ref) ** 2
    h = res.history
    assert np.all(np.diff(h["objective"]) <= 0) and np.all(np.diff(h["dual_objective"]) >= 0)
    assert res.dual_residual < 1e-3


def test_sparse_features():
    inst = Instance(12, density=0.4, n_features=6)
    w_ref, F_ref = reference(inst)
    res = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-8)
    assert inst.data.is_sparse and res.status == "optimal"
    assert_agree(res, reference_result(inst))
    assert res.lower_bound <= F_ref * (1 + 1e-10)


def test_lower_bound_is_sound_at_every_iteration():
    inst = Instance(11, lam=0.02)
    _, F_ref = reference(inst)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    run = cutting_plane(oracle, inst.lam, tol=1e-9)
    assert run.status == "optimal"
    assert np.all(run.history["dual_objective"] <= F_ref * (1 + 1e-10))
    assert np.all(run.history["objective"] >= F_ref * (1 - 1e-10))


@pytest.mark.parametrize("form", ["primal", "lifted", "dual", "hinge"])
def test_solve_formulation_with_cutting_plane(instance, form):
    w_ref, F_ref = reference(instance)
    f = build(instance.pairs, C=instance.C, weights=instance.weights, lam=instance.lam, formulation=form)
    res = solve(f, "cutting_plane")
    assert res.status == "optimal"
    # Certified by the method's own bound (its planes' or its Newton phase's): no pairwise re-certification.
    assert res.certificate.kind in ("cutting-plane bound", "band dual bound") and res.alpha is None
    # The method's own gap plus the float64 rounding allowance of its sums (cvxrank.rounding).
    assert res.extras["pairfree_relative_gap"] < res.relative_gap <= 1e-6
    assert res.formulation_scale == "L" and res.hinge_objective == pytest.approx(2 * instance.lam * res.qp_objective, rel=1e-12)
    # The lower bound never exceeds the optimum, and w is within the proved distance of w*.
    assert res.lower_bound <= F_ref * (1 + 1e-12)
    assert np.linalg.norm(res.w - w_ref) <= res.distance_bound + np.sqrt(2 * 1e-9 * F_ref / (2 * instance.lam))


def test_cutting_plane_recertifies_pairwise_only_when_its_bound_falls_short(instance):
    f = build(instance.pairs, weights=instance.weights, lam=instance.lam, formulation="hinge")
    with pytest.warns(InaccurateSolutionWarning):
        res = solve(f, "cutting_plane", max_iter=3)
    assert res.extras["pairfree_relative_gap"] > 1e-6
    # the pairwise dual point built from β was tried: when it wins, it is in the box
    if res.certificate.kind == "duality gap":
        assert np.all(res.alpha >= 0) and np.all(res.alpha <= instance.C * (1 + 1e-12))
    assert res.relative_gap <= res.extras["pairfree_relative_gap"] * (1 + 1e-12)


def test_weights_not_per_query_and_grade_pair_are_refused():
    inst = Instance(3)
    weights = inst.weights.copy()
    weights[::7] *= 2.0
    f = build_hinge(inst.pairs, weights=weights, lam=inst.lam)
    with pytest.raises(ValidationError, match="explicit-pair solver"):
        solve(f, "cutting_plane")
    prefs = preference_pairs(np.eye(4), better=[0, 2], worse=[1, 3])
    with pytest.raises(ValidationError, match="explicit-pair solver"):
        solve(build_primal(prefs, C=1.0), "cutting_plane")


def test_zero_tau_drops_a_grade_pair():
    data = make_ranking(n_queries=6, docs_per_query=(5, 9), n_features=3, random_state=4)
    pairs = make_pairs(data)
    tau = {(1, 0): 0.0, (2, 0): 2.0, (2, 1): 1.0}
    weights = pair_weights(pairs, {**tau, (1, 0): 1.0}) * (pairs.pair_type[:, 0] == 2)
    ref = solve(build_primal(pairs, C=theorem1_C(weights, 0.1)), "clarabel", tol=1e-9)
    res = solve(RankingProblem(data, tau=tau, lam=0.1), "cutting_plane", tol=1e-8)
    assert_agree(res, ref)


def test_iteration_cap_gives_user_limit_with_a_certified_gap():
    inst = Instance(5, lam=0.01)
    _, F_ref = reference(inst)
    with pytest.warns(InaccurateSolutionWarning, match="max_iter"):
        res = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", max_iter=3)
    assert res.status == "user_limit" and not res.found
    assert res.iterations == 3
    assert np.isfinite(res.relative_gap) and res.relative_gap > res.tol
    assert res.lower_bound <= F_ref <= res.objective
    f = build_hinge(inst.pairs, weights=inst.weights, lam=inst.lam)
    with pytest.warns(InaccurateSolutionWarning):
        res = solve(f, "cutting_plane", max_iter=3)
    assert res.status == "user_limit" and res.relative_gap > 1e-6


def test_a_capped_run_on_formed_pairs_whose_bound_never_left_zero_reports_its_limit():
    """No plane lifted the lower bound above 0 (the warm start violates no pair), so the run kept no points: the
    pairwise dual point of its model is α = 0, and the certificate says so."""
    from cvxrank.data import RankingData

    data = RankingData(np.array([[0.0], [1.0], [2.0]]), y=[0, 1, 2], qid=[1, 1, 1])
    for problem in (RankingProblem(make_pairs(data), lam=0.5), RankingProblem(data, lam=0.5)):
        _ = problem.pairs  # (the second: a problem given as documents whose pairs were read)
        with pytest.warns(InaccurateSolutionWarning, match="max_iter"):
            res = solve(problem, "cutting_plane", tol=1e-6, warm_start=np.array([100.0]), max_iter=1)
        assert res.status == "user_limit" and res.relative_gap > res.tol
        assert res.lower_bound <= problem.hinge_objective(np.array([1.0])) <= res.objective  # w* = 1, L* = λ


def test_solver_options_are_the_users_and_their_values_are_checked():
    from cvxrank.solvers import solver_options

    problem = RankingProblem(Instance(1).data, lam=0.5)
    assert "allowance" not in solver_options("cutting_plane")  # the door fills it in itself
    with pytest.raises(ValidationError, match="does not take 'allowance'"):
        solve(problem, "cutting_plane", allowance=lambda w, bound=False, terms=0: 0.0)
    for bad in (-1, 1.5, "two"):
        with pytest.raises(ValidationError, match="threads must be a non-negative integer"):
            solve(problem, "cutting_plane", threads=bad)
    for big in (1e155, 1e200):  # finite, but λ‖w‖² overflows float64
        with pytest.raises(ValidationError, match="warm_start_w is too large"):
            solve(problem, "cutting_plane", warm_start=np.full(problem.n_features, big))


def test_time_limit_gives_user_limit():
    inst = Instance(6, lam=0.001)
    with pytest.warns(InaccurateSolutionWarning):
        res = solve(RankingProblem(inst.data, lam=inst.lam), "cutting_plane", tol=1e-12, time_limit=1e-9)
    assert res.status == "user_limit" and res.iterations == 1


def test_tol_below_float64_warns_and_reports_the_best_gap():
    inst = Instance(8)
    with pytest.warns(InaccurateSolutionWarning, match="float64"):
        res = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-15)
    assert res.status == "optimal_inaccurate"
    assert res.extras["solver_status"] in ("float_limit", "stalled")
    assert 0 <= res.relative_gap <= 1e-9
    assert res.relative_gap == pytest.approx((res.objective - res.lower_bound) / res.objective)


def test_warm_start_from_the_solution_stops_at_once():
    inst = Instance(9)
    first = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-8)
    again = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-6, warm_start_w=first.w)
    assert again.status == "optimal"
    assert again.iterations < first.iterations


@pytest.mark.parametrize("kwargs, message", [
    ({"tol": 0.0}, "tol"), ({"tol": 2}, "tol"), ({"max_iter": 0}, "max_iter"), ({"lam": -1.0}, "lam"),
    ({"warm_start_w": np.zeros(2)}, "warm_start_w"), ({"time_limit": -1}, "time_limit"), ({"rho": 0}, "rho"),
    ({"n_shards": 2}, "dask client"), ({"start": "middle"}, "start must be one of 'auto', 'regression', 'zero'"),
    ({"start": np.array(["auto", "zero"])}, "start must be one of"), ({"start": None}, "start must be one of"),
])
def test_bad_options_are_refused(kwargs, message):
    inst = Instance(0)
    lam = kwargs.pop("lam", 0.1)
    with pytest.raises(ValidationError, match=message):
        solve(RankingProblem(inst.data, lam=lam), "cutting_plane", **kwargs)


def test_a_misspelt_option_names_the_valid_ones():
    problem = RankingProblem(Instance(0).data, lam=0.1)
    with pytest.raises(ValidationError, match=r"does not take 'max_iters'; valid: .*max_iter"):
        solve(problem, "cutting_plane", max_iters=10)
    with pytest.raises(ValidationError, match=r"does not take 'max_iter'; valid: .*max_iters"):
        solve(problem, "ecos", max_iter=10)
    with pytest.raises(ValidationError, match="takes no starting point"):
        solve(problem, "subgradient", warm_start=np.zeros(problem.n_features))
    with pytest.raises(ValidationError, match="is a starting w"):
        solve(problem, "cutting_plane", warm_start=True)


@pytest.mark.parametrize("seed", range(3))
def test_bundle_solves_the_simplex_qp_exactly(seed):
    rng = np.random.default_rng(seed)
    n, T, lam = 5, 12, 0.3
    A = rng.standard_normal((T, n))
    A[3] = A[2]  # a repeated plane: dependent rows must not break the active set
    b = rng.uniform(0, 2, T)
    bundle = Bundle(n, lam, capacity=4)  # also exercises growing
    for a, off in zip(A, b):
        bundle.add(a, off)
        bundle.solve()
    value, u = bundle.dual()
    beta = cp.Variable(T, nonneg=True)
    problem = cp.Problem(cp.Maximize(b @ beta - cp.sum_squares(A.T @ beta) / (4 * lam)), [cp.sum(beta) <= 1])
    problem.solve(solver="CLARABEL")
    assert value == pytest.approx(problem.value, rel=1e-9, abs=1e-9)
    # the dual value is that of the model problem's primal minimiser (no duality gap)
    w = -u / (2 * lam)
    assert lam * w @ w + max(0.0, np.max(A @ w + b)) == pytest.approx(value, rel=1e-8, abs=1e-9)
    assert np.all(bundle.beta[:bundle.size] >= 0) and bundle.beta[:bundle.size].sum() == pytest.approx(1.0)
    bundle.prune(0)
    assert bundle.dual()[0] == pytest.approx(value, rel=1e-12)


def test_trivial_planes_leave_the_weight_on_the_plane_r_at_least_0():
    # planes taken where no pair is violated (a = 0, b = 0) duplicate plane 0; the model's dual stays 0, with no NaN
    bundle = Bundle(3, 0.1)
    for _ in range(3):
        bundle.add(np.zeros(3), 0.0)
        bundle.solve()
        value, u = bundle.dual()
        assert value == 0.0 and not u.any()
        assert np.all(np.isfinite(bundle.beta[:bundle.size])) and bundle.beta[:bundle.size].sum() == pytest.approx(1)


def test_a_start_where_no_pair_is_violated_is_solved():
    # separable data (more features than documents) from three times the solution: every pair past the margin, so the
    # first planes are trivial; the solve still ends at the optimum
    data = make_ranking(n_queries=4, n_features=300, random_state=0)
    problem = RankingProblem(data, lam=0.1)
    first = solve(problem, "cutting_plane", start="zero")
    again = solve(problem, "cutting_plane", warm_start=3 * first.w)
    assert again.extras["start"] == "warm"
    assert_agree(first, again)


def test_no_warning_when_converged():
    inst = Instance(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = solve(RankingProblem(inst.data, mu="balanced", lam=inst.lam), "cutting_plane")
    assert res.status == "optimal" and res.extras["n_pairs"] == inst.pairs.n_pairs


@pytest.mark.parametrize("seed", range(3))
def test_bundle_aggregation_keeps_the_model_and_its_gram_matrix(seed):
    """With ``max_planes`` the older planes are replaced by their aggregate: the bundle never holds more planes,
    its Gram matrix stays that of its planes, the model's value is unchanged by making room (the aggregate is the
    same convex combination), and every aggregate is a minorant of the function the planes are cut from."""
    rng = np.random.default_rng(seed)
    n, lam = 4, 0.3
    M, c = rng.standard_normal((30, n)), rng.standard_normal(30)  # R(w) = Σ_j max(0, m_jᵀ w + c_j), convex

    def plane(w):
        on = M @ w + c > 0
        a = M[on].sum(axis=0)
        return a, float(np.maximum(M @ w + c, 0).sum() - a @ w)

    bundle = Bundle(n, lam, max_planes=6)
    aggregated = False
    w = np.zeros(n)
    for _ in range(40):
        if bundle.size == 6:  # full: the next plane makes room first
            before = bundle.dual()[0]
            bundle._make_room()
            assert bundle.dual()[0] == pytest.approx(before, rel=1e-12, abs=1e-12)
            aggregated = True
        bundle.add(*plane(w))
        bundle.solve()
        T = bundle.size
        assert T <= 6
        np.testing.assert_allclose(bundle.K[:T, :T], bundle.A[:T] @ bundle.A[:T].T, atol=1e-9)
        for a, b in zip(bundle.A[1:T], bundle.b[1:T]):  # every plane, aggregates included, lies below R
            for x in rng.standard_normal((5, n)) * 3:
                assert a @ x + b <= np.maximum(M @ x + c, 0).sum() + 1e-9
        w = -bundle.dual()[1] / (2 * lam) + 0.1 * rng.standard_normal(n)
    assert aggregated


def test_a_plane_limit_still_certifies_the_optimum():
    inst = Instance(11, lam=0.02)
    _, F_ref = reference(inst)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    run = cutting_plane(oracle, inst.lam, tol=1e-8, newton_gap=None, max_planes=8)
    assert run.status == "optimal" and run.relative_gap <= 1e-8
    assert np.all(run.history["planes"] <= 7) and run.history["planes"].max() == 7  # the limit was reached
    assert np.all(run.history["dual_objective"] <= F_ref * (1 + 1e-10))
    assert run.objective == pytest.approx(F_ref, rel=2e-8)
    for bad, message in ((3, "at least 4"), (0, "max_planes"), ("some", "max_planes")):
        with pytest.raises(ValidationError, match=message):
            cutting_plane(oracle, inst.lam, max_planes=bad)
    with pytest.raises(ValidationError, match="max_planes is for problems given as documents"):
        cutting_plane(oracle, inst.lam, max_planes=8, keep_points=True)
    with pytest.raises(ValidationError, match="max_planes is for problems given as documents"):  # through the door
        solve(RankingProblem(inst.pairs, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", max_planes=8)


def test_reading_the_pairs_of_a_problem_given_as_documents_changes_no_solve():
    """``problem.weights`` forms the pairs; the problem is still stated on its documents: the same path, the same
    options, the same solution, and the door's automatic choice stays the pair-free solver."""
    from cvxrank.solvers.registry import AUTO_PAIRFREE_PAIRS, choose_solver

    inst = Instance(11, lam=0.02)
    problem = RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam)
    before = solve(problem, "cutting_plane", max_planes=8)
    _ = problem.weights
    assert problem.has_pairs and not problem.needs_pairs
    after = solve(problem, "cutting_plane", max_planes=8)
    assert after.objective == before.objective and after.extras["oracle_calls"] == before.extras["oracle_calls"]
    assert RankingProblem(inst.pairs, tau=inst.tau, mu=inst.mu, lam=inst.lam).needs_pairs
    big = RankingProblem(make_ranking(n_queries=60, docs_per_query=(40, 60), n_features=3, random_state=0), lam=0.1)
    assert big.n_pairs >= AUTO_PAIRFREE_PAIRS and choose_solver(big) == "cutting_plane"
    _ = big.pairs
    assert choose_solver(big) == "cutting_plane"
    assert choose_solver(RankingProblem(big.pairs, lam=0.1)) == "clarabel"  # given as pairs



def test_blas_threads_limits_blas_inside_and_restores_it_after():
    """The cached controller limits every BLAS library loaded, and leaves them as they were on exit."""
    from threadpoolctl import threadpool_info

    from cvxrank.native.cutting_plane import blas_threads

    def blas():
        return [(i["filepath"], i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas()
    assert before  # numpy's BLAS at least
    with blas_threads(1):
        assert all(n == 1 for _, n in blas())
    assert blas() == before
    with blas_threads(None):
        assert blas() == before


def test_planes_that_stall_on_a_vertex_finish_on_the_pairs_at_the_margin():
    """Features of magnitude 1,000 at λ = 0.5 put the optimum on a vertex of the hinge (pairs exactly on the margin).
    From w = 0 the planes' bound reaches it but their candidates stayed 1.3e-5 above it, ``stalled`` after 899
    calls; the exact finish on the pairs near the margin at their point, tried when they stall, certifies."""
    from cvxrank.data import RankingData

    X = 1000.0 * np.array([[2, 2, 0, -2, 1], [-2, -1, 2, 2, 2], [2, -2, 2, 1, 1], [0, -2, 0, -1, 2], [1, -1, -1, 0, -2],
                           [0, 2, -1, 0, 2], [2, 0, 2, 1, 2], [-2, 1, -1, 2, 2], [0, -1, 0, -1, -2], [-1, 0, 2, 0, -1],
                           [-2, -1, 2, -2, -2]], dtype=float)
    data = RankingData(X, [0, 1, 1, 0, 0, 1, 0, 0, 1, 0, 1], qid=[0, 0, 1, 1, 1, 4, 4, 5, 5, 5, 5])
    problem = RankingProblem(data, tau={(1, 0): 10.0}, mu="balanced", lam=0.5)
    ref = solve(problem, "clarabel")
    for start in ({"start": "zero"}, {"warm_start": np.zeros(5)}):
        result = solve(problem, "cutting_plane", tol=1e-6, **start)
        assert result.status == "optimal", result.extras["solver_status"]
        assert_agree(result, ref)
