"""Graded ranking data: documents, relevance grades and query ids.

:class:`RankingData` is the one validated container every other part of
cvxrank takes. It is built from arrays, from a pandas DataFrame
(:meth:`RankingData.from_frame`) or from SVMlight/LETOR files
(:func:`load_letor`, which uses scikit-learn's reader).

This module imports nothing of the package's own but its exceptions and the memory budget.
"""

from __future__ import annotations

import importlib
import io
import math
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from cvxrank._io import read_pipe
from cvxrank._memory import MemoryBudgetError, check_letor_files, check_memory
from cvxrank._validation import POSITIVE_INT, check
from cvxrank.exceptions import ValidationError

__all__ = ["RankingData", "load_letor", "save_letor"]


def _reject_complex(values, what: str) -> None:
    try:
        is_complex = np.iscomplexobj(values)
    except (TypeError, ValueError) as exc:  # e.g. ragged nested lists
        raise ValidationError(f"{what} must be numeric: {exc}") from None
    if is_complex:
        raise ValidationError(f"{what} must be real numbers, got complex values")


#: Largest magnitude up to which every integer is a float64 exactly (2**53); larger integral
#: values stay float rather than being cast to int64 (which would wrap them silently).
_EXACT_INT = 2.0**53


#: The storage types ``X`` may have (:class:`RankingData`'s ``dtype``); float64 is the default.
FEATURE_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


