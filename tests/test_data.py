"""Tests of cvxrank.data: RankingData, from_frame and load_letor."""


import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from cvxrank.data import RankingData, load_letor
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import make_pairs

from tests.conftest import LIGHTGBM_DIR as DATA_DIR


# -- RankingData from arrays ---------------------------------------------------


def test_validation_error_is_value_error():
    assert issubclass(ValidationError, ValueError)


def test_dense_input_values_and_dtypes():
    X = [[1, 2], [3, 4], [5, 6]]
    data = RankingData(X, [2.0, 0.0, 1.0], qid=[5, 5, 5])
    assert isinstance(data.X, np.ndarray) and data.X.dtype == np.float64
    np.testing.assert_array_equal(data.X, np.array(X, dtype=float))
    assert data.y.dtype == np.int64  # integral floats become int64
    assert data.y.tolist() == [2, 0, 1]
    assert not data.is_sparse
    assert repr(data) == "RankingData(n_documents=3, n_features=2, n_queries=1, grades=[0, 1, 2])"


def test_float_grades_are_kept():
    data = RankingData(np.eye(3), [0.5, 1.0, 2.25], qid=[1, 1, 1])
    assert data.y.dtype == np.float64
    assert data.y.tolist() == [0.5, 1.0, 2.25]
    assert data.grades.tolist() == [0.5, 1.0, 2.25]


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_input_stays_csr(fmt):
    dense = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, -3.0], [0.0, 0.0, 0.0]])
    X = getattr(sp, f"{fmt}_matrix")(dense)
    data = RankingData(X, [1, 0, 2, 1], qid=[1, 1, 2, 2])
    assert data.is_sparse
    assert sp.isspmatrix_csr(data.X)
    assert data.X.dtype == np.float64
    np.testing.assert_array_equal(data.X.toarray(), dense)
    assert data.n_features == 3 and data.n_documents == 4


def test_string_and_noncontiguous_qids():
    qid = ["b", "a", "b", "c", "a", "b"]
    data = RankingData(np.arange(12.0).reshape(6, 2), [0, 1, 2, 0, 0, 1], qid=qid)
    assert data.query_ids.tolist() == ["a", "b", "c"]
    expected = [sorted(set(qid)).index(q) for q in qid]
    assert data.query_index.tolist() == expected
    assert data.query_index.dtype == np.int64
    assert data.n_queries == 3 and data.n_documents == 6 and data.n_features == 2


def test_integer_noncontiguous_qids_and_properties():
    rng = np.random.default_rng(0)
    qid = rng.choice([40, 3, 17, 9], size=25)
    y = rng.integers(0, 4, size=25)
    data = RankingData(rng.normal(size=(25, 7)), y, qid)
    ids = sorted(set(qid.tolist()))
    assert data.query_ids.tolist() == ids
    for i in range(25):
        assert data.query_ids[data.query_index[i]] == qid[i]
    assert data.n_queries == len(ids)
    assert data.n_features == 7
    assert data.grades.tolist() == sorted(set(y.tolist()))


def test_float_integral_qids_become_int():
    data = RankingData(np.eye(2), [0, 1], qid=[3.0, 3.0])
    assert data.qid.dtype == np.int64


def test_subset_indices_and_mask():
    X = np.arange(10.0).reshape(5, 2)
    data = RankingData(X, [0, 1, 2, 0, 1], qid=[1, 1, 2, 2, 3])
    sub = data.subset([4, 0])
    np.testing.assert_array_equal(sub.X, X[[4, 0]])
    assert sub.y.tolist() == [1, 0] and sub.qid.tolist() == [3, 1]
    assert sub.query_ids.tolist() == [1, 3]
    mask = np.array([False, True, True, False, False])
    sub = data.subset(mask)
    np.testing.assert_array_equal(sub.X, X[1:3])
    assert sub.qid.tolist() == [1, 2]


def test_subset_sparse():
    X = sp.csr_matrix(np.arange(10.0).reshape(5, 2))
    data = RankingData(X, [0, 1, 2, 0, 1], qid=[1, 1, 2, 2, 3])
    sub = data.subset([3, 1])
    assert sub.is_sparse
    np.testing.assert_array_equal(sub.X.toarray(), X.toarray()[[3, 1]])


