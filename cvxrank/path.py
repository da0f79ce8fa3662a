"""Regularisation and cost grids solved without recompiling (DPP re-solves).

Every formulation holds its costs in ``cp.Parameter`` objects (a scale
factor ``κ`` of the costs, or one ``C_i`` per pair, for the QP forms
(14)/SIGIR and the dual (18)-(19)/SIGIR; ``weights`` and ``lam`` for the
hinge form (9)/SIGIR), and every builder is DPP. A grid of ``λ``, ``τ``,
``μ`` or ``C`` values therefore needs *one* CVXPY compilation: later
points only write new parameter values, CVXPY maps them through its cached
parameter-to-data tensor (``problem._cache.param_prog``) and the solver
restarts, warm-started where that helps (:data:`WARM_START`: OSQP, SCS on
the scale form; not Clarabel: docs/path-benchmark.md).

Along a ``λ`` grid with fixed pair weights ``c_i = τ_k(i) μ_q(i)`` the QP
costs are Theorem 1's

.. math:: C_i(\\lambda) = \\frac{c_i}{2 \\lambda},

so a path over ``λ`` only scales ``C``: the QP forms are built with the
scale parametrization (``costs="scale"``, costs in the solver's linear
objective, the fastest). Grids that change costs pair by pair (several
``τ`` or ``μ``, or a ``C`` list) use ``costs="per_pair"``
(:func:`~cvxrank.formulations.base.cost_parameters`); the hinge form takes
``c`` and ``λ`` directly.

:class:`PathSolver` is the building block (one compiled problem, re-solved
point by point); :func:`solve_path` runs a whole grid and returns a
:class:`PathResult`.
"""

from __future__ import annotations

import itertools
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cvxrank._validation import check_flag
from cvxrank.costs import check_lam, pair_weights, theorem1_C
from cvxrank.exceptions import ValidationError
from cvxrank.formulations import (
    COST_PARAMETRIZATIONS,
    FORMULATIONS,
    Formulation,
    build,
    build_hinge,
    check_costs,
)
from cvxrank.formulations.base import proportional_scale
from cvxrank.pairs import PairSet
from cvxrank.problem import RankingProblem
from cvxrank.solution import SolveResult
from cvxrank.solvers import NATIVE_SOLVERS, available_solvers, solve
from cvxrank.solvers.registry import SOLVERS, choose_solver
from cvxrank.variants import Variant

__all__ = ["WARM_START", "PathResult", "PathSolver", "solve_path"]

#: Whether a re-solve starts from the previous solution when ``warm_start=None`` (the default):
#: True, False, or ``"scale"`` (only with ``costs="scale"``). A view of the solver registry
#: (:data:`cvxrank.solvers.registry.SOLVERS`, field ``warm_start``):
#:
#: * SCS is warm-started on the scale form only: with per-pair costs the changed values sit in its
#:   constraint matrix, where a warm start does not help;
#: * Clarabel's warm start keeps the first point's equilibration, so it starts afresh (still
#:   without recompiling);
#: * the native cutting-plane solver starts from the previous ``w``;
#: * ``gd`` (Fig. 3 of the SIGIR paper, as published) and ``subgradient`` always start at 0;
#: * OSQP takes CVXPY's warm start. Other CVXPY solvers are warm-started when CVXPY can.
#:
#: Iteration counts: docs/path-benchmark.md ("What it shows"; "Measurements (2026-11-22)").
WARM_START = {name: spec.warm_start for name, spec in SOLVERS.items()}


