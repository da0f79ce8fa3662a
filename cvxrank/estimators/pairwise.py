"""Pairwise rankers: Ranking SVM, its cost-sensitive variant (ECML 2006) and RSVM-IR (SIGIR 2006).

All three minimise the weighted hinge loss (9) of Cao et al. (SIGIR 2006),

.. math:: L(w) = \\sum_i \\tau_{k(i)} \\mu_{q(i)} [1 - \\langle w, d_i \\rangle]_+ + \\lambda \\lVert w \\rVert^2,

through the QP (14) with ``C_i = τ_k(i) μ_q(i) / (2λ)`` (Theorem 1) or the
hinge form itself:

==========================  =========================  ==========================
estimator                   τ (per grade pair)         μ (per query)
==========================  =========================  ==========================
:class:`RankSVM`            1                          1
:class:`CostSensitiveRankSVM`  given or estimated      1   (Proposition 1/ECML)
:class:`RankSVMIR`          given or estimated         balanced (10)/SIGIR or given
==========================  =========================  ==========================
"""

from __future__ import annotations


import numpy as np

from cvxrank._validation import POSITIVE_INT, TOL, check
from cvxrank.costs import Costs, tau_table
from cvxrank.estimators.base import BaseRanker, as_ranking_data, resolve_lam
from cvxrank.exceptions import ValidationError
from cvxrank.formulations import FORMULATIONS, build, build_hinge
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import FALLBACK_CHAIN, NATIVE_SOLVERS, solve
from cvxrank.solvers.registry import AUTO_PAIRFREE_PAIRS, ITERATION_CAP, SOLVERS, choose_solver, max_iter_options
from cvxrank.variants import Variant

__all__ = ["RankSVM", "CostSensitiveRankSVM", "RankSVMIR", "AUTO_PAIRFREE_PAIRS", "tau_table"]

#: The pair-free solvers (``solver="auto"`` picks one of them through :func:`~cvxrank.solvers.registry.choose_solver`).
PAIRFREE_SOLVERS = tuple(spec.name for spec in SOLVERS.values() if spec.pairfree)


