"""Train over LETOR/SVMlight files read on the dask workers: ``X`` never reaches the client.

:func:`files_oracle` gives every shard (one file, or a list of files, plain or compressed) to a worker,
which reads it with :func:`cvxrank.data.load_letor` (the same strict checks, and, in a worker process, the
worker's ``memory_limit`` as the memory budget), and sends back only what the cost table needs: its query
ids, grades and documents per (query, grade). The client checks that no query crosses two shards (naming
the query and the files), agrees the feature count (the largest index over all shards, or ``n_features``)
and the grades, builds the weights ``τ_k μ_q`` of (9)/SIGIR (``μ = "balanced"`` needs every query's pair
count: ``O(queries x grades)`` numbers), and each worker builds its
:class:`~cvxrank.native.oracle.PairFreeOracle` where the data are. The result is a
:class:`~cvxrank.native.dask.DaskOracle`: the planes and the Newton phase run over it unchanged.

A shard is a dask task: if its worker dies, dask reads its files again on another worker (the solve then
goes on, slower for that call); a round that gets no answer within ``timeout`` seconds raises
:class:`~cvxrank.exceptions.SolverError`.

:func:`solve_files` is the one-call front end (the certified hinge solve of ``solve(problem,
"cutting_plane")``, without a :class:`~cvxrank.problem.RankingProblem` on the client).

Examples
--------
>>> from distributed import Client, LocalCluster                                  # doctest: +SKIP
>>> client = Client(LocalCluster(n_workers=2))                                    # doctest: +SKIP
>>> res = solve_files(client, ["shard-0.letor.gz", "shard-1.letor.gz"], mu="balanced", lam=0.1)  # doctest: +SKIP
>>> res.w, res.relative_gap, res.distance_bound                                   # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from cvxrank.costs import Costs, check_lam
from cvxrank.exceptions import ValidationError
from cvxrank.native.dask import DEFAULT_TIMEOUT, DaskOracle, _check_client, _Shard

__all__ = ["FilesSolution", "files_oracle", "shard_groups", "solve_files"]


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
def _read_shard(paths, dense, dtype, client_pid):
    """Read one shard's files on a worker; its worker's ``memory_limit`` is the memory budget in a worker process."""
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
            raise _memory.MemoryBudgetError(f"{', '.join(paths)}: the worker already uses {_memory.format_bytes(used)}"
                                            f", its memory_limit is {_memory.format_bytes(limit)}; raise memory_limit")
        _memory.set_memory_budget(int(limit - used))
    parts = _read_plain(paths, dense, dtype)
    if len(parts) == 1:
        data = parts[0]
    else:
        from cvxrank.data import RankingData

        X = sp.vstack([p.X for p in parts], format="csr") if sp.issparse(parts[0].X) else np.vstack([p.X for p in parts])
        data = RankingData(X, np.concatenate([p.y for p in parts]), np.concatenate([p.qid for p in parts]),
                           dtype=dtype)
        del parts, X
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


def _summary(shard):
    """What the client needs of a shard: no ``X``, ``O(queries x grades)`` numbers."""
    from cvxrank.native.costs import grade_counts

    data = shard.data
    grades, _, counts = grade_counts(data)
    return {"n_features": int(data.X.shape[1]), "query_ids": data.query_ids, "grades": grades, "counts": counts,
            "n_documents": int(data.n_documents), "x_bytes": int(data.X.data.nbytes if sp.issparse(data.X)
                                                                   else data.X.nbytes)}


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
def files_oracle(client, files, *, tau=None, mu=None, n_features: int | None = None, dense: bool | None = None,
                 dtype=np.float64, timeout: float = DEFAULT_TIMEOUT) -> DaskOracle:
    """A :class:`~cvxrank.native.dask.DaskOracle` over shards read from LETOR files on the workers.

    Parameters
    ----------
    client : dask.distributed.Client
    files : sequence
        One item per shard: a path, or a list of paths read together (plain, gzip, bzip2 or xz). Queries
        must not cross shards.
    tau, mu : optional
        As for :class:`~cvxrank.problem.RankingProblem` (``μ = "balanced"`` over all shards' queries).
    n_features : int, optional
        Feature count; default the largest index over all shards.
    dense, dtype
        As for :func:`cvxrank.data.load_letor`, on each worker.
    timeout : float
        Seconds a round may take (a safety net).

    Raises
    ------
    ValidationError
        A query in two shards (named with both shards' files), a shard without pairs, an index beyond
        ``n_features``, a malformed file (the reader's message names the file and line), a shard whose reading
        would exceed its worker's memory (``MemoryBudgetError``).
    """
    _check_client(client)
    groups = shard_groups(files)
    costs = Costs.coerce(None, tau=tau, mu=mu)
    if n_features is not None and (not isinstance(n_features, (int, np.integer)) or n_features < 1):
        raise ValidationError(f"n_features must be a positive integer, got {n_features!r}")
    _check_workers(client)
    tag = uuid.uuid4().hex[:8]
    read = [client.submit(_read_shard, g, dense, dtype, os.getpid(), key=f"cvxrank-read-{i}-{tag}", pure=False)
            for i, g in enumerate(groups)]
    try:
        summaries = _gather(client, [client.submit(_summary, f, pure=False) for f in read], timeout, "reading")
        width = max(s["n_features"] for s in summaries)
        if n_features is not None:
            if width > n_features:
                i = next(i for i, s in enumerate(summaries) if s["n_features"] > n_features)
                raise ValidationError(f"{', '.join(groups[i])}: feature index {summaries[i]['n_features']} above "
                                      f"n_features={n_features}")
            width = int(n_features)
        query_ids = np.concatenate([s["query_ids"] for s in summaries])
        _check_overlap(query_ids, summaries, groups)
        grades = np.unique(np.concatenate([s["grades"] for s in summaries]))
        G = grades.shape[0]
        counts = []
        for s in summaries:
            c = np.zeros((s["counts"].shape[0], G), dtype=np.int64)
            c[:, np.searchsorted(grades, s["grades"])] = s["counts"]
            counts.append(c)
        values, n_pairs = _weights(costs, grades, query_ids, np.concatenate(counts), groups,
                                   [c.shape[0] for c in counts])
        built, start = [], 0
        for i, (f, c) in enumerate(zip(read, counts)):
            stop = start + c.shape[0]
            built.append(client.submit(_build_shard, f, width, grades, values[start:stop],
                                       key=f"cvxrank-shard-{i}-{tag}", pure=False))
            start = stop
        _gather(client, [client.submit(lambda s: None, f, pure=False) for f in built], timeout, "building the shards")
    except BaseException:
        for f in read:
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
    for f in read:
        f.release()
    return oracle


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


def _check_overlap(query_ids, summaries, groups):
    ids, first, counts = np.unique(query_ids, return_index=True, return_counts=True)
    if np.all(counts == 1):
        return
    qid = ids[np.argmax(counts > 1)]
    where = [i for i, s in enumerate(summaries) if np.isin(qid, s["query_ids"])]
    names = "; ".join(f"shard {i} ({', '.join(groups[i])})" for i in where[:2])
    raise ValidationError(f"query {qid.item()!r} is in more than one shard: {names}; a query must sit in one shard "
                          "(its pairs would be lost)")


def _weights(costs, grades, query_ids, counts, groups, per_shard):
    """The cost table's values over all shards (as :func:`cvxrank.native.costs.cost_table` from the counts)."""
    from cvxrank.native.costs import _cell_pairs, _tau_matrix

    n_pairs = _cell_pairs(counts)
    per_query = n_pairs.sum(axis=(1, 2))
    start = 0
    for group, q in zip(groups, per_shard):
        if per_query[start:start + q].sum() == 0:
            raise ValidationError(f"{', '.join(group)}: the shard has no pair (each of its {q} queries has a "
                                  "single grade); drop it or merge it with another shard")
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
    history: pd.DataFrame = field(repr=False)

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
                dense: bool | None = None, dtype=np.float64, timeout: float = DEFAULT_TIMEOUT,
                **options) -> FilesSolution:
    """The certified solve of (9)/SIGIR (``loss="hinge"``) or its squared-hinge variant over shards read from
    files on the workers.

    ``oracle`` (from :func:`files_oracle`) re-uses shards already on the workers (a ``λ`` path: pass
    ``warm_start_w``); otherwise ``files`` are read. ``options`` go to
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
                              timeout=timeout)
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
                         n_pairs=oracle.n_pairs, history=run.history)