class PathSolver:
    """One formulation, built and compiled once, solved at many cost values.

    Parameters
    ----------
    problem : RankingProblem
        The problem whose costs and ``λ`` the grid moves: its pairs (formed once), and the weights,
        ``λ`` and variant that :meth:`solve` uses for what a point does not give. (A
        :class:`~cvxrank.pairs.PairSet` is taken as ``RankingProblem(pairs)``, with a
        DeprecationWarning.)
    formulation : {"auto", "primal", "lifted", "dual", "hinge", "native"}, default "auto"
        As in :func:`cvxrank.formulations.build`; ``"auto"`` is resolved by
        :func:`~cvxrank.formulations.choose_formulation` when the problem is
        built. ``"native"`` (native solvers only) builds no CVXPY problem: each
        point is a :class:`~cvxrank.problem.RankingProblem` on the same pairs,
        which the native solver reads directly.
    solver : str, default "auto"
        A name of :func:`cvxrank.available_solvers`, or ``"auto"``
        (:func:`~cvxrank.solvers.registry.choose_solver`, which reads the problem as given; with
        ``formulation="native"``, the pair-free solver that takes the problem's variant). The
        path forms the problem's pairs once, whatever the solver.
    tol : float, optional
        Certified relative duality gap for status ``"optimal"``; default: the
        solver's own (see :func:`cvxrank.solve`).
    warm_start : bool or None, default None
        Start each re-solve from the previous solution where the solver can;
        None follows :data:`WARM_START` (every solver but Clarabel, ``gd`` and
        ``subgradient``, and SCS only with ``costs="scale"``). The native
        ``cutting_plane`` solver starts from the previous ``w``.
    costs : {"scale", "per_pair"}, default "scale"
        Cost parametrization of the QP forms
        (:func:`~cvxrank.formulations.base.cost_parameters`). With
        ``"scale"``, a point whose costs are not a multiple of the first
        point's rebuilds the problem once as ``"per_pair"`` (counted in
        ``n_builds``) and goes on without recompiling.
    verbose : bool, default False
    **options
        Passed to :func:`cvxrank.solve` (the solver's own option names).

    Attributes
    ----------
    formulation : Formulation or None
        The problem, built at the first :meth:`solve`.
    build_time : float
        Seconds spent building it (CVXPY expressions, ``D`` for the dense
        primal); compilation is in each result's ``setup_time``.
    n_solves : int
    n_builds : int
        Problems built: 1, or 2 after a ``"scale"`` → ``"per_pair"`` switch.

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> from cvxrank.problem import RankingProblem
    >>> path = PathSolver(RankingProblem(make_ranking(n_queries=4, random_state=0)), formulation="lifted")
    >>> [path.solve(lam=lam).status for lam in (1.0, 0.1)]
    ['optimal', 'optimal']
    """

    def __init__(self, problem, *, formulation: str = "auto", solver: str = "auto", tol: float | None = None,
                 warm_start: bool | None = None, costs: str = "scale", verbose: bool = False, **options):
        problem = _as_problem(problem, "PathSolver")
        valid = FORMULATIONS + ("auto", "native")
        if formulation not in valid:
            raise ValidationError(f"unknown formulation {formulation!r}; choose one of {', '.join(valid)}")
        name = str(solver).lower()
        if name == "auto":  # chosen before the pairs are formed: choose_solver counts them without
            if formulation == "native":
                name = next(s.name for s in SOLVERS.values() if s.pairfree and s.accepts(problem.variant))
            else:
                name = choose_solver(problem, formulation)
                if SOLVERS[name].kind == "native":
                    formulation = "native"
        pairs = problem.pairs
        if name not in available_solvers():
            raise ValidationError(f"unknown solver {solver!r}; installed: {', '.join(available_solvers())}")
        if costs not in COST_PARAMETRIZATIONS:
            raise ValidationError(f"unknown cost parametrization {costs!r}; choose one of "
                                  f"{', '.join(COST_PARAMETRIZATIONS)}")
        if formulation == "native" and name not in NATIVE_SOLVERS:
            raise ValidationError(f"formulation 'native' is for native solvers ({', '.join(NATIVE_SOLVERS)}), "
                                  f"not {name!r}")
        self.pairs = pairs
        self.base = problem
        self.requested = formulation
        self.solver = name
        self.tol = tol
        self._warm_policy = SOLVERS[name].warm_start if warm_start is None else check_flag("warm_start", warm_start)
        self.costs = costs
        self.verbose = verbose
        self.options = options
        self.formulation: Formulation | None = None
        self.problem: RankingProblem | None = None
        self.build_time = 0.0
        self.n_solves = 0
        self.n_builds = 0
        self._last_w = None
        self._variant = None

    @property
    def formulation_name(self) -> str | None:
        """The formulation solved: its name once built (``"auto"`` resolved), ``"native"`` for native solvers."""
        if self.requested == "native":
            return "native"
        return None if self.formulation is None else self.formulation.name

    @property
    def warm_start(self) -> bool:
        """Whether the next re-solve is warm-started (:data:`WARM_START`, or the ``warm_start`` given)."""
        policy = self._warm_policy
        return policy == "scale" and self.costs == "scale" if isinstance(policy, str) else policy

    def _costs(self, C, weights, lam):
        """``(C, weights, λ)`` of one grid point; the hinge form with given ``C`` is ``weights = C, λ = 1/2``."""
        n = self.pairs.n_pairs
        if C is not None:
            if weights is not None or lam is not None:
                raise ValidationError("give either C, or weights and lam, not both")
            C = check_costs(C, n, "C")
            return C, C, 0.5
        lam = self.base.lam if lam is None else check_lam(lam)
        weights = self.base.weights if weights is None else check_costs(weights, n, "weights")
        return theorem1_C(weights, lam), weights, lam

    def _build(self, C, weights, lam, variant) -> None:
        start = time.perf_counter()
        self._variant = variant
        if self.requested == "native":
            self.problem = RankingProblem(self.pairs, weights=weights, lam=lam, variant=variant)
            self.build_time += time.perf_counter() - start
            self.n_builds += 1
            return
        if variant is not None and not variant.is_default:
            ranking = RankingProblem(self.pairs, weights=weights, lam=lam, variant=variant)
            form = (build_hinge(ranking, costs=self.costs) if self.requested == "hinge"
                    else build(ranking, formulation=self.requested, costs=self.costs))
        elif self.requested == "hinge":
            form = build_hinge(self.pairs, weights=weights, lam=lam, costs=self.costs)
        else:  # the point's own λ, so that every result states L(w) of its problem
            form = build(self.pairs, weights=weights, lam=lam, formulation=self.requested, costs=self.costs)
        self.build_time += time.perf_counter() - start
        self.n_builds += 1
        self.formulation = form

    def _set(self, C, weights, lam, variant) -> None:
        if self.requested == "native":
            self._variant = variant
            self.problem = RankingProblem(self.pairs, weights=weights, lam=lam, variant=variant)
            return
        form = self.formulation
        hinge = "lam" in form.parameters
        if not _same_variant(self._variant, variant) \
                or (variant is not None and variant.l1 > 0 and not hinge and lam != form.ranking.lam):
            # another variant (or an elastic net's rho = l1 / (2 lam) at another lam): a new problem
            self._build(C, weights, lam, variant)
        elif not form.accepts(weights if hinge else C):
            # Costs that are no multiple of the first point's: rebuild once with one parameter per pair.
            self.costs = "per_pair"
            self._build(C, weights, lam, variant)
        else:  # the QP forms get C = weights / (2λ) and state the point's λ
            form.set_weights(weights, lam)

    def solve(self, *, C=None, weights=None, lam=None, variant=None) -> SolveResult:
        """Solve at one point: per-pair costs ``C``, or pair ``weights`` and ``lam`` (Theorem 1).

        What a point does not give comes from the problem: its weights, its ``λ``, its variant.
        The first call builds the problem; later calls only change its
        parameter values, so CVXPY reuses its compilation. ``variant`` (a
        :class:`~cvxrank.variants.Variant`) states the problem solved; a point with another
        variant than the previous one builds its problem anew (counted in ``n_builds``).
        """
        if variant is not None and not isinstance(variant, Variant):
            raise ValidationError(f"variant must be a cvxrank.variants.Variant, got {type(variant).__name__}")
        C, weights, lam = self._costs(C, weights, lam)
        if variant is None:
            variant = self.base.variant
        if variant is not None and variant.is_default:
            variant = None
        if self.formulation is None and self.problem is None:
            self._build(C, weights, lam, variant)
        else:
            self._set(C, weights, lam, variant)
        self.n_solves += 1
        if SOLVERS[self.solver].kind == "native":  # the previous w, where the solver takes a start
            start = self._last_w if self.warm_start and SOLVERS[self.solver].start_option else None
        else:
            start = self.warm_start
        target = self.problem if self.requested == "native" else self.formulation
        result = solve(target, self.solver, tol=self.tol, warm_start=start, verbose=self.verbose, **self.options)
        self._last_w = result.w
        return result

    @property
    def compiled(self):
        """CVXPY's cached parameter program (None before the first solve or for native solvers).

        The same object after every re-solve shows that nothing was recompiled.
        """
        problem = None if self.formulation is None else self.formulation.problem
        return None if problem is None else problem._cache.param_prog