def _feature_dtype(dtype) -> np.dtype:
    """``dtype`` as one of :data:`FEATURE_DTYPES`, or a ValidationError naming them."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt is None or dt not in FEATURE_DTYPES:  # (np.dtype compares equal to None: float64)
        raise ValidationError(f"dtype must be float64 or float32 (the storage of X), got "
                              f"{dt.name if dt is not None else repr(dtype)}")
    return dt


def _as_features(X, dtype=np.float64) -> np.ndarray | sp.csr_matrix:
    _reject_complex(X.data if sp.issparse(X) else X, "X")
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore"):  # float64 beyond float32's range: the finiteness check names it below
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=dtype)
            values = X.data
        else:
            try:
                X = np.asarray(X, dtype=dtype)
            except (TypeError, ValueError) as exc:
                raise ValidationError(f"X must be numeric: {exc}") from None
            if X.ndim != 2:
                raise ValidationError(
                    f"X must be 2-dimensional (documents x features), got shape {X.shape}"
                )
            values = X
    if not np.all(np.isfinite(values)):
        if sp.issparse(X):  # locate it without densifying X
            coo = X.tocoo()
            bad = np.flatnonzero(~np.isfinite(coo.data))
            bad = min(zip(coo.row[bad].tolist(), coo.col[bad].tolist()))
        else:
            bad = np.argwhere(~np.isfinite(X))[0]
        beyond = " (or beyond float32's range, 3.4e38)" if dtype == np.float32 else ""
        raise ValidationError(
            f"X has a NaN or infinite value{beyond} (first at document {bad[0]}, feature {bad[1]})"
        )
    return X


def _as_grades(y, n: int) -> np.ndarray:
    _reject_complex(y, "y (grades)")
    if np.asarray(y).dtype.kind in "mM":
        raise ValidationError("y (grades) must be numeric, got dates or durations")
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValidationError(f"y (grades) must be numeric: {exc}") from None
    if y.ndim != 1:
        raise ValidationError(f"y (grades) must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValidationError(
            f"y has {y.shape[0]} grades but X has {n} documents; they must match"
        )
    if not np.all(np.isfinite(y)):
        raise ValidationError(
            f"y has a NaN or infinite grade (first at document {int(np.flatnonzero(~np.isfinite(y))[0])})"
        )
    if np.all(y == np.round(y)) and np.all(np.abs(y) <= _EXACT_INT):
        return y.astype(np.int64)
    return y


def _as_qid(qid, n: int) -> np.ndarray:
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValidationError(f"qid must be 1-dimensional, got shape {qid.shape}")
    if qid.shape[0] != n:
        raise ValidationError(
            f"qid has {qid.shape[0]} entries but X has {n} documents; they must match"
        )
    if qid.dtype.kind == "f":
        if not np.all(np.isfinite(qid)):
            raise ValidationError("qid has a NaN or infinite query id")
        if np.all(qid == np.round(qid)) and np.all(np.abs(qid) <= _EXACT_INT):
            qid = qid.astype(np.int64)
    elif qid.dtype.kind == "O":
        if any(q is None or (isinstance(q, float) and math.isnan(q)) for q in qid):
            raise ValidationError("qid has a missing (None or NaN) query id")
    return qid


@dataclass(frozen=True, eq=False)
class RankingData:
    """Documents with relevance grades, grouped by query.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix of shape (n_documents, n_features)
        Feature vectors; sparse input is kept sparse (CSR).
    y : array-like of shape (n_documents,)
        Relevance grades; a larger grade is more relevant. Integral grades are
        stored as ``int64``.
    qid : array-like of shape (n_documents,)
        Query id of each document (any hashable values). The documents of a
        query need not be contiguous.
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Storage of ``X`` (keyword only). float32 halves its memory (a float32
        ``X`` passed without ``dtype`` still becomes float64). Every float32
        value is a float64 exactly, and the solvers compute with ``X`` in
        float64 arithmetic (blocks of rows upcast in turn by the pair-free
        solver, a float64 copy where CVXPY or the pairs need one), so a
        float32 data set is solved and certified exactly for the float32
        values of its features.

    Attributes
    ----------
    query_ids : ndarray of shape (n_queries,)
        The distinct query ids, sorted.
    query_index : ndarray of int of shape (n_documents,)
        Position of each document's query in ``query_ids``.

    Raises
    ------
    ValidationError
        For NaN or infinite features or grades, mismatched lengths, or no
        documents at all.

    Examples
    --------
    >>> import numpy as np
    >>> data = RankingData(np.eye(3), [2, 0, 1], qid=[7, 7, 7])
    >>> data
    RankingData(n_documents=3, n_features=3, n_queries=1, grades=[0, 1, 2])
    >>> RankingData(np.eye(3), [2, 0, 1], qid=[7, 7, 7], dtype=np.float32).subset([0, 1]).X.dtype
    dtype('float32')
    """

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    qid: np.ndarray
    dtype: np.dtype = field(default=np.dtype(np.float64), kw_only=True, repr=False)
    query_ids: np.ndarray = field(init=False, repr=False)
    query_index: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        dtype = _feature_dtype(self.dtype)
        X = _as_features(self.X, dtype)
        n = X.shape[0]
        if n == 0:
            raise ValidationError("no documents: X has 0 rows")
        if X.shape[1] == 0:
            raise ValidationError("no features: X has 0 columns")
        y = _as_grades(self.y, n)
        qid = _as_qid(self.qid, n)
        try:
            query_ids, query_index = np.unique(qid, return_inverse=True)
        except TypeError as exc:
            raise ValidationError(f"qid values must be mutually comparable: {exc}") from None
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "qid", qid)
        object.__setattr__(self, "query_ids", query_ids)
        object.__setattr__(self, "query_index", query_index.astype(np.int64).ravel())

    # -- shape -----------------------------------------------------------
    @property
    def n_documents(self) -> int:
        """Number of documents (rows of ``X``)."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features (columns of ``X``)."""
        return int(self.X.shape[1])

    @property
    def n_queries(self) -> int:
        """Number of distinct query ids."""
        return int(self.query_ids.shape[0])

    @property
    def grades(self) -> np.ndarray:
        """The distinct grades, ascending."""
        return np.unique(self.y)

    @property
    def is_sparse(self) -> bool:
        """Whether ``X`` is stored as a scipy.sparse CSR matrix."""
        return sp.issparse(self.X)

    def __repr__(self) -> str:
        grades = self.grades
        shown = ", ".join(str(g) for g in grades[:8]) + (", ..." if grades.size > 8 else "")
        return (
            f"RankingData(n_documents={self.n_documents}, n_features={self.n_features}, "
            f"n_queries={self.n_queries}, grades=[{shown}])"
        )

    # -- selection -------------------------------------------------------
    def subset(self, documents) -> "RankingData":
        """Return the data restricted to ``documents`` (indices or a boolean mask), in the same ``dtype``."""
        idx = np.asarray(documents)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        return RankingData(self.X[idx], self.y[idx], self.qid[idx], dtype=self.dtype)

    def select_queries(self, query_ids: Sequence) -> "RankingData":
        """Return the documents of the given query ids, in their original order."""
        wanted = np.asarray(query_ids)
        missing = np.setdiff1d(wanted, self.query_ids)
        if missing.size:
            raise ValidationError(f"query ids not in the data: {missing[:5].tolist()}")
        return self.subset(np.isin(self.qid, wanted))

    # -- constructors ----------------------------------------------------
    @classmethod
    def from_frame(cls, df, *, label: str, qid: str, features: Sequence[str] | None = None,
                   dtype=np.float64):
        """Build ranking data from a pandas DataFrame.

        Parameters
        ----------
        df : pandas.DataFrame
            One row per document.
        label : str
            Column holding the relevance grade.
        qid : str
            Column holding the query id.
        features : sequence of str, optional
            Feature columns, in order. Default: every column but ``label`` and
            ``qid``.
        dtype : {numpy.float64, numpy.float32}, default numpy.float64
            Storage of ``X`` (see :class:`RankingData`).

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"q": [1, 1, 2, 2], "rel": [1, 0, 0, 2],
        ...                    "f1": [0.5, 0.1, 0.3, 0.9], "f2": [1.0, 0.0, 0.2, 0.4]})
        >>> RankingData.from_frame(df, label="rel", qid="q")
        RankingData(n_documents=4, n_features=2, n_queries=2, grades=[0, 1, 2])
        """
        import pandas as pd

        if not isinstance(df, pd.DataFrame):
            raise ValidationError(f"from_frame takes a pandas DataFrame, got {type(df).__name__}")
        if not df.columns.is_unique:
            dup = df.columns[df.columns.duplicated()].unique().tolist()
            raise ValidationError(f"the DataFrame has duplicate column names: {dup[:10]}")
        for name, col in (("label", label), ("qid", qid)):
            try:
                hash(col)
            except TypeError:
                raise ValidationError(f"{name} must be a column name, got {type(col).__name__}") from None
            if col not in df.columns:
                raise ValidationError(
                    f"{name} column {col!r} is not in the DataFrame (columns: {list(df.columns)[:10]})"
                )
        if features is None:
            features = [c for c in df.columns if c not in (label, qid)]
        else:
            if isinstance(features, str):
                raise ValidationError(f"features must be a list of column names, got the string {features!r}")
            features = list(features)
            try:
                absent = [c for c in features if c not in df.columns]
            except TypeError as exc:  # an unhashable name
                raise ValidationError(f"features must be column names: {exc}") from None
            if absent:
                raise ValidationError(f"feature columns not in the DataFrame: {absent[:10]}")
        if not features:
            raise ValidationError("no feature columns left besides label and qid")
        non_numeric = [c for c in features if df[c].dtype.kind not in "biuf"]
        if non_numeric:
            raise ValidationError(f"feature columns must be numeric, these are not: {non_numeric[:10]}")
        dtype = _feature_dtype(dtype)
        with np.errstate(over="ignore"):  # beyond float32's range: RankingData names the value
            X = df[features].to_numpy(dtype=dtype)
        return cls(X, df[label].to_numpy(), df[qid].to_numpy(), dtype=dtype)


