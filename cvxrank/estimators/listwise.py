"""Listwise rankers: ListMLE and the cost-sensitive cs-RgList of He et al. (equation (3)).

.. math:: \\min_w \\tfrac12 \\lVert w \\rVert^2 + \\frac{C}{m} \\sum_i \\sum_j \\frac{U(i,j)}{V(i,j)} \\ell_{ij}(w),
          \\qquad U(i,j) = pCf^{y_j}

with ``ℓ_ij`` the ListMLE term of position ``j`` of query ``i``'s perfect
order, ``V`` the number of same-grade documents and ``m`` the number of
queries (ListMLE: ``U/V ≡ 1``). Solved by Newton's method (Steps 1-5 of the
paper; :func:`cvxrank.listwise.solve_newton`) or declared in CVXPY with the
exponential cone (:func:`cvxrank.listwise.solve_listwise_cvxpy`).
"""

from __future__ import annotations

import numpy as np

from cvxrank._validation import POSITIVE_INT, check
from cvxrank.estimators.base import BaseRanker, as_ranking_data
from cvxrank.exceptions import ValidationError

__all__ = ["ListMLE", "CsRgList"]


def _resolve_C(C, lam) -> float:
    """``C`` of (3) from ``C`` or ``lam`` (dividing (3) by ``C``: ``λ = 1/(2C)``); default 1."""
    if C is not None and lam is not None:
        raise ValidationError("give C or lam, not both (lam = 1/(2 C))")
    if lam is not None:
        from cvxrank.costs import check_lam

        return 1.0 / (2.0 * check_lam(lam))
    return 1.0 if C is None else C


class _ListwiseRanker(BaseRanker):
    def _pcf(self):
        raise NotImplementedError

    def _check_params(self) -> None:
        """The parameters both fits read, checked before any data is touched."""
        from cvxrank.solvers.registry import ITERATION_CAP

        check("score_k", self.score_k, POSITIVE_INT)
        check("max_iter", self.max_iter, ITERATION_CAP.or_none())
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise ValidationError(f"solver_options must be a dict, got {type(self.solver_options).__name__}")
        if not isinstance(self.verbose, (bool, np.bool_)):
            raise ValidationError(f"verbose must be True or False, got {self.verbose!r}")

    def fit(self, X, y=None, qid=None):
        """Fit ``w`` on graded documents (see :meth:`cvxrank.estimators.RankSVM.fit` for the arguments)."""
        from cvxrank.listwise import ListwiseProblem
        from cvxrank.solvers import solve
        from cvxrank.solvers.registry import max_iter_options

        self._check_params()
        data = as_ranking_data(X, y, qid, estimator=self)
        C = _resolve_C(self.C, self.lam)
        options = dict(self.solver_options or {})
        solver = str(self.solver).lower()
        if self.max_iter is not None:
            options = {**max_iter_options("newton" if solver == "auto" else solver, self.max_iter), **options}
        result = solve(ListwiseProblem(data, C=C, pcf=self._pcf()), solver, tol=self.tol, verbose=bool(self.verbose),
                       **options)
        self.coef_ = np.asarray(result.w, dtype=np.float64)
        self.n_features_in_ = data.n_features
        self.result_ = result
        self.solve_summary_ = result.summary()
        self.n_iter_ = int(result.iterations or 0)
        self.C_ = float(C)
        return self

    def fit_files(self, files, *, client, n_features=None, dtype="float64", qid="qid", label="y", features=None):
        """Fit ``w`` on data read by the workers of a dask cluster (LETOR/SVMlight or Parquet files, or a dask
        DataFrame): ``X`` never reaches the client.

        Problem (3) of He et al., solved by Newton's method over query shards
        (:func:`cvxrank.listwise.dask.solve_newton_files`: each worker holds its shard's layout and returns the
        raw sums of the loss, its gradient (4) and Hessian (5); the client adds them, takes the Cholesky step
        and the line search), certified by the gradient like ``solver="newton"``.

        Parameters
        ----------
        files : sequence or dask.dataframe.DataFrame
            One item per shard: a path, or a list of paths read together. Paths ending in ``.parquet`` or ``.pq``
            are Parquet files (one row per document; columns ``qid``, ``label`` and the features), any other
            LETOR/SVMlight files (plain or gzip/bzip2/xz); one call takes one kind. Or a dask DataFrame with the
            same columns: each partition is one shard, computed on the workers. A query must sit in one shard.
        client : dask.distributed.Client
        n_features : int, optional
            LETOR files: the feature count (default: the largest index over all files). Not for Parquet files or
            a DataFrame, whose width is their feature columns.
        dtype : {"float64", "float32"}, default "float64"
            Storage of ``X`` on the workers as read (the layouts hold float64).
        qid, label : str, default "qid", "y"
            Parquet files and DataFrames: the query column and the grade column.
        features : sequence of str, optional
            Parquet files and DataFrames: the feature columns, in order.

        Returns
        -------
        self
            With ``result_`` a :class:`~cvxrank.listwise.ListwiseResult`.

        Raises
        ------
        ValidationError
            For a solver other than ``"newton"`` (or ``"auto"``): the CVXPY form needs the data in memory;
            ``solver_options`` other than ``line_search`` and ``max_iter``; or bad shards
            (:func:`~cvxrank.native.dask_files.files_oracle`).
        """
        from cvxrank.listwise.dask import solve_newton_files

        self._check_params()
        solver = str(self.solver).lower()
        if solver not in ("newton", "auto"):
            raise ValidationError(f"fit_files runs Newton's method over the shards (solver='newton'); "
                                  f"solver={self.solver!r} needs the data in memory: use fit")
        options = dict(self.solver_options or {})
        unknown = sorted(set(options) - {"line_search", "max_iter"})
        if unknown:
            raise ValidationError(f"fit_files takes the solver_options line_search and max_iter, not {unknown[0]!r}")
        max_iter = self.max_iter if self.max_iter is not None else options.get("max_iter", 50)
        C = _resolve_C(self.C, self.lam)
        result = solve_newton_files(client, files, C=C, pcf=self._pcf(), tol=1e-8 if self.tol is None else self.tol,
                                    max_iter=max_iter, line_search=options.get("line_search", True),
                                    verbose=bool(self.verbose), n_features=n_features, dtype=np.dtype(dtype), qid=qid,
                                    label=label, features=features)
        self.coef_ = np.asarray(result.w, dtype=np.float64)
        self.n_features_in_ = int(result.w.shape[0])
        self.result_ = result
        self.solve_summary_ = result.summary()
        self.n_iter_ = int(result.iterations or 0)
        self.C_ = float(C)
        return self