class _PairwiseRanker(BaseRanker):
    """Shared fit of the pairwise rankers; subclasses say which ``τ`` and ``μ`` they use."""

    def _costs(self, data):  # -> (tau table or None, mu spec or None)
        raise NotImplementedError

    def _check_params(self):
        if self.formulation not in FORMULATIONS + ("auto",):
            raise ValidationError(f"unknown formulation {self.formulation!r}; choose one of "
                                  f"{', '.join(FORMULATIONS + ('auto',))}")
        check("tol", self.tol, TOL.or_none())
        check("max_iter", self.max_iter, ITERATION_CAP.or_none())
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise ValidationError(f"solver_options must be a dict, got {type(self.solver_options).__name__}")
        check("score_k", self.score_k, POSITIVE_INT)
        if not isinstance(self.verbose, (bool, np.bool_)):
            raise ValidationError(f"verbose must be True or False, got {self.verbose!r}")

    def _variant(self) -> Variant:
        return Variant(loss=getattr(self, "loss", "hinge"), margin=getattr(self, "margin", None),
                       l1=getattr(self, "l1", 0.0), lower=getattr(self, "lower", None),
                       upper=getattr(self, "upper", None))

    def _solver_name(self, problem: RankingProblem) -> str:
        solver = str(self.solver).lower()
        return choose_solver(problem, self.formulation) if solver == "auto" else solver

    def _options(self, solver: str) -> dict:
        options = dict(self.solver_options or {})
        if solver == "fallback":  # {solver: {option: value}}, read by the fallback policy of solve()
            if self.max_iter is None:
                return options
            return {name: {**max_iter_options(name, self.max_iter), **dict(options.get(name) or {})}
                    for name in FALLBACK_CHAIN}
        if self.max_iter is not None:
            options = {**max_iter_options(solver, self.max_iter), **options}
        return options

    def fit(self, X, y=None, qid=None):
        """Fit ``w`` on graded documents.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_documents, n_features), or RankingData
        y : array-like of shape (n_documents,)
            Relevance grades (larger is better).
        qid : array-like of shape (n_documents,), optional
            Query id of each document; pairs are formed inside queries only.
            Default: one query.

        Returns
        -------
        self
        """
        self._check_params()
        data = as_ranking_data(X, y, qid, estimator=self)
        lam = resolve_lam(self.lam, self.C)
        costs = Costs(*self._costs(data))
        problem = RankingProblem(data, costs=costs, lam=lam, variant=self._variant())
        solver = self._solver_name(problem)
        result = self._solve(problem, solver, self._options(solver))
        return self._set_fitted(result, data, lam, costs.tau)

    def _solve(self, problem: RankingProblem, solver: str, options: dict):
        """Solve the one problem of this fit: a native solver reads the problem itself (the pair-free
        ones never form its pairs, and none is handed a CVXPY formulation it would not use)."""
        verbose = bool(self.verbose)
        if solver in NATIVE_SOLVERS and self.formulation == "auto":
            return solve(problem, solver, tol=self.tol, verbose=verbose, **options)
        if self.formulation == "hinge" or solver == "gd":
            return solve(build_hinge(problem), solver, tol=self.tol, verbose=verbose, **options)
        return solve(build(problem, formulation=self.formulation), solver, tol=self.tol, verbose=verbose, **options)

    def _set_fitted(self, result, data, lam, table):
        self.coef_ = np.asarray(result.w, dtype=np.float64)
        self.n_features_in_ = data.n_features
        self.result_ = result
        self.solve_summary_ = result.summary()
        self.n_iter_ = int(result.iterations or 0)
        self.lam_ = lam
        self.tau_ = table
        return self

    def fit_files(self, files, *, client, n_features=None, dtype="float64", qid="qid", label="y", features=None):
        """Fit ``w`` on data read by the workers of a dask cluster (LETOR/SVMlight or Parquet files, or a dask
        DataFrame): ``X`` never reaches the client.

        The papers' hinge problem (9)/SIGIR (or, with ``loss="squared_hinge"``, its squared hinge), solved
        pair-free over query shards (:func:`cvxrank.native.dask_files.solve_files`: cutting planes and the Newton
        phase, or truncated Newton, certified like ``solver="cutting_plane"`` / ``"truncated_newton"``).

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
            Storage of ``X`` on the workers.
        qid, label : str, default "qid", "y"
            Parquet files and DataFrames: the query column and the grade column.
        features : sequence of str, optional
            Parquet files and DataFrames: the feature columns, in order (default every other column; every shard
            must then have the same columns in the same order).

        Returns
        -------
        self
            With ``result_`` a :class:`~cvxrank.native.dask_files.FilesSolution`.

        Raises
        ------
        ValidationError
            For ``tau="estimate"`` (it needs the documents on the client: give ``tau``), a variant other than the
            papers' problem or its squared hinge, the gradient-descent optimizer, or bad shards (:func:`~cvxrank.native.dask_files.files_oracle`).
        """
        import warnings

        from cvxrank.exceptions import InaccurateSolutionWarning
        from cvxrank.native.dask_files import solve_files

        self._check_params()
        variant = self._variant()
        loss = variant.loss
        if not Variant(loss="hinge", margin=variant.margin, l1=variant.l1, lower=variant.lower,
                       upper=variant.upper).is_default:
            raise ValidationError("fit_files solves the papers' problem (9), with the hinge or the squared hinge; "
                                  "fit other variants on data in memory")
        if getattr(self, "optimizer", "qp") != "qp":
            raise ValidationError("fit_files runs the pair-free solver; optimizer='gd' needs the data in memory")
        kind = getattr(self, "variant", "both")
        tau = None if kind == "query" else getattr(self, "tau", None)
        mu = None if kind == "rank" else getattr(self, "mu", None)
        if isinstance(tau, str):
            raise ValidationError(f"tau={tau!r} needs the documents on the client; give tau as "
                                  "{(higher, lower): value} (or None) to fit from files")
        lam = resolve_lam(self.lam, self.C)
        res = solve_files(client, files, tau=tau, mu=mu, lam=lam, tol=self.tol or 1e-6, loss=loss,
                          max_iter=self.max_iter or (3000 if loss == "hinge" else 200), n_features=n_features,
                          dtype=np.dtype(dtype), qid=qid, label=label, features=features, verbose=bool(self.verbose))
        if res.status != "optimal":
            warnings.warn(f"fit_files: certified relative gap {res.relative_gap:.2e} above tol (status {res.status}); "
                          "raise max_iter", InaccurateSolutionWarning, stacklevel=2)
        self.coef_ = np.asarray(res.w, dtype=np.float64)
        self.n_features_in_ = int(res.w.shape[0])
        self.result_ = res
        self.solve_summary_ = {"solver": "cutting_plane" if loss == "hinge" else "truncated_newton",
                               "formulation": "pairfree", "status": res.status,
                               "relative_gap": res.relative_gap, "objective": res.objective,
                               "setup_time": res.setup_time, "solve_time": res.solve_time,
                               "oracle_calls": res.oracle_calls, "n_documents": res.n_documents,
                               "n_pairs": res.n_pairs, "shards": res.n_shards}
        self.n_iter_ = int(res.iterations)
        self.lam_ = lam
        self.tau_ = tau
        return self

    def fit_path(self, X, y=None, qid=None, *, lams) -> list:
        """Fit one model per ``λ`` in ``lams`` on a single compiled problem.

        The CVXPY problem is built once and re-solved through its cost
        Parameters (DPP, warm starts; :func:`cvxrank.path.solve_path`). It saves
        the compilation, a small share of the work (measured against fresh fits:
        ``docs/path-benchmark.md``).
        ``τ`` (estimated once) and ``μ`` are shared by every point. Native
        solvers have nothing to recompile: the pair-free ``cutting_plane`` and
        ``truncated_newton`` solve the points in order, each started from the previous ``w``
        (:data:`cvxrank.path.WARM_START`); ``gd``, ``subgradient`` and
        ``fallback`` fall back to one :meth:`fit` per ``λ``.

        Returns
        -------
        list of estimators
            Fitted copies of this estimator with ``lam`` set to each value (in
            the order of ``lams``); ``self`` is not modified.
        """
        from sklearn.base import clone

        from cvxrank.costs import check_lam
        from cvxrank.path import solve_path
        from cvxrank.solvers import NATIVE_SOLVERS

        lams = [check_lam(v) for v in np.atleast_1d(np.asarray(lams, dtype=float)).tolist()]
        if not lams:
            raise ValidationError("fit_path needs at least one lam")
        proto = clone(self).set_params(lam=lams[0], C=None)
        proto._check_params()
        data = as_ranking_data(X, y, qid, estimator=proto)
        costs = Costs(*proto._costs(data))
        problem = RankingProblem(data, costs=costs, lam=lams[0], variant=proto._variant())
        solver = proto._solver_name(problem)
        if solver in PAIRFREE_SOLVERS:
            options, models = proto._options(solver), []
            for v in lams:
                result = proto._solve(problem.with_lam(v), solver, options)
                options = {**options, "warm_start": result.w}
                models.append(clone(proto).set_params(lam=v)._set_fitted(result, data, v, costs.tau))
            return models
        if solver in NATIVE_SOLVERS or solver == "fallback" or not proto._variant().is_default:
            return [clone(proto).set_params(lam=v).fit(data) for v in lams]  # CVXPY paths: the papers' problem
        problem = RankingProblem(make_pairs(data), costs=costs, lam=lams[0])
        path = solve_path(problem, lams=lams, formulation=self.formulation,
                          solver=solver, tol=self.tol, verbose=bool(self.verbose), **proto._options(solver))
        return [clone(proto).set_params(lam=v)._set_fitted(r, data, v, costs.tau) for v, r in zip(lams, path)]


