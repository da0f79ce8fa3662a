"""Every run ends: the registry's work limit is the default cap of every solve, and a run it stops says so.

The limits are work (iterations, oracle calls), never time. The tests shrink a solver's registry
limit (``monkeypatch`` on :data:`cvxrank.solvers.SOLVERS`) to show the door applies whatever the
registry says, and never pin how many iterations a solver needs.
"""

import dataclasses
import warnings

import numpy as np
import pytest

import cvxrank as cr
from cvxrank.cli import main
from cvxrank.estimators import ListMLE, RankSVM
from cvxrank.exceptions import InaccurateSolutionWarning, SolverError, ValidationError
from cvxrank.experiments.cv import cross_validate, query_folds
from cvxrank.listwise import ListwiseProblem
from cvxrank.solvers import SOLVERS, available_solvers, solve

#: What fit, cv, verify and the estimators reach: each must have a limit on its work.
REACHED = ("clarabel", "ecos", "osqp", "scs", "subgradient", "gd", "cutting_plane", "truncated_newton", "newton")


def _data():
    return cr.make_ranking(n_queries=4, docs_per_query=(5, 8), n_features=3, random_state=0)


def _problem(name, lam=0.1):
    problem = cr.RankingProblem(_data(), lam=lam)
    loss = SOLVERS[name].losses[0]
    return problem if loss == "hinge" else problem.with_variant(cr.variants.Variant(loss=loss))


def _limit(monkeypatch, name, n):
    """Make ``n`` the registry's work limit of ``name`` for this test."""
    monkeypatch.setitem(SOLVERS, name, dataclasses.replace(SOLVERS[name], work_limit=n))


def _cli(argv) -> int:
    """``cvxrank ARGV`` in this process, its warnings shown as the command shows them (one line on stderr)."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", InaccurateSolutionWarning)
        return main(argv)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        return fn(*args, **kwargs)


def _work(res):
    return SOLVERS[res.solver].work_done(res)


@pytest.mark.parametrize("name", REACHED)
def test_every_solver_that_fit_and_cv_reach_has_a_work_limit(name):
    spec = SOLVERS[name]
    assert spec.max_iter_option and spec.work_limit, f"{name} would run on its own cap, or none"
    assert spec.work_options() == {spec.max_iter_option: spec.work_limit}


@pytest.mark.parametrize("name", [s for s in available_solvers() if s in REACHED])
def test_the_door_gives_the_registry_limit_and_a_run_it_stops_ends_as_user_limit(monkeypatch, name):
    """Two steps of work certify none of these problems: each run ends at the registry's limit as user_limit."""
    _limit(monkeypatch, name, 2)
    with pytest.warns(InaccurateSolutionWarning):
        res = solve(_problem(name, lam=1e-3), name)
    assert res.extras["work_limit"] == 2 and res.extras["work_limit_option"] == SOLVERS[name].max_iter_option
    assert _work(res) <= 2
    assert res.status == "user_limit", (res.status, res.solver_status)  # SCS says "solved_inaccurate"


def test_the_callers_cap_wins_over_the_registry_limit(monkeypatch):
    _limit(monkeypatch, "scs", 2)
    res = _quiet(solve, _problem("scs"), "scs", max_iters=20_000)
    assert res.extras["work_limit"] == 20_000 and res.status == "optimal"


def test_scs_at_a_tiny_lambda_ends_at_its_default_limit():
    """The reported run: SCS on lambda = 1e-100 never certifies; it now stops at the registry's limit.

    (SCS 3.2.4, the lowest release declared, calls this problem unbounded within the limit instead: the
    run ends too, as the one-line failure it is.)"""
    try:
        res = _quiet(solve, cr.RankingProblem(_data(), lam=1e-100), "scs")
    except SolverError as exc:
        assert "returned status 'unbounded'" in str(exc) and "always feasible and bounded" in str(exc)
        return
    assert res.extras["work_limit"] == SOLVERS["scs"].work_limit
    assert res.iterations <= SOLVERS["scs"].work_limit
    assert res.status == "user_limit" and res.relative_gap > res.tol