@dataclass(eq=False)
class PathResult:
    """The solutions of a grid, in grid order; behaves as a list of :class:`~cvxrank.SolveResult`.

    Attributes
    ----------
    results : list of SolveResult
    points : list of dict
        The grid point of each result: ``{"lam", "tau", "mu"}`` (``"weights"``
        instead of ``tau``/``mu`` when weights were given), or ``{"C": index}``.
    formulation : Formulation or None
        The one problem every point re-solved (None for native solvers, which compile nothing).
    build_time : float
        Seconds to build it (once).
    solver : str
    """

    results: list
    points: list
    formulation: Formulation
    build_time: float
    solver: str
    _frame: pd.DataFrame | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self):
        return iter(self.results)

    def __getitem__(self, i):
        return self.results[i]

    @property
    def coefs(self) -> np.ndarray:
        """The ``w`` of every point, shape ``(n_points, n_features)``."""
        return np.vstack([r.w for r in self.results])

    def to_frame(self) -> pd.DataFrame:
        """One row per point: its parameters, status, ``M(w)`` of (14) at its ``C``, gap, iterations, times."""
        rows = []
        for point, r in zip(self.points, self.results):
            row = {k: (v if np.isscalar(v) or v is None else repr(v)) for k, v in point.items()}
            row.update(status=r.status, qp_objective=r.qp_objective, relative_gap=r.relative_gap,
                       iterations=r.iterations, setup_time=r.setup_time, solve_time=r.solve_time)
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        name = "native" if self.formulation is None else self.formulation.name
        return (f"PathResult(n_points={len(self)}, formulation={name!r}, solver={self.solver!r}, "
                f"statuses={sorted({r.status for r in self.results})})")


