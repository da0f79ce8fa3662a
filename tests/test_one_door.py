"""One door: every solver through ``cvxrank.solve``, one objective scale, options checked once."""

import importlib
import warnings

import numpy as np
import pytest

import cvxrank as cr
from cvxrank.exceptions import InaccurateSolutionWarning, SolverNotAvailableError, ValidationError
from cvxrank.solvers import FALLBACK_CHAIN, NATIVE_SOLVERS, SOLVERS, available_solvers, solve, solver_options

#: The public API of ``import cvxrank``: a name added or removed is a decision, made here.
PUBLIC = {
    "__version__", "DEFAULT_LAM", "Certificate", "Costs", "CvxrankError", "Formulation", "InaccurateSolutionWarning",
    "MemoryBudgetError", "PairSet", "RankingData", "RankingProblem", "SolveResult", "SolverError",
    "SolverNotAvailableError", "ValidationError", "available_solvers", "balanced_mu", "build", "build_dual",
    "build_hinge", "build_lifted_primal", "build_primal", "choose_formulation", "dual_objective", "estimate_tau",
    "hinge_objective", "load_letor", "make_ecml_simulation", "make_ohsumed_like", "make_pairs", "make_ranking",
    "make_web_like", "pair_weights", "preference_pairs", "qp_objective", "solve", "set_memory_budget",
    "theorem1_C", "verify_theorem1",
    "ClickLog", "click_pairs", "click_problem", "make_clicks", "read_clicks", "write_clicks",
}

#: L = 2λM and the sums behind a certificate agree to this relative rounding.
ROUNDING = 64 * np.finfo(float).eps


def _problem(**kwargs):
    data = cr.make_ranking(n_queries=4, docs_per_query=(5, 8), n_features=3, random_state=0)
    return cr.RankingProblem(data, tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu="balanced", lam=0.3, **kwargs)


def test_the_public_names_are_the_listed_ones_and_all_resolve():
    assert set(cr.__all__) == PUBLIC
    for name in cr.__all__:
        assert getattr(cr, name) is not None
    assert "solve_pairfree" not in cr.__all__ and "solve_with_fallback" not in cr.__all__


def test_help_shows_the_one_door():
    doc = cr.solve.__doc__
    assert "the one door" in doc and '"auto"' in doc and '"fallback"' in doc
    assert cr.solve.__kwdefaults__["warm_start"] is None


@pytest.mark.parametrize("name", available_solvers())
def test_every_solver_is_reached_through_solve_alone(name):
    """Each solver of the registry that this machine has: one call of ``solve`` and nothing else."""
    spec = SOLVERS[name]
    problem = _problem()
    if "hinge" not in spec.losses:
        problem = problem.with_variant(cr.variants.Variant(loss=spec.losses[0]))
    options = spec.max_iter(50) if name == "gd" else {}  # gd's fixed step is slow by design: capped here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = solve(problem, name, **options)
    assert isinstance(res, cr.SolveResult) and res.solver == name
    assert res.status in ("optimal", "user_limit", "optimal_inaccurate")
    assert res.objective == pytest.approx(problem.hinge_objective(res.w), rel=1e-12)
    assert res.lower_bound <= res.objective * (1 + ROUNDING)


def test_objective_is_one_scale_across_every_formulation_and_solver():
    """``objective`` is L(w) of (9) for every formulation x solver; certified values agree within
    the certificates, and no certified lower bound exceeds any objective (weak duality)."""
    problem = _problem()
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        for name in [s for s in ("clarabel", "ecos", "osqp", "scs") if s in available_solvers()]:
            for form in ("primal", "lifted", "dual", "hinge"):
                results.append(solve(cr.build(problem, form), name))
        for name in ("subgradient", "cutting_plane"):
            results.append(solve(problem, name))
    certified = [r for r in results if r.found]
    assert any(r.solver == "clarabel" for r in certified)
    for r in results:
        assert r.objective == pytest.approx(problem.hinge_objective(r.w), rel=1e-12)
        assert r.objective == pytest.approx(2 * problem.lam * r.qp_objective, rel=ROUNDING)
        assert r.formulation_objective == (r.qp_objective if r.formulation_scale == "M" else r.objective)
    best_lower = max(r.lower_bound for r in results)
    assert best_lower <= min(r.objective for r in results) * (1 + ROUNDING)
    ref = min(certified, key=lambda r: r.gap_L)
    for r in certified:
        assert abs(r.objective - ref.objective) <= max(r.gap_L, ref.gap_L) + ROUNDING * ref.objective, r


def test_the_certificate_is_one_object():
    res = solve(_problem(), "clarabel")
    cert = res.certificate
    assert isinstance(cert, cr.Certificate) and str(cert) == cert.kind == "duality gap"
    assert (res.gap_L, res.gap_M, res.relative_gap, res.distance_bound) == (
        cert.gap_L, cert.gap_M, cert.relative_gap, cert.distance_bound)
    assert cert.gap_L == pytest.approx(2 * res.lam * cert.gap_M, rel=1e-12)
    assert cert.proves(res.tol) and res.lower_bound == res.objective - cert.gap_L


