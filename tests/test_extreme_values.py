"""Extreme values where a user meets them: tolerances, feature scales, variant numbers and bounds.

Each case was once accepted and ended meaninglessly (an "optimal" that certified nothing, a NaN deep
in a solver, LAPACK noise on stdout); each is now refused in one line naming what to change, or
handled exactly.
"""

import warnings

import numpy as np
import pytest

import cvxrank as cr
from cvxrank.cli import main
from cvxrank.estimators import load_model
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError


@pytest.fixture(scope="module")
def problem():
    return cr.RankingProblem(cr.make_ranking(n_queries=3, n_features=3, random_state=0), lam=0.5)


# -- tolerances ---------------------------------------------------------------------------
@pytest.mark.parametrize("tol", [1e-300, 1e-16, 5e-324])
def test_a_tolerance_no_float64_gap_can_certify_is_refused_with_the_reason(problem, tol):
    with pytest.raises(ValidationError, match=r"tol must be a number in \[1e-15, 1\) \(below about 4.4 float64 "
                                              "epsilons no relative duality gap can be certified\\)"):
        cr.solve(problem, "clarabel", tol=tol)


def test_the_smallest_tolerance_is_accepted_and_judged_honestly(problem):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = cr.solve(problem, "clarabel", tol=1e-15)
    # "optimal" only with a certified gap within it; anything else says so
    assert res.relative_gap <= 1e-15 if res.status == "optimal" else res.status != "optimal"


# -- feature and cost scales --------------------------------------------------------------
def _letor(path, scale, *, exact=False, seed=0):
    """30 documents in 5 queries, 4 features drawn around ``scale`` (``exact``: the largest |x| is ``scale``)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 4))
    X = X / np.abs(X).max() * scale if exact else X * scale
    y = rng.integers(0, 3, 30)
    path.write_text("".join(f"{y[k]} qid:{k // 6} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(X[k]))
                            + "\n" for k in range(30)))
    return str(path)


@pytest.mark.parametrize("scale, solver, extra", [
    (1e200, "cutting_plane", []),  # LinAlgError, LAPACK's DLASCL lines on stdout, exit 1
    (1e300, "scs", []),  # "ScsWork allocation error", exit 1
    (1e200, "gd", []),  # ten warning lines, then "y_score contains NaN"
    (1e300, "truncated_newton", ["--loss", "squared_hinge"]),
    (1e300, "clarabel", []),  # "try another solver", no word of the scale
    (1e200, "osqp", []),
    (1e-200, "subgradient", []),  # "optimal", and every score X w underflowed to 0
])
def test_features_whose_squares_leave_float64_are_refused_in_one_line(scale, solver, extra, tmp_path, capfd):
    data = _letor(tmp_path / "d.letor", scale)
    model = tmp_path / "m.json"
    assert main(["fit", data, "--model", str(model), "--solver", solver, *extra]) == 2
    out, err = capfd.readouterr()  # file descriptors: LAPACK and the solvers print from C
    assert out == "" and err.count("\n") == 1 and "rescale the features" in err
    assert ("above 1e+50" if scale > 1 else "below 1e-50") in err
    assert not model.exists()


def test_features_at_the_edge_of_the_rule_are_accepted(tmp_path):
    for scale in (1e50, 1e-50):
        data = cr.load_letor(_letor(tmp_path / "d.letor", scale, exact=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
            res = cr.solve(cr.RankingProblem(data, lam=0.5), "cutting_plane", max_iter=50)
        assert np.all(np.isfinite(res.w)) and res.relative_gap >= 0


def test_subnormal_pair_weights_are_refused_when_they_are_the_scale_and_kept_when_one_is_tiny():
    data = cr.make_ranking(n_queries=3, n_features=3, random_state=0)
    pairs = cr.make_pairs(data)
    tiny = cr.RankingProblem(pairs, weights=np.full(pairs.n_pairs, 1e-320), lam=0.5)
    for solver in ("clarabel", "gd", "cutting_plane"):  # used to end "optimal_inaccurate" with a gap of 1
        with pytest.raises(ValidationError, match=r"the largest pair cost C_i = c_i / \(2 lam\) is 1e-320 .*"
                                                  "underflow float64; rescale the pair weights"):
            cr.solve(tiny, solver)
    weights = np.ones(pairs.n_pairs)
    weights[0] = 1e-320  # one pair that weighs (almost) nothing: a legitimate problem
    res = cr.solve(cr.RankingProblem(pairs, weights=weights, lam=0.5), "clarabel")
    assert res.status == "optimal"


# -- variant numbers: l1 and infinite bounds ----------------------------------------------
def test_an_l1_weight_that_overflows_is_refused_before_the_data_is_read(tmp_path, capfd):
    """It used to exit 1 with CVXPY's "Problem data contains NaN or Inf" (rho = l1 / (2 lam) = inf)."""
    model = tmp_path / "m.json"
    argv = ["fit", str(tmp_path / "not-read.letor"), "--model", str(model), "--l1", "1e300", "--lam", "1e-100"]
    assert main(argv) == 2
    out, err = capfd.readouterr()
    assert out == "" and err.count("\n") == 1 and "--l1=1e+300 is too large: l1 must lie in [0, 1e+100]" in err


