"""Train over data read on the dask workers (LETOR/SVMlight or Parquet files, a dask DataFrame): ``X`` never
reaches the client.

:func:`files_oracle` gives every shard (one file, or a list of files) to a worker, which reads it: a LETOR file
(plain or compressed) with :func:`cvxrank.data.load_letor`, a Parquet file (``.parquet``, ``.pq``) with pyarrow
and :meth:`cvxrank.data.RankingData.from_frame` (its query, label and feature columns named by ``qid``,
``label`` and ``features``). A dask DataFrame's partitions are the shards: each is computed on a worker and
converted there with ``from_frame``. The readers apply the same strict checks and, in a worker process, the
worker's ``memory_limit`` as the memory budget; the worker sends back only what the cost table needs: its query
ids, grades and documents per (query, grade), and a frame's feature column names. The client checks that no
query crosses two shards (naming the query and the files, or the partitions), that every frame shard has the
same feature columns in the same order, agrees the feature count (LETOR: the largest index over all shards, or
``n_features``) and the grades, builds the weights ``τ_k μ_q`` of (9)/SIGIR (``μ = "balanced"`` needs every
query's pair count: ``O(queries x grades)`` numbers), and each worker builds its
:class:`~cvxrank.native.oracle.PairFreeOracle` where the data are. The result is a
:class:`~cvxrank.native.dask.DaskOracle`: the planes and the Newton phase run over it unchanged.

A shard is a dask task: if its worker dies, dask reads its files (or computes its partition) again on another
worker (the solve then goes on, slower for that call); a round that gets no answer within ``timeout`` seconds
raises :class:`~cvxrank.exceptions.SolverError`.

:func:`solve_files` is the one-call front end (the certified hinge solve of ``solve(problem,
"cutting_plane")``, without a :class:`~cvxrank.problem.RankingProblem` on the client).

Examples
--------
>>> from distributed import Client, LocalCluster                                  # doctest: +SKIP
>>> client = Client(LocalCluster(n_workers=2))                                    # doctest: +SKIP
>>> res = solve_files(client, ["shard-0.letor.gz", "shard-1.letor.gz"], mu="balanced", lam=0.1)  # doctest: +SKIP
>>> res.w, res.relative_gap, res.distance_bound                                   # doctest: +SKIP
>>> res = solve_files(client, ["part-0.parquet", "part-1.parquet"], qid="qid", label="y", lam=0.1)  # doctest: +SKIP
>>> ddf = dask.dataframe.read_parquet("web/*.parquet").shuffle("qid")              # doctest: +SKIP
>>> res = solve_files(client, ddf, lam=0.1)                                       # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import sys
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from cvxrank.costs import Costs, check_lam
from cvxrank.exceptions import ValidationError
from cvxrank.native.dask import DEFAULT_TIMEOUT, DaskOracle, _check_client, _Shard

__all__ = ["FilesSolution", "ShardReading", "files_oracle", "read_shards", "shard_groups", "solve_files"]


def shard_groups(files) -> list[list[str]]:
    """Shards from ``files``: each item a path (one file, one shard) or a list of paths (one shard).

    Examples
    --------
    >>> shard_groups(["a.letor", ["b.letor", "c.letor.gz"]])
    [['a.letor'], ['b.letor', 'c.letor.gz']]
    """
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    groups = []
    for item in files:
        group = [os.fspath(item)] if isinstance(item, (str, os.PathLike)) else [os.fspath(p) for p in item]
        if not group:
            raise ValidationError("a shard lists no file")
        groups.append(group)
    if not groups:
        raise ValidationError("no file given")
    seen = {}
    for i, group in enumerate(groups):
        for p in group:
            key = os.path.abspath(p)
            if key in seen:
                raise ValidationError(f"{p} is given twice (shards {seen[key]} and {i})")
            seen[key] = i
    return groups


# -- on the workers ------------------------------------------------------------
def _worker_budget(names, client_pid) -> None:
    """In a worker process, its ``memory_limit`` less what the process already uses becomes the memory budget
    (once: a budget already set is kept)."""
    from cvxrank import _memory

    limit = None
    try:
        from distributed import get_worker

        limit = get_worker().memory_manager.memory_limit
    except Exception:  # not on a dask worker (a plain client object in tests)
        pass
    own_process = os.getpid() != client_pid
    if limit and own_process and _memory._override is None:  # what the worker may still use
        used = _memory._status_bytes("VmRSS") or 0
        if used >= limit:
            raise _memory.MemoryBudgetError(f"{', '.join(names)}: the worker already uses {_memory.format_bytes(used)}"
                                            f", its memory_limit is {_memory.format_bytes(limit)}; raise memory_limit")
        _memory.set_memory_budget(int(limit - used))


def _stack(parts, dtype):
    """One :class:`~cvxrank.data.RankingData` of the documents of ``parts``, in order."""
    if len(parts) == 1:
        return parts[0]
    from cvxrank.data import RankingData

    X = sp.vstack([p.X for p in parts], format="csr") if sp.issparse(parts[0].X) else np.vstack([p.X for p in parts])
    return RankingData(X, np.concatenate([p.y for p in parts]), np.concatenate([p.qid for p in parts]), dtype=dtype)


def _read_shard(paths, dense, dtype, client_pid):
    """Read one shard's LETOR files on a worker; its worker's ``memory_limit`` is the memory budget in a worker
    process."""
    _worker_budget(paths, client_pid)
    data = _stack(_read_plain(paths, dense, dtype), dtype)
    shard = _Shard(None, files=list(paths))
    shard.data = data
    return shard


def _read_plain(paths, dense, dtype):
    """:func:`cvxrank.data.load_letor` of ``paths``, a compressed file first decompressed to a temporary plain file
    on the worker: the reader takes a plain file in linear time by byte ranges, a compressed stream in one piece
    (a gzipped web-sized shard: 11 s against 39 s in a worker). Messages name the original files; without the
    disk room for the copy, or on a worker with a ``memory_limit`` (:func:`_room_for_copy`), the stream is read
    as it is."""
    import shutil
    import tempfile
    import warnings

    from cvxrank.data import _Source, load_letor

    folder = None
    try:
        from distributed import get_worker

        folder = get_worker().local_directory
    except Exception:  # not on a dask worker
        pass
    tmp = tempfile.mkdtemp(prefix="cvxrank-shard-", dir=folder)
    try:
        plain, names = [], {}
        for i, p in enumerate(paths):
            src = _Source(p)
            if src.codec is None:
                plain.append(p)
                continue
            copy = os.path.join(tmp, f"{i}-{os.path.basename(p)}.txt")
            try:
                with src.open() as fh, open(copy, "wb") as out:
                    shutil.copyfileobj(fh, out, 2**22)
            except (OSError, EOFError, ValueError):  # no room on the worker's disk, or a corrupt stream (named below)
                plain.append(p)
                continue
            if not _room_for_copy(os.path.getsize(copy)):
                os.remove(copy)
                plain.append(p)
                continue
            plain.append(copy)
            names[copy] = p
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Inside a Dask worker")  # joblib: one process here
                return load_letor(plain, dense=dense, dtype=dtype)
        except ValidationError as exc:
            message = str(exc)
            for copy, p in names.items():
                message = message.replace(copy, p)
            raise type(exc)(message) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _room_for_copy(text: int) -> bool:
    """Whether to read a plain copy of ``text`` bytes (faster, larger) rather than the compressed stream: only on a
    worker without ``memory_limit``. Under a limit the byte-range read leaves a higher resident watermark (its
    stacked pieces), and on ``cvxrank bench dask`` (limit just below X, four shards a worker) the later shards then
    pushed a worker past the nanny's 95 % and it was restarted: the stream, slower, fits."""
    try:
        from distributed import get_worker

        return not get_worker().memory_manager.memory_limit
    except Exception:
        return True


