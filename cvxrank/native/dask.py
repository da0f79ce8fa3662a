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
import math

import numpy as np

from cvxrank._validation import POSITIVE_INT, check
from cvxrank.data import RankingData
from cvxrank.exceptions import SolverError, ValidationError
from cvxrank.native.costs import CostTable
from cvxrank.native.oracle import OracleResult, PairFreeOracle, data_layout

__all__ = ["DEFAULT_TIMEOUT", "DaskOracle", "query_shards"]


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


#: Seconds a round to the shards may take before it is reported as lost (a safety net: never a hang).
DEFAULT_TIMEOUT = 600.0


class _Shard:
    """What a worker holds for one shard: its :class:`PairFreeOracle` (which keeps its last order) and the rows
    of its last few Newton bands, by token (a jump or a Hessian asks for them after the evaluation)."""

    def __init__(self, oracle, files=None):
        self.oracle = oracle
        self.files = files
        self.bands = {}

    def band(self, token, w, delta):
        if token not in self.bands:  # spilled or re-read from files: the same numbers again
            self.keep(token, _smoothed_parts(self.oracle, w, delta)[1])
        return self.bands[token]

    def keep(self, token, band):
        self.bands[token] = band
        for old in sorted(self.bands)[:-4]:
            del self.bands[old]


def _smoothed_parts(oracle, w, delta):
    from cvxrank.native.newton import smoothed_parts

    return smoothed_parts(oracle, w, delta)


def _evaluate_shard(shard: _Shard, w: np.ndarray, counts: bool, score_gradient: bool) -> dict:
    """The shard's numbers of an oracle call: ``n + 3`` (plus the counts and ``v`` when asked), not its query ids."""
    r = shard.oracle(w, counts=counts, score_gradient=score_gradient)
    return {"loss": r.loss, "violated_weight": r.violated_weight, "gradient": r.gradient, "rounding": r.rounding,
            "counts": r.counts, "score_gradient": r.score_gradient}


def _shard_band_counts(shard: _Shard, w, widths) -> np.ndarray:
    """Pairs of positions in ``[1 - width, 1)`` for each width (the budget's count of the Newton phase)."""
    oracle = shard.oracle
    s = oracle.scores(w)
    s_o = s[oracle._order(s)]
    if oracle._compiled:
        return np.asarray(oracle._band_counts(s_o, [1.0 - x for x in widths]), dtype=np.int64)
    p_out = oracle._bounds(s_o, hi=False)[0]
    return np.array([int((oracle._bounds(s_o, 1.0 - x, hi=False)[0] - p_out).sum()) for x in widths])


def _shard_parts(shard: _Shard, w, delta, token) -> dict:
    parts, band = _smoothed_parts(shard.oracle, w, delta)
    shard.keep(token, band)
    return parts


def _shard_hessian(shard: _Shard, token, w, delta) -> np.ndarray:
    Ds = shard.band(token, w, delta)[0]
    G = Ds.T @ Ds
    return G.toarray() if hasattr(G, "toarray") else np.asarray(G)


def _shard_differences(shard: _Shard, token, w, delta):
    Ds, c, root, alpha = shard.band(token, w, delta)
    D = Ds.toarray() if hasattr(Ds, "toarray") else Ds
    return D / root[:, None], c, alpha


def _squared_hinge_oracle(shard: _Shard, margins):
    """The shard's :class:`~cvxrank.native.variant_oracle.VariantOracle` (built once on its arrays, ``X`` shared)."""
    from cvxrank.native.variant_oracle import VariantOracle

    sq = getattr(shard, "sq_oracle", None)
    if sq is None or not np.array_equal(sq.margins, np.where(np.tril(np.ones_like(margins), -1) > 0, margins, 0.0)):
        o = shard.oracle
        sq = VariantOracle(o.X, o._qc, o._gc, o.values, margins=margins, grades=o.grades, query_ids=o.query_ids)
        shard.sq_oracle, shard.sq_w = sq, None
    return sq


def _shard_squared_at(shard: _Shard, w, margins):
    sq = _squared_hinge_oracle(shard, margins)
    s = sq.scores(w)
    r = sq.squared_hinge_scores(s, hessian=True)
    shard.sq_w, shard.sq_s, shard.sq_r = w, s, r
    return {"loss": r.loss, "linear": r.linear, "n_violated": r.n_violated, "rounding": r.rounding,
            "gradient": sq.gradient(r.score_gradient)}


def _squared_state(shard, w, margins):
    if getattr(shard, "sq_w", None) is None or not np.array_equal(shard.sq_w, w):  # lost (a worker re-read it)
        _shard_squared_at(shard, w, margins)
    return shard.sq_oracle