_COMMON_DOC = """
    lam : float, optional
        ``λ`` of the hinge form (9)/SIGIR (default 0.5, :data:`cvxrank.costs.DEFAULT_LAM`, when ``C`` is not given either).
    C : float, optional
        The QP cost of Ranking SVM (6)/ECML instead of ``lam``: ``λ = 1/(2C)``.
    loss, margin, l1, lower, upper : optional
        A variant of the problem (:class:`cvxrank.variants.Variant`):
        ``loss="squared_hinge"``, margins rescaled by ``"grade_difference"`` or
        ``"gain_difference"``, an elastic-net weight ``l1`` and bounds on ``w``.
        Default: the papers' problem. A variant is solved by a CVXPY solver on
        the primal or hinge formulation, or pair-free (margins per grade pair:
        ``cutting_plane``; the squared hinge: ``truncated_newton``), and
        certified by its own dual.
    formulation : {"auto", "primal", "lifted", "dual", "hinge"}, default "auto"
        Which CVXPY problem to solve (:func:`cvxrank.formulations.build`).
    solver : str, default "auto"
        Any name of :func:`cvxrank.available_solvers`; ``"auto"`` picks the
        pair-free solver that takes the variant (``cutting_plane`` for the
        hinge, ``truncated_newton`` for the squared hinge) for
        :data:`AUTO_PAIRFREE_PAIRS` pairs or more, else ``clarabel``;
        ``"fallback"`` tries :data:`cvxrank.solvers.FALLBACK_CHAIN` in order
        until a certificate passes (``solver_options`` then maps each solver
        to its options).
    tol : float, optional
        Certified relative duality gap required for status ``"optimal"``;
        default: the solver's own (1e-6; 1e-4 for the pure ``subgradient`` method).
    max_iter : int, optional
        Iteration (``cutting_plane``: oracle-call) cap, passed under the solver's own option name.
        Default: the solver's work limit
        (:attr:`cvxrank.solvers.registry.SolverSpec.work_limit`: Clarabel and ECOS 100
        iterations, OSQP 100,000, SCS 10,000, ...); a run it stops ends as ``"user_limit"``
        with its certified gap.
    random_state : int, optional
        Seed of the ``τ`` estimation (the only random step).
    solver_options : dict, optional
        The solver's own options, passed through :func:`cvxrank.solve`, which checks their
        names and the values of the known numeric ones.
    score_k : int, default 10
        ``score`` returns the mean NDCG@``score_k``.
    verbose : bool, default False
        Let the solver report its progress on stdout (a CVXPY solver's own log; a line per
        certificate check of the native solvers).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The weight vector ``w``; scores are ``X @ coef_``.
    result_ : SolveResult
        The certified solution with its diagnostics (status, duality gap, times).
    n_iter_ : int
        Solver iterations.
    lam_ : float
        The ``λ`` used.
    tau_ : dict or None
        ``{(higher, lower): τ}`` used (estimated or given); None for all ones.
    n_features_in_ : int
"""


