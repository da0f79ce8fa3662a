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

Costs by rule: ``weights`` may be a function of the pairs (:func:`evaluate_pair_rule`), called once
per pair set with the pairs' grades, query ids and document indices in the pair order of
:func:`cvxrank.pairs.make_pairs`; per-query weights are ``mu={qid: value}``.
:func:`abbreviate` keeps arrays, mappings and functions short in every repr and message.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cvxrank._text import SHOWN_ENTRIES, abbreviate
from cvxrank._text import plain as _plain
from cvxrank._validation import POSITIVE_INT, Interval, check
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet

__all__ = ["DEFAULT_LAM", "Costs", "pair_weights", "tau_per_pair", "mu_per_pair", "balanced_mu", "theorem1_C",
           "check_lam", "check_C", "MAX_C", "TAU_AVERAGES", "estimate_tau", "tau_table", "query_table",
           "per_query_values", "evaluate_pair_rule", "PAIR_RULE_ARGUMENTS", "SHOWN_ENTRIES", "abbreviate"]


def _number(value, what: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool):
        raise ValidationError(f"{what} must be a number, got {value!r}")
    try:
        if np.ndim(value) != 0:
            raise TypeError
        v = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be a {'non-negative' if allow_zero else 'positive'} number, "
                              f"got {abbreviate(value)}") from None
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValidationError(f"{what} must be {'non-negative' if allow_zero else 'positive'} and finite, "
                              f"got {abbreviate(value)}")
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
    if np.ndim(value) != 0 and not isinstance(value, (str, bytes)):
        raise ValidationError(f"{name} must be one number, got {abbreviate(value)}")
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


def _parse_tau(tau) -> dict[tuple, float]:
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
    return query_table(mu, "mu")


def query_table(table: Mapping, what: str, *, allow_zero: bool = False, most: float = np.inf) -> dict:
    """A mapping ``{query id: value}`` checked once: finite values, positive (or non-negative with
    ``allow_zero``) and at most ``most``; numpy keys and values as Python scalars. ``what`` names the
    parameter in messages (``mu``, ``margin``)."""
    out = {}
    for key, value in table.items():
        v = _number(value, f"{what}[{_plain(key)!r}]", allow_zero=allow_zero)
        if v > most:
            raise ValidationError(f"{what}[{_plain(key)!r}] = {v:g} exceeds {most:g}")
        out[_plain(key)] = v
    return out


def per_query_values(table: Mapping, query_ids, has_pairs, what: str) -> np.ndarray:
    """The values of ``table`` (``{query id: value}``) at every query of ``query_ids``, 0 where a query has no pair.

    Parameters
    ----------
    table : mapping
        Already checked (:func:`query_table`).
    query_ids : array-like of shape (n_queries,)
        The data's query ids (``RankingData.query_ids``).
    has_pairs : array-like of bool, shape (n_queries,)
        Which queries have pairs: each needs a value.
    what : str
        The parameter's name for the messages (``mu``, ``margin``).

    Raises
    ------
    ValidationError
        For a query id that is not in the data, or a query with pairs and no value.

    Examples
    --------
    >>> per_query_values({"a": 2.0, "b": 0.5}, ["a", "b", "c"], [True, True, False], "mu").tolist()
    [2.0, 0.5, 0.0]
    """
    query_ids = np.asarray(query_ids)
    has = np.asarray(has_pairs, dtype=bool)
    pos = {_plain(k): j for j, k in enumerate(query_ids)}
    unknown = [k for k in table if k not in pos]
    if unknown:
        raise ValidationError(f"{what} has query ids that are not in the data: {abbreviate(unknown[:5])}"
                              + (f" ({len(unknown)} in all)" if len(unknown) > 5 else ""))
    out = np.full(len(query_ids), np.nan)
    for k, v in table.items():
        out[pos[k]] = v
    lacking = has & np.isnan(out)
    if lacking.any():
        ids = [_plain(k) for k in query_ids[lacking][:5]]
        raise ValidationError(f"{what} has no value for queries {ids}"
                              + (f" ({int(lacking.sum())} in all)" if lacking.sum() > 5 else "")
                              + " (they have pairs)")
    return np.where(has, out, 0.0)


