"""Propensities of examination: the position-based model and two estimators.

The position-based model (PBM) of clicks (Joachims et al., WSDM 2017; Wang et al., WSDM 2018):
a document ``d`` of query ``q`` shown at position ``k`` is clicked with probability

.. math:: P(c = 1 \\mid q, d, k) = \\theta_k \\, \\gamma_{q,d},

``θ_k`` the probability that position ``k`` is examined (its *propensity*) and ``γ_{q,d}`` the
probability that an examined ``d`` is clicked (its relevance). A common parametric form is
:func:`position_propensity`, ``θ_k = (1/k)^η``.

Only ratios ``θ_k / θ_1`` matter for learning (every weight ``1/θ_k`` scales alike, which a
change of ``λ`` absorbs), and only ratios can be estimated: the estimators return
``θ_k / θ_1`` (so ``θ_1 = 1``) and the ``η`` fitted to them, each with a standard error.

* :func:`estimate_propensities_swap`: swap interventions (Joachims et al. 2017, "propensity
  estimation with interventions"; Wang et al., SIGIR 2016). In the sessions where the result at
  rank 1 is moved to position ``k`` (``k`` drawn uniformly), its click rate is
  ``θ_k E[γ_top]``, where the sessions without a swap give ``θ_1 E[γ_top]``: the ratio is
  ``θ_k/θ_1``, whatever the relevance, because randomisation gives every ``k`` the same
  distribution of top results.
* :func:`estimate_propensities_em`: expectation-maximisation on the click log alone (Wang,
  Golbandi, Bendersky, Metzler, Najork, WSDM 2018, "Position Bias Estimation for Unbiased
  Learning to Rank in Personal Search", the EM of their Section 4 without the regression step):
  identifiable only when documents are shown at several positions.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cvxrank._validation import POSITIVE_INT, Interval, check
from cvxrank.clicks.log import ClickLog
from cvxrank.exceptions import ValidationError

__all__ = ["PropensityEstimate", "estimate_propensities_em", "estimate_propensities_swap", "position_propensity",
           "propensities_of"]


def position_propensity(k, eta: float = 1.0):
    """The examination probability of position ``k`` in the position-based model, ``(1/k)^η``.

    Parameters
    ----------
    k : int or array-like of int, each >= 1
        Positions (1 = top).
    eta : float, default 1.0
        ``η >= 0``: the severity of the position bias (0: every position examined).

    Returns
    -------
    float or ndarray of float

    Examples
    --------
    >>> position_propensity([1, 2, 4], eta=1.0).tolist(), round(float(position_propensity(3, eta=2.0)), 12)
    ([1.0, 0.5, 0.25], 0.111111111111)
    """
    eta = check("eta", eta, Interval(0, np.inf, closed="left"))
    arr = np.asarray(k)
    if arr.dtype.kind not in "iuf" or (arr.size and (not np.all(np.isfinite(arr)) or np.any(arr < 1))):
        raise ValidationError(f"positions must be numbers >= 1, got {k!r}")
    out = np.power(1.0 / arr.astype(np.float64), eta)
    return float(out) if out.ndim == 0 else out


def propensities_of(log: ClickLog, impressions, propensities=None) -> np.ndarray:
    """The propensity of each of the given impressions of ``log``.

    Parameters
    ----------
    log : ClickLog
    impressions : array-like of int
        Impression indices (rows of the log).
    propensities : None, callable or array-like, optional
        ``None``: the log's own ``propensity`` column (every one of these impressions must have
        one). A function of the position (called once with an int64 array of positions, returning
        one number each), e.g. ``lambda k: position_propensity(k, 1.0)``; or an array ``θ`` with
        ``θ[k - 1]`` the propensity of position ``k`` (position 1 first, as
        :attr:`PropensityEstimate.theta`). Given, it replaces the log's column.

    Returns
    -------
    ndarray of float64
        Positive finite values. Values above 1 are accepted: relative propensities ``θ_k/θ_1``
        estimated from clicks may exceed 1, and a common scale of all propensities only rescales
        the weights ``1/θ``.

    Raises
    ------
    ValidationError
        Naming the impression (and line) whose propensity is unknown, not positive and finite, or
        whose position the array does not cover.
    """
    idx = np.asarray(impressions, dtype=np.int64)
    pos = log.position[idx]
    if propensities is None:
        p = log.propensity[idx]
        unknown = np.isnan(p)
        if unknown.any():
            i = int(idx[np.flatnonzero(unknown)[0]])
            raise ValidationError(f"{log.where(i)}: the propensity of this clicked impression is unknown; record "
                                  "p:<propensity> in the log or pass propensities= (a function of the position, "
                                  "or an array with the propensity of position k at index k - 1)")
        return p.astype(np.float64)
    if callable(propensities):
        try:
            p = np.asarray(propensities(pos.copy()), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"propensities(position) must return numbers: {exc}") from None
        if p.shape != pos.shape:
            raise ValidationError(f"propensities(position) must return one value per position ({pos.shape[0]}), "
                                  f"got shape {p.shape}")
    else:
        try:
            table = np.asarray(propensities, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValidationError("propensities must be None, a function of the position or an array "
                                  "(position 1 first)") from None
        if table.ndim != 1 or table.size == 0:
            raise ValidationError(f"a propensity array must be 1-dimensional and non-empty, got shape {table.shape}")
        beyond = pos > table.size
        if beyond.any():
            i = int(idx[np.flatnonzero(beyond)[0]])
            raise ValidationError(f"{log.where(i)}: position {log.position[i]} has no propensity (the array covers "
                                  f"positions 1..{table.size})")
        p = table[pos - 1]
    bad = ~np.isfinite(p) | (p <= 0)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValidationError(f"{log.where(int(idx[j]))}: the propensity of position {pos[j]} is {float(p[j])!r}; "
                              "propensities must be positive and finite")
    return p


@dataclass(frozen=True)
class PropensityEstimate:
    """Estimated propensities ``θ_k/θ_1`` of positions ``1..K`` and the fitted ``η``.

    Attributes
    ----------
    method : {"swap", "em"}
    theta : ndarray of float64, shape (K,)
        ``θ_k / θ_1`` of positions ``1..K`` (``theta[0] = 1``); NaN for a position without data.
        Pass it as ``propensities=`` of :func:`~cvxrank.clicks.pairs.click_pairs`.
    theta_se : ndarray of float64, shape (K,)
        Standard error of each ``theta`` (delta method; 0 at position 1, NaN where undefined).
    eta : float
        ``η`` of ``θ_k/θ_1 = k^{-η}``, fitted by generalised least squares to ``log θ_k`` over the
        positions ``k >= 2`` with ``θ_k > 0``, weighted by the estimates' covariance.
    eta_se : float
        Its standard error (from the same covariance).
    counts : pandas.DataFrame
        One row per position: what the estimate rests on (sessions and clicks for ``"swap"``,
        impressions and clicks for ``"em"``).
    n_iter : int or None
        EM iterations (None for ``"swap"``).
    converged : bool or None
        Whether EM met its tolerance within ``max_iter`` (None for ``"swap"``).
    log_likelihood : float or None
        EM's final log-likelihood of the clicks.
    """

    method: str
    theta: np.ndarray
    theta_se: np.ndarray
    eta: float
    eta_se: float
    counts: pd.DataFrame = field(repr=False)
    n_iter: int | None = None
    converged: bool | None = None
    log_likelihood: float | None = None

    @property
    def positions(self) -> np.ndarray:
        """Positions ``1..K``."""
        return np.arange(1, self.theta.shape[0] + 1)

    def propensity(self, k):
        """The fitted parametric propensity ``(1/k)^η̂`` (:func:`position_propensity`): smoother than
        :attr:`theta`; pass ``propensities=estimate.propensity`` to :func:`~cvxrank.clicks.pairs.click_pairs`."""
        return position_propensity(k, max(self.eta, 0.0))

    def __repr__(self) -> str:
        return (f"PropensityEstimate(method={self.method!r}, positions={self.theta.shape[0]}, "
                f"eta={self.eta:.4g}, eta_se={self.eta_se:.2g})")


def _fit_eta(log_theta: np.ndarray, cov: np.ndarray, positions: np.ndarray) -> tuple[float, float]:
    """GLS of ``log θ_k = -η log k`` with the covariance ``cov`` of ``log θ``: ``(η̂, se)``.

    ``η̂ = xᵀV⁻¹y / xᵀV⁻¹x`` and ``se = (xᵀV⁻¹x)^{-1/2}`` with ``x = -log k``; when ``V`` is singular
    (a rate estimated as exactly 0 or 1 has no sampling variance), ordinary least squares with
    the standard error ``sqrt(aᵀVa)``, ``a = x / xᵀx``.
    """
    x = -np.log(positions.astype(np.float64))
    try:
        L = np.linalg.cholesky(cov)
        xs = np.linalg.solve(L, x)
        ys = np.linalg.solve(L, log_theta)
        info = float(xs @ xs)
        return float(xs @ ys) / info, float(1.0 / np.sqrt(info))
    except np.linalg.LinAlgError:
        a = x / float(x @ x)
        return float(a @ log_theta), float(np.sqrt(max(float(a @ cov @ a), 0.0)))


def estimate_propensities_swap(log: ClickLog, *, ranker=None) -> PropensityEstimate:
    """Propensity ratios ``θ_k/θ_1`` from swap interventions, and ``η``.

    In a swap-intervention log each session shows the production ranking with its rank-1 result
    swapped with the result at rank ``k`` (``k`` uniform over ``1..K``, ``k = 1`` no swap;
    :func:`~cvxrank.clicks.simulate.make_clicks` with ``swap=True``). The production ranker's top
    result sits at position ``k``; with ``n_k`` such sessions and ``c_k`` clicks on it,

    .. math::

        \\hat r_k = \\frac{c_k}{n_k} \\to \\theta_k \\, E[\\gamma_{top}],
        \\qquad \\widehat{\\theta_k / \\theta_1} = \\frac{\\hat r_k}{\\hat r_1},

    because the swap position is random, the same distribution of top results is seen at every
    ``k`` (Joachims et al., WSDM 2017, propensity estimation with swap interventions; Wang et
    al., SIGIR 2016). By the delta method ``Var(log r̂_k) ≈ (1 - r_k)/(n_k r_k)``, the ratios'
    standard errors follow and ``η`` is fitted by generalised least squares to
    ``log(θ_k/θ_1) = -η log k`` over the positions ``k >= 2`` with a click, with the covariance
    ``diag(v_k) + v_1 11ᵀ`` of the log-ratios (they share ``r̂_1``).

    Parameters
    ----------
    log : ClickLog
        A swap-intervention log.
    ranker : None, array-like or callable, optional
        The production ranker of the experiment (as for :func:`~cvxrank.clicks.simulate.make_clicks`;
        default the first feature): it names each query's top result and its ranking, which every
        session must show, swapped at one ``k``.

    Returns
    -------
    PropensityEstimate
        ``counts`` has the columns ``sessions`` (``n_k``) and ``clicks`` (``c_k``) per position.

    Raises
    ------
    ValidationError
        When a session is not a swap of the production ranking (naming its impression and line),
        or no session without a swap has a click on position 1.

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> from cvxrank.clicks.simulate import make_clicks
    >>> data = make_ranking(n_queries=20, docs_per_query=10, n_features=3, random_state=0)
    >>> log = make_clicks(data, eta=1.0, n_sessions=4000, top_k=5, swap=True, random_state=0)
    >>> estimate = estimate_propensities_swap(log)
    >>> bool(abs(estimate.eta - 1.0) < 3 * estimate.eta_se)
    True
    """
    from cvxrank.clicks.simulate import production_ranking

    if not isinstance(log, ClickLog):
        raise ValidationError(f"estimate_propensities_swap takes a ClickLog, got {type(log).__name__}")
    data = log.documents
    order, start = production_ranking(data, ranker)
    rank_of = np.empty(data.n_documents, dtype=np.int64)  # the production rank of each row (1 = top)
    rank_of[order] = np.arange(data.n_documents) - np.repeat(start[:-1], np.diff(start)) + 1
    top = order[start[:-1]]  # the top row of each query
    is_top = log.document == top[data.query_index[log.document]]
    has_top = np.bincount(log.session_index, weights=is_top, minlength=log.n_sessions) > 0
    if not has_top.all():
        s = int(np.flatnonzero(~has_top)[0])
        i = int(log.session_start[s])
        raise ValidationError(f"{log.where(i)}: session {log.session[i]} does not show the production ranker's top "
                              f"result (row {top[data.query_index[log.document[i]]]}) of its query; a swap-intervention "
                              "session shows it, at the position it was swapped to")
    k_of_session = np.zeros(log.n_sessions, dtype=np.int64)
    k_of_session[log.session_index[is_top]] = log.position[is_top]
    k = k_of_session[log.session_index]
    expected = np.where(log.position == 1, k, np.where(log.position == k, 1, log.position))
    wrong = rank_of[log.document] != expected
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise ValidationError(f"{log.where(i)}: position {log.position[i]} shows row {log.document[i]}, of production "
                              f"rank {rank_of[log.document[i]]}, where a swap of ranks 1 and {k[i]} shows the result "
                              f"of rank {expected[i]}: not a swap-intervention session of this ranker")
    K = int(k_of_session.max())
    n = np.bincount(k_of_session, minlength=K + 1)[1:].astype(np.float64)
    c = np.bincount(log.session_index[is_top], weights=log.click[is_top].astype(np.float64),
                    minlength=log.n_sessions)
    c = np.bincount(k_of_session, weights=c, minlength=K + 1)[1:]
    counts = pd.DataFrame({"sessions": n.astype(np.int64), "clicks": c.astype(np.int64)},
                          index=pd.Index(np.arange(1, K + 1), name="position"))
    if n[0] == 0 or c[0] == 0:
        raise ValidationError(f"no click on position 1 in the {int(n[0])} sessions without a swap: the ratios "
                              "θ_k/θ_1 are undefined (more sessions, or queries with relevant top results)")
    with np.errstate(divide="ignore", invalid="ignore"):
        r = c / n
        v = (1.0 - r) / (n * r)  # Var(log r̂_k), delta method
        theta = r / r[0]
        theta_se = theta * np.sqrt(v + v[0])
    theta_se[0] = 0.0
    use = np.flatnonzero((n > 0) & (c > 0))
    use = use[use > 0]
    if use.size == 0:
        raise ValidationError("no position k >= 2 has a click after a swap: η cannot be fitted")
    cov = np.diag(v[use]) + v[0]
    eta, eta_se = _fit_eta(np.log(theta[use]), cov, use + 1)
    return PropensityEstimate("swap", theta, theta_se, eta, eta_se, counts)


def _components(n_positions: int, cell_k: np.ndarray, cell_d: np.ndarray, n_docs: int) -> np.ndarray:
    """Connected component of each position in the bipartite graph positions -- documents (an edge
    where a document was shown at a position)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    m = n_positions + n_docs
    graph = sp.coo_matrix((np.ones(cell_k.size), (cell_k, n_positions + cell_d)), shape=(m, m))
    _, label = connected_components(graph, directed=False)
    return label[:n_positions]


