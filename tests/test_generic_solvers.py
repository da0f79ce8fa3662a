"""Any solver CVXPY has installed that can take the QP is reached through ``solve``; the registry refines.

HiGHS has a registry entry (its QP iteration option, its work limit); taking that entry out of the table
(``monkeypatch``) makes it an unlisted solver, reached through the generic spec built from CVXPY's own
solver interfaces. LP-only and mixed-integer-only solvers are refused, saying why.
"""

import warnings

import cvxpy as cp
import numpy as np
import pytest

import cvxrank as cr
from cvxrank.cli import main
from cvxrank.exceptions import SolverNotAvailableError, ValidationError
from cvxrank.solvers import (
    SOLVERS,
    available_solvers,
    cvxpy_backend,
    get_spec,
    solve,
    solver_options,
)
from cvxrank.solvers.registry import (
    NOT_FOR_RANKING,
    cvxpy_capabilities,
    generic_spec,
    max_iter_options,
)

needs_highs = pytest.mark.skipif("HIGHS" not in cp.installed_solvers(), reason="CVXPY has no HiGHS here")


def _problem(lam=0.1):
    return cr.RankingProblem(cr.make_ranking(n_queries=4, random_state=0), lam=lam)


def _agree(a, b):
    """Two certified solutions of one problem agree within their two certificates."""
    assert abs(a.objective - b.objective) <= a.gap_L + b.gap_L
    assert np.abs(a.w - b.w).max() <= a.distance_bound + b.distance_bound


@pytest.fixture
def unlisted_highs(monkeypatch):
    """HiGHS as a solver the registry does not list."""
    monkeypatch.delitem(SOLVERS, "highs")
    return "highs"


@needs_highs
@pytest.mark.parametrize("formulation", ["auto", "primal", "dual"])
def test_highs_is_certified_and_agrees_with_clarabel(formulation):
    problem = _problem()
    a, b = solve(problem, "clarabel"), solve(problem, "HiGHS", formulation=formulation)
    assert b.solver == "highs" and b.status == "optimal" and b.certificate.proves(b.tol)
    assert b.certificate.kind == "duality gap"
    _agree(a, b)
    # the run had the registry's cap, under HiGHS's own QP option; the time is HiGHS's own (positive)
    assert b.extras["work_limit_option"] == "qp_iteration_limit" and b.extras["work_limit"] == SOLVERS["highs"].work_limit
    assert b.solve_time > 0 and b.extras["solve_time_source"] in ("solver", "cvxrank")


@needs_highs
def test_highs_is_listed_everywhere_the_installed_solvers_are():
    assert "highs" in available_solvers() and "highs" not in available_solvers("listwise")
    assert {"qp_iteration_limit", "time_limit", "highs_options"} <= solver_options("highs")
    with pytest.raises(ValidationError, match="does not take 'max_iter'"):
        solve(_problem(), "highs", max_iter=5)
    with pytest.raises(ValidationError, match="primal_feasibility_tolerance must be"):
        solve(_problem(), "highs", primal_feasibility_tolerance=1e-12)


@needs_highs
def test_highs_stopped_by_its_qp_cap_ends_as_user_limit_with_an_honest_gap():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cr.InaccurateSolutionWarning)
        res = solve(_problem(lam=1e-3), "highs", formulation="dual", qp_iteration_limit=3)
    assert res.status == "user_limit" and res.extras["work_limit"] == 3
    assert SOLVERS["highs"].work_done(res) <= 4  # QP iterations; CVXPY's count adds the simplex phase
    assert res.relative_gap > res.tol