#: Peak bytes per value read (a row's feature, label and query columns) when a shard's Parquet files become one
#: RankingData: Parquet's decoding, the Arrow table, the pandas frame, ``X`` and, for several files, their stacking.
#: Measured 21-32 B for one file (2,000,000 x 5, 500,000 x 40 and 200,000 x 136 features, float64 or float32
#: ``X``; pyarrow 16 with pandas 2.0, pyarrow 26 with pandas 3.1) and up to 36 B for two files of 100,000 x 136
#: (snappy, zstd, gzip or no compression); set just above.
PARQUET_BYTES_PER_VALUE = 40


def _read_parquet_shard(paths, qid, label, features, dense, dtype, client_pid):
    """Read one shard's Parquet files on a worker: every file's columns checked on its schema and the memory budget
    on the shard's rows before any is read, then each file read and converted by
    :meth:`cvxrank.data.RankingData.from_frame`."""
    from cvxrank._memory import check_memory

    _worker_budget(paths, client_pid)
    files = [_parquet_file(p, qid, label, features) for p in paths]
    for p, (_, columns, _) in zip(paths[1:], files[1:]):
        if columns != files[0][1]:
            raise ValidationError(_column_mismatch(p, columns, paths[0], files[0][1]))
    columns = files[0][1]
    rows = sum(f[2] for f in files)
    check_memory(PARQUET_BYTES_PER_VALUE * rows * (len(columns) + 2), f"{', '.join(paths)}: reading {rows:,} rows "
                 f"x {len(columns)} feature columns", "raise the worker's memory_limit, split the shard into more "
                 "files, or pass dtype=float32")
    parts = [_read_parquet(p, pf, qid, label, columns, dtype) for p, (pf, _, _) in zip(paths, files)]
    return _frame_result(_stack(parts, dtype), list(paths), columns, dense, dtype)


