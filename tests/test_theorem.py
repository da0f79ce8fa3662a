"""verify_theorem1: every certified row passes on its own certificate; nothing stricter is asserted."""

import numpy as np
import pytest

from cvxrank.datasets import make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers.registry import get_spec
from cvxrank.theorem import COLUMNS, DEFAULT_FORMULATIONS, DEFAULT_SOLVERS, ROUNDING, TIME_LIMIT_NOTE
from cvxrank.theorem import plan_rows, verdict, verify_theorem1
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


def test_default_rows_certify_within_their_work_limits():
    """The defaults: clarabel and ecos on the primal and the dual, scs on the lifted form and the dual, the
    pair-free cutting_plane on (9); every row certifies within its work limit, whatever the clock says."""
    df = verify_theorem1(make_ranking(n_queries=4, random_state=2))
    installed = [s for s in DEFAULT_SOLVERS if get_spec(s).kind == "native" or s in CORE_CVXPY]
    assert df["solver"].drop_duplicates().tolist() == installed
    for solver in installed:
        forms = df.loc[df.solver == solver, "formulation"].tolist()
        assert forms == (["pairfree"] if solver == "cutting_plane" else list(DEFAULT_FORMULATIONS[solver]))
    assert (df["verdict"] == "pass").all(), df.to_string()
    assert df.attrs["verified"] and df.attrs["n_certified"] == len(df) and df.attrs["n_time_limit"] == 0
    assert df.attrs["time_limit"] is None  # no clock unless asked for
    assert df.attrs["work_limits"] == {s: get_spec(s).work_limit for s in installed}
    assert all(w <= limit for w, limit in zip(df["work"], df["work_limit"]))
    assert df.attrs["reference"] in ("lifted/clarabel", "primal/clarabel")
    assert df.attrs["reference_relative_gap"] <= 1e-8  # the reference is certified to the 1e-8 it asks for


def test_every_default_solver_has_a_work_limit():
    """verify and demo judge by work: every solver they run by default (and osqp, subgradient, gd, which they
    name) has an iteration or oracle-call cap in the registry, passed under its own option name."""
    for name in list(DEFAULT_SOLVERS) + ["osqp", "subgradient", "gd"]:
        spec = get_spec(name)
        assert isinstance(spec.work_limit, int) and spec.work_limit > 0, name
        assert spec.max_iter(spec.work_limit) == {spec.max_iter_option: spec.work_limit}, name
    assert get_spec("ecos").max_iter(7) == {"max_iters": 7}  # ECOS too: it has no time limit, it has this


def test_a_row_out_of_work_is_not_certified_and_says_so():
    data = make_ranking(n_queries=4, random_state=2)
    df = verify_theorem1(data, solvers=["clarabel", "ecos"], work_limits={"ecos": 2})
    ecos = df[df.solver == "ecos"]
    assert (ecos["verdict"] == "not certified").all() and (ecos["work"] <= 2).all()
    assert ecos["note"].str.contains("within its work limit of 2 iterations").all()
    assert (df.loc[df.solver == "clarabel", "verdict"] == "pass").all()
    assert df.attrs["verified"] and df.attrs["n_certified"] == 2 and df.attrs["work_limits"]["ecos"] == 2


def test_the_time_limit_is_an_opt_in_safety_net_not_a_verdict(monkeypatch):
    """A clock that moves one second per reading stops the pure subgradient method (about 240,000 steps
    from certifying here) at its first check against a 1 s limit, whatever the machine; the row says so
    instead of being judged. Clarabel and ECOS keep their own clocks."""
    import time

    ticks = iter(range(10**9))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(ticks)))
    data = make_ranking(n_queries=12, n_features=5, n_grades=3, random_state=0)
    df = verify_theorem1(data, tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu="balanced", lam=0.1,
                         solvers=["ecos", "subgradient"], formulations=("primal",), time_limit=1.0)
    sub = df[df.solver == "subgradient"].iloc[0]
    assert sub["verdict"] == "time limit" and sub["status"] == "user_limit"
    assert sub["note"].startswith(TIME_LIMIT_NOTE) and sub["work"] < sub["work_limit"]
    assert df.loc[df.solver == "ecos", "verdict"].tolist() == ["pass"]  # ECOS has no time option: never stopped
    assert df.attrs["verified"] and df.attrs["n_time_limit"] == 1 and df.attrs["time_limit"] == 1.0


def test_progress_bar_goes_to_stderr_only(capsys):
    df = verify_theorem1(make_ranking(n_queries=3, random_state=0), solvers=["clarabel"], progress=True)
    out, err = capsys.readouterr()
    assert df.attrs["verified"] and out == "" and "verify" in err


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
    assert gd["verdict"] == "not certified" and "tol" in gd["note"] and "work limit" in gd["note"]
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
    with pytest.raises(ValidationError, match="work limit of clarabel"):
        verify_theorem1(data, work_limits={"clarabel": 0})
    with pytest.raises(ValidationError, match="not run"):
        verify_theorem1(data, solvers=["clarabel"], work_limits={"ecos": 10})
    with pytest.raises(ValidationError, match="not run"):
        verify_theorem1(data, solvers=["clarabel"], formulations={"ecos": ("primal",)})
    with pytest.raises(ValidationError, match="unknown formulations"):
        plan_rows(["clarabel"], {"clarabel": ("qp",)})
    with pytest.raises(ValidationError, match="twice"):
        verify_theorem1(data, solvers=["clarabel", "clarabel"])
    with pytest.raises(ValidationError, match="RankingData, PairSet or RankingProblem"):
        verify_theorem1(np.eye(3))


@pytest.mark.slow
def test_the_default_rows_certify_the_lightgbm_file():
    """The real LightGBM sample: 13,543 pairs and 300 features; every default row certifies within its work limit,
    so the verdicts are the same on a quiet and on a busy machine (about a minute on 2 cores)."""
    from cvxrank.data import load_letor
    from tests.conftest import LIGHTGBM_DIR

    path = LIGHTGBM_DIR / "train.letor"
    if not path.exists():
        pytest.skip(f"{path} is not there")
    df = verify_theorem1(load_letor(path))
    assert (df["verdict"] == "pass").all(), df.drop(columns=["note"]).to_string()
    assert df.attrs["verified"] and df.attrs["n_pairs"] == 13_543 and df.attrs["time_limit"] is None
    assert all(w <= limit for w, limit in zip(df["work"], df["work_limit"]))


def test_a_solver_that_refuses_the_problem_is_an_error_row_not_an_abort():
    """Per-pair weights: cutting_plane refuses them (they are no (query, grade pair) table); its row says
    so and the other rows are still judged."""
    pairs = make_pairs(make_ranking(n_queries=4, random_state=0))
    problem = RankingProblem(pairs, weights=np.linspace(0.5, 2.0, pairs.n_pairs), lam=0.3)
    df = verify_theorem1(problem, solvers=["clarabel", "cutting_plane"], formulations=("primal",))
    row = df[df.solver == "cutting_plane"].iloc[0]
    assert row["verdict"] == "error" and "per (query, grade pair)" in row["note"]
    assert df.loc[df.solver == "clarabel", "verdict"].tolist() == ["pass"]
