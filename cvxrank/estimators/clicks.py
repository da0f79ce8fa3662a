"""Propensity SVM-Rank as a scikit-learn estimator: a Ranking SVM fitted on a click log.

:class:`ClickRankSVM` turns a :class:`~cvxrank.clicks.log.ClickLog` into preference pairs and
per-pair weights (:func:`cvxrank.clicks.click_problem`), solves the weighted hinge problem (9) of
Cao et al. (SIGIR 2006) through :func:`cvxrank.solve` and keeps the certified solution. With
``rule="propensity"`` it is Propensity SVM-Rank (Joachims, Swaminathan & Schnabel, WSDM 2017):

.. math::

    \\min_w \\; \\sum_{\\text{clicked } d} \\sum_{y \\ne d} \\frac{1}{p_{\\mathrm{pos}(d)}}
    \\big[1 - \\langle w, x_d - x_y \\rangle\\big]_+ + \\lambda \\lVert w \\rVert^2 ,

the QP (14) with the costs ``C_i = (1/p_i)/(2λ)`` of Theorem 1. The propensities ``p_k`` are
given (an ``η`` of ``p_k = (1/k)^η``, a function, an array, the log's own column) or estimated
from the clicks (:func:`~cvxrank.clicks.estimate_propensities_em`, or
:func:`~cvxrank.clicks.estimate_propensities_swap` on a swap-intervention log).
"""

from __future__ import annotations

import numpy as np

from cvxrank._validation import Interval, Options, check
from cvxrank.clicks import (
    ClickLog,
    PropensityEstimate,
    click_problem,
    estimate_propensities_em,
    estimate_propensities_swap,
    position_propensity,
)
from cvxrank.clicks.pairs import RULES
from cvxrank.estimators.base import resolve_lam
from cvxrank.estimators.pairwise import _PairwiseRanker
from cvxrank.exceptions import ValidationError

__all__ = ["ClickRankSVM", "PROPENSITY_ESTIMATORS"]

#: The propensity estimators of ``propensities="estimate"``.
PROPENSITY_ESTIMATORS = ("em", "swap")


