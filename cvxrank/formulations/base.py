"""The :class:`Formulation` object every builder returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from cvxrank.costs import check_lam
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet
from cvxrank.problem import RankingProblem

__all__ = ["COST_PARAMETRIZATIONS", "FORMULATION_EXTENSIONS", "Formulation", "as_problem", "check_costs",
           "check_states", "cost_parameters", "proportional_scale", "states"]

#: How the QP forms hold their per-pair costs ``C`` (see :func:`cost_parameters`).
COST_PARAMETRIZATIONS = ("scale", "per_pair")


def check_costs(values, n_pairs: int, what: str = "C") -> np.ndarray:
    """Validate a per-pair cost vector: shape ``(n_pairs,)`` (a scalar is broadcast), finite, ``>= 0``."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be numeric, got {type(values).__name__}") from None
    if arr.ndim == 0:
        arr = np.full(n_pairs, float(arr))
    if arr.shape != (n_pairs,):
        raise ValidationError(f"{what} must have one value per pair ({n_pairs}), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} has a NaN or infinite value")
    if np.any(arr < 0):
        raise ValidationError(f"{what} must be non-negative, found {arr.min():g}")
    return arr


#: The :attr:`~cvxrank.variants.Variant.extensions` each formulation states (the losses: all of them).
#: The dual takes margins and the ℓ1 term (their conjugates are closed forms); bounds on ``w`` and user
#: constraints make its ``φ*`` a problem of its own, so they compile into the primal forms only.
FORMULATION_EXTENSIONS = {
    "primal": None, "lifted": None, "hinge": None,
    "dual": frozenset({"margin", "margin_per_pair", "l1"}),
}


def states(name: str, variant) -> bool:
    """Whether the formulation ``name`` states ``variant`` (:data:`FORMULATION_EXTENSIONS`)."""
    allowed = FORMULATION_EXTENSIONS.get(name)
    return allowed is None or variant.extensions <= allowed


def check_states(ranking: RankingProblem, name: str) -> None:
    """Refuse a variant the formulation ``name`` cannot state, naming those that can."""
    if not states(name, ranking.variant):
        able = [f for f in FORMULATION_EXTENSIONS if states(f, ranking.variant)]
        raise ValidationError(f"the {name} formulation does not state the variant {ranking.variant!r}; it "
                              f"compiles into the {', '.join(repr(f) for f in able)} formulations")


def as_problem(problem, C=None) -> tuple[RankingProblem, np.ndarray]:
    """The :class:`~cvxrank.problem.RankingProblem` a builder compiles, and its QP costs ``C``.

    ``problem`` is a ranking problem (then ``C`` must be None: the costs are
    the problem's ``weights / (2λ)``), or a pair set with per-pair QP costs
    ``C`` (the problem :meth:`~cvxrank.problem.RankingProblem.from_qp` states:
    weights ``C`` with ``λ = 1/2``).
    """
    if isinstance(problem, RankingProblem):
        if C is not None:
            raise ValidationError("give a RankingProblem or (pairs, C), not both: the problem fixes its costs")
        return problem, problem.C
    if isinstance(problem, PairSet):
        if C is None:
            raise ValidationError("a formulation of a pair set needs its per-pair costs C (or pass a RankingProblem)")
        ranking = RankingProblem.from_qp(problem, check_costs(C, problem.n_pairs, "C"))
        return ranking, ranking.C
    raise ValidationError(f"a formulation takes a RankingProblem or a PairSet, got {type(problem).__name__}")