@pytest.mark.parametrize("solver", ["clarabel", "osqp", "scs"])
def test_an_l1_weight_that_zeroes_w_gives_w_0_not_a_solver_failure(solver):
    """``--l1 1e30`` used to be blamed on the solver ("clarabel failed", "scs returned 'unbounded'"): from
    ``||D^T g||_inf`` on, ``w = 0`` is the exact solution, and it is what comes back."""
    from cvxrank.solvers.cvxpy_backend import l1_zero_threshold
    from cvxrank.variants import Variant, variant_certificate

    data = cr.make_ranking(n_queries=4, n_features=3, random_state=1)
    problem = cr.RankingProblem(data, lam=0.5, variant=Variant(l1=1e30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = cr.solve(problem, solver)
    assert res.w.tolist() == [0.0, 0.0, 0.0] and res.iterations == 0 and "w = 0" in res.extras["solver_skipped"]
    primal, dual, *_ = variant_certificate(problem.variant, problem.pairs, problem.C, problem.lam, res.w)
    assert dual == primal  # w = 0 is optimal: its KKT dual point closes the gap
    threshold = l1_zero_threshold(problem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        just_below = cr.solve(problem.with_variant(Variant(l1=0.5 * threshold)), solver)  # the solver runs
    assert just_below.iterations > 0 and np.any(just_below.w != 0)


def test_infinite_bounds_are_no_bounds_in_fit_and_in_the_model_file(tmp_path, capfd):
    """``--lower=-inf --upper=inf`` used to solve, then fail: "cannot store parameter lower=-inf"."""
    data = _letor(tmp_path / "d.letor", 1.0)
    for solver in ("clarabel", "cutting_plane"):  # the pair-free solver takes no bounds: none are left
        model = tmp_path / f"{solver}.json"
        assert main(["fit", data, "--model", str(model), "--lower=-inf", "--upper=inf", "--solver", solver]) == 0
        params = load_model(model).get_params()
        assert params["lower"] is None and params["upper"] is None
    capfd.readouterr()
    assert main(["fit", data, "--model", str(tmp_path / "x.json"), "--lower=inf"]) == 2
    assert "--lower=inf excludes w = 0" in capfd.readouterr().err


def test_an_estimator_with_infinite_bounds_saves(tmp_path):
    from cvxrank.estimators.pairwise import RankSVM

    data = cr.make_ranking(n_queries=3, n_features=3, random_state=0)
    model = RankSVM(lower=-np.inf, upper=np.inf, solver="cutting_plane").fit(data)
    model.save(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.get_params()["lower"] is None and np.array_equal(loaded.coef_, model.coef_)
