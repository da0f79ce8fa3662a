"""The oracles' products with X (cvxrank.native.products): scipy's sums bit for bit, compiled where they can be."""

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.native import PairFreeOracle, cost_table
from cvxrank.native.kernels import COMPILED, sweep
from cvxrank.native.products import products
from cvxrank.preference_groups import PreferenceGroups
from tests.conftest import sparse_wide

compiled = pytest.mark.skipif(not COMPILED, reason="the compiled sweeps were not built")


def _awkward(seed):
    """A CSR matrix with empty rows, an empty column, duplicate entries and unsorted indices in its rows, values
    over 16 orders of magnitude."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 12, 30)
    counts[7] = 0
    indices = rng.choice(np.array([c for c in range(25) if c != 3], dtype=np.int32), int(counts.sum()))
    data = rng.standard_normal(indices.shape[0]) * 10.0 ** rng.integers(-8, 8, indices.shape[0])
    X = sp.csr_matrix((data, indices, np.concatenate(([0], np.cumsum(counts)))), shape=(30, 25))
    assert not X.has_sorted_indices and X.indices.dtype == np.int32
    return X


@compiled
@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_products_are_scipys_bit_for_bit(share, seed):
    """``X w`` and ``Xᵀ v`` equal scipy's exactly (same sums, same order), with a share of ``v``'s entries 0 (those
    rows are not read), on data of the solver's tests and on a matrix with empty rows and columns, duplicates and
    unsorted indices."""
    rng = np.random.default_rng(seed)
    for X in (sp.csr_matrix(sparse_wide(seed).X), _awkward(seed)):
        p = products(X, True)
        assert p.compiled
        w = rng.standard_normal(X.shape[1]) * 10.0 ** rng.integers(-5, 5, X.shape[1])
        v = rng.standard_normal(X.shape[0])
        v[rng.random(X.shape[0]) < share] = 0.0
        assert np.array_equal(p.matvec(w), X @ w)
        assert np.array_equal(p.rmatvec(v), X.T @ v)
        single = X.astype(np.float32)  # float32 values: the products of their exact float64 upcast
        p32, upcast = products(single, True), single.astype(np.float64)
        assert p32.compiled and not np.array_equal(upcast.data, X.data)
        assert np.array_equal(p32.matvec(w), upcast @ w)
        assert np.array_equal(p32.rmatvec(v), upcast.T @ v)
        read = sweep().rmatvec_rows(np.asarray(X.indptr, dtype=np.int64), X.indices, X.data, v,
                                    np.empty(X.shape[1]))
        assert read == np.count_nonzero(v)


@compiled
def test_products_of_other_matrices_are_the_float64_functions():
    """int64 indices, a view with strided values, a dense array (float64 or float32) or ``compiled=False``: not
    the compiled passes, and the same results as :mod:`cvxrank._float64`."""
    from cvxrank._float64 import matvec, rmatvec

    X = sp.csr_matrix(sparse_wide(2).X)
    rng = np.random.default_rng(3)
    w, v = rng.standard_normal(X.shape[1]), rng.standard_normal(X.shape[0])
    wide = X.copy()
    wide.indices, wide.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)  # (scipy would narrow them)
    strided = sp.csr_matrix((np.repeat(X.data, 2)[::2], X.indices, X.indptr), shape=X.shape)
    others = {"int64 indices": (wide, True), "dense": (X.toarray(), True),
              "dense float32": (X.toarray().astype(np.float32), True), "no compiled sweeps": (X, False)}
    if not strided.data.flags.c_contiguous:  # (scipy may copy it)
        others["strided"] = (strided, True)
    for name, (M, allowed) in others.items():
        p = products(M, allowed)
        assert not p.compiled, name
        assert np.array_equal(p.matvec(w), matvec(M, w)), name
        assert np.array_equal(p.rmatvec(v), rmatvec(M, v)), name


@compiled
def test_the_oracles_use_the_compiled_products():
    """The pair-free oracle and the preference groups' oracle take the compiled products for a float64 CSR ``X``
    (and their sums are scipy's); ``kernel="numpy"`` takes scipy's."""
    from cvxrank.native.document_oracle import DocumentOracle

    data = sparse_wide(4)
    rng = np.random.default_rng(5)
    for kernel, fast in (("auto", True), ("numpy", False)):
        oracle = PairFreeOracle.from_data(data, cost_table(data), kernel=kernel)
        qid = np.asarray(data.qid)
        log = PreferenceGroups(data, group=np.unique(qid, return_inverse=True)[1], document=np.arange(qid.shape[0]),
                               weight=(np.asarray(data.y) > 0).astype(np.float64))  # a group per query
        groups = DocumentOracle.from_groups(log, kernel=kernel)
        for o in (oracle, groups):
            assert o._products.compiled is fast
            w, v = rng.standard_normal(o.n_features), rng.standard_normal(o.n_documents)
            assert np.array_equal(o.scores(w), o.X @ w) and np.array_equal(o.gradient(v), o.X.T @ v)


@compiled
def test_the_compiled_products_refuse_inconsistent_arrays():
    """Arrays that do not make a CSR matrix (internal use only) give an internal error, not a wrong number or a
    crash."""
    indptr, data = np.array([0, 1, 2], dtype=np.int64), np.ones(2)
    with pytest.raises(ValueError, match="internal error: a column index"):
        sweep().matvec(indptr, np.array([0, 3], dtype=np.int32), data, np.ones(3), np.empty(2))
    with pytest.raises(ValueError, match="internal error: indptr"):
        sweep().matvec(np.array([0, 2, 1], dtype=np.int64), np.array([0, 1], dtype=np.int32), data, np.ones(3),
                       np.empty(2))
    with pytest.raises(ValueError, match="internal error: the values must be"):
        sweep().matvec(indptr, np.array([0, 1], dtype=np.int32), np.ones(2, dtype=np.int64), np.ones(3), np.empty(2))
    with pytest.raises(ValueError, match="internal error: the values must be"):
        sweep().rmatvec_rows(indptr, np.array([0, 1], dtype=np.int32), np.ones(1), np.ones(2), np.empty(3))
    with pytest.raises(ValueError, match="internal error: array out"):
        sweep().matvec(indptr, np.array([0, 1], dtype=np.int32), data, np.ones(3), np.empty(1))
    p = products(sp.csr_matrix(np.eye(3)), True)
    with pytest.raises(ValueError, match="internal error: w has 2 entries"):
        p.matvec(np.ones(2))
    with pytest.raises(ValueError, match="internal error: v has 4 entries"):
        p.rmatvec(np.ones(4))


@compiled
def test_the_floor_pass_times_the_oracles_products(monkeypatch):
    """``cvxrank bench native``'s floor pass runs the products the oracle runs, not other ones."""
    from cvxrank.bench.native import _floor_pass
    from cvxrank.native import products as module

    seen = []
    original = module.Products.matvec

    def counted(self, w):
        seen.append(self.compiled)
        return original(self, w)

    monkeypatch.setattr(module.Products, "matvec", counted)
    _floor_pass(sp.csr_matrix(sparse_wide(0).X), repeat=2)
    assert seen == [True] * 3
