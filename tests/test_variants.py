"""Variants of the papers' problem (cvxrank.variants): each against an independent CVXPY problem
written here from the raw data, with τ and μ, for every installed solver; the certificate's
distance bound holds against that high-precision reference."""

import warnings

import cvxpy as cp
import numpy as np
import pytest

import cvxrank as cr
from cvxrank.exceptions import InaccurateSolutionWarning, SolverNotAvailableError, ValidationError
from cvxrank.variants import Variant
from tests.conftest import CORE_CVXPY, brute_force_pairs

TAU = {(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}
VARIANTS = {
    "squared_hinge": Variant(loss="squared_hinge"),
    "grade_margin": Variant(margin="grade_difference"),
    "gain_margin": Variant(margin="gain_difference"),
    "elastic_net": Variant(l1=0.5),
    "nonnegative": Variant(lower=0.0),
    "squared_gain_margin": Variant(loss="squared_hinge", margin="gain_difference"),
    "all_at_once": Variant(loss="squared_hinge", margin="grade_difference", l1=0.3, lower=[0, -1, -1, -1],
                           upper=2.0),
}


def reference(data, variant, lam):
    """The variant written from the raw data: pairs by brute force, (9) with its loss, margins, ℓ1, bounds."""
    D, c, m = brute_force_pairs(data, TAU, "balanced", variant.margin)
    w = cp.Variable(D.shape[1])
    t = cp.pos(m - D @ w)
    loss = c @ (cp.square(t) if variant.loss == "squared_hinge" else t)
    constraints = []
    if variant.lower is not None:
        constraints.append(w >= variant.lower)
    if variant.upper is not None:
        constraints.append(w <= variant.upper)
    prob = cp.Problem(cp.Minimize(loss + lam * cp.sum_squares(w) + variant.l1 * cp.norm1(w)), constraints)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "may be inaccurate": its value is recomputed below
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    lo = -np.inf if variant.lower is None else variant.lower
    hi = np.inf if variant.upper is None else variant.upper
    w_ref = np.clip(np.asarray(w.value), lo, hi)  # feasible
    s = np.maximum(m - D @ w_ref, 0.0)
    L_ref = float(c @ (s * s if variant.loss == "squared_hinge" else s) + lam * w_ref @ w_ref
                  + variant.l1 * np.abs(w_ref).sum())  # L at a feasible point: an upper bound on L*
    return w_ref, L_ref


@pytest.fixture(scope="module")
def data():
    return cr.make_ranking(n_queries=5, docs_per_query=(5, 9), n_features=4, random_state=3)


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def case(request, data):
    variant = VARIANTS[request.param]
    lam = 0.2
    problem = cr.RankingProblem(data, tau=TAU, mu="balanced", lam=lam, variant=variant)
    ref = cr.solve(problem, "clarabel")
    assert ref.status == "optimal", ref
    return request.param, problem, ref, reference(data, variant, lam)


@pytest.mark.parametrize("form", ["primal", "lifted", "hinge", "dual"])
@pytest.mark.parametrize("solver", CORE_CVXPY)
def test_variant_agrees_with_an_independent_cvxpy_problem_within_its_certificate(case, form, solver):
    name, problem, ref, (w_ind, L_ind) = case
    if form == "dual" and name in ("nonnegative", "all_at_once"):  # bounds on w: the primal forms only
        with pytest.raises(ValidationError, match="compiles into the 'primal', 'lifted', 'hinge' formulations"):
            cr.build(problem, formulation="dual")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = cr.solve(cr.build(problem, formulation=form), solver)
    check_against_independent(problem, res, w_ind, L_ind)


def test_pairfree_solver_agrees_with_the_independent_problem(case):
    """The pair-free solver that takes the variant (margins per grade pair; squared hinge), never forming pairs."""
    name, problem, ref, (w_ind, L_ind) = case
    able = [s for s in ("cutting_plane", "truncated_newton") if cr.solvers.get_spec(s).accepts(problem.variant)]
    assert bool(able) == (name in ("squared_hinge", "grade_margin", "gain_margin", "squared_gain_margin"))
    for solver in able:
        fresh = cr.RankingProblem(problem.data, tau=TAU, mu="balanced", lam=problem.lam, variant=problem.variant)
        res = cr.solve(fresh, solver, tol=1e-8)
        assert not fresh.has_pairs and res.formulation == "pairfree" and res.status == "optimal"
        check_against_independent(problem, res, w_ind, L_ind)
        assert res.hinge_objective == pytest.approx(problem.hinge_objective(res.w), rel=1e-10)  # from the pairs


def check_against_independent(problem, res, w_ind, L_ind):
    # the objective as stated: recomputed here from the independent problem's terms at res.w
    assert res.hinge_objective == pytest.approx(2 * problem.lam * res.qp_objective, rel=1e-12)
    # the certificate's lower bound never exceeds the independent optimum (soundness) ...
    L_lower = res.hinge_objective - res.gap_L
    assert L_lower <= L_ind * (1 + 1e-9) + 1e-12
    if res.status != "optimal":  # honest: e.g. OSQP stalls with bounds; its gap really is above tol
        assert res.relative_gap > res.tol
        return
    # ... and the proved distance holds against the independent point: L is 2λ-strongly convex, so
    # ‖w_ind − w*‖² ≤ (L(w_ind) − L*)/λ ≤ (L(w_ind) − L_lower)/λ, a bound proved without trusting w_ind.
    rounding = 64 * np.finfo(float).eps * (abs(L_ind) + abs(L_lower))
    ind_bound = np.sqrt((max(L_ind - L_lower, 0.0) + rounding) / problem.lam)
    assert np.linalg.norm(res.w - w_ind) <= res.distance_bound + ind_bound
    assert res.hinge_objective - L_ind <= res.gap_L * (1 + 1e-9) + 1e-12 * L_ind


def test_default_variant_is_the_papers_problem(data):
    a = cr.solve(cr.RankingProblem(data, tau=TAU, lam=0.2), "clarabel")
    b = cr.solve(cr.RankingProblem(data, tau=TAU, lam=0.2, variant=Variant()), "clarabel")
    assert np.array_equal(a.w, b.w) and a.certificate.kind == b.certificate.kind == "duality gap"


def test_variants_are_refused_where_they_cannot_compile(data):
    problem = cr.RankingProblem(data, lam=0.2, variant=Variant(l1=0.1))
    assert cr.build(problem, formulation="dual").name == "dual"  # the elastic net's conjugate is a closed form
    with pytest.raises(ValidationError, match="does not state the variant.*'primal', 'lifted', 'hinge'"):
        cr.build(problem.with_variant(Variant(lower=0.0)), formulation="dual")
    with pytest.raises(SolverNotAvailableError, match="does not solve the variant.*solvers that can: .*clarabel"):
        cr.solve(problem, "cutting_plane")
    with pytest.raises(SolverNotAvailableError, match="'truncated_newton' does not solve the papers' problem.*"
                                                      "can: .*cutting_plane"):
        cr.solve(cr.RankingProblem(data, lam=0.2), "truncated_newton")
    assert cr.build(problem).name in ("primal", "lifted")  # auto picks a form that can


@pytest.mark.parametrize("kwargs, match", [
    ({"loss": "logistic"}, "unknown loss"),
    ({"margin": "rank"}, "unknown margin"),
    ({"l1": -1.0}, "l1 must be"),
    ({"lower": 1.0}, "allow w = 0"),
    ({"lower": [0.0, 0.0]}, "one per feature"),
])
def test_bad_variants(data, kwargs, match):
    with pytest.raises(ValidationError, match=match):
        cr.RankingProblem(data, lam=0.2, variant=Variant(**kwargs))


@pytest.mark.parametrize("kwargs, match", [
    ({"l1": 1e300}, r"l1=1e\+300 is too large: l1 must lie in \[0, 1e\+100\]; beyond it rho = l1 / \(2 lam\)"),
    ({"l1": float("inf")}, "l1 must be a non-negative finite number, got inf"),
    ({"l1": float("nan")}, "l1 must be a non-negative finite number, got nan"),
    ({"lower": float("nan")}, "lower must be a number or None"),
    ({"lower": float("inf")}, "lower=inf excludes w = 0"),
    ({"upper": -np.inf}, "upper=-inf excludes w = 0"),
    ({"margin": [1.0, 1e300]}, "margin must be one non-negative number per pair, each at most 1e\\+100"),
    ({"margin": [1.0, np.nan]}, "margin must be one non-negative number per pair"),
])
def test_variant_numbers_out_of_range_are_refused_when_the_variant_is_made(kwargs, match):
    """Before, ``l1=1e300`` reached CVXPY as an infinite rho ("Problem data contains NaN or Inf")."""
    with pytest.raises(ValidationError, match=match):
        Variant(**kwargs)


def test_infinite_bounds_are_no_bounds(data):
    """``lower=-inf`` and ``upper=inf`` mean no bound everywhere: kept as None, so the variant is the papers'
    problem, the pair-free solver takes it and ``describe``/``from_text`` agree."""
    for variant in (Variant(lower=-np.inf, upper=np.inf), Variant(lower=[-np.inf] * 5, upper=float("inf")),
                    Variant.from_text("lower=-inf+upper=inf")):
        assert variant.lower is None and variant.upper is None and variant.is_default
    partial = Variant(lower=[-np.inf, 0.0, -np.inf, -1.0, -np.inf])
    assert partial.extensions == {"bounds"} and partial.bounds(5)[0][1] == 0.0
    res = cr.solve(cr.RankingProblem(data, lam=0.2, variant=Variant(lower=-np.inf)), "cutting_plane")
    assert res.status == "optimal"


def test_estimators_take_a_variant_and_model_files_keep_it(data, tmp_path):
    from cvxrank.estimators import RankSVMIR, load_model

    params = dict(loss="squared_hinge", margin="grade_difference", l1=0.3, lower=0.0)
    model = RankSVMIR(tau=TAU, mu="balanced", lam=0.2, **params).fit(data)
    direct = cr.solve(cr.RankingProblem(data, tau=TAU, mu="balanced", lam=0.2, variant=Variant(**params)), "clarabel")
    assert model.result_.status == "optimal" and model.result_.solver == "clarabel"  # auto: not the pair-free solver
    assert np.linalg.norm(model.coef_ - direct.w) <= model.result_.distance_bound + direct.distance_bound
    assert np.all(model.coef_ >= 0)
    model.save(tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    assert back.get_params()["loss"] == "squared_hinge" and back.get_params()["lower"] == 0.0
    assert np.array_equal(back.coef_, model.coef_)
    with pytest.raises(ValidationError, match="unknown loss"):
        RankSVMIR(tau=TAU, loss="logistic").fit(data)


def test_cli_fit_takes_a_variant(data, tmp_path, capsys):
    import json

    from cvxrank.cli import main
    from cvxrank.data import save_letor

    d = cr.RankingData(np.asarray(data.X), data.y, np.asarray(data.qid, dtype=int))
    save_letor(d, tmp_path / "t.letor")
    assert main(["fit", str(tmp_path / "t.letor"), "--model", str(tmp_path / "m.json"), "--loss", "squared_hinge",
                 "--lower", "0", "--l1", "0.1"]) == 0
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["params"]["loss"] == "squared_hinge" and doc["params"]["lower"] == 0.0
    assert min(doc["coef"]) >= 0 and "status optimal" in capsys.readouterr().out
    assert main(["fit", str(tmp_path / "t.letor"), "--model", str(tmp_path / "l.json"), "--method", "listmle",
                 "--loss", "squared_hinge"]) == 2  # listwise methods take no pairwise variant: one line, exit 2


def test_user_constraints_are_certified_by_the_lagrangian_dual(data):
    # w0 <= w1 and sum(w) == 1: affine constraints with solver duals; the same problem written here.
    cons = lambda w: [w[0] <= w[1], cp.sum(w) == 1.0]  # noqa: E731
    problem = cr.RankingProblem(data, tau=TAU, mu="balanced", lam=0.2, variant=Variant(constraints=cons))
    pairs = problem.pairs
    D, c = pairs.difference_matrix(), problem.weights
    w = cp.Variable(data.n_features)
    indep = cp.Problem(cp.Minimize(c @ cp.pos(1 - D @ w) + 0.2 * cp.sum_squares(w)), cons(w))
    indep.solve(solver="CLARABEL")
    first = None
    for form in ("primal", "hinge"):
        for solver in CORE_CVXPY:
            res = cr.solve(cr.build(problem, formulation=form), solver)
            assert res.status == "optimal" and res.certificate.kind.startswith("Lagrangian dual")
            assert res.hinge_objective - res.gap_L <= indep.value * (1 + 1e-9)  # a lower bound, never above
            assert res.w[0] <= res.w[1] + 1e-7 and abs(res.w.sum() - 1) <= 1e-7
            first = first or res  # every pair of certified solutions within their two proved distances
            assert np.linalg.norm(res.w - first.w) <= res.distance_bound + first.distance_bound


def test_infeasible_constraints_end_in_status_infeasible_never_in_a_w(data):
    problem = cr.RankingProblem(data, lam=0.2, variant=Variant(constraints=lambda w: [w[0] >= 1, w[0] <= -1]))
    res = cr.solve(problem, "clarabel")
    assert res.status == "infeasible" and not res.found and np.isnan(res.w).all()


@pytest.mark.parametrize("name", ["squared_gain_margin", "elastic_net"])
def test_dual_form_holds_costs_both_ways_and_follows_a_lam_path(data, name):
    variant = VARIANTS[name]
    problem = cr.RankingProblem(data, tau=TAU, mu="balanced", lam=0.2, variant=variant)
    ref = cr.solve(problem, "clarabel", formulation="primal")
    for costs in ("scale", "per_pair"):
        form = cr.build(problem, formulation="dual", costs=costs)
        res = cr.solve(form, "clarabel")
        assert res.status == "optimal" and res.formulation == "dual"
        assert np.linalg.norm(res.w - ref.w) <= res.distance_bound + ref.distance_bound
    if variant.l1 == 0:  # a λ path moves the one scale parameter (an elastic net's ρ = l1/(2λ) is a constant)
        form = cr.build(problem, formulation="dual")
        other = problem.with_lam(0.05)
        form.set_costs(other.C)
        res = cr.solve(form, "clarabel")
        ref = cr.solve(other, "clarabel", formulation="primal")
        assert res.status == "optimal" and np.linalg.norm(res.w - ref.w) <= res.distance_bound + ref.distance_bound