def test_select_queries_keeps_order():
    X = np.arange(12.0).reshape(6, 2)
    data = RankingData(X, [0, 1, 2, 0, 1, 2], qid=["x", "y", "x", "z", "y", "z"])
    sel = data.select_queries(["z", "x"])
    assert sel.qid.tolist() == ["x", "x", "z", "z"]  # original order, not the order asked
    np.testing.assert_array_equal(sel.X, X[[0, 2, 3, 5]])
    assert sel.y.tolist() == [0, 2, 0, 2]
    with pytest.raises(ValidationError, match="not in the data"):
        data.select_queries(["x", "w"])


# -- bad arrays ------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_feature_dense(bad):
    X = np.ones((3, 2))
    X[2, 1] = bad
    with pytest.raises(ValidationError, match=r"NaN or infinite.*document 2, feature 1"):
        RankingData(X, [0, 1, 2], qid=[1, 1, 1])


def test_non_finite_feature_sparse():
    X = sp.csr_matrix(np.array([[0.0, 1.0], [np.nan, 0.0]]))
    with pytest.raises(ValidationError, match=r"NaN or infinite.*document 1, feature 0"):
        RankingData(X, [0, 1], qid=[1, 1])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_grade(bad):
    with pytest.raises(ValidationError, match=r"y has a NaN or infinite grade.*document 1"):
        RankingData(np.eye(3), [0.0, bad, 1.0], qid=[1, 1, 1])


def test_non_finite_qid():
    with pytest.raises(ValidationError, match="qid has a NaN"):
        RankingData(np.eye(2), [0, 1], qid=[1.0, np.nan])


def test_mismatched_y_length():
    with pytest.raises(ValidationError, match="y has 2 grades but X has 3 documents"):
        RankingData(np.eye(3), [0, 1], qid=[1, 1, 1])


def test_mismatched_qid_length():
    with pytest.raises(ValidationError, match="qid has 4 entries but X has 3 documents"):
        RankingData(np.eye(3), [0, 1, 2], qid=[1, 1, 1, 1])


def test_empty_X():
    with pytest.raises(ValidationError, match="no documents"):
        RankingData(np.empty((0, 3)), [], qid=[])
    with pytest.raises(ValidationError, match="2-dimensional"):
        RankingData([], [], qid=[])
    with pytest.raises(ValidationError, match="no features"):
        RankingData(np.empty((2, 0)), [0, 1], qid=[1, 1])


def test_two_dimensional_y():
    with pytest.raises(ValidationError, match="y .*1-dimensional"):
        RankingData(np.eye(3), [[0], [1], [2]], qid=[1, 1, 1])


def test_two_dimensional_qid_and_one_dimensional_X():
    with pytest.raises(ValidationError, match="qid must be 1-dimensional"):
        RankingData(np.eye(2), [0, 1], qid=[[1], [1]])
    with pytest.raises(ValidationError, match="X must be 2-dimensional"):
        RankingData([1.0, 2.0], [0, 1], qid=[1, 1])


def test_non_numeric_X_and_y():
    with pytest.raises(ValidationError, match="X must be numeric"):
        RankingData([["a", "b"]], [0], qid=[1])
    with pytest.raises(ValidationError, match="y .*numeric"):
        RankingData(np.eye(2), ["high", "low"], qid=[1, 1])


def test_none_qid():
    with pytest.raises(ValidationError, match="None"):
        RankingData(np.eye(2), [0, 1], qid=np.array(["a", None], dtype=object))


# -- from_frame -------------------------------------------------------------


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "f1": [0.5, 0.1, 0.3, 0.9],
            "q": [7, 7, 2, 2],
            "rel": [1, 0, 0, 2],
            "f2": [1.0, 0.0, 0.2, 0.4],
            "f3": [3, 4, 5, 6],
        }
    )


def test_from_frame_default_features(frame):
    data = RankingData.from_frame(frame, label="rel", qid="q")
    np.testing.assert_array_equal(data.X, frame[["f1", "f2", "f3"]].to_numpy(float))
    assert data.y.tolist() == [1, 0, 0, 2]
    assert data.qid.tolist() == [7, 7, 2, 2]
    assert data.query_ids.tolist() == [2, 7]


