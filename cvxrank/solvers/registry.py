"""What cvxrank knows about each solver, in one table.

One :class:`SolverSpec` per solver: its kind (a CVXPY backend or a native
solver of cvxrank's), the package that provides it, its own option names for
tolerances, iteration and time limits, cvxrank's default options, whether a
re-solve along a path starts from the previous solution, and its place in the
fallback chain, its work limit (the cap of every run that sets none) and the
valid ranges of the known numeric options (:data:`OPTION_RANGES`). Everything
else (``solve``, the fallback chain, the paths, the study's tolerance profiles,
the estimators' ``max_iter``) reads it here.

The table's CVXPY entries are refinements: any other solver CVXPY has installed
that can take a QP is reached too, through a generic spec built from what CVXPY
says about it (:func:`generic_spec`; ``SOLVERS[name]`` and :func:`get_spec`
return it), with its options passed untouched and no work limit of cvxrank's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import metadata

from cvxrank._validation import POSITIVE, Interval
from cvxrank.exceptions import SolverNotAvailableError, ValidationError

__all__ = ["AUTO_PAIRFREE_PAIRS", "ITERATION_CAP", "NOT_FOR_RANKING", "OPTION_RANGES", "POLICIES", "SOLVERS",
           "SolverSpec", "check_option_values", "choose_solver", "cvxpy_capabilities", "fallback_chain",
           "generic_spec", "get_spec", "max_iter_options", "unlisted_cvxpy_solvers"]


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
        and dual forms) end as ``user_limit`` rows instead of running to their
        :attr:`work_limit` of 10,000-100,000 iterations.
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
        The iteration (or oracle-call) cap of every run: :func:`cvxrank.solve` gives it under the
        solver's own option name (:meth:`work_options`) when the caller sets no cap, so a fit, a
        cross-validation, a path or a study ends, as ``"user_limit"`` with its certified gap when
        the cap stopped it; ``verify`` and ``demo`` give it explicitly. A limit on work, so the
        outcome does not depend on the machine's speed. Chosen from measured counts, see
        ``docs/solvers.md`` ("Work limits" and "Theorem 1, verified"); for the optional solvers
        (PIQP, ProxQP, QOCO, CVXOPT, Gurobi, MOSEK) the solver's own documented default cap, now
        stated and reported. None for DAQP, which has no iteration option (its active-set
        method ends on its own), and for a :attr:`generic` spec: cvxrank does not cap its run, the
        solver's own default cap (if it has one) applies.
    work_unit : str
        What :attr:`work_limit` counts: ``"iterations"``, ``"oracle calls"`` (``cutting_plane``),
        ``"Newton steps"`` (``truncated_newton``, ``newton``) or ``"QP iterations"`` (HiGHS, whose
        reported iterations also count the simplex phase that finds its starting point);
        :meth:`work_done` reads it off a result.
    generic : bool
        Built on the fly for a CVXPY solver the table does not list (:func:`generic_spec`): only
        what CVXPY says about it is known (:attr:`method` names the problem classes its interfaces
        take); options pass untouched, no work limit.
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
    work_unit: str = "iterations"
    generic: bool = False

    def solves(self, kind: str) -> bool:
        """Whether the solver takes problems of ``kind`` (``"pairwise"`` or ``"listwise"``)."""
        return kind in self.problems or (kind == "listwise" and self.exp_cone)

    def accepts(self, variant) -> bool:
        """Whether the solver solves ``variant`` (a :class:`cvxrank.variants.Variant`)."""
        return variant.loss in self.losses and (self.extensions is None or variant.extensions <= self.extensions)

    def max_iter(self, n: int) -> dict:
        """``{option name: n}`` for an iteration cap (empty when the solver has none)."""
        return {self.max_iter_option: int(n)} if self.max_iter_option else {}

    def work_options(self, kind: str = "pairwise") -> dict:
        """``{option name: n}``: the cap :func:`cvxrank.solve` gives when the caller sets none.

        :attr:`work_limit` under :attr:`max_iter_option`; for the listwise problem (``kind``
        ``"listwise"``) the cap of :attr:`listwise_defaults` when it sets one (SCS's exponential
        cone needs more iterations). Empty for a solver without an iteration option or a limit.
        """
        n = self.listwise_defaults.get(self.max_iter_option) if kind == "listwise" else None
        n = self.work_limit if n is None else n
        return {} if n is None else self.max_iter(n)

    def work_done(self, result) -> int | None:
        """The work ``result`` (a :class:`~cvxrank.solution.SolveResult` of this solver) did, in :attr:`work_unit`."""
        extras = result.extras if isinstance(result.extras, dict) else {}
        if self.work_unit == "QP iterations":  # HiGHS: CVXPY's count adds the simplex phase's iterations
            info = getattr(extras.get("solver_stats"), "extra_stats", None)
            work = getattr(info, "qp_iteration_count", result.iterations)
        else:
            work = extras.get("oracle_calls") if self.work_unit == "oracle calls" else result.iterations
        return None if work is None else int(work)

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


def _highs_options() -> frozenset | None:
    """HiGHS's options, read off the installed highspy, and the two CVXPY reads itself: ``highs_options`` (a
    dict of HiGHS options, also the way to pass an advanced option highspy's class does not list) and
    ``write_model_file``."""
    try:
        import highspy

        names = [a for a in dir(highspy.HighsOptions()) if not a.startswith("_")]
    except (ImportError, AttributeError):  # not installed, or a release without HighsOptions: untouched
        return None
    return frozenset(names + ["highs_options", "write_model_file"] + list(_CVXPY_SOLVE))


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

class _Table(dict):
    """:data:`SOLVERS`: a dict whose missing key, when CVXPY has that solver installed and it can take the
    QP, is its :func:`generic_spec` (built on each look-up). ``in``, ``len``, iteration and ``get`` see the
    listed solvers only; a name that is neither listed nor usable is a ``KeyError``."""

    def __missing__(self, key):
        try:
            return generic_spec(key)
        except SolverNotAvailableError as exc:
            raise KeyError(key) from exc


#: Every solver cvxrank lists, in the order :func:`cvxrank.available_solvers` lists them; ``SOLVERS[name]``
#: of an unlisted solver CVXPY has installed is its generic spec (:func:`generic_spec`).
SOLVERS: dict[str, SolverSpec] = _Table({spec.name: spec for spec in (
    SolverSpec("clarabel", _C, "interior point (QP/SOCP), the reference", "clarabel", "CLARABEL",
               ("tol_gap_abs", "tol_gap_rel", "tol_feas"), "max_iter", "time_limit",
               # Clarabel's warm start is a data update that keeps the first point's equilibration
               # (more iterations than fresh along a λ path: docs/path-benchmark.md).
               warm_start=False, fallback=0, exp_cone=True, options=_clarabel_options(), work_limit=100),
    SolverSpec("ecos", _C, "interior point (SOCP)", "ecos", "ECOS", ("abstol", "reltol", "feastol"), "max_iters",
               None, fallback=1, exp_cone=True, options=_ECOS, work_limit=100),
    SolverSpec("osqp", _C, "ADMM (QP) with polishing", "osqp", "OSQP", ("eps_abs", "eps_rel"), "max_iter",
               "time_limit",
               # OSQP's defaults (eps 1e-5, 4k-10k iterations) stop short of a certified 1e-6 gap;
               # polishing recovers an exact active-set solution on most primal ranking QPs. Its
               # iteration cap is the work limit below (solve gives it).
               {"eps_abs": 1e-7, "eps_rel": 1e-7, _osqp_polish_option(): True},
               fallback=3, quick_max_iter=4000, options=_OSQP, work_limit=100_000),
    SolverSpec("scs", _C, "ADMM (conic), low accuracy per iteration", "scs", "SCS", ("eps_abs", "eps_rel"),
               "max_iters", "time_limit_secs", {"eps_abs": 1e-9, "eps_rel": 1e-9},
               # SCS: warm when the costs sit in its objective, cold when they sit in its matrix
               # (docs/path-benchmark.md).
               warm_start="scale", fallback=2, exp_cone=True, quick_max_iter=5000,
               # SCS's defaults (eps 1e-4) give a listwise gradient far from the certificate's 1e-6.
               listwise_defaults={"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 100_000}, options=_SCS,
               work_limit=10_000),
    SolverSpec("piqp", _C, "proximal interior point (QP)", "piqp", "PIQP",
               ("eps_abs", "eps_rel", "eps_duality_gap_abs", "eps_duality_gap_rel"), "max_iter", work_limit=250),
    SolverSpec("proxqp", _C, "proximal augmented Lagrangian (QP)", "proxsuite", "PROXQP", ("eps_abs", "eps_rel"),
               "max_iter", work_limit=10_000),
    SolverSpec("qoco", _C, "interior point (SOCP)", "qoco", "QOCO", ("abstol", "reltol"), "max_iters", work_limit=200),
    SolverSpec("daqp", _C, "dual active set (QP)", "daqp", "DAQP"),
    SolverSpec("cvxopt", _C, "interior point (conic)", "cvxopt", "CVXOPT", ("abstol", "reltol", "feastol"),
               "maxiters", work_limit=100),
    SolverSpec("gurobi", _C, "commercial (QP)", "gurobipy", "GUROBI", (), "BarIterLimit", "TimeLimit", work_limit=1_000),
    SolverSpec("mosek", _C, "commercial (conic)", "Mosek", "MOSEK", (), "MSK_IPAR_INTPNT_MAX_ITERATIONS",
               "MSK_DPAR_OPTIMIZER_MAX_TIME", exp_cone=True, work_limit=400),
    # HiGHS (highspy, a dependency of recent CVXPY): CVXPY hands it the QP, which HiGHS solves by its
    # active-set QP method after a simplex phase for a feasible start; it returns the constraint duals.
    # Its own QP cap (qp_iteration_limit) defaults to 2**31 - 1; the work limit counts QP iterations
    # only. Measured on generated data: primal, hinge and lifted certify within 400 QP iterations to
    # 10,512 pairs, the dual within 8,421 at λ = 0.1 but took 225,363 (22 s) on 5,058 pairs at λ = 1e-3.
    # Its feasibility tolerances changed no run (the active set ends exact): none in the profiles; a
    # warm start changed no count along a λ path.
    SolverSpec("highs", _C, "active-set QP (HiGHS), after a simplex phase for a feasible start", "highspy", "HIGHS",
               (), "qp_iteration_limit", "time_limit", warm_start=False, options=_highs_options(),
               work_limit=20_000, work_unit="QP iterations"),
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
               extensions=frozenset({"margin"}), work_limit=3_000, work_unit="oracle calls"),
    SolverSpec("truncated_newton", _N, "pair-free truncated Newton (CG) for the squared hinge, certified by its dual",
               "cvxrank", max_iter_option="max_iter", time_limit_option="time_limit", warm_start=True,
               pairfree=True, start_option="warm_start_w", losses=("squared_hinge",),
               extensions=frozenset({"margin"}), work_limit=200, work_unit="Newton steps"),
    SolverSpec("prox_newton", _N, "pair-free projected truncated Newton for the squared hinge with l1 and bounds on w, "
               "certified by its dual", "cvxrank", max_iter_option="max_iter", time_limit_option="time_limit",
               warm_start=True, pairfree=True, start_option="warm_start_w", losses=("squared_hinge",),
               extensions=frozenset({"margin", "l1", "bounds"}), work_limit=200, work_unit="Newton steps"),
    SolverSpec("newton", _N, "Newton's method with Cholesky steps for the listwise problem (3), Steps 1-5 of He et al.",
               "cvxrank", max_iter_option="max_iter", warm_start=False, start_option="w0", default_tol=1e-8,
               losses=(), problems=("listwise",), options=frozenset({"max_iter", "line_search"}), work_limit=50,
               work_unit="Newton steps"),
)})


#: An iteration or oracle-call cap: OSQP, SCS and Clarabel read a 32-bit integer (a larger or
#: negative one overflowed inside the solver with a traceback).
ITERATION_CAP = Interval(1, 2**31 - 1, integer=True)
_COUNT = Interval(0, 2**31 - 1, integer=True)  # a count where 0 means "off" or "automatic"
_TOLERANCE = Interval(0, math.inf, closed="left")  # a non-negative finite number

#: The values a solver option may take, by its name in any solver that has it: checked by
#: :func:`cvxrank.solve` before the solver runs (:func:`check_option_values`). Options not listed
#: go to the solver untouched, which checks them itself.
OPTION_RANGES: dict[str, Interval] = {
    # iteration and oracle-call caps
    **dict.fromkeys(("max_iter", "max_iters", "maxiters", "cg_max_iter", "check_every", "acceleration_interval",
                     "qp_iteration_limit", "simplex_iteration_limit", "ipm_iteration_limit", "pdlp_iteration_limit"),
                    ITERATION_CAP),
    **dict.fromkeys(("equilibrate_max_iter", "iterative_refinement_max_iter", "polish_refine_iter",
                     "polishing_refine_iter", "adaptive_rho_interval", "check_termination", "max_threads"), _COUNT),
    # time limits: seconds, a safety net (omit the option for none)
    "time_limit": POSITIVE, "time_limit_secs": POSITIVE,
    # tolerances: OSQP, SCS and Clarabel take 0 (the other of a pair then decides); ECOS only positive ones
    **dict.fromkeys(("eps_abs", "eps_rel", "eps_prim_inf", "eps_dual_inf", "eps_infeas", "tol_gap_abs",
                     "tol_gap_rel", "tol_feas", "tol_infeas_abs", "tol_infeas_rel", "tol_ktratio",
                     "reduced_tol_gap_abs", "reduced_tol_gap_rel", "reduced_tol_feas", "reduced_tol_infeas_abs",
                     "reduced_tol_infeas_rel", "reduced_tol_ktratio"), _TOLERANCE),
    **dict.fromkeys(("abstol", "reltol", "feastol", "abstol_inacc", "reltol_inacc", "feastol_inacc"), POSITIVE),
    # HiGHS's own ranges (it refuses a smaller one with a bare ValueError inside CVXPY)
    **dict.fromkeys(("primal_feasibility_tolerance", "dual_feasibility_tolerance"),
                    Interval(1e-10, math.inf, closed="left")),
    "ipm_optimality_tolerance": Interval(1e-12, math.inf, closed="left"),
    # step sizes and penalties of the ADMM solvers
    **dict.fromkeys(("rho", "sigma", "delta", "scale", "rho_x"), POSITIVE),
    "alpha": Interval(0, 2, closed="neither"),  # OSQP's and SCS's relaxation
    "max_step_fraction": Interval(0, 1, closed="right"),  # Clarabel
}

#: Native options whose default is None ("no limit", "automatic"): None is a value there.
_NATIVE_NONE = frozenset({"time_limit", "check_every"})


def check_option_values(spec: SolverSpec, options: dict) -> None:
    """Refuse an option value outside :data:`OPTION_RANGES`, naming the option, the solver and the range.

    Raises
    ------
    ValidationError
        For example ``the solver 'clarabel': max_iter must be a positive integer <= 2147483647,
        got -1`` (Clarabel itself raised an OverflowError).

    Examples
    --------
    >>> check_option_values(get_spec("scs"), {"max_iters": 100, "eps_abs": 1e-6})
    >>> check_option_values(get_spec("osqp"), {"alpha": 2.5})
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: the solver 'osqp': alpha must be a number in (0, 2), got 2.5
    """
    for name, value in options.items():
        valid = OPTION_RANGES.get(name)
        if valid is None:
            continue
        if spec.kind == "native" and name in _NATIVE_NONE:
            valid = valid.or_none()
        if not valid.admits(value):
            raise ValidationError(f"the solver {spec.name!r}: {name} must be {valid}, got {value!r}")


#: CVXPY solvers that could take the QP but that cvxrank does not hand its problems, and why.
NOT_FOR_RANKING = {
    "ECOS_BB": "it is ECOS's branch and bound for mixed-integer problems (CVXPY itself never picks it for a "
               "continuous one) and cvxrank's problems are continuous: the same interior point is 'ecos'",
}

#: CVXPY's constraint classes -> the cone they stand for.
_CONES = {"SOC": "SOC", "ExpCone": "EXP", "PSD": "PSD", "SvecPSD": "PSD", "PowCone3D": "POW", "PowConeND": "POW"}


def cvxpy_capabilities(cvxpy_name: str) -> tuple[str, ...]:
    """What CVXPY says the solver ``cvxpy_name`` (CVXPY's constant) takes, read off its solver interfaces.

    ``"QP"`` when CVXPY has a QP interface for it (:data:`cvxpy.reductions.solvers.defines.QP_SOLVERS`,
    a quadratic objective under linear constraints), ``"LP"`` when it has any, then the cones of its conic
    interface (``SUPPORTED_CONSTRAINTS``: ``"SOC"``, ``"EXP"``, ``"PSD"``, ``"POW"``) and ``"MIP"`` when an
    interface is ``MIP_CAPABLE``. Empty for a name CVXPY has no QP or conic interface for (an NLP solver).

    Examples
    --------
    >>> cvxpy_capabilities("OSQP"), cvxpy_capabilities("ECOS")
    (('QP', 'LP'), ('LP', 'SOC', 'EXP'))
    >>> cvxpy_capabilities("SCIPY")
    ('LP', 'MIP')
    """
    from cvxpy.reductions.solvers import defines

    qp, conic = defines.SOLVER_MAP_QP.get(cvxpy_name), defines.SOLVER_MAP_CONIC.get(cvxpy_name)
    interfaces = [i for i in (qp, conic) if i is not None]
    if not interfaces:
        return ()
    found = {_CONES.get(c.__name__) for c in getattr(conic, "SUPPORTED_CONSTRAINTS", ())}
    out = (["QP"] if qp is not None else []) + ["LP"] + [c for c in ("SOC", "EXP", "PSD", "POW") if c in found]
    return tuple(out + ["MIP"] if any(getattr(i, "MIP_CAPABLE", False) for i in interfaces) else out)


def _why_not(cvxpy_name: str) -> str | None:
    """Why cvxrank does not hand its problems to the CVXPY solver ``cvxpy_name``, None when it does."""
    if cvxpy_name in NOT_FOR_RANKING:
        return f"is not used by cvxrank: {NOT_FOR_RANKING[cvxpy_name]}"
    takes = cvxpy_capabilities(cvxpy_name)
    if "QP" in takes or "SOC" in takes:
        return None
    if not takes:
        return f"cannot take a QP (CVXPY has no QP or conic interface for {cvxpy_name})"
    mip = " (and their mixed-integer forms)" if "MIP" in takes else ""
    return (f"cannot take a QP (CVXPY's {cvxpy_name} interface takes {' and '.join(t for t in takes if t != 'MIP')} "
            f"problems{mip} only), and every ranking problem of cvxrank is one")


def _listed_cvxpy_names() -> set:
    return {s.cvxpy_name for s in SOLVERS.values() if s.cvxpy_name}


def generic_spec(name) -> SolverSpec:
    """The :class:`SolverSpec` of an installed CVXPY solver the table does not list, from what CVXPY says.

    ``name`` is CVXPY's constant in lower case (``"qpalm"`` for ``QPALM``). The spec takes the pairwise
    problems when CVXPY can hand the solver a QP (a QP interface, or a conic one with second-order cones,
    :func:`cvxpy_capabilities`), and the listwise problem too when its cones include the exponential cone.
    Nothing else is known: its options pass untouched (``options=None``), cvxrank gives no work limit (the
    solver's own default cap, if any, applies), no tolerance option, no time-limit option, ``warm_start``
    True (CVXPY hands the flag to the solver, which uses it if it can), ``package`` the name (CVXPY does
    not say which package; the version then reads ``"unknown"`` when no distribution has that name).

    Raises
    ------
    SolverNotAvailableError
        For a name CVXPY has not installed or the table lists (``unknown solver``, listing the installed
        ones), for an LP- or MILP-only solver (``cannot take a QP``) and for the solvers of
        :data:`NOT_FOR_RANKING`; each message says why and lists the installed solvers.
    """
    from cvxrank.solvers import available_solvers
    from cvxrank.solvers.cvxpy_backend import installed_cvxpy_names

    key = str(name).lower()
    const = key.upper()
    if const in _listed_cvxpy_names() or const not in installed_cvxpy_names():
        raise SolverNotAvailableError(f"unknown solver {name!r}; installed: {', '.join(available_solvers(None))}")
    why = _why_not(const)
    if why is not None:
        raise SolverNotAvailableError(f"the CVXPY solver {key!r} {why}; installed: "
                                      f"{', '.join(available_solvers(None))}")
    takes = cvxpy_capabilities(const)
    return SolverSpec(key, _C, f"CVXPY's {const} interface ({', '.join(takes)}); not in cvxrank's table", key,
                      const, exp_cone="EXP" in takes, generic=True)


def unlisted_cvxpy_solvers() -> list[str]:
    """Names of the solvers CVXPY has installed that the table does not list and that take a ranking
    problem (:func:`generic_spec`), in alphabetical order."""
    from cvxrank.solvers.cvxpy_backend import installed_cvxpy_names

    listed = _listed_cvxpy_names()
    return [c.lower() for c in sorted(installed_cvxpy_names()) if c not in listed and _why_not(c) is None]


def get_spec(name) -> SolverSpec:
    """The :class:`SolverSpec` of ``name`` (case-insensitive), whether installed or not.

    A name the table does not list that CVXPY has installed gets its :func:`generic_spec`.

    Raises
    ------
    SolverNotAvailableError
        For a name cvxrank does not know and CVXPY has not installed; the message lists the installed
        solvers. For an installed CVXPY solver that cannot take the problems (LP- or MILP-only), or that
        :data:`NOT_FOR_RANKING` lists, the message says why.
    """
    key = str(name).lower()
    if key in SOLVERS:
        return SOLVERS[key]
    return generic_spec(name)


#: The policies :func:`cvxrank.solve` takes in place of a solver name.
POLICIES = ("auto", "fallback")

#: From this many pairs on, ``"auto"`` picks the pair-free native solver where it applies.
AUTO_PAIRFREE_PAIRS = 50_000


def choose_solver(problem, formulation: str = "auto") -> str:
    """The solver of the ``"auto"`` policy for ``problem`` (a RankingProblem).

    The pair-free native solver that takes the problem's variant (``cutting_plane`` for the hinge,
    ``truncated_newton`` for the squared hinge) when the problem is given as documents, no
    formulation is asked for and it has :data:`AUTO_PAIRFREE_PAIRS` pairs or more (counted without
    forming them; a problem made from preference groups, e.g. a click log, too: ``cutting_plane`` or
    ``truncated_newton``); else ``clarabel``, the reference, which solves every variant.
    """
    if formulation == "auto" and not problem.needs_pairs and problem.n_pairs >= AUTO_PAIRFREE_PAIRS:
        for spec in SOLVERS.values():
            if spec.pairfree and spec.accepts(problem.variant) and getattr(problem.costs.weights, "ndim", 0) == 0 \
                    and (problem.groups is None or spec.name in problem._pairfree_solvers()):  # preference groups
                return spec.name
    return "clarabel"


def fallback_chain() -> tuple[str, ...]:
    """The default chain of ``solve(problem, "fallback")``, most reliable first."""
    chained = [s for s in SOLVERS.values() if s.fallback is not None]
    return tuple(s.name for s in sorted(chained, key=lambda s: s.fallback))


def max_iter_options(name, n: int) -> dict:
    """The iteration cap ``n`` under ``name``'s own option name (``max_iter`` for unknown solvers and policies).

    Raises
    ------
    ValidationError
        For a CVXPY solver the table does not list (a :func:`generic_spec`): cvxrank does not know its
        iteration option, and would rather say so than drop the cap.
    """
    key = str(name).lower()
    if key in SOLVERS:
        return SOLVERS[key].max_iter(n)
    try:
        spec = generic_spec(key)
    except SolverNotAvailableError:
        return {"max_iter": int(n)}
    raise ValidationError(f"max_iter: cvxrank does not know the iteration option of the CVXPY solver {spec.name!r} "
                          "(not in its registry); give the solver's own option among its options instead")