def _parquet_file(path, qid, label, features):
    """``(pyarrow.parquet.ParquetFile, feature columns, rows)`` of ``path``, from its schema and metadata alone;
    a missing query, label or feature column is named with the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if os.path.isdir(path):
        raise ValidationError(f"{path}: is a directory; give its Parquet files (a list of paths is one shard)")
    if not os.path.exists(path):
        raise ValidationError(f"{path}: no such file")
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise ValidationError(f"{path}: not a readable Parquet file ({_first_line(exc)})") from None
    names = list(pf.schema_arrow.names)
    index = [c for c in (pf.schema_arrow.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)]
    for what, column in (("query", qid), ("label", label)):
        if column not in names:
            raise ValidationError(f"{path}: no {what} column {column!r} (columns: {_shown(names)})")
    if features is None:
        return pf, [c for c in names if c not in (qid, label) and c not in index], pf.metadata.num_rows
    missing = [c for c in features if c not in names]
    if missing:
        raise ValidationError(f"{path}: no feature column {missing[0]!r} (columns: {_shown(names)})")
    return pf, list(features), pf.metadata.num_rows


def _read_parquet(path, pf, qid, label, columns, dtype):
    """The :class:`~cvxrank.data.RankingData` of one Parquet file (:meth:`~cvxrank.data.RankingData.from_frame`;
    its messages name the file)."""
    import pyarrow as pa

    from cvxrank.data import RankingData

    try:
        table = pf.read(columns=[qid, label, *columns])
    except (OSError, pa.ArrowException) as exc:
        raise ValidationError(f"{path}: cannot be read ({_first_line(exc)})") from None
    df = table.to_pandas(ignore_metadata=True, split_blocks=True, self_destruct=True)
    del table
    try:
        return RankingData.from_frame(df, label=label, qid=qid, features=columns, dtype=dtype)
    except ValidationError as exc:
        raise ValidationError(f"{path}: {exc}") from None


#: Peak bytes per feature value of a partition (already in memory) becoming a RankingData: a copy of the feature
#: columns and ``X``. Measured up to 12 B (200,000 x 136 features, float32 ``X``, pandas 2.0; float64 ``X`` under
#: pandas 3.1 shares the frame's block: 1 B); set above.
FRAME_BYTES_PER_VALUE = 16


def _frame_shard(df, name, qid, label, features, dense, dtype, client_pid):
    """One partition of a dask DataFrame (a pandas DataFrame on the worker) as a shard; an empty one holds no data.
    The query column may be the index (after ``set_index``)."""
    from cvxrank._memory import check_memory
    from cvxrank.data import RankingData

    _worker_budget([name], client_pid)
    if qid not in df.columns and qid in df.index.names:
        df = df.reset_index(level=qid)
    for what, column in (("query", qid), ("label", label)):
        if column not in df.columns:
            raise ValidationError(f"{name}: no {what} column {column!r} (columns: {_shown(list(df.columns))})")
    columns = [c for c in df.columns if c not in (qid, label)] if features is None else list(features)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValidationError(f"{name}: no feature column {missing[0]!r} (columns: {_shown(list(df.columns))})")
    if len(df) == 0:
        return _frame_result(None, [name], columns, dense, dtype)
    check_memory(FRAME_BYTES_PER_VALUE * len(df) * len(columns), f"{name}: {len(df):,} rows x {len(columns)} "
                 "feature columns as X", "raise the worker's memory_limit, use more partitions, or pass dtype=float32")
    try:
        data = RankingData.from_frame(df, label=label, qid=qid, features=columns, dtype=dtype)
    except ValidationError as exc:
        raise ValidationError(f"{name}: {exc}") from None
    return _frame_result(data, [name], columns, dense, dtype)


def _frame_result(data, names, columns, dense, dtype):
    """The shard of a frame's documents (``X`` in CSR when ``dense=False``), with its feature columns."""
    if data is not None and dense is False:
        from cvxrank.data import RankingData

        data = RankingData(sp.csr_matrix(data.X), data.y, data.qid, dtype=dtype)
    shard = _Shard(None, files=names)
    shard.data = data
    shard.columns = list(columns)
    return shard


def _shown(names, k: int = 10) -> str:
    return repr(list(names)[:k])[:-1] + (", ...]" if len(names) > k else "]")


def _first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _column_mismatch(name, found, first, expected) -> str:
    """The one line naming the first feature column in which ``found`` (of ``name``) differs from ``expected``."""
    k = next((i for i, (a, b) in enumerate(zip(found, expected)) if a != b), min(len(found), len(expected)))
    if k < len(found) and k < len(expected):
        what = f"feature column {k} is {found[k]!r}, not {expected[k]!r} as in {first}"
    elif k < len(found):
        what = f"has an extra feature column {found[k]!r} (column {k}), which {first} lacks"
    else:
        what = f"lacks the feature column {expected[k]!r} (column {k}) of {first}"
    return f"{name}: {what}; every shard needs the same feature columns in the same order (or pass features=[...])"