def test_from_frame_explicit_features(frame):
    data = RankingData.from_frame(frame, label="rel", qid="q", features=["f3", "f1"])
    np.testing.assert_array_equal(data.X, np.column_stack([[3, 4, 5, 6], [0.5, 0.1, 0.3, 0.9]]))


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(label="grade", qid="q"), "label column 'grade'"),
        (dict(label="rel", qid="query"), "qid column 'query'"),
        (dict(label="rel", qid="q", features=["f1", "nope"]), r"feature columns not in the DataFrame: \['nope'\]"),
    ],
)
def test_from_frame_missing_columns(frame, kwargs, pattern):
    with pytest.raises(ValidationError, match=pattern):
        RankingData.from_frame(frame, **kwargs)


def test_from_frame_non_numeric_feature(frame):
    frame["f4"] = ["a", "b", "c", "d"]
    with pytest.raises(ValidationError, match=r"numeric.*\['f4'\]"):
        RankingData.from_frame(frame, label="rel", qid="q")


def test_from_frame_no_features():
    df = pd.DataFrame({"q": [1, 1], "rel": [0, 1]})
    with pytest.raises(ValidationError, match="no feature columns"):
        RankingData.from_frame(df, label="rel", qid="q")


# -- load_letor ---------------------------------------------------------------


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = """\
2 qid:10 1:0.5 3:1.25 # doc A
0 qid:10 2:-1 4:7 #doc B
1 qid:3 1:2 2:3 3:4 4:5
# a comment-only line

3 qid:3 4:0.125
"""


def test_load_letor_correct_file(tmp_path):
    data = load_letor(_write(tmp_path, "good.txt", GOOD), dense=True)
    expected = np.zeros((4, 4))
    expected[0, [0, 2]] = [0.5, 1.25]  # 1-based indices 1 and 3
    expected[1, [1, 3]] = [-1, 7]
    expected[2] = [2, 3, 4, 5]
    expected[3, 3] = 0.125
    assert isinstance(data.X, np.ndarray)
    np.testing.assert_array_equal(data.X, expected)
    assert data.y.tolist() == [2, 0, 1, 3] and data.y.dtype == np.int64
    assert data.qid.tolist() == [10, 10, 3, 3]
    assert data.query_ids.tolist() == [3, 10]


def test_load_letor_dense_and_sparse_choice(tmp_path):
    path = _write(tmp_path, "good.txt", GOOD)
    sparse = load_letor(path, dense=False)
    assert sparse.is_sparse and sp.isspmatrix_csr(sparse.X)
    dense = load_letor(str(path), dense=True)
    np.testing.assert_array_equal(sparse.X.toarray(), dense.X)
    # 9 non-zeros of 16 entries: at least half, so the default is dense.
    assert not load_letor(path).is_sparse
    # 2 non-zeros of 2 x 10 entries: sparse by default.
    assert load_letor(_write(tmp_path, "thin.txt", "1 qid:1 10:1\n0 qid:1 1:1\n")).is_sparse


def test_load_letor_two_files_share_n_features(tmp_path):
    a = _write(tmp_path, "a.txt", "1 qid:1 1:1 2:2\n0 qid:1 2:3\n")
    b = _write(tmp_path, "b.txt", "1 qid:5 5:1\n0 qid:5 1:4\n")
    da, db = load_letor([a, b], dense=True)
    assert da.n_features == db.n_features == 5
    np.testing.assert_array_equal(da.X, [[1, 2, 0, 0, 0], [0, 3, 0, 0, 0]])
    np.testing.assert_array_equal(db.X, [[0, 0, 0, 0, 1], [4, 0, 0, 0, 0]])
    assert db.qid.tolist() == [5, 5]


def test_load_letor_n_features_larger(tmp_path):
    data = load_letor(_write(tmp_path, "a.txt", "1 qid:1 1:1 2:2\n0 qid:1 2:3\n"), n_features=6, dense=True)
    assert data.n_features == 6
    np.testing.assert_array_equal(data.X[:, 2:], 0)
    np.testing.assert_array_equal(data.X[:, :2], [[1, 2], [0, 3]])


