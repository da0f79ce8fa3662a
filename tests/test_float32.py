"""Features stored in float32: kept so through the data and the pair-free solver, computed with in float64.

The float32 values are the data: every product with ``X`` is taken in float64 arithmetic on the
exactly-upcast values (:mod:`cvxrank._float64`), so the certificate is exact for them and a solve
on float32 data agrees with Clarabel on the float64 copy of the same values.
"""

import tracemalloc

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from cvxrank._float64 import abs_matvec, abs_max, abs_rmatvec, dense_rows, matvec, rmatvec
from cvxrank.data import RankingData, load_letor, save_letor
from cvxrank.datasets import make_ranking, make_web_like
from cvxrank.exceptions import ValidationError
from cvxrank.formulations import build_primal
from cvxrank.native import PairFreeOracle, cost_table, cutting_plane
from cvxrank.native.variant_oracle import VariantOracle
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import Instance, assert_agree


def as_float32(data):
    return RankingData(data.X, data.y, data.qid, dtype=np.float32)


def as_float64(data):
    """The float64 copy of a float32 data set: the same values, exactly."""
    return RankingData(data.X.astype(np.float64), data.y, data.qid)


# -- the container -----------------------------------------------------------------------------
@pytest.mark.parametrize("density", [1.0, 0.5])
def test_ranking_data_keeps_float32_through_subsetting(density):
    data = make_ranking(n_queries=4, n_features=3, density=density, random_state=0)
    assert data.X.dtype == np.float64 and data.dtype == np.float64  # the default is unchanged
    d32 = as_float32(data)
    assert d32.X.dtype == np.float32 and d32.dtype == np.float32 and d32.is_sparse == (density < 1)
    assert np.array_equal(_dense(d32.X), _dense(data.X).astype(np.float32))
    for part in (d32.subset([0, 2, 3]), d32.subset(d32.y > 0), d32.select_queries(d32.query_ids[:2])):
        assert part.X.dtype == np.float32 and part.dtype == np.float32
    # a float32 X without dtype becomes float64, as before the option existed
    assert RankingData(_dense(d32.X), d32.y, d32.qid).X.dtype == np.float64


@pytest.mark.parametrize("bad", [np.int32, "float16", np.complex128, "nonsense", object])
def test_ranking_data_refuses_other_dtypes(bad):
    with pytest.raises(ValidationError, match="dtype must be float64 or float32"):
        RankingData(np.eye(2), [1, 0], [1, 1], dtype=bad)


def test_float32_overflow_is_named():
    with pytest.raises(ValidationError, match="beyond float32's range"):
        RankingData(np.array([[1e300], [0.0]]), [1, 0], [1, 1], dtype=np.float32)


def test_from_frame_load_letor_and_generators_take_dtype(tmp_path):
    df = pd.DataFrame({"q": [1, 1, 2, 2], "rel": [1, 0, 0, 2], "f1": [0.1, 0.2, 0.3, 0.4]})
    assert RankingData.from_frame(df, label="rel", qid="q", dtype="float32").X.dtype == np.float32
    with pytest.raises(ValidationError, match="float64 or float32"):
        RankingData.from_frame(df, label="rel", qid="q", dtype=np.int64)
    data = make_ranking(n_queries=3, n_features=4, random_state=1)
    path = tmp_path / "d.letor"
    save_letor(data, path)
    for dense in (True, False):
        loaded = load_letor(path, dense=dense, dtype=np.float32)
        assert loaded.X.dtype == np.float32 and loaded.is_sparse != dense
        assert np.array_equal(_dense(loaded.X), data.X.astype(np.float32))
    # the generators draw in float64 and round: the same grades and queries, features rounded
    d64, d32 = make_web_like(n_queries=3, random_state=2), make_web_like(n_queries=3, random_state=2, dtype=np.float32)
    assert d32.X.dtype == np.float32 and np.array_equal(d32.X, d64.X.astype(np.float32))
    assert np.array_equal(d32.y, d64.y) and np.array_equal(d32.qid, d64.qid)
    sparse = make_ranking(n_queries=3, density=0.5, random_state=3, dtype=np.float32)
    assert sparse.is_sparse and sparse.X.dtype == np.float32


# -- the products ------------------------------------------------------------------------------
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("chunk_bytes", [8, 8 * 7 * 3, 10**6])  # one row, three rows (m = 50 is no multiple), all
def test_chunked_products_equal_the_float64_products(sparse, chunk_bytes):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 7)) * np.exp(rng.uniform(-20, 20, size=(50, 7)))  # magnitudes far apart
    X[rng.random(X.shape) < 0.4] = 0.0
    X32 = X.astype(np.float32)
    X32 = sp.csr_matrix(X32) if sparse else X32
    exact = _dense(X32).astype(np.float64)  # the float32 values, exactly
    w, v = rng.standard_normal(7), rng.standard_normal(50)
    eps = np.finfo(np.float64).eps
    s = matvec(X32, w, chunk_bytes=chunk_bytes)
    assert s.dtype == np.float64 and s.shape == (50,)
    # float64 rounding of each dot product: at most n ε Σ_j |x_ij w_j|
    assert np.all(np.abs(s - exact @ w) <= 7 * eps * (np.abs(exact) @ np.abs(w)))
    g = rmatvec(X32, v, chunk_bytes=chunk_bytes)
    assert g.dtype == np.float64 and g.shape == (7,)
    assert np.all(np.abs(g - exact.T @ v) <= 50 * eps * (np.abs(exact).T @ np.abs(v)))
    rows = dense_rows(X32, [4, 0, 4])
    assert rows.dtype == np.float64 and np.array_equal(rows, exact[[4, 0, 4]])
    # float64 X: the plain products, bit for bit
    assert np.array_equal(matvec(X, w, chunk_bytes=chunk_bytes), X @ w)
    assert np.array_equal(rmatvec(X, v, chunk_bytes=chunk_bytes), X.T @ v)



