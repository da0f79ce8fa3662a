"""Every certified gap is an upper bound in exact arithmetic, at every λ, for every solver.

The test scores each returned ``w`` against an independent reference written here (CVXPY and
Clarabel on the explicit pairs, made exactly feasible), and computes ``M(w) − M(w_ref)`` in exact
rational arithmetic (:class:`fractions.Fraction`) from the float64 data as given. Since
``M(w_ref) ≥ M(w*)``, that difference is a lower bound on the true suboptimality ``M(w) − M(w*)``;
a certified ``gap_M`` below it (or below zero) would be a false certificate. The same holds on the
scale of (9), ``L(w) − L(w_ref)`` against ``gap_L``. For a variant with affine constraints every
``optimal`` ``w`` must also satisfy them to the tolerance its certificate states, exactly.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest

import cvxrank as cr
from cvxrank.variants import Variant

LAMS = (1e-6, 1e-3, 1.0, 1e3, 1e6)

#: (solver, formulation) pairs of the papers' problem; the native solvers take the problem itself.
RUNS = [("clarabel", "primal"), ("clarabel", "dual"), ("clarabel", "lifted"), ("clarabel", "hinge"),
        ("ecos", "primal"), ("ecos", "hinge"), ("osqp", "primal"), ("osqp", "dual"), ("scs", "primal"),
        ("scs", "lifted"), ("scs", "dual"), ("cutting_plane", "auto"), ("subgradient", "auto"), ("gd", "auto")]


def _tiny(seed: int):
    data = cr.make_ranking(n_queries=4, docs_per_query=(4, 7), n_features=5, random_state=seed)
    rng = np.random.default_rng(seed)
    grades = sorted(set(data.y.tolist()))
    tau = {(a, b): float(rng.uniform(0.2, 3.0)) for a in grades for b in grades if a > b}
    return data, tau


def _pairs_exact(problem):
    """Explicit pairs as exact rationals: ``d_i`` rows and weights ``c_i``, from the float64 data."""
    pairs = problem.pairs
    X = np.asarray(pairs.data.X.toarray() if hasattr(pairs.data.X, "toarray") else pairs.data.X, dtype=np.float64)
    D = [[Fraction(float(a)) - Fraction(float(b)) for a, b in zip(X[i], X[j])]
         for i, j in zip(pairs.better, pairs.worse)]
    c = [Fraction(float(v)) for v in problem.weights]
    return D, c


def _margins(variant: Variant, problem) -> list:
    if variant.margin is None:
        return [Fraction(1)] * problem.n_pairs
    return [Fraction(float(m)) for m in variant.margins(problem.pairs)]


def exact_L(problem, D, c, m, w) -> Fraction:
    """``L(w)`` of (9) (of the variant) in exact arithmetic: ``Σ c_i ℓ(m_i − <w, d_i>) + λ‖w‖² + ρ_L‖w‖₁``."""
    variant = problem.variant
    w = [Fraction(float(v)) for v in w]
    lam = Fraction(problem.lam)
    total = lam * sum(v * v for v in w) + Fraction(float(variant.l1)) * sum(abs(v) for v in w)
    for d, ci, mi in zip(D, c, m):
        t = mi - sum(a * b for a, b in zip(d, w))
        if t > 0:
            total += ci * (t if variant.loss == "hinge" else t * t)
    return total


def reference(problem) -> np.ndarray:
    """A tight, exactly feasible minimiser written independently: CVXPY + Clarabel on explicit pairs."""
    variant = problem.variant
    pairs = problem.pairs
    D = pairs.difference_rows(np.arange(pairs.n_pairs))
    c = problem.weights
    m = variant.margins(pairs) if variant.margin is not None else np.ones(pairs.n_pairs)
    # Scale the objective by 1/max(λ, Σc): Clarabel's tolerances are relative to the data.
    scale = 1.0 / max(problem.lam, float(c.sum()))
    w = cp.Variable(pairs.n_features)
    t = cp.pos(m - D @ w)
    loss = c @ (t if variant.loss == "hinge" else cp.square(t))
    obj = scale * (loss + problem.lam * cp.sum_squares(w) + variant.l1 * cp.norm1(w))
    cons = []
    lo, hi = variant.bounds(pairs.n_features)
    if np.isfinite(lo).any():
        cons.append(w >= lo)
    if np.isfinite(hi).any():
        cons.append(w <= hi)
    if variant.constraints is not None:
        cons += variant.constraints(w)
    with warnings.catch_warnings():  # "may be inaccurate" at 1e-14: the point is only used as a feasible point
        warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
        cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL", tol_gap_abs=1e-14, tol_gap_rel=1e-14,
                                                  tol_feas=1e-14, max_iter=500)
    out = np.clip(np.asarray(w.value, dtype=np.float64), lo, hi)
    if variant.constraints is not None:
        out = exactly_feasible(out)
    return out


def _constraints(w):
    """Both active at the optimum of the tiny problems: the unconstrained minimiser has ``w0 > w1``."""
    return [w[1] >= w[0], w[2] + w[3] == 0]


def _constraints_nonneg(w):
    """The same set, the inequality in CVXPY's ``NonNeg`` form (``expr ≥ 0``, the other way round)."""
    return [cp.constraints.NonNeg(w[1] - w[0]), w[2] + w[3] == 0]