def test_auto_and_fallback_are_policies_of_solve():
    problem = _problem()
    assert solve(problem).solver == "clarabel"  # "auto" on a small problem: the reference
    chained = solve(problem, "fallback")
    assert chained.found and chained.solver == FALLBACK_CHAIN[0]
    assert [a["solver"] for a in chained.extras["attempts"]] == [FALLBACK_CHAIN[0]]
    chain = solve(problem, ["gd", "clarabel"], gd={"max_iter": 2})
    assert [a["solver"] for a in chain.extras["attempts"]] == ["gd", "clarabel"] and chain.solver == "clarabel"
    with pytest.raises(ValidationError, match="one dict per solver"):
        solve(problem, "fallback", max_iter=3)
    with pytest.raises(ValidationError, match="'osqp' does not take 'max_itr'"):
        solve(problem, ["osqp", "clarabel"], osqp={"max_itr": 3})


@pytest.mark.parametrize("name", [n for n in SOLVERS if n in available_solvers() and solver_options(n) is not None])
def test_a_misspelt_option_is_refused_naming_the_valid_ones(name):
    with pytest.raises(ValidationError, match=r"does not take 'max_iterations'; valid: "):
        solve(_problem(), name, max_iterations=3)


def test_native_options_are_the_backends_keywords():
    assert {"max_iter", "time_limit", "warm_start_w", "rho", "oracle_kernel"} <= solver_options("cutting_plane")
    assert {"max_iter", "polish", "check_every"} <= solver_options("subgradient")
    assert "tol" not in solver_options("cutting_plane") and "formulation" not in solver_options("gd")
    assert set(NATIVE_SOLVERS) <= set(SOLVERS)


def test_warm_start_maps_to_the_solvers_own_start_or_is_refused():
    problem = _problem()
    first = solve(problem, "cutting_plane")
    again = solve(problem.with_lam(0.25), "cutting_plane", warm_start=first.w)
    assert again.found
    with pytest.raises(ValidationError, match="takes no starting point"):
        solve(problem, "subgradient", warm_start=first.w)
    with pytest.raises(ValidationError, match="True or False"):
        solve(problem, "clarabel", warm_start=first.w)


def test_a_solver_that_cannot_take_the_variant_says_what_blocks():
    problem = _problem(variant=cr.variants.Variant(l1=0.5))
    with pytest.raises(SolverNotAvailableError, match=r"'cutting_plane' does not solve the variant: it does not take l1"):
        solve(problem, "cutting_plane")


SQUARED = cr.variants.Variant(loss="squared_hinge")


@pytest.mark.parametrize("name, variant, options, message", [
    ("truncated_newton", SQUARED, {"threads": "x"}, "threads must be a non-negative integer"),
    ("prox_newton", SQUARED, {"threads": -1}, "threads must be a non-negative integer"),
    ("truncated_newton", SQUARED, {"threads": 2.5}, "threads must be a non-negative integer"),
    ("truncated_newton", SQUARED, {"warm_start": "abc"}, "warm_start must be finite numbers, got 'abc'"),
    ("cutting_plane", None, {"warm_start_w": ["a", "b", "c"]}, r"warm_start_w must be 3 finite numbers, got \['a'"),
    ("cutting_plane", None, {"warm_start": [0.0, np.nan, 0.0]}, "warm_start must be finite numbers; entry 1 is nan"),
    ("cutting_plane", None, {"warm_start": [0.0, 1.0]}, "warm_start_w must be 3 finite numbers, got 2"),
    ("gd", None, {"learning_rate": "x"}, r"learning_rate must be a number in \(0, 3.33333\) or None"),
    ("gd", None, {"learning_rate": True}, "learning_rate must be a number"),
    ("subgradient", None, {"polish": "yes"}, "polish must be True or False, got 'yes'"),
])
def test_an_options_value_is_checked_whatever_the_solver(name, variant, options, message):
    """A value of the wrong kind is refused by name with what it must be, before any work: not a ValueError from
    deep inside, and not taken as something else (``True`` as a step of 1, ``"yes"`` as a truth value)."""
    problem = _problem() if variant is None else _problem(variant=variant)
    with pytest.raises(ValidationError, match=message):
        solve(problem, name, **options)


def test_a_path_takes_its_warm_start_as_a_flag():
    from cvxrank.path import PathSolver

    with pytest.raises(ValidationError, match="warm_start must be True or False, got 'yes'"):
        PathSolver(_problem(), solver="cutting_plane", warm_start="yes")


def test_the_solvers_offered_for_a_variant_take_the_problem_too():
    """Preference groups with an l1 term: the pair-free solver that takes l1 (prox_newton) reads graded documents
    only, so the refusal does not offer it."""
    groups = cr.preference_groups.PreferenceGroups(_problem().data, group=[0, 0, 0, 1, 1], document=[0, 1, 2, 4, 5],
                                                   weight=[1.0, 0.0, 2.0, 0.0, 1.0])
    problem = cr.RankingProblem(groups, lam=0.5, variant=cr.variants.Variant(loss="squared_hinge", l1=0.1))
    with pytest.raises(SolverNotAvailableError, match="solvers that can: ") as refusal:
        solve(problem, "truncated_newton")
    assert "prox_newton" not in str(refusal.value) and "clarabel" in str(refusal.value)