def _summary(shard):
    """What the client needs of a shard: no ``X``, ``O(queries x grades)`` numbers (and a frame's feature column
    names); None for an empty partition."""
    from cvxrank.native.costs import grade_counts

    data = shard.data
    if data is None:  # an empty partition
        return None
    grades, _, counts = grade_counts(data)
    return {"n_features": int(data.X.shape[1]), "query_ids": data.query_ids, "grades": grades, "counts": counts,
            "n_documents": int(data.n_documents), "x_bytes": int(data.X.data.nbytes if sp.issparse(data.X)
                                                                   else data.X.nbytes),
            "columns": getattr(shard, "columns", None)}


def _build_shard(shard, width, grades, values):
    """The shard's oracle on the agreed feature count and grades; the reader's copy is dropped."""
    from cvxrank.native.oracle import PairFreeOracle

    data = shard.data
    X = data.X
    if X.shape[1] < width:
        X = (sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width)) if sp.issparse(X)
             else np.hstack([X, np.zeros((X.shape[0], width - X.shape[1]), dtype=X.dtype)]))
    codes = np.searchsorted(grades, data.y)
    oracle = PairFreeOracle(X, data.query_index, codes, values, grades=grades, query_ids=data.query_ids, threads=1)
    shard.data = None
    return _Shard(oracle, files=shard.files)


# -- on the client -------------------------------------------------------------
@dataclass
class ShardReading:
    """Shards read on the workers (:func:`read_shards`): futures of their data and what the client knows of them.

    Attributes
    ----------
    read : list of distributed.Future
        One per shard: an object whose ``data`` is the shard's :class:`~cvxrank.data.RankingData`, on a worker.
    partitions : list of distributed.Future
        A dask DataFrame's partitions (empty for files); released with :meth:`release`.
    summaries : list of dict
        Per shard: ``n_features``, ``query_ids``, ``grades``, ``counts`` (documents per query and grade),
        ``n_documents``, ``x_bytes``, ``columns`` (a frame's feature columns, else None).
    groups : list of list of str
        The shards' files (``["partition i"]`` for a DataFrame's non-empty partitions).
    width : int
        The agreed feature count (LETOR: the largest index over all shards, or ``n_features``).
    query_ids : ndarray
        Every shard's query ids, shard after shard (no query in two shards).
    frame : bool
        Whether the shards are a DataFrame's partitions.
    tag : str
        The random part of the tasks' keys.
    """

    read: list
    partitions: list
    summaries: list
    groups: list
    width: int
    query_ids: np.ndarray
    frame: bool
    tag: str

    def release(self) -> None:
        """Let the cluster forget the read tasks' results once the shards built on them are held (the tasks
        stay known to the scheduler: a lost shard is read again)."""
        for f in (*self.read, *self.partitions):
            f.release()


def read_shards(client, files, *, n_features: int | None = None, dense: bool | None = None, dtype=np.float64,
                timeout: float = DEFAULT_TIMEOUT, qid: str = "qid", label: str = "y",
                features=None) -> ShardReading:
    """Read shards on the workers and check them on the client, as :func:`files_oracle` does before it builds
    its oracles: the same readers, arguments and checks (a query in two shards, feature columns that differ,
    the feature count, an empty DataFrame).

    The parameters are those of :func:`files_oracle` without the costs. The caller builds what it needs on the
    shards (``client.submit(build, future, ...)`` on :attr:`ShardReading.read`), then calls
    :meth:`ShardReading.release`.

    Raises
    ------
    ValidationError
        As :func:`files_oracle` (the read futures are then released).
    """
    return _read_shards(client, _shard_input(client, files, qid, label, features, n_features), n_features, dense,
                        dtype, timeout)


def _shard_input(client, files, qid, label, features, n_features):
    """The checks of the arguments alone (nothing read): ``(files, frame, kind, groups, qid, label, features)``."""
    _check_client(client)
    frame = _is_dask_frame(files)
    groups = None
    if frame:
        kind = "frame"
    else:
        _refuse_objects(files)
        groups = shard_groups(files)
        kind = _shard_kind(groups)
    if kind == "letor":
        if (qid, label, features) != ("qid", "y", None):
            raise ValidationError("qid=, label= and features= name the columns of Parquet files or a dask DataFrame; "
                                  "LETOR files carry their own fields")
    else:
        features = _check_column_names(qid, label, features)
        if frame:
            _check_frame(files, qid, label, features)
        if n_features is not None:
            raise ValidationError("n_features applies to LETOR files; the width of Parquet files and DataFrames is "
                                  "their feature columns (pass features=[...] to choose them)")
    return files, frame, kind, groups, qid, label, features


