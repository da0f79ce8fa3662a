"""Newton's method for ListMLE / cs-RgList over shards read on the dask workers: ``X`` never reaches the client.

Problem (3) of He et al. is a sum over queries,

.. math::

    f(w) = \\tfrac12\\|w\\|^2 + \\frac{C}{m} \\sum_{s} L_s(w), \\qquad
    L_s(w) = \\sum_{i \\in s} \\sum_j \\frac{U(i,j)}{V(i,j)}\\,\\ell_{ij}(w),

and so are its gradient (4) and Hessian (5): a query's terms only involve its own documents. The shards
``s`` (LETOR or Parquet files, or a dask DataFrame's partitions, read on the workers by the readers of
:mod:`cvxrank.native.dask_files`, which also refuse a query in two shards) each build their
:class:`~cvxrank.listwise.loss.ListwiseLayout` once, where the data are. Every Newton iteration sends ``w``
(``n`` numbers) and gets back each shard's raw sums ``L_s``, ``∇L_s`` and ``∇²L_s`` (``1 + n + n²`` numbers,
:func:`~cvxrank.listwise.loss.listwise_loss_derivatives`); the client adds them, adds ``½‖w‖²`` and scales
by ``C/m`` (:func:`~cvxrank.listwise.loss.objective_from_sums`), with ``m`` every query of every shard
(single-document ones included, as :func:`~cvxrank.listwise.loss.listwise_layout` counts them), and takes the
Cholesky step and the Armijo line search of :func:`~cvxrank.listwise.newton.solve_newton` (its trial values
are sums of ``L_s`` alone: one number a shard). The iterates are those of the local solver up to the order of
floating-point additions; the certificate (``‖w − w*‖ ≤ ‖∇f(w)‖``, ``f(w) − f* ≤ ½‖∇f(w)‖²``) is computed
from the summed gradient, as :func:`~cvxrank.listwise.result.make_result` does locally.

Examples
--------
>>> from distributed import Client, LocalCluster                                        # doctest: +SKIP
>>> client = Client(LocalCluster(n_workers=2))                                          # doctest: +SKIP
>>> res = solve_newton_files(client, ["shard-0.letor.gz", "shard-1.letor.gz"], C=10.0, pcf=3.0)  # doctest: +SKIP
>>> res.status, res.w, res.distance_bound                                               # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from cvxrank._validation import check_tol
from cvxrank.exceptions import ValidationError
from cvxrank.listwise.loss import (
    _as_w,
    check_C,
    check_pcf,
    listwise_layout,
    listwise_loss,
    listwise_loss_derivatives,
    objective_from_sums,
)
from cvxrank.listwise.newton import (
    _check_max_iter,
    _version,
    finish_history,
    newton_iterations,
)
from cvxrank.listwise.result import ListwiseResult, result_from_sums
from cvxrank.native.dask import DEFAULT_TIMEOUT, DaskOracle
from cvxrank.native.dask_files import _gather, read_shards
from cvxrank.native.scale import check_feature_scale, largest_abs

__all__ = ["ListwiseShards", "listwise_shards", "solve_newton_files"]


# -- on the workers ------------------------------------------------------------
class _ListShard:
    """What a worker holds for one shard: its listwise layout (the perfect order Ω and the weights ``U/V``)."""

    def __init__(self, layout, files):
        self.layout = layout
        self.files = files


def _build_listwise_shard(shard, width, pcf):
    """The shard's :class:`~cvxrank.listwise.loss.ListwiseLayout` on the agreed feature count (None when no query
    of the shard has two documents); the reader's copy is dropped."""
    data = shard.data
    shard.data = None
    counts = np.bincount(data.query_index)
    if counts.max() < 2:  # single-document queries only: no loss term, but they count in m
        return _ListShard(None, shard.files)
    layout = listwise_layout(data, pcf)
    X = layout.X
    if X.shape[1] < width:  # a LETOR shard whose largest index is below the others'
        X = (sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width)) if sp.issparse(X)
             else np.hstack([X, np.zeros((X.shape[0], width - X.shape[1]))]))
        layout = dataclasses.replace(layout, X=X)
    return _ListShard(layout, shard.files)


def _shard_summary(shard):
    layout = shard.layout
    if layout is None:
        return {"n_lists": 0, "n_terms": 0, "largest": 0.0}
    return {"n_lists": layout.n_lists, "n_terms": layout.n_terms, "largest": largest_abs(layout.X)}


def _shard_derivatives(shard, w, hessian):
    """``(L_s(w), ∇L_s(w), ∇²L_s(w) or None)``: the shard's raw sums, without ``½‖w‖²`` and ``C/m``."""
    return listwise_loss_derivatives(shard.layout, w, hessian=hessian)