#: The keyword arguments a function of the pairs receives (:func:`evaluate_pair_rule`), one array
#: each, one entry per pair in the pair order of the problem.
PAIR_RULE_ARGUMENTS = ("higher", "lower", "qid", "better", "worse")


def _frozen(arr) -> np.ndarray:
    view = np.asarray(arr).view()
    view.flags.writeable = False
    return view


def _pair_at(pairs: PairSet, i: int) -> str:
    """Pair ``i`` in words, for messages: its query, grade pair and documents."""
    qid = _plain(pairs.data.query_ids[pairs.query[i]])
    hi, lo = (_plain(v) for v in pairs.pair_type[i])
    documents = f"documents {int(pairs.better[i])} over {int(pairs.worse[i])}"
    return f"pair {i} (query {qid!r}, grades {hi} over {lo}, {documents})"


def evaluate_pair_rule(rule, pairs: PairSet, what: str, *, most: float = np.inf) -> np.ndarray:
    """One non-negative finite number per pair from a function of the pairs, checked.

    ``rule`` is called once, by keyword, with one read-only array per argument of
    :data:`PAIR_RULE_ARGUMENTS`, each with one entry per pair in the pair order of
    ``pairs`` (for :func:`~cvxrank.pairs.make_pairs`: by query, then by the better document's
    grade descending, then by document position; see its docstring)::

        rule(higher=..., lower=..., qid=..., better=..., worse=...)

    ``higher`` and ``lower`` are the grade pair ``k(i)`` (the better and the worse document's
    grades; ``(1, 0)`` for explicit preference pairs), ``qid`` the query id of each pair, and
    ``better``, ``worse`` the rows of ``X`` of its two documents. A rule that needs only some
    arguments takes the rest as ``**_`` (``lambda higher, lower, **_: higher - lower``).

    Parameters
    ----------
    rule : callable
    pairs : PairSet
    what : str
        What the values are, for the messages (``"costs weights"``, ``"margin"``).
    most : float, default inf
        The largest value allowed.

    Returns
    -------
    ndarray of float64, shape (n_pairs,)

    Raises
    ------
    ValidationError
        When ``rule`` raises (the message names the function and its error), or returns
        something other than ``n_pairs`` numbers, or a NaN, infinite, negative or too large value
        (the message names the first such pair).

    Examples
    --------
    >>> from cvxrank.data import RankingData
    >>> from cvxrank.pairs import make_pairs
    >>> pairs = make_pairs(RankingData(np.eye(4), [2, 1, 0, 1], qid=[1, 1, 1, 2]))
    >>> evaluate_pair_rule(lambda higher, lower, **_: higher - lower, pairs, "margin").tolist()
    [1.0, 2.0, 1.0]
    """
    name = getattr(rule, "__qualname__", type(rule).__name__)
    args = {"higher": pairs.pair_type[:, 0], "lower": pairs.pair_type[:, 1],
            "qid": pairs.data.query_ids[pairs.query], "better": pairs.better, "worse": pairs.worse}
    try:
        out = rule(**{k: _frozen(v) for k, v in args.items()})
    except Exception as exc:  # noqa: BLE001 - the user's code: any error is reported as theirs
        raise ValidationError(
            f"the {what} function {name} raised {type(exc).__name__}: {exc} (it is called with the keyword "
            f"arguments {', '.join(PAIR_RULE_ARGUMENTS)}: arrays of one entry per pair)") from None
    try:
        values = np.array(out, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"the {what} function {name} returned {abbreviate(out)}, not numbers; it must "
                              f"return one number per pair ({pairs.n_pairs})") from None
    if values.shape != (pairs.n_pairs,):
        raise ValidationError(f"the {what} function {name} returned shape {values.shape}; it must return one "
                              f"number per pair, shape ({pairs.n_pairs},)")
    bad = ~np.isfinite(values) | (values < 0) | (values > most)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        need = "non-negative and finite" + (f", at most {most:g}" if np.isfinite(most) else "")
        raise ValidationError(f"the {what} function {name} returned {values[i]:g} for {_pair_at(pairs, i)} "
                              f"({int(bad.sum())} bad values in all); each value must be {need}")
    values.setflags(write=False)
    return values


