"""The solution every solver returns: ``w``, its certificate, its objective on one scale.

A :class:`SolveResult` states its objective on one scale whatever was solved: ``L(w)`` of the
hinge problem (9) of Cao et al. (SIGIR 2006),

.. math:: L(w) = \\sum_i \\tau_{k(i)} \\mu_{q(i)} [1 - \\langle w, d_i \\rangle]_+ + \\lambda \\|w\\|^2 .

The QP (14) with ``C_i = τμ/(2λ)`` has the objective ``M(w) = ½‖w‖² + Σ C_i ξ_i`` and
Theorem 1 gives ``L = 2λ M`` at every ``w``; ``qp_objective`` states ``M`` and the formulation's own
objective (``M`` for the QP forms, ``L`` for the hinge form and the native solvers) has its own name,
:attr:`SolveResult.formulation_objective`.

Its :class:`Certificate` proves how close ``w`` is to the minimiser ``w*``: a gap on each scale
(``gap_L = 2λ gap_M``) and the distance bound

.. math:: \\|w - w^*\\| \\le \\sqrt{2\\, G_M},

because ``M`` is 1-strongly convex in ``w`` (``½‖w − w*‖² ≤ M(w) − M(w*) ≤ G_M``).

Every pairwise backend hands its ``w`` and a :class:`BackendReport` to :func:`finish`, which
certifies ``w`` (:func:`certify_solution`), judges the status from the certificate, never from the
backend's word (:func:`judge_status`), and warns when the status is short of ``"optimal"``. The
listwise backends certify by the gradient (:func:`cvxrank.listwise.result.make_result`) and judge
with the same :func:`judge_status`.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from cvxrank.certificate import MARGIN_BANDS, certify, reduced_dual
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.problem import RankingProblem
from cvxrank.rounding import TINY, U, abs_scores, dual_rounding, gamma, model_rounding, primal_rounding

__all__ = ["SCALES", "BackendReport", "Certificate", "SolveResult", "certify_solution", "finish", "infeasible",
           "judge_status"]

#: The two objective scales of Theorem 1; ``SolveResult.objective`` is on ``"L"``.
SCALES = {"L": "hinge problem (9)", "M": "QP (14)"}


@dataclass(frozen=True)
class Certificate:
    """What proves how far ``w`` is from the optimum, on both scales of Theorem 1.

    Attributes
    ----------
    kind : str
        What the proof is: ``"duality gap"`` (a feasible point ``α`` of the dual (18)-(19)),
        ``"cutting-plane bound"`` (the dual of the native solver's plane model, a lower bound on
        ``L(w*)``), ``"pairwise dual bound"`` (the dual (18) at the pair-free coordinate descent's ``α``, not
        stored), ``"band dual bound"`` (the dual (18) at the Newton phase's ``α``: the weights beyond its band,
        its band's own values, not stored), ``"duality gap (variant's dual)"``, ... ; ``"none"`` when nothing
        was proved.
    gap_L, gap_M : float
        Upper bounds on ``L(w) − L(w*)`` and ``M(w) − M(w*)`` in exact arithmetic; ``gap_L = 2λ gap_M``.
        Each carries the float64 rounding allowance of the two sums it is the difference of
        (:mod:`cvxrank.rounding`), so it is never negative and never below the true suboptimality.
    relative_gap : float
        ``gap_L / L(w)``, the same on both scales.
    distance_bound : float
        ``sqrt(2 gap_M)``: a proved bound on ``‖w − w*‖`` (``M`` is 1-strongly convex). ``inf`` when
        ``w`` may violate a variant's user constraints (``infeasibility > 0``), where the
        strong-convexity argument does not hold.
    alpha : ndarray of shape (n_pairs,) or None
        The dual point, ``0 ≤ α ≤ C`` (None when the proof needed no pairs).
    dual_residual : float
        ``‖w − Dᵀα‖ / max(1, ‖w‖)``, the distance from the stationarity condition (16) (nan when unknown).
    infeasibility : float
        A bound on the largest violation of a variant's affine user constraints at ``w``, in exact
        arithmetic (0 without user constraints, and when every inequality provably holds). The gap
        then bounds ``M(w) − M(w*)`` for the Lagrangian at the solver's constraint duals: ``w`` is
        ``gap``-optimal and ``infeasibility``-feasible.
    feasibility_tol : float
        The violation the status accepts: ``tol · max(1, |A_k||w| + |c_k|)`` (``inf`` when unset).
    """

    kind: str
    gap_L: float
    gap_M: float
    relative_gap: float
    distance_bound: float
    alpha: np.ndarray | None = field(default=None, repr=False)
    dual_residual: float = math.nan
    infeasibility: float = 0.0
    feasibility_tol: float = math.inf

    @property
    def feasible(self) -> bool:
        """Whether ``w`` satisfies the user constraints to :attr:`feasibility_tol`."""
        return bool(self.infeasibility <= self.feasibility_tol)

    def proves(self, tol: float) -> bool:
        """Whether the certified relative gap is at most ``tol`` and ``w`` is :attr:`feasible`."""
        return bool(self.relative_gap <= tol) and self.feasible

    def __str__(self) -> str:
        return self.kind


@dataclass(frozen=True)
class BackendReport:
    """What a backend knows about its own run, handed to :func:`finish` with its ``w``.

    Attributes
    ----------
    solver, version : str
        cvxrank's solver name and the version of the package that ran it.
    formulation : str
        What was solved: ``"primal"``, ``"lifted"``, ``"dual"``, ``"hinge"`` or ``"pairfree"``.
    scale : {"M", "L"}
        The scale of that formulation's own objective.
    status : str
        The backend's own verdict: ``"optimal"``, ``"optimal_inaccurate"`` or ``"user_limit"``
        (an iteration, oracle-call or time cap). The certificate decides the status.
    alphas : tuple of ndarray
        Dual candidates for the pairwise certificate (a solver's constraint duals, on the scale of (14)).
    affine : tuple
        Duals of a variant's affine user constraints (:func:`cvxrank.variants.variant_certificate`).
    violation : float
        The largest violation at ``w`` of the user constraints ``affine`` does not hold (a norm ball, a
        cone), as the backend measured it with a float64 margin; 0 when there are none.
    relaxed : tuple or None
        The user's convex constraints and added objective terms as halfspaces of their
        linearisation at ``w`` with their multipliers, ``(A, c, ν, "<=")``: they enter the
        Lagrangian dual bound only (:meth:`cvxrank.formulations.Formulation.edits`). None when an
        added term has no gradient at ``w``, so that no bound can be given.
    added_objective : float
        The value at ``w`` of the objective terms the user added, on the scale ``M``, rounded up.
    dropped : int
        User constraints left out of the dual (no gradient at ``w``): the bound is a relaxation's.
    user_parts : str
        What the user added to the papers' problem, in words (empty for none).
    lower_bound : float, optional
        A lower bound on ``L(w*)`` the solver proved itself (the native solvers' model duals).
    bound_name : str
        The certificate kind of ``lower_bound``.
    objective_L : float, optional
        ``L(w)`` as the solver computed it without pairs (pair-free solvers).
    dual_residual : float, optional
        The stationarity residual that goes with ``lower_bound``.
    bound_rounding : float, optional
        The float64 rounding allowance of ``lower_bound`` on the scale of (14), when the backend bounded it from
        what it summed (:func:`cvxrank.rounding.pair_dual_rounding`) or computed
        :func:`cvxrank.rounding.model_rounding` at this very ``w``; None: :func:`~cvxrank.rounding.model_rounding`
        here.
    primal_rounding : float, optional
        :func:`cvxrank.rounding.primal_rounding` at this very ``w`` when the backend computed it (scale of (14));
        None: computed here.
    objective_terms : int, default 0
        How many pairs ``objective_L``'s evaluation summed one by one beside its per-document sums (the Newton
        phase's band): :func:`cvxrank.rounding.primal_rounding`'s ``terms`` when it is computed here.
    """

    solver: str
    version: str
    formulation: str
    scale: str
    status: str
    alphas: tuple = ()
    affine: tuple = ()
    violation: float = 0.0
    relaxed: tuple | None = ()
    added_objective: float = 0.0
    dropped: int = 0
    user_parts: str = ""
    lower_bound: float | None = None
    bound_name: str = "cutting-plane bound"
    objective_L: float | None = None
    dual_residual: float | None = None
    bound_rounding: float | None = None
    primal_rounding: float | None = None
    objective_terms: int = 0
    iterations: int | None = None
    setup_time: float = 0.0
    solve_time: float = 0.0
    solver_objective: float = math.nan
    primal_residual: float = 0.0
    stages: tuple | None = None
    extras: dict = field(default_factory=dict)
    history: object = None


@dataclass(eq=False)
class SolveResult:
    """A solution with the certificate that proves (or disproves) it.

    Attributes
    ----------
    w : ndarray of shape (n_features,)
        The weight vector; the ranking function is ``f(x) = <w, x>``.
    status : str
        CVXPY's vocabulary: ``"optimal"`` only when the certificate proves a
        relative gap within ``tol``; ``"optimal_inaccurate"`` when it proves
        less; ``"user_limit"`` when the solver hit an iteration, oracle-call or
        time cap first; ``"infeasible"`` when a variant's constraints admit no ``w``.
    objective : float
        ``L(w)`` of (9) at ``w`` (recomputed in numpy, not the backend's number),
        whatever the formulation or solver: the one scale of every result of the pairwise
        family. (The listwise problem's result, :class:`~cvxrank.listwise.result.ListwiseResult`,
        states ``f(w)`` of (3) of He et al. here, and says so: ``formulation_scale`` ``"f"``.)
    qp_objective : float
        ``M(w)`` of (14); ``L = 2λ M``.
    certificate : Certificate
        The proof: its kind, the gap on each scale, the distance bound, the dual point.
    formulation : str
        What was solved (``"primal"``, ``"lifted"``, ``"dual"``, ``"hinge"``, ``"pairfree"``).
    formulation_scale : {"M", "L", "f"}
        The scale of that formulation's own objective (``"M"`` for the QP forms, ``"f"`` for
        the listwise (3)).
    stages : tuple of str
        The algorithms that produced ``w``, in order (e.g. ``("subgradient", "polish")``).
    solver, solver_version : str
    solver_status : str
        The backend's own status string.
    solver_objective : float
        The backend's own optimal value for its formulation (nan for native solvers).
    iterations : int or None
    setup_time, solve_time, certify_time : float
        Seconds: CVXPY compilation (0 for native solvers), the solver run, and
        the certificate computed afterwards.
    primal_residual : float
        Largest violation of the backend's own constraints (0 for native solvers).
    lam : float
        ``λ`` of the problem.
    tol : float
        The relative-gap tolerance the status was judged against.
    extras : dict
        Raw backend statistics (``oracle_calls`` for the pair-free solvers).
    history : pandas.DataFrame or None
        Native solvers: iteration, objective, lower bound and relative gap at each check.

    Notes
    -----
    The certificate's numbers are also attributes: ``gap_L``, ``gap_M``, ``relative_gap``,
    ``distance_bound``, ``alpha`` and ``dual_residual``; ``lower_bound = objective − gap_L`` is a
    certified lower bound on ``L(w*)``.
    """

    w: np.ndarray
    status: str
    objective: float
    qp_objective: float
    certificate: Certificate
    formulation: str
    formulation_scale: str
    stages: tuple
    solver: str
    solver_version: str
    solver_status: str
    solver_objective: float
    iterations: int | None
    setup_time: float
    solve_time: float
    certify_time: float
    primal_residual: float
    lam: float
    tol: float
    extras: dict = field(default_factory=dict, repr=False)
    history: object = field(default=None, repr=False)

    @property
    def hinge_objective(self) -> float:
        """``L(w)`` of (9): the same number as :attr:`objective`."""
        return self.objective

    @property
    def formulation_objective(self) -> float:
        """The solved formulation's own objective at ``w``: ``M(w)`` for the QP forms, ``L(w)`` otherwise."""
        return self.qp_objective if self.formulation_scale == "M" else self.objective

    @property
    def gap_L(self) -> float:
        """Certified upper bound on ``L(w) − L(w*)``."""
        return self.certificate.gap_L

    @property
    def gap_M(self) -> float:
        """Certified upper bound on ``M(w) − M(w*)``."""
        return self.certificate.gap_M

    @property
    def duality_gap(self) -> float:
        """The certified gap on the scale of :attr:`objective` (``gap_L``)."""
        return self.certificate.gap_L

    @property
    def lower_bound(self) -> float:
        """``objective − gap_L``: a certified lower bound on ``L(w*)``."""
        return self.objective - self.certificate.gap_L

    @property
    def relative_gap(self) -> float:
        """``gap_L / L(w)``, the same on both scales."""
        return self.certificate.relative_gap

    @property
    def distance_bound(self) -> float:
        """A proved bound on ``‖w − w*‖`` (:attr:`Certificate.distance_bound`)."""
        return self.certificate.distance_bound

    @property
    def alpha(self) -> np.ndarray | None:
        """The certificate's dual point, or None."""
        return self.certificate.alpha

    @property
    def dual_residual(self) -> float:
        """``‖w − Dᵀα‖ / max(1, ‖w‖)`` for the certificate's dual point."""
        return self.certificate.dual_residual

    @property
    def found(self) -> bool:
        """True when the status is ``"optimal"`` (the certificate passed)."""
        return self.status == "optimal"

    @property
    def time(self) -> float:
        """Total seconds: setup, solve and certificate."""
        return self.setup_time + self.solve_time + self.certify_time

    def summary(self) -> dict:
        """Scalar diagnostics as a plain dict (JSON-friendly); objectives and gaps on both scales."""
        return {
            "formulation": self.formulation,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "status": self.status,
            "solver_status": self.solver_status,
            "objective": self.objective,
            "lower_bound": self.lower_bound,
            "relative_gap": self.relative_gap,
            "qp_objective": self.qp_objective,
            "gap_L": self.gap_L,
            "gap_M": self.gap_M,
            "distance_bound": self.distance_bound,
            "certificate": self.certificate.kind,
            "formulation_scale": self.formulation_scale,
            "formulation_objective": self.formulation_objective,
            "stages": "+".join(self.stages),
            "primal_residual": self.primal_residual,
            "dual_residual": self.dual_residual,
            "iterations": self.iterations,
            "setup_time": self.setup_time,
            "solve_time": self.solve_time,
            "certify_time": self.certify_time,
        }

    def support_summary(self, problem, *, tol: float = 1e-6, bins=10) -> dict:
        r"""The pairs by their place in Theorem 1's box and by their margin: dual and primal side by side.

        With the pair margins ``m_i = z_i <w, d_i>`` at this result's ``w`` and the certificate's dual
        point ``α`` in the box ``0 ≤ α_i ≤ C_i``, ``C_i = τ_k(i) μ_q(i) / (2λ)`` (Theorem 1 and
        (18)-(19) of Cao et al., SIGIR 2006), complementary slackness at the optimum reads

        .. math::

            \alpha_i = 0 \Rightarrow m_i \ge 1, \qquad
            0 < \alpha_i < C_i \Rightarrow m_i = 1, \qquad
            \alpha_i = C_i \Rightarrow m_i \le 1 ,

        equivalently ``m_i > 1 ⇒ α_i = 0`` and ``m_i < 1 ⇒ α_i = C_i``; a pair exactly on the
        margin (``m_i = 1``) may have any ``α_i`` in ``[0, C_i]``. Its ``table`` counts the pairs in
        each cell, so the implications can be read off: at an optimum only the cells they allow hold
        pairs, up to ``tol``.

        Parameters
        ----------
        problem : RankingProblem or Formulation
            The problem this result solves (its pairs and costs ``C``; a Formulation gives its
            ``ranking``). The papers' problem: hinge loss, margin 1.
        tol : float, default 1e-6
            The tolerance of every comparison: ``α_i ≤ tol·C_i`` counts as ``α_i = 0``,
            ``α_i ≥ (1 − tol)·C_i`` as ``α_i = C_i`` (between them, ``0 < α_i < C_i``);
            ``|m_i − 1| ≤ tol`` counts as on the margin.
        bins : int or sequence of float, default 10
            The bins of the margin histogram (:func:`numpy.histogram`): a number of equal bins
            over the margins' range, or the bin edges.

        Returns
        -------
        dict
            ``"tol"``, ``"n_pairs"`` (ℓ);
            ``"alpha"``: counts ``{"zero", "between", "at_C"}``;
            ``"margin"``: counts ``{"below", "at", "above"}`` (``m_i < 1 − tol``,
            ``|m_i − 1| ≤ tol``, ``m_i > 1 + tol``);
            ``"table"``: a pandas.DataFrame of shape (3, 3), the pair counts with rows
            ``alpha = 0``, ``0 < alpha < C``, ``alpha = C`` and columns ``margin < 1``,
            ``margin = 1``, ``margin > 1``;
            ``"violations"``: the pairs in the cells complementary slackness excludes
            (``α_i = 0`` below the margin, ``0 < α_i < C_i`` off it, ``α_i = C_i`` above it),
            0 at an exact optimum;
            ``"histogram"``: ``(counts, edges)`` of :func:`numpy.histogram` of the margins,
            arrays of shapes ``(n_bins,)`` and ``(n_bins + 1,)``.

        Raises
        ------
        ValidationError
            When the result has no dual point (a certificate that needed no pairs, such as the
            cutting-plane bound: solve with a CVXPY solver), ``problem`` is not the problem solved
            (another number of pairs or features) or is a variant, or ``tol`` is not in [0, 1).

        Examples
        --------
        >>> import numpy as np
        >>> import cvxrank as cr
        >>> data = cr.RankingData(np.array([[3.0, 1.0], [2.0, 2.0], [0.5, 0.0], [1.0, 3.0], [0.0, 1.0]]),
        ...                       y=[2, 1, 0, 1, 0], qid=[1, 1, 1, 2, 2])
        >>> problem = cr.RankingProblem(data, tau={(2, 1): 1.0, (2, 0): 2.0, (1, 0): 0.5}, mu="balanced", lam=2.0)
        >>> s = cr.solve(cr.build_dual(problem), "clarabel").support_summary(problem)
        >>> s["alpha"], s["margin"], s["violations"]
        ({'zero': 2, 'between': 1, 'at_C': 1}, {'below': 1, 'at': 1, 'above': 2}, 0)
        """
        import pandas as pd

        ranking = getattr(problem, "ranking", problem)
        if not isinstance(ranking, RankingProblem):
            raise ValidationError(f"support_summary takes the RankingProblem (or Formulation) solved, got "
                                  f"{type(problem).__name__}")
        if not ranking.variant.is_default:
            raise ValidationError("support_summary reads the papers' problem (hinge loss, margin 1), not a variant")
        if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and 0 <= tol < 1):
            raise ValidationError(f"tol must be a number in [0, 1), got {tol!r}")
        if self.alpha is None:
            raise ValidationError(f"this result's certificate ({self.certificate.kind}) has no dual point alpha; "
                                  "solve with a CVXPY solver (clarabel, ecos, ...) for one")
        alpha = np.asarray(self.alpha, dtype=np.float64)
        if alpha.shape != (ranking.n_pairs,) or self.w.shape != (ranking.n_features,):
            raise ValidationError(f"the result has {alpha.size} pairs and {self.w.size} features, the problem "
                                  f"{ranking.n_pairs} and {ranking.n_features}: pass the problem that was solved")
        C = ranking.C
        margins = ranking.pairs.margins(self.w)
        a_class = np.where(alpha <= tol * C, 0, np.where(alpha >= (1.0 - tol) * C, 2, 1))
        m_class = np.where(np.abs(margins - 1.0) <= tol, 1, np.where(margins < 1.0, 0, 2))
        counts = np.zeros((3, 3), dtype=np.int64)
        np.add.at(counts, (a_class, m_class), 1)
        table = pd.DataFrame(counts, index=["alpha = 0", "0 < alpha < C", "alpha = C"],
                             columns=["margin < 1", "margin = 1", "margin > 1"])
        hist, edges = np.histogram(margins, bins=bins)
        return {
            "tol": float(tol),
            "n_pairs": int(ranking.n_pairs),
            "alpha": dict(zip(("zero", "between", "at_C"), (int(c) for c in counts.sum(axis=1)))),
            "margin": dict(zip(("below", "at", "above"), (int(c) for c in counts.sum(axis=0)))),
            "table": table,
            "violations": int(counts[0, 0] + counts[1, 0] + counts[1, 2] + counts[2, 2]),
            "histogram": (hist, edges),
        }

    def __repr__(self) -> str:
        return (
            f"SolveResult(status={self.status!r}, solver={self.solver!r}, formulation={self.formulation!r}, "
            f"objective={self.objective:.10g} (L), relative_gap={self.relative_gap:.2e}, "
            f"distance_bound={self.distance_bound:.2e}, iterations={self.iterations}, time={self.time:.3g}s)"
        )


def _distance_bound(gap_M: float) -> float:
    """``sqrt(2 gap_M)`` (``gap_M`` already carries its rounding allowance), rounded up."""
    if not math.isfinite(gap_M):
        return math.inf
    return math.sqrt(2.0 * max(gap_M, 0.0)) * (1.0 + 4.0 * U)


def _violation(affine, w) -> tuple[float, float]:
    """``(infeasibility, scale)`` of the user's affine constraints at ``w``.

    ``infeasibility`` bounds, in exact arithmetic, the largest violation ``[A_k w + c_k]_+`` (or
    ``|A_k w + c_k|`` for an equality): the computed value plus its rounding ``γ (|A_k||w| + |c_k|)``,
    and 0 only when every inequality provably holds. ``scale`` is the largest ``|A_k||w| + |c_k|``.
    """
    worst, scale = 0.0, 0.0
    for A, c, _, kind in affine:
        A = np.asarray(A, dtype=np.float64)
        c = np.asarray(c, dtype=np.float64)
        value = A @ w + c
        size = np.abs(A) @ np.abs(w) + np.abs(c)
        slack = gamma(A.shape[1] + 4) * size + 8.0 * TINY * (A.shape[1] + 1)
        bound = np.abs(value) + slack if kind == "==" else np.maximum(value + slack, 0.0)
        worst = max(worst, float(bound.max(initial=0.0)))
        scale = max(scale, float(size.max(initial=0.0)))
    return worst, scale


def certify_solution(problem: RankingProblem, w, report: BackendReport, tol: float):
    """Certify ``w`` for ``problem`` with the best proof at hand.

    The backend's own ``lower_bound`` first; when it does not prove ``tol`` and the pairs exist, the
    pairwise certificate (:func:`cvxrank.certificate.certify`, from the backend's duals and the
    reduced dual, refined until it proves ``tol``) or, for a variant, the variant's own dual
    (:func:`cvxrank.variants.variant_certificate`); the better bound is kept. The gap then gets the
    float64 rounding allowance of the two sums it is the difference of (:mod:`cvxrank.rounding`), so
    that it bounds ``M(w) − M(w*)`` in exact arithmetic; a variant's affine user constraints get
    their violation at ``w`` (:attr:`Certificate.infeasibility`).

    Returns
    -------
    w : ndarray
        ``w`` as float64 (clipped into a variant's bounds, which a solver may miss by a rounding error).
    L, M : float
        ``L(w)`` of (9) and ``M(w)`` of (14) (a variant's own objectives).
    certificate : Certificate
    """
    w = np.asarray(w, dtype=np.float64).ravel()
    lam = problem.lam
    variant = problem.variant
    if not variant.is_default:
        w = np.clip(w, *variant.bounds(w.size))
    L = float(report.objective_L) if report.objective_L is not None else problem.hinge_objective(w)
    M = problem.qp_objective(w) if problem.has_pairs else L / (2.0 * lam)
    gap_L, kind, alpha, dual_residual, affine = math.inf, "none", None, math.nan, ()
    t = None

    def scores():  # |X| |w|, once, when a rounding allowance is computed here
        nonlocal t
        if t is None:
            t = abs_scores(problem, w)
        return t

    clipped = not variant.is_default  # (w may have moved into the bounds: the backend's numbers are not at it)
    primal_r = (float(report.primal_rounding) if report.primal_rounding is not None and not clipped
                else primal_rounding(problem, w, scores(), terms=report.objective_terms,
                                     pair_free=report.objective_L is not None))
    if report.lower_bound is not None:
        gap_L, kind = L - float(report.lower_bound), report.bound_name
        if report.dual_residual is not None:
            dual_residual = float(report.dual_residual)
    # Whether the backend's own bound proves tol once its rounding allowance is added.
    own_r = None
    if report.lower_bound is not None:
        own_r = (float(report.bound_rounding) if report.bound_rounding is not None
                 else model_rounding(problem, w, scores()))
    proved = report.lower_bound is not None and max(gap_L, 0.0) + 2.0 * lam * (primal_r + own_r) <= tol * L
    if report.user_parts:  # the problem actually solved: the user's added terms are part of its objective
        M = M + float(report.added_objective)
        L = 2.0 * lam * M
    if (not variant.is_default or report.user_parts) and (report.lower_bound is None
                                                          or (problem.has_pairs and not proved)):
        from cvxrank.variants import variant_certificate

        users = (*report.affine, *(report.relaxed or ()))
        M_v, dual_M, alpha_v, affine_v = variant_certificate(variant, problem.pairs, problem.C, lam, w,
                                                             report.alphas, users)
        if affine_v and problem.has_pairs and M_v - dual_M > 0.5 * tol * M_v:
            bands = _shifted_bands(problem, w, affine_v)
            if bands:
                M_v, dual_M, alpha_v, affine_v = variant_certificate(
                    variant, problem.pairs, problem.C, lam, w, (*report.alphas, alpha_v, *bands), users)
        M_v += float(report.added_objective)
        if report.relaxed is not None and 2.0 * lam * (M_v - dual_M) < gap_L:
            M, L, alpha, affine = M_v, 2.0 * lam * M_v, alpha_v, affine_v
            gap_L = 2.0 * lam * (M_v - dual_M)
            kind = _dual_kind(variant, report)
            w_dual = variant.primal_from_dual(problem.pairs, alpha, lam)
            dual_residual = float(np.linalg.norm(w - w_dual) / max(1.0, float(np.linalg.norm(w))))
    elif not proved and problem.has_pairs:
        # Refining the dual point beyond tol proves nothing the status needs (half of tol leaves room
        # for the rounding allowance); certify() without a target gives the tightest gap it can.
        cert = certify(problem.pairs, problem.C, w, report.alphas, target=0.5 * tol)
        if 2.0 * lam * cert.gap < gap_L:
            gap_L, kind, alpha, dual_residual = 2.0 * lam * cert.gap, "duality gap", cert.alpha, cert.dual_residual
    gap_M = gap_L / (2.0 * lam)
    if math.isfinite(gap_M):
        if alpha is not None:
            lower = dual_rounding(problem, alpha, affine)
            if report.objective_L is not None and problem.has_pairs:  # this gap's M is the pairs' own sum
                primal_r = primal_rounding(problem, w, scores())
        else:
            lower = own_r if own_r is not None else model_rounding(problem, w, scores())
        gap_M = (max(gap_M, 0.0) + primal_r + lower) * (1.0 + 4.0 * U)
        gap_L = 2.0 * lam * gap_M * (1.0 + 4.0 * U)
    infeasibility, scale = _violation(report.affine, w)
    infeasibility = max(infeasibility, float(report.violation))
    rel = gap_L / L if L > 0 else (0.0 if gap_L == 0 else math.inf)
    certificate = Certificate(kind=kind, gap_L=float(gap_L), gap_M=float(gap_M), relative_gap=float(rel),
                              distance_bound=_distance_bound(gap_M) if infeasibility == 0 else math.inf,
                              alpha=alpha, dual_residual=float(dual_residual), infeasibility=float(infeasibility),
                              feasibility_tol=float(tol * max(1.0, scale)))
    return w, L, M, certificate


def _shifted_bands(problem: RankingProblem, w, affine) -> list:
    """Dual points of the margin band (:func:`~cvxrank.certificate.reduced_dual`) for the Lagrangian of
    the papers' loss under user constraints and terms ``affine`` (``(A, c, ν)`` as used), where no
    solver gave margin duals (the hinge form (9) of the papers' problem states no margin constraint).
    Empty for other variants, whose forms carry margin constraints and so their duals."""
    v = problem.variant
    if v.loss != "hinge" or v.margin is not None or v.l1 != 0 or v.lower is not None or v.upper is not None:
        return []
    shift = sum(np.asarray(A, dtype=np.float64).T @ np.asarray(nu, dtype=np.float64) for A, _, nu in affine)
    margins = problem.pairs.margins(w)
    max_band = max(2000, 20 * problem.n_features)
    found = [reduced_dual(problem.pairs, problem.C, margins, eps, max_band, shift=shift) for eps in MARGIN_BANDS]
    return [a for a in found if a is not None]


def _dual_kind(variant, report: BackendReport) -> str:
    """The certificate kind of a variant's (Lagrangian) dual bound, naming how the user's parts entered
    it (:attr:`BackendReport.user_parts`)."""
    if report.user_parts:
        return f"Lagrangian dual ({report.user_parts})"
    if variant.constraints is not None:
        return "Lagrangian dual (user constraints)"
    return "duality gap (variant's dual)"


def judge_status(relative_gap: float, tol: float, backend_status: str) -> str:
    """The status from a certified relative gap, whatever the backend said: the one rule of every
    result, pairwise (:func:`finish`) and listwise (:mod:`cvxrank.listwise.result`).

    ``"optimal"`` when ``relative_gap ≤ tol``; else ``"user_limit"`` when the backend stopped at a
    cap; else ``"optimal_inaccurate"``. (A backend that ends without a point raises instead.)

    Examples
    --------
    >>> judge_status(1e-9, 1e-6, "user_limit"), judge_status(1e-3, 1e-6, "user_limit")
    ('optimal', 'user_limit')
    """
    if relative_gap <= tol:
        return "optimal"
    return "user_limit" if backend_status == "user_limit" else "optimal_inaccurate"


def finish(problem: RankingProblem, w, report: BackendReport, tol: float) -> SolveResult:
    """Certify ``w`` (:func:`certify_solution`), judge the status (:func:`judge_status`), warn, and
    build the :class:`SolveResult`.

    Warns
    -----
    InaccurateSolutionWarning
        When the status is short of ``"optimal"``.
    """
    if report.scale not in SCALES:
        raise ValidationError(f"scale must be one of {sorted(SCALES)}, got {report.scale!r}")
    start = time.perf_counter()
    w, L, M, certificate = certify_solution(problem, w, report, tol)
    status = judge_status(certificate.relative_gap if certificate.feasible else math.inf, tol, report.status)
    if status != "optimal":
        short = (f"certified relative gap {certificate.relative_gap:.2e} > tol {tol:.0e}" if certificate.feasible
                 else f"user constraints violated by up to {certificate.infeasibility:.2e} > "
                      f"{certificate.feasibility_tol:.1e}")
        warnings.warn(
            f"{report.solver} on the {report.formulation} formulation: {short} (solver status {report.status!r}); "
            "tighten the solver's tolerances, raise max_iter, or try another solver (cvxrank.available_solvers())",
            InaccurateSolutionWarning,
            stacklevel=3,
        )
    return SolveResult(
        w=w, status=status, objective=L, qp_objective=M, certificate=certificate, formulation=report.formulation,
        formulation_scale=report.scale, stages=tuple(report.stages) if report.stages else (report.solver,),
        solver=report.solver, solver_version=report.version, solver_status=report.status,
        solver_objective=float(report.solver_objective), iterations=report.iterations,
        setup_time=float(report.setup_time), solve_time=float(report.solve_time),
        certify_time=time.perf_counter() - start, primal_residual=float(report.primal_residual), lam=problem.lam,
        tol=tol, extras=dict(report.extras), history=report.history,
    )


def infeasible(problem: RankingProblem, report: BackendReport, tol: float) -> SolveResult:
    """The result of a problem whose own constraints admit no ``w``: status ``"infeasible"``, no ``w``.

    Only a variant's user constraints can make the problem infeasible (the papers' problem always
    has solutions); ``w`` and every objective are NaN, so nothing downstream mistakes it for a solution.
    """
    nan = math.nan
    certificate = Certificate(kind="none", gap_L=nan, gap_M=nan, relative_gap=nan, distance_bound=math.inf)
    return SolveResult(
        w=np.full(problem.n_features, nan), status="infeasible", objective=nan, qp_objective=nan,
        certificate=certificate, formulation=report.formulation, formulation_scale=report.scale,
        stages=(report.solver,), solver=report.solver, solver_version=report.version, solver_status=report.status,
        solver_objective=nan, iterations=None, setup_time=float(report.setup_time),
        solve_time=float(report.solve_time), certify_time=0.0, primal_residual=nan, lam=problem.lam, tol=tol,
        extras=dict(report.extras),
    )