@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("chunk_bytes", [8, 8 * 7 * 3, 10**6])
def test_absolute_products_over_some_rows_read_only_those_rows(sparse, dtype, chunk_bytes):
    """|X[rows]| |w|, |X[rows]|ᵀ |c| and max |X[rows]| gathered a block at a time equal the products of the
    copied rows (the rounding bounds of a problem that reads a few rows of a large X)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 7)) * np.exp(rng.uniform(-5, 5, size=(60, 7)))
    X[rng.random(X.shape) < 0.4] = 0.0
    X[3, 2] = -1e6  # the largest |x|, in a row left out below
    X = X.astype(dtype)
    Xs = sp.csr_matrix(X) if sparse else X
    rows = np.array([0, 5, 6, 7, 20, 41, 59])
    exact = np.abs(X[rows].astype(np.float64))
    w, c = rng.standard_normal(7), rng.standard_normal(rows.shape[0])
    eps = np.finfo(np.float64).eps
    np.testing.assert_allclose(abs_matvec(Xs, w, rows=rows, chunk_bytes=chunk_bytes), exact @ np.abs(w), rtol=7 * eps)
    np.testing.assert_allclose(abs_rmatvec(Xs, c, rows=rows, chunk_bytes=chunk_bytes), exact.T @ np.abs(c),
                               rtol=rows.shape[0] * eps)
    assert abs_max(Xs, rows, chunk_bytes=chunk_bytes) == exact.max() < 1e6
    assert abs_max(Xs, chunk_bytes=chunk_bytes) == 1e6
    assert abs_max(Xs, np.array([], dtype=np.int64)) == 0.0


def test_products_make_no_float64_copy_of_x():
    X32 = np.random.default_rng(1).standard_normal((40_000, 50), dtype=np.float32)  # 8 MB; a float64 copy: 16 MB
    w, v = np.ones(50), np.ones(40_000)
    tracemalloc.start()
    try:
        matvec(X32, w)
        rmatvec(X32, v)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X32.nbytes / 4  # one block of rows and the result, not a copy of X


# -- the pair-free solver ----------------------------------------------------------------------
def test_oracle_keeps_float32_x_without_a_copy():
    d32 = as_float32(make_ranking(n_queries=5, n_features=4, random_state=4))
    d64 = as_float64(d32)
    costs = cost_table(d32, mu="balanced")
    for cls in (PairFreeOracle, VariantOracle):
        o32, o64 = cls.from_data(d32, costs), cls.from_data(d64, costs)
        assert o32.X is d32.X and o32.X.dtype == np.float32
        w = np.random.default_rng(5).standard_normal(4)
        r32, r64 = o32(w), o64(w)
        assert r32.loss == pytest.approx(r64.loss, rel=1e-13) and np.array_equal(r32.counts, r64.counts)
        np.testing.assert_allclose(r32.gradient, r64.gradient, rtol=1e-12, atol=1e-12 * np.abs(r64.gradient).max())


def test_planes_on_float32_make_no_float64_copy_of_x():
    """Oracle set-up and cutting planes on a wide X: the peak stays far below a float64 copy (2x X here)."""
    d32 = make_ranking(n_queries=500, docs_per_query=10, n_features=400, random_state=6, dtype=np.float32)
    tracemalloc.start()
    try:
        run = cutting_plane(PairFreeOracle.from_data(d32), 1.0, max_iter=15, newton_gap=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # max_iter caps the oracle calls; fewer only when the gap was certified first
    assert 1 <= run.oracle_calls <= 15 and (run.oracle_calls == 15 or run.status == "optimal")
    assert run.objective > 0
    assert peak < 0.5 * d32.X.nbytes  # a float64 copy would be 2x X


@pytest.mark.parametrize("seed,density", [(0, 1.0), (1, 1.0), (2, 0.5)])
def test_pairfree_on_float32_agrees_with_clarabel_on_the_same_values(seed, density):
    """τ and μ; the Newton phase runs. Clarabel solves the float64 copy of the float32 values."""
    inst = Instance(seed, lam=[0.01, 0.1, 1.0][seed], density=density, n_features=5)
    d32 = as_float32(inst.data)
    ref = solve(build_primal(RankingProblem(as_float64(d32), tau=inst.tau, mu=inst.mu, lam=inst.lam)),
                "clarabel", tol=1e-9)
    res = solve(RankingProblem(d32, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-8)
    assert res.status == "optimal" and res.relative_gap <= 1e-8
    assert "delta" in res.history and res.history["delta"].notna().any()  # the Newton phase ran on float32 X
    assert_agree(res, ref)
    F_ref = 2 * inst.lam * ref.qp_objective
    assert res.lower_bound <= F_ref * (1 + 1e-10)  # the lower bound never exceeds the optimum


def test_cvxpy_route_on_float32_data_is_the_float64_problem():
    inst = Instance(3, lam=0.1)
    d32 = as_float32(inst.data)
    a = solve(RankingProblem(d32, tau=inst.tau, mu=inst.mu, lam=inst.lam), "clarabel", tol=1e-9)
    b = solve(RankingProblem(as_float64(d32), tau=inst.tau, mu=inst.mu, lam=inst.lam), "clarabel", tol=1e-9)
    assert_agree(a, b)


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)
