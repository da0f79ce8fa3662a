"""The pair-free oracle over query shards on a ``dask.distributed`` cluster.

The loss (9)/SIGIR is a sum over queries, and so are its subgradient ``Xᵀ v``
and the violation counts: pairs never cross queries. :class:`DaskOracle`
splits the queries into contiguous shards of about equal size, sends each
shard (its rows of ``X``, grade codes and cost-table rows) to the cluster
once, and at every call evaluates each shard's
:class:`~cvxrank.native.oracle.PairFreeOracle` where the shard lives and adds
the results up. Only ``w`` goes out and ``n + 2`` numbers (plus the counts,
when asked) come back per shard, so one training problem can use the memory
and cores of several machines. The numbers are those of the local oracle up
to the order of floating-point additions; the counts are identical.

Needs ``dask[distributed]`` (the ``dask`` extra of cvxrank); the module
itself imports nothing of dask and works with any client object that has
``scatter``, ``submit`` and ``gather``.

Examples
--------
>>> from distributed import Client, LocalCluster                  # doctest: +SKIP
>>> client = Client(LocalCluster(n_workers=2, processes=False))     # doctest: +SKIP
>>> res = cr.solve(cr.RankingProblem(data, mu="balanced", lam=0.1), "cutting_plane", client=client)  # doctest: +SKIP
"""

from __future__ import annotations

import itertools

import numpy as np

from cvxrank._validation import POSITIVE_INT, check
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.native.costs import CostTable
from cvxrank.native.oracle import OracleResult, PairFreeOracle, data_layout

__all__ = ["DaskOracle", "query_shards"]


def query_shards(per_query: np.ndarray, n_shards: int) -> list[tuple[int, int]]:
    """Split queries ``0 .. Q-1`` into at most ``n_shards`` contiguous ranges of about equal size.

    Parameters
    ----------
    per_query : array-like of int, shape (n_queries,)
        Size of each query (documents).
    n_shards : int

    Returns
    -------
    list of (start, stop)
        Non-empty query ranges covering all queries.

    Examples
    --------
    >>> query_shards([5, 5, 5, 5], 2)
    [(0, 2), (2, 4)]
    >>> query_shards([10, 1, 1], 5)
    [(0, 1), (1, 3)]
    """
    per_query = np.asarray(per_query, dtype=np.float64)
    Q = per_query.shape[0]
    n_shards = max(1, min(int(n_shards), Q))
    cum = np.cumsum(per_query)
    targets = cum[-1] * np.arange(1, n_shards) / n_shards
    cuts = np.unique(np.clip(np.searchsorted(cum, targets, side="left") + 1, 1, Q - 1)) if n_shards > 1 else []
    edges = [0, *[int(c) for c in cuts], Q]
    return [(a, b) for a, b in itertools.pairwise(edges) if b > a]


def _evaluate_shard(oracle: PairFreeOracle, w: np.ndarray, counts: bool, score_gradient: bool) -> OracleResult:
    return oracle(w, counts=counts, score_gradient=score_gradient)


class DaskOracle:
    """:class:`~cvxrank.native.oracle.PairFreeOracle` evaluated over query shards on a dask cluster.

    Parameters
    ----------
    client : dask.distributed.Client
    data : RankingData
    costs : CostTable, optional
        Pair weights (default all ones).
    n_shards : int, optional
        Number of query shards; default the number of workers.

    Attributes
    ----------
    shards : list of (start, stop)
        Query ranges (positions in ``data.query_ids``) of the shards.
    """

    def __init__(self, client, data: RankingData, costs: CostTable | None = None, *, n_shards: int | None = None):
        if not all(hasattr(client, name) for name in ("scatter", "submit", "gather")):
            raise ValidationError(f"client must be a dask.distributed Client, got {type(client).__name__}")
        costs, grades, codes, counts = data_layout(data, costs)
        if n_shards is None:
            n_shards = max(1, len(client.scheduler_info().get("workers", {})))
        else:
            n_shards = check("n_shards", n_shards, POSITIVE_INT)
        self.client = client
        self.grades = grades
        self.query_ids = data.query_ids
        self.shards = query_shards(counts.sum(axis=1), n_shards)
        self._n_documents = data.n_documents
        self._n_features = data.n_features
        self._n_pairs = costs.total_pairs
        self._total_weight = costs.total_weight
        # Documents of each shard, grouped by query (stable: input order inside a query).
        by_query = np.argsort(data.query_index, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts.sum(axis=1))])
        self._documents = [by_query[starts[a]:starts[b]] for a, b in self.shards]
        oracles = []  # one thread each: the workers already run the shards side by side
        for (a, b), docs in zip(self.shards, self._documents):
            oracles.append(PairFreeOracle(data.X[docs], data.query_index[docs] - a, codes[docs], costs.values[a:b],
                                          grades=grades, query_ids=data.query_ids[a:b], threads=1))
        self._futures = client.scatter(oracles)

    @property
    def n_documents(self) -> int:
        """Number of documents ``m`` (all shards)."""
        return self._n_documents

    @property
    def n_features(self) -> int:
        """Number of features ``n``."""
        return self._n_features

    @property
    def n_pairs(self) -> int:
        """Number of within-query pairs (never formed)."""
        return self._n_pairs

    @property
    def total_weight(self) -> float:
        """``Σ_i c_i``: the loss at ``w = 0``."""
        return self._total_weight

    def __call__(self, w, *, counts: bool = True, score_gradient: bool = False) -> OracleResult:
        """Loss, subgradient ``Xᵀ v`` and (``counts=True``) violation counts at ``w``, summed over shards."""
        w = np.asarray(w, dtype=np.float64).ravel()
        if w.shape != (self.n_features,):
            raise ValidationError(f"w must have {self.n_features} entries, got {w.shape[0]}")
        futures = [self.client.submit(_evaluate_shard, f, w, counts, score_gradient, pure=False)
                   for f in self._futures]
        parts = self.client.gather(futures)
        table = np.concatenate([p.counts for p in parts], axis=0) if counts else None
        v = None
        if score_gradient:
            v = np.empty(self.n_documents)
            for docs, p in zip(self._documents, parts):
                v[docs] = p.score_gradient
        return OracleResult(
            loss=float(sum(p.loss for p in parts)), violated_weight=float(sum(p.violated_weight for p in parts)),
            gradient=np.sum([p.gradient for p in parts], axis=0), score_gradient=v, counts=table,
            rounding=float(sum(p.rounding for p in parts)), grades=self.grades, query_ids=self.query_ids,
        )

    def close(self) -> None:
        """Release the shards held by the cluster."""
        for f in self._futures:
            f.release()
        self._futures = []

    def __repr__(self) -> str:
        return (f"DaskOracle(n_documents={self.n_documents}, n_features={self.n_features}, "
                f"n_pairs={self.n_pairs}, shards={len(self.shards)})")
