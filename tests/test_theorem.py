
import numpy as np
import pytest

from cvxrank.datasets import make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import make_pairs
from cvxrank.theorem import DEFAULT_TOLERANCES, verify_theorem1
from tests.conftest import CORE_CVXPY

COLUMNS = ["formulation", "solver", "status", "w_error", "w_bound", "L", "M", "identity_error", "objective_error",
           "relative_gap", "time", "passed", "note"]


@pytest.mark.parametrize("tau, mu, what", [
    ({(2, 1): 2.0, (2, 0): 3.0, (1, 0): 0.5}, "balanced", "Theorem 1"),
    ({(2, 1): 2.0, (2, 0): 3.0, (1, 0): 0.5}, None, "Proposition 1"),
    (None, None, "Ranking SVM"),
])
def test_theorem1_holds(tau, mu, what):
    data = make_ranking(n_queries=6, random_state=11)
    df = verify_theorem1(data, tau=tau, mu=mu, lam=0.2, solvers=["clarabel", "ecos", "subgradient"],
                         formulations=("primal", "lifted", "dual", "hinge"))
    assert list(df.columns) == COLUMNS
    assert len(df) == 2 * 4 + 1
    assert df["passed"].all(), df.to_string()
    # The two objectives are related by 2λ at every row's w (L = 2λ M).
    np.testing.assert_allclose(df["L"], 2 * 0.2 * df["M"], rtol=1e-12)
    # The gap's bound on the distance to w* holds for every pair of rows (triangle inequality).
    ok = df[df.status == "optimal"]
    ref = ok.loc[ok.relative_gap.idxmin()]
    assert (ok["w_error"] <= ok["w_bound"] + ref["w_bound"] + 1e-12).all()
    assert df.attrs["lam"] == 0.2 and df.attrs["n_pairs"] == make_pairs(data).n_pairs


def test_default_solvers_cover_installed_core():
    df = verify_theorem1(make_ranking(n_queries=4, random_state=2))
    assert set(df["solver"]) == set(CORE_CVXPY) | {"subgradient"}
    assert set(df.loc[df.solver == "subgradient", "formulation"]) == {"hinge"}
    # The reference row has the smallest certified gap among the optimal rows.
    ok = df[df.status == "optimal"]
    ref_form, ref_solver = df.attrs["reference"].split("/")
    best = ok.loc[ok.relative_gap.idxmin()]
    assert (best.formulation, best.solver) == (ref_form, ref_solver)


def test_failure_is_reported_not_hidden():
    """A tolerance no solver can meet turns rows to FAIL; nothing is rounded into a pass."""
    df = verify_theorem1(make_ranking(n_queries=4, random_state=2), solvers=["clarabel"],
                         tolerances={"gap": 1e-30})
    assert not df["passed"].any()


def test_bad_arguments():
    data = make_ranking(n_queries=3, random_state=0)
    with pytest.raises(ValidationError, match="solvers not available: \\['nope'\\]"):
        verify_theorem1(data, solvers=["nope"])
    with pytest.raises(ValidationError, match="unknown formulations"):
        verify_theorem1(data, formulations=("qp",))
    with pytest.raises(ValidationError, match="lam"):
        verify_theorem1(data, lam=0)
    with pytest.raises(ValidationError, match="unknown tolerance"):
        verify_theorem1(data, tolerances={"wrong": 1})
    with pytest.raises(ValidationError, match="RankingData or PairSet"):
        verify_theorem1(np.eye(3))
    assert set(DEFAULT_TOLERANCES) == {"w", "gap", "objective", "identity"}
