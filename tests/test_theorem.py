"""verify_theorem1: every certified row passes on its own certificate; nothing stricter is asserted."""

import numpy as np
import pytest

from cvxrank.datasets import make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.theorem import COLUMNS, ROUNDING, verdict, verify_theorem1
from tests.conftest import CORE_CVXPY


@pytest.mark.parametrize("tau, mu, lam, native, what", [
    # The pure subgradient method's O(1/k) rate needs seconds at small λ: the pair-free solver there.
    ({(2, 1): 2.0, (2, 0): 3.0, (1, 0): 0.5}, "balanced", 0.05, "cutting_plane", "Theorem 1"),
    ({(2, 1): 2.0, (2, 0): 3.0, (1, 0): 0.5}, "balanced", 0.5, "subgradient", "Theorem 1"),
    ({(2, 1): 2.0, (2, 0): 3.0, (1, 0): 0.5}, None, 20.0, "subgradient", "Proposition 1"),
    (None, None, 0.2, "subgradient", "Ranking SVM"),
])
def test_theorem1_holds_and_every_certified_row_passes(tau, mu, lam, native, what):
    data = make_ranking(n_queries=6, random_state=11)
    streamed = []
    df = verify_theorem1(data, tau=tau, mu=mu, lam=lam, solvers=["clarabel", "ecos", native],
                         formulations=("primal", "lifted", "dual", "hinge"), on_row=streamed.append)
    assert list(df.columns) == COLUMNS
    assert len(df) == 2 * 4 + 1
    # Rows were streamed as they finished: the reference first, then every row in order.
    assert [r["formulation"] for r in streamed] == ["reference"] + df["formulation"].tolist()
    certified = df["verdict"] != "not certified"
    assert (df.loc[certified, "verdict"] == "pass").all(), df.to_string()
    assert df.attrs["verified"] and df.attrs["n_certified"] == int(certified.sum()) >= 8
    # The native row certified too; the pure subgradient row by subgradient steps alone.
    row = df[df.solver == native].iloc[0]
    assert row["stages"] == native and row["verdict"] == "pass"
    assert row["relative_gap"] <= (1e-4 if native == "subgradient" else 1e-6)
    # L = 2λ M at every row's own w, to float64 rounding.
    np.testing.assert_allclose(df["L"], 2 * lam * df["M"], rtol=ROUNDING)
    assert (df["w_distance"] <= df["w_bound"]).all()
    assert df.attrs["lam"] == lam and df.attrs["n_pairs"] == make_pairs(data).n_pairs


def test_default_solvers_cover_installed_core():
    df = verify_theorem1(make_ranking(n_queries=4, random_state=2))
    assert set(df["solver"]) == set(CORE_CVXPY) | {"subgradient"}
    assert set(df.loc[df.solver == "subgradient", "formulation"]) == {"hinge"}
    assert df.attrs["reference"] == "lifted/clarabel" or df.attrs["reference"] == "primal/clarabel"
    assert df.attrs["reference_relative_gap"] <= 1e-9


def _row(**kw):
    base = {"w": np.zeros(2), "L": 10.0, "gap_L": 1e-6, "distance_bound": 1e-3, "status": "optimal",
            "identity_error": 0.0}
    return {**base, **kw}


def test_verdict_fails_what_the_certificates_contradict_and_ignores_what_they_cannot_prove():
    ref = _row()
    assert verdict(_row(w=np.array([1.5e-3, 0.0])), ref) == "pass"             # 1.5e-3 <= 1e-3 + 1e-3
    assert verdict(_row(w=np.array([3e-3, 0.0])), ref) == "FAIL"               # farther than both bounds
    assert verdict(_row(L=10.1), ref) == "FAIL"                                # objectives beyond the gaps
    assert verdict(_row(identity_error=1e-9), ref) == "FAIL"                   # L != 2λM at its own w
    assert verdict(_row(w=np.array([5.0, 0.0]), status="user_limit"), ref) == "not certified"


def test_uncertified_rows_count_neither_way():
    data = make_ranking(n_queries=4, random_state=2)
    df = verify_theorem1(data, solvers=["clarabel", "gd"], formulations=("primal",))
    gd = df[df.solver == "gd"].iloc[0]
    assert gd["verdict"] == "not certified" and "tol" in gd["note"]
    assert df.attrs["verified"] and df.attrs["n_certified"] == 1


def test_a_problem_brings_its_own_costs():
    data = make_ranking(n_queries=4, random_state=2)
    problem = RankingProblem(data, mu="balanced", lam=0.3)
    df = verify_theorem1(problem, solvers=["clarabel"])
    assert df.attrs["verified"] and df.attrs["lam"] == 0.3
    with pytest.raises(ValidationError, match="brings its own costs"):
        verify_theorem1(problem, mu="balanced")


def test_bad_arguments():
    data = make_ranking(n_queries=3, random_state=0)
    with pytest.raises(ValidationError, match="solvers not available: \\['nope'\\]"):
        verify_theorem1(data, solvers=["nope"])
    with pytest.raises(ValidationError, match="unknown formulations"):
        verify_theorem1(data, formulations=("qp",))
    with pytest.raises(ValidationError, match="lam"):
        verify_theorem1(data, lam=0)
    with pytest.raises(ValidationError, match="time_limit"):
        verify_theorem1(data, time_limit=float("nan"))
    with pytest.raises(ValidationError, match="twice"):
        verify_theorem1(data, solvers=["clarabel", "clarabel"])
    with pytest.raises(ValidationError, match="RankingData, PairSet or RankingProblem"):
        verify_theorem1(np.eye(3))