@pytest.mark.parametrize("old, new", [
    (lambda p: cr.solve_pairfree(p.data, lam=p.lam), lambda p: solve(p, "cutting_plane")),
    (lambda p: importlib.import_module("cvxrank.native.cutting_plane").solve_cutting_plane(p),
     lambda p: solve(p, "cutting_plane")),
    (lambda p: importlib.import_module("cvxrank.native.truncated_newton").solve_truncated_newton(
        p.with_variant(cr.variants.Variant(loss="squared_hinge"))),
     lambda p: solve(p.with_variant(cr.variants.Variant(loss="squared_hinge")), "truncated_newton")),
    (lambda p: cr.solve_with_fallback(p, ["clarabel"]), lambda p: solve(p, ["clarabel"])),
])
def test_the_old_doors_warn_and_lead_to_the_same_solution(old, new):
    problem = cr.RankingProblem(cr.make_ranking(n_queries=4, docs_per_query=(5, 8), n_features=3, random_state=0),
                                lam=0.3)
    with pytest.warns(DeprecationWarning, match="cvxrank.solve"):
        a = old(problem)
    b = new(problem)
    assert a.found and b.found
    assert np.linalg.norm(a.w - b.w) <= a.distance_bound + b.distance_bound


def test_a_chain_hands_the_problem_itself_to_each_solver():
    """A native solver in a chain reads the problem pair-free: the chain compiles nothing first."""
    problem = _problem()
    res = solve(problem, ["cutting_plane"])
    assert res.found and res.formulation == "pairfree" and not problem.has_pairs
    with pytest.raises(ValidationError, match="not in it"):
        solve(problem, ["clarabel"], osqp={"max_iter": 3})


def test_listwise_problems_take_one_solver_not_a_chain():
    from cvxrank.listwise import ListwiseProblem

    problem = ListwiseProblem(cr.make_ranking(n_queries=2, docs_per_query=4, n_features=2, random_state=0))
    for chain in ("fallback", ["newton", "clarabel"]):
        with pytest.raises(ValidationError, match="are for the pairwise problems; solve the listwise problem with one"):
            solve(problem, chain)


def test_one_default_lambda():
    """Every default λ of cvxrank is DEFAULT_LAM (the command line writes the number: it must agree)."""
    import inspect

    from cvxrank.cli import build_parser
    from cvxrank.estimators import RankSVM
    from cvxrank.path import PathSolver
    from cvxrank.study import CostSetting

    data = cr.make_ranking(n_queries=2, random_state=0)
    assert cr.RankingProblem(data).lam == cr.DEFAULT_LAM
    assert RankSVM().fit(data).lam_ == cr.DEFAULT_LAM
    assert CostSetting().lam == cr.DEFAULT_LAM
    assert inspect.signature(cr.verify_theorem1).parameters["lam"].default == cr.DEFAULT_LAM
    assert PathSolver(cr.RankingProblem(cr.make_pairs(data))).solve().lam == cr.DEFAULT_LAM
    parser = build_parser()
    assert float(parser.parse_args(["compare", "--out", "x"]).lams) == cr.DEFAULT_LAM
    assert parser.parse_args(["bench", "formulations"]).lam == cr.DEFAULT_LAM


def test_the_listwise_problem_goes_through_the_same_door():
    from cvxrank.listwise import ListwiseProblem, listwise_objective

    data = cr.make_ranking(n_queries=3, docs_per_query=(4, 7), n_features=3, random_state=1)
    problem = ListwiseProblem(data, C=2.0, pcf=3.0)
    newton = solve(problem)  # "auto": Newton's method
    conic = solve(problem, "clarabel")
    assert newton.solver == "newton" and newton.found and conic.found
    assert isinstance(newton, cr.SolveResult) and isinstance(newton.certificate, cr.Certificate)
    assert newton.formulation_scale == conic.formulation_scale == "f" and newton.lam == 1 / (2 * 2.0)
    assert newton.lower_bound <= conic.objective and conic.lower_bound <= newton.objective
    assert newton.objective == pytest.approx(listwise_objective(data, newton.w, C=2.0, pcf=3.0), rel=1e-12)
    assert abs(newton.objective - conic.objective) <= newton.gap_bound + conic.gap_bound
    assert solve(problem, "newton", warm_start=newton.w).iterations <= newton.iterations
    assert "newton" in available_solvers("listwise") and "newton" not in available_solvers()
    with pytest.raises(SolverNotAvailableError, match="does not solve the listwise problem"):
        solve(problem, "osqp")
    with pytest.raises(SolverNotAvailableError, match="not a pairwise ranking problem"):
        solve(_problem(), "newton")
    with pytest.raises(ValidationError, match="does not take 'max_iters'"):
        solve(problem, "newton", max_iters=3)
