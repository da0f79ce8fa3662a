"""The ranking problem: data (or explicit pairs), one costs value, ``λ``.

Every solver in cvxrank takes a :class:`RankingProblem` and returns a
:class:`~cvxrank.solution.SolveResult`. The problem is the weighted hinge
problem (9) of Cao et al. (SIGIR 2006),

.. math:: \\min_w\\; L(w) = \\sum_i c_i\\,[1 - \\langle w, d_i \\rangle]_+ + \\lambda \\|w\\|^2,
          \\qquad c_i = \\tau_{k(i)} \\mu_{q(i)},

and, by Theorem 1, the QP (14) with ``C_i = c_i / (2λ)``,

.. math:: \\min_{w, \\xi}\\; M(w, \\xi) = \\tfrac12 \\|w\\|^2 + \\sum_i C_i \\xi_i
          \\quad \\text{s.t.}\\quad \\langle w, d_i \\rangle \\ge 1 - \\xi_i,\\ \\xi \\ge 0,

with ``L(w) = 2λ M(w)`` at every ``w`` (``ξ_i = [1 - <w, d_i>]_+``). Both
scales are stated on every solution.

The CVXPY formulations (:mod:`cvxrank.formulations`) compile a problem; the
native solvers (:mod:`cvxrank.native`, ``subgradient``, ``gd``) read it
directly. A problem made from documents forms its pairs only when a solver
needs them (the pair-free solver never does); so does a problem made from
:class:`~cvxrank.preference_groups.PreferenceGroups` (click logs, costs that factor per
document), whose pairs are explicit preference pairs.
"""

from __future__ import annotations

import numpy as np

from cvxrank.costs import DEFAULT_LAM, Costs, check_lam, tau_table
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.objectives import hinge_objective, qp_objective
from cvxrank.pairs import PairSet, count_pairs, make_pairs, pair_degrees
from cvxrank.preference_groups import PreferenceGroups
from cvxrank.variants import Variant

__all__ = ["RankingProblem"]

#: The pair-free solvers (``pairfree`` in :data:`cvxrank.solvers.registry.SOLVERS`, a layer above this
#: module, in the registry's order), each with the loss it minimises and the extensions it takes: named by
#: the memory budget's messages (checked against the registry by the tests).
_PAIRFREE = {
    "cutting_plane": ("hinge", frozenset({"margin"})),
    "truncated_newton": ("squared_hinge", frozenset({"margin"})),
    "prox_newton": ("squared_hinge", frozenset({"margin", "l1", "bounds"})),
}

#: The pair-free solvers that read :class:`~cvxrank.preference_groups.PreferenceGroups` (costs per document,
#: :mod:`cvxrank.native.document_oracle`), with the extensions they take there (margins are 1).
GROUP_PAIRFREE = {"cutting_plane": ("hinge", frozenset()), "truncated_newton": ("squared_hinge", frozenset())}


