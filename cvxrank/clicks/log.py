"""Click logs: impressions of ranked results and the clicks they got.

A :class:`ClickLog` holds one row per *impression* (a document shown to a user in a session):
the session, its query, the document (a row of a :class:`~cvxrank.data.RankingData` holding
the documents' features), the position it was shown at (1 = top), whether it was clicked, and
optionally the propensity (probability of examination) of that position. Ranking SVM was born
on such data (Joachims 2002); Propensity SVM-Rank (Joachims, Swaminathan, Schnabel, WSDM 2017)
weighs each click by the inverse of its propensity (:mod:`cvxrank.clicks.pairs`).

The click-log file format
-------------------------
Plain text (UTF-8 or ASCII), one impression a line, fields separated by blanks::

    <click> <position> sid:<session> qid:<query> doc:<row> [p:<propensity>]  [# comment]

* ``<click>``: ``1`` (clicked) or ``0`` (shown, not clicked);
* ``<position>``: the rank the document was shown at, an integer ``>= 1`` (1 = top);
* ``sid:<session>``: the session id, an integer (64-bit);
* ``qid:<query>``: the query id of the session, an integer (64-bit), the ``qid`` of the
  documents' LETOR file;
* ``doc:<row>``: the document, a **0-based row index** into the documents' ``RankingData``
  (the order of the documents' LETOR file, first line = row 0);
* ``p:<propensity>`` (optional): the probability that the position was examined, a number in
  ``(0, 1]``. Leave the field out for an unknown propensity; ``p:nan`` is refused.

The fields come in this order. ``#`` starts a comment (to the end of the line); blank lines and
comment lines are skipped. A session's impressions are consecutive lines (sessions are
contiguous; their ids need not be sorted), shown documents and positions are distinct within
a session, every line of a session has the same ``qid``, and each document belongs to that
query. Files compressed with gzip, bzip2 or xz are read as they are (recognised by their first
bytes, not by the name). Example::

    # a session of query 7: the document of row 12 was clicked at position 3
    0 1 sid:1 qid:7 doc:10 p:1.0
    0 2 sid:1 qid:7 doc:11 p:0.5
    1 3 sid:1 qid:7 doc:12 p:0.333333

:func:`read_clicks` reads such a file strictly (every error names the file and the line);
:func:`write_clicks` writes one (propensities at full precision).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from cvxrank._memory import check_memory
from cvxrank.data import RankingData, _Source
from cvxrank.exceptions import ValidationError

__all__ = ["IMPRESSION_BYTES", "ClickLog", "read_clicks", "write_clicks"]

#: Peak bytes per impression of reading a click log: the parsed columns (six of 8 bytes and the
#: line numbers), the validated copies and the sort keys of the checks, with room to spare.
IMPRESSION_BYTES = 256


def _as_integers(values, name: str, where) -> np.ndarray:
    """``values`` as int64, or a ValidationError naming the first impression that is not an integer."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "b":
        return arr.astype(np.int64)
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            i = int(np.flatnonzero(arr > np.iinfo(np.int64).max)[0])
            raise ValidationError(f"{where(i)}: {name} {arr[i]} is out of the 64-bit integer range")
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (np.abs(arr) > 2.0**53)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValidationError(f"{where(i)}: {name} {arr[i].item()!r} is not an integer")
        return arr.astype(np.int64)
    if arr.dtype.kind == "O":
        out = np.empty(arr.shape[0], dtype=np.int64)
        for i, v in enumerate(arr):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                if isinstance(v, (float, np.floating)) and math.isfinite(v) and v == round(v) and abs(v) <= 2.0**53:
                    v = int(v)
                else:
                    raise ValidationError(f"{where(i)}: {name} {_plain(v)!r} is not an integer")
            if not -(2**63) <= int(v) < 2**63:
                raise ValidationError(f"{where(i)}: {name} {v} is out of the 64-bit integer range")
            out[i] = int(v)
        return out
    raise ValidationError(f"{name} must hold integers, got values of type {arr.dtype}")


def _first_repeat(*keys: np.ndarray) -> tuple[int, int] | None:
    """``(earlier, later)`` impression indices of the first repeated key tuple (first in log order of
    the later one), or None when every key is distinct. ``keys`` are equal-length arrays, compared together."""
    n = keys[0].shape[0]
    if n < 2:
        return None
    idx = np.arange(n)
    order = np.lexsort((idx, *reversed(keys)))  # by the keys, then by log order
    same = np.ones(n - 1, dtype=bool)
    for k in keys:
        ks = k[order]
        same &= ks[1:] == ks[:-1]
    dup = np.flatnonzero(same) + 1
    if dup.size == 0:
        return None
    later = order[dup]
    j = int(np.argmin(later))
    first = int(dup[j])
    while first > 0 and same[first - 1]:  # back to the first of its group: the earliest in log order
        first -= 1
    return int(order[first]), int(later[j])