class RankSVM(_PairwiseRanker):
    __doc__ = """Ranking SVM (Herbrich et al.; Joachims 2002): the hinge loss of every pair weighs 1.

    .. math:: \\min_w \\sum_i [1 - \\langle w, d_i \\rangle]_+ + \\lambda \\lVert w \\rVert^2

    equation (7) of Xu et al. (ECML 2006), the QP (6) with ``C = 1/(2λ)``.

    Parameters
    ----------""" + _COMMON_DOC + """
    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> data = make_ranking(n_queries=8, random_state=0)
    >>> model = RankSVM(lam=0.1).fit(data.X, data.y, qid=data.qid)
    >>> model.result_.status, round(model.score(data.X, data.y, qid=data.qid), 3)
    ('optimal', 0.996)
    """

    def __init__(self, *, lam=None, C=None, loss="hinge", margin=None, l1=0.0, lower=None, upper=None,
                 formulation="auto", solver="auto", tol=None, max_iter=None, random_state=None, solver_options=None,
                 score_k=10, verbose=False):
        self.lam = lam
        self.loss = loss
        self.margin = margin
        self.l1 = l1
        self.lower = lower
        self.upper = upper
        self.C = C
        self.formulation = formulation
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.solver_options = solver_options
        self.score_k = score_k
        self.verbose = verbose

    def _costs(self, data):
        return None, None


class CostSensitiveRankSVM(_PairwiseRanker):
    __doc__ = """Cost-sensitive Ranking SVM of Xu et al. (ECML 2006): a cost ``τ`` per grade pair.

    .. math:: \\min_w \\sum_i \\tau_{k(i)} [1 - \\langle w, d_i \\rangle]_+ + \\lambda \\lVert w \\rVert^2

    equation (8)/ECML, solved as the QP (9)/ECML with ``C_k = τ_k/(2λ)`` (Proposition 1).

    Parameters
    ----------
    tau : "estimate", mapping or DataFrame, default "estimate"
        ``{(higher grade, lower grade): τ}`` for every grade pair of the data,
        or ``"estimate"``: the NDCG@1 swap heuristic of Fig. 1/ECML run on the
        training data (:func:`cvxrank.costs.estimate_tau`). An estimated ``τ``
        of 0 (a grade pair NDCG@1 never sees) drops that pair type from the loss.
    tau_swaps : int, default 100
        ``T``, the swaps per query and grade pair of the heuristic.""" + _COMMON_DOC + """
    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> data = make_ranking(n_queries=8, random_state=0)
    >>> tau = {(2, 1): 1.0, (2, 0): 1.0, (1, 0): 0.1}
    >>> model = CostSensitiveRankSVM(tau=tau, lam=0.1).fit(data.X, data.y, qid=data.qid)
    >>> model.result_.status
    'optimal'
    """

    def __init__(self, *, tau="estimate", tau_swaps=100, lam=None, C=None, loss="hinge", margin=None, l1=0.0,
                 lower=None, upper=None, formulation="auto", solver="auto", tol=None, max_iter=None,
                 random_state=None, solver_options=None, score_k=10, verbose=False):
        self.tau = tau
        self.loss = loss
        self.margin = margin
        self.l1 = l1
        self.lower = lower
        self.upper = upper
        self.tau_swaps = tau_swaps
        self.lam = lam
        self.C = C
        self.formulation = formulation
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.solver_options = solver_options
        self.score_k = score_k
        self.verbose = verbose

    def _costs(self, data):
        return tau_table(self.tau, data, T=self.tau_swaps, random_state=self.random_state), None