class RankingProblem:
    """Data or explicit pairs, one :class:`~cvxrank.costs.Costs` value and ``λ``.

    Parameters
    ----------
    data : RankingData, PairSet or PreferenceGroups
        Graded documents (pairs are formed inside queries when needed, by
        :func:`~cvxrank.pairs.make_pairs`), a pair set (e.g. explicit
        preference pairs from :func:`~cvxrank.pairs.preference_pairs`), or groups of
        documents with a weight per member (:class:`~cvxrank.preference_groups.PreferenceGroups`,
        e.g. :func:`cvxrank.clicks.click_groups`): the pairs ``(i, j)`` of each group at cost
        ``a_{g,i}``, merged, formed only when a solver needs them. Groups carry their own
        costs: ``costs``, ``tau``, ``mu`` and ``weights`` must then be None (the problem's
        :attr:`costs` is the pair rule :meth:`PreferenceGroups.weight_of`).
    costs : Costs, optional
        Default: ``Costs(tau=tau, mu=mu, weights=weights)``.
    tau, mu, weights : optional
        Shorthand for ``costs`` (see :class:`~cvxrank.costs.Costs`): ``tau`` per grade pair
        (or ``"estimate"``, below), ``mu`` per query (``"balanced"`` or ``{query id: μ_q}``),
        or ``weights`` per pair (an array in the pair order, or a function of the pairs,
        :func:`~cvxrank.costs.evaluate_pair_rule`). Weights per pair need the pairs: a
        function of the pairs forms them now (under the memory budget) and is called once.
        Every pair weighs ``c_i = τ_k(i) μ_q(i)`` (or its given weight), and the QP (14) has
        ``C_i = c_i / (2λ)`` (Theorem 1).
    tau_swaps : int or None, default 100
        With ``tau="estimate"``: the swaps ``T`` per query and grade pair of the heuristic
        (None: its exact expectation). Not read otherwise.
    tau_average : {"queries_with_both", "all_queries"}, default "queries_with_both"
        With ``tau="estimate"``: the mean over queries of the heuristic
        (:func:`~cvxrank.costs.estimate_tau`). Not read otherwise.
    random_state : int, numpy Generator or None
        With ``tau="estimate"``: the seed of the swaps. Not read otherwise.
    lam : float, default 0.5 (:data:`cvxrank.costs.DEFAULT_LAM`)
        ``λ`` of (9). ``λ = 1/2`` makes the two scales equal (``L = M``):
        that is the problem a QP with costs ``C`` states
        (:meth:`from_qp`).
    variant : Variant, optional
        Loss, margins, elastic net and bounds (:mod:`cvxrank.variants`);
        default the papers' problem.

    Attributes
    ----------
    data : RankingData
    costs : Costs
        With ``tau="estimate"``, ``costs.tau`` is the table the heuristic estimated on this
        problem's data, once, at construction (:func:`cvxrank.costs.tau_table`, the code path
        of the estimators' ``tau="estimate"``).
    lam : float

    Notes
    -----
    The pairs (:attr:`pairs`), their weights (:attr:`weights`), ``C`` and the margins of a
    variant all follow one pair order: that of :func:`~cvxrank.pairs.make_pairs` (by query in
    the order of ``data.query_ids``, then by the better document, grade descending and ties by
    row of ``X``, then by the worse document the same way), or the given order of explicit
    pairs. ``pairs.query``, ``pairs.better`` and ``pairs.worse`` name each pair's query and
    documents, so a value per query ``v`` is ``v[pairs.query]`` per pair.

    Examples
    --------
    >>> import cvxrank as cr
    >>> data = cr.make_ranking(n_queries=3, n_features=2, random_state=0)
    >>> problem = cr.RankingProblem(data, tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu="balanced", lam=0.1)
    >>> problem
    RankingProblem(n_documents=40, n_pairs=179, n_features=2, lam=0.1, costs=Costs(tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu='balanced'))
    >>> w = np.array([0.3, -0.2])
    >>> bool(np.isclose(problem.hinge_objective(w), 2 * problem.lam * problem.qp_objective(w)))
    True

    ``τ`` estimated from the problem's own data (Fig. 1/ECML), once:

    >>> estimated = cr.RankingProblem(data, tau="estimate", tau_swaps=None, mu="balanced")
    >>> estimated.costs.tau == cr.Costs(tau=cr.estimate_tau(data, T=None)).tau
    True
    """

    def __init__(self, data, *, costs: Costs | None = None, tau=None, mu=None, weights=None, lam: float = DEFAULT_LAM,
                 variant: Variant | None = None, tau_swaps: int | None = 100, tau_average: str = "queries_with_both",
                 random_state=None):
        self._n_pairs = None  # counted from the grades on first use
        self._groups = None
        self._pairs_read = False  # pairs formed only because someone read them (see needs_pairs)
        if isinstance(data, PairSet):
            self._pairs, self.data = data, data.data
        elif isinstance(data, RankingData):
            self._pairs, self.data = None, data
        elif isinstance(data, PreferenceGroups):
            if costs is not None or tau is not None or mu is not None or weights is not None:
                raise ValidationError("preference groups carry their own costs (a weight per member): give no costs, "
                                      "tau, mu or weights")
            self._pairs, self.data, self._groups = None, data.data, data
            weights = data.weight_of  # the pairs' weights as a rule: evaluated only when the pairs are formed
        else:
            raise ValidationError("a ranking problem takes RankingData, a PairSet or PreferenceGroups, got "
                                  f"{type(data).__name__}")
        tau = self._resolve_tau(tau, tau_swaps, tau_average, random_state)
        self.costs = Costs.coerce(costs, tau=tau, mu=mu, weights=weights)
        if self.costs.kind == "explicit" and self._pairs is None:
            raise ValidationError("explicit per-pair weights need the pairs they weigh: pass a PairSet")
        self.lam = check_lam(lam)
        if variant is not None and not isinstance(variant, Variant):
            raise ValidationError(f"variant must be a cvxrank.variants.Variant, got {type(variant).__name__}")
        self.variant = Variant() if variant is None else variant
        # the least any solve needs (a pair-free solver's vectors of n_features), before the bounds allocate two
        self.check_size("pairfree")
        self.variant.check(self.data.n_features)
        self._weights = None
        if self._pairs is not None:
            self._weights = self.costs.pair_weights(self._pairs)  # validate now, against the pairs
        elif self.costs.kind == "rule" and self._groups is None:
            _ = self.pairs  # a function of the pairs: formed and evaluated now, once
            self._pairs_read = False

    def _resolve_tau(self, tau, tau_swaps, tau_average, random_state):
        """``tau`` as given, or the table the heuristic estimates on this problem's data for ``"estimate"``."""
        if not (isinstance(tau, str) and tau == "estimate"):
            return tau
        return tau_table(tau, self.data, T=tau_swaps, random_state=random_state, average=tau_average)

    @classmethod
    def from_qp(cls, pairs: PairSet, C) -> RankingProblem:
        """The problem a QP (14) with per-pair costs ``C`` states: weights ``C`` and ``λ = 1/2``."""
        return cls(pairs, weights=C, lam=0.5)

    # -- what solvers read ------------------------------------------------------
    @property
    def pairs(self) -> PairSet:
        """The pair set (formed from the documents on first use, under the memory budget).

        Raises
        ------
        cvxrank.MemoryBudgetError
            When the pairs, counted before any is formed, would exceed the budget; the message
            names the pair-free solver that solves this problem's variant.
        """
        if self._pairs is None:
            from cvxrank._memory import PAIRFREE_ADVICE, check_pairs

            pairfree = self._pairfree_solvers()
            check_pairs(self.n_pairs, self.data.n_documents,
                        (f"the pair-free solver solver={pairfree[0]!r} never forms them; or use fewer or shorter "
                         "queries, or raise the budget") if pairfree else PAIRFREE_ADVICE)
            if self._groups is not None:
                self._pairs, self._weights = self._groups.pairs()
            else:
                self._pairs = make_pairs(self.data)
                self._weights = self.costs.pair_weights(self._pairs)
            self._pairs_read = True
        return self._pairs

    @property
    def groups(self) -> PreferenceGroups | None:
        """The :class:`~cvxrank.preference_groups.PreferenceGroups` the problem was made from (None otherwise):
        what the pair-free solvers read, pairs formed or not."""
        return getattr(self, "_groups", None)

    @property
    def has_pairs(self) -> bool:
        """Whether the pairs exist already (a pair-free solver never forms them)."""
        return self._pairs is not None

    @property
    def needs_pairs(self) -> bool:
        """Whether the problem is stated on its pairs: made from a :class:`~cvxrank.pairs.PairSet`, or with weights
        that are a function of the pairs (a rule). A problem given as documents (or preference groups) with costs per
        grade pair does not, even once its pairs were formed by reading :attr:`pairs`, :attr:`weights` or :attr:`C`:
        the solver the door picks and the path a pair-free solver takes stay those of the documents."""
        return self._pairs is not None and not getattr(self, "_pairs_read", False)

    @property
    def weights(self) -> np.ndarray:
        """Per-pair weights ``c_i = τ_k(i) μ_q(i)`` of (9)."""
        if self._weights is None:
            _ = self.pairs
        return self._weights

    @property
    def C(self) -> np.ndarray:
        """Per-pair QP costs ``C_i = c_i / (2λ)`` of (14) (Theorem 1)."""
        return self.weights / (2.0 * self.lam)

    def _pairfree_solvers(self) -> list[str]:
        """The pair-free solvers that solve this problem's variant (``cutting_plane`` for the hinge loss,
        ``truncated_newton`` and ``prox_newton`` for the squared hinge, by the extensions each takes), for
        the budget's messages: :data:`_PAIRFREE`, the registry's ``pairfree`` solvers."""
        variant = self.variant
        table = _PAIRFREE if self._groups is None else GROUP_PAIRFREE
        return [name for name, (loss, extensions) in table.items()
                if variant.loss == loss and variant.extensions <= extensions]

    def _nnz_x(self) -> int:
        X = self.data.X
        return int(X.nnz) if hasattr(X, "nnz") else int(X.shape[0] * X.shape[1])

    def _alternatives(self, route: str) -> list[str]:
        """The leaner ways to solve this problem than ``route`` that apply (for the budget's messages)."""
        from cvxrank._memory import fits_memory, problem_bytes

        out = []
        if route == "cvxpy" and fits_memory(problem_bytes(self.data.n_documents, self.n_features, self.n_pairs,
                                                          self._nnz_x(), "lifted")):
            out.append("use the lifted formulation (formulation='lifted' keeps D = P X factored)")
        out += [f"use the pair-free solver solver={name!r}" for name in self._pairfree_solvers()
                if route != "pairfree"]
        return out

    def check_size(self, route: str) -> None:
        """Refuse, under the memory budget, to solve this problem by ``route``.

        Parameters
        ----------
        route : {"cvxpy", "lifted", "native", "pairfree"}
            See :func:`cvxrank._memory.problem_bytes`; pairs are counted, not formed.

        Raises
        ------
        cvxrank.MemoryBudgetError
            When the estimate exceeds the budget; the message names the feature and pair counts and
            the leaner ways that apply.
        """
        from cvxrank._memory import check_problem, fits_memory, problem_bytes

        X = self.data.X
        args = (X.shape[0], X.shape[1], self.n_pairs, self._nnz_x(), route)
        if not fits_memory(problem_bytes(*args)):  # the alternatives are worked out for the message only
            check_problem(*args, alternatives=self._alternatives(route))

    def difference_matrix_bytes(self) -> int:
        """Bytes of ``D = P X`` (:func:`cvxrank._memory.difference_bytes`), from the pairs when they exist,
        else from the grades: pairs counted and ``nnz(D)`` bounded by :func:`~cvxrank.pairs.pair_degrees`,
        none formed."""
        from cvxrank._memory import difference_bytes, difference_matrix_bytes

        if self._pairs is not None:
            return difference_matrix_bytes(self._pairs)
        X = self.data.X
        if not hasattr(X, "indptr"):
            return difference_bytes(self.n_pairs, self.n_features)
        row_nnz = np.diff(X.indptr).astype(np.int64)
        degrees = pair_degrees(self.data) if self._groups is None else self._groups.document_degrees()
        return difference_bytes(self.n_pairs, self.n_features, int(degrees @ row_nnz))

    def check_formulation(self, name: str, advice: str | None = None) -> None:
        """Refuse, under the memory budget, to compile this problem into the CVXPY formulation ``name``.

        Estimated from counts, before a pair or ``D`` is formed: ``D = P X`` with its compiled
        copies for ``primal``, ``dual`` and ``hinge``
        (:func:`cvxrank._memory.check_cvxpy_formulation`), the ``lifted`` route for ``lifted``.

        Parameters
        ----------
        name : {"primal", "lifted", "dual", "hinge"}
        advice : str, optional
            What to do instead; default: the leaner ways that apply to this problem (the lifted
            formulation when it fits, the pair-free solver of its variant).

        Raises
        ------
        cvxrank.MemoryBudgetError
            When the estimate exceeds the budget.
        """
        from cvxrank._memory import check_cvxpy_formulation, check_problem, cvxpy_formulation_bytes, fits_memory

        X = self.data.X
        if name == "lifted":
            if advice is None:
                self.check_size("lifted")
            else:
                check_problem(X.shape[0], X.shape[1], self.n_pairs, self._nnz_x(), "lifted", advice=advice)
            return
        d_bytes = self.difference_matrix_bytes()
        if fits_memory(cvxpy_formulation_bytes(X.shape[0], X.shape[1], self.n_pairs, d_bytes)):
            return
        if advice is None:
            hints = [*self._alternatives("cvxpy"), "use fewer pairs or queries", "raise the budget"]
            advice = ", ".join(hints[:-1]) + ", or " + hints[-1]
        check_cvxpy_formulation(X.shape[0], X.shape[1], self.n_pairs, d_bytes, dense=not hasattr(X, "indptr"),
                                advice=advice)

    @property
    def n_features(self) -> int:
        return self.data.n_features

    @property
    def n_pairs(self) -> int:
        """Number of pairs, counted without forming them when they do not exist yet (once: the grades are fixed)."""
        if self._pairs is not None:
            return self._pairs.n_pairs
        if self._groups is not None:
            return self._groups.n_pairs
        if getattr(self, "_n_pairs", None) is None:
            self._n_pairs = int(count_pairs(self.data).sum())
        return self._n_pairs

    @property
    def source(self) -> str:
        """``"grades"`` (within-query pairs of graded documents) or the given pairs' source (``"preferences"``
        for explicit preference pairs and for preference groups)."""
        if self._pairs is None:
            return "grades" if self._groups is None else "preferences"
        return self._pairs.source

    # -- the two scales -------------------------------------------------------
    def hinge_objective(self, w) -> float:
        """``L(w)`` of (9) (of the variant, when one is set)."""
        if not self.variant.is_default:
            return 2.0 * self.lam * self.variant.qp_objective(self.pairs, w, self.C, self.lam)
        return hinge_objective(self.pairs, w, self.weights, self.lam)

    def qp_objective(self, w) -> float:
        """``M(w)`` of (14) at the optimal slacks (of the variant, when one is set); ``L(w) = 2λ M(w)``."""
        if not self.variant.is_default:
            return self.variant.qp_objective(self.pairs, w, self.C, self.lam)
        return qp_objective(self.pairs, w, self.C)

    # -- variants -------------------------------------------------------------
    def with_lam(self, lam: float) -> RankingProblem:
        """The same data and costs at another ``λ`` (the pairs are shared, not re-formed)."""
        return self._copy(self.costs, lam)

    def with_costs(self, costs: Costs | None = None, *, tau=None, mu=None, weights=None, tau_swaps: int | None = 100,
                   tau_average: str = "queries_with_both", random_state=None) -> RankingProblem:
        """The same data and ``λ`` with other costs (``tau="estimate"`` as in the constructor)."""
        tau = self._resolve_tau(tau, tau_swaps, tau_average, random_state)
        return self._copy(Costs.coerce(costs, tau=tau, mu=mu, weights=weights), self.lam)

    def _copy(self, costs: Costs, lam: float) -> RankingProblem:
        new = RankingProblem.__new__(RankingProblem)
        new.data, new._pairs, new.costs, new.lam = self.data, self._pairs, costs, check_lam(lam)
        new._n_pairs = getattr(self, "_n_pairs", None)
        new.variant = self.variant
        new._groups = getattr(self, "_groups", None) if costs is self.costs else None
        new._pairs_read = getattr(self, "_pairs_read", False)
        if self._groups is not None and new._groups is None:
            new._pairs = self.pairs  # other costs on the groups' pairs: the pairs are formed
            new._pairs_read = False
        new._weights = self._weights if costs is self.costs else None
        if new._pairs is not None and new._weights is None:
            new._weights = costs.pair_weights(new._pairs)
        elif new._pairs is None and costs.kind == "rule" and new._groups is None:
            _ = new.pairs  # a function of the pairs: formed and evaluated now, as in the constructor
        if costs.kind == "rule":
            new._pairs_read = False  # (the weights are a function of the pairs)
        return new

    def with_variant(self, variant: Variant) -> RankingProblem:
        """The same data, costs and ``λ`` with another variant (loss, margins, ℓ1, bounds)."""
        new = self._copy(self.costs, self.lam)
        if not isinstance(variant, Variant):
            raise ValidationError(f"variant must be a cvxrank.variants.Variant, got {type(variant).__name__}")
        variant.check(self.n_features)
        new.variant = variant
        return new

    def __repr__(self) -> str:
        extra = "" if self.variant.is_default else f", variant={self.variant!r}"
        return (f"RankingProblem(n_documents={self.data.n_documents}, n_pairs={self.n_pairs}, "
                f"n_features={self.n_features}, lam={self.lam:g}, costs={self.costs!r}{extra})")