#: Numbers as LETOR/SVMlight tools read them (C's strtod): no digit separators, no hexadecimal.
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_INTEGER = re.compile(rb"[+-]?\d+")
#: Largest feature index scikit-learn's reader accepts (a C int) and the range of a qid (int64).
_MAX_INDEX = 2**31 - 1
_MAX_QID = 2**63 - 1


#: Compressed formats recognised by their first bytes (not by the file name).
_CODECS = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\xfd7zXZ\x00": "lzma"}


class _Source:
    """A LETOR file as bytes to read (maybe several times): a regular file, a compressed file
    (gzip, bzip2, xz; decompressed as it is read, so every check sees the text), or a FIFO /
    process substitution (``<(cat f)``), which can be read once and is therefore kept in memory."""

    def __init__(self, path: str):
        self.path = path
        if os.path.isdir(path):
            raise ValidationError(f"{path}: is a directory, not a LETOR file")
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise ValidationError(f"{path}: no such file") from None
        except OSError as exc:  # permission denied on a folder of the path, a loop of links, ...
            raise ValidationError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        self.data = None
        if stat.S_ISREG(mode):
            with open(path, "rb") as fh:
                head = fh.read(6)
            self.codec = next((c for m, c in _CODECS.items() if head.startswith(m)), None)
        elif stat.S_ISFIFO(mode):  # a pipe: read it now, once
            raw = read_pipe(path)
            codec = next((c for m, c in _CODECS.items() if raw.startswith(m)), None)
            self.data = importlib.import_module(codec).decompress(raw) if codec else raw
            self.codec = None
        else:
            raise ValidationError(f"{path}: not a regular file or a pipe (a device or a socket), not a LETOR file")
        self.plain = self.data is None and self.codec is None

    def open(self):
        """A binary file object over the (decompressed) text."""
        if self.data is not None:
            return io.BytesIO(self.data)
        if self.codec is not None:
            return importlib.import_module(self.codec).open(self.path, "rb")
        return open(self.path, "rb")

    def scan(self) -> tuple[int, int, bool]:
        """One pass over the text: its size in bytes, the number of values (a grade or an
        ``index:value`` per token), and whether it needs the strict line check (text scikit-learn
        reads more leniently than LETOR: ``1_000``, or a token such as ``qidx:3``). Sets :attr:`qids`, the
        ``qid:`` fields counted (a document each, in a valid file)."""
        size = values = qid_fields = 0
        strict = False
        try:
            with self.open() as fh:
                for chunk in iter(lambda: fh.read(2**22) + fh.readline(), b""):  # whole lines per chunk
                    size += len(chunk)
                    qids = chunk.count(b"qid:")
                    qid_fields += qids
                    values += chunk.count(b":") - qids + chunk.count(b"\n")
                    strict = strict or b"_" in chunk or chunk.count(b"qid") != qids
        except (OSError, EOFError, ValueError) as exc:  # a corrupt or truncated compressed file
            raise ValidationError(f"{self.path}: cannot be read ({exc})") from None
        self.qids = qid_fields
        return size, values, strict


