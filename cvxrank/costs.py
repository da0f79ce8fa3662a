"""One costs value for the whole package: ``τ`` per grade pair, ``μ`` per query, or per-pair weights.

The weighted hinge loss (9) of Cao et al. (SIGIR 2006) weighs pair ``i`` by
``c_i = τ_k(i) μ_q(i)``; Theorem 1 turns it into the QP (14) with
``C_i = c_i / (2λ)``. ECML 2006's Proposition 1 is the case ``μ = 1``; Ranking
SVM is ``τ = μ = 1``. Explicit preference pairs (click-through data) carry
their own per-pair weights instead.

:class:`Costs` is the one place where a costs value is parsed and validated;
the command line (:meth:`Costs.from_text`), the estimators, the model files
(:meth:`Costs.to_json`), the native solvers, the paths and the studies all go
through it. A ``τ`` of 0 drops that grade pair from the loss.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cvxrank._validation import POSITIVE_INT, Interval, check
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet

__all__ = ["DEFAULT_LAM", "Costs", "pair_weights", "tau_per_pair", "mu_per_pair", "balanced_mu", "theorem1_C", "check_lam", "check_C",
           "MAX_C", "TAU_AVERAGES", "estimate_tau"]


def _plain(value):
    """A numpy scalar as the Python scalar it holds (dict keys compare across the two)."""
    return value.item() if hasattr(value, "item") else value


def _number(value, what: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool):
        raise ValidationError(f"{what} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be a {'non-negative' if allow_zero else 'positive'} number, "
                              f"got {value!r}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValidationError(f"{what} must be {'non-negative' if allow_zero else 'positive'} and finite, "
                              f"got {value!r}")
    return v


def _positive(value, what: str) -> float:
    return _number(value, what)


#: The range of the trade-off: ``C = 1/(2λ)`` and ``λ`` both lie in ``[1/(2 MAX_C), MAX_C]``. The
#: objectives and their certificates square terms of size ``C`` (``‖∇f‖²``, ``‖Σ α_i d_i‖²`` with
#: ``α ≤ C``) or ``λ`` (``λ ‖w‖²``); at ``C = 1e300`` they overflow float64 (1.8e308) even on a handful
#: of documents and the solvers return ``inf``/``nan`` gaps with a model that cannot be certified.
#: ``1e100`` leaves ``1e108`` of room for ``‖D‖²`` and the pair count, and a ``C`` that large already
#: weighs ``‖w‖²`` far below float64's resolution.
MAX_C = 1e100


def _check_cost(value, name: str, *, is_C: bool) -> float:
    """``value`` of ``lam`` (``is_C=False``) or ``C``: a positive finite number whose ``C`` and ``λ`` both
    lie in ``[1/(2 MAX_C), MAX_C]``; ``name`` is how the message names it (``lam``, ``C``, ``--C``)."""
    check(name, value, Interval())  # a number (not True, not NaN); its sign and size below
    v = _positive(value, name)
    low = 1.0 / (2.0 * MAX_C)
    if not low <= v <= MAX_C:
        other = "lam" if is_C else "C"
        raise ValidationError(
            f"{name}={value!r} is too {'small' if v < low else 'large'}: {name} must lie in [{low:g}, {MAX_C:g}] "
            f"({other} = 1/(2 {name.lstrip('-')}) in the same range); beyond it the objective's squared terms "
            f"(C² ‖D‖², lam ‖w‖²) overflow float64")
    return v


#: The default ``λ`` of (9) everywhere in cvxrank (problems, estimators, the paths, ``verify``, the
#: command line): ``C = 1/(2λ) = 1`` in the QP (14), SVMlight's default trade-off.
DEFAULT_LAM = 0.5


def check_lam(lam, name: str = "lam") -> float:
    """Validate the regularisation weight ``λ`` (positive; ``λ`` and ``C = 1/(2λ)`` in
    ``[1/(2 MAX_C), MAX_C]``, see :data:`MAX_C`) and return it as float."""
    return _check_cost(lam, name, is_C=False)


def check_C(C, name: str = "C") -> float:
    """Validate the trade-off ``C`` (positive; ``C`` and ``λ = 1/(2C)`` in ``[1/(2 MAX_C), MAX_C]``,
    see :data:`MAX_C`) and return it as float."""
    return _check_cost(C, name, is_C=True)


def _parse_grade(text: str):
    text = text.strip()
    try:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        raise ValidationError(f"{text!r} is not a grade (a number)") from None


def _tau_table(tau) -> dict[tuple, float]:
    """Normalise ``τ``: a mapping ``{(higher, lower): value >= 0}`` or a DataFrame (higher, lower, tau)."""
    if hasattr(tau, "columns"):
        if not {"higher", "lower", "tau"} <= set(tau.columns):
            raise ValidationError("a tau DataFrame needs the columns higher, lower and tau")
        tau = {(_plain(row.higher), _plain(row.lower)): row.tau for row in tau.itertuples()}
    if not isinstance(tau, Mapping):
        raise ValidationError(
            "tau must be None, a mapping {(higher grade, lower grade): value} or a DataFrame, "
            f"got {type(tau).__name__}"
        )
    table = {}
    for key, value in tau.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ValidationError(f"tau key {key!r} is not a (higher grade, lower grade) pair")
        hi, lo = (_plain(k) for k in key)
        try:
            ordered = bool(hi > lo)
        except TypeError:
            raise ValidationError(f"tau key {key!r} does not hold two comparable grades") from None
        if not ordered:
            raise ValidationError(
                f"tau key {key!r} is ordered the wrong way: write (higher grade, lower grade), "
                f"e.g. {(lo, hi)!r}"
            )
        table[(hi, lo)] = _number(value, f"tau[{key!r}]", allow_zero=True)
    if table and not any(v > 0 for v in table.values()):
        raise ValidationError("every tau is 0: no pair would count in the loss")
    return table


def _mu_spec(mu):
    """Normalise ``μ``: None, ``"balanced"`` or a mapping ``{query id: value > 0}``."""
    if mu is None:
        return None
    if isinstance(mu, str):
        if mu not in ("balanced", "none"):
            raise ValidationError(f"mu must be None, 'balanced' or a mapping {{qid: value}}, got {mu!r}")
        return None if mu == "none" else "balanced"
    if not isinstance(mu, Mapping):
        raise ValidationError(f"mu must be None, 'balanced' or a mapping {{qid: value}}, got {type(mu).__name__}")
    return {_plain(k): _positive(v, f"mu[{k!r}]") for k, v in mu.items()}


class Costs:
    """The costs of the weighted hinge loss (9)/SIGIR, parsed and validated once.

    Exactly one of two kinds:

    * **grade-pair and query weights** ``c_i = τ_k(i) μ_q(i)``: ``tau`` per
      (higher grade, lower grade) pair (default all ones; a value of 0 drops
      that grade pair from the loss) and ``mu`` per query (None for all ones,
      ``"balanced"`` for (10)/SIGIR, or a mapping ``{qid: value}``);
    * **explicit per-pair weights** ``weights`` (one non-negative number per
      pair, e.g. for click-through preference pairs).

    A ``Costs`` value does not depend on the data; :meth:`pair_weights`
    evaluates it on a :class:`~cvxrank.pairs.PairSet` (checking that every
    grade pair and query of the data has a value), and the pair-free solver
    reads it per (query, grade pair) cell
    (:func:`cvxrank.native.costs.cost_table`).

    Parameters
    ----------
    tau : mapping, DataFrame or None
        ``{(higher grade, lower grade): value >= 0}``, or a DataFrame with
        columns ``higher, lower, tau`` (e.g. from :func:`estimate_tau`).
    mu : None, "balanced" or mapping
    weights : float or array-like of shape (n_pairs,), optional
        Explicit per-pair weights (one number: the same for every pair);
        excludes ``tau`` and ``mu``.

    Examples
    --------
    >>> costs = Costs(tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu="balanced")
    >>> costs
    Costs(tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu='balanced')
    >>> Costs.from_text("2-1=2,2-0=3,1-0=1", "balanced") == costs
    True
    """

    __slots__ = ("tau", "mu", "weights")

    def __init__(self, tau=None, mu=None, weights=None):
        if weights is not None:
            if tau is not None or mu is not None:
                raise ValidationError("give either explicit per-pair weights or tau/mu, not both")
            try:
                arr = np.array(weights, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValidationError(f"weights must be numeric, got {type(weights).__name__}") from None
            if arr.ndim > 1:
                raise ValidationError(f"weights must be one value per pair, or one for all, got shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise ValidationError("weights has a NaN or infinite value")
            if np.any(arr < 0):
                raise ValidationError(f"weights must be non-negative, found {arr.min():g}")
            arr.setflags(write=False)
            weights = arr
        object.__setattr__(self, "tau", None if tau is None else _tau_table(tau))
        object.__setattr__(self, "mu", _mu_spec(mu))
        object.__setattr__(self, "weights", weights)

    def __setattr__(self, name, value):
        raise AttributeError("Costs is immutable; make a new one")

    # -- construction ------------------------------------------------------
    @classmethod
    def coerce(cls, costs=None, *, tau=None, mu=None, weights=None) -> Costs:
        """A ``Costs`` from one given (returned as is) or from ``tau``/``mu``/``weights``."""
        if costs is not None:
            if not isinstance(costs, Costs):
                raise ValidationError(f"costs must be a cvxrank.Costs, got {type(costs).__name__}")
            if tau is not None or mu is not None or weights is not None:
                raise ValidationError("give either costs= or tau/mu/weights, not both")
            return costs
        return cls(tau=tau, mu=mu, weights=weights)

    @classmethod
    def from_text(cls, tau: str | None = None, mu: str | None = None) -> Costs:
        """Parse the command-line forms: ``tau="2-1=3,2-0=3,1-0=0.5"``, ``mu="none"`` or ``"balanced"``.

        Examples
        --------
        >>> Costs.from_text("2-1=3,1-0=0.5").tau
        {(2, 1): 3.0, (1, 0): 0.5}
        """
        return cls(tau=None if tau is None else parse_tau_text(tau), mu=mu)

    @property
    def kind(self) -> str:
        """``"explicit"`` for per-pair weights, ``"grades"`` for ``τ``/``μ``."""
        return "explicit" if self.weights is not None else "grades"

    @property
    def uniform(self) -> bool:
        """True for Ranking SVM's costs: all ``τ`` and ``μ`` equal to 1 (or absent)."""
        if self.weights is not None:
            return bool(np.all(self.weights == 1.0))  # scalar or per pair
        return (self.tau is None or all(v == 1.0 for v in self.tau.values())) and (
            self.mu is None or (isinstance(self.mu, dict) and all(v == 1.0 for v in self.mu.values())))

    # -- evaluation ----------------------------------------------------------
    def tau_per_pair(self, pairs: PairSet) -> np.ndarray:
        """``τ_k(i)`` of every pair (ones when ``tau`` is None), checked against the pairs' grade pairs."""
        if self.tau is None:
            return np.ones(pairs.n_pairs)
        self.check_grade_pairs(pairs.types)
        # Code the pairs by their distinct types, not by the data's grades: explicit
        # preference pairs have type (1, 0) whatever the grades of the documents.
        types, code = np.unique(pairs.pair_type, axis=0, return_inverse=True)
        by_code = np.array([self.tau[tuple(_plain(v) for v in row)] for row in types], dtype=np.float64)
        return by_code[code.ravel()]

    def mu_per_query(self, query_ids: np.ndarray, pairs_per_query: np.ndarray) -> np.ndarray:
        """``μ_q`` of every query (0 for queries without pairs), checked against the query ids."""
        counts = np.asarray(pairs_per_query, dtype=np.float64)
        has = counts > 0
        if self.mu is None:
            return has.astype(np.float64)
        if self.mu == "balanced":
            return np.where(has, counts.max(initial=0.0) / np.maximum(counts, 1.0), 0.0)
        pos = {_plain(k): j for j, k in enumerate(query_ids)}
        unknown = [k for k in self.mu if k not in pos]
        if unknown:
            raise ValidationError(f"mu has query ids that are not in the data: {unknown[:5]}")
        out = np.full(len(query_ids), np.nan)
        for k, v in self.mu.items():
            out[pos[k]] = v
        lacking = has & np.isnan(out)
        if lacking.any():
            raise ValidationError(f"mu has no value for queries {np.asarray(query_ids)[lacking][:5].tolist()} "
                                  "(they have pairs)")
        return np.where(has, out, 0.0)

    def check_grade_pairs(self, present) -> None:
        """Refuse a ``τ`` table that lacks a grade pair of the data or names one the data lacks."""
        if self.tau is None:
            return
        present = [tuple(_plain(v) for v in k) for k in present]
        unknown = [k for k in self.tau if k not in set(present)]
        if unknown:
            raise ValidationError(f"tau has grade pairs that do not occur in the data: {unknown}; "
                                  f"present: {sorted(present)}")
        missing = [k for k in present if k not in self.tau]
        if missing:
            raise ValidationError(f"tau has no value for grade pairs {sorted(missing)}; "
                                  f"give one for each of {sorted(present)}")

    def pair_weights(self, pairs: PairSet) -> np.ndarray:
        """Per-pair weights ``c_i`` (``τ_k(i) μ_q(i)``, or the explicit weights) on ``pairs``.

        Raises
        ------
        ValidationError
            For a grade pair or query of the data without a value (or a value
            for one the data lacks), explicit weights of the wrong length, or
            weights that are all zero.
        """
        if not isinstance(pairs, PairSet):
            raise ValidationError(f"pair weights need a PairSet, got {type(pairs).__name__}")
        if self.weights is not None:
            if self.weights.ndim == 0:
                out = np.full(pairs.n_pairs, float(self.weights))
            elif self.weights.shape != (pairs.n_pairs,):
                raise ValidationError(f"weights must have one value per pair ({pairs.n_pairs}), "
                                      f"got shape {self.weights.shape}")
            else:
                out = np.array(self.weights)
        else:
            mu = self.mu_per_query(pairs.data.query_ids, pairs.pairs_per_query)
            out = self.tau_per_pair(pairs) * mu[pairs.query]
        if pairs.n_pairs and not np.any(out > 0):
            raise ValidationError("every pair has weight 0 (all tau or weights are 0): nothing to learn")
        return out

    # -- serialisation -------------------------------------------------------
    def to_json(self) -> dict:
        """A JSON-ready dict (model files); :meth:`from_json` reads it back exactly."""
        if self.weights is not None:
            return {"weights": self.weights.tolist()}  # a number or a list
        return {
            "tau": None if self.tau is None else [[hi, lo, v] for (hi, lo), v in self.tau.items()],
            "mu": self.mu if not isinstance(self.mu, dict) else [[k, v] for k, v in self.mu.items()],
        }

    @classmethod
    def from_json(cls, obj) -> Costs:
        """Read :meth:`to_json`'s dict back; a malformed one is a :class:`ValidationError`."""
        if not isinstance(obj, Mapping) or not set(obj) <= {"tau", "mu", "weights"}:
            raise ValidationError("costs must be an object with keys tau and mu (or weights)")
        if "weights" in obj:
            return cls(weights=obj["weights"])

        def entries(value, width, what):
            if not isinstance(value, list) or not all(isinstance(e, list) and len(e) == width for e in value):
                raise ValidationError(f"costs {what} must be a list of {width}-item lists")
            return value

        tau, mu = obj.get("tau"), obj.get("mu")
        if tau is not None:
            tau = {(hi, lo): v for hi, lo, v in entries(tau, 3, "tau")}
        if isinstance(mu, list):
            mu = {k: v for k, v in entries(mu, 2, "mu")}
        return cls(tau=tau, mu=mu)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Costs):
            return NotImplemented
        if (self.weights is None) != (other.weights is None):
            return False
        if self.weights is not None:
            return bool(np.array_equal(self.weights, other.weights))
        return self.tau == other.tau and self.mu == other.mu

    __hash__ = None

    def __repr__(self) -> str:
        if self.weights is not None:
            if self.weights.ndim == 0:
                return f"Costs(weights={float(self.weights):g})"
            return f"Costs(weights=<{self.weights.shape[0]} per-pair values>)"
        parts = [f"tau={self.tau!r}"] if self.tau is not None else []
        if self.mu is not None:
            parts.append(f"mu={self.mu!r}" if not isinstance(self.mu, dict) else f"mu=<{len(self.mu)} queries>")
        return f"Costs({', '.join(parts)})"