def _read_shards(client, source, n_features, dense, dtype, timeout) -> ShardReading:
    """Submit the readers, gather the summaries, check them (:func:`read_shards`)."""
    files, frame, kind, groups, qid, label, features = source
    if n_features is not None and (not isinstance(n_features, (int, np.integer)) or n_features < 1):
        raise ValidationError(f"n_features must be a positive integer, got {n_features!r}")
    _check_workers(client)
    tag, pid = uuid.uuid4().hex[:8], os.getpid()
    partitions = []
    if kind == "letor":
        read = [client.submit(_read_shard, g, dense, dtype, pid, key=f"cvxrank-read-{i}-{tag}", pure=False)
                for i, g in enumerate(groups)]
    elif kind == "parquet":
        read = [client.submit(_read_parquet_shard, g, qid, label, features, dense, dtype, pid,
                              key=f"cvxrank-read-{i}-{tag}", pure=False) for i, g in enumerate(groups)]
    else:  # each partition computed where it lands, then converted there
        partitions = client.compute(files.to_delayed())
        groups = [[f"partition {i}"] for i in range(len(partitions))]
        read = [client.submit(_frame_shard, f, g[0], qid, label, features, dense, dtype, pid,
                              key=f"cvxrank-read-{i}-{tag}", pure=False) for i, (f, g) in enumerate(zip(partitions, groups))]
    try:
        summaries = _gather(client, [client.submit(_summary, f, pure=False) for f in read], timeout, "reading")
        if frame:  # empty partitions hold no shard
            kept = [i for i, s in enumerate(summaries) if s is not None]
            if not kept:
                raise ValidationError("the dask DataFrame has no rows")
            read, summaries, groups = [read[i] for i in kept], [summaries[i] for i in kept], [groups[i] for i in kept]
        if kind != "letor":
            _check_columns(summaries, groups)
        width = max(s["n_features"] for s in summaries)
        if n_features is not None:
            if width > n_features:
                i = next(i for i, s in enumerate(summaries) if s["n_features"] > n_features)
                raise ValidationError(f"{', '.join(groups[i])}: feature index {summaries[i]['n_features']} above "
                                      f"n_features={n_features}")
            width = int(n_features)
        query_ids = _concatenate_ids([s["query_ids"] for s in summaries])
        _check_overlap(query_ids, summaries, groups, qid if frame else None)
    except BaseException:
        for f in (*read, *partitions):
            f.release()
        raise
    return ShardReading(read, partitions, summaries, groups, width, query_ids, frame, tag)


def files_oracle(client, files, *, tau=None, mu=None, n_features: int | None = None, dense: bool | None = None,
                 dtype=np.float64, timeout: float = DEFAULT_TIMEOUT, qid: str = "qid", label: str = "y",
                 features=None) -> DaskOracle:
    """A :class:`~cvxrank.native.dask.DaskOracle` over shards read on the workers: LETOR/SVMlight files, Parquet
    files, or the partitions of a dask DataFrame.

    Parameters
    ----------
    client : dask.distributed.Client
    files : sequence or dask.dataframe.DataFrame
        One item per shard: a path, or a list of paths read together. A path ending in ``.parquet`` or ``.pq``
        is a Parquet file (read with pyarrow, then :meth:`~cvxrank.data.RankingData.from_frame`), any other a
        LETOR/SVMlight file (plain, gzip, bzip2 or xz); one call takes one kind. Or a dask DataFrame, one row
        per document: each partition is one shard, computed on the workers (never on the client). Queries must
        not cross shards (nor partitions).
    tau, mu : optional
        As for :class:`~cvxrank.problem.RankingProblem` (``μ = "balanced"`` over all shards' queries).
    n_features : int, optional
        LETOR only: the feature count; default the largest index over all shards. The width of Parquet files
        and DataFrames is their feature columns (giving ``n_features`` is refused).
    dense : bool, optional
        As for :func:`cvxrank.data.load_letor`, on each worker; Parquet files and partitions give a dense ``X``
        unless ``dense=False`` (then CSR).
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Storage of ``X`` on the workers.
    timeout : float
        Seconds a round may take (a safety net).
    qid, label : str, default "qid", "y"
        Parquet and DataFrames: the query column and the grade column (the names of
        :class:`~cvxrank.data.RankingData`'s fields). A DataFrame's query column may be its index (after
        ``set_index``).
    features : sequence of str, optional
        Parquet and DataFrames: the feature columns, in order. Default every column but ``qid`` and ``label``
        (and a Parquet file's stored pandas index); every shard must then have the same columns in the same
        order.

    Returns
    -------
    DaskOracle
        Its ``files`` are the shards' files (``["partition i"]`` for a DataFrame's non-empty partitions), its
        ``columns`` the feature column names of ``X`` (None for LETOR files), its ``x_bytes`` the bytes of ``X``
        over all shards.

    Raises
    ------
    ValidationError
        A query in two shards (named with both shards' files, or both partitions), a shard without pairs, an
        index beyond ``n_features``, a malformed file (the reader's message names the file and line), a missing
        query, label or feature column (named with its file or partition), feature columns that differ between
        shards (the file and the first differing column), LETOR and Parquet files in one call, a shard whose
        reading would exceed its worker's memory (``MemoryBudgetError``).
    """
    source = _shard_input(client, files, qid, label, features, n_features)
    costs = Costs.coerce(None, tau=tau, mu=mu)
    shards = _read_shards(client, source, n_features, dense, dtype, timeout)
    read, partitions, summaries, groups = shards.read, shards.partitions, shards.summaries, shards.groups
    width, query_ids, frame, tag = shards.width, shards.query_ids, shards.frame, shards.tag
    try:
        grades = np.unique(np.concatenate([s["grades"] for s in summaries]))
        G = grades.shape[0]
        counts = []
        for s in summaries:
            c = np.zeros((s["counts"].shape[0], G), dtype=np.int64)
            c[:, np.searchsorted(grades, s["grades"])] = s["counts"]
            counts.append(c)
        values, n_pairs = _weights(costs, grades, query_ids, np.concatenate(counts), groups,
                                   [c.shape[0] for c in counts], frame)
        built, start = [], 0
        for i, (f, c) in enumerate(zip(read, counts)):
            stop = start + c.shape[0]
            built.append(client.submit(_build_shard, f, width, grades, values[start:stop],
                                       key=f"cvxrank-shard-{i}-{tag}", pure=False))
            start = stop
        _gather(client, [client.submit(lambda s: None, f, pure=False) for f in built], timeout, "building the shards")
    except BaseException:
        for f in (*read, *partitions):
            f.release()
        raise
    oracle = DaskOracle.__new__(DaskOracle)
    oracle.shards = []
    start = 0
    for c in counts:
        oracle.shards.append((start, start + c.shape[0]))
        start += c.shape[0]
    oracle._documents = None
    oracle._setup(client, built, grades=grades, query_ids=query_ids, n_documents=sum(s["n_documents"] for s in summaries),
                  n_features=width, n_pairs=int(n_pairs.sum()), total_weight=float(np.sum(values * n_pairs)),
                  timeout=timeout, files=groups)
    oracle.x_bytes = sum(s["x_bytes"] for s in summaries)
    oracle.columns = summaries[0]["columns"]
    for f in (*read, *partitions):  # the tasks stay known to the scheduler: a lost shard is made again
        f.release()
    return oracle