def _shard_squared_hv(shard: _Shard, u, w, margins):
    sq = _squared_state(shard, w, margins)
    return sq.gradient(shard.sq_r.hessian_product(sq.scores(u)))


def _shard_squared_direction(shard: _Shard, d, w, margins):
    sq = _squared_state(shard, w, margins)
    shard.sq_z = sq.scores(d)
    shard.sq_d = d
    return None


def _shard_squared_loss(shard: _Shard, t, d, w, margins):
    sq = _squared_state(shard, w, margins)
    if getattr(shard, "sq_d", None) is None or not np.array_equal(shard.sq_d, d):
        _shard_squared_direction(shard, d, w, margins)
    return sq.squared_hinge_scores(shard.sq_s + t * shard.sq_z).loss


class _SquaredHingeSums:
    """The squared hinge's sums over shards at one point (what :func:`~cvxrank.native.truncated_newton.truncated_newton`
    and its certificate read)."""

    def __init__(self, parts):
        self.loss = float(sum(p["loss"] for p in parts))
        self.linear = float(sum(p["linear"] for p in parts))
        self.n_violated = int(sum(p["n_violated"] for p in parts))
        self.rounding = float(sum(p["rounding"] for p in parts))


def _payload(x) -> int:
    """Bytes of the numbers in a shard's answer (arrays and scalars; the messages' framing not counted)."""
    if isinstance(x, np.ndarray):
        return x.nbytes
    if isinstance(x, dict):
        return sum(_payload(v) for v in x.values())
    if isinstance(x, (tuple, list)):
        return sum(_payload(v) for v in x)
    return 8 if isinstance(x, (int, float, np.number)) else 0


class _ShardBand:
    """The band of one evaluation over shards: its size, and its Hessian ``2λI + Σ_shards D_sᵀ D_s`` (fetched from
    the shards when a Newton step asks, once) or its rows (for the jump), which stay on the workers until then."""

    def __init__(self, oracle, token, w, delta, k):
        self.oracle, self.token, self.w, self.delta, self.k = oracle, token, w, delta, k
        self.n = oracle.n_features
        self.lam = None  # set by point_from_parts
        self._H = None

    @property
    def H(self) -> np.ndarray:
        if self._H is None:
            parts = self.oracle._round(_shard_hessian, self.token, self.w, self.delta, what="the band's Hessian")
            H = np.sum(parts, axis=0)
            H[np.diag_indices_from(H)] += 2.0 * self.lam
            self._H = H
        return self._H

    def solve(self, rhs, *, tol: float = 1e-10, shift: float = 0.0) -> np.ndarray:
        """``(H + shift I)⁻¹ rhs``, as :meth:`cvxrank.native.newton._Band.solve`."""
        if shift:
            M = self.H.copy()
            M[np.diag_indices_from(M)] += shift
            return np.linalg.solve(M, rhs)
        return np.linalg.solve(self.H, rhs)

    def largest_diagonal(self) -> float:
        return float(np.diag(self.H).max())

    def differences(self):
        """The band's pair differences ``d_i`` (rows, shards in order), weights ``c`` and dual values ``α``."""
        parts = self.oracle._round(_shard_differences, self.token, self.w, self.delta, what="the band's rows")
        return tuple(np.concatenate([p[j] for p in parts], axis=0) for j in range(3))