def _check_letor_lines(path: str, source: "_Source | None" = None) -> None:
    """Find the first line that is not strict LETOR, to name it in the error.

    Stricter than scikit-learn's reader on two points: Python-only number
    syntax (``1_000``) is refused, because LETOR and SVMlight tools read it
    differently (C's ``strtod`` stops at the underscore); and the query id
    field must be spelt ``qid:`` (scikit-learn takes any token starting with
    ``qid``, e.g. ``qidx:3``).
    """
    def show(b):
        return repr(b[:30].decode(errors="replace"))

    with (source or _Source(path)).open() as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.split(b"#", 1)[0].strip()
            if not line:
                continue
            where = f"{path}, line {lineno}"
            tokens = line.split()
            if not _NUMBER.fullmatch(tokens[0]):
                raise ValidationError(f"{where}: the grade {show(tokens[0])} is not a number")
            if len(tokens) < 2 or not tokens[1].startswith(b"qid:"):
                if any(t.startswith(b"qid:") for t in tokens[1:]):
                    raise ValidationError(f"{where}: 'qid:' must come right after the grade")
                raise ValidationError(f"{where}: no 'qid:' field")
            qid = tokens[1][4:]
            if not _INTEGER.fullmatch(qid):
                raise ValidationError(f"{where}: qid {show(qid)} is not an integer")
            if len(qid.lstrip(b"+-").lstrip(b"0")) > 19 or not -_MAX_QID - 1 <= int(qid) <= _MAX_QID:  # digits first
                raise ValidationError(f"{where}: qid {show(qid)} is out of the 64-bit integer range")
            previous = 0
            for tok in tokens[2:]:
                key, sep, value = tok.partition(b":")
                if key == b"qid":
                    raise ValidationError(f"{where}: a second 'qid:' field")
                if not (sep and _INTEGER.fullmatch(key) and _NUMBER.fullmatch(value)):
                    raise ValidationError(f"{where}: {show(tok)} is not 'index:value'")
                digits = key.lstrip(b"+-").lstrip(b"0")  # int() refuses > 4300 digits: count them first
                if key.startswith(b"-") or not digits:
                    raise ValidationError(f"{where}: feature index {key[:30].decode()} < 1 (LETOR indices start at 1)")
                if len(digits) > 10 or int(digits) > _MAX_INDEX:
                    raise ValidationError(f"{where}: feature index {show(key)} is too large (at most {_MAX_INDEX})")
                if int(digits) <= previous:
                    raise ValidationError(f"{where}: feature index {int(digits)} after {previous} (indices must be "
                                          "increasing, each at most once)")
                previous = int(digits)