def estimate_propensities_em(log: ClickLog, *, max_iter: int = 10_000, tol: float = 1e-7) -> PropensityEstimate:
    """Propensities ``θ_k/θ_1`` by EM under the position-based model, and ``η``.

    The model ``P(c = 1 | d, k) = θ_k γ_d`` (a document row ``d`` belongs to one query, so
    ``γ_d`` is Wang et al.'s ``γ_{q,d}``) with latent examination ``E`` and relevance ``R``,
    ``c = E R``. With ``N_{kd}`` impressions of ``d`` at ``k`` and ``C_{kd}`` clicks, one EM step
    (Wang et al., WSDM 2018, Section 4, without the regression of ``γ`` on features) is

    .. math::

        P(E = 1 \\mid c = 0) = \\frac{\\theta_k (1 - \\gamma_d)}{1 - \\theta_k \\gamma_d}, \\qquad
        P(R = 1 \\mid c = 0) = \\frac{(1 - \\theta_k) \\gamma_d}{1 - \\theta_k \\gamma_d},

        \\theta_k \\leftarrow \\frac{\\sum_d C_{kd} + (N_{kd} - C_{kd}) P(E = 1 \\mid c = 0)}{\\sum_d N_{kd}},
        \\qquad
        \\gamma_d \\leftarrow \\frac{\\sum_k C_{kd} + (N_{kd} - C_{kd}) P(R = 1 \\mid c = 0)}{\\sum_k N_{kd}} .

    The likelihood depends on the products ``θ_k γ_d`` only, so the ratios ``θ_k/θ_1`` are
    identified exactly when every position is linked to position 1 through documents shown at
    several positions (the bipartite graph of positions and documents is connected): a log whose
    every document is always shown at the same position (a fixed ranking) carries no information
    on position bias, and is refused.

    Standard errors come from the expected Fisher information of ``(log θ, log γ)`` at the
    estimate, ``w_{kd} = N_{kd} μ/(1 - μ)`` for ``μ = θ_k γ_d``, with the ``γ`` profiled out (a
    Schur complement) and ``log θ_1`` fixed; ``η`` is fitted to ``log θ_k`` by generalised least
    squares with that covariance.

    Parameters
    ----------
    log : ClickLog
    max_iter : int, default 10000
        The most EM steps (a count, never a time).
    tol : float, default 1e-7
        Stop when no ``log(θ_k/θ_1)`` moves by more than ``tol`` in a step.

    Returns
    -------
    PropensityEstimate
        ``counts`` has the columns ``impressions`` and ``clicks`` per position; a position
        without a click has ``θ_k = 0`` and is left out of the fit of ``η``. A warning says when
        EM stopped at ``max_iter``.

    Raises
    ------
    ValidationError
        When the positions are not all linked (the message names the groups of positions), or
        the log has no click.

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> from cvxrank.clicks.simulate import make_clicks
    >>> data = make_ranking(n_queries=20, docs_per_query=10, n_features=3, random_state=0)
    >>> estimate_propensities_em(make_clicks(data, n_sessions=200, top_k=5, random_state=0))
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: position bias is not identifiable from this log: no document links positions [1] to [2], [3], [4], [5] (every document is shown at one position only); randomise the rankings (e.g. swap interventions) so that documents appear at several positions
    """
    if not isinstance(log, ClickLog):
        raise ValidationError(f"estimate_propensities_em takes a ClickLog, got {type(log).__name__}")
    max_iter = check("max_iter", max_iter, POSITIVE_INT)
    tol = check("tol", tol, Interval(0, np.inf, closed="neither"))
    if log.n_clicks == 0:
        raise ValidationError("the log has no click: nothing to estimate propensities from")
    K = int(log.position.max())
    docs, d_index = np.unique(log.document, return_inverse=True)
    d_index = d_index.ravel()
    key = (log.position - 1) * docs.size + d_index
    cells, cell_of = np.unique(key, return_inverse=True)
    cell_k, cell_d = cells // docs.size, cells % docs.size
    N = np.bincount(cell_of.ravel(), minlength=cells.size).astype(np.float64)
    C = np.bincount(cell_of.ravel(), weights=log.click.astype(np.float64), minlength=cells.size)
    shown_at = np.bincount(cell_k, weights=N, minlength=K)
    present = np.flatnonzero(shown_at > 0)
    label = _components(K, cell_k, cell_d, docs.size)[present]
    if np.unique(label).size > 1:
        groups = [present[label == g] + 1 for g in pd.unique(label)]
        shown = ", ".join(str(g.tolist()) for g in groups[1:6]) + (", ..." if len(groups) > 6 else "")
        raise ValidationError(f"position bias is not identifiable from this log: no document links positions "
                              f"{groups[0].tolist()} to {shown} (every document is shown at one position only); "
                              "randomise the rankings (e.g. swap interventions) so that documents appear at several "
                              "positions")
    clicks_at = np.bincount(cell_k, weights=C, minlength=K)
    if clicks_at[0] == 0:
        raise ValidationError("no click at position 1: the ratios θ_k/θ_1 are undefined")
    theta = np.where(shown_at > 0, 0.5, 0.0)
    nd = np.bincount(cell_d, weights=N, minlength=docs.size)
    gamma = np.clip(np.bincount(cell_d, weights=C, minlength=docs.size) / nd, 0.01, 0.99)
    miss = N - C
    previous = None
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        t, g = theta[cell_k], gamma[cell_d]
        with np.errstate(divide="ignore", invalid="ignore"):
            denom = 1.0 - t * g
            p_exam = np.where(denom > 0, t * (1.0 - g) / denom, 0.0)
            p_rel = np.where(denom > 0, (1.0 - t) * g / denom, 0.0)
        theta = np.where(shown_at > 0, np.bincount(cell_k, weights=C + miss * p_exam, minlength=K)
                         / np.maximum(shown_at, 1.0), 0.0)
        gamma = np.bincount(cell_d, weights=C + miss * p_rel, minlength=docs.size) / nd
        with np.errstate(divide="ignore"):
            current = np.log(theta[present]) - np.log(theta[0])
        if previous is not None:
            moved = np.abs(current - previous)
            moved = moved[np.isfinite(moved)]
            if moved.size == 0 or moved.max() <= tol:
                converged = True
                break
        previous = current
    if not converged:
        warnings.warn(f"EM stopped after max_iter={max_iter} steps before the tolerance {tol:g}; the propensities "
                      "may still move: raise max_iter", RuntimeWarning, stacklevel=2)
    mu = np.clip(theta[cell_k] * gamma[cell_d], 1e-300, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        loglik = float(np.sum(C * np.log(mu)) + np.sum(np.where(miss > 0, miss * np.log1p(-np.minimum(mu, 1 - 1e-16)),
                                                                 0.0)))
    ratio = np.full(K, np.nan)
    ratio[present] = theta[present] / theta[0]
    theta_se = np.full(K, np.nan)
    theta_se[0] = 0.0
    # expected Fisher information of (u, v) = (log θ, log γ): J' W J with w = N μ/(1 - μ)
    free_k = np.flatnonzero((shown_at > 0) & (theta > 0))
    free_k = free_k[free_k > 0]
    eta = eta_se = float("nan")
    if free_k.size:
        mu_c = np.minimum(mu, 1.0 - 1e-12)
        w = np.where(mu > 1e-300, N * mu_c / (1.0 - mu_c), 0.0)
        I_uu = np.bincount(cell_k, weights=w, minlength=K)
        I_vv = np.bincount(cell_d, weights=w, minlength=docs.size)
        import scipy.sparse as sp

        W = sp.csr_matrix((w, (cell_k, cell_d)), shape=(K, docs.size))
        inv_vv = np.where(I_vv > 0, 1.0 / np.where(I_vv > 0, I_vv, 1.0), 0.0)
        schur = np.diag(I_uu) - (W.multiply(inv_vv[None, :]) @ W.T).toarray()
        S = schur[np.ix_(free_k, free_k)]
        try:
            cov = np.linalg.inv(S)
        except np.linalg.LinAlgError:
            cov = np.linalg.pinv(S)
        theta_se[free_k] = ratio[free_k] * np.sqrt(np.maximum(np.diag(cov), 0.0))
        eta, eta_se = _fit_eta(np.log(ratio[free_k]), cov, free_k + 1)
    counts = pd.DataFrame({"impressions": shown_at.astype(np.int64), "clicks": clicks_at.astype(np.int64)},
                          index=pd.Index(np.arange(1, K + 1), name="position"))
    return PropensityEstimate("em", ratio, theta_se, eta, eta_se, counts, n_iter=n_iter, converged=converged,
                              log_likelihood=loglik)
