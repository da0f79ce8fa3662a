"""Parameter grids re-solved through CVXPY Parameters (DPP): same answers as fresh builds, no recompilation."""

import numpy as np
import pytest

from cvxrank.costs import pair_weights, theorem1_C
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.formulations import build, build_hinge
from cvxrank.pairs import make_pairs
from cvxrank.path import PathSolver, solve_path
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import assert_agree

LAMS = [2.0, 0.5, 0.1]


@pytest.fixture(scope="module")
def pairs():
    return make_pairs(make_ranking(n_queries=5, docs_per_query=(5, 9), n_features=4, random_state=3))


def fresh(pairs, formulation, lam, weights=None, solver="clarabel", **options):
    weights = np.ones(pairs.n_pairs) if weights is None else weights
    if formulation == "hinge":
        form = build_hinge(pairs, weights=weights, lam=lam)
    else:
        form = build(pairs, C=theorem1_C(weights, lam), formulation=formulation)
    return solve(form, solver, **options)


@pytest.mark.parametrize("formulation", ["primal", "lifted", "dual", "hinge"])
def test_each_resolve_equals_a_fresh_build_and_nothing_is_recompiled(pairs, formulation):
    path = PathSolver(RankingProblem(pairs), formulation=formulation, solver="clarabel", tol=1e-8)
    compiled, results = [], []
    for lam in LAMS:
        results.append(path.solve(weights=1.0, lam=lam))
        compiled.append(path.compiled)
        problem = path.formulation.problem
    assert compiled[0] is not None and all(c is compiled[0] for c in compiled)  # one compilation, reused
    assert problem._cache.param_prog is compiled[0] and path.n_solves == 3
    for lam, got in zip(LAMS, results):
        ref = fresh(pairs, formulation, lam, tol=1e-8)
        assert_agree(got, ref)
    # the path moves: a smaller lambda fits harder (larger C, larger ||w||)
    norms = [np.linalg.norm(r.w) for r in results]
    assert norms[0] < norms[1] < norms[2]


def test_solve_path_over_tau_and_mu_matches_fresh_solves(pairs):
    taus = [None, {t: float(i + 1) for i, t in enumerate(pairs.types)}]
    path = solve_path(RankingProblem(pairs), lams=[1.0, 0.2], taus=taus, mus=[None, "balanced"], formulation="lifted")
    assert len(path) == 8 and len(path.points) == 8
    assert [p["lam"] for p in path.points[:2]] == [1.0, 0.2]  # lambda varies fastest
    frame = path.to_frame()
    assert list(frame.columns[:3]) == ["lam", "tau", "mu"] and (frame["status"] == "optimal").all()
    for point, got in zip(path.points, path):
        w = pair_weights(pairs, tau=point["tau"], mu=point["mu"])
        ref = fresh(pairs, "lifted", point["lam"], w)
        assert_agree(got, ref)  # M is 1-strongly convex in w: a certified gap G puts w within sqrt(2 G) of w*
    assert path.formulation.parameters.keys() == {"C"}  # a tau/mu grid holds one cost per pair
    assert path.coefs.shape == (8, pairs.n_features)


def test_a_C_grid_and_warm_started_osqp_give_the_fresh_answers(pairs):
    Cs = [0.5, np.linspace(0.1, 1.0, pairs.n_pairs)]
    path = solve_path(RankingProblem(pairs), Cs=Cs, formulation="primal", solver="osqp", warm_start=True)
    for C, got in zip(Cs, path):
        ref = solve(build(pairs, C=np.broadcast_to(C, pairs.n_pairs).copy(), formulation="primal"), "clarabel")
        assert_agree(got, ref)
    hinge = solve_path(RankingProblem(pairs), Cs=Cs, formulation="hinge")  # hinge form with weights = C, lambda = 1/2
    for a, b in zip(hinge, path):
        assert_agree(a, b)


def test_native_solvers_read_the_problem_and_compile_nothing(pairs):
    path = solve_path(RankingProblem(pairs), lams=LAMS, formulation="native", solver="subgradient")
    assert path.formulation is None and "native" in repr(path)
    for lam, got in zip(LAMS, path):
        ref = fresh(pairs, "dual", lam, tol=1e-9)
        assert got.status == "optimal" and got.lam == lam
        # Within the two certificates: |w - w_ref| <= b(got) + b(ref), and the optimum within the gaps.
        assert np.linalg.norm(got.w - ref.w) <= got.distance_bound + ref.distance_bound
        assert abs(got.qp_objective - ref.qp_objective) <= max(got.gap_M, ref.gap_M) * (1 + 1e-9)


def test_auto_resolves_to_a_named_formulation(pairs):
    path = solve_path(RankingProblem(pairs), lams=[1.0], formulation="auto")
    assert path.formulation.name in ("primal", "lifted")