def test_a_chain_gives_each_solver_its_own_limit(monkeypatch):
    _limit(monkeypatch, "scs", 2)
    res = _quiet(solve, _problem("scs"), ["scs", "clarabel"])
    assert [a["status"] for a in res.extras["attempts"]] == ["user_limit", "optimal"]
    assert res.solver == "clarabel" and res.extras["work_limit"] == SOLVERS["clarabel"].work_limit


def test_the_listwise_problem_has_its_limits_too(monkeypatch):
    data = _data()
    problem = ListwiseProblem(data, C=10.0)
    assert solve(problem).extras["work_limit"] == SOLVERS["newton"].work_limit
    # ListMLE's max_iter defaults to the solver's limit: SCS is no longer cut at Newton's 50 iterations
    model = ListMLE(C=10.0).fit(data)
    assert model.max_iter is None and model.result_.extras["work_limit"] == SOLVERS["newton"].work_limit
    if "scs" in available_solvers("listwise"):
        assert SOLVERS["scs"].work_options("listwise") == {"max_iters": SOLVERS["scs"].listwise_defaults["max_iters"]}
    _limit(monkeypatch, "newton", 1)
    assert _quiet(solve, problem).status == "user_limit"
    assert _quiet(ListMLE(C=10.0).fit, data).result_.status == "user_limit"


def test_estimators_and_cross_validation_get_the_limit(monkeypatch):
    _limit(monkeypatch, "clarabel", 2)
    model = _quiet(RankSVM(lam=0.1, solver="clarabel").fit, _data())
    assert model.result_.status == "user_limit" and model.result_.extras["work_limit"] == 2
    assert _quiet(RankSVM(lam=0.1, solver="clarabel", max_iter=100).fit, _data()).result_.status == "optimal"
    folds = query_folds(cr.make_ranking(n_queries=9, n_features=3, random_state=1), 3, random_state=0)
    cv = cross_validate(folds, ["ranksvm"], grids={"pairwise": {"lam": [0.1]}}, progress=False)
    assert set(cv.selection["status"]) == {"user_limit"}
    monkeypatch.undo()
    cv = cross_validate(folds, ["ranksvm"], grids={"pairwise": {"lam": [0.1]}}, progress=False, max_iter=2)
    assert set(cv.selection["status"]) == {"user_limit"}
    with pytest.raises(ValidationError, match="max_iter"):
        cross_validate(folds, ["ranksvm"], max_iter=0, progress=False)


# -- option values, checked at the door --------------------------------------------------------

BAD_VALUES = [
    ("clarabel", "max_iter", -1),  # Clarabel: OverflowError
    ("clarabel", "max_iter", 2**40),  # OverflowError
    ("clarabel", "time_limit", -1.0),  # a silent user_limit at once
    ("clarabel", "tol_gap_rel", float("nan")),  # silently ignored
    ("ecos", "max_iters", 1.5),
    ("ecos", "abstol", -1.0),  # ECOS: ValueError
    ("osqp", "max_iter", 0),  # OSQP: its own settings error on stdout, then a SolverError
    ("osqp", "eps_abs", float("nan")),  # ran all its iterations
    ("osqp", "alpha", 3.0),
    ("scs", "max_iters", 0),  # SCS: ValueError
    ("scs", "time_limit_secs", -1.0),
    ("subgradient", "max_iter", 2**31),
    ("cutting_plane", "time_limit", float("inf")),
]


@pytest.mark.parametrize("name, option, value", BAD_VALUES)
def test_an_option_value_out_of_range_is_refused_naming_option_solver_and_range(name, option, value):
    if name not in available_solvers():
        pytest.skip(f"{name} not installed")
    with pytest.raises(ValidationError, match=rf"the solver '{name}': {option} must be (a|an) .+, got "):
        solve(_problem(name), name, **{option: value})