_DOC = """
    C : float, optional
        Trade-off ``C > 0`` of (3) (default 1).
    lam : float, optional
        Instead of ``C``: ``C = 1/(2λ)`` (the same minimiser as (3) divided by ``C``).
    solver : str, default "newton"
        ``"newton"`` (Steps 1-5, Cholesky steps, with a backtracking line search
        that ``solver_options={"line_search": False}`` turns off), or an
        exponential-cone solver through CVXPY: ``"clarabel"``, ``"ecos"``, ``"scs"``.
        The CVXPY form has one cone per position of each suffix: small data only.
    tol : float, default 1e-6
        Newton stops when ``‖dirn‖₁ < tol``; the status is ``"optimal"`` when the
        gradient certificate ``½‖∇f‖²/f ≤ tol`` holds.
    max_iter : int, optional
        ``T`` of Step 5 for Newton; the iteration cap of a CVXPY solver. Default: the solver's
        work limit (:meth:`cvxrank.solvers.registry.SolverSpec.work_options`: Newton 50, SCS
        100,000, Clarabel and ECOS 100); a run it stops ends as ``"user_limit"``.
    random_state : None
        Unused (the methods are deterministic); kept for a uniform interface.
    solver_options : dict, optional
        Passed to the solver through :func:`cvxrank.solve`, checked by name and, for the known
        numeric options, by value (Newton: ``line_search``).
    score_k : int, default 10
        ``score`` returns the mean NDCG@``score_k``.
    verbose : bool, default False
        Let the solver report its progress on stdout.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    result_ : cvxrank.listwise.ListwiseResult
        With the gradient norm and the bounds it proves (``gap_bound``,
        ``distance_bound``), iterations and times.
    n_iter_ : int
    C_ : float
    n_features_in_ : int
"""


class ListMLE(_ListwiseRanker):
    __doc__ = """ListMLE with an L2 penalty: (3) of He et al. with ``U/V ≡ 1``.

    The likelihood of each query's perfect order (grades descending; equal
    grades in input order) under the Plackett-Luce model of the scores.

    Parameters
    ----------""" + _DOC + """
    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> data = make_ranking(n_queries=8, random_state=0)
    >>> model = ListMLE(C=10).fit(data)
    >>> model.result_.status, model.n_iter_ < 20
    ('optimal', True)
    """

    def __init__(self, *, C=None, lam=None, solver="newton", tol=1e-6, max_iter=None, random_state=None,
                 solver_options=None, score_k=10, verbose=False):
        self.C = C
        self.lam = lam
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.solver_options = solver_options
        self.score_k = score_k
        self.verbose = verbose

    def _pcf(self):
        return None


class CsRgList(_ListwiseRanker):
    __doc__ = """cs-RgList: cost-sensitive ListMLE, equation (3) of He et al.

    Position ``j`` of a query's perfect order weighs ``U/V = pCf^{y_j} / V``:
    mistakes on highly relevant documents cost more (``pCf ≥ 1``), and each
    grade's documents share one unit of weight.

    Parameters
    ----------
    pcf : float, default 3.0
        The penalty coefficient ``pCf ≥ 1`` (the paper's Table 1 fixes it at 3).""" + _DOC + """
    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> data = make_ranking(n_queries=8, random_state=0)
    >>> CsRgList(pcf=2.0, C=10).fit(data).result_.status
    'optimal'
    """

    def __init__(self, *, pcf=3.0, C=None, lam=None, solver="newton", tol=1e-6, max_iter=None, random_state=None,
                 solver_options=None, score_k=10, verbose=False):
        self.pcf = pcf
        self.C = C
        self.lam = lam
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.solver_options = solver_options
        self.score_k = score_k
        self.verbose = verbose

    def _pcf(self):
        return self.pcf