def _weights_array(weights) -> np.ndarray:
    """Explicit weights as a read-only float64 array: one number, or one non-negative finite number per pair."""
    try:
        arr = np.array(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"weights must be numeric or a function of the pairs, got {type(weights).__name__}") \
            from None
    if arr.ndim > 1:
        raise ValidationError(f"weights must be one value per pair, or one for all, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"weights has a NaN or infinite value: {abbreviate(arr)}")
    if np.any(arr < 0):
        raise ValidationError(f"weights must be non-negative, found {arr.min():g}")
    arr.setflags(write=False)
    return arr


class Costs:
    """The costs of the weighted hinge loss (9)/SIGIR, parsed and validated once.

    The loss (9)/SIGIR weighs pair ``i`` by ``c_i``; by Theorem 1 the QP (14) has the costs

    .. math:: C_i = \\frac{c_i}{2 \\lambda}, \\qquad c_i = \\tau_{k(i)} \\mu_{q(i)} .

    Exactly one of three kinds (:attr:`kind`):

    * ``"grades"``, **grade-pair and query weights** ``c_i = τ_k(i) μ_q(i)``: ``tau`` per
      (higher grade, lower grade) pair (default all ones; a value of 0 drops
      that grade pair from the loss) and ``mu`` per query (None for all ones,
      ``"balanced"`` for (10)/SIGIR, or a mapping ``{qid: value > 0}``: costs per query);
    * ``"explicit"``, **per-pair weights** ``weights`` (one non-negative number per
      pair in the pair order, e.g. for click-through preference pairs);
    * ``"rule"``, **weights by rule**: ``weights`` a function of the pairs, called once per pair
      set as ``weights(higher=, lower=, qid=, better=, worse=)`` with one array per argument in
      the pair order (:func:`evaluate_pair_rule`), returning one non-negative number per pair.

    The pair order is that of :func:`~cvxrank.pairs.make_pairs`: by query (in the order of
    ``RankingData.query_ids``), then by the better document's grade (descending), then by
    document position; explicit pairs keep the order they were given in.

    A ``Costs`` value does not depend on the data; :meth:`pair_weights`
    evaluates it on a :class:`~cvxrank.pairs.PairSet` (checking that every
    grade pair and query of the data has a value), and the pair-free solver
    reads it per (query, grade pair) cell
    (:func:`cvxrank.native.costs.cost_table`): ``τ`` and ``μ`` (costs per query included) always,
    weights by rule when they are constant in each (query, grade pair) cell (else it refuses,
    naming the cell).

    Parameters
    ----------
    tau : mapping, DataFrame or None
        ``{(higher grade, lower grade): value >= 0}``, or a DataFrame with
        columns ``higher, lower, tau`` (e.g. from :func:`estimate_tau`).
    mu : None, "balanced" or mapping
        ``{query id: value > 0}`` gives each query its own cost.
    weights : float, array-like of shape (n_pairs,) or callable, optional
        Explicit per-pair weights (one number: the same for every pair), or a
        function of the pairs returning them; excludes ``tau`` and ``mu``.

    Examples
    --------
    >>> costs = Costs(tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu="balanced")
    >>> costs
    Costs(tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu='balanced')
    >>> Costs.from_text("2-1=2,2-0=3,1-0=1", "balanced") == costs
    True

    Costs per query, and by a rule of the pairs (here the grade gap, twice as much in query 2):

    >>> Costs(mu={1: 1.0, 2: 2.0})
    Costs(mu={1: 1.0, 2: 2.0})
    >>> from cvxrank.data import RankingData
    >>> from cvxrank.pairs import make_pairs
    >>> pairs = make_pairs(RankingData(np.eye(5), [2, 1, 0, 1, 0], qid=[1, 1, 1, 2, 2]))
    >>> rule = lambda higher, lower, qid, **_: (higher - lower) * np.where(qid == 2, 2.0, 1.0)
    >>> Costs(weights=rule).pair_weights(pairs).tolist()
    [1.0, 2.0, 1.0, 2.0]
    """

    __slots__ = ("tau", "mu", "weights")

    def __init__(self, tau=None, mu=None, weights=None):
        if weights is not None and (tau is not None or mu is not None):
            raise ValidationError("give either explicit per-pair weights or tau/mu, not both")
        if weights is not None and not callable(weights):  # a function is evaluated on each pair set
            weights = _weights_array(weights)
        object.__setattr__(self, "tau", None if tau is None else _parse_tau(tau))
        object.__setattr__(self, "mu", _mu_spec(mu))
        object.__setattr__(self, "weights", weights)

    def __setattr__(self, name, value):
        raise AttributeError("Costs is immutable; make a new one")

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):  # pickle and copy: the slots set once, as in __init__
        for name, value in state.items():
            object.__setattr__(self, name, value)

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
        """``"explicit"`` for per-pair weights, ``"rule"`` for a function of the pairs, ``"grades"`` for ``τ``/``μ``."""
        if callable(self.weights):
            return "rule"
        return "explicit" if self.weights is not None else "grades"

    @property
    def uniform(self) -> bool:
        """True for Ranking SVM's costs: all ``τ`` and ``μ`` equal to 1 (or absent); False for a rule."""
        if callable(self.weights):
            return False
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
        return per_query_values(self.mu, query_ids, has, "mu")

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
        if callable(self.weights):
            out = evaluate_pair_rule(self.weights, pairs, "costs weights")
        elif self.weights is not None:
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
        """A JSON-ready dict (model files); :meth:`from_json` reads it back exactly.

        Raises
        ------
        ValidationError
            For weights by rule: a function is code, which a JSON file does not hold.
        """
        if callable(self.weights):
            raise ValidationError(f"costs weights given by the function {abbreviate(self.weights)} cannot be "
                                  "stored as JSON (a file holds numbers, not code); store the weights it gives "
                                  "(Costs(weights=problem.weights)) or tau and mu")
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
        if callable(self.weights) or callable(other.weights):
            return self.weights is other.weights
        if self.weights is not None:
            return bool(np.array_equal(self.weights, other.weights))
        return self.tau == other.tau and self.mu == other.mu

    __hash__ = None

    def __repr__(self) -> str:
        if self.weights is not None:
            if not callable(self.weights) and self.weights.ndim == 0:
                return f"Costs(weights={float(self.weights):g})"
            return f"Costs(weights={abbreviate(self.weights)})"
        parts = [f"tau={abbreviate(self.tau, 'grade pairs')}"] if self.tau is not None else []
        if self.mu is not None:
            parts.append(f"mu={abbreviate(self.mu, 'queries')}")
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


