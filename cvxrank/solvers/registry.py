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

__all__ = ["AUTO_PAIRFREE_PAIRS", "POLICIES", "SOLVERS", "SolverSpec", "choose_solver", "fallback_chain", "get_spec",
           "max_iter_options"]


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
    problems : tuple of str
        The problems it solves: ``"pairwise"`` (:class:`~cvxrank.problem.RankingProblem`) and/or
        ``"listwise"`` (:class:`~cvxrank.listwise.problem.ListwiseProblem`, the exponential cone).
    options : frozenset or None
        The option names :func:`cvxrank.solve` passes to a CVXPY solver (its own settings, checked
        before the solve; None: not known to cvxrank, passed untouched). Native solvers' options
        are the keyword arguments of their backend (:func:`cvxrank.solvers.solver_options`).
    default_tol : float
        The certified relative gap :func:`cvxrank.solve` asks for when no
        ``tol`` is given: 1e-6, except the pure subgradient method (1e-4, what
        its ``O(1/k)`` rate reaches in seconds on small problems).
    work_limit : int or None
        The iteration (or oracle-call) cap ``verify`` and ``demo`` give the solver: a limit on
        work, so the verdict does not depend on the machine's speed (set through
        :meth:`max_iter`; None: the solver's own default cap). Chosen from measured counts,
        see ``docs/solvers.md`` ("Theorem 1, verified").
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
    options: frozenset | None = None
    problems: tuple = ("pairwise",)
    work_limit: int | None = None

    def solves(self, kind: str) -> bool:
        """Whether the solver takes problems of ``kind`` (``"pairwise"`` or ``"listwise"``)."""
        return kind in self.problems or (kind == "listwise" and self.exp_cone)

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

#: Keyword arguments of CVXPY's own ``Problem.solve`` that cvxrank passes through.
_CVXPY_SOLVE = ("ignore_dpp", "canon_backend", "enforce_dpp", "use_quad_obj")


def _clarabel_options() -> frozenset:
    """Clarabel's settings, read off the installed package (they grow between releases)."""
    try:
        import clarabel

        names = [a for a in dir(clarabel.DefaultSettings()) if not a.startswith("_") and a != "default"]
    except Exception:  # not installed, or a release without DefaultSettings: pass options untouched
        return None
    return frozenset(names + list(_CVXPY_SOLVE))


def _names(*names) -> frozenset:
    return frozenset(names + _CVXPY_SOLVE)


#: ECOS's settings (its Python interface's keyword arguments).
_ECOS = _names("max_iters", "abstol", "reltol", "feastol", "abstol_inacc", "reltol_inacc", "feastol_inacc")
#: OSQP's settings, under both the 0.6 and the 1.x names.
_OSQP = _names("rho", "sigma", "scaling", "adaptive_rho", "adaptive_rho_interval", "adaptive_rho_tolerance",
               "adaptive_rho_fraction", "max_iter", "eps_abs", "eps_rel", "eps_prim_inf", "eps_dual_inf", "alpha",
               "linsys_solver", "delta", "polish", "polishing", "polish_refine_iter", "polishing_refine_iter",
               "scaled_termination", "check_termination", "check_dualgap", "warm_starting", "time_limit",
               "rho_is_vec", "cg_max_iter", "cg_tol_reduction", "cg_tol_fraction", "cg_precond", "profiler_level")
#: SCS's settings.
_SCS = _names("max_iters", "eps_abs", "eps_rel", "eps_infeas", "alpha", "rho_x", "scale", "adaptive_scale",
              "normalize", "acceleration_lookback", "acceleration_interval", "time_limit_secs",
              "write_data_filename", "log_csv_filename", "use_indirect", "mkl", "gpu")

