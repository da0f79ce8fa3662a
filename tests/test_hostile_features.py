"""The newer features on hostile input: variants, the pair-free solvers, explicit pair weights,
``compare --variants``, hand-edited model files, concurrent ``cv``, interrupts, read-only folders and
odd file names. Each case ends in a clear error, a refusal, or a result checked against an
independent one (two solvers agree within what their certificates prove: ``|L_a − L_b| ≤ gap_L_a +
gap_L_b``).

The fast cases run in-process (``cvxrank.cli.main``, as tests/test_cli_hostile.py does); the cases
that need a second process (a lock held by another ``cv``, a signal) are slow and run the command
line in a subprocess, as tests/test_outputs_safe.py does.
"""

from __future__ import annotations

import errno
import glob
import io
import json
import os
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

import cvxrank as cr
from cvxrank.cli import main
from cvxrank.data import RankingData, save_letor
from cvxrank.estimators import load_model
from cvxrank.exceptions import (
    InaccurateSolutionWarning,
    SolverNotAvailableError,
    ValidationError,
)
from cvxrank.pairs import preference_pairs
from cvxrank.solvers import available_solvers
from cvxrank.variants import Variant
from tests.conftest import readline_within
from tests.test_cli_hostile import assert_clean_failure, run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1"}

#: Four queries of 4-6 documents, 3 features, grades 0-2.
SMALL = cr.make_ranking(n_queries=4, docs_per_query=(4, 6), n_features=3, random_state=5)


@pytest.fixture(scope="module")
def small_letor(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "d.letor"
    save_letor(SMALL, path)
    return str(path)


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def agree(a, b):
    """``|L_a − L_b| ≤ gap_L_a + gap_L_b``: neither solution is better than the other's certificate allows."""
    assert a.status == "optimal" and b.status == "optimal", (a, b)
    assert abs(a.objective - b.objective) <= a.certificate.gap_L + b.certificate.gap_L, (a, b)
    assert np.linalg.norm(a.w - b.w) <= a.distance_bound + b.distance_bound, (a, b)


# ---------------------------------------------------------------------------------------------
# Variants: --loss, --margin, --l1, --lower/--upper, Variant(constraints=...)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, params", [
    (["--loss", "squared_hinge"], {"loss": "squared_hinge"}),
    (["--margin", "grade_difference"], {"margin": "grade_difference"}),
    (["--margin", "gain_difference", "--solver", "cutting_plane"], {"margin": "gain_difference"}),
    (["--loss", "squared_hinge", "--margin", "grade_difference", "--solver", "truncated_newton"],
     {"loss": "squared_hinge", "margin": "grade_difference"}),
    (["--l1", "0.5"], {"l1": 0.5}),
    (["--lower", "0"], {"lower": 0.0}),
    (["--upper", "0", "--l1", "0.1"], {"upper": 0.0, "l1": 0.1}),
])
def test_fit_with_a_variant_saves_it_and_honours_it(options, params, small_letor, out):
    model = out / "m.json"
    code, _, err = run_cli(["fit", small_letor, "--model", str(model), *options])
    assert code == 0, err
    doc = json.loads(model.read_text())
    assert {k: doc["params"][k] for k in params} == params
    assert doc["solve"]["status"] == "optimal"
    coef = np.array(doc["coef"])
    assert np.all(coef >= params.get("lower", -np.inf)) and np.all(coef <= params.get("upper", np.inf))
    # the saved model is the variant's optimum: the same problem solved by Clarabel agrees with it
    problem = cr.RankingProblem(SMALL, lam=doc["fitted"]["lam"], variant=Variant(**{
        k: v for k, v in doc["params"].items() if k in ("loss", "margin", "l1", "lower", "upper")}))
    ref = cr.solve(problem, "clarabel")
    L = 2 * problem.lam * problem.variant.qp_objective(problem.pairs, coef, problem.C, problem.lam)
    assert abs(L - ref.objective) <= doc["solve"]["gap_L"] + ref.certificate.gap_L


@pytest.mark.parametrize("options, words", [
    (["--lower", "1"], "lower <= 0 <= upper"),
    (["--upper", "-1"], "lower <= 0 <= upper"),
    (["--lower", "0.5", "--upper", "0.1"], "lower bound exceeds its upper bound"),
    (["--loss", "squared_hinge", "--solver", "cutting_plane"], "solvers that can: clarabel"),
    (["--l1", "0.1", "--solver", "truncated_newton"], "solvers that can: clarabel"),
    (["--lower", "0", "--solver", "cutting_plane"], "solvers that can: clarabel"),
    (["--method", "listmle", "--loss", "squared_hinge"], "does not take loss"),
    (["--method", "cs-rglist", "--lower", "0"], "does not take lower"),
])
def test_fit_refuses_a_variant_it_cannot_solve(options, words, small_letor, out):
    code, stdout, err = run_cli(["fit", small_letor, "--model", str(out / "m.json"), *options])
    assert_clean_failure(code, err, "fit", out)
    assert words in err and stdout == ""


NOT_CONSTRAINTS = {
    "None": lambda w: None,
    "a number": lambda w: 3,
    "text": lambda w: ["w >= 0"],
    "a bool": lambda w: [True],
    "an expression": lambda w: [w[0]],
    "a dict": lambda w: {"c": w[0] >= 0},
    "a generator": lambda w: (c for c in [w[0] >= 0]),
}


@pytest.mark.parametrize("name", sorted(NOT_CONSTRAINTS))
def test_constraints_that_return_no_constraints_are_refused(name):
    problem = cr.RankingProblem(SMALL).with_variant(Variant(constraints=NOT_CONSTRAINTS[name]))
    with pytest.raises(ValidationError, match=r"constraints\(w\) must return CVXPY constraints"):
        cr.solve(problem, "clarabel")