@dataclass(frozen=True, eq=False)
class ClickLog:
    """Impressions of ranked results with their clicks, validated once.

    Parameters
    ----------
    session : array-like of int, shape (n_impressions,)
        Session id of each impression. A session's impressions are contiguous (ids need not be
        sorted).
    query : array-like, shape (n_impressions,)
        Query id of the session (the ``qid`` of the documents), the same for all its impressions.
    document : array-like of int, shape (n_impressions,)
        Row of ``documents.X`` shown (0-based); it must belong to ``query``.
    position : array-like of int, shape (n_impressions,)
        Rank shown, ``>= 1`` (1 = top); distinct within a session.
    click : array-like of {0, 1} or bool, shape (n_impressions,)
    propensity : array-like of float, shape (n_impressions,), optional
        Probability that the position was examined, in ``(0, 1]``; NaN (or None for the whole
        column) means unknown.
    documents : RankingData
        Keyword only: the documents' features (grades are not read by the log; the simulator and
        :func:`~cvxrank.clicks.risk.true_risk` read them).

    Attributes
    ----------
    n_impressions, n_sessions, n_clicks, n_sessions_without_clicks : int
    session_start : ndarray of int64, shape (n_sessions + 1,)
        Session ``s`` is impressions ``session_start[s]:session_start[s + 1]`` (log order).
    session_index : ndarray of int64, shape (n_impressions,)
        Position of each impression's session in log order (0, 1, ...).

    Raises
    ------
    ValidationError
        Naming the offending impression (``impression i``, 0-based; ``<file>, line <n>`` when read
        by :func:`read_clicks`): a position that is not an integer ``>= 1``, a click that is not 0
        or 1, a propensity outside ``(0, 1]``, a document that is not a row of ``documents`` or
        belongs to another query than its session's, a document or a position shown twice in one
        session, a session whose impressions are not contiguous, a session spanning two queries.

    Notes
    -----
    Sessions without a click are kept (they count in :attr:`n_sessions_without_clicks` and in
    :attr:`summary`) but give no preference pair.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> docs = RankingData(np.eye(3), [1, 0, 0], qid=[7, 7, 7])
    >>> log = ClickLog(session=[1, 1, 1, 2, 2], query=[7] * 5, document=[0, 1, 2, 1, 0],
    ...                position=[1, 2, 3, 1, 2], click=[0, 1, 0, 0, 0], documents=docs)
    >>> log
    ClickLog(n_impressions=5, n_sessions=2, n_clicks=1, n_queries=1, sessions_without_clicks=1)
    >>> ClickLog(session=[1, 1], query=[7, 7], document=[0, 1], position=[1, 1], click=[0, 1], documents=docs)
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: impression 1: position 1 is shown twice in session 1 (also at impression 0)
    """

    session: np.ndarray
    query: np.ndarray
    document: np.ndarray
    position: np.ndarray
    click: np.ndarray
    propensity: np.ndarray | None = None
    documents: RankingData = field(default=None, kw_only=True, repr=False)
    lines: np.ndarray | None = field(default=None, kw_only=True, repr=False)
    origin: str | None = field(default=None, kw_only=True, repr=False)
    session_start: np.ndarray = field(init=False, repr=False)
    session_index: np.ndarray = field(init=False, repr=False)

    # -- validation --------------------------------------------------------
    def where(self, i: int) -> str:
        """How messages name impression ``i``: ``"<file>, line <n>"`` when read from a file, else ``"impression i"``."""
        if self.lines is not None:
            return f"{self.origin}, line {int(self.lines[i])}"
        return f"impression {int(i)}"

    def __post_init__(self):
        if not isinstance(self.documents, RankingData):
            raise ValidationError(f"a click log needs documents=RankingData (the documents' features), "
                                  f"got {type(self.documents).__name__}")
        if self.lines is not None:
            object.__setattr__(self, "lines", np.asarray(self.lines, dtype=np.int64))
        where = self.where
        n = None
        columns = {}
        for name in ("session", "query", "document", "position", "click"):
            value = getattr(self, name)
            arr = np.asarray(value)
            if arr.ndim != 1:
                raise ValidationError(f"{name} must be 1-dimensional, got shape {arr.shape}")
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValidationError(f"{name} has {arr.shape[0]} entries but session has {n}; they must match")
            columns[name] = arr
        if n == 0:
            raise ValidationError("the click log holds no impression")
        if self.lines is not None and self.lines.shape != (n,):
            raise ValidationError(f"lines must have one entry per impression ({n}), got shape {self.lines.shape}")
        session = _as_integers(columns["session"], "session", where)
        document = _as_integers(columns["document"], "document", where)
        position = _as_integers(columns["position"], "position", where)
        click = _as_integers(columns["click"], "click", where)
        query = columns["query"]
        if query.dtype.kind == "f":
            query = _as_integers(query, "query", where)
        elif query.dtype.kind == "O" and any(q is None or (isinstance(q, float) and math.isnan(q)) for q in query):
            i = next(i for i, q in enumerate(query) if q is None or (isinstance(q, float) and math.isnan(q)))
            raise ValidationError(f"{where(i)}: the query id is missing")
        # one value at a time: positions, clicks, propensities, documents
        bad = position < 1
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValidationError(f"{where(i)}: position {position[i]} < 1 (positions start at 1, the top)")
        bad = (click != 0) & (click != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValidationError(f"{where(i)}: click must be 0 or 1, got {click[i]}")
        if self.propensity is None:
            propensity = np.full(n, np.nan)
        else:
            try:
                propensity = np.array(self.propensity, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValidationError("propensity must hold numbers (NaN for unknown)") from None
            if propensity.shape != (n,):
                raise ValidationError(f"propensity must have one value per impression ({n}), got shape "
                                      f"{propensity.shape}")
            with np.errstate(invalid="ignore"):
                bad = ~np.isnan(propensity) & ~((propensity > 0) & (propensity <= 1))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValidationError(f"{where(i)}: propensity {float(propensity[i])!r} is not in (0, 1] (the probability "
                                      "that the position is examined; leave it out, or NaN, when unknown)")
        m = self.documents.n_documents
        bad = (document < 0) | (document >= m)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValidationError(f"{where(i)}: document {document[i]} is not a row of the documents (0..{m - 1})")
        # sessions: contiguous runs, one query each
        new_run = np.ones(n, dtype=bool)
        new_run[1:] = session[1:] != session[:-1]
        starts = np.flatnonzero(new_run)
        repeat = _first_repeat(session[starts])
        if repeat is not None:
            first, again = starts[repeat[0]], starts[repeat[1]]
            raise ValidationError(f"{where(again)}: session {session[again]} appears again after other sessions "
                                  f"(it started at {where(first).split(', ')[-1]}); a session's impressions must "
                                  "be contiguous")
        session_index = np.cumsum(new_run) - 1
        start_of = starts[session_index]
        try:
            other = np.asarray(query != query[start_of], dtype=bool)
        except (TypeError, ValueError):
            raise ValidationError("query ids must be mutually comparable") from None
        if other.any():
            i = int(np.flatnonzero(other)[0])
            raise ValidationError(f"{where(i)}: session {session[i]} spans two queries ({_show(query[start_of[i]])} "
                                  f"and {_show(query[i])}); a session belongs to one query")
        doc_query = self.documents.qid[document]
        try:
            other = np.asarray(doc_query != query, dtype=bool)
        except (TypeError, ValueError):
            other = np.array([a != b for a, b in zip(doc_query, query)], dtype=bool)
        if other.any():
            i = int(np.flatnonzero(other)[0])
            raise ValidationError(f"{where(i)}: document {document[i]} belongs to query {_show(doc_query[i])}, "
                                  f"not to its session's query {_show(query[i])}")
        for name, values in (("document", document), ("position", position)):
            repeat = _first_repeat(session_index, values)
            if repeat is not None:
                first, again = repeat
                raise ValidationError(f"{where(again)}: {name} {values[again]} is shown twice in session "
                                      f"{session[again]} (also at {_short(where(first))})")
        for name, arr in (("session", session), ("query", query), ("document", document), ("position", position),
                          ("click", click.astype(np.int8)), ("propensity", propensity)):
            arr = np.array(arr)  # own copies: the caller's arrays stay the caller's
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "session_start", np.append(starts, n).astype(np.int64))
        object.__setattr__(self, "session_index", session_index.astype(np.int64))

    # -- sizes ---------------------------------------------------------------
    @property
    def n_impressions(self) -> int:
        """Number of impressions (rows)."""
        return int(self.session.shape[0])

    @property
    def n_sessions(self) -> int:
        """Number of sessions."""
        return int(self.session_start.shape[0] - 1)

    @property
    def n_clicks(self) -> int:
        """Number of clicked impressions."""
        return int(self.click.sum(dtype=np.int64))

    @cached_property
    def clicks_per_session(self) -> np.ndarray:
        """Clicks of each session, in log order."""
        return np.add.reduceat(self.click.astype(np.int64), self.session_start[:-1])

    @property
    def n_sessions_without_clicks(self) -> int:
        """Sessions without a click (kept, but they give no pair)."""
        return int(np.sum(self.clicks_per_session == 0))

    @property
    def has_propensities(self) -> bool:
        """Whether every impression has a known propensity."""
        return bool(np.all(np.isfinite(self.propensity)))

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per query of the log: sessions, impressions, clicks and sessions without a click."""
        first = self.session_start[:-1]
        frame = pd.DataFrame({"qid": self.query[first], "n_sessions": 1, "n_impressions": np.diff(self.session_start),
                              "n_clicks": self.clicks_per_session,
                              "n_sessions_without_clicks": (self.clicks_per_session == 0).astype(np.int64)})
        return frame.groupby("qid", sort=True).sum()

    def __repr__(self) -> str:
        return (f"ClickLog(n_impressions={self.n_impressions}, n_sessions={self.n_sessions}, "
                f"n_clicks={self.n_clicks}, n_queries={len(pd.unique(self.query))}, "
                f"sessions_without_clicks={self.n_sessions_without_clicks})")

    # -- conversions -----------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """The impressions as a DataFrame with the columns ``session, query, document, position, click,
        propensity`` (the default column names of :meth:`from_frame`)."""
        return pd.DataFrame({"session": self.session, "query": self.query, "document": self.document,
                             "position": self.position, "click": self.click.astype(np.int64),
                             "propensity": self.propensity})

    @classmethod
    def from_frame(cls, df, documents: RankingData, *, session="session", query="query", document="document",
                   position="position", click="click", propensity=None) -> ClickLog:
        """A click log from a pandas DataFrame, one row per impression.

        Errors name the impression by its position in ``df`` (``impression i``, 0-based).

        Parameters
        ----------
        df : pandas.DataFrame
        documents : RankingData
            The documents ``document`` indexes (0-based rows).
        session, query, document, position, click : str
            Column names (defaults: these words, the columns of :meth:`to_frame`).
        propensity : str, optional
            Column of propensities (NaN: unknown). Default: none (all unknown).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from cvxrank.data import RankingData
        >>> docs = RankingData(np.eye(2), [1, 0], qid=[3, 3])
        >>> df = pd.DataFrame({"sid": [5, 5], "q": [3, 3], "row": [1, 0], "rank": [1, 2], "clicked": [False, True]})
        >>> ClickLog.from_frame(df, docs, session="sid", query="q", document="row", position="rank", click="clicked")
        ClickLog(n_impressions=2, n_sessions=1, n_clicks=1, n_queries=1, sessions_without_clicks=0)
        """
        if not isinstance(df, pd.DataFrame):
            raise ValidationError(f"from_frame takes a pandas DataFrame, got {type(df).__name__}")
        if not df.columns.is_unique:
            raise ValidationError(f"the DataFrame has duplicate column names: "
                                  f"{df.columns[df.columns.duplicated()].unique().tolist()[:10]}")
        names = {"session": session, "query": query, "document": document, "position": position, "click": click}
        if propensity is not None:
            names["propensity"] = propensity
        values = {}
        for what, col in names.items():
            try:
                present = col in df.columns
            except TypeError:
                raise ValidationError(f"{what} must be a column name, got {type(col).__name__}") from None
            if not present:
                raise ValidationError(f"{what} column {col!r} is not in the DataFrame (columns: {list(df.columns)[:10]})")
            series = df[col]
            if what == "propensity":
                values[what] = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                given = series.notna().to_numpy() & np.isnan(values[what])
                if given.any():
                    i = int(np.flatnonzero(given)[0])
                    raise ValidationError(f"impression {i}: propensity {_plain(series.iloc[i])!r} is not a number")
            elif series.isna().any():
                i = int(np.flatnonzero(series.isna().to_numpy())[0])
                raise ValidationError(f"impression {i}: the {what} is missing")
            else:
                values[what] = series.to_numpy()
        return cls(values["session"], values["query"], values["document"], values["position"], values["click"],
                   values.get("propensity"), documents=documents)


def _plain(value):
    """A numpy scalar as the Python scalar it holds (for messages: ``3``, not ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _show(value) -> str:
    return repr(_plain(value))


def _short(where: str) -> str:
    """``"line 4"`` from ``"<file>, line 4"`` (the file is named once per message)."""
    return where.rsplit(", ", 1)[-1] if ", line " in where else where


# -- the text format ---------------------------------------------------------------

_INTEGER = re.compile(rb"[+-]?\d+")
#: Numbers as C's strtod reads them (no digit separators, no hexadecimal), as for LETOR files.
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_FIELDS = (b"sid:", b"qid:", b"doc:")
_FIELD_NAMES = {b"sid:": "sid:<session>", b"qid:": "qid:<query>", b"doc:": "doc:<row>"}
_ORDINAL = ("first", "second", "third", "fourth", "fifth", "sixth")


def _show_token(token: bytes) -> str:
    return repr(token[:30].decode(errors="replace"))


def _integer(token: bytes, what: str, where: str) -> int:
    if not _INTEGER.fullmatch(token):
        raise ValidationError(f"{where}: {what} {_show_token(token)} is not an integer")
    if len(token.lstrip(b"+-").lstrip(b"0")) > 19 or not -(2**63) <= int(token) < 2**63:  # digits first
        raise ValidationError(f"{where}: {what} {_show_token(token)} is out of the 64-bit integer range")
    return int(token)


def _count_lines(source: _Source) -> int:
    lines, last = 0, b"\n"
    try:
        with source.open() as fh:
            for chunk in iter(lambda: fh.read(2**22), b""):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
    except (OSError, EOFError, ValueError) as exc:  # a corrupt or truncated compressed file
        raise ValidationError(f"{source.path}: cannot be read ({exc})") from None
    return lines + (last != b"\n")


def read_clicks(path, documents: RankingData) -> ClickLog:
    """Read a click log in the text format of this module (see the module docstring).

    Strict like :func:`~cvxrank.data.load_letor`: every malformed line and every broken invariant
    of :class:`ClickLog` is a :class:`~cvxrank.exceptions.ValidationError` naming the file and the
    line. gzip, bzip2 and xz files are decompressed as they are read. Before anything is
    allocated, the lines are counted and :data:`IMPRESSION_BYTES` per line checked against the
    memory budget (:mod:`cvxrank._memory`).

    Parameters
    ----------
    path : str or path-like
    documents : RankingData
        The documents ``doc:<row>`` indexes (0-based rows), e.g. from :func:`~cvxrank.data.load_letor`.

    Returns
    -------
    ClickLog

    Raises
    ------
    ValidationError
        For a missing, empty or malformed file, naming the line.
    cvxrank.MemoryBudgetError
        When the log would not fit the memory budget.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> docs = RankingData(np.eye(3), [1, 0, 0], qid=[7, 7, 7])
    >>> path = os.path.join(tempfile.mkdtemp(), "clicks.txt")
    >>> _ = open(path, "w").write("0 1 sid:1 qid:7 doc:1 p:1\\n1 2 sid:1 qid:7 doc:0 p:0.5\\n")
    >>> read_clicks(path, docs).click.tolist()
    [0, 1]
    >>> _ = open(path, "w").write("0 1 sid:1 qid:7 doc:1\\n1 0 sid:1 qid:7 doc:0\\n")
    >>> read_clicks(path, docs)
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: .../clicks.txt, line 2: position 0 < 1 (positions start at 1, the top)
    """
    path = os.fspath(path)
    if not isinstance(documents, RankingData):
        raise ValidationError(f"read_clicks needs the documents as RankingData, got {type(documents).__name__}")
    if os.path.isdir(path):
        raise ValidationError(f"{path}: is a directory, not a click log")
    source = _Source(path)
    n_lines = _count_lines(source)
    if n_lines == 0:
        raise ValidationError(f"{path}: the file is empty")
    check_memory(IMPRESSION_BYTES * n_lines, f"reading the click log {path} ({n_lines:,} lines)",
                 "split the log by sessions, or raise the budget")
    session = np.empty(n_lines, dtype=np.int64)
    query = np.empty(n_lines, dtype=np.int64)
    document = np.empty(n_lines, dtype=np.int64)
    position = np.empty(n_lines, dtype=np.int64)
    click = np.empty(n_lines, dtype=np.int64)
    propensity = np.full(n_lines, np.nan)
    lines = np.empty(n_lines, dtype=np.int64)
    n = 0
    try:
        with source.open() as fh:
            for lineno, raw in enumerate(fh, start=1):
                text = raw.split(b"#", 1)[0].strip()
                if not text:
                    continue
                where = f"{path}, line {lineno}"
                tokens = text.split()
                if len(tokens) < 5:
                    raise ValidationError(f"{where}: {len(tokens)} fields; a line reads "
                                          "'<click> <position> sid:<session> qid:<query> doc:<row> [p:<propensity>]'")
                click[n] = _integer(tokens[0], "the click", where)
                position[n] = _integer(tokens[1], "the position", where)
                values = []
                for k, prefix in enumerate(_FIELDS):
                    token = tokens[2 + k]
                    if not token.startswith(prefix):
                        raise ValidationError(f"{where}: the {_ORDINAL[2 + k]} field must be {_FIELD_NAMES[prefix]}, "
                                              f"got {_show_token(token)}")
                    values.append(_integer(token[len(prefix):], prefix[:-1].decode(), where))
                session[n], query[n], document[n] = values
                if len(tokens) > 5:
                    token = tokens[5]
                    if not token.startswith(b"p:"):
                        raise ValidationError(f"{where}: the sixth field must be p:<propensity>, got {_show_token(token)}")
                    value = token[2:]
                    if not _NUMBER.fullmatch(value):
                        raise ValidationError(f"{where}: the propensity {_show_token(value)} is not a number")
                    p = float(value)
                    if math.isnan(p):
                        raise ValidationError(f"{where}: the propensity is NaN; leave the p: field out when the "
                                              "propensity is unknown")
                    propensity[n] = p
                if len(tokens) > 6:
                    raise ValidationError(f"{where}: unexpected field {_show_token(tokens[6])} after the propensity")
                lines[n] = lineno
                n += 1
    except (OSError, EOFError) as exc:  # a corrupt or truncated compressed file
        raise ValidationError(f"{path}: cannot be read ({exc})") from None
    if n == 0:
        raise ValidationError(f"{path}: the file holds no impression (only comments or blank lines)")
    return ClickLog(session[:n], query[:n], document[:n], position[:n], click[:n], propensity[:n],
                    documents=documents, lines=lines[:n], origin=path)


def write_clicks(log: ClickLog, path) -> None:
    """Write ``log`` in the text format of this module, atomically (a temporary file renamed into place).

    Session and query ids must be integers (the format's ``sid:`` and ``qid:`` fields are);
    known propensities are written at full precision (``repr``), unknown ones as no ``p:`` field,
    so :func:`read_clicks` gives the same log back.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> docs = RankingData(np.eye(2), [1, 0], qid=[3, 3])
    >>> log = ClickLog([4, 4], [3, 3], [1, 0], [1, 2], [0, 1], [1.0, np.nan], documents=docs)
    >>> path = os.path.join(tempfile.mkdtemp(), "clicks.txt")
    >>> write_clicks(log, path)
    >>> print(open(path).read(), end="")
    # cvxrank click log: <click> <position> sid:<session> qid:<query> doc:<row> [p:<propensity>]
    0 1 sid:4 qid:3 doc:1 p:1.0
    1 2 sid:4 qid:3 doc:0
    """
    from cvxrank._io import atomic_output

    if not isinstance(log, ClickLog):
        raise ValidationError(f"write_clicks takes a ClickLog, got {type(log).__name__}")
    if log.query.dtype.kind not in "iu":
        raise ValidationError("the click-log format needs integer query ids; these are not")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValidationError(f"cannot write {path}: folder {folder} does not exist")
    known = np.isfinite(log.propensity)
    with atomic_output(path) as fh:
        fh.write("# cvxrank click log: <click> <position> sid:<session> qid:<query> doc:<row> [p:<propensity>]\n")
        step = 65536
        for lo in range(0, log.n_impressions, step):
            hi = min(lo + step, log.n_impressions)
            rows = zip(log.click[lo:hi].tolist(), log.position[lo:hi].tolist(), log.session[lo:hi].tolist(),
                       log.query[lo:hi].tolist(), log.document[lo:hi].tolist(), log.propensity[lo:hi].tolist(),
                       known[lo:hi].tolist())
            fh.write("".join(f"{c} {k} sid:{s} qid:{q} doc:{d}" + (f" p:{p!r}\n" if has else "\n")
                             for c, k, s, q, d, p, has in rows))

