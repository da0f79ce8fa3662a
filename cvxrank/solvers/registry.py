"""What cvxrank knows about each solver, in one table.

One :class:`SolverSpec` per solver: its kind (a CVXPY backend or a native
solver of cvxrank's), the package that provides it, its own option names for
tolerances, iteration and time limits, cvxrank's default options, whether a
re-solve along a path starts from the previous solution, and its place in the
fallback chain. Everything else (``solve``, the fallback chain, the paths,
the study's tolerance profiles, the estimators' ``max_iter``) reads it here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata

from cvxrank.exceptions import SolverNotAvailableError

__all__ = ["SOLVERS", "SolverSpec", "fallback_chain", "get_spec", "max_iter_options", "time_limit_options"]


def _osqp_polish_option() -> str:
    # OSQP 1.0 renamed the option "polish" to "polishing".
    try:
        major = int(metadata.version("osqp").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return "polish"
    return "polishing" if major >= 1 else "polish"


@dataclass(frozen=True)
class SolverSpec:
    """One solver as cvxrank knows it.

    Attributes
    ----------
    name : str
        cvxrank's name (``solve(problem, name)``).
    kind : {"cvxpy", "native"}
    method : str
        One line: the algorithm.
    package : str
        The PyPI package that provides it (``"cvxrank"`` for native solvers).
    cvxpy_name : str or None
        CVXPY's solver constant.
    tolerance_options : tuple of str
        The solver's own option names that the study's tolerance profiles set
        to ``ε`` (native solvers stop on cvxrank's ``tol``, which every solver gets).
    max_iter_option, time_limit_option : str or None
        The solver's own option names for an iteration cap and a time limit.
    defaults : dict
        The only place cvxrank changes a solver's defaults; user options
        override them key by key.
    warm_start : bool or "scale"
        Whether a re-solve along a path starts from the previous solution
        (``"scale"``: only when the costs sit in the objective, ``costs="scale"``);
        measured along λ paths, see ``docs/path-benchmark.md``.
    fallback : int or None
        Position in the default fallback chain (None: not in it).
    pairfree : bool
        Reads documents and a cost table, never forms pairs.
    start_option : str or None
        Native solvers: the option that takes a starting ``w`` (paths pass
        the previous solution there when ``warm_start`` says so).
    exp_cone : bool
        Handles the exponential cone (the listwise problem's CVXPY form).
    listwise_defaults : dict
        Default options for the listwise exponential-cone problem.
    quick_max_iter : int or None
        The iteration cap ``cvxrank compare`` gives the solver unless told
        otherwise (``--max-iter``), so that a study with the defaults finishes
        in minutes: first-order solvers that stall (OSQP and SCS on the lifted
        and dual forms) end as ``user_limit`` rows instead of running for their
        full default of 100,000-200,000 iterations.
    losses : tuple of str
        The losses of :class:`cvxrank.variants.Variant` the solver minimises.
    extensions : frozenset or None
        The :attr:`~cvxrank.variants.Variant.extensions` it takes (None: all of them, the CVXPY
        solvers, which read the compiled problem).
    default_tol : float
        The certified relative gap :func:`cvxrank.solve` asks for when no
        ``tol`` is given: 1e-6, except the pure subgradient method (1e-4, what
        its ``O(1/k)`` rate reaches in seconds on small problems).
    """

    name: str
    kind: str
    method: str
    package: str
    cvxpy_name: str | None = None
    tolerance_options: tuple = ()
    max_iter_option: str | None = None
    time_limit_option: str | None = None
    defaults: dict = field(default_factory=dict)
    warm_start: bool | str = True
    fallback: int | None = None
    pairfree: bool = False
    default_tol: float = 1e-6
    start_option: str | None = None
    exp_cone: bool = False
    listwise_defaults: dict = field(default_factory=dict)
    quick_max_iter: int | None = None
    losses: tuple = ("hinge", "squared_hinge")
    extensions: frozenset | None = None

    def accepts(self, variant) -> bool:
        """Whether the solver solves ``variant`` (a :class:`cvxrank.variants.Variant`)."""
        return variant.loss in self.losses and (self.extensions is None or variant.extensions <= self.extensions)

    def max_iter(self, n: int) -> dict:
        """``{option name: n}`` for an iteration cap (empty when the solver has none)."""
        return {self.max_iter_option: int(n)} if self.max_iter_option else {}

    def time_limit(self, seconds: float) -> dict:
        """``{option name: seconds}`` for a time limit (empty when the solver has none)."""
        return {self.time_limit_option: float(seconds)} if self.time_limit_option else {}

    def installed(self) -> bool:
        """Whether :func:`cvxrank.solve` can use it on this machine."""
        if self.kind == "native":
            return True
        from cvxrank.solvers.cvxpy_backend import installed_cvxpy_names

        return self.cvxpy_name in installed_cvxpy_names()


_C = "cvxpy"
_N = "native"

#: Every solver cvxrank knows, in the order :func:`cvxrank.available_solvers` lists them.
SOLVERS: dict[str, SolverSpec] = {spec.name: spec for spec in (
    SolverSpec("clarabel", _C, "interior point (QP/SOCP), the reference", "clarabel", "CLARABEL",
               ("tol_gap_abs", "tol_gap_rel", "tol_feas"), "max_iter", "time_limit",
               # Clarabel's warm start is a data update that keeps the first point's equilibration:
               # 221 iterations over a λ path against 189 fresh (lifted, 8,387 pairs).
               warm_start=False, fallback=0, exp_cone=True),
    SolverSpec("ecos", _C, "interior point (SOCP)", "ecos", "ECOS", ("abstol", "reltol", "feastol"), "max_iters",
               None, fallback=1, exp_cone=True),
    SolverSpec("osqp", _C, "ADMM (QP) with polishing", "osqp", "OSQP", ("eps_abs", "eps_rel"), "max_iter",
               "time_limit",
               # OSQP's defaults (eps 1e-5, 10k iterations) stop short of a certified 1e-6 gap;
               # polishing recovers an exact active-set solution on most primal ranking QPs.
               {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iter": 100_000, _osqp_polish_option(): True},
               fallback=3, quick_max_iter=4000),
    SolverSpec("scs", _C, "ADMM (conic), low accuracy per iteration", "scs", "SCS", ("eps_abs", "eps_rel"),
               "max_iters", "time_limit_secs", {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
               # SCS took 20x more iterations warm-started when per-pair costs sat in its matrix,
               # 9-21 % fewer when they sit in its objective.
               warm_start="scale", fallback=2, exp_cone=True, quick_max_iter=5000,
               # SCS's defaults (eps 1e-4) give a listwise gradient far from the certificate's 1e-6.
               listwise_defaults={"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 100_000}),
    SolverSpec("piqp", _C, "proximal interior point (QP)", "piqp", "PIQP",
               ("eps_abs", "eps_rel", "eps_duality_gap_abs", "eps_duality_gap_rel"), "max_iter"),
    SolverSpec("proxqp", _C, "proximal augmented Lagrangian (QP)", "proxsuite", "PROXQP", ("eps_abs", "eps_rel"),
               "max_iter"),
    SolverSpec("qoco", _C, "interior point (SOCP)", "qoco", "QOCO", ("abstol", "reltol"), "max_iters"),
    SolverSpec("daqp", _C, "dual active set (QP)", "daqp", "DAQP"),
    SolverSpec("cvxopt", _C, "interior point (conic)", "cvxopt", "CVXOPT", ("abstol", "reltol", "feastol"),
               "maxiters"),
    SolverSpec("gurobi", _C, "commercial (QP)", "gurobipy", "GUROBI", (), "BarIterLimit", "TimeLimit"),
    SolverSpec("mosek", _C, "commercial (conic)", "Mosek", "MOSEK", (), "MSK_IPAR_INTPNT_MAX_ITERATIONS",
               "MSK_DPAR_OPTIMIZER_MAX_TIME", exp_cone=True),
    SolverSpec("subgradient", _N, "projected subgradient, step 1/(λ(k+1)), weighted average; certified stop",
               "cvxrank", max_iter_option="max_iter", time_limit_option="time_limit", warm_start=False,
               default_tol=1e-4, quick_max_iter=200_000, losses=("hinge",), extensions=frozenset()),
    SolverSpec("gd", _N, "fixed-step gradient descent of Fig. 3/SIGIR, as published", "cvxrank",
               max_iter_option="max_iter", warm_start=False, losses=("hinge",), extensions=frozenset()),
    SolverSpec("cutting_plane", _N, "pair-free cutting planes, then smoothed Newton; certified by its own bound",
               "cvxrank", max_iter_option="max_iter", time_limit_option="time_limit", warm_start=True,
               fallback=4, pairfree=True, start_option="warm_start_w", losses=("hinge",),
               extensions=frozenset({"margin"})),
    SolverSpec("truncated_newton", _N, "pair-free truncated Newton (CG) for the squared hinge, certified by its dual",
               "cvxrank", max_iter_option="max_iter", time_limit_option="time_limit", warm_start=True,
               pairfree=True, start_option="warm_start_w", losses=("squared_hinge",),
               extensions=frozenset({"margin"})),
)}


def get_spec(name) -> SolverSpec:
    """The :class:`SolverSpec` of ``name`` (case-insensitive), whether installed or not.

    Raises
    ------
    SolverNotAvailableError
        For a name cvxrank does not know; the message lists the installed solvers.
    """
    key = str(name).lower()
    if key not in SOLVERS:
        installed = [s.name for s in SOLVERS.values() if s.installed()]
        raise SolverNotAvailableError(f"unknown solver {name!r}; installed: {', '.join(installed)}")
    return SOLVERS[key]


def fallback_chain() -> tuple[str, ...]:
    """The default chain of :func:`~cvxrank.solvers.solve_with_fallback`, most reliable first."""
    chained = [s for s in SOLVERS.values() if s.fallback is not None]
    return tuple(s.name for s in sorted(chained, key=lambda s: s.fallback))


def max_iter_options(name, n: int) -> dict:
    """The iteration cap ``n`` under ``name``'s own option name (``max_iter`` for unknown solvers)."""
    key = str(name).lower()
    return SOLVERS[key].max_iter(n) if key in SOLVERS else {"max_iter": int(n)}


def time_limit_options(name, seconds: float) -> dict:
    """A time limit under ``name``'s own option name (empty when the solver has none)."""
    key = str(name).lower()
    return SOLVERS[key].time_limit(seconds) if key in SOLVERS else {}