class ClickRankSVM(_PairwiseRanker):
    """Ranking SVM on clicks: Propensity SVM-Rank (Joachims et al., WSDM 2017) or click > skip above (2002).

    .. math::

        \\min_w \\; \\sum_i c_i \\big[1 - \\langle w, x_{b(i)} - x_{o(i)} \\rangle\\big]_+ + \\lambda \\lVert w \\rVert^2,
        \\qquad c_i = \\min(1/p_{\\mathrm{pos}(b(i))}, \\mathrm{clip})

    over the pairs ``i`` of a clicked document ``b(i)`` and another document ``o(i)`` shown in its
    session (``rule="propensity"``), or ``c_i = 1`` over the pairs of a clicked document and an
    unclicked one shown above it (``rule="skip_above"``): :func:`cvxrank.clicks.click_pairs`. It
    is the problem (9)/SIGIR 2006 with explicit pairs, solved as the QP (14) with
    ``C_i = c_i/(2λ)`` (Theorem 1) by any solver of :func:`cvxrank.solve`, and certified by its
    duality gap. ``fit`` takes a click log; ``predict`` and ``score`` take documents.

    Parameters
    ----------
    rule : {"propensity", "skip_above"}, default "propensity"
        How clicks become pairs (:data:`cvxrank.clicks.RULES`). ``"skip_above"`` weighs every
        pair 1: ``propensities`` is then not used, and ``clip`` must stay None.
    propensities : "estimate", "log", float, callable, array-like or PropensityEstimate, default "estimate"
        The examination probability ``p_k`` of position ``k``:

        * ``"estimate"``: estimated at ``fit`` by ``estimator`` from the click log, or from the
          ``propensity_log`` given to ``fit``;
        * ``"log"``: the log's own ``propensity`` column (known for every clicked impression);
        * a float ``η >= 0``: ``p_k = (1/k)^η`` (:func:`cvxrank.clicks.position_propensity`);
          ``η = 0`` weighs every click 1, the naive (unweighted) version of the same objective;
        * a function of an int64 array of positions returning one ``p`` each;
        * an array with ``p_k`` at index ``k - 1``;
        * a :class:`~cvxrank.clicks.PropensityEstimate` made beforehand (its ``propensity_form``).
    estimator : {"em", "swap"}, default "em"
        With ``propensities="estimate"``: :func:`~cvxrank.clicks.estimate_propensities_em`
        (needs documents shown at several positions) or
        :func:`~cvxrank.clicks.estimate_propensities_swap` (needs a swap-intervention log, and the
        production ``ranker`` given to ``fit``).
    propensity_form : {"eta", "theta"}, default "eta"
        Which part of an estimate weighs the clicks: the fitted power law ``(1/k)^η̂`` (smooth,
        defined at every position) or the per-position ratios ``θ_k/θ_1`` (no parametric
        assumption; a click at a position the estimate has no data for is refused).
    clip : float >= 1, optional
        Weights ``min(1/p, clip)``: bounded variance, some bias (:func:`cvxrank.clicks.click_pairs`).
    normalize : bool, default False
        ``True``: divide the weights by their sum, so that ``λ`` weighs ``‖w‖²`` against the
        *mean* weighted hinge loss: ``λ`` then means the same whatever the number of sessions and
        the size of the weights ``1/p``. Solved as the same problem with ``λ·Σ_i c_i`` (the
        same minimiser; objective values ``Σ_i c_i`` times those of the normalised problem).
    merge : bool, default True
        Merge identical (better, worse) pairs of different sessions into one pair, weights
        summed (the same loss, fewer pairs).
    lam : float, optional
        ``λ`` of (9) (default 0.5, :data:`cvxrank.costs.DEFAULT_LAM`, when ``C`` is not given either).
    C : float, optional
        The QP cost instead of ``lam``: ``λ = 1/(2C)``.
    formulation : {"auto", "primal", "lifted", "dual", "hinge"}, default "auto"
        The CVXPY problem a CVXPY solver solves (:func:`cvxrank.formulations.build`).
    solver : str, default "auto"
        Any name of :func:`cvxrank.available_solvers` that takes explicit pairs (``"auto"``:
        ``clarabel``), or ``"fallback"``.
    tol : float, optional
        Certified relative duality gap for status ``"optimal"`` (default: the solver's own).
    max_iter : int, optional
        Iteration cap, under the solver's own option name.
    solver_options : dict, optional
        The solver's own options, passed through :func:`cvxrank.solve`.
    score_k : int, default 10
        :meth:`score` is the mean NDCG@``score_k`` on graded documents.
    verbose : bool, default False

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        The weight vector ``w``; scores are ``X @ coef_``.
    result_ : SolveResult
        The certified solution (status, objective ``L(w)`` of (9), duality gap, times).
    lam_ : float
        The ``λ`` of the problem solved (``lam`` times the weights' sum with ``normalize=True``).
    propensities_ : ndarray of shape (max position,) or None
        ``p_k`` of the positions ``1, 2, ...`` of the log, as used (for ``"log"``: the mean of the
        log's column at each position; NaN where the log has none); None for ``"skip_above"``.
    eta_ : float or None
        ``η`` of the propensities: given, or estimated (``η̂``); NaN when they are not a power law
        (a function, an array, the log's column); None for ``"skip_above"``.
    propensity_estimate_ : PropensityEstimate or None
        The estimate used (``propensities="estimate"`` or an estimate given), with its standard errors.
    n_pairs_ : int
        Pairs of the problem solved (after merging).
    weight_sum_ : float
        ``Σ_i c_i`` over those pairs.
    n_clicks_, n_sessions_ : int
        Clicks and sessions of the log.
    n_iter_ : int
    n_features_in_ : int

    Notes
    -----
    ``fit(log)`` takes a :class:`~cvxrank.clicks.ClickLog`, which holds the documents' features
    (``log.documents``): a click log is not a table of ``(X, y)`` rows, so scikit-learn's
    cross-validation of ``fit(X, y)`` does not apply; :meth:`score` evaluates on graded documents
    (``RankingData``, or ``X, y, qid``).

    Examples
    --------
    >>> import cvxrank as cr
    >>> from cvxrank.clicks import make_clicks
    >>> data = cr.make_ranking(n_queries=8, docs_per_query=10, n_features=3, random_state=0)
    >>> log = make_clicks(data, eta=1.0, n_sessions=300, top_k=5, random_state=0)
    >>> model = ClickRankSVM(propensities=1.0, lam=0.1).fit(log)
    >>> model.result_.status, model.eta_, model.propensities_.tolist()
    ('optimal', 1.0, [1.0, 0.5, 0.3333333333333333, 0.25, 0.2])
    """

    def __init__(self, *, rule="propensity", propensities="estimate", estimator="em", propensity_form="eta",
                 clip=None, normalize=False, merge=True, lam=None, C=None, formulation="auto", solver="auto", tol=None,
                 max_iter=None, solver_options=None, score_k=10, verbose=False):
        self.rule = rule
        self.propensities = propensities
        self.estimator = estimator
        self.propensity_form = propensity_form
        self.clip = clip
        self.normalize = normalize
        self.merge = merge
        self.lam = lam
        self.C = C
        self.formulation = formulation
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.score_k = score_k
        self.verbose = verbose

    # -- parameters -------------------------------------------------------------------------
    def _check_params(self):
        super()._check_params()
        check("rule", self.rule, Options(RULES))
        check("estimator", self.estimator, Options(PROPENSITY_ESTIMATORS))
        check("propensity_form", self.propensity_form, Options(("eta", "theta")))
        for name in ("normalize", "merge"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise ValidationError(f"{name} must be True or False, got {value!r}")
        if self.clip is not None:
            check("clip", self.clip, Interval(1, np.inf, closed="left", why="a weight 1/p is at least 1"))
            if self.rule == "skip_above":
                raise ValidationError("clip applies to rule='propensity'; rule='skip_above' weighs every pair 1")
        p = self.propensities
        if isinstance(p, str):
            check("propensities", p, Options(("estimate", "log")))
        elif isinstance(p, (bool, np.bool_)):
            raise ValidationError(f"propensities must be 'estimate', 'log', an eta >= 0, a function of the position, "
                                  f"an array or a PropensityEstimate, got {p!r}")
        elif isinstance(p, (int, float, np.integer, np.floating)):
            check("propensities (an eta)", p, Interval(0, np.inf, closed="left"))

    def _resolve_propensities(self, log: ClickLog, propensity_log, ranker):
        """``(propensities for click_pairs, eta, estimate)`` from the ``propensities`` parameter."""
        p = self.propensities
        if isinstance(p, str) and p == "log":
            return None, float("nan"), None
        if isinstance(p, str):  # "estimate"
            source = log if propensity_log is None else propensity_log
            if not isinstance(source, ClickLog):
                raise ValidationError(f"propensity_log must be a ClickLog, got {type(source).__name__}")
            if self.estimator == "swap":
                estimate = estimate_propensities_swap(source, ranker=ranker)
            else:
                if ranker is not None:
                    raise ValidationError("ranker= names the production ranker of a swap-intervention log "
                                          "(estimator='swap'); EM does not use it")
                estimate = estimate_propensities_em(source)
            p = estimate
        elif ranker is not None or propensity_log is not None:
            raise ValidationError("propensity_log= and ranker= are read only with propensities='estimate'")
        if isinstance(p, PropensityEstimate):
            if not np.isfinite(p.eta) and self.propensity_form == "eta":
                raise ValidationError(f"the propensity estimate has no eta ({p!r}); use propensity_form='theta'")
            table = p.propensity if self.propensity_form == "eta" else p.theta
            return table, float(p.eta), p
        if isinstance(p, (int, float, np.integer, np.floating)):
            eta = float(p)
            return (lambda k: position_propensity(k, eta)), eta, None
        return p, float("nan"), None  # a function or an array: click_pairs checks it

    def _used_propensities(self, log: ClickLog, table) -> np.ndarray:
        """``p_k`` of positions ``1 .. max position`` of the log, as the pairs were weighed."""
        K = int(log.position.max())
        k = np.arange(1, K + 1, dtype=np.int64)
        if table is None:  # the log's column: its mean at each position
            known = np.isfinite(log.propensity)
            total = np.bincount(log.position[known] - 1, weights=log.propensity[known], minlength=K)
            count = np.bincount(log.position[known] - 1, minlength=K)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(count > 0, total / np.maximum(count, 1), np.nan)
        if callable(table):
            return np.asarray(table(k.copy()), dtype=np.float64).reshape(-1)
        arr = np.asarray(table, dtype=np.float64).reshape(-1)
        return np.concatenate([arr[:K], np.full(max(K - arr.size, 0), np.nan)])

    # -- fitting ----------------------------------------------------------------------------
    def fit(self, log, y=None, *, propensity_log=None, ranker=None):
        """Fit ``w`` on a click log.

        Parameters
        ----------
        log : ClickLog
            The click log; its ``documents`` hold the features.
        y : None
            Not used (the clicks are the labels); present for scikit-learn's signature.
        propensity_log : ClickLog, optional
            With ``propensities="estimate"``: estimate the propensities from this log instead of
            ``log`` (e.g. a swap-intervention log of the same documents, ``estimator="swap"``).
        ranker : None, array-like or callable, optional
            With ``estimator="swap"``: the production ranker the swap-intervention log was shown
            with (:func:`cvxrank.clicks.estimate_propensities_swap`; default its first feature).

        Returns
        -------
        self

        Raises
        ------
        ValidationError
            For a bad parameter, something other than a ClickLog, a log that gives no pair, a
            clicked impression without a propensity, or an estimator that cannot estimate from the log.
        """
        self._check_params()
        if not isinstance(log, ClickLog):
            raise ValidationError(f"ClickRankSVM.fit takes a ClickLog (documents inside), got {type(log).__name__}; "
                                  "graded documents go to RankSVM")
        if y is not None:
            raise ValidationError("ClickRankSVM.fit reads its labels from the clicks: y must be None")
        lam = resolve_lam(self.lam, self.C)
        if self.rule == "skip_above":
            if propensity_log is not None or ranker is not None:
                raise ValidationError("propensity_log= and ranker= are read only with rule='propensity'")
            table, eta, estimate = None, None, None
            problem = click_problem(log, "skip_above", lam=lam, merge=bool(self.merge))
        else:
            table, eta, estimate = self._resolve_propensities(log, propensity_log, ranker)
            problem = click_problem(log, "propensity", lam=lam, propensities=table, clip=self.clip,
                                    merge=bool(self.merge))
        # From the groups when the problem has them: reading problem.weights would form the pairs
        groups = problem.groups
        weight_sum = groups.total_weight() if groups is not None else float(problem.weights.sum())
        if self.normalize:
            problem = problem.with_lam(lam * weight_sum)
        solver = self._solver_name(problem)
        result = self._solve(problem, solver, self._options(solver))
        self.coef_ = np.asarray(result.w, dtype=np.float64)
        self.n_features_in_ = log.documents.n_features
        self.result_ = result
        self.solve_summary_ = result.summary()
        self.n_iter_ = int(result.iterations or 0)
        self.lam_ = float(problem.lam)
        self.tau_ = None
        self.propensities_ = None if self.rule == "skip_above" else self._used_propensities(log, table)
        self.eta_ = eta
        self.propensity_estimate_ = estimate
        self.n_pairs_ = int(problem.n_pairs)
        self.weight_sum_ = weight_sum
        self.n_clicks_ = log.n_clicks
        self.n_sessions_ = log.n_sessions
        return self

    def fit_path(self, *args, **kwargs):
        """Not offered for click logs: fit one model per ``λ`` (each fit forms the pairs once)."""
        raise ValidationError("ClickRankSVM has no fit_path; fit one model per lam")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False  # the clicks are the labels
        return tags