def _shard_loss(shard, w):
    """``L_s(w)`` alone (a line search's trial value)."""
    return listwise_loss(shard.layout, w)


# -- on the client -------------------------------------------------------------
class ListwiseShards:
    """The shards' listwise layouts, held by the workers; sums of the data term of (3) over them.

    Built by :func:`solve_newton_files`. Only shards with a query of two or more documents take part in the
    rounds (the others only count in ``n_queries``).

    Attributes
    ----------
    n_queries : int
        ``m`` of (3): every query of every shard.
    n_features : int
    n_lists, n_terms : int
        Queries with two or more documents, and loss terms, over all shards.
    files : list of list of str
        The shards that take part in the rounds.
    rounds, bytes_sent, bytes_received : int
        Round trips to the shards and their payloads (``w`` out, the sums back).
    """

    #: The rounds of the pairwise oracle: the same timeout, lost-worker and closed-shards messages.
    _round = DaskOracle._round

    def __init__(self, client, futures, *, n_queries, n_features, n_lists, n_terms, files, timeout):
        self.client = client
        self._futures = list(futures)
        self.n_queries, self.n_features = int(n_queries), int(n_features)
        self.n_lists, self.n_terms = int(n_lists), int(n_terms)
        self.files = files
        self.timeout = float(timeout)
        self.rounds = self.bytes_sent = self.bytes_received = 0

    def loss_derivatives(self, w, hessian: bool = True):
        """``Σ_s L_s(w)``, ``Σ_s ∇L_s(w)`` and (``hessian``) ``Σ_s ∇²L_s(w)``, shard after shard."""
        parts = self._round(_shard_derivatives, w, bool(hessian), what="a Newton evaluation")
        loss = float(sum(p[0] for p in parts))
        grad = np.sum([p[1] for p in parts], axis=0)
        H = np.sum([p[2] for p in parts], axis=0) if hessian else None
        return loss, grad, H

    def loss(self, w) -> float:
        """``Σ_s L_s(w)``."""
        return float(sum(self._round(_shard_loss, w, what="a line search")))

    def close(self) -> None:
        """Release the layouts held by the cluster."""
        for f in self._futures:
            f.release()
        self._futures = []

    def __repr__(self) -> str:
        return (f"ListwiseShards(n_queries={self.n_queries}, n_lists={self.n_lists}, n_features={self.n_features}, "
                f"shards={len(self._futures)})")


def listwise_shards(client, files, *, pcf=None, timeout: float = DEFAULT_TIMEOUT, qid: str = "qid", label: str = "y",
                    features=None, dense=None, dtype=np.float64, n_features=None) -> ListwiseShards:
    """Read the shards on the workers (:func:`cvxrank.native.dask_files.read_shards`) and build each one's layout
    there, with the weights ``U/V`` of ``pcf``; the arguments are those of :func:`solve_newton_files`."""
    pcf = check_pcf(pcf)
    reading = read_shards(client, files, n_features=n_features, dense=dense, dtype=dtype, timeout=timeout, qid=qid,
                          label=label, features=features)
    built = []
    try:
        built = [client.submit(_build_listwise_shard, f, reading.width, pcf, key=f"cvxrank-listwise-{i}-{reading.tag}",
                               pure=False) for i, f in enumerate(reading.read)]
        summaries = _gather(client, [client.submit(_shard_summary, f, pure=False) for f in built], timeout,
                            "building the listwise shards")
    except BaseException:
        reading.release()
        for f in built:
            f.release()
        raise
    reading.release()  # the tasks stay known to the scheduler: a lost shard is read and built again
    n_queries = int(reading.query_ids.shape[0])
    keep = [i for i, s in enumerate(summaries) if s["n_lists"] > 0]
    for i, f in enumerate(built):
        if i not in keep:
            f.release()
    if not keep:
        raise ValidationError("no query has two or more documents, so the listwise loss has no term; "
                              f"the data has {n_queries} queries of one document each")
    shards = ListwiseShards(client, [built[i] for i in keep], n_queries=n_queries, n_features=reading.width,
                            n_lists=sum(s["n_lists"] for s in summaries), n_terms=sum(s["n_terms"] for s in summaries),
                            files=[reading.groups[i] for i in keep], timeout=timeout)
    try:
        check_feature_scale(np.array([max(s["largest"] for s in summaries)]))  # as ListwiseProblem does on X
    except ValidationError:
        shards.close()
        raise
    return shards