#: File names read as Parquet; any other is a LETOR/SVMlight file (plain or compressed).
PARQUET_SUFFIXES = (".parquet", ".pq")


def _is_dask_frame(obj) -> bool:
    dd = sys.modules.get("dask.dataframe")  # a dask DataFrame means dask.dataframe is imported
    return dd is not None and isinstance(obj, dd.DataFrame)


def _refuse_objects(files) -> None:
    """Refuse what is neither paths nor a dask DataFrame (a pandas frame would be iterated as column names)."""
    pandas = sys.modules.get("pandas")  # not imported: files is no pandas object
    if pandas is not None and isinstance(files, pandas.DataFrame):
        raise ValidationError("files is a pandas DataFrame, in the client's memory: pass dask.dataframe.from_pandas("
                              "df, npartitions=...) (whole queries in each partition), or RankingData.from_frame(df, "
                              "...) to solve(..., client=)")
    if (hasattr(files, "to_delayed") or hasattr(files, "npartitions")
            or (pandas is not None and isinstance(files, (pandas.Series, pandas.Index)))):
        raise ValidationError(f"files must be paths (a list per shard) or a dask DataFrame, got {type(files).__name__}")


def _shard_kind(groups) -> str:
    """``"parquet"`` or ``"letor"`` by the files' names; both in one call is refused."""
    parquet = [p for g in groups for p in g if p.lower().endswith(PARQUET_SUFFIXES)]
    other = [p for g in groups for p in g if not p.lower().endswith(PARQUET_SUFFIXES)]
    if parquet and other:
        raise ValidationError(f"Parquet and LETOR files in one call ({parquet[0]}, {other[0]}): give shards of one "
                              "kind (convert the others, or solve them apart)")
    return "parquet" if parquet else "letor"


def _check_column_names(qid, label, features):
    """``features`` as a list of distinct names; ``qid`` and ``label`` names of two columns."""
    for what, name in (("qid", qid), ("label", label)):
        if not isinstance(name, str) or not name:
            raise ValidationError(f"{what} must be a column name (a non-empty string), got {name!r}")
    if qid == label:
        raise ValidationError(f"qid and label are the same column {qid!r}")
    if features is None:
        return None
    if isinstance(features, str) or not hasattr(features, "__iter__"):
        raise ValidationError(f"features must be a list of column names, got {features!r}")
    features = list(features)
    if not features:
        raise ValidationError("features is empty: give feature columns, or None for every other column")
    bad = [c for c in features if not isinstance(c, str)]
    if bad:
        raise ValidationError(f"features must be column names (strings), got {bad[0]!r}")
    twice = [c for c in features if features.count(c) > 1]
    if twice:
        raise ValidationError(f"feature column {twice[0]!r} is given twice")
    clash = [c for c in features if c in (qid, label)]
    if clash:
        raise ValidationError(f"feature column {clash[0]!r} is the {'qid' if clash[0] == qid else 'label'} column")
    return features