def test_load_letor_float_grades(tmp_path):
    data = load_letor(_write(tmp_path, "a.txt", "0.5 qid:1 1:1\n1.5 qid:1 1:2\n"))
    assert data.y.dtype == np.float64 and data.y.tolist() == [0.5, 1.5]


def test_load_letor_missing_file(tmp_path):
    path = tmp_path / "absent.txt"
    with pytest.raises(ValidationError, match=r"absent\.txt: no such file"):
        load_letor(path)


def test_load_letor_empty_file(tmp_path):
    with pytest.raises(ValidationError, match=r"empty\.txt: the file is empty"):
        load_letor(_write(tmp_path, "empty.txt", ""))


def test_load_letor_comments_only(tmp_path):
    with pytest.raises(ValidationError, match=r"c\.txt: the file holds no document"):
        load_letor(_write(tmp_path, "c.txt", "# nothing\n\n"))


@pytest.mark.parametrize(
    "text, line, pattern",
    [
        ("1 qid:1 1:0.5\n0 2:0.3\n", 2, "no 'qid:' field"),
        ("1 1:0.5\n0 qid:1 2:0.3\n", 1, "no 'qid:' field"),
        ("1 qid:1 1:0.5\n1 qid:1 1:0.5\nx qid:1 2:0.3\n", 3, "the grade 'x' is not a number"),
        ("1 qid:1 1:0.5\n0 qid:1 3:abc\n", 2, "'3:abc' is not 'index:value'"),
        ("1 qid:1 1:0.5\n0 qid:1 abc\n", 2, "'abc' is not 'index:value'"),
        ("1 qid:1 1:0.5\n0 qid:a 1:1\n", 2, "qid 'a' is not an integer"),
        ("1 qid:1 1:0.5\n0 qid:1.5 1:1\n", 2, "qid '1.5' is not an integer"),
        ("1 qid:1 1:0.5\n# comment\n0 qid:1 0:1\n", 3, "feature index 0 < 1"),
    ],
    ids=["no-qid", "no-qid-first", "grade", "value", "token", "qid-str", "qid-float", "index-0"],
)
def test_load_letor_malformed_names_file_and_line(tmp_path, text, line, pattern):
    path = _write(tmp_path, "bad.txt", text)
    with pytest.raises(ValidationError, match=rf"bad\.txt, line {line}: {pattern}"):
        load_letor(path)


def test_load_letor_malformed_second_file(tmp_path):
    a = _write(tmp_path, "a.txt", GOOD)
    b = _write(tmp_path, "b.txt", "1 qid:1 1:0.5\n0 qid:1 2:x\n")
    with pytest.raises(ValidationError, match=r"b\.txt, line 2"):
        load_letor([a, b])


def test_load_letor_n_features_too_small(tmp_path):
    path = _write(tmp_path, "a.txt", "1 qid:1 1:1 3:2\n0 qid:1 2:3\n")
    with pytest.raises(ValidationError, match=r"a\.txt.*n_features.*2.*3 features"):
        load_letor(path, n_features=2)


@pytest.mark.parametrize("n_features", [0, -1, 2.5, "3"])
def test_load_letor_bad_n_features(tmp_path, n_features):
    path = _write(tmp_path, "a.txt", "1 qid:1 1:1\n")
    with pytest.raises(ValidationError, match="n_features must be a positive integer"):
        load_letor(path, n_features=n_features)


def test_load_letor_no_path():
    with pytest.raises(ValidationError, match="no file given"):
        load_letor([])


def test_load_letor_non_finite_value(tmp_path):
    path = _write(tmp_path, "a.txt", "1 qid:1 1:nan\n0 qid:1 1:1\n")
    with pytest.raises(ValidationError, match=r"a\.txt: .*NaN or infinite"):
        load_letor(path)


# -- real data ------------------------------------------------------------------


def test_lightgbm_rank_train():
    path = DATA_DIR / "train.letor"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    data = load_letor(path, n_features=300)
    assert data.n_documents == 3005
    assert data.n_features == 300
    assert data.n_queries == 201
    assert data.grades.tolist() == [0, 1, 2, 3, 4]
    assert make_pairs(data).n_pairs == 13543