def solve_newton_files(client, files, *, C=1.0, pcf=None, tol: float = 1e-8, max_iter: int = 50, w0=None,
                       line_search: bool = True, verbose: bool = False, timeout: float = DEFAULT_TIMEOUT,
                       qid: str = "qid", label: str = "y", features=None, dense=None, dtype=np.float64,
                       n_features=None) -> ListwiseResult:
    """Minimise (3) of He et al. by Newton's method (Steps 1-5) over shards read on the dask workers.

    .. math::

        \\min_w \\; \\tfrac12\\|w\\|^2 + \\frac{C}{m} \\sum_i \\sum_j \\frac{U(i,j)}{V(i,j)}\\,\\ell_{ij}(w)

    The method of :func:`~cvxrank.listwise.newton.solve_newton` (start ``w = 1/m``, gradient (4) and Hessian
    (5), a Cholesky step, the Armijo line search, stop when ``‖dirn‖₁ < tol``), its sums split over the shards
    (module notes): the same iterates up to the order of floating-point additions.

    Parameters
    ----------
    client : dask.distributed.Client
    files : sequence or dask.dataframe.DataFrame
        As for :func:`cvxrank.native.dask_files.files_oracle`: one item per shard (a path, or a list of paths
        read together), LETOR/SVMlight or Parquet (``.parquet``, ``.pq``) files, or a dask DataFrame whose
        partitions are the shards. A query must sit in one shard.
    C : float, default 1.0
        Trade-off ``C > 0`` of (3).
    pcf : float ≥ 1 or None, default None
        ``None``: plain L2-regularised ListMLE (``U/V ≡ 1``); a number: cs-RgList's ``pCf``.
    tol : float, default 1e-8
        ``ε`` of Step 5, and the status test ``½‖∇f(w)‖² / f(w) ≤ tol``.
    max_iter : int, default 50
        ``T`` of Step 5.
    w0 : array-like of shape (n_features,), optional
        Starting point; default ``1/m`` in every coordinate (Step 1).
    line_search : bool, default True
        The backtracking of :func:`~cvxrank.listwise.newton.solve_newton`; ``False``: the paper's pure step.
    verbose : bool, default False
        Print one line per iteration.
    timeout : float
        Seconds a round to the shards may take (a safety net).
    qid, label, features : optional
        Parquet files and DataFrames: the query, grade and feature columns.
    dense : bool, optional
        ``X`` dense or CSR on the workers (:func:`cvxrank.data.load_letor`).
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Storage of the shards as read (each layout holds ``X`` in float64).
    n_features : int, optional
        LETOR files: the feature count (default the largest index over all shards).

    Returns
    -------
    ListwiseResult
        Certified by the summed gradient; ``history`` has one row per iterate; ``extras`` holds
        ``n_shards``, ``rounds``, ``bytes_sent`` and ``bytes_received``.

    Raises
    ------
    ValidationError
        For ``C ≤ 0``, ``pCf < 1``, a bad ``tol``/``max_iter``/``w0``, no query of two or more documents, features
        beyond float64's range, or bad shards (a query in two shards, ...:
        :func:`~cvxrank.native.dask_files.files_oracle`).
    SolverError
        If the Cholesky factorisation fails, or a round gets no answer within ``timeout``.
    """
    start = time.perf_counter()
    C = check_C(C)
    tol = check_tol(tol)
    max_iter = _check_max_iter(max_iter)
    if not isinstance(line_search, (bool, np.bool_)):
        raise ValidationError(f"line_search must be True or False, got {line_search!r}")
    shards = listwise_shards(client, files, pcf=pcf, timeout=timeout, qid=qid, label=label, features=features,
                             dense=dense, dtype=dtype, n_features=n_features)
    try:
        n, m = shards.n_features, shards.n_queries
        w = np.full(n, 1.0 / m) if w0 is None else _as_w(w0, n).copy()
        setup_time = time.perf_counter() - start

        def derivatives(v, hessian):
            return objective_from_sums(v, *shards.loss_derivatives(v, hessian), C=C, n_queries=m)

        def objective(v):
            return objective_from_sums(v, shards.loss(v), C=C, n_queries=m)[0]

        w, k, converged, rows, last = newton_iterations(derivatives, objective, w, tol=tol, max_iter=max_iter,
                                                        line_search=bool(line_search), verbose=verbose)
        solve_time = time.perf_counter() - last[3]
        certify = time.perf_counter()
        loss, loss_grad, _ = shards.loss_derivatives(w, hessian=False)
    finally:
        shards.close()
    result = result_from_sums(
        w, loss, loss_grad, n_queries=m, pcf=check_pcf(pcf), C=C, tol=tol, solver="newton",
        solver_version=_version(), solver_status="converged" if converged else "user_limit", iterations=k,
        setup_time=setup_time, solve_time=solve_time, start=certify, stacklevel=3,
        extras={"line_search": bool(line_search), "n_lists": shards.n_lists, "n_terms": shards.n_terms,
                "n_shards": len(shards.files), "files": shards.files, "rounds": shards.rounds,
                "bytes_sent": shards.bytes_sent, "bytes_received": shards.bytes_received})
    return finish_history(result, rows, k, converged, last)