class DaskOracle:
    """:class:`~cvxrank.native.oracle.PairFreeOracle` evaluated over query shards on a dask cluster.

    Besides the oracle call it implements the Newton phase's protocol, :meth:`smoothed_parts`: every shard
    returns the additive parts of an evaluation (``O(n)`` numbers, :func:`cvxrank.native.newton.smoothed_parts`)
    and keeps its band's rows; the Hessian (``n x n`` per shard) or the rows (for the jump) come back only
    when a step asks. So :func:`~cvxrank.native.cutting_plane.cutting_plane` runs the whole method, planes and
    Newton phase, with the iterates of the local solver up to the order of floating-point additions.
    Data that should never be on the client: :func:`cvxrank.native.dask_files.files_oracle` (LETOR files read
    on the workers).

    Parameters
    ----------
    client : dask.distributed.Client
    data : RankingData
    costs : CostTable, optional
        Pair weights (default all ones).
    n_shards : int, optional
        Number of query shards; default the number of workers.
    timeout : float, default :data:`DEFAULT_TIMEOUT`
        Seconds a round to the shards may take before :class:`~cvxrank.exceptions.SolverError` (a safety net).

    Attributes
    ----------
    shards : list of (start, stop)
        Query ranges (positions in ``query_ids``) of the shards.
    bytes_sent, bytes_received : int
        Payload of all rounds so far (``w`` out, the shards' numbers back).
    rounds : int
        Round trips to the shards so far.
    """

    newton_phase = True

    def __init__(self, client, data: RankingData, costs: CostTable | None = None, *, n_shards: int | None = None,
                 timeout: float = DEFAULT_TIMEOUT):
        _check_client(client)
        costs, grades, codes, counts = data_layout(data, costs)
        if n_shards is None:
            n_shards = max(1, len(client.scheduler_info().get("workers", {})))
        else:
            n_shards = check("n_shards", n_shards, POSITIVE_INT)
        self.shards = query_shards(counts.sum(axis=1), n_shards)
        # Documents of each shard, grouped by query (stable: input order inside a query).
        by_query = np.argsort(data.query_index, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts.sum(axis=1))])
        self._documents = [by_query[starts[a]:starts[b]] for a, b in self.shards]
        shards = []  # one thread each: the workers already run the shards side by side
        for (a, b), docs in zip(self.shards, self._documents):
            shards.append(_Shard(PairFreeOracle(data.X[docs], data.query_index[docs] - a, codes[docs],
                                                costs.values[a:b], grades=grades, query_ids=data.query_ids[a:b],
                                                threads=1)))
        self._setup(client, client.scatter(shards), grades=grades, query_ids=data.query_ids,
                    n_documents=data.n_documents, n_features=data.n_features, n_pairs=costs.total_pairs,
                    total_weight=costs.total_weight, timeout=timeout)

    def _setup(self, client, futures, *, grades, query_ids, n_documents, n_features, n_pairs, total_weight, timeout,
               files=None):
        self.client = client
        self.grades = grades
        self.query_ids = query_ids
        self._futures = list(futures)
        self._n_documents, self._n_features = int(n_documents), int(n_features)
        self._n_pairs, self._total_weight = int(n_pairs), float(total_weight)
        self.timeout = float(timeout)
        self.files = files
        self.bytes_sent = self.bytes_received = self.rounds = 0
        self._tokens = itertools.count()

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

    # -- rounds ------------------------------------------------------------
    def _round(self, fn, *args, what: str = "an oracle call"):
        """Run ``fn(shard, *args)`` on every shard where it lives; the answers in shard order.

        A shard whose worker died is re-read by dask from its files (or its scattered copy is lost); no answer
        within ``timeout`` seconds, or a worker that keeps dying, raises :class:`SolverError` naming the round.
        """
        if not self._futures:
            raise ValidationError("this DaskOracle was closed")
        futures = [self.client.submit(fn, f, *args, pure=False) for f in self._futures]
        self.rounds += 1
        self.bytes_sent += len(futures) * sum(_payload(a) for a in args)
        try:
            import distributed
        except ImportError:  # pragma: no cover - any client with submit and gather
            distributed = None
        try:
            if distributed is not None:
                distributed.wait(futures, timeout=self.timeout)
            parts = self.client.gather(futures)
        except TimeoutError:
            alive = len(self.client.scheduler_info().get("workers", {}))
            raise SolverError(f"no answer from the dask shards within {self.timeout:g} s ({what}; {alive} workers "
                              "alive): a worker died or the cluster is saturated") from None
        except Exception as exc:
            if type(exc).__name__ in ("KilledWorker", "FutureCancelledError", "FuturesCancelledError",
                                      "CancelledError", "CommClosedError"):
                lost = ("its shards were sent from the client and are gone: restart the solve" if self.files is None
                        else "its shards kept failing on the other workers")
                raise SolverError(f"a dask worker holding a shard was lost during {what} ({type(exc).__name__}); "
                                  f"{lost}") from None
            raise
        self.bytes_received += sum(_payload(p) for p in parts)
        return parts

    def __call__(self, w, *, counts: bool = True, score_gradient: bool = False) -> OracleResult:
        """Loss, subgradient ``Xᵀ v`` and (``counts=True``) violation counts at ``w``, summed over shards."""
        w = self._check_w(w)
        if score_gradient and getattr(self, "_documents", None) is None:
            raise ValidationError("score_gradient needs the documents' order, which shards read from files "
                                  "do not share with the client")
        parts = self._round(_evaluate_shard, w, counts, score_gradient)
        table = np.concatenate([p["counts"] for p in parts], axis=0) if counts else None
        v = None
        if score_gradient:
            v = np.empty(self.n_documents)
            for docs, p in zip(self._documents, parts):
                v[docs] = p["score_gradient"]
        return OracleResult(
            loss=float(sum(p["loss"] for p in parts)),
            violated_weight=float(sum(p["violated_weight"] for p in parts)),
            gradient=np.sum([p["gradient"] for p in parts], axis=0), score_gradient=v, counts=table,
            rounding=float(sum(p["rounding"] for p in parts)), grades=self.grades, query_ids=self.query_ids,
        )

    def _check_w(self, w) -> np.ndarray:
        w = np.asarray(w, dtype=np.float64).ravel()
        if w.shape != (self.n_features,):
            raise ValidationError(f"w must have {self.n_features} entries, got {w.shape[0]}")
        return w

    # -- the Newton phase's protocol -----------------------------------------
    def smoothed_parts(self, w, delta: float, *, budget: int | None = None, fit: bool = True) -> dict:
        """The summed parts of one Newton evaluation at ``w`` (:func:`cvxrank.native.newton.smoothed_parts`).

        With ``budget``, ``δ`` is first halved until the band holds at most ``budget`` pairs of positions over
        all shards (``fit``: counted for eight widths a round, as the compiled local search), then re-checked on
        the evaluation's own band against ``budget`` (``fit=False``:
        :data:`~cvxrank.native.newton.BUDGET_AFTER_SHRINK` times it, at most :data:`~cvxrank.native.newton.BAND_BUDGET`),
        as :func:`cvxrank.native.newton._point` does locally. ``parts["band"]`` is a handle on the band, whose rows
        stay on the workers.
        """
        from cvxrank.native.newton import BAND_BUDGET, BUDGET_AFTER_SHRINK

        w = self._check_w(w)
        # (the re-check after a shrink, as locally)
        allowed = None if budget is None else max(budget, min(BUDGET_AFTER_SHRINK * budget, BAND_BUDGET))
        if budget is not None and fit:
            while True:
                widths = [delta * 0.5 ** j for j in range(8)]
                counts = np.sum(self._round(_shard_band_counts, w, widths, what="the band's size"), axis=0)
                found = next((x for x, c in zip(widths, counts) if not (x > 1e-12 and c > budget)), None)
                if found is not None:
                    delta = found
                    break
                delta = widths[-1] / 2.0
        while True:
            token = next(self._tokens)
            parts = self._round(_shard_parts, w, delta, token, what="a Newton evaluation")
            total = {key: (np.sum([p[key] for p in parts], axis=0) if isinstance(parts[0][key], np.ndarray)
                           else sum(p[key] for p in parts)) for key in parts[0] if key != "delta"}
            if budget is None or delta <= 1e-12 or total["positions"] <= (budget if fit else allowed):
                break
            delta /= 2.0
        total["delta"] = delta
        total["band"] = _ShardBand(self, token, w, delta, int(total["k"]))
        return total

    # -- the squared hinge's protocol (truncated Newton) ---------------------------
    def _margins(self):
        margins = getattr(self, "margins", None)
        G = self.grades.shape[0]
        return np.tril(np.ones((G, G)), k=-1) if margins is None else margins

    def squared_hinge_at(self, w):
        """``(sums, Xᵀ g)`` of the squared hinge at ``w``, summed over shards; each shard keeps its Hessian."""
        w = self._check_w(w)
        parts = self._round(_shard_squared_at, w, self._margins(), what="a squared-hinge evaluation")
        self._sq_w = w
        return _SquaredHingeSums(parts), np.sum([p["gradient"] for p in parts], axis=0)

    def squared_hinge_hessian_vector(self, u):
        """``Xᵀ H_s X u`` at the last point of :meth:`squared_hinge_at`, summed over shards."""
        u = np.asarray(u, dtype=np.float64).ravel()
        return np.sum(self._round(_shard_squared_hv, u, self._sq_w, self._margins(), what="a Hessian product"),
                      axis=0)

    def squared_hinge_line(self, d):
        """``t ↦ R_2(w + t d)`` from the last point, each shard holding ``X d``."""
        d = np.asarray(d, dtype=np.float64).ravel()
        w, margins = self._sq_w, self._margins()
        self._round(_shard_squared_direction, d, w, margins, what="a line search")
        return lambda t: float(sum(self._round(_shard_squared_loss, float(t), d, w, margins, what="a line search")))

    def close(self) -> None:
        """Release the shards held by the cluster."""
        for f in self._futures:
            f.release()
        self._futures = []

    def __repr__(self) -> str:
        return (f"DaskOracle(n_documents={self.n_documents}, n_features={self.n_features}, "
                f"n_pairs={self.n_pairs}, shards={len(self._futures)})")


def _check_client(client) -> None:
    if not all(hasattr(client, name) for name in ("scatter", "submit", "gather")):
        raise ValidationError(f"client must be a dask.distributed Client, got {type(client).__name__}")