def _read_together(paths, n_features, readers) -> list:
    """``[X1, y1, q1, X2, ...]`` as :func:`sklearn.datasets.load_svmlight_files` gives them: one
    feature count for all files (``n_features`` or the largest index), read in linear time (``readers``:
    one function per path)."""
    parts = [read(p) for read, p in zip(readers, paths)]
    width = max(X.shape[1] for X, _, _ in parts)
    if n_features is not None and width > n_features:
        raise ValueError(f"n_features was set to {n_features}, but input file contains {width} features")
    width = n_features or width
    out = []
    for X, y, q in parts:
        if sp.issparse(X):
            X = X.tocsr()
            X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
        elif X.shape[1] < width:  # a dense read narrower than the other files: zero columns added
            X = np.hstack([X, np.zeros((X.shape[0], width - X.shape[1]), dtype=X.dtype)])
        out += [X, y, q]
    return out


def load_letor(path, n_features: int | None = None, *, dense: bool | None = None, dtype=np.float64):
    """Read SVMlight/LETOR files with ``qid:`` fields.

    A line reads ``<grade> qid:<id> <index>:<value> ... # comment`` with
    1-based feature indices. Reading is done by scikit-learn's
    :func:`sklearn.datasets.load_svmlight_file`, in byte ranges of 256 KiB
    (:mod:`cvxrank._svmlight`: linear time, where one call with ``query_id=True``
    takes quadratic time; parallel processes for files of 64 MiB and more);
    this function adds validation and error messages that name the offending line.

    Parameters
    ----------
    path : str or path-like, or a sequence of them
        One file, or several files read with one common feature count.
    n_features : int, optional
        Number of features. Default: the largest index found across the files.
        Pass it so that train and test files agree.
    dense : bool, optional
        Return dense ``X``. Default: dense when at least half the entries are
        non-zero (LETOR files usually are), sparse CSR otherwise. ``True`` reads
        each piece of text straight into the dense ``X`` (:func:`cvxrank._svmlight.read_svmlight_dense`,
        the rows counted in the first pass): a peak of about ``X``, where reading CSR and then
        densifying (the default) holds about three times ``X`` (the CSR takes 16 bytes a value).
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Storage of ``X`` (see :class:`RankingData`). The text is read in
        float64 and each value then rounded to the nearest float32.

    Returns
    -------
    RankingData or list of RankingData
        One per path (a single object when ``path`` is a single path).

    Raises
    ------
    ValidationError
        For a missing, empty or malformed file (the message names the file and
        line), or ``n_features`` smaller than an index in the file.
    """
    single = isinstance(path, (str, os.PathLike))
    paths = [os.fspath(path)] if single else [os.fspath(p) for p in path]
    if not paths:
        raise ValidationError("no file given")
    check("n_features", n_features, POSITIVE_INT.or_none())
    dtype = _feature_dtype(dtype)
    sources = [_Source(p) for p in paths]
    scans = [s.scan() for s in sources]
    for p, (size, _, _) in zip(paths, scans):
        if size == 0:
            raise ValidationError(f"{p}: the file is empty")
    # before reading: an estimate from the values counted in the (decompressed) text
    check_letor_files(paths, values=[v for _, v, _ in scans], sizes=[s for s, _, _ in scans])
    from cvxrank._svmlight import read_svmlight, read_svmlight_dense

    def budget(nbytes):
        check_memory(float(nbytes), f"{', '.join(paths)}: a dense X (read in blocks)", "pass dense=False to keep X sparse")

    # dense asked for: each piece goes into X as it is read, its rows counted by the scan (a peak of X and a
    # piece, where CSR and then a dense copy hold 3x X)
    readers = [(lambda f, n=s.qids: read_svmlight_dense(f, dtype=dtype, check=budget, rows=n)) if dense is True
               else read_svmlight for s in sources]
    files = [s.path if s.plain else s.open() for s in sources]
    try:
        loaded = _read_together(files, n_features, readers)
    except MemoryBudgetError:
        raise
    except (ValueError, OverflowError) as exc:
        for p, s in zip(paths, sources):
            _check_letor_lines(p, s)  # raises with the line number when it finds the fault
        raise ValidationError(f"{', '.join(paths)}: cannot be read as LETOR: {exc}") from None
    finally:
        for f in files:
            if not isinstance(f, str):
                f.close()
    for p, s, (_, _, strict) in zip(paths, sources, scans):
        if strict:
            _check_letor_lines(p, s)
    out = []
    for i, p in enumerate(paths):
        X, y, q = loaded[3 * i], loaded[3 * i + 1], loaded[3 * i + 2]
        if X.shape[0] == 0:
            raise ValidationError(f"{p}: the file holds no document")
        if q.shape[0] != X.shape[0]:
            # scikit-learn returns a short qid array when a line has no qid.
            _check_letor_lines(p, sources[i])
            raise ValidationError(f"{p}: {X.shape[0]} documents but {q.shape[0]} qid fields")
        if sp.issparse(X):  # (a dense read is in dtype already)
            as_dense = dense if dense is not None else X.nnz >= 0.5 * X.shape[0] * X.shape[1]
            if as_dense:
                check_memory(float(dtype.itemsize) * X.shape[0] * X.shape[1], f"{p}: a dense X of {X.shape[0]:,} "
                             f"documents x {X.shape[1]:,} features", "pass dense=False to keep X sparse")
            with np.errstate(over="ignore"):  # beyond float32's range: RankingData names the value
                X = X.tocsr().astype(dtype, copy=False)  # before densifying: no dense float64 copy for float32
            X = X.toarray() if as_dense else X
        try:
            out.append(RankingData(X, y, q, dtype=dtype))
        except ValidationError as exc:
            raise ValidationError(f"{p}: {exc}") from None
    return out[0] if single else out