def test_constraints_that_are_not_a_function_are_refused():
    with pytest.raises(ValidationError, match="constraints must be a function"):
        Variant(constraints=[cp.Variable() >= 0])


class _UserBug(Exception):
    pass


@pytest.mark.parametrize("solver", ["clarabel", "fallback"])
def test_a_constraint_function_that_raises_propagates_its_own_error(solver):
    """The user's own exception reaches the user unchanged: not swallowed, not a solver failure to move past."""
    def constraints(w):
        raise _UserBug("my constraint code is wrong")

    problem = cr.RankingProblem(SMALL).with_variant(Variant(constraints=constraints))
    with pytest.raises(_UserBug, match="my constraint code is wrong"):
        cr.solve(problem, solver)


@pytest.mark.parametrize("solver", ["cutting_plane", "truncated_newton"])
def test_pair_free_solvers_refuse_user_constraints_naming_who_can(solver):
    problem = cr.RankingProblem(SMALL).with_variant(Variant(constraints=lambda w: [w[0] >= w[1]]))
    with pytest.raises(SolverNotAvailableError, match="constraints.*solvers that can: clarabel"):
        cr.solve(problem, solver)


@pytest.mark.parametrize("solver", [s for s in ("clarabel", "osqp") if s in available_solvers()])
def test_constraints_that_admit_no_w_give_status_infeasible_and_no_weights(solver):
    problem = cr.RankingProblem(SMALL).with_variant(Variant(constraints=lambda w: [w[0] >= 1, w[0] <= -1]))
    res = cr.solve(problem, solver)
    assert res.status == "infeasible"
    assert np.isnan(res.w).all() and np.isnan(res.objective)


@pytest.mark.parametrize("constraints, check", [
    (lambda w: [w[0] >= w[1]], lambda w: w[0] - w[1]),
    (lambda w: w[2] <= -0.25, lambda w: -0.25 - w[2]),       # one constraint, not in a list
    (lambda w: (w[0] == 0.1,), lambda w: -abs(w[0] - 0.1)),
])
def test_constraints_are_honoured_and_certified(constraints, check):
    problem = cr.RankingProblem(SMALL, lam=0.1).with_variant(Variant(constraints=constraints))
    res = cr.solve(problem, "clarabel")
    assert res.status == "optimal"
    assert check(res.w) >= -max(res.primal_residual, 1e-12) - 1e-9
    assert res.certificate.kind.startswith("Lagrangian dual")


@pytest.mark.parametrize("constraints", [lambda w: [cp.square(w[0]) >= 1], lambda w: [w[0] >= np.nan]],  # noqa: PLW0177 (a CVXPY constraint)
                         ids=["not-convex", "nan"])
def test_a_constraint_that_cannot_be_solved_is_a_validation_error(constraints):
    problem = cr.RankingProblem(SMALL).with_variant(Variant(constraints=constraints))
    with pytest.raises(ValidationError, match="constraint"):
        cr.solve(problem, "clarabel")


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("grades", [[1100, 0, 3], [2000, 1999, 3]], ids=["inf", "nan"])
def test_margins_that_overflow_are_refused_by_every_solver(grades):
    """2**1100 is inf; 2**2000 - 2**1999 is inf - inf = NaN. The pair-free solvers already refuse both."""
    data = RankingData(np.array([[0.5, 0.1], [0.2, 0.3], [0.1, 0.9]]), grades, [1, 1, 1])
    problem = cr.RankingProblem(data, variant=Variant(margin="gain_difference"))
    with pytest.raises(ValidationError, match="margins must be positive and finite"):
        cr.solve(problem, "cutting_plane")
    with pytest.raises(ValidationError, match="margin"):
        cr.solve(problem, "clarabel")


_N_PAIRS = cr.RankingProblem(SMALL).n_pairs


@pytest.mark.parametrize("margin, words", [
    (np.r_[np.nan, np.ones(_N_PAIRS - 1)], "margin must be"),
    (np.r_[np.inf, np.ones(_N_PAIRS - 1)], "margin must be"),
    (-np.ones(_N_PAIRS), "margin must be"),
    (np.ones(_N_PAIRS - 1), f"margin must be {_N_PAIRS} "),
    ("1", "unknown margin '1'"),
    ("rank", "unknown margin 'rank'"),
])
def test_bad_margins_are_refused(margin, words):
    with pytest.raises(ValidationError, match=words):
        cr.solve(cr.RankingProblem(SMALL).with_variant(Variant(margin=margin)), "clarabel")


@pytest.mark.parametrize("solver, loss", [("cutting_plane", "hinge"), ("truncated_newton", "squared_hinge")])
def test_pair_free_solvers_refuse_margins_per_pair_naming_who_can(solver, loss):
    problem = cr.RankingProblem(SMALL).with_variant(Variant(loss=loss, margin=np.full(_N_PAIRS, 2.0)))
    with pytest.raises(SolverNotAvailableError, match="margin_per_pair; solvers that can: clarabel"):
        cr.solve(problem, solver)


@pytest.mark.filterwarnings("ignore::cvxrank.exceptions.InaccurateSolutionWarning")
def test_all_zero_margins_are_refused_or_solved_exactly():
    problem = cr.RankingProblem(SMALL).with_variant(Variant(margin=np.zeros(_N_PAIRS)))
    try:
        res = cr.solve(problem, "clarabel")
    except ValidationError as exc:
        assert "nothing to learn" in str(exc)
    else:
        assert res.status == "optimal" and np.linalg.norm(res.w) <= res.distance_bound