def parse_tau_text(text: str) -> dict:
    """``"2-1=3,2-0=3,1-0=0.5"`` -> ``{(2, 1): 3.0, (2, 0): 3.0, (1, 0): 0.5}`` (validated by :class:`Costs`)."""
    table = {}
    for item in str(text).split(","):
        key, sep, value = item.partition("=")
        hi, dash, lo = key.strip().partition("-")
        if not (sep and dash):
            raise ValidationError(f"tau item {item!r} is not HIGHER-LOWER=VALUE (e.g. 2-1=3)")
        try:
            grade_pair = (_parse_grade(hi), _parse_grade(lo))
            number = float(value)
        except (ValueError, ValidationError):
            raise ValidationError(f"tau item {item!r} is not HIGHER-LOWER=VALUE with numbers") from None
        if grade_pair in table:
            raise ValidationError(f"tau names the grade pair {grade_pair[0]}-{grade_pair[1]} twice")
        table[grade_pair] = number
    return table


def tau_per_pair(pairs: PairSet, tau=None) -> np.ndarray:
    """``τ_k(i)`` of every pair from a table of grade-pair costs (see :class:`Costs`).

    Raises
    ------
    ValidationError
        For a negative or non-finite value, a key ordered the wrong way, a
        grade pair that does not occur in the data, or a grade pair of the
        data without a value.
    """
    return Costs(tau=tau).tau_per_pair(pairs)