def cost_parameters(C, n_pairs: int, costs: str = "scale", what: str = "C"):
    """The ``cp.Parameter`` holding the QP costs ``C``, in one of two DPP parametrizations.

    ``"scale"`` (default)
        ``C = κ c`` with the constant vector ``c`` (the ``C`` given) and one
        scalar parameter ``κ`` (``parameters["scale"]``, value 1). The costs
        enter the solver's linear objective ``q`` directly. A ``λ`` path with
        fixed pair weights (Theorem 1: ``C_i = c_i / (2λ)``) only moves ``κ``.
    ``"per_pair"``
        One parameter entry per pair (``parameters["C"]``): any new cost
        vector (``τ``, ``μ`` grids) re-solves without recompiling. CVXPY stores
        an objective's parameter coefficients densely over (parameter entries x
        objective variable entries), so these costs sit in one epigraph row
        ``C @ ξ <= t`` instead of the objective. That dense row slows the
        solve of the lifted form (``docs/formulation-choice.md``), hence not
        the default.

    The hinge form (9) holds its pair weights the same way (``what="weights"``).

    Returns
    -------
    tuple
        ``(parameters, base)``: the dict of parameters (``{"scale": κ}`` or
        ``{what: C}``) and, for ``"scale"``, the constant vector ``c`` (None
        for ``"per_pair"``).
    """
    if costs not in COST_PARAMETRIZATIONS:
        raise ValidationError(f"unknown cost parametrization {costs!r}; choose one of "
                              f"{', '.join(COST_PARAMETRIZATIONS)}")
    values = check_costs(C, n_pairs, what)
    if costs == "per_pair":
        param = cp.Parameter(n_pairs, nonneg=True, name=what)
        param.value = values
        return {what: param}, None
    scale = cp.Parameter(nonneg=True, name="scale")
    scale.value = 1.0
    return {"scale": scale}, values


def proportional_scale(C: np.ndarray, base: np.ndarray, rtol: float = 1e-12) -> float | None:
    """``κ ≥ 0`` with ``C = κ · base`` (to ``rtol`` of ``max |C|``), or None when there is none."""
    norm = float(base @ base)
    kappa = float(C @ base) / norm if norm > 0 else 1.0
    kappa = max(kappa, 0.0)
    if np.max(np.abs(C - kappa * base), initial=0.0) > rtol * max(np.max(np.abs(C), initial=0.0), 1e-300):
        return None
    return kappa