def exactly_feasible(w):
    """The reference of the constrained variant, moved onto ``w1 ≥ w0`` and ``w2 + w3 = 0`` exactly."""
    w = w.copy()
    w[1] = max(w[0], w[1])
    w[3] = -w[2]
    return w


def _violation(w) -> Fraction:
    w = [Fraction(float(v)) for v in w]
    return max(Fraction(0), w[0] - w[1], abs(w[2] + w[3]))


def _solve(problem, solver, formulation):
    kw = {} if formulation == "auto" else {"formulation": formulation}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return cr.solve(problem, solver, **kw)
        except cr.CvxrankError as exc:  # a refusal (e.g. a solver that cannot take a variant) is not a certificate
            pytest.skip(f"{solver} refused: {exc}")


def check_certificate(problem, res, ref_w, D, c, m):
    assert res.gap_M >= 0 and res.gap_L >= 0, (res.gap_M, res.gap_L)
    lower_L = exact_L(problem, D, c, m, res.w) - exact_L(problem, D, c, m, ref_w)
    lam = Fraction(problem.lam)
    assert Fraction(res.gap_L) >= lower_L, f"gap_L {res.gap_L!r} < exact lower bound {float(lower_L)!r}"
    assert Fraction(res.gap_M) >= lower_L / (2 * lam), \
        f"gap_M {res.gap_M!r} < exact lower bound {float(lower_L / (2 * lam))!r}"
    assert res.relative_gap >= 0


def _case(seed, lam, variant=None):
    data, tau = _tiny(seed)
    problem = cr.RankingProblem(data, tau=tau, lam=lam)
    if variant is not None:
        problem = problem.with_variant(variant)
    D, c = _pairs_exact(problem)
    return problem, reference(problem), D, c, _margins(problem.variant, problem)


@pytest.fixture(scope="module")
def cases():
    return {}


def _cached(cases, seed, lam, key=None, variant=None):
    k = (seed, lam, key)
    if k not in cases:
        cases[k] = _case(seed, lam, variant)
    return cases[k]


@pytest.mark.parametrize("lam", LAMS)
@pytest.mark.parametrize("solver,formulation", [("clarabel", "primal"), ("scs", "dual"), ("osqp", "primal"),
                                                ("cutting_plane", "auto")])
def test_gap_bounds_the_exact_suboptimality(cases, lam, solver, formulation):
    problem, ref_w, D, c, m = _cached(cases, 0, lam)
    res = _solve(problem, solver, formulation)
    check_certificate(problem, res, ref_w, D, c, m)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", LAMS)
@pytest.mark.parametrize("solver,formulation", RUNS)
def test_gap_bounds_the_exact_suboptimality_everywhere(cases, seed, lam, solver, formulation):
    problem, ref_w, D, c, m = _cached(cases, seed, lam)
    res = _solve(problem, solver, formulation)
    check_certificate(problem, res, ref_w, D, c, m)


VARIANTS = {
    "gain_difference": Variant(margin="gain_difference"),
    "grade_difference+squared_hinge": Variant(loss="squared_hinge", margin="grade_difference"),
    "bounds": Variant(lower=-0.3, upper=0.4),
    "l1": Variant(l1=0.05),
    "affine": Variant(constraints=_constraints),
}