def test_option_values_are_checked_in_chains_and_estimators():
    with pytest.raises(ValidationError, match="the solver 'scs': max_iters must be a positive integer"):
        solve(_problem("scs"), "fallback", scs={"max_iters": 0})
    with pytest.raises(ValidationError, match="the solver 'clarabel': max_iter must be a positive integer"):
        RankSVM(solver="clarabel", solver_options={"max_iter": -1}).fit(_data())
    with pytest.raises(ValidationError, match="the solver 'clarabel': max_iter must be"):
        ListMLE(solver="clarabel", solver_options={"max_iter": -1}).fit(_data())
    with pytest.raises(ValidationError, match="max_iter must be a positive integer <= 2147483647"):
        RankSVM(max_iter=2**31).fit(_data())


def test_valid_values_pass_untouched():
    res = solve(_problem("clarabel"), "clarabel", max_iter=100, time_limit=1e6, tol_gap_rel=1e-9)
    assert res.status == "optimal" and res.extras["work_limit"] == 100


# -- the command line ----------------------------------------------------------------------------

@pytest.fixture()
def letor(tmp_path):
    path = tmp_path / "train.letor"
    cr.data.save_letor(cr.make_ranking(n_queries=5, docs_per_query=(5, 8), n_features=3, random_state=2), path)
    return str(path)


def test_fit_at_a_tiny_lambda_ends_with_a_truthful_last_line_and_exit_code(letor, tmp_path, capsys, monkeypatch):
    """``fit --solver scs --lam 1e-100`` used to run on; now it ends at the limit and says which one."""
    _limit(monkeypatch, "scs", 50)
    model = tmp_path / "m.json"
    code = _cli(["fit", letor, "--model", str(model), "--solver", "scs", "--lam", "1e-100"])
    if code == 2:  # SCS 3.2.4 calls it unbounded: one line, the run ended, no model (test above)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "returned status 'unbounded'" in err[0] and not model.exists()
        return
    assert code == 3
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("status user_limit: certified relative gap ")
    assert "work limit of 50 iterations (max_iters)" in last and "--max-iter" in last
    assert model.exists()  # the model is written, with its certified gap
    assert _cli(["fit", letor, "--model", str(model), "--solver", "scs", "--lam", "1e-100", "--max-iter", "30"]) == 3
    assert "work limit of 30 iterations" in capsys.readouterr().out.strip().splitlines()[-1]


def test_fit_states_a_certified_status_last_and_exits_0(letor, tmp_path, capsys):
    assert _cli(["fit", letor, "--model", str(tmp_path / "m.json"), "--solver", "clarabel", "--lam", "0.1"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("status optimal: certified relative gap ") and "<= tol 1e-06" in last


def test_fit_verbose_shows_the_solver_at_work(letor, tmp_path, capsys):
    argv = ["fit", letor, "--model", str(tmp_path / "m.json"), "--solver", "cutting_plane", "--lam", "0.1"]
    assert _cli(argv) == 0
    quiet = capsys.readouterr().out
    assert _cli(argv + ["--verbose"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    progress = [line for line in lines if line.startswith("cutting_plane  it")]
    assert progress and not any(line.startswith("cutting_plane  it") for line in quiet.splitlines())
    assert lines[-1].startswith("status optimal")


def test_the_estimators_verbose_is_checked():
    with pytest.raises(ValidationError, match="verbose must be True or False"):
        RankSVM(verbose="yes").fit(_data())
    assert np.all(np.isfinite(RankSVM(verbose=False).fit(_data()).coef_))


def test_cv_caps_every_fit_and_records_the_status(tmp_path, capsys):
    """``cvxrank cv --max-iter 2``: every fit stops at the cap and its status is in selection.csv."""
    import pandas as pd

    out = tmp_path / "cv"
    code = _cli(["cv", "--queries", "12", "--methods", "ranksvm", "--lams", "0.1,1", "--n-folds", "3",
                 "--no-progress", "--max-iter", "2", "--out", str(out)])
    assert code == 0
    selection = pd.read_csv(out / "selection.csv")
    assert set(selection["status"]) == {"user_limit"}
    assert (selection["relative_gap"] > 0).all()


def test_cv_refuses_a_max_iter_out_of_range_in_one_line(capsys):
    assert _cli(["cv", "--max-iter", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--max-iter must be a positive integer" in err[0]