def _check_frame(ddf, qid, label, features) -> None:
    """The dask DataFrame's columns (its metadata, nothing computed)."""
    columns = list(ddf.columns)
    if qid not in columns and qid != ddf.index.name:
        raise ValidationError(f"the dask DataFrame has no query column {qid!r} (columns: {_shown(columns)}); "
                              "pass qid=")
    if label not in columns:
        raise ValidationError(f"the dask DataFrame has no label column {label!r} (columns: {_shown(columns)}); "
                              "pass label=")
    if features is not None:
        missing = [c for c in features if c not in columns]
        if missing:
            raise ValidationError(f"the dask DataFrame has no feature column {missing[0]!r} (columns: "
                                  f"{_shown(columns)})")


def _check_columns(summaries, groups) -> None:
    """Every shard's feature columns those of the first, in the same order."""
    first = summaries[0]["columns"]
    for s, g in zip(summaries[1:], groups[1:]):
        if s["columns"] != first:
            raise ValidationError(_column_mismatch(", ".join(g), s["columns"], ", ".join(groups[0]), first))


def _concatenate_ids(ids):
    """All shards' query ids in one array; ids of types that do not compare are refused."""
    try:
        out = np.concatenate(ids)
        np.unique(out)
    except TypeError:
        kinds = sorted({type(q).__name__ for a in ids for q in a[:1].tolist()})
        raise ValidationError(f"the shards' query ids are of types that do not compare ({', '.join(kinds)}): give "
                              "every shard query ids of one type") from None
    return out


def _check_workers(client) -> None:
    """Refuse a cluster without workers, or whose workers' ``memory_limit`` their own process nearly fills
    (the nanny would restart them forever, and no shard would ever be read)."""
    from cvxrank._memory import format_bytes

    workers = client.scheduler_info().get("workers", {})
    if not workers:
        raise ValidationError("the dask cluster has no worker (start some, or wait for them: "
                              "client.wait_for_workers(n))")
    for address, info in workers.items():
        limit, used = info.get("memory_limit") or 0, (info.get("metrics") or {}).get("memory") or 0
        if limit and used >= 0.7 * limit:
            raise ValidationError(f"dask worker {address}: memory_limit {format_bytes(limit)} is nearly filled by the "
                                  f"worker process itself ({format_bytes(used)}); raise memory_limit")


def _gather(client, futures, timeout, what):
    try:
        import distributed

        distributed.wait(futures, timeout=timeout)
    except TimeoutError:
        raise ValidationError(f"no answer from the dask workers within {timeout:g} s ({what})") from None
    except ImportError:  # pragma: no cover
        pass
    try:
        return client.gather(futures)
    except Exception as exc:
        if type(exc).__name__ == "KilledWorker":
            from cvxrank._memory import MemoryBudgetError

            raise MemoryBudgetError(f"{what}: a shard killed every worker that tried it (most often a memory_limit too "
                                    "small for the shard): raise memory_limit, split the shard into more files, or "
                                    "pass dtype=float32") from None
        raise


def _check_overlap(query_ids, summaries, groups, column=None):
    """Refuse a query in two shards, naming it and both shards (their files, or ``partition i`` of a DataFrame
    whose query ``column`` is given)."""
    ids, counts = np.unique(query_ids, return_counts=True)
    if np.all(counts == 1):
        return
    qid = ids[np.argmax(counts > 1)]
    where = [i for i, s in enumerate(summaries) if np.isin(qid, s["query_ids"])]
    shown = qid.item() if hasattr(qid, "item") else qid
    if column is not None:
        names = " and ".join(groups[i][0] for i in where[:2])
        raise ValidationError(f"query {shown!r} is in more than one partition: {names}; a query must sit in one "
                              f"partition (its pairs would be lost): ddf.set_index({column!r}) or "
                              f"ddf.shuffle({column!r}) first, or repartition so each query sits in one partition")
    names = "; ".join(f"shard {i} ({', '.join(groups[i])})" for i in where[:2])
    raise ValidationError(f"query {shown!r} is in more than one shard: {names}; a query must sit in one shard "
                          "(its pairs would be lost)")


def _weights(costs, grades, query_ids, counts, groups, per_shard, frame=False):
    """The cost table's values over all shards (as :func:`cvxrank.native.costs.cost_table` from the counts)."""
    from cvxrank.native.costs import _cell_pairs, _tau_matrix

    n_pairs = _cell_pairs(counts)
    per_query = n_pairs.sum(axis=(1, 2))
    start = 0
    for group, q in zip(groups, per_shard):
        if per_query[start:start + q].sum() == 0:
            unit, advice = (("partition", "drop its rows or repartition") if frame
                            else ("shard", "drop it or merge it with another shard"))
            raise ValidationError(f"{', '.join(group)}: the {unit} has no pair (each of its {q} queries has a "
                                  f"single grade); {advice}")
        start += q
    tau_m = _tau_matrix(costs, grades, n_pairs.sum(axis=0) > 0)
    mu_v = costs.mu_per_query(query_ids, per_query)
    values = mu_v[:, None, None] * tau_m[None, :, :] * (n_pairs > 0)
    if not np.any(values > 0):
        raise ValidationError("every pair has weight 0: nothing to learn")
    return values, n_pairs