@dataclass(eq=False)
class Formulation:
    """A ranking problem declared in CVXPY, with what is needed to read it back.

    Builders (:func:`~cvxrank.formulations.build_primal` and friends)
    return one; :func:`cvxrank.solve` solves it. Costs are
    ``cp.Parameter`` objects: :meth:`set_costs` (QP costs ``C``) or
    :meth:`set_weights` (pair weights and ``λ``) writes new ones and the
    next solve reuses CVXPY's compilation (DPP).

    Attributes
    ----------
    name : str
        ``"primal"``, ``"lifted"``, ``"dual"`` or ``"hinge"``.
    problem : cvxpy.Problem
    variables : dict of str to cvxpy.Variable
    parameters : dict of str to cvxpy.Parameter
    pairs : PairSet
    equation : str
        The paper's equation this formulation states.
    ranking : RankingProblem
        The problem it compiles (pairs, costs, ``λ``); kept in step by
        :meth:`set_costs` and :meth:`set_weights`.
    base_costs : ndarray or None
        The constant cost vector ``c`` of the ``"scale"`` parametrization
        (``C = parameters["scale"] · c``, see :func:`cost_parameters`).
    """

    name: str
    problem: cp.Problem
    variables: dict
    parameters: dict
    pairs: PairSet
    equation: str
    _margin_constraint: cp.Constraint | None = field(default=None, repr=False)
    base_costs: np.ndarray | None = field(default=None, repr=False)
    _ranking: RankingProblem | None = field(default=None, repr=False)
    user_constraints: list = field(default_factory=list, repr=False)
    w_variable: object = field(default=None, repr=False)

    def __post_init__(self):
        # What cvxrank built, to tell the user's own additions from it (:meth:`edits`).
        self._built_objective = self.problem.objective
        self._built_constraints = frozenset(c.id for c in self.problem.constraints)

    @property
    def ranking(self) -> RankingProblem:
        """The problem this formulation states, read off its current parameter values.

        The hinge form's parameters hold the weights and ``λ``; the QP forms'
        hold ``C`` only, so ``λ`` stays the one the problem was built with
        (weights ``2λ C``). Changing a parameter's value directly is seen here too.
        """
        params, r = self.parameters, self._ranking
        if "lam" in params:
            weights = (np.asarray(params["weights"].value, dtype=np.float64) if "weights" in params
                       else float(params["scale"].value) * self.base_costs)
            lam = float(params["lam"].value)
            if r is None or lam != r.lam or not np.array_equal(weights, r.weights):
                r = RankingProblem(self.pairs, weights=weights, lam=lam, variant=None if r is None else r.variant)
        else:
            C = (np.asarray(params["C"].value, dtype=np.float64) if "C" in params
                 else float(params["scale"].value) * self.base_costs)
            lam = 0.5 if r is None else r.lam
            if r is None or not np.array_equal(C, r.C):
                r = RankingProblem(self.pairs, weights=2.0 * lam * C, lam=lam, variant=None if r is None else r.variant)
        self._ranking = r
        return r

    @property
    def scale(self) -> str:
        """``"L"`` for the hinge form (9), ``"M"`` for the QP forms (14) and (18)-(19)."""
        return "L" if self.name == "hinge" else "M"

    # -- costs in hinge form ---------------------------------------------
    def hinge_costs(self) -> tuple[np.ndarray, float]:
        """Current ``(weights, λ)`` of the hinge problem (9) this formulation states.

        A QP built from costs ``C`` alone states weights ``C`` with ``λ = 1/2``
        (Theorem 1 read backwards), where ``L = M``.
        """
        return self.ranking.weights, self.ranking.lam

    def C(self) -> np.ndarray:
        """Per-pair QP costs ``C_i = weights_i / (2λ)`` at the current parameter values."""
        weights, lam = self.hinge_costs()
        return weights / (2.0 * lam)

    def set_costs(self, C) -> None:
        """Write new per-pair QP costs ``C`` into the parameters; the next solve reuses the compilation.

        A ``"scale"`` formulation (:func:`cost_parameters`) takes any ``C``
        proportional to the one it was built with (a ``λ`` path); other
        vectors need a formulation built with ``costs="per_pair"``. The hinge
        form takes ``weights = C`` and ``λ = 1/2`` (Theorem 1 read backwards).

        Raises
        ------
        ValidationError
            For invalid costs, or costs a ``"scale"`` formulation cannot express.
        """
        C = check_costs(C, self.pairs.n_pairs, "C")
        params = self.parameters
        if "lam" in params:  # hinge form: weights = C with λ = 1/2
            self.set_weights(C, 0.5)
            return
        if "C" in params:
            params["C"].value = C
        else:
            params["scale"].value = self._scale_for(C)

    def set_weights(self, weights, lam: float) -> None:
        """Write new pair weights and ``λ`` of the hinge problem (9); QP forms get ``C = weights / (2λ)``.

        Raises
        ------
        ValidationError
            For invalid values, or weights a ``"scale"`` formulation cannot express.
        """
        weights = check_costs(weights, self.pairs.n_pairs, "weights")
        lam = check_lam(lam)
        current = self.ranking
        if current.variant.l1 > 0 and self.name != "hinge" and lam != current.lam:
            raise ValidationError("an elastic-net variant holds rho = l1 / (2 lam) as a constant of the QP forms: "
                                  "build the formulation again for another lam (or use the hinge form)")
        params = self.parameters
        if "lam" not in params:
            self.set_costs(weights / (2.0 * lam))
        else:
            if "weights" in params:
                params["weights"].value = weights
            else:
                params["scale"].value = self._scale_for(weights)
            params["lam"].value = lam
        variant = None if self._ranking is None else self._ranking.variant
        self._ranking = RankingProblem(self.pairs, weights=weights, lam=lam, variant=variant)

    def set_problem(self, problem: RankingProblem) -> None:
        """Write another problem's costs and ``λ`` (same pairs); the next solve reuses the compilation."""
        if not isinstance(problem, RankingProblem) or problem.pairs is not self.pairs:
            raise ValidationError("set_problem takes a RankingProblem on this formulation's own pairs")
        self.set_weights(problem.weights, problem.lam)
        if np.array_equal(self.ranking.weights, problem.weights):
            self._ranking = problem  # keeps its costs' description (τ, μ)

    def accepts(self, costs) -> bool:
        """Whether :meth:`set_costs` (or :meth:`set_weights`) can write these costs without a rebuild."""
        if "scale" not in self.parameters:
            return True
        return proportional_scale(check_costs(costs, self.pairs.n_pairs, "costs"), self.base_costs) is not None

    def _scale_for(self, values: np.ndarray) -> float:
        kappa = proportional_scale(values, self.base_costs)
        if kappa is None:
            raise ValidationError(
                f"the {self.name} formulation was built with costs='scale' and only takes costs "
                "proportional to its own (a lambda path); build it with costs='per_pair' to change "
                "costs pair by pair"
            )
        return kappa

    # -- the user's own additions ---------------------------------------
    def add_constraints(self, *constraints) -> None:
        """Add CVXPY constraints on ``w`` (:attr:`w_variable`) to :attr:`problem`; solves certify them.

        The same as editing the problem by hand
        (``f.problem = cp.Problem(f.problem.objective, f.problem.constraints + [...])``), checked
        here, before a solve: each constraint must be convex under CVXPY's rules (DCP) and a
        constraint on ``w`` alone. How each is certified: :meth:`edits`.

        Examples
        --------
        >>> import cvxpy as cp, cvxrank as cr
        >>> f = cr.build(cr.RankingProblem(cr.make_ranking(n_queries=4, random_state=0), lam=0.1), "primal")
        >>> f.add_constraints(cp.norm(f.w_variable) <= 0.5, f.w_variable[0] >= 0)
        >>> r = cr.solve(f, "clarabel")
        >>> r.status, r.certificate.kind
        ('optimal', 'Lagrangian dual (user constraints; convex ones linearised at w)')
        """
        made = list(constraints[0]) if len(constraints) == 1 and isinstance(constraints[0], (list, tuple)) \
            else list(constraints)
        for con in made:
            if not isinstance(con, cp.constraints.constraint.Constraint):
                raise ValidationError(f"add_constraints takes CVXPY constraints on w, got {type(con).__name__}")
        self._check_own(made, [])
        self.problem = cp.Problem(self.problem.objective, [*self.problem.constraints, *made])

    def add_term(self, term) -> None:
        """Add a convex CVXPY expression of ``w`` to the objective of :attr:`problem`; solves certify it.

        The term is added on the formulation's own scale (:attr:`scale`: ``M`` of (14) for the
        primal forms, ``L`` of (9) for the hinge form), and :class:`~cvxrank.solution.SolveResult`'s
        objectives then include it. The same as
        ``f.problem = cp.Problem(f.problem.objective + cp.Minimize(term), f.problem.constraints)``.
        An ℓ1 term on every feature is better stated as ``Variant(l1=...)``, whose dual is exact
        (a term is linearised at the solution, :meth:`edits`, and a kink there weakens the bound).
        """
        if not isinstance(term, cp.Expression):
            raise ValidationError(f"add_term takes a CVXPY expression of w, got {type(term).__name__}")
        self._check_own([], [term])
        self.problem = cp.Problem(self.problem.objective + cp.Minimize(term), self.problem.constraints)

    def edits(self) -> tuple[list, list]:
        """``(constraints, terms)`` the user added to :attr:`problem` since it was built.

        cvxrank certifies the problem actually solved: the ranking problem it built, plus
        constraints and objective terms added by hand (or by :meth:`add_constraints` and
        :meth:`add_term`); removing or replacing what it built is refused. At a solve, each added
        part enters the Lagrangian dual bound of the certificate:

        - an affine constraint ``A w + c ≤ 0`` (or ``= 0``) exactly, with the solver's dual ``ν``;
        - a convex constraint ``g(w) ≤ 0`` through its linearisation at the solution ``w̄``,
          ``g(w̄) + J (w − w̄) ≤ 0`` (``J`` CVXPY's gradient): it holds wherever ``g(w) ≤ 0``, so the
          bound is that of a relaxation, valid for the constrained problem and tight at its optimum
          (KKT), with the solver's dual;
        - a convex term ``r(w)`` through ``r(w̄) + sᵀ(w − w̄) ≤ r(w)`` (``s`` CVXPY's gradient), with
          multiplier 1.

        A constraint without a gradient at ``w̄`` (a cone CVXPY cannot differentiate) is left out
        of the dual (a relaxation: still valid, weaker) and its violation is still measured.

        Raises
        ------
        ValidationError
            When a constraint or the objective cvxrank built was removed or replaced, the objective
            is no longer a minimisation, or an addition is not convex (DCP) or involves variables
            other than ``w``.
        """
        problem = self.problem
        ids = {c.id for c in problem.constraints}
        if not self._built_constraints <= ids:
            raise ValidationError(
                f"a constraint cvxrank built into the {self.name} formulation was removed from its problem: the "
                "certificate is of the ranking problem plus your additions; add constraints, never remove them (for "
                "another problem build another formulation, or state a Variant)")
        constraints = [c for c in problem.constraints if c.id not in self._built_constraints]
        terms = self._added_terms(problem.objective)
        if constraints or terms:
            self._check_own(constraints, terms)
        return constraints, terms

    def _added_terms(self, objective) -> list:
        built = self._built_objective
        if objective is built:
            return []
        if not isinstance(objective, cp.Minimize):
            raise ValidationError("the formulation's objective was replaced by a maximisation; add terms to the "
                                  "minimisation cvxrank built (f.add_term(expr))")
        parts = _summands(objective.args[0])
        ids = [id(p) for p in parts]
        for own in _summands(built.args[0]):
            if id(own) not in ids:
                raise ValidationError(
                    f"the objective of the {self.name} formulation was replaced, not extended: cvxrank certifies "
                    "its ranking objective plus added terms (f.add_term(expr), or "
                    "cp.Problem(f.problem.objective + cp.Minimize(expr), f.problem.constraints))")
            ids.remove(id(own))
        return [p for p in parts if id(p) in ids]

    def _check_own(self, constraints, terms) -> None:
        """Refuse additions cvxrank cannot certify: on the dual form, not DCP, or not in ``w`` alone."""
        w = self.w_variable
        if w is None:
            raise ValidationError(f"the {self.name} formulation is stated in the dual variables α: add constraints "
                                  "and terms on w to the primal, lifted or hinge formulation")
        for part in [*constraints, *terms]:
            text = _short(part)
            others = [v for v in part.variables() if v is not w]
            if others:
                raise ValidationError(
                    f"{text} involves {', '.join(sorted({v.name() for v in others}))}, not w alone: cvxrank certifies "
                    "added constraints and terms in w (write it in w, e.g. cp.norm1(w) instead of an epigraph "
                    "variable)")
            convex = part.is_dcp() if isinstance(part, cp.constraints.constraint.Constraint) else (
                part.is_convex() and part.size == 1)
            if not convex:
                raise ValidationError(f"{text} is not a convex {'constraint' if part in constraints else 'scalar term'} "
                                      "under CVXPY's rules (DCP): it cannot be solved or certified")

    # -- reading a solution back -----------------------------------------
    def recover_w(self) -> np.ndarray:
        """The weight vector ``w`` of the last solve (for the dual: ``w = Dᵀα``, (16)/SIGIR)."""
        if self.name == "dual":
            alpha = self.variables["alpha"].value
            if alpha is None:
                raise ValidationError("the dual problem has not been solved yet")
            ranking = self.ranking
            if ranking.variant.l1 > 0:  # w = S_ρ(Dᵀα), the maximiser in φ*(Dᵀα)
                return ranking.variant.primal_from_dual(self.pairs, np.asarray(alpha).ravel(), ranking.lam)
            return self.pairs.rmatvec(alpha)
        w = self.variables["w"].value
        if w is None:
            raise ValidationError(f"the {self.name} problem has not been solved yet")
        return np.asarray(w, dtype=np.float64).ravel()

    def recover_alpha(self) -> np.ndarray | None:
        """Dual variables ``α`` of the margin constraints from the last solve, or None.

        From the solver's constraint duals for ``primal`` and ``lifted``, the
        variable itself for ``dual``; ``hinge`` has no margin constraint.
        """
        if self.name == "dual":
            value = self.variables["alpha"].value
        elif self._margin_constraint is not None:
            value = self._margin_constraint.dual_value
        else:
            return None
        return None if value is None else np.asarray(value, dtype=np.float64).ravel()

    def __repr__(self) -> str:
        return (
            f"Formulation(name={self.name!r}, equation={self.equation!r}, "
            f"n_pairs={self.pairs.n_pairs}, n_features={self.pairs.n_features}, "
            f"parameters={sorted(self.parameters)})"
        )


def _summands(expr) -> list:
    """The top-level terms of a sum (CVXPY flattens nested sums into one ``AddExpression``)."""
    return list(expr.args) if isinstance(expr, cp.atoms.affine.add_expr.AddExpression) else [expr]


def _short(part) -> str:
    """A constraint or expression as text, abbreviated (a constant array would print in full)."""
    text = str(part)
    return text if len(text) <= 80 else text[:77] + "..."