#: Every solver cvxrank knows, in the order :func:`cvxrank.available_solvers` lists them.
SOLVERS: dict[str, SolverSpec] = {spec.name: spec for spec in (
    SolverSpec("clarabel", _C, "interior point (QP/SOCP), the reference", "clarabel", "CLARABEL",
               ("tol_gap_abs", "tol_gap_rel", "tol_feas"), "max_iter", "time_limit",
               # Clarabel's warm start is a data update that keeps the first point's equilibration
               # (more iterations than fresh along a λ path: docs/path-benchmark.md).
               warm_start=False, fallback=0, exp_cone=True, options=_clarabel_options(), work_limit=100),
    SolverSpec("ecos", _C, "interior point (SOCP)", "ecos", "ECOS", ("abstol", "reltol", "feastol"), "max_iters",
               None, fallback=1, exp_cone=True, options=_ECOS, work_limit=100),
    SolverSpec("osqp", _C, "ADMM (QP) with polishing", "osqp", "OSQP", ("eps_abs", "eps_rel"), "max_iter",
               "time_limit",
               # OSQP's defaults (eps 1e-5, 10k iterations) stop short of a certified 1e-6 gap;
               # polishing recovers an exact active-set solution on most primal ranking QPs.
               {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iter": 100_000, _osqp_polish_option(): True},
               fallback=3, quick_max_iter=4000, options=_OSQP, work_limit=100_000),
    SolverSpec("scs", _C, "ADMM (conic), low accuracy per iteration", "scs", "SCS", ("eps_abs", "eps_rel"),
               "max_iters", "time_limit_secs", {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
               # SCS: warm when the costs sit in its objective, cold when they sit in its matrix
               # (docs/path-benchmark.md).
               warm_start="scale", fallback=2, exp_cone=True, quick_max_iter=5000,
               # SCS's defaults (eps 1e-4) give a listwise gradient far from the certificate's 1e-6.
               listwise_defaults={"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 100_000}, options=_SCS,
               work_limit=10_000),
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
               default_tol=1e-4, quick_max_iter=200_000, losses=("hinge",), extensions=frozenset(),
               work_limit=300_000),
    SolverSpec("gd", _N, "fixed-step gradient descent of Fig. 3/SIGIR, as published", "cvxrank",
               max_iter_option="max_iter", warm_start=False, losses=("hinge",), extensions=frozenset(),
               work_limit=5_000),
    SolverSpec("cutting_plane", _N, "pair-free cutting planes, then smoothed Newton; certified by its own bound",
               "cvxrank", max_iter_option="max_iter", time_limit_option="time_limit", warm_start=True,
               fallback=4, pairfree=True, start_option="warm_start_w", losses=("hinge",),
               extensions=frozenset({"margin"}), work_limit=3_000),
    SolverSpec("truncated_newton", _N, "pair-free truncated Newton (CG) for the squared hinge, certified by its dual",
               "cvxrank", max_iter_option="max_iter", time_limit_option="time_limit", warm_start=True,
               pairfree=True, start_option="warm_start_w", losses=("squared_hinge",),
               extensions=frozenset({"margin"})),
    SolverSpec("newton", _N, "Newton's method with Cholesky steps for the listwise problem (3), Steps 1-5 of He et al.",
               "cvxrank", max_iter_option="max_iter", warm_start=False, start_option="w0", default_tol=1e-8,
               losses=(), problems=("listwise",), options=frozenset({"max_iter", "line_search"})),
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


#: The policies :func:`cvxrank.solve` takes in place of a solver name.
POLICIES = ("auto", "fallback")

#: From this many pairs on, ``"auto"`` picks the pair-free native solver where it applies.
AUTO_PAIRFREE_PAIRS = 50_000


def choose_solver(problem, formulation: str = "auto") -> str:
    """The solver of the ``"auto"`` policy for ``problem`` (a RankingProblem).

    The pair-free native solver that takes the problem's variant (``cutting_plane`` for the hinge,
    ``truncated_newton`` for the squared hinge) when the problem is given as documents, no
    formulation is asked for and it has :data:`AUTO_PAIRFREE_PAIRS` pairs or more (counted without
    forming them); else ``clarabel``, the reference, which solves every variant.
    """
    if formulation == "auto" and not problem.has_pairs and problem.n_pairs >= AUTO_PAIRFREE_PAIRS:
        for spec in SOLVERS.values():
            if spec.pairfree and spec.accepts(problem.variant) and getattr(problem.costs.weights, "ndim", 0) == 0:
                return spec.name
    return "clarabel"


def fallback_chain() -> tuple[str, ...]:
    """The default chain of ``solve(problem, "fallback")``, most reliable first."""
    chained = [s for s in SOLVERS.values() if s.fallback is not None]
    return tuple(s.name for s in sorted(chained, key=lambda s: s.fallback))


def max_iter_options(name, n: int) -> dict:
    """The iteration cap ``n`` under ``name``'s own option name (``max_iter`` for unknown solvers)."""
    key = str(name).lower()
    return SOLVERS[key].max_iter(n) if key in SOLVERS else {"max_iter": int(n)}