class RankSVMIR(_PairwiseRanker):
    __doc__ = """Ranking SVM for IR (RSVM-IR) of Cao et al. (SIGIR 2006): ``τ`` per grade pair, ``μ`` per query.

    .. math:: \\min_w \\sum_i \\tau_{k(i)} \\mu_{q(i)} [1 - \\langle w, d_i \\rangle]_+ + \\lambda \\lVert w \\rVert^2

    equation (9)/SIGIR, solved as the QP (14) with ``C_i = τμ/(2λ)`` (Theorem 1)
    or by the paper's gradient descent (Fig. 3). The paper's variants:

    ===============  =================  =========================
    name in 004      ``variant``        ``optimizer``
    ===============  =================  =========================
    RSVM-IR-Rank     ``"rank"``         (μ = 1)
    RSVM-IR-Query    ``"query"``        (τ = 1)
    RSVM-IR-QP       ``"both"``         ``"qp"``
    RSVM-IR-GD       ``"both"``         ``"gd"``
    ===============  =================  =========================

    Parameters
    ----------
    tau : "estimate", mapping or DataFrame, default "estimate"
        As for :class:`CostSensitiveRankSVM`; not used when ``variant="query"``.
    mu : "balanced", mapping or None, default "balanced"
        Per-query weight; ``"balanced"`` is (10)/SIGIR, ``μ_q = max_j #pairs(q_j) / #pairs(q)``.
        Not used when ``variant="rank"``.
    variant : {"both", "rank", "query"}, default "both"
    optimizer : {"qp", "gd"}, default "qp"
        ``"gd"``: Fig. 3's fixed-step gradient descent (solver ``gd``; it
        usually stops at ``max_iter`` with an honest, larger duality gap).
    learning_rate : float, optional
        ``η`` of the gradient descent (default ``1/(200λ)``).
    tau_swaps : int, default 100
        ``T`` of the ``τ`` heuristic.""" + _COMMON_DOC + """
    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> data = make_ranking(n_queries=8, random_state=0)
    >>> model = RankSVMIR(lam=0.1, random_state=0).fit(data.X, data.y, qid=data.qid)
    >>> model.result_.status, sorted(model.tau_)
    ('optimal', [(1, 0), (2, 0), (2, 1)])
    """

    def __init__(self, *, tau="estimate", mu="balanced", variant="both", optimizer="qp", learning_rate=None,
                 tau_swaps=100, lam=None, C=None, loss="hinge", margin=None, l1=0.0, lower=None, upper=None,
                 formulation="auto", solver="auto", tol=None, max_iter=None, random_state=None, solver_options=None,
                 score_k=10, verbose=False):
        self.tau = tau
        self.mu = mu
        self.loss = loss
        self.margin = margin
        self.l1 = l1
        self.lower = lower
        self.upper = upper
        self.variant = variant
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.tau_swaps = tau_swaps
        self.lam = lam
        self.C = C
        self.formulation = formulation
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.solver_options = solver_options
        self.score_k = score_k
        self.verbose = verbose

    def _check_params(self):
        super()._check_params()
        if self.variant not in ("both", "rank", "query"):
            raise ValidationError(f"variant must be 'both', 'rank' or 'query', got {self.variant!r}")
        if self.optimizer not in ("qp", "gd"):
            raise ValidationError(f"optimizer must be 'qp' or 'gd', got {self.optimizer!r}")

    def _costs(self, data):
        table = None if self.variant == "query" else tau_table(self.tau, data, T=self.tau_swaps,
                                                                random_state=self.random_state)
        return table, (None if self.variant == "rank" else self.mu)

    def _solver_name(self, problem: RankingProblem) -> str:
        if self.optimizer == "gd":
            if str(self.solver).lower() not in ("auto", "gd"):
                raise ValidationError(f"optimizer='gd' runs the gd solver; solver={self.solver!r} contradicts it")
            return "gd"
        return super()._solver_name(problem)

    def _options(self, solver: str) -> dict:
        options = super()._options(solver)
        if solver == "gd" and self.learning_rate is not None:
            options.setdefault("learning_rate", self.learning_rate)
        return options