#: The squared hinge with an ℓ1 term and bounds on w: the pair-free prox_newton's variants.
PROX_VARIANTS = {
    "squared_hinge+l1+bounds": Variant(loss="squared_hinge", l1=0.05, lower=-0.3, upper=0.4),
    "squared_hinge+grade_difference+lower0": Variant(loss="squared_hinge", margin="grade_difference", lower=0.0),
    "squared_hinge+l1+pinned": Variant(loss="squared_hinge", l1=0.5, lower=[0.0, -1.0, 0.0, -np.inf, -0.2],
                                       upper=[0.0, np.inf, 1.0, 0.1, np.inf]),
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", LAMS)
@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("solver", ["clarabel", "ecos", "osqp", "scs", "truncated_newton", "prox_newton"])
def test_variant_gap_bounds_the_exact_suboptimality(cases, seed, lam, name, solver):
    variant = VARIANTS[name]
    if solver in ("truncated_newton", "prox_newton") and variant.loss != "squared_hinge":
        pytest.skip(f"{solver} solves the squared hinge")
    problem, ref_w, D, c, m = _cached(cases, seed, lam, name, variant)
    res = _solve(problem, solver, "auto")
    check_certificate(problem, res, ref_w, D, c, m)
    if variant.constraints is not None and res.status == "optimal":
        assert _violation(res.w) <= Fraction(res.certificate.feasibility_tol)


@pytest.mark.parametrize("lam", LAMS)
@pytest.mark.parametrize("name", sorted(PROX_VARIANTS))
def test_prox_newton_gap_bounds_the_exact_suboptimality(cases, lam, name):
    problem, ref_w, D, c, m = _cached(cases, 0, lam, name, PROX_VARIANTS[name])
    res = _solve(problem, "prox_newton", "auto")
    check_certificate(problem, res, ref_w, D, c, m)
    lo, hi = problem.variant.bounds(problem.n_features)
    assert np.all(res.w >= lo) and np.all(res.w <= hi)


@pytest.mark.slow
@pytest.mark.parametrize("lam", LAMS)
@pytest.mark.parametrize("name", sorted(PROX_VARIANTS))
@pytest.mark.parametrize("solver", ["prox_newton", "clarabel", "scs"])
def test_prox_newton_variants_gap_bounds_the_exact_suboptimality_everywhere(cases, lam, name, solver):
    problem, ref_w, D, c, m = _cached(cases, 1, lam, name, PROX_VARIANTS[name])
    res = _solve(problem, solver, "auto")
    check_certificate(problem, res, ref_w, D, c, m)


@pytest.mark.parametrize("form", ["inequality", "nonneg"])
@pytest.mark.parametrize("lam", [1e-6, 1.0])
def test_affine_optimal_is_feasible(cases, lam, form):
    variant = VARIANTS["affine"] if form == "inequality" else Variant(constraints=_constraints_nonneg)
    problem, ref_w, D, c, m = _cached(cases, 0, lam, f"affine-{form}", variant)
    for solver in ("clarabel", "scs"):
        res = _solve(problem, solver, "auto")
        check_certificate(problem, res, ref_w, D, c, m)
        assert Fraction(res.certificate.infeasibility) >= _violation(res.w)
        if res.status == "optimal":
            assert _violation(res.w) <= Fraction(res.certificate.feasibility_tol)


@pytest.mark.parametrize("solver", ["subgradient", "gd", "clarabel", "cutting_plane"])
def test_smallest_costs_get_a_distance_bound_that_holds(solver):
    """Pair costs at the smallest accepted (``C_i = 1e-100``): ``‖w*‖²`` near 1e-200, yet the distance bound
    must hold, never be 0.

    With costs this small every pair is below its margin at the optimum, so ``w* = Dᵀ C``
    exactly (16); the test computes it in exact arithmetic.
    """
    data = cr.make_ranking(n_queries=3, docs_per_query=4, n_features=3, random_state=2)
    pairs = cr.make_pairs(data)
    problem = cr.RankingProblem(pairs, weights=np.full(pairs.n_pairs, 1e-100), lam=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = cr.solve(problem, solver)
    C = [Fraction(float(v)) for v in problem.C]
    D, _ = _pairs_exact(problem)
    w_star = [sum(ci * d[j] for ci, d in zip(C, D)) for j in range(problem.n_features)]
    distance2 = sum((Fraction(float(a)) - b) ** 2 for a, b in zip(res.w, w_star))
    assert res.distance_bound > 0 and res.gap_M > 0
    assert Fraction(res.distance_bound) ** 2 >= distance2


def test_a_constraint_the_dual_does_not_hold_is_measured(cases):
    """A norm ball is not affine: the Lagrangian bound leaves it out (a relaxation, still valid), and its
    violation at ``w`` is measured, so a point outside the ball is never called feasible."""
    variant = Variant(constraints=lambda w: [cp.norm(w) <= 0.5])
    problem, ref_w, D, c, m = _cached(cases, 0, 1.0, "ball", variant)
    for solver in ("clarabel", "scs"):
        res = _solve(problem, solver, "auto")
        outside = float(np.linalg.norm(res.w)) - 0.5
        assert res.certificate.infeasibility >= outside and res.certificate.infeasibility > 0
        assert res.distance_bound == np.inf  # feasibility not proved: no distance from strong convexity
        if res.status == "optimal":
            assert outside <= res.certificate.feasibility_tol
