"""Property-based fuzzing of every input surface: hostile input ends in a clear error or a correct result.

Surfaces: the LETOR/SVMlight reader (:func:`cvxrank.load_letor`), arrays and
pandas input (:class:`cvxrank.RankingData`, ``RankingData.from_frame``),
explicit preference pairs (:func:`cvxrank.preference_pairs`) and the JSON
model loader (:func:`cvxrank.estimators.load_model`). Each property compares
with an independent oracle written here: when the oracle says the input is
valid, the result must equal what the oracle read; when it says invalid, the
error must be a :class:`~cvxrank.exceptions.CvxrankError` with a one-line
message. Any other exception type fails the test.

CI runs ``CVXRANK_FUZZ_EXAMPLES`` generated cases per property (default 100, derandomised).
The long run (docs/reliability.md)::

    CVXRANK_FUZZ_EXAMPLES=5000 python -m pytest tests/test_fuzz_inputs.py tests/test_cli_hostile.py -q
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import sys
import tempfile

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cvxrank.data import RankingData, load_letor
from cvxrank.datasets import make_ranking
from cvxrank.estimators import ESTIMATORS, ListMLE, RankSVMIR, load_model
from cvxrank.estimators.persistence import model_to_dict
from cvxrank.exceptions import CvxrankError, ValidationError
from cvxrank.pairs import preference_pairs

#: Generated cases per property; raise it for a long fuzz run. Without the variable (CI) the
#: examples are derandomised, so CI runs the same cases every time; with it, every run explores anew.
EXAMPLES = int(os.environ.get("CVXRANK_FUZZ_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize="CVXRANK_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.filter_too_much, HealthCheck.data_too_large])


@pytest.fixture(autouse=True)
def _small_memory_budget(monkeypatch):
    """A 256 MiB budget: a generated huge feature index must be refused, never densified."""
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", "256MiB")


def _one_line_error(exc: BaseException) -> None:
    assert isinstance(exc, CvxrankError), f"{type(exc).__name__}: {exc}"
    message = str(exc)
    assert message.strip(), "empty error message"
    assert "\n" not in message, f"multi-line message: {message!r}"
    assert "Traceback" not in message


# ---------------------------------------------------------------------------------------------
# LETOR / SVMlight files
# ---------------------------------------------------------------------------------------------
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_INTEGER = re.compile(rb"[+-]?\d+")


def letor_oracle(content: bytes, n_features=None):
    """Read a LETOR file the way the format is specified; ``None`` when it is not valid LETOR.

    Returns ``(X dense, y, qid)``. Valid: every non-blank line (``#`` starts a
    comment) is ``grade qid:int index:value ...`` with finite numbers in C
    syntax, 1 <= index < 2**31 strictly increasing, qid in int64; at least one
    document. Without any feature index, X has one all-zero column.
    """
    rows, ys, qids = [], [], []
    for raw in content.split(b"\n"):
        line = raw.split(b"#", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        if not _NUMBER.fullmatch(tokens[0]) or not math.isfinite(float(tokens[0])):
            return None
        if len(tokens) < 2 or not tokens[1].startswith(b"qid:") or not _INTEGER.fullmatch(tokens[1][4:]):
            return None
        if len(tokens[1][4:].lstrip(b"+-").lstrip(b"0")) > 19 or not -(2**63) <= int(tokens[1][4:]) < 2**63:
            return None
        feats, last = {}, 0
        for tok in tokens[2:]:
            key, sep, value = tok.partition(b":")
            if not (sep and _INTEGER.fullmatch(key) and _NUMBER.fullmatch(value)):
                return None
            if len(key.lstrip(b"+-").lstrip(b"0")) > 10:
                return None
            index = int(key)
            if not last < index <= 2**31 - 1 or not math.isfinite(float(value)):
                return None
            feats[index], last = float(value), index
        rows.append(feats)
        ys.append(float(tokens[0]))
        qids.append(int(tokens[1][4:]))
    width = max((max(f) for f in rows if f), default=1)  # no feature at all: one all-zero feature
    if n_features is not None:
        if width > n_features:
            return None
        width = n_features
    if not rows:
        return None
    if width > 10_000:
        return rows, np.array(ys), np.array(qids), width  # too wide to densify here: compared sparsely
    X = np.zeros((len(rows), width))
    for i, feats in enumerate(rows):
        for j, v in feats.items():
            X[i, j - 1] = v
    return X, np.array(ys), np.array(qids), width


def _number_text():
    return st.one_of(
        st.integers(-3, 3).map(str),
        st.floats(allow_nan=True, allow_infinity=True, width=64).map(repr),
        st.floats(-1e3, 1e3).map(lambda v: f"{v:.3g}"),
        st.sampled_from(["1e400", "-1e400", "nan", "NaN", "inf", "-Infinity", "1_000", "0x10", "", "abc", "１",
                         "1e20", "99999999999999999999", "+1", ".5", "5.", "1.2.3", "\u22121", "1e-400", "4.9e-324",
                         "1" * 400, "0" * 30 + "1", "+-1", "1e", "e5", "١"]),
        st.text(max_size=4),
    )


def _index_text():
    return st.one_of(
        st.integers(1, 6).map(str),
        st.sampled_from(["0", "-1", "2147483647", "2147483648", "99999999999999999999", "1.0", "+2", "a", "",
                         "0003", "1" * 5000, "-" + "1" * 30, "0" * 40 + "2"]),
    )


def _qid_text():
    return st.one_of(
        st.integers(-2, 4).map(str),
        st.sampled_from(["1.5", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
                         "99999999999999999999", "", "x", "1_0", "+3", "1" * 5000, "0" * 25 + "7"]),
    )


def _extreme_valid_number():
    return st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr),
                     st.sampled_from(["0", "1e-320", "-0.0", "1e300", "+.5", "5.", "1E-3", "0003"]))


@st.composite
def letor_files(draw, mutate=True):
    """Raw bytes of a LETOR-like file: valid lines with hostile mutations.

    ``mutate=False``: syntactically valid files with extreme values (huge or
    tiny numbers, enormous grades, ties, a query with a single grade).
    """
    lines = []
    for _ in range(draw(st.integers(0 if mutate else 2, 6 if mutate else 10))):
        if mutate:
            grade = draw(st.one_of(st.integers(0, 3).map(str), _number_text()))
            qid = draw(st.one_of(st.integers(1, 3).map(str), _qid_text()))
            value = st.one_of(st.floats(-10, 10).map(repr), _number_text())
        else:
            grade = draw(st.one_of(st.integers(0, 2).map(str), st.sampled_from(["1024", "1e20", "-3", "0.5"])))
            qid = draw(st.integers(1, 2).map(str))
            value = st.one_of(st.floats(-10, 10).map(repr), _extreme_valid_number())
        n = draw(st.integers(0, 4))
        indices = sorted(draw(st.sets(st.integers(1, 6), min_size=n, max_size=n)))
        feats = [f"{i}:{draw(value)}" for i in indices]
        mutation = "none" if not mutate else draw(st.sampled_from(
            ["none"] * 6 + ["bad_index", "swap", "duplicate", "drop_qid", "qid_last", "two_qid", "truncate",
                            "unicode", "comment", "tabs", "empty"]))
        if mutation == "bad_index":
            feats.append(f"{draw(_index_text())}:{draw(_number_text())}")
        elif mutation == "swap" and len(feats) >= 2:
            feats[0], feats[1] = feats[1], feats[0]
        elif mutation == "duplicate" and feats:
            feats.append(feats[-1])
        head = [grade, f"qid:{qid}"]
        if mutation == "drop_qid":
            head = [grade]
        elif mutation == "qid_last":
            head, feats = [grade], feats + [f"qid:{qid}"]
        elif mutation == "two_qid":
            head = head + [f"qid:{qid}"]
        line = " ".join(head + feats)
        if mutation == "truncate":
            line = line[: draw(st.integers(0, len(line)))]
        elif mutation == "unicode":
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(st.text(min_size=1, max_size=3)) + line[at:]
        elif mutation == "comment":
            line += " # " + draw(st.text(max_size=10)).replace("\n", " ").replace("\r", " ")
        elif mutation == "tabs":
            line = line.replace(" ", "\t")
        elif mutation == "empty":
            line = ""
        lines.append(line)
    ending = draw(st.sampled_from(["\n", "\r\n", "\n", "\r"] if mutate else ["\n", "\r\n"]))
    text = ending.join(lines) + draw(st.sampled_from(["", ending]))
    data = text.encode("utf-8", errors="surrogatepass")
    if mutate and draw(st.booleans()) and draw(st.booleans()):
        data = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\x00", b"#!\xff\n"])) + data
    return data


def _check_against_oracle(path, content, n_features=None):
    expected = letor_oracle(content, n_features)
    try:
        data = load_letor(path, n_features=n_features)
    except Exception as exc:  # noqa: BLE001 - any other type is the failure this test looks for
        _one_line_error(exc)
        assert expected is None, f"valid file refused: {exc}\n{content!r}"
        return None
    assert expected is not None, f"invalid file accepted:\n{content!r}"
    X, y, qid, width = expected
    assert data.n_features == width and data.n_documents == len(y)
    if isinstance(X, list):  # very wide: compare the non-zeros
        got = sp.csr_matrix(data.X)
        for i, feats in enumerate(X):
            row = got.getrow(i)
            assert dict(zip((row.indices + 1).tolist(), row.data.tolist())) == {k: v for k, v in feats.items() if v}
    else:
        Xd = data.X.toarray() if sp.issparse(data.X) else data.X
        np.testing.assert_array_equal(Xd, X)
    np.testing.assert_array_equal(np.asarray(data.y, dtype=float), y)
    np.testing.assert_array_equal(data.qid, qid)
    return data


@FUZZ
@given(content=st.one_of(letor_files(), letor_files(mutate=False)), extra=st.one_of(st.none(), st.integers(-1, 3)))
def test_letor_reader_fuzz(content, extra):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f.letor")
        with open(path, "wb") as fh:
            fh.write(content)
        width = None
        if extra is not None:  # an explicit n_features near the file's own width
            wide = letor_oracle(content)
            width = max(1, (wide[3] if wide is not None else 3) + extra)
        _check_against_oracle(path, content, width)


@pytest.mark.parametrize("content, message", [
    (b"", "empty"),
    (b"# only a comment\n\n", "no document"),
    (b"1 qid:1 2:1 1:3\n", "line 1: feature index 1 after 2"),
    (b"1 qid:1 1:1 1:3\n", "line 1: feature index 1 after 1"),
    (b"1 qid:1 1:2\n0 qid:1 2147483648:1\n", "line 2: feature index '2147483648' is too large"),
    (b"1 qid:99999999999999999999 1:2\n", "line 1: qid '99999999999999999999' is out of the 64-bit"),
    (b"1 qid:" + b"1" * 5000 + b" 1:2\n", "is out of the 64-bit integer range"),
    (b"1 qid:1 1:1_000\n0 qid:1 1:1\n", "line 1: '1:1_000' is not 'index:value'"),
    (b"0 qidx:1 1:3\n", "line 1: no 'qid:' field"),
    (b"0 qid:1 1:3\n1 qid0:1 1:1\n", "line 2: no 'qid:' field"),
    (b"1 1:2 qid:1\n", "line 1: 'qid:' must come right after the grade"),
    (b"1 qid:1 qid:2 1:2\n", "line 1: a second 'qid:' field"),
    (b"1 qid:1 1:nan\n0 qid:1 1:1\n", "NaN or infinite value"),
    (b"1e400 qid:1 1:2\n0 qid:1 1:1\n", "NaN or infinite grade"),
    (b"1 qid:1 1:2\n0 qid:1 1:", "line 2: '1:' is not 'index:value'"),
])
def test_letor_regressions(tmp_path, content, message):
    """Cases the fuzzing found (OverflowError, silently accepted '1_000', unnamed lines) and classic ones."""
    path = tmp_path / "f.letor"
    path.write_bytes(content)
    with pytest.raises(ValidationError, match=re.escape(message)):
        load_letor(path)


def test_letor_huge_grade_is_not_wrapped(tmp_path):
    """Regression: a grade of 1e20 was cast to int64 and became -9223372036854775808."""
    path = tmp_path / "f.letor"
    path.write_bytes(b"1e20 qid:1 1:2\n0 qid:1 1:1\n99999999999999999999 qid:2 1:1\n")
    data = load_letor(path)
    assert data.y.tolist() == [1e20, 0.0, 1e20]


def test_letor_huge_index_dense_is_refused_sparse_is_fine(tmp_path):
    """A feature index of 10^9 with dense=True would allocate 16 GB: refused before allocating."""
    path = tmp_path / "f.letor"
    path.write_bytes(b"1 qid:1 1000000000:2\n0 qid:1 1:1\n")
    data = load_letor(path)
    assert data.is_sparse and data.n_features == 10**9
    with pytest.raises(ValidationError, match="dense=False"):
        load_letor(path, dense=True)
    path.write_bytes(b"1 qid:1 1000000000:nan\n0 qid:1 1:1\n")  # the error path must not densify either
    with pytest.raises(ValidationError, match="document 0, feature 999999999"):
        load_letor(path)


# ---------------------------------------------------------------------------------------------
# RankingData and pandas input
# ---------------------------------------------------------------------------------------------
FEATURE_KINDS = ["float", "int", "bool", "Int64", "float_nan", "float_inf", "str", "Int64_NA", "category",
                 "datetime", "object_mixed", "complex"]
LABEL_KINDS = ["int", "float", "str_num", "bool", "bigint", "float_nan", "str", "datetime", "none_mixed", "huge"]
QID_KINDS = ["int", "str", "float", "bigfloat", "float_nan", "mixed", "none", "bytes"]


def _column(kind, n, rng):
    ints = rng.integers(-3, 4, n)
    if kind == "float":
        return rng.normal(size=n) * 10.0 ** rng.integers(-5, 6, n)
    if kind == "int":
        return ints
    if kind == "bool":
        return ints > 0
    if kind == "Int64":
        return pd.array(ints, dtype="Int64")
    if kind in ("float_nan", "float_inf"):
        out = rng.normal(size=n)
        out[: min(n, 1)] = np.nan if kind == "float_nan" else -np.inf
        return out
    if kind == "str":
        return np.array([f"v{i}" for i in ints], dtype=object)
    if kind == "Int64_NA":
        out = pd.array(ints, dtype="Int64")
        out[: min(n, 1)] = pd.NA
        return out
    if kind == "category":
        return pd.Categorical(ints)
    if kind == "datetime":
        return pd.to_datetime(ints + 5, unit="D")
    if kind == "object_mixed":
        return np.array([1.5 if i % 2 else "x" for i in range(n)], dtype=object)
    if kind == "complex":
        return ints + 1j
    raise AssertionError(kind)


def _labels(kind, n, rng):
    ints = rng.integers(0, 3, n)
    return {
        "int": lambda: ints, "float": lambda: ints * 0.5,
        "str_num": lambda: np.array([str(i) for i in ints], dtype=object),
        "bool": lambda: ints > 0, "bigint": lambda: np.array([2**70 * int(i) for i in ints], dtype=object),
        "float_nan": lambda: np.where(np.arange(n) == 0, np.nan, ints),
        "str": lambda: np.array(["high" if i else "low" for i in ints], dtype=object),
        "datetime": lambda: pd.to_datetime(ints, unit="D"),
        "none_mixed": lambda: np.array([None] * min(n, 1) + ints[1:].tolist(), dtype=object),
        "huge": lambda: ints * 1e300,
    }[kind]()


def _qids(kind, n, rng):
    ints = rng.integers(0, 3, n)
    return {
        "int": lambda: ints, "str": lambda: np.array([f"q{i}" for i in ints], dtype=object),
        "float": lambda: ints + 0.5, "bigfloat": lambda: (ints + 1) * 1e300,
        "float_nan": lambda: np.where(np.arange(n) == 0, np.nan, ints.astype(float)),
        "mixed": lambda: np.array([int(i) if j % 2 else f"q{i}" for j, i in enumerate(ints)], dtype=object),
        "none": lambda: np.array([None] * min(n, 1) + ints[1:].tolist(), dtype=object),
        "bytes": lambda: np.array([b"q%d" % i for i in ints], dtype=object),
    }[kind]()


def _expect_frame_valid(n, feature_kinds, label_kind, qid_kind):
    return (n >= 1 and len(feature_kinds) >= 1
            and all(k in ("float", "int", "bool", "Int64") for k in feature_kinds)
            and label_kind in ("int", "float", "str_num", "bool", "bigint", "huge")
            and qid_kind in ("int", "str", "float", "bigfloat", "bytes", "mixed"))


@FUZZ
@given(n=st.integers(0, 6), feature_kinds=st.lists(st.sampled_from(FEATURE_KINDS), max_size=3),
       label_kind=st.sampled_from(LABEL_KINDS), qid_kind=st.sampled_from(QID_KINDS), seed=st.integers(0, 2**16),
       duplicate=st.booleans())
def test_from_frame_fuzz(n, feature_kinds, label_kind, qid_kind, seed, duplicate):
    rng = np.random.default_rng(seed)
    cols = {"qid": _qids(qid_kind, n, rng), "label": _labels(label_kind, n, rng)}
    for j, kind in enumerate(feature_kinds):
        cols[f"f{j}"] = _column(kind, n, rng)
    df = pd.DataFrame(cols)
    if duplicate and feature_kinds:
        df = pd.concat([df, df[["f0"]]], axis=1)  # two columns named f0
    valid = _expect_frame_valid(n, feature_kinds, label_kind, qid_kind) and not (duplicate and feature_kinds)
    if qid_kind == "mixed" and n >= 2:  # strings and integers cannot be sorted together
        valid = False
    try:
        data = RankingData.from_frame(df, label="label", qid="qid")
    except Exception as exc:  # noqa: BLE001
        _one_line_error(exc)
        assert not valid, f"valid frame refused: {exc}\n{df}"
        return
    assert valid, f"invalid frame accepted:\n{df}\n{df.dtypes}"
    features = [c for c in df.columns if c not in ("label", "qid")]
    np.testing.assert_array_equal(data.X, df[features].to_numpy(dtype=float))
    np.testing.assert_array_equal(np.asarray(data.y, dtype=float), np.asarray(df["label"].to_numpy(), dtype=float))
    assert data.n_queries == len(set(df["qid"].tolist()))
    assert [data.query_ids[i] for i in data.query_index] == df["qid"].tolist()  # same query for every row


@pytest.mark.parametrize("make, message", [
    (lambda: RankingData.from_frame({"q": [1]}, label="r", qid="q"), "takes a pandas DataFrame"),
    (lambda: RankingData.from_frame(pd.DataFrame([[1, 0, 2.0, 3.0]], columns=["q", "r", "f", "f"]),
                                    label="r", qid="q"), "duplicate column names"),
    (lambda: RankingData.from_frame(pd.DataFrame({"q": [1], "r": [1], "f": [1.0]}), label=["r"], qid="q"),
     "label must be a column name"),
    (lambda: RankingData.from_frame(pd.DataFrame({"q": [1], "r": [1], "f": [1.0]}), label="r", qid="q",
                                    features="f"), "list of column names"),
    (lambda: RankingData([[1.0, 2.0], [1.0]], [1, 0], [1, 1]), "X must be numeric"),
    (lambda: RankingData(np.ones((2, 1)), [10**400, 0], [1, 1]), "y (grades) must be numeric"),
    (lambda: RankingData(np.ones((2, 1)), pd.to_datetime([1, 2]), [1, 1]), "dates or durations"),
    (lambda: RankingData(np.ones((2, 1)), [1, 0], np.array([np.nan, 1.0], dtype=object)), "missing"),
])
def test_frame_and_array_regressions(make, message):
    """Inputs the fuzzing found raising AttributeError, TypeError, OverflowError or plain ValueError."""
    with pytest.raises(ValidationError, match=re.escape(message)):
        make()


def test_huge_values_are_not_wrapped_to_int64():
    """Regression: integral float grades/qids beyond 2**63 were cast to int64 (wrapping, merging queries)."""
    data = RankingData(np.eye(3), [2.0**70, 0, 1e300], qid=[1e300, 2e300, 2e300])
    assert data.y.tolist() == [2.0**70, 0.0, 1e300]
    assert data.n_queries == 2  # were one query (both became -2**63)


# ---------------------------------------------------------------------------------------------
# Explicit preference pairs
# ---------------------------------------------------------------------------------------------
def _index_array():
    return st.one_of(
        st.lists(st.integers(-2, 7), max_size=5).map(lambda v: np.array(v, dtype=np.int64)),
        st.lists(st.integers(0, 5), max_size=5).map(lambda v: np.array(v, dtype=np.uint64)),
        st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4).map(np.array),
        st.lists(st.integers(0, 5).map(float), max_size=4).map(np.array),
        st.sampled_from([np.array([2**64 - 1], dtype=np.uint64), np.array([1e300]), np.array([True, False]),
                         np.array(["0", "1"]), np.array([[0, 1]]), np.array(0), np.array([2**70], dtype=object)]),
    )


def _expected_pairs(better, worse, m, q):
    for arr in (better, worse):
        if arr.ndim != 1:
            return None
        integral_floats = arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))
        if arr.size and arr.dtype.kind not in "iu" and not integral_floats:
            return None
    if better.shape != worse.shape or better.size == 0:
        return None
    b, w = better.astype(float), worse.astype(float)
    if np.any((b < 0) | (b >= m) | (w < 0) | (w >= m)):
        return None
    b, w = b.astype(int), w.astype(int)
    if np.any(b == w) or np.any(q[b] != q[w]):
        return None
    return b, w


@FUZZ
@given(m=st.integers(1, 6), better=_index_array(), worse=_index_array(), seed=st.integers(0, 100),
       as_matrix=st.booleans())
def test_preference_pairs_fuzz(m, better, worse, seed, as_matrix):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    q = rng.integers(0, 2, m)
    data = X if as_matrix else RankingData(X, np.zeros(m), q)
    expected = _expected_pairs(better, worse, m, q if not as_matrix else np.zeros(m, dtype=int))
    try:
        pairs = preference_pairs(data, better, worse)
    except Exception as exc:  # noqa: BLE001
        _one_line_error(exc)
        assert expected is None, f"valid pairs refused: {exc}"
        return
    assert expected is not None, f"invalid pairs accepted: {better!r} {worse!r}"
    b, w = expected
    assert pairs.better.tolist() == b.tolist() and pairs.worse.tolist() == w.tolist()
    v = rng.normal(size=3)
    np.testing.assert_allclose(pairs.margins(v), (X[b] - X[w]) @ v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("data, better, message", [
    (None, [0], "X must be 2-dimensional"),
    (5, [0], "X must be 2-dimensional"),
    (np.eye(3), np.array([2**64 - 1], dtype=np.uint64), "better[0] = 18446744073709551615 is not a document index"),
    (np.eye(3), [1e300], "better[0] = 1e+300 is not a document index"),
])
def test_preference_pairs_regressions(data, better, message):
    """The fuzzing found TypeError for a non-matrix and wrapped indices in the messages."""
    with pytest.raises(ValidationError, match=re.escape(message)):
        preference_pairs(data, better, [1])


# ---------------------------------------------------------------------------------------------
# JSON model files
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model_docs():
    data = make_ranking(n_queries=4, docs_per_query=(4, 6), n_features=3, random_state=0)
    mu = {int(q): 1.0 + i for i, q in enumerate(data.query_ids)}
    docs = [model_to_dict(RankSVMIR(lam=0.1, mu=mu, tau={(2, 1): 1.0, (2, 0): 2.0, (1, 0): 0.5},
                                    solver="clarabel").fit(data)),
            model_to_dict(ListMLE(C=1.0).fit(data))]
    return [json.loads(json.dumps(d)) for d in docs]


HOSTILE_VALUES = [None, True, False, 0, -1, 1.5, 1e308, "", "os.system", "__class__", "!!python/object/apply:os.system",
                  "$ref", {"$ref": "#/coef"}, {"__class__": "os.system", "args": ["ls"]}, {"py/object": "os.system"},
                  [], [[1, 2, 3]], [["a", "b"]], [1, [2, [3]]], "x" * 1000, {"": {}}, 2**80, -2**80]
HOSTILE_KEYS = ["__class__", "$ref", "__reduce__", "py/object", "@type", "!!python/object", "estimator_", ""]
TOP_KEYS = ["format", "format_version", "cvxrank_version", "estimator", "params", "n_features", "coef", "fitted",
            "solve"]


@st.composite
def model_mutations(draw):
    """A list of (where, action, key, value) edits of a valid model document."""
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "params", "fitted", "solve"]))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        key = draw(st.sampled_from(TOP_KEYS + HOSTILE_KEYS + ["lam", "mu", "tau", "n_iter", "status", "solver",
                                                             "C", "pcf"]))
        value = draw(st.sampled_from(HOSTILE_VALUES))
        edits.append((where, action, key, value))
    return edits


def _apply(doc, edits) -> None:
    for where, action, key, value in edits:
        value = copy.deepcopy(value)  # one drawn object placed twice could make the document contain itself
        target = doc if where == "top" else doc.get(where)
        if not isinstance(target, dict):
            continue
        if action == "delete":
            target.pop(key, None)
        elif action == "add":
            target.setdefault(key, value)
        elif key in target:
            target[key] = value


def _structurally_invalid(doc) -> bool:
    """Crisp rules any model file must meet (an independent restatement of the format, not the loader's code)."""
    if set(doc) != set(TOP_KEYS) or doc["format"] != "cvxrank-model":
        return True
    if type(doc["format_version"]) is not int or doc["format_version"] != 1:
        return True
    cls = ESTIMATORS.get(doc["estimator"]) if isinstance(doc["estimator"], str) else None
    if cls is None or not isinstance(doc["params"], dict) or set(doc["params"]) - set(cls().get_params()):
        return True
    n, coef = doc["n_features"], doc["coef"]
    if type(n) is not int or n < 1 or not isinstance(coef, list) or len(coef) != n:
        return True
    if not all(type(c) in (int, float) and math.isfinite(c) for c in coef):
        return True
    fitted = doc["fitted"]
    return not isinstance(fitted, dict) or bool(set(fitted) - {"lam", "C", "tau", "n_iter"}) \
        or not isinstance(doc["solve"], dict)


def _plain_json(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, (str, int, float)) and _plain_json(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain_json(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


@FUZZ
@given(which=st.integers(0, 1), edits=model_mutations(),
       text_mutation=st.sampled_from(["none"] * 5 + ["truncate", "nan", "bom", "deep", "bigint", "latin1"]),
       cut=st.floats(0, 1))
def test_model_loader_fuzz(model_docs, which, edits, text_mutation, cut):
    doc = json.loads(json.dumps(model_docs[which]))
    _apply(doc, edits)
    must_fail = _structurally_invalid(doc)
    text = json.dumps(doc).encode()
    if text_mutation == "truncate":
        text, must_fail = text[: int(cut * (len(text) - 1))], True
    elif text_mutation == "nan":
        text, must_fail = text.replace(b'"coef": [', b'"coef": [NaN, ', 1), must_fail or b'"coef": [' in text
    elif text_mutation == "bom":
        text, must_fail = b"\xef\xbb\xbf" + text, True
    elif text_mutation == "deep":
        text, must_fail = b"[" * 50_000 + b"]" * 50_000, True
    elif text_mutation == "bigint":
        text, must_fail = text.replace(b'"n_features": ', b'"n_features": ' + b"9" * 5000, 1), True
    elif text_mutation == "latin1":
        text, must_fail = text.replace(b'"format"', b'"f\xe9rmat"', 1), True
    modules = set(sys.modules)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.json")
        with open(path, "wb") as fh:
            fh.write(text)
        try:
            model = load_model(path)
        except Exception as exc:  # noqa: BLE001
            _one_line_error(exc)
            return
        finally:
            assert set(sys.modules) == modules, "loading a model file imported a module"
    assert not must_fail, f"invalid model file accepted: {edits} {text_mutation}"
    assert type(model) in ESTIMATORS.values() and type(model).__name__ == doc["estimator"]
    assert model.coef_.tolist() == doc["coef"] and model.n_features_in_ == doc["n_features"]
    assert all(_plain_json(v) or isinstance(v, dict) for v in model.get_params().values())
    assert _plain_json(model.solve_summary_)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["params"].__setitem__("mu", [[1, 2, 3]]), "params.mu must be a list of [query id, weight]"),
    (lambda d: d["params"].__setitem__("mu", [[[1], 2]]), "params.mu holds"),
    (lambda d: d["fitted"].__setitem__("n_iter", 1e300), "fitted.n_iter must be a non-negative integer"),
    (lambda d: d["fitted"].__setitem__("n_iter", "abc"), "fitted.n_iter"),
    (lambda d: d["fitted"].__setitem__("lam", {"__class__": "os.system"}), "fitted.lam must be a positive number"),
    (lambda d: d["fitted"].__setitem__("__class__", "os.system"), "unknown keys in fitted"),
    (lambda d: d.__setitem__("format_version", True), "model format True"),
    (lambda d: d["solve"].__setitem__("status", {"$ref": "#"}), "solve must be an object of numbers"),
    (lambda d: d.__setitem__("estimator", "os.system"), "names estimator 'os.system'"),
    (lambda d: d.__setitem__("$ref", "file:///etc/passwd"), "unknown keys ['$ref']"),
])
def test_model_loader_regressions(model_docs, tmp_path, edit, message):
    """Model files the fuzzing found raising ValueError, TypeError or OverflowError, or being accepted."""
    doc = json.loads(json.dumps(model_docs[0]))
    edit(doc)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValidationError, match=re.escape(message)):
        load_model(path)


@pytest.mark.parametrize("content, message", [
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"format": 1' + b"0" * 5000 + b"}", "digits"),
])
def test_model_loader_text_regressions(tmp_path, content, message):
    path = tmp_path / "m.json"
    path.write_bytes(content)
    with pytest.raises(ValidationError, match=message):
        load_model(path)


def test_model_loader_directory(tmp_path):
    """Regression: a directory gave IsADirectoryError."""
    with pytest.raises(ValidationError, match="cannot read model file"):
        load_model(tmp_path)