@pytest.mark.parametrize("bounds, words", [
    ({"lower": [0.0, 0.0]}, r"one number or one per feature \(3\), got shape \(2,\)"),
    ({"upper": [1.0, np.nan, 1.0]}, "upper has a NaN"),
    ({"lower": "abc"}, "lower must be numbers"),
    ({"lower": [0.0, "x", 0.0]}, "lower must be numbers"),
    ({"lower": np.inf}, "lower <= 0 <= upper"),
])
def test_bad_bounds_are_refused(bounds, words):
    with pytest.raises(ValidationError, match=words):
        cr.RankingProblem(SMALL).with_variant(Variant(**bounds))


def test_bounds_per_feature_with_infinities_are_honoured():
    """``-inf`` leaves a feature unbounded; a per-feature bound holds where given (a correct result)."""
    problem = cr.RankingProblem(SMALL, lam=0.1).with_variant(Variant(lower=[-np.inf, 0.0, 0.0], upper=[np.inf, 0.5, 1]))
    res = cr.solve(problem, "clarabel")
    assert res.status == "optimal"
    assert res.w[1] >= 0 and res.w[2] >= 0 and res.w[1] <= 0.5 and res.w[2] <= 1
    free = cr.solve(cr.RankingProblem(SMALL, lam=0.1), "clarabel")
    assert free.w[1] < 0  # the bound is active: without it, w[1] would be negative
    assert res.objective >= free.objective - free.certificate.gap_L  # a constrained optimum is never better


@pytest.mark.parametrize("first, second", [
    (Variant(constraints=lambda w: [w[0] <= 0.1]), Variant(constraints=lambda w: [w[0] >= 2])),
    (Variant(margin=np.ones(_N_PAIRS)), Variant(margin=np.full(_N_PAIRS, 5.0))),
    (Variant(lower=[0.0, -1.0, -1.0]), Variant(lower=[-5.0, 0.0, 0.0])),
    (Variant(upper=[1.0, 1.0, 1.0]), Variant(upper=[1.0, 1.0, 0.0])),
], ids=["constraints", "margins", "lower", "upper"])
@pytest.mark.parametrize("formulation", ["lifted", "hinge"])
def test_a_path_solves_each_variant_it_is_given(first, second, formulation):
    """Two variants that read alike (``describe()`` shows arrays and functions as "given") are two problems:
    the path used to re-solve the first one and report it, certified, as the second."""
    from cvxrank.path import PathSolver

    problem = cr.RankingProblem(SMALL, lam=0.5)
    path = PathSolver(problem, formulation=formulation, solver="clarabel")
    path.solve(variant=first)
    agree(path.solve(variant=second), cr.solve(problem.with_variant(second), "clarabel"))
    assert path.n_builds == 2
    agree(path.solve(variant=second), cr.solve(problem.with_variant(second), "clarabel"))
    assert path.n_builds == 2  # the same variant again: a re-solve, not a rebuild


@pytest.mark.parametrize("variant", ["squared_hinge", {"loss": "squared_hinge"}, 1])
def test_a_path_refuses_a_variant_that_is_not_a_variant(variant):
    from cvxrank.path import PathSolver

    with pytest.raises(ValidationError, match="variant must be a cvxrank.variants.Variant"):
        PathSolver(cr.RankingProblem(SMALL), formulation="lifted", solver="clarabel").solve(variant=variant)


@pytest.mark.parametrize("grid", [{"taus": []}, {"mus": []}])
def test_a_path_refuses_an_empty_cost_grid(grid):
    from cvxrank.path import solve_path

    with pytest.raises(ValidationError, match=f"{next(iter(grid))} is empty"):
        solve_path(cr.RankingProblem(SMALL), [1.0], formulation="lifted", solver="clarabel", **grid)


# ---------------------------------------------------------------------------------------------
# The pair-free solvers (cutting_plane, truncated_newton) on hostile data, against Clarabel
# ---------------------------------------------------------------------------------------------

_X, _Y, _Q = np.asarray(SMALL.X), np.asarray(SMALL.y), np.asarray(SMALL.qid)


def _hostile_data(kind: str) -> RankingData:
    if kind == "constant features":
        X = _X.copy()
        X[:, 0], X[:, 2] = 3.0, 0.0
        return RankingData(X, _Y, _Q)
    if kind == "single-document queries":
        return RankingData(np.vstack([_X, _X[:3]]), np.r_[_Y, [5, 6, 7]], np.r_[_Q, [100, 101, 102]])
    if kind == "a query of one grade":
        y = _Y.copy()
        y[_Q == _Q[0]] = 1
        return RankingData(_X, y, _Q)
    if kind == "duplicated rows":
        return RankingData(np.vstack([_X, _X]), np.r_[_Y, _Y], np.r_[_Q, _Q])
    if kind == "duplicates with other grades":
        return RankingData(np.vstack([_X, _X]), np.r_[_Y, (_Y + 1) % 3], np.r_[_Q, _Q])
    if kind == "CSR with explicit zeros":
        Xs = sp.csr_matrix(_X)
        Xs.data[::2] = 0.0
        assert Xs.nnz == _X.size  # the zeros are stored
        return RankingData(Xs, _Y, _Q)
    if kind == "float32":
        return RankingData(_X.astype(np.float32), _Y, _Q)
    if kind == "non-contiguous":
        X = np.asfortranarray(np.repeat(_X, 2, axis=1))[:, ::2]
        assert not X.flags.c_contiguous and not X.flags.f_contiguous
        return RankingData(X, _Y, _Q)
    if kind == "integer":
        return RankingData(np.round(_X * 3).astype(np.int64), _Y, _Q)
    raise AssertionError(kind)


HOSTILE_KINDS = ["constant features", "single-document queries", "a query of one grade", "duplicated rows",
                 "duplicates with other grades", "CSR with explicit zeros", "float32", "non-contiguous", "integer"]