@needs_highs
def test_an_unlisted_installed_solver_gets_a_generic_spec_and_a_certified_solve(unlisted_highs):
    assert "highs" not in SOLVERS and "highs" in available_solvers()
    spec = get_spec("HIGHS")
    assert spec is not None and spec.generic and spec.kind == "cvxpy" and spec.cvxpy_name == "HIGHS"
    assert "QP" in spec.method and spec.options is None and spec.work_limit is None
    assert spec.work_options() == {} and spec.max_iter_option is None and not spec.exp_cone
    assert SOLVERS["highs"] == spec  # the table's look-up builds it too (the backends read SOLVERS[name])
    assert solver_options("highs") is None  # options pass untouched
    a, b = solve(_problem(), "clarabel"), solve(_problem(), "highs")
    assert b.solver == "highs" and b.status == "optimal"
    assert "work_limit" not in b.extras  # cvxrank gave no cap: the solver's own default applies
    _agree(a, b)
    with pytest.raises(ValidationError, match="does not know the iteration option"):
        max_iter_options("highs", 10)


@needs_highs
def test_a_chain_takes_an_unlisted_solver_and_its_options(unlisted_highs):
    res = solve(_problem(), ["highs", "clarabel"], highs={"time_limit": 60.0})
    assert res.solver == "highs" and res.status == "optimal"
    assert [a["solver"] for a in res.extras["attempts"]] == ["highs"]


@needs_highs
def test_the_cli_runs_an_unlisted_solver(unlisted_highs, tmp_path, capsys):
    data, model = tmp_path / "train.txt", tmp_path / "model.json"
    cr.data.save_letor(cr.make_ranking(n_queries=4, random_state=0), data)
    assert main(["fit", str(data), "--solver", "highs", "--lam", "0.1", "--model", str(model)]) == 0
    assert "status optimal" in capsys.readouterr().out and model.exists()


def test_capabilities_are_read_off_cvxpys_solver_interfaces():
    assert cvxpy_capabilities("OSQP")[:2] == ("QP", "LP") and "SOC" not in cvxpy_capabilities("OSQP")
    assert {"SOC", "EXP"} <= set(cvxpy_capabilities("ECOS")) and "QP" not in cvxpy_capabilities("ECOS")
    assert "SOC" not in cvxpy_capabilities("SCIPY") and "QP" not in cvxpy_capabilities("SCIPY")
    assert cvxpy_capabilities("NO_SUCH_SOLVER") == ()


@pytest.fixture
def installed_too(monkeypatch):
    """CVXPY reports SCIPY and ECOS_BB installed (their interfaces are in CVXPY whether or not they are)."""
    monkeypatch.setattr(cvxpy_backend, "_INSTALLED", cvxpy_backend.installed_cvxpy_names() | {"SCIPY", "ECOS_BB"})


@pytest.mark.parametrize("name, why", [("scipy", r"cannot take a QP \(CVXPY's SCIPY interface takes LP problems"),
                                       ("ecos_bb", "branch and bound for mixed-integer problems")])
def test_lp_only_and_mixed_integer_only_solvers_are_refused_saying_why(installed_too, name, why):
    assert name.upper() in NOT_FOR_RANKING or "QP" not in cvxpy_capabilities(name.upper())
    assert name not in available_solvers() and name not in available_solvers(None)
    for call in (lambda: get_spec(name), lambda: solve(_problem(), name), lambda: generic_spec(name)):
        with pytest.raises(SolverNotAvailableError, match=why) as err:
            call()
        assert "installed: clarabel" in str(err.value)
    with pytest.raises(KeyError):
        SOLVERS[name]


def test_an_unknown_name_is_still_unknown_and_lists_the_installed_solvers():
    with pytest.raises(SolverNotAvailableError, match=r"unknown solver 'nope'; installed: ") as err:
        solve(_problem(), "nope")
    listed = str(err.value).split("installed: ")[1].split(", ")
    assert set(available_solvers()) <= set(listed)
    with pytest.raises(KeyError):
        SOLVERS["nope"]
    assert "nope" not in SOLVERS and SOLVERS.get("nope") is None


def test_a_cvxpy_solver_that_is_not_installed_is_unknown_too(monkeypatch):
    monkeypatch.setattr(cvxpy_backend, "_INSTALLED", frozenset({"CLARABEL"}))
    with pytest.raises(SolverNotAvailableError, match="unknown solver 'qpalm'; installed: clarabel, "):
        get_spec("qpalm")
    assert available_solvers()[0] == "clarabel" and "osqp" not in available_solvers()
