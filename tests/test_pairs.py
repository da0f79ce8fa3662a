"""Tests of cvxrank.pairs against brute-force enumeration."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet, make_pairs, preference_pairs


def brute_force_pairs(y, qid):
    """Every (better, worse) pair inside a query with a strictly higher grade, by loops."""
    out = set()
    for i, j in itertools.permutations(range(len(y)), 2):
        if qid[i] == qid[j] and y[i] > y[j]:
            out.add((i, j))
    return out


def random_data(seed, *, sparse=False, float_grades=False, string_qid=False):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(5, 40))
    n = int(rng.integers(1, 6))
    pool = rng.choice(np.arange(100), size=int(rng.integers(1, 6)), replace=False)
    qid = rng.choice(pool, size=m)  # shuffled, non-contiguous queries
    if string_qid:
        qid = np.array([f"q{q}" for q in qid])
    if float_grades:
        y = rng.choice([0.0, 0.5, 1.75, 3.2], size=m)
    else:
        y = rng.integers(0, 4, size=m)  # many ties
    X = rng.normal(size=(m, n))
    if sparse:
        X[rng.random(size=X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    return X, y, qid


CASES = [
    pytest.param(dict(seed=s, sparse=s % 3 == 0, float_grades=s % 2 == 1, string_qid=s % 4 == 2), id=f"seed{s}")
    for s in range(12)
]


def _pairs_or_none(X, y, qid):
    if not brute_force_pairs(y, qid):
        return None
    return make_pairs(RankingData(X, y, qid))


@pytest.mark.parametrize("case", CASES)
def test_make_pairs_matches_brute_force(case):
    X, y, qid = random_data(**case)
    expected = brute_force_pairs(y, qid)
    data = RankingData(X, y, qid)
    if not expected:
        with pytest.raises(ValidationError, match="no pairs"):
            make_pairs(data)
        return
    pairs = make_pairs(data)
    got = list(zip(pairs.better.tolist(), pairs.worse.tolist()))
    assert len(got) == len(set(got))  # no duplicate
    assert set(got) == expected
    assert pairs.n_pairs == len(expected) == len(pairs)
    ids = sorted(set(qid.tolist()))
    for k, (b, w) in enumerate(got):
        assert qid[b] == qid[w]
        assert y[b] > y[w]
        assert tuple(pairs.pair_type[k].tolist()) == (y[b], y[w])
        assert pairs.query[k] == ids.index(qid[b])
    assert pairs.types == sorted({(y[b], y[w]) for b, w in expected})
    expected_per_query = [sum(qid[b] == q for b, _ in expected) for q in ids]
    assert pairs.pairs_per_query.tolist() == expected_per_query


def test_make_pairs_docstring_example_order():
    data = RankingData(np.arange(10.0).reshape(5, 2), y=[0, 2, 1, 2, 1], qid=[1, 1, 1, 1, 1])
    pairs = make_pairs(data)
    # Ordered by query, then better grade descending and position.
    assert list(zip(pairs.better.tolist(), pairs.worse.tolist())) == [
        (1, 2), (1, 4), (1, 0), (3, 2), (3, 4), (3, 0), (2, 0), (4, 0)
    ]


@pytest.mark.parametrize("case", CASES[:6])
def test_incidence_matrix_and_linear_maps(case):
    X, y, qid = random_data(**case)
    pairs = _pairs_or_none(X, y, qid)
    if pairs is None:
        pytest.skip("instance without pairs")
    Xd = X.toarray() if sp.issparse(X) else X
    ell, m = pairs.n_pairs, Xd.shape[0]
    P = pairs.P
    assert P.shape == (ell, m)
    Pd = P.toarray()
    for k in range(ell):
        row = np.zeros(m)
        row[pairs.better[k]] = 1.0
        row[pairs.worse[k]] = -1.0
        np.testing.assert_array_equal(Pd[k], row)
    D_loop = np.array([Xd[b] - Xd[w] for b, w in zip(pairs.better, pairs.worse)])
    D = pairs.difference_matrix()
    assert sp.issparse(D) == sp.issparse(X)
    D = D.toarray() if sp.issparse(D) else D
    np.testing.assert_allclose(D, D_loop, atol=1e-12)
    PX = P @ X
    np.testing.assert_allclose(PX.toarray() if sp.issparse(PX) else PX, D_loop, atol=1e-12)
    rng = np.random.default_rng(1)
    w = rng.normal(size=Xd.shape[1])
    a = rng.normal(size=ell)
    np.testing.assert_allclose(pairs.margins(w), D_loop @ w, atol=1e-12)
    rm = pairs.rmatvec(a)
    assert rm.shape == (Xd.shape[1],)
    np.testing.assert_allclose(rm, D_loop.T @ a, atol=1e-12)
    idx = np.array([ell - 1, 0])
    np.testing.assert_allclose(pairs.difference_rows(idx), D_loop[idx], atol=1e-12)
    np.testing.assert_allclose(pairs.difference_norms, np.linalg.norm(D_loop, axis=1), atol=1e-12)


def test_difference_norms_chunked():
    # 400,000 features make the chunk 5 pairs long; 9 pairs need two chunks.
    rng = np.random.default_rng(3)
    n = 400_000
    X = sp.random(6, n, density=5e-5, format="csr", random_state=4)
    X = X + sp.csr_matrix((rng.normal(size=6), (np.arange(6), np.zeros(6, dtype=int))), shape=(6, n))
    data = RankingData(X, [0, 1, 2, 0, 1, 2], qid=[1, 1, 1, 1, 2, 2])
    pairs = make_pairs(data)
    assert pairs.n_pairs == 6
    Xd = X.toarray()
    expected = [np.linalg.norm(Xd[b] - Xd[w]) for b, w in zip(pairs.better, pairs.worse)]
    np.testing.assert_allclose(pairs.difference_norms, expected)


@pytest.fixture
def small():
    # qid 7: grades 2, 1, 1, 0 -> 1*2 + 1*1 + 2*1 = 5 pairs; qid 3: one grade -> 0;
    # qid 9: grades 1, 0 -> 1 pair.
    X = np.arange(14.0).reshape(7, 2)
    y = [2, 1, 3, 1, 0, 1, 0]
    qid = [7, 7, 3, 7, 7, 9, 9]
    return make_pairs(RankingData(X, y, qid))


def test_summary_hand_checked(small):
    s = small.summary
    assert s.index.tolist() == [3, 7, 9]
    assert s.index.name == "qid"
    assert s["n_documents"].tolist() == [1, 4, 2]
    assert s["n_grades"].tolist() == [1, 3, 2]
    assert s["n_pairs"].tolist() == [0, 5, 1]
    assert small.n_queries_without_pairs == 1
    assert "queries_without_pairs=1" in repr(small)
    assert "n_pairs=6" in repr(small)
    assert small.n_pairs == 6 and small.n_documents == 7 and small.n_features == 2


def test_repr_without_empty_queries():
    pairs = make_pairs(RankingData(np.eye(3), [0, 1, 2], qid=[1, 1, 1]))
    assert pairs.n_queries_without_pairs == 0
    assert "queries_without_pairs" not in repr(pairs)


def test_no_pair_at_all():
    data = RankingData(np.eye(4), [1, 1, 0, 0], qid=[1, 1, 2, 2])
    with pytest.raises(ValidationError, match="no pairs"):
        make_pairs(data)
    with pytest.raises(ValidationError, match="no pairs"):
        make_pairs(RankingData([[1.0, 2.0]], [3], qid=[1]))


def test_make_pairs_rejects_non_data():
    with pytest.raises(ValidationError, match="RankingData"):
        make_pairs(np.eye(3))


# -- preference pairs -------------------------------------------------------------


def test_preference_pairs_from_matrix():
    X = np.arange(8.0).reshape(4, 2)
    pairs = preference_pairs(X, better=[0, 3, 2], worse=[1, 1, 0])
    assert isinstance(pairs, PairSet) and pairs.source == "preferences"
    assert pairs.better.tolist() == [0, 3, 2] and pairs.worse.tolist() == [1, 1, 0]
    assert pairs.query.tolist() == [0, 0, 0]
    assert pairs.types == [(1, 0)]
    assert pairs.pair_type.tolist() == [[1, 0]] * 3
    np.testing.assert_array_equal(pairs.difference_matrix(), X[[0, 3, 2]] - X[[1, 1, 0]])


def test_preference_pairs_from_matrix_with_qid_and_float_indices():
    X = np.eye(4)
    pairs = preference_pairs(X, better=[1.0, 3.0], worse=[0.0, 2.0], qid=["b", "b", "a", "a"])
    assert pairs.better.dtype == np.int64
    assert pairs.query.tolist() == [1, 0]
    assert pairs.pairs_per_query.tolist() == [1, 1]


def test_preference_pairs_from_ranking_data():
    data = RankingData(np.eye(5), [0, 0, 3, 1, 2], qid=[4, 4, 4, 8, 8])
    pairs = preference_pairs(data, better=[0, 4], worse=[2, 3])
    assert pairs.data is data
    assert pairs.query.tolist() == [0, 1]
    # The type is (1, 0) whatever the grades (here 0 over 3).
    assert pairs.types == [(1, 0)]
    np.testing.assert_allclose(pairs.margins(np.arange(5.0)), [0 - 2, 4 - 3])


@pytest.mark.parametrize(
    "better, worse, pattern",
    [
        ([0, 4], [1, 1], r"better\[1\] = 4 is not a document index \(0\.\.3\)"),
        ([0, 1], [-1, 2], r"worse\[0\] = -1 is not a document index"),
        ([0.5, 1], [1, 2], "better must hold integer"),
        ([0, 1], ["a", "b"], "worse must hold integer"),
        ([0, 1], [True, False], "worse must hold integer"),
        ([0, 2], [1, 2], "pair 1 prefers document 2 to itself"),
        ([0, 2], [1], "better has 2 entries but worse has 1"),
        ([], [], "no pairs"),
        ([[0]], [[1]], "better must be 1-dimensional"),
    ],
)
def test_preference_pairs_errors(better, worse, pattern):
    with pytest.raises(ValidationError, match=pattern):
        preference_pairs(np.eye(4), better=better, worse=worse)


def test_preference_pairs_across_queries():
    data = RankingData(np.eye(4), [0, 0, 0, 0], qid=["x", "x", "y", "y"])
    with pytest.raises(ValidationError, match=r"pair 1 joins documents of two queries \('x' and 'y'\)"):
        preference_pairs(data, better=[0, 1], worse=[1, 2])