@pytest.mark.parametrize("solver, variant", [
    ("cutting_plane", Variant()),
    ("cutting_plane", Variant(margin="grade_difference")),
    ("truncated_newton", Variant(loss="squared_hinge", margin="gain_difference")),
], ids=["cutting_plane", "cutting_plane-margin", "truncated_newton-gain"])
@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_pair_free_solvers_agree_with_clarabel_on_hostile_data(kind, solver, variant):
    problem = cr.RankingProblem(_hostile_data(kind), lam=0.1, variant=variant)
    agree(cr.solve(problem, solver), cr.solve(problem, "clarabel"))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("storage", ["dense", "csr", "float32"])
def test_non_finite_features_are_refused_at_the_data(value, storage):
    X = _X.copy()
    X[2, 1] = value
    X = {"dense": X, "csr": sp.csr_matrix(X), "float32": X.astype(np.float32)}[storage]
    with pytest.raises(ValidationError, match=r"NaN or infinite value \(first at document 2, feature 1\)"):
        RankingData(X, _Y, _Q)


@pytest.mark.parametrize("solver, variant", [("cutting_plane", Variant()),
                                             ("truncated_newton", Variant(loss="squared_hinge"))])
@pytest.mark.parametrize("y, qid", [(np.ones(len(_Y)), _Q), (_Y, np.arange(len(_Y)))],
                         ids=["one grade", "one document per query"])
def test_data_without_pairs_is_refused_by_the_pair_free_solvers(y, qid, solver, variant):
    problem = cr.RankingProblem(RankingData(_X, y, qid), variant=variant)
    with pytest.raises(ValidationError, match="no pairs"):
        cr.solve(problem, solver)


def _hinge_one_query(s, y):
    """``Σ_{y_i > y_j} [1 − (s_i − s_j)]_+`` over one query, written independently: for each grade pair,
    sorted scores of the worse grade and prefix sums (O(n log n), no pair is formed)."""
    total = 0.0
    grades = np.unique(y)
    for hi in grades:
        better = s[y == hi]
        for lo in grades[grades < hi]:
            worse = np.sort(s[y == lo])
            prefix = np.concatenate([[0.0], np.cumsum(worse)])
            # violated partners of a better document b: worse scores s_j > s_b - 1
            start = np.searchsorted(worse, better - 1.0, side="right")
            n = worse.size - start
            total += float(np.sum(n * (1.0 - better) + (prefix[-1] - prefix[start])))
    return total


@pytest.mark.slow
def test_cutting_plane_on_one_query_of_20000_documents():
    """About 1.5e8 pairs in one query: never formed, and the objective checked independently."""
    rng = np.random.default_rng(0)
    n = 20_000
    X = rng.standard_normal((n, 5))
    y = np.digitize(X @ rng.standard_normal(5) + rng.standard_normal(n), [-1.0, 0.0, 1.0])
    problem = cr.RankingProblem(RankingData(X, y, np.zeros(n, dtype=np.int64)), lam=0.1)
    res = cr.solve(problem, "cutting_plane")
    assert res.status == "optimal" and not problem.has_pairs
    L = _hinge_one_query(X @ res.w, y) + problem.lam * float(res.w @ res.w)
    assert abs(L - res.objective) <= 1e-9 * L
    # the certified lower bound is a lower bound: no nearby point goes below it
    for step in rng.standard_normal((5, 5)) * 0.05:
        w = res.w + step
        assert _hinge_one_query(X @ w, y) + problem.lam * float(w @ w) >= res.lower_bound


# ---------------------------------------------------------------------------------------------
# Explicit preference pairs and per-pair weights
# ---------------------------------------------------------------------------------------------

_PAIRS = preference_pairs(SMALL, better=[0, 1, 2, 5], worse=[3, 3, 1, 4])


@pytest.mark.parametrize("weights, words", [
    ([1, -1, 1, 1], "non-negative, found -1"),
    ([1, np.nan, 1, 1], "NaN or infinite"),
    ([1, np.inf, 1, 1], "NaN or infinite"),
    ([1, None, 1, 1], "NaN or infinite"),
    (-2.0, "non-negative"),
    ([0, 0, 0, 0], "every pair has weight 0"),
    (0.0, "every pair has weight 0"),
    ([1, 1, 1], r"one value per pair \(4\), got shape \(3,\)"),
    ([[1, 1, 1, 1]], "one value per pair, or one for all"),
    (["a", "b", "c", "d"], "must be numeric"),
    ([1 + 1j, 1, 1, 1], "must be numeric"),
    ({"a": 1}, "must be numeric"),
])
def test_bad_pair_weights_are_refused(weights, words):
    with pytest.raises(ValidationError, match=words):
        cr.RankingProblem(_PAIRS, weights=weights)


def test_pair_weights_without_pairs_are_refused():
    with pytest.raises(ValidationError, match="need the pairs they weigh"):
        cr.RankingProblem(SMALL, weights=[1.0, 2.0])


@pytest.mark.parametrize("better, worse, words", [
    ([0, 100], [1, 2], r"better\[1\] = 100 is not a document index"),
    ([0], [-1], r"worse\[0\] = -1 is not a document index"),
    ([0], [10**30], "integer document indices"),
    ([0, 1], [0, 2], "pair 0 prefers document 0 to itself"),
    ([0.5], [1], "integer document indices"),
    ([np.nan], [1], "integer document indices"),
    ([0], [6], "two queries"),
    ([], [], "no pairs"),
])
def test_bad_explicit_pairs_are_refused(better, worse, words):
    with pytest.raises(ValidationError, match=words):
        preference_pairs(SMALL, better=better, worse=worse)