@dataclass
class FilesSolution:
    """A certified solve over shards (objectives on the hinge scale ``L`` of (9)/SIGIR).

    ``gap_L = objective - lower_bound`` bounds ``L(w) - L(w*)`` and ``distance_bound = sqrt(gap_L / λ)``
    bounds ``‖w - w*‖`` (``L`` is ``2λ``-strongly convex), as in :class:`~cvxrank.solution.SolveResult`.
    ``n_shards`` counts the shards solved over (a DataFrame's empty partitions hold none).
    """

    w: np.ndarray
    objective: float
    lower_bound: float
    status: str
    lam: float
    oracle_calls: int
    iterations: int
    rounds: int
    bytes_sent: int
    bytes_received: int
    setup_time: float
    solve_time: float
    n_documents: int
    n_pairs: int
    history_rows: list = field(repr=False)
    n_shards: int = 0

    @property
    def history(self):
        """The run's history (:attr:`~cvxrank.native.cutting_plane.CuttingPlaneRun.history`) as a DataFrame, built
        from :attr:`history_rows` when read: the client imports pandas only then."""
        import pandas as pd

        return pd.DataFrame(self.history_rows)

    @property
    def gap_L(self) -> float:
        return max(self.objective - self.lower_bound, 0.0)

    @property
    def relative_gap(self) -> float:
        return self.gap_L / self.objective if self.objective > 0 else 0.0

    @property
    def distance_bound(self) -> float:
        return math.sqrt(self.gap_L / self.lam)


def solve_files(client, files=None, *, tau=None, mu=None, lam: float = 0.5, tol: float = 1e-6,
                loss: str = "hinge", oracle: DaskOracle | None = None, n_features: int | None = None,
                dense: bool | None = None, dtype=np.float64, timeout: float = DEFAULT_TIMEOUT, qid: str = "qid",
                label: str = "y", features=None, **options) -> FilesSolution:
    """The certified solve of (9)/SIGIR (``loss="hinge"``) or its squared-hinge variant over shards read on the
    workers (LETOR or Parquet files, or a dask DataFrame's partitions).

    ``oracle`` (from :func:`files_oracle`) re-uses shards already on the workers (a ``λ`` path: pass
    ``warm_start_w``); otherwise ``files`` are read (:func:`files_oracle`, with ``n_features``, ``dense``,
    ``dtype``, ``timeout``, ``qid``, ``label`` and ``features``). ``options`` go to
    :func:`~cvxrank.native.cutting_plane.cutting_plane` (hinge: ``max_iter``, ``warm_start_w``, ``newton_gap``,
    ``time_limit``, ...) or :func:`~cvxrank.native.truncated_newton.truncated_newton` (squared hinge). Status
    ``"optimal"`` when the certified relative gap is at most ``tol``.
    """
    from cvxrank.native.cutting_plane import cutting_plane
    from cvxrank.native.truncated_newton import truncated_newton

    if loss not in ("hinge", "squared_hinge"):
        raise ValidationError(f"loss must be 'hinge' or 'squared_hinge', got {loss!r}")
    lam = check_lam(lam)
    t0 = time.perf_counter()
    if oracle is None:
        if files is None:
            raise ValidationError("give files or an oracle")
        oracle = files_oracle(client, files, tau=tau, mu=mu, n_features=n_features, dense=dense, dtype=dtype,
                              timeout=timeout, qid=qid, label=label, features=features)
    elif files is not None or tau is not None or mu is not None:
        raise ValidationError("with oracle=, the files and costs are the oracle's: pass neither files nor tau/mu")
    setup = time.perf_counter() - t0
    rounds, sent, received = oracle.rounds, oracle.bytes_sent, oracle.bytes_received
    if loss == "hinge":
        run = cutting_plane(oracle, lam, tol=tol, **options)
    else:
        oracle.margins = None  # the papers' margin of 1
        run = truncated_newton(oracle, lam, tol=tol, **options)
    status = "optimal" if run.relative_gap <= tol else run.status
    return FilesSolution(w=run.w, objective=run.objective, lower_bound=run.lower_bound, status=status, lam=lam,
                         oracle_calls=run.oracle_calls, iterations=run.iterations, rounds=oracle.rounds - rounds,
                         bytes_sent=oracle.bytes_sent - sent, bytes_received=oracle.bytes_received - received,
                         setup_time=setup, solve_time=run.solve_time, n_documents=oracle.n_documents,
                         n_pairs=oracle.n_pairs, history_rows=run.history_rows, n_shards=len(oracle.shards))