def balanced_mu(pairs: PairSet) -> dict:
    """Query weights of equation (10) of Cao et al. (SIGIR 2006).

    .. math:: \\mu_q = \\frac{\\max_j \\#\\{\\text{pairs of } q_j\\}}{\\#\\{\\text{pairs of } q\\}}

    so that every query carries the same total weight. Queries without pairs
    get no entry.
    """
    counts = pairs.pairs_per_query
    top = counts.max()
    ids = pairs.data.query_ids
    return {_plain(ids[j]): float(top / counts[j]) for j in np.flatnonzero(counts)}


def mu_per_pair(pairs: PairSet, mu=None) -> np.ndarray:
    """``μ_q(i)`` of every pair: None (ones), ``"balanced"`` ((10)/SIGIR) or ``{qid: value}`` (see :class:`Costs`)."""
    return Costs(mu=mu).mu_per_query(pairs.data.query_ids, pairs.pairs_per_query)[pairs.query]


def pair_weights(pairs: PairSet, tau=None, mu=None) -> np.ndarray:
    """Per-pair weight ``τ_k(i) μ_q(i)`` of the loss (9) of Cao et al. (SIGIR 2006).

    Shorthand for ``Costs(tau=tau, mu=mu).pair_weights(pairs)``.

    Parameters
    ----------
    pairs : PairSet
    tau : mapping, optional
        ``{(higher grade, lower grade): value}``; 0 drops that grade pair.
        Default all ones (Ranking SVM).
    mu : None, "balanced" or mapping, optional
        Per-query weight. Default all ones (ECML 2006's cost-sensitive
        Ranking SVM).

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
    return Costs(tau=tau, mu=mu).pair_weights(pairs)


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



#: The two readings of "average over queries" in the τ heuristic (:func:`estimate_tau`).
TAU_AVERAGES = ("queries_with_both", "all_queries")


def estimate_tau(data, T: int | None = 100, *, random_state=None, average: str = "queries_with_both"):
    r"""Estimate ``τ`` per grade pair by the swap heuristic (Fig. 1 of Xu et al., ECML 2006).

    For each query, start from its perfect ranking (NDCG@1 = 1), swap a
    random document of grade ``a`` with a random one of grade ``b < a``, and
    record the drop in NDCG@1; average over ``T`` swaps, then over queries.
    The same heuristic is section 5.2 of Cao et al. (SIGIR 2006). Gains are
    ``2^r - 1`` as in (20)/SIGIR.

    With ``Q_ab`` the queries that have both grades, ``Q`` all the queries of ``data`` and
    ``drop_q`` a query's mean NDCG@1 drop over its ``T`` swaps, ``average`` chooses the mean over
    queries: ``"queries_with_both"`` (the default) and ``"all_queries"`` give, in this order,

    .. math::

        \tau_{ab} = \frac{1}{|Q_{ab}|} \sum_{q \in Q_{ab}} \mathrm{drop}_q ,
        \qquad
        \tau_{ab} = \frac{1}{|Q|} \sum_{q \in Q_{ab}} \mathrm{drop}_q .

    Fig. 1 of ECML 2006 returns ``Drop / k`` with ``k`` the number of queries, and section 5.2 of
    SIGIR 2006 averages "over all the queries in the dataset": read literally, that is
    ``"all_queries"``, where a query that lacks either grade (no swap possible, its NDCG@1 stays 1)
    adds a drop of 0. Neither paper says what such a query contributes, and the literal reading
    shrinks the ``τ`` of grade pairs that few queries hold (on the bundled LightGBM training data,
    ``T=None``, ``τ(4, 0)`` is 0.842 with ``"queries_with_both"`` and 0.117 with ``"all_queries"``:
    28 of its 201 queries have both grades); the default skips such queries.

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
    average : {"queries_with_both", "all_queries"}, default "queries_with_both"
        The mean over queries (above): over the queries that have both grades, or over all the
        queries of ``data`` (Fig. 1/ECML read literally).

    Returns
    -------
    pandas.DataFrame
        Columns ``higher``, ``lower``, ``tau``, ``n_queries`` (queries that
        had both grades), one row per grade pair occurring in some query;
        ``attrs["average"]`` and ``attrs["n_queries_total"]`` (``|Q|``).
        Pass it as ``tau=`` to :func:`pair_weights`. A pair whose every query
        also has a higher grade gets ``τ = 0`` (NDCG@1 cannot see such
        errors), which drops that grade pair from the loss.

    Raises
    ------
    ValidationError
        For data with fewer than two grades, negative grades, a bad ``T`` or ``average``.

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
    check("T", T, POSITIVE_INT.or_none())
    if average not in TAU_AVERAGES:
        raise ValidationError(f"average must be one of {', '.join(map(repr, TAU_AVERAGES))}, got {average!r}")
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
            n_average = int(both.sum()) if average == "queries_with_both" else data.n_queries
            rows.append({"higher": grades[a].item(), "lower": grades[b].item(),
                         "tau": float(np.sum(hits * drop) / n_average), "n_queries": int(both.sum())})
    table = pd.DataFrame(rows, columns=["higher", "lower", "tau", "n_queries"])
    table.attrs.update(average=average, n_queries_total=int(data.n_queries))
    return table