def test_a_pair_of_weight_zero_is_the_pair_left_out():
    """A correct result, not just no error: weight 0 must give the optimum of the other pairs alone."""
    kept = preference_pairs(SMALL, better=[1, 2, 5], worse=[3, 1, 4])
    with_zero = cr.solve(cr.RankingProblem(_PAIRS, weights=[0.0, 1.0, 2.0, 0.5], lam=0.1), "clarabel")
    without = cr.solve(cr.RankingProblem(kept, weights=[1.0, 2.0, 0.5], lam=0.1), "clarabel")
    agree(with_zero, without)


@pytest.mark.parametrize("solver, variant", [("cutting_plane", Variant()),
                                             ("truncated_newton", Variant(loss="squared_hinge"))])
def test_pair_free_solvers_refuse_explicit_pairs_and_the_chain_moves_on(solver, variant):
    problem = cr.RankingProblem(_PAIRS, weights=[1.0, 2.0, 3.0, 0.5], lam=0.1, variant=variant)
    with pytest.raises(ValidationError, match="needs pairs formed from grades.*clarabel"):
        cr.solve(problem, solver)
    res = cr.solve(problem, "fallback")
    assert res.solver == "clarabel" and res.status == "optimal"


def test_explicit_weights_on_grade_pairs_go_pair_free_only_in_the_form_tau_mu():
    """Weights of the form τ_k μ_q given per pair: the pair-free solver takes them and agrees with Clarabel;
    one pair's weight changed breaks that form: refused, naming the query and grade pair."""
    from cvxrank.costs import pair_weights
    from cvxrank.pairs import make_pairs

    pairs = make_pairs(SMALL)
    weights = pair_weights(pairs, tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 0.5}, mu="balanced")
    problem = cr.RankingProblem(pairs, weights=weights, lam=0.1)
    agree(cr.solve(problem, "cutting_plane"), cr.solve(problem, "clarabel"))
    weights[0] = 0.0
    with pytest.raises(ValidationError, match=r"pair weights differ inside query \S+, grade pair \(\d, \d\)"):
        cr.solve(cr.RankingProblem(pairs, weights=weights, lam=0.1), "cutting_plane")


# ---------------------------------------------------------------------------------------------
# cvxrank compare --variants with unknown names
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("variants, named", [
    ("cubic", "'cubic'"),
    ("papers,cubic", "'cubic'"),
    ("loss=cubic", "'cubic'"),
    ("margin=rank", "'rank'"),
    ("foo=1", "'foo=1'"),
    ("Papers", "'Papers'"),
    ("constraints=x", "'constraints=x'"),
    ("papers+l1=0.1", "'papers+l1=0.1'"),
    ("margin=", "'margin='"),
])
def test_compare_refuses_an_unknown_variant_before_the_study(variants, named, tmp_path):
    code, stdout, err = run_cli(["compare", "--instances", "ecml", "--sizes", "2", "--solvers", "clarabel",
                                 "--formulations", "primal", "--profiles", "low", "--no-progress", "--no-report",
                                 "--variants", variants, "--out", str(tmp_path / "study")])
    assert_clean_failure(code, err, "compare", tmp_path)  # the study folder was never made
    assert named in err and stdout == ""


# ---------------------------------------------------------------------------------------------
# Model files edited by hand
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def variant_model(small_letor, tmp_path_factory):
    model = str(tmp_path_factory.mktemp("model") / "variant.json")
    code, _, err = run_cli(["fit", small_letor, "--model", model, "--loss", "squared_hinge",
                            "--margin", "grade_difference", "--lower", "0"])
    assert code == 0, err
    with open(model, encoding="utf-8") as fh:
        return model, json.load(fh)


def _edited(doc, edit):
    doc = json.loads(json.dumps(doc))
    edit(doc)
    return doc


EDITS = {
    "format_version 2": (lambda d: d.update(format_version=2), "model format 2"),
    "format_version '1'": (lambda d: d.update(format_version="1"), "model format '1'"),
    "no format_version": (lambda d: d.pop("format_version"), "model format None"),
    "no fitted block": (lambda d: d.pop("fitted"), "missing keys ['fitted']"),
    "an extra key": (lambda d: d.update(variant="squared_hinge"), "unknown keys ['variant']"),
    "an unknown parameter": (lambda d: d["params"].update(constraints="w[0] >= 0"), "no parameters ['constraints']"),
    "a NaN weight": (lambda d: d["coef"].__setitem__(0, float("nan")), "NaN"),
    "an infinite weight": (lambda d: d["coef"].__setitem__(0, float("inf")), "Infinity"),
    "a NaN l1": (lambda d: d["params"].update(l1=float("nan")), "NaN"),
    "a NaN gap": (lambda d: d["solve"].update(relative_gap=float("nan")), "NaN"),
    "one weight too few": (lambda d: d["coef"].pop(), "coef must be a list of 3 finite numbers"),
    "more features than weights": (lambda d: d.update(n_features=5), "coef must be a list of 5 finite numbers"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_hand_edited_model_is_refused_by_predict_and_evaluate(name, variant_model, small_letor, tmp_path, out):
    edit, words = EDITS[name]
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(_edited(variant_model[1], edit)))  # json.dumps writes NaN and Infinity literals
    for argv in (["predict", str(path), small_letor, "--output", str(out / "s.txt")],
                 ["evaluate", small_letor, "--model", str(path), "--json", str(out / "m.json")]):
        code, _, err = run_cli(argv)
        assert_clean_failure(code, err, argv[0], out)
        assert words in err


def test_a_nan_in_a_model_file_names_the_file(variant_model, small_letor, tmp_path, out):
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(_edited(variant_model[1], lambda d: d["coef"].__setitem__(0, float("nan")))))
    code, _, err = run_cli(["predict", str(path), small_letor, "--output", str(out / "s.txt")])
    assert_clean_failure(code, err, "predict", out)
    assert "edited.json" in err