def _same_variant(a, b) -> bool:
    """Whether two variants (None: the papers' problem) state the same problem: the same loss and ℓ1,
    equal margins and bounds, and the very same constraints function. ``describe()`` cannot tell: it
    shows every array and function as ``given``, and two functions cannot be compared."""
    if a is b:
        return True
    if a is None or b is None or (a.loss, a.l1) != (b.loss, b.l1) or a.constraints is not b.constraints:
        return False
    return all(_same_value(getattr(a, key), getattr(b, key)) for key in ("margin", "lower", "upper"))


def _same_value(x, y) -> bool:
    """Equal variant entries: both None, the same text, or equal numbers of the same shape."""
    if x is None or y is None or isinstance(x, str) or isinstance(y, str):
        return type(x) is type(y) and x == y
    try:
        return bool(np.array_equal(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)))
    except (TypeError, ValueError):
        return False


def _grid(pairs, lams, weights, taus, mus, Cs):
    """``[(point dict, C, weights, lam)]`` of the requested grid."""
    if Cs is not None:
        if any(v is not None for v in (lams, weights, taus, mus)):
            raise ValidationError("a C grid (Cs) excludes lams, weights, taus and mus")
        if isinstance(Cs, (str, bytes)) or not hasattr(Cs, "__len__") or len(Cs) == 0:
            raise ValidationError("Cs must be a non-empty sequence of per-pair costs (scalars or arrays)")
        return [({"C": i}, check_costs(c, pairs.n_pairs, "C"), None, None) for i, c in enumerate(Cs)]
    if lams is None:
        raise ValidationError("give lams (a λ grid), or Cs (a grid of per-pair costs)")
    lams = [lams] if np.isscalar(lams) else list(lams)
    if not lams:
        raise ValidationError("lams is empty")
    lams = [check_lam(lam) for lam in lams]
    if weights is not None:
        if taus is not None or mus is not None:
            raise ValidationError("give weights, or taus/mus to compute them, not both")
        w = check_costs(weights, pairs.n_pairs, "weights")
        return [({"lam": lam, "weights": "given"}, None, w, lam) for lam in lams]
    taus = [None] if taus is None else list(taus)
    mus = [None] if mus is None else list(mus)
    for name, values in (("taus", taus), ("mus", mus)):
        if not values:
            raise ValidationError(f"{name} is empty: give at least one value (None for all ones)")
    grid = []
    for tau, mu in itertools.product(taus, mus):
        w = pair_weights(pairs, tau=tau, mu=mu)
        grid.extend(({"lam": lam, "tau": tau, "mu": mu}, None, w, lam) for lam in lams)
    return grid