def save_letor(data: RankingData, path) -> None:
    """Write ``data`` as an SVMlight/LETOR file (1-based feature indices, ``qid:`` fields).

    Written by scikit-learn's :func:`sklearn.datasets.dump_svmlight_file`
    (values at full precision) to a temporary file that is renamed into place.
    Query ids must be integers (LETOR's ``qid`` field is numeric).

    Examples
    --------
    >>> import os, tempfile
    >>> data = RankingData(np.array([[0.5, 0.0], [0.25, 1.0]]), y=[1, 0], qid=[7, 7])
    >>> path = os.path.join(tempfile.mkdtemp(), "d.letor")
    >>> save_letor(data, path)
    >>> load_letor(path).X.tolist()
    [[0.5, 0.0], [0.25, 1.0]]
    """
    from sklearn.datasets import dump_svmlight_file

    from cvxrank._io import atomic_output

    if not isinstance(data, RankingData):
        raise ValidationError(f"save_letor takes RankingData, got {type(data).__name__}")
    if data.qid.dtype.kind not in "iu":
        raise ValidationError("LETOR files need integer query ids; these are not")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValidationError(f"cannot write {path}: folder {folder} does not exist")
    with atomic_output(path, binary=True) as fh:
        dump_svmlight_file(data.X, data.y, fh, query_id=data.qid, zero_based=False)