@pytest.mark.parametrize("param, value, words", [
    ("loss", "cubic", "unknown loss 'cubic'"),
    ("margin", "rank", "unknown margin 'rank'"),
    ("l1", -1.0, "l1 must be a non-negative"),
    ("lower", 1.0, "lower <= 0 <= upper"),
    ("lower", {"a": 1}, "lower must be numbers"),
])
def test_a_hand_edited_variant_parameter_loads_and_is_refused_at_refit(param, value, words, variant_model,
                                                                        tmp_path):
    """As scikit-learn does: parameters are checked when the estimator is fitted again (docs/reliability.md)."""
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(_edited(variant_model[1], lambda d: d["params"].update({param: value}))))
    model = load_model(path)
    assert np.array_equal(model.coef_, variant_model[1]["coef"])  # the weights are what the file says
    with pytest.raises(ValidationError, match=words):
        model.fit(SMALL)


def test_predict_refuses_data_with_more_features_than_the_model(variant_model, tmp_path, out):
    data = tmp_path / "wide.letor"
    data.write_text("2 qid:1 1:0.5 2:0.1 3:0.2 5:0.7\n0 qid:1 1:0.2 2:0.3\n")
    for argv in (["predict", variant_model[0], str(data), "--output", str(out / "s.txt")],
                 ["evaluate", str(data), "--model", variant_model[0], "--json", str(out / "m.json")]):
        code, _, err = run_cli(argv)
        assert_clean_failure(code, err, argv[0], out)
        assert "features up to 5" in err and "fitted with 3" in err


def test_predict_reads_data_with_fewer_features_as_zeros(variant_model, tmp_path, out):
    """SVMlight leaves out zero features: a file whose last feature is always 0 has fewer columns."""
    data = tmp_path / "narrow.letor"
    data.write_text("2 qid:1 1:0.5\n0 qid:1 2:0.2\n1 qid:1 1:-1\n")
    code, _, err = run_cli(["predict", variant_model[0], str(data), "--output", str(out / "s.txt")])
    assert code == 0, err
    coef = np.array(variant_model[1]["coef"])
    expected = np.array([[0.5, 0, 0], [0, 0.2, 0], [-1, 0, 0]]) @ coef
    np.testing.assert_allclose(np.loadtxt(out / "s.txt"), expected, rtol=1e-15, atol=0)


# ---------------------------------------------------------------------------------------------
# Read-only output folders
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder of mode 0555. As root, chmod stops nothing (``os.access`` says so), so the kernel's refusal
    is simulated: creating, opening for writing or renaming onto a path in the folder raises EACCES."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):
        def inside(path, dir_fd=None):
            return dir_fd is None and os.path.dirname(os.path.abspath(os.fsdecode(path))) == str(folder)

        def refuse(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))

        real_open, real_mkdir, real_replace = os.open, os.mkdir, os.replace

        def open_(path, flags, *args, dir_fd=None, **kwargs):
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and inside(path, dir_fd):
                refuse(path)
            return real_open(path, flags, *args, dir_fd=dir_fd, **kwargs)

        def mkdir(path, *args, dir_fd=None, **kwargs):
            if inside(path, dir_fd):
                refuse(path)
            return real_mkdir(path, *args, dir_fd=dir_fd, **kwargs)

        def replace(src, dst, **kwargs):
            if inside(dst):
                refuse(dst)
            return real_replace(src, dst, **kwargs)

        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "mkdir", mkdir)
        monkeypatch.setattr(os, "replace", replace)
    yield folder
    folder.chmod(0o755)


def test_outputs_into_a_read_only_folder_are_refused_in_one_line(read_only, small_letor, variant_model):
    model = variant_model[0]
    for argv in (["fit", small_letor, "--model", str(read_only / "m.json")],
                 ["predict", model, small_letor, "--output", str(read_only / "s.txt")],
                 ["evaluate", small_letor, "--model", model, "--json", str(read_only / "e.json")],
                 ["verify", "--data", small_letor, "--solvers", "clarabel", "--json", str(read_only / "v.json")],
                 ["cv", "--data", small_letor, "--methods", "ranksvm", "--n-folds", "3", "--no-progress",
                  "--out", str(read_only / "cv")]):
        code, _, err = run_cli(argv)
        assert_clean_failure(code, err, argv[0], read_only)
        assert str(read_only) in err


@pytest.mark.parametrize("command", ["fit", "verify"])
def test_a_read_only_output_folder_is_refused_before_the_work(command, read_only, small_letor):
    argv = {"fit": ["fit", small_letor, "--model", str(read_only / "m.json")],
            "verify": ["verify", "--data", small_letor, "--solvers", "clarabel", "--json",
                       str(read_only / "v.json")]}[command]
    code, stdout, err = run_cli(argv)
    assert_clean_failure(code, err, command, read_only)
    assert stdout == ""  # fit prints after the fit, verify its header before the first solve
    assert os.path.basename(argv[-1]) in err


# ---------------------------------------------------------------------------------------------
# File names with spaces, newlines, non-ASCII characters and bytes that are not UTF-8
# ---------------------------------------------------------------------------------------------

#: A Latin-1 file name: not UTF-8, so Python reads its byte 0xe9 as the lone surrogate U+DCE9 (PEP 383).
NOT_UTF8 = os.fsdecode(b"latin1-\xe9")


@pytest.mark.parametrize("name", ["with space", "new\nline", "tab\tand 'quotes\"", "ünïcødé-数据", " lead and trail ",
                                  NOT_UTF8],
                         ids=["space", "newline", "tab-quotes", "non-ascii", "blanks", "not-utf8"])