@pytest.mark.parametrize("kwargs, match", [
    ({"lams": [1.0], "Cs": [1.0]}, "excludes"),
    ({}, "give lams"),
    ({"lams": []}, "empty"),
    ({"lams": [-1.0]}, "positive"),
    ({"lams": [1.0], "weights": 1.0, "mus": ["balanced"]}, "not both"),
    ({"lams": [1.0], "formulation": "lifed"}, "primal, lifted, dual, hinge, auto, native"),
    ({"lams": [1.0], "solver": "nope"}, "installed"),
    ({"lams": [1.0], "formulation": "native", "solver": "clarabel"}, "native solvers"),
])
def test_bad_grids_are_refused(pairs, kwargs, match):
    with pytest.raises(ValidationError, match=match):
        solve_path(RankingProblem(pairs), **kwargs)


def test_a_lambda_path_moves_one_scale_and_other_costs_rebuild_once(pairs):
    """A λ grid only scales C (parameter "scale"); costs that are no multiple switch to per-pair parameters once."""
    path = PathSolver(RankingProblem(pairs), formulation="lifted")
    first = path.solve(weights=1.0, lam=1.0)
    compiled = path.compiled
    assert path.formulation.parameters.keys() == {"scale"}
    second = path.solve(weights=1.0, lam=0.25)
    assert path.compiled is compiled and path.n_builds == 1
    assert path.formulation.parameters["scale"].value == pytest.approx(4.0, rel=1e-14)
    assert second.qp_objective == pytest.approx(fresh(pairs, "lifted", 0.25).qp_objective, rel=1e-8)
    assert second.qp_objective > first.qp_objective
    weights = np.linspace(0.5, 2.0, pairs.n_pairs)
    third = path.solve(weights=weights, lam=0.25)
    assert path.n_builds == 2 and path.formulation.parameters.keys() == {"C"}
    compiled = path.compiled
    assert third.qp_objective == pytest.approx(fresh(pairs, "lifted", 0.25, weights).qp_objective, rel=1e-8)
    path.solve(weights=2 * weights, lam=0.25)
    assert path.compiled is compiled and path.n_builds == 2
    with pytest.raises(ValidationError, match="unknown cost parametrization"):
        PathSolver(RankingProblem(pairs), costs="vector")


def test_warm_start_policy_follows_the_measurements(pairs):
    """OSQP warm, Clarabel afresh, SCS warm only while its costs sit in the objective (scale form)."""
    assert PathSolver(RankingProblem(pairs), solver="osqp").warm_start is True
    assert PathSolver(RankingProblem(pairs), solver="clarabel").warm_start is False
    assert PathSolver(RankingProblem(pairs), solver="clarabel", warm_start=True).warm_start is True
    scs = PathSolver(RankingProblem(pairs), solver="scs", formulation="lifted")
    assert scs.warm_start is True
    scs.solve(weights=1.0, lam=1.0)
    scs.solve(weights=np.linspace(0.5, 2.0, pairs.n_pairs), lam=1.0)  # no multiple: per-pair costs
    assert scs.costs == "per_pair" and scs.warm_start is False
    assert PathSolver(RankingProblem(pairs), solver="scs", costs="per_pair").warm_start is False
    assert PathSolver(RankingProblem(pairs), solver="cutting_plane", formulation="native").warm_start is True
    assert PathSolver(RankingProblem(pairs), solver="gd", formulation="native").warm_start is False


def test_cutting_plane_path_starts_each_point_from_the_previous_w(pairs, monkeypatch):
    import importlib

    cp_module = importlib.import_module("cvxrank.native.cutting_plane")  # the module, not the function
    starts, real = [], cp_module.cutting_plane

    def spy(oracle, lam, **kw):
        starts.append(None if kw.get("warm_start_w") is None else np.array(kw["warm_start_w"]))
        return real(oracle, lam, **kw)

    monkeypatch.setattr(cp_module, "cutting_plane", spy)
    warm = solve_path(RankingProblem(pairs), lams=LAMS, formulation="native", solver="cutting_plane")
    cold = solve_path(RankingProblem(pairs), lams=LAMS, formulation="native", solver="cutting_plane", warm_start=False)
    assert starts[0] is None and all(s is None for s in starts[3:])
    for start, previous in zip(starts[1:3], warm.results[:2]):
        np.testing.assert_array_equal(start, previous.w)
    for lam, w, c in zip(LAMS, warm, cold):
        ref = fresh(pairs, "dual", lam)
        assert w.status == c.status == "optimal"
        assert w.qp_objective == pytest.approx(ref.qp_objective, rel=1e-5)
        assert c.qp_objective == pytest.approx(ref.qp_objective, rel=1e-5)


def test_the_path_takes_a_problem_and_its_costs(pairs):
    """A problem's own weights and variant are the path's defaults; a bare PairSet is deprecated."""
    weights = np.linspace(0.5, 2.0, pairs.n_pairs)
    problem = RankingProblem(pairs, weights=weights, lam=0.3)
    path = solve_path(problem, lams=[0.3], formulation="lifted")
    assert_agree(path[0], solve(problem, "clarabel"))
    assert PathSolver(problem).solve().lam == 0.3
    with pytest.warns(DeprecationWarning, match="RankingProblem"):
        PathSolver(pairs)


def test_auto_picks_the_pair_free_solver_for_a_native_path(pairs):
    path = PathSolver(RankingProblem(pairs), formulation="native")
    assert path.solver == "cutting_plane"
    assert [path.solve(lam=lam).found for lam in (1.0, 0.3)] == [True, True]