def _as_problem(problem, who: str) -> RankingProblem:
    """A :class:`~cvxrank.problem.RankingProblem`; a PairSet becomes ``RankingProblem(pairs)`` (deprecated)."""
    if isinstance(problem, PairSet):
        warnings.warn(f"{who} takes a RankingProblem; a PairSet is read as RankingProblem(pairs) (deprecated)",
                      DeprecationWarning, stacklevel=3)
        return RankingProblem(problem)
    if not isinstance(problem, RankingProblem):
        raise ValidationError(f"{who} takes a RankingProblem, got {type(problem).__name__}")
    return problem


def solve_path(problem, lams=None, *, weights=None, taus=None, mus=None, Cs=None, formulation: str = "auto",
               solver: str = "auto", tol: float | None = None, warm_start: bool | None = None, verbose: bool = False,
               **options) -> PathResult:
    """Solve a grid of ``λ`` (and ``τ``, ``μ``) or ``C`` values on one compiled problem.

    The grid is ``taus x mus x lams`` with ``λ`` varying fastest, in the
    order given (order ``lams`` from large to small to follow the usual
    regularisation path with warm starts), or the list ``Cs``. Each point
    has pair weights ``c = τ_k(i) μ_q(i)`` (:func:`cvxrank.pair_weights`)
    and QP costs ``C_i = c_i / (2λ)`` (Theorem 1 of Cao et al., SIGIR 2006).
    The problem is built and compiled at the first point only.

    Parameters
    ----------
    problem : RankingProblem
        Its pairs (formed once) and, unless the grid gives other costs, its weights and variant
        (a PairSet is read as ``RankingProblem(pairs)``, with a DeprecationWarning).
    lams : float or sequence of float
        ``λ`` values of (9)/SIGIR. Required unless ``Cs`` is given.
    weights : float or array-like of shape (n_pairs,), optional
        Fixed pair weights ``c`` (instead of ``taus``/``mus``); default: the problem's.
    taus : sequence, optional
        ``τ`` tables (``{(higher, lower): value}`` or None for all ones); default ``[None]``.
    mus : sequence, optional
        ``μ`` settings (None, ``"balanced"`` or ``{qid: value}``); default ``[None]``.
    Cs : sequence, optional
        Per-pair QP costs of (14), scalars or arrays of shape ``(n_pairs,)``;
        excludes the other grid arguments.
    formulation : {"auto", "primal", "lifted", "dual", "hinge", "native"}, default "auto"
    solver : str, default "auto"
    tol : float, optional (default: the solver's own)
    warm_start : bool or None, default None
        None: warm-start every solver but Clarabel, ``gd`` and ``subgradient``,
        and SCS only on the scale form (:data:`WARM_START`).
    verbose : bool, default False
    **options
        Solver options, as for :func:`cvxrank.solve`.

    Returns
    -------
    PathResult
        A list-like of :class:`~cvxrank.SolveResult` in grid order, with the
        grid points, the formulation and ``to_frame()``. Each result's
        ``objective`` is ``L(w)`` of (9) at its point; ``to_frame()`` also
        reports ``M(w)`` of (14) at each point's ``C``.

    Raises
    ------
    ValidationError
        For an unknown formulation or solver, an empty or mixed grid.
    SolverError
        When the solver fails at some point (the grid stops there).

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> from cvxrank.problem import RankingProblem
    >>> problem = RankingProblem(make_ranking(n_queries=4, random_state=0))
    >>> path = solve_path(problem, lams=[1.0, 0.3, 0.1], formulation="lifted")
    >>> [r.status for r in path], len(path.coefs)
    (['optimal', 'optimal', 'optimal'], 3)
    """
    problem = _as_problem(problem, "solve_path")
    pairs = problem.pairs
    if weights is None and taus is None and mus is None and Cs is None:
        weights = problem.weights
    grid = _grid(pairs, lams, weights, taus, mus, Cs)
    # One weight vector along the grid (a λ path): only the scale of C moves.
    first = grid[0][1] if grid[0][1] is not None else grid[0][2]
    scaled = all(proportional_scale(c if c is not None else w, first) is not None
                 for _, c, w, _ in grid)
    solver_ = PathSolver(problem, formulation=formulation, solver=solver, tol=tol, warm_start=warm_start,
                         costs="scale" if scaled else "per_pair", verbose=verbose, **options)
    results = [solver_.solve(C=C, weights=w, lam=lam) for _, C, w, lam in grid]
    return PathResult(results, [p for p, *_ in grid], solver_.formulation, solver_.build_time, solver_.solver)