def test_odd_file_names_for_data_and_outputs(name, small_letor, tmp_path):
    data = tmp_path / f"{name}.letor"
    data.write_bytes(Path(small_letor).read_bytes())
    model, scores = tmp_path / f"{name} model.json", tmp_path / f"{name} scores.txt"
    outputs = [tmp_path / f"{name} e.json", tmp_path / f"{name} pq.csv", tmp_path / f"{name} v.json",
               tmp_path / f"{name} cv"]
    for argv in (["fit", str(data), "--model", str(model)],
                 ["predict", str(model), str(data), "--output", str(scores)],
                 ["evaluate", str(data), "--model", str(model), "--json", str(outputs[0]), "--per-query",
                  str(outputs[1])],
                 ["verify", "--data", str(data), "--solvers", "clarabel", "--json", str(outputs[2])],
                 ["cv", "--data", str(data), "--methods", "ranksvm", "--n-folds", "3", "--lams", "0.1,1",
                  "--no-progress", "--out", str(outputs[3])]):
        code, _, err = run_cli(argv)
        assert code == 0, (argv[0], err)
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in [data, model, scores, *outputs])
    assert len(outputs) == 3 or (outputs[3] / "results.csv").is_file()
    assert len(np.loadtxt(scores)) == SMALL.n_documents
    # a missing file with a newline in its name is still one line
    code, _, err = run_cli(["fit", str(tmp_path / f"missing {name}.letor"), "--model", str(model)])
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_file_name_that_is_not_utf8_is_printed_as_its_bytes(small_letor, tmp_path, monkeypatch):
    """A strict UTF-8 stdout (PYTHONIOENCODING=utf-8, a UTF-8 locale that is not C) used to fail on
    ``wrote m\\udcff.json`` after writing the model: "internal error", exit 1, the model written."""
    model = tmp_path / os.fsdecode(b"m\xff.json")
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", stdout)
    code = main(["fit", small_letor, "--model", str(model)])
    stdout.flush()
    assert code == 0
    assert os.path.isfile(model)
    assert b"wrote " + os.fsencode(model) in raw.getvalue()  # the name's own bytes, as ls prints them
    assert stdout.errors == "strict"  # restored after the command


def test_cv_on_data_whose_name_is_not_utf8(small_letor, tmp_path):
    data = tmp_path / os.fsdecode(b"d\xff.letor")
    data.write_bytes(Path(small_letor).read_bytes())
    code, _, err = run_cli(["cv", "--data", str(data), "--methods", "ranksvm", "--n-folds", "3", "--no-progress",
                            "--out", str(tmp_path / "cv")])
    assert code == 0, err
    assert (tmp_path / "cv" / "results.csv").is_file()


def test_a_concurrent_commands_temporary_file_is_not_called_a_users_file(tmp_path):
    folder = tmp_path / "cvout"
    folder.mkdir()
    (folder / ".cvxrank-4a6471b80007.tmp").write_text("")  # the first cv's owner mark, before its rename
    code, _, err = run_cli(["cv", "--out", str(folder), "--methods", "ranksvm", "--queries", "9", "--n-folds", "3",
                            "--no-progress"])
    assert code in (0, 2) and "not written by cvxrank" not in err, err


# ---------------------------------------------------------------------------------------------
# Two processes: concurrent cv, and interrupts (slow: each starts interpreters)
# ---------------------------------------------------------------------------------------------

def _popen(args, cwd, *, script=None):
    """``cvxrank ARGS`` (or ``python -c SCRIPT ARGS``) with Ctrl-C as at a terminal: a job started in the
    background inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler."""
    argv = [sys.executable, "-c", script, *args] if script else [sys.executable, "-m", "cvxrank.cli", *args]
    return subprocess.Popen(argv, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509


#: ``cvxrank cv`` that says when it holds its folder's lock, then writes slowly (the real command otherwise).
CV_WRITING_SLOWLY = """
import sys, time
import cvxrank.experiments.cv as cv

save = cv.CVResult.save
def slow_save(self, folder):
    print("writing", flush=True)
    time.sleep(120)
    return save(self, folder)
cv.CVResult.save = slow_save
import cvxrank.cli
sys.exit(cvxrank.cli.main(sys.argv[1:]))
"""

CV_ARGS = ["cv", "--out", "cvout", "--methods", "ranksvm", "--queries", "9", "--n-folds", "3", "--no-progress"]


@pytest.mark.slow
def test_a_second_cv_into_a_folder_being_written_refuses_at_once(tmp_path):
    first = _popen(CV_ARGS, tmp_path, script=CV_WRITING_SLOWLY)
    try:
        while (line := readline_within(first)) and line.strip() != "writing":
            pass
        assert line, first.stderr.read()
        second = subprocess.run([sys.executable, "-m", "cvxrank.cli", *CV_ARGS], cwd=tmp_path, env=ENV,
                                capture_output=True, text=True, timeout=240, check=False)
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"(process {first.pid}) is writing into cvout" in lines[0], second.stderr
        assert first.poll() is None  # the first still holds the lock: the refusal was the lock's
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=120)
        assert first.returncode == 130 and err.strip() == "cvxrank cv: interrupted", err
        # neither left a result behind: the first was interrupted before writing, the second refused
        assert not os.path.exists(tmp_path / "cvout" / "results.csv")
        assert not glob.glob(str(tmp_path / "**" / ".cvxrank-*.tmp"), recursive=True)
    finally:
        first.kill()
        first.wait()


@pytest.mark.slow
def test_two_concurrent_cvs_into_one_folder_one_writes_and_the_other_refuses(tmp_path):
    """Started together: whichever comes second is refused in one line (by the lock, or by the results or
    the mark the first has just written), and the folder holds one complete set of results."""
    procs = [_popen(CV_ARGS, tmp_path) for _ in range(2)]
    done = [p.communicate(timeout=240) + (p.returncode,) for p in procs]
    assert sorted(code for *_, code in done) == [0, 2], done
    err = next(e for _, e, code in done if code == 2)
    assert len(err.strip().splitlines()) == 1 and err.startswith("cvxrank cv: error: ") and "cvout" in err, err
    written = next(o for o, _, code in done if code == 0)
    results = (tmp_path / "cvout" / "results.csv").read_text()
    assert "RankSVM" in written and results.count("\n") >= 2
    assert not glob.glob(str(tmp_path / "cvout" / ".cvxrank-*.tmp"))


