"""Per-pair costs: ``τ`` per grade pair, ``μ`` per query, and Theorem 1's ``C``.

The weighted hinge loss (9) of Cao et al. (SIGIR 2006) weighs pair ``i`` by
``τ_k(i) μ_q(i)``; Theorem 1 turns it into the QP (14) with
``C_i = τ_k(i) μ_q(i) / (2λ)``. ECML 2006's Proposition 1 is the case
``μ = 1``; Ranking SVM is ``τ = μ = 1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real

import numpy as np

from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet

__all__ = ["pair_weights", "tau_per_pair", "mu_per_pair", "balanced_mu", "theorem1_C", "check_lam", "estimate_tau"]


def _positive(value, what: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be a positive number, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise ValidationError(f"{what} must be positive and finite, got {value!r}")
    return v


def check_lam(lam) -> float:
    """Validate the regularisation weight ``λ`` (positive and finite) and return it as float."""
    if isinstance(lam, bool) or not isinstance(lam, (Real, np.floating, np.integer)):
        raise ValidationError(f"lam must be a positive number, got {lam!r}")
    return _positive(lam, "lam")


def _tau_table(tau) -> dict[tuple, float]:
    """Accept a mapping ``{(higher, lower): value}`` or a DataFrame with columns higher, lower, tau."""
    if hasattr(tau, "columns") and {"higher", "lower", "tau"} <= set(tau.columns):
        tau = {(row.higher, row.lower): row.tau for row in tau.itertuples()}
    if not isinstance(tau, Mapping):
        raise ValidationError(
            "tau must be None or a mapping {(higher grade, lower grade): value}, "
            f"got {type(tau).__name__}"
        )
    table = {}
    for key, value in tau.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ValidationError(f"tau key {key!r} is not a (higher grade, lower grade) pair")
        hi, lo = key
        try:
            ordered = bool(hi > lo)
        except TypeError:
            raise ValidationError(f"tau key {key!r} does not hold two comparable grades") from None
        if not ordered:
            raise ValidationError(
                f"tau key {key!r} is ordered the wrong way: write (higher grade, lower grade), "
                f"e.g. {(lo, hi)!r}"
            )
        table[(hi, lo)] = _positive(value, f"tau[{key!r}]")
    return table


def tau_per_pair(pairs: PairSet, tau=None) -> np.ndarray:
    """``τ_k(i)`` of every pair from a table of grade-pair costs.

    Parameters
    ----------
    pairs : PairSet
    tau : mapping or DataFrame, optional
        ``{(higher grade, lower grade): positive value}`` with a value for
        every grade pair present in ``pairs`` and no others (a DataFrame with
        columns ``higher``, ``lower``, ``tau`` is accepted too). Default: all
        ones.

    Raises
    ------
    ValidationError
        For a non-positive or non-finite value, a key ordered the wrong way, a
        grade pair that does not occur in the data, or a grade pair of the
        data without a value.
    """
    if tau is None:
        return np.ones(pairs.n_pairs)
    table = _tau_table(tau)
    present = pairs.types
    unknown = [k for k in table if k not in set(present)]
    if unknown:
        raise ValidationError(
            f"tau has grade pairs that do not occur in the data: {unknown}; present: {present}"
        )
    missing = [k for k in present if k not in table]
    if missing:
        raise ValidationError(f"tau has no value for grade pairs {missing}; give one for each of {present}")
    # Code the pairs by their distinct types, not by the data's grades: explicit
    # preference pairs have type (1, 0) whatever the grades of the documents.
    types, code = np.unique(pairs.pair_type, axis=0, return_inverse=True)
    by_code = np.array([table[tuple(row.tolist())] for row in types], dtype=np.float64)
    return by_code[code.ravel()]


def balanced_mu(pairs: PairSet) -> dict:
    """Query weights of equation (10) of Cao et al. (SIGIR 2006).

    .. math:: \\mu_q = \\frac{\\max_j \\#\\{\\text{pairs of } q_j\\}}{\\#\\{\\text{pairs of } q\\}}

    so that every query carries the same total weight. Queries without pairs
    get no entry.
    """
    counts = pairs.pairs_per_query
    top = counts.max()
    ids = pairs.data.query_ids
    return {ids[j].item() if hasattr(ids[j], "item") else ids[j]: float(top / counts[j])
            for j in np.flatnonzero(counts)}


def mu_per_pair(pairs: PairSet, mu=None) -> np.ndarray:
    """``μ_q(i)`` of every pair.

    Parameters
    ----------
    pairs : PairSet
    mu : None, "balanced", or mapping
        None: all ones. ``"balanced"``: equation (10) of the SIGIR paper, see
        :func:`balanced_mu`. A mapping ``{query id: positive value}`` with a
        value for every query that has pairs (extra keys that are not query ids
        of the data are an error).
    """
    if mu is None:
        return np.ones(pairs.n_pairs)
    if isinstance(mu, str):
        if mu != "balanced":
            raise ValidationError(f"mu must be None, 'balanced' or a mapping, got {mu!r}")
        counts = pairs.pairs_per_query.astype(np.float64)
        return counts.max() / counts[pairs.query]
    if not isinstance(mu, Mapping):
        raise ValidationError(f"mu must be None, 'balanced' or a mapping {{qid: value}}, got {type(mu).__name__}")
    ids = pairs.data.query_ids
    pos = {(k.item() if hasattr(k, "item") else k): j for j, k in enumerate(ids)}
    unknown = [k for k in mu if k not in pos]
    if unknown:
        raise ValidationError(f"mu has query ids that are not in the data: {unknown[:5]}")
    per_query = np.full(ids.shape[0], np.nan)
    for k, v in mu.items():
        per_query[pos[k]] = _positive(v, f"mu[{k!r}]")
    values = per_query[pairs.query]
    if np.isnan(values).any():
        lacking = ids[np.unique(pairs.query[np.isnan(values)])]
        raise ValidationError(f"mu has no value for queries {lacking[:5].tolist()} (they have pairs)")
    return values


def pair_weights(pairs: PairSet, tau=None, mu=None) -> np.ndarray:
    """Per-pair weight ``τ_k(i) μ_q(i)`` of the loss (9) of Cao et al. (SIGIR 2006).

    Parameters
    ----------
    pairs : PairSet
    tau : mapping, optional
        ``{(higher grade, lower grade): value}``; see :func:`tau_per_pair`.
        Default all ones (Ranking SVM).
    mu : None, "balanced" or mapping, optional
        Per-query weight; see :func:`mu_per_pair`. Default all ones
        (ECML 2006's cost-sensitive Ranking SVM).

    Returns
    -------
    ndarray of shape (n_pairs,)

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> from cvxrank.pairs import make_pairs
    >>> pairs = make_pairs(RankingData(np.eye(4), [2, 1, 0, 1], qid=[1, 1, 1, 2]))
    >>> pair_weights(pairs, tau={(2, 1): 3.0, (2, 0): 3.0, (1, 0): 0.5}).tolist()
    [3.0, 3.0, 0.5]
    """
    return tau_per_pair(pairs, tau) * mu_per_pair(pairs, mu)


def theorem1_C(weights, lam) -> np.ndarray:
    """Per-pair QP costs of Theorem 1 of Cao et al. (SIGIR 2006).

    .. math:: C_i = \\frac{\\tau_{k(i)} \\mu_{q(i)}}{2 \\lambda}

    With these ``C_i`` the QP (14) and the hinge problem (9) have the same
    minimiser and ``L(w) = 2λ M(w)``.

    Examples
    --------
    >>> theorem1_C([1.0, 2.0], lam=0.25).tolist()
    [2.0, 4.0]
    """
    lam = check_lam(lam)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 1:
        raise ValidationError(f"weights must be 1-dimensional, got shape {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValidationError("weights must be non-negative and finite")
    return weights / (2.0 * lam)


def estimate_tau(data, T: int | None = 100, *, random_state=None):
    """Estimate ``τ`` per grade pair by the swap heuristic (Fig. 1 of Xu et al., ECML 2006).

    For each query, start from its perfect ranking (NDCG@1 = 1), swap a
    random document of grade ``a`` with a random one of grade ``b < a``, and
    record the drop in NDCG@1; average over ``T`` swaps, then over the queries
    that have both grades (queries lacking either are skipped). The same
    heuristic is section 5.2 of Cao et al. (SIGIR 2006). Gains are
    ``2^r - 1`` as in (20)/SIGIR.

    Only a swap that moves the query's top document changes NDCG@1: that
    happens when ``a`` is the query's highest grade and the random grade-``a``
    document is the one ranked first (probability ``1/n_a``), and the drop is
    then ``1 - (2^b - 1)/(2^a - 1)``. The number of such hits among ``T``
    swaps is drawn from its exact binomial distribution, so the result has
    the distribution of the paper's procedure; ``T=None`` returns its
    expectation instead.

    Parameters
    ----------
    data : RankingData
        Grades must be non-negative (exponential gains).
    T : int or None, default 100
        Swaps per query and grade pair; None for the exact expectation.
    random_state : int, numpy Generator or None
        Seed of the swaps.

    Returns
    -------
    pandas.DataFrame
        Columns ``higher``, ``lower``, ``tau``, ``n_queries`` (queries that
        had both grades), one row per grade pair occurring in some query.
        Pass it as ``tau=`` to :func:`pair_weights`. A pair whose every query
        also has a higher grade gets ``τ = 0``, which ``pair_weights``
        rejects by name: NDCG@1 cannot see such errors.

    Raises
    ------
    ValidationError
        For data with fewer than two grades, negative grades, or a bad ``T``.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> data = RankingData(np.zeros((4, 1)), y=[2, 1, 0, 0], qid=[1, 1, 1, 1])
    >>> estimate_tau(data, T=None)[["higher", "lower", "tau"]].to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
    [{'higher': 1, 'lower': 0, 'tau': 0.0}, {'higher': 2, 'lower': 0, 'tau': 1.0},
     {'higher': 2, 'lower': 1, 'tau': 0.6666666666666667}]
    """
    import pandas as pd

    if not isinstance(data, RankingData):
        raise ValidationError(f"estimate_tau takes RankingData, got {type(data).__name__}")
    if T is not None and (isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1):
        raise ValidationError(f"T must be a positive integer or None, got {T!r}")
    grades = data.grades
    if grades.size < 2:
        raise ValidationError(f"tau estimation needs at least two grades, the data has only {grades.tolist()}")
    if grades[0] < 0:
        raise ValidationError(f"tau estimation uses gains 2^r - 1 and needs grades >= 0, found {grades[0]}")
    rng = np.random.default_rng(random_state)
    g = grades.size
    code = np.searchsorted(grades, data.y)
    counts = np.zeros((data.n_queries, g), dtype=np.int64)
    np.add.at(counts, (data.query_index, code), 1)
    top = g - 1 - np.argmax(counts[:, ::-1] > 0, axis=1)  # highest grade present in each query
    gain = np.exp2(grades.astype(np.float64)) - 1.0
    rows = []
    for a in range(g):
        for b in range(a):
            both = (counts[:, a] > 0) & (counts[:, b] > 0)
            if not both.any():
                continue
            p_hit = np.where(top == a, 1.0 / np.maximum(counts[:, a], 1), 0.0)[both]
            drop = 1.0 - gain[b] / gain[a]
            hits = p_hit if T is None else rng.binomial(T, p_hit) / T
            rows.append({"higher": grades[a].item(), "lower": grades[b].item(),
                         "tau": float(np.mean(hits * drop)), "n_queries": int(both.sum())})
    return pd.DataFrame(rows, columns=["higher", "lower", "tau", "n_queries"])