def tau_table(tau, data: RankingData, *, T: int | None = 100, random_state=None,
              average: str = "queries_with_both") -> dict | None:
    """Resolve a ``tau`` parameter into ``{(higher, lower): τ}`` (None for all ones).

    The one place ``tau="estimate"`` is read: :class:`~cvxrank.problem.RankingProblem` and the
    pairwise estimators both call it. ``"estimate"`` runs the NDCG@1 swap heuristic of Fig. 1/ECML
    (section 5.2/SIGIR) on ``data``, once (:func:`estimate_tau` with ``T``, ``random_state`` and
    ``average``); a DataFrame with columns ``higher, lower, tau`` or a mapping is validated by
    :class:`Costs` (a ``τ`` of 0, as the heuristic estimates for errors NDCG@1 cannot see, drops
    that grade pair).

    Examples
    --------
    >>> data = RankingData(np.zeros((4, 1)), y=[2, 1, 0, 0], qid=[1, 1, 1, 1])
    >>> tau_table("estimate", data, T=None)
    {(1, 0): 0.0, (2, 0): 1.0, (2, 1): 0.6666666666666667}
    """
    if isinstance(tau, str):
        if tau != "estimate":
            raise ValidationError(f"tau must be None, 'estimate', a mapping or a DataFrame, got {abbreviate(tau)}")
        tau = estimate_tau(data, T=T, random_state=random_state, average=average)
    return Costs(tau=tau).tau