#: The command line with one event: "solving" on stdout as CVXPY calls the solver (solve_via_data),
#: so the signal can be sent inside the solve.
SAY_WHEN_SOLVING = """
import sys
from cvxpy.reductions.solvers.solving_chain import SolvingChain

solve_via_data = SolvingChain.solve_via_data
def say(self, *args, **kwargs):
    print("solving", flush=True)
    return solve_via_data(self, *args, **kwargs)
SolvingChain.solve_via_data = say
import cvxrank.cli
sys.exit(cvxrank.cli.main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def big_letor(tmp_path_factory):
    """3,675 documents, 20 features: a solve of a few seconds, long enough to be interrupted in."""
    path = tmp_path_factory.mktemp("big") / "big.letor"
    save_letor(cr.make_ranking(n_queries=300, n_features=20, random_state=0), path)
    return str(path)


def _interrupted(proc, command, folder, outputs):
    """Exit 130, the one line ``cvxrank COMMAND: interrupted``, and none of ``outputs`` nor a temporary file."""
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert err.strip().splitlines() == [f"cvxrank {command}: interrupted"], err
    for path in outputs:
        assert not os.path.exists(path), f"{path} written after Ctrl-C"
    assert not glob.glob(str(folder / ".cvxrank-*"))


def _fit_interrupted_in_solver(solver, big_letor, tmp_path, delay):
    proc = _popen(["fit", big_letor, "--model", "m.json", "--solver", solver, "--formulation", "lifted",
                   "--tol", "1e-12", "--max-iter", "1000000"], tmp_path, script=SAY_WHEN_SOLVING)
    assert readline_within(proc).strip() == "solving", proc.stderr.read() if proc.poll() is not None else ""
    threading.Event().wait(delay)  # into the solver's own loop, past CVXPY's Python prelude
    proc.send_signal(signal.SIGINT)
    _interrupted(proc, "fit", tmp_path, [tmp_path / "m.json"])


@pytest.mark.slow
def test_sigint_during_fit_ends_with_130_and_no_model(big_letor, tmp_path):
    _fit_interrupted_in_solver("clarabel", big_letor, tmp_path, delay=0.3)


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["scs", "osqp"])  # at tol 1e-12 they run for seconds; ECOS ends too soon
def test_sigint_inside_a_solver_that_catches_it_ends_with_130(solver, big_letor, tmp_path):
    if solver not in available_solvers():
        pytest.skip(f"{solver} is not installed")  # a skip is not an xpass
    _fit_interrupted_in_solver(solver, big_letor, tmp_path, delay=0.5)


def _as_interrupted(raw, solver):
    """A solver's raw result as it looks after a Ctrl-C the solver caught itself (as measured: SCS and OSQP
    say "interrupted", ECOS gives the exit flag -4, ECOS_SIGINT)."""
    if solver == "ecos":
        raw["info"]["exitFlag"], raw["info"]["infostring"] = -4, "UNKNOWN PROBLEM IN SOLVER"
    elif solver == "scs":
        raw["info"]["status"], raw["info"]["status_val"] = "interrupted", -5
    else:
        raw.info.status = "interrupted"
    return raw


@pytest.mark.parametrize("solver", ["scs", "osqp", "ecos"])
def test_a_solver_that_reports_a_caught_ctrl_c_raises_keyboardinterrupt(solver, monkeypatch):
    """Deterministic: the solver's raw result says it was interrupted; cvxrank raises KeyboardInterrupt (the
    command line's exit 130), never a solver failure that a chain or ``verify`` would move past."""
    if solver not in available_solvers():
        pytest.skip(f"{solver} is not installed")
    from cvxpy.reductions.solvers import defines

    const = solver.upper()
    inst = defines.SOLVER_MAP_CONIC.get(const) or defines.SOLVER_MAP_QP[const]
    real = inst.solve_via_data
    monkeypatch.setattr(inst, "solve_via_data", lambda *a, **k: _as_interrupted(real(*a, **k), solver))
    problem = cr.RankingProblem(SMALL, lam=0.1)
    with pytest.raises(KeyboardInterrupt):
        cr.solve(problem, solver)
    with pytest.raises(KeyboardInterrupt):
        cr.solve(problem, [solver, "clarabel"])  # a chain does not move past it
    monkeypatch.undo()
    assert "invert" not in vars(inst)  # the watch is gone after each solve
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        assert cr.solve(problem, solver).w.shape == (SMALL.n_features,)  # an uninterrupted solve goes on as before


def _verify_interrupted(solvers, tmp_path, delay):
    proc = _popen(["verify", "--queries", "200", "--features", "20", "--solvers", solvers, "--json", "v.json"],
                  tmp_path)
    while (line := readline_within(proc)) and not line.startswith("reference"):  # the first row: solving has begun
        pass
    assert line, proc.stderr.read()
    threading.Event().wait(delay)
    proc.send_signal(signal.SIGINT)
    _interrupted(proc, "verify", tmp_path, [tmp_path / "v.json"])


@pytest.mark.slow
def test_sigint_during_verify_ends_with_130_and_no_json(tmp_path):
    _verify_interrupted("clarabel", tmp_path, delay=0.3)


@pytest.mark.slow
def test_sigint_inside_scs_during_verify_ends_with_130(tmp_path):
    _verify_interrupted("scs", tmp_path, delay=0.5)
