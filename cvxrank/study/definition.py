"""What a study is: the grid, its validation, its fixed columns and its hash.

A :class:`Study` is instances x formulations x solvers x profiles x cost
settings (``λ``, ``τ``, ``μ`` and the variant of the problem). CVXPY solvers
run on every formulation asked for; native solvers
(:data:`cvxrank.solvers.NATIVE_SOLVERS`) read only the pairs and costs, so
they run once per cell with formulation ``"native"``. Every run becomes one
row with the columns :data:`COLUMNS`.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from cvxrank._validation import POSITIVE_INT, check, check_time_limit
from cvxrank.costs import DEFAULT_LAM, check_lam
from cvxrank.exceptions import ValidationError
from cvxrank.formulations import FORMULATIONS
from cvxrank.solvers import NATIVE_SOLVERS, available_solvers
from cvxrank.study.defaults import DEFAULTS
from cvxrank.study.instances import Instance
from cvxrank.study.profiles import PROFILES, Profile, get_profile
from cvxrank.variants import Variant

__all__ = ["COLUMNS", "DEFAULTS", "KEY", "STUDY_FORMULATIONS", "CostSetting", "Study", "check_names", "iteration_cap",
           "tau_for"]

#: Formulation names of a study: the CVXPY ones, ``auto`` and ``native`` (native solvers).
STUDY_FORMULATIONS = FORMULATIONS + ("auto", "native")

#: The fixed long-format columns, in order. ``solve_time_source`` says who timed ``solve_time``:
#: ``"solver"`` (the solver's own report) or ``"cvxrank"`` (cvxrank's wall clock around the solver
#: call, used when the solver reports no usable time: 0, negative, NaN or none). ``certify_time`` is
#: cvxrank's certificate alone; ``work_limit`` the iteration cap the run had (its solver's own unit);
#: ``reference_gap`` the certified relative gap of the reference the errors are measured against;
#: ``blas_threads`` the BLAS threads the worker ran with (threadpoolctl); ``repeats`` how many times the
#: run was made (each in a fresh process; the time columns are then medians) and ``wall_time_min`` /
#: ``wall_time_max`` the spread of its wall time.
COLUMNS = (
    "instance", "size", "documents", "pairs", "features", "cost", "formulation", "solver", "profile",
    "status", "found", "setup_time", "solve_time", "solve_time_source", "certify_time", "wall_time", "iterations",
    "work_limit", "objective", "reference_objective", "reference_gap", "objective_error", "w_error",
    "primal_residual", "dual_residual", "duality_gap", "relative_gap", "ndcg10", "peak_memory", "blas_threads",
    "repeats", "wall_time_min", "wall_time_max", "lam", "tol", "resolved_formulation", "solver_status",
    "solver_version", "message",
)

#: Columns that identify a run (a resumed study skips rows with a key already stored).
KEY = ("instance", "size", "cost", "formulation", "solver", "profile")

def iteration_cap(solver: str, max_iter: int | None = None) -> dict:
    """The iteration cap of a study's runs of ``solver``, under the solver's own option name.

    ``max_iter`` when given; else the registry's quick cap (:attr:`SolverSpec.quick_max_iter`: OSQP
    4,000, SCS 5,000, subgradient 200,000 iterations), so a study with the defaults finishes in
    minutes; else the work limit :func:`cvxrank.solve` gives every run
    (:meth:`SolverSpec.work_options`). Empty for a solver without an iteration option (DAQP).

    Examples
    --------
    >>> iteration_cap("osqp"), iteration_cap("clarabel"), iteration_cap("ecos", 50)
    ({'max_iter': 4000}, {'max_iter': 100}, {'max_iters': 50})
    """
    from cvxrank.solvers.registry import get_spec

    spec = get_spec(solver)
    if max_iter is not None:
        return spec.max_iter(max_iter)
    return spec.max_iter(spec.quick_max_iter) if spec.quick_max_iter else spec.work_options()


def tau_for(tau, pairs):
    """The entries of a ``τ`` table that name grade pairs of ``pairs`` (None stays None).

    One ``τ`` table may serve instances with different grades: entries for grade pairs an instance
    lacks are left out for that instance. A grade pair the instance has and the table lacks is still
    refused (by :meth:`cvxrank.costs.Costs.check_grade_pairs`, when the weights are made).

    Examples
    --------
    >>> from cvxrank.datasets import make_ecml_simulation
    >>> from cvxrank.pairs import make_pairs
    >>> pairs = make_pairs(make_ecml_simulation(sizes=(2, 1, 1), random_state=0))
    >>> tau_for({(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0, (4, 3): 9.0}, pairs)
    {(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}
    """
    if tau is None:
        return None
    present = set(pairs.types)
    return {k: v for k, v in tau.items() if tuple(_plain(g) for g in k) in present}



def size_text(size) -> str:
    """A size knob as key text: ``3``, ``3.0`` and ``"3"`` are ``"3"``; None and NaN are ``""``."""
    if size is None or size == "" or (isinstance(size, float) and math.isnan(size)):
        return ""
    return str(int(float(size)))


def _plain(v):
    return v.item() if hasattr(v, "item") else v


@dataclass(frozen=True)
class CostSetting:
    """The problem solved on an instance: ``λ``, ``τ`` per grade pair, ``μ`` per query and the variant.

    Attributes
    ----------
    lam : float, default 0.5 (:data:`cvxrank.costs.DEFAULT_LAM`)
    tau : mapping or None
        ``{(higher, lower): τ}`` for every grade pair of the instances, or None (all ones).
    mu : None, "balanced" or mapping
    name : str, optional
        The ``cost`` column; default built from the values, e.g. ``"lam=0.5"`` or
        ``"lam=0.5 variant=loss=squared_hinge"``.
    variant : Variant, optional
        The variant of the weighted hinge problem (9)/SIGIR (:class:`cvxrank.variants.Variant`;
        default the papers' problem): variants are a study axis like ``λ``, ``τ`` and ``μ``. A
        solver or formulation that cannot state it gives an ``"unsupported"`` row.
    """

    lam: float = DEFAULT_LAM
    tau: object = None
    mu: object = None
    name: str | None = None
    variant: Variant | None = None

    def __post_init__(self):
        object.__setattr__(self, "lam", check_lam(self.lam))
        variant = Variant() if self.variant is None else self.variant
        if not isinstance(variant, Variant):
            raise ValidationError(f"variant of a cost setting must be a cvxrank.variants.Variant, "
                                  f"got {type(variant).__name__}")
        object.__setattr__(self, "variant", variant)
        if self.tau is not None and not hasattr(self.tau, "items"):
            raise ValidationError(f"tau of a cost setting must be None or a mapping, got {type(self.tau).__name__}")
        if not (self.mu is None or self.mu == "balanced" or hasattr(self.mu, "items")):
            raise ValidationError(f"mu of a cost setting must be None, 'balanced' or a mapping, got {self.mu!r}")
        if self.name is None:
            parts = [f"lam={self.lam:g}"]
            if self.tau is not None:
                parts.append("tau=" + "/".join(f"{_plain(h)}-{_plain(lo)}:{v:g}"
                                               for (h, lo), v in sorted(self.tau.items())))
            if self.mu is not None:
                parts.append(f"mu={self.mu if isinstance(self.mu, str) else 'given'}")
            if not variant.is_default:
                parts.append(f"variant={variant.describe()}")
            object.__setattr__(self, "name", " ".join(parts))
        if "," in self.name:
            raise ValidationError(f"cost setting name must not contain commas, got {self.name!r}")

    def describe(self) -> dict:
        tau = None if self.tau is None else sorted([_plain(h), _plain(lo), float(v)] for (h, lo), v in self.tau.items())
        mu = self.mu if self.mu is None or isinstance(self.mu, str) else sorted(
            [str(_plain(k)), float(v)] for k, v in self.mu.items())
        extra = {} if self.variant.is_default else {"variant": self._variant_text()}
        return {"name": self.name, "lam": self.lam, "tau": tau, "mu": mu, **extra}

    def _variant_text(self) -> str:
        v = self.variant
        given = [repr(getattr(v, k)) for k in ("margin", "lower", "upper") if np.ndim(getattr(v, k)) > 0]
        # arrays and constraints do not fit describe(): their values (or the function's name) go in the hash
        if v.constraints is not None:
            given.append(getattr(v.constraints, "__qualname__", repr(v.constraints)))
        return v.describe() + ("" if not given else " " + " ".join(given))


def check_names(formulations, solvers, profiles) -> tuple[list, list, list]:
    """Validate the names of a grid; unknown names raise with the valid ones listed.

    Examples
    --------
    >>> check_names(["lifted"], ["Clarabel"], ["mid"])
    (['lifted'], ['clarabel'], ['mid'])
    """
    formulations = [str(f).lower() for f in formulations]
    solvers = [str(s).lower() for s in solvers]
    bad = [f for f in formulations if f not in STUDY_FORMULATIONS]
    if bad:
        raise ValidationError(f"unknown formulation(s) {', '.join(bad)}; valid: {', '.join(STUDY_FORMULATIONS)}")
    installed = available_solvers()
    bad = [s for s in solvers if s not in installed]
    if bad:
        raise ValidationError(f"unknown or uninstalled solver(s) {', '.join(bad)}; valid: {', '.join(installed)}")
    names = []
    for p in profiles:
        if not isinstance(p, Profile) and p not in PROFILES:
            raise ValidationError(f"unknown profile {p!r}; valid: {', '.join(PROFILES)}")
        names.append(get_profile(p).name)
    for what, seq in (("formulations", formulations), ("solvers", solvers), ("profiles", names)):
        if not seq:
            raise ValidationError(f"a study needs at least one of {what}")
        if len(set(seq)) != len(seq):
            raise ValidationError(f"{what} has duplicates: {seq}")
    return formulations, solvers, names


@dataclass(frozen=True, eq=False)
class Study:
    """A solver comparison study: the grid and how each run is judged.

    Parameters
    ----------
    instances : sequence of Instance
    formulations : sequence of str, default ("primal", "lifted", "dual", "hinge")
        From ``primal``, ``lifted``, ``dual``, ``hinge``, ``auto`` (and
        ``native``, which native solvers get anyway).
    solvers : sequence of str, optional
        Names of :func:`cvxrank.available_solvers`; default the installed ones of
        clarabel, ecos, osqp, scs. (Every default is :data:`DEFAULTS`, which
        ``cvxrank compare`` reads too.)
    profiles : sequence of str or Profile, default ("mid",)
    costs : sequence of CostSetting, default (CostSetting(),)
    timeout : float, default 60
        Seconds each run may take (build, compile, solve, certificate);
        beyond it the run is killed and recorded with status ``"timeout"``.
        A safety net only: the iteration caps (``max_iter``) end runs, so the
        table does not depend on the machine's speed; a ``timeout`` row says
        the net caught a run.
    reference : (solver, formulation, profile), default ("clarabel", "auto", "high")
        How each instance's reference solution is computed; its certified
        gap is stored with it.
    reference_timeout : float, optional
        Time limit of a reference solve (default ``5 x timeout``).
    solver_options : dict, optional
        ``{solver: {option: value}}`` added to every run of that solver
        (after the profile's tolerances, so they can override them).
    max_iter : int, optional
        Iteration cap of every run (not the reference), under each solver's
        own option name (:data:`cvxrank.solvers.registry.SOLVERS`,
        ``max_iter`` for native solvers). Default: :func:`iteration_cap`, the
        registry's quick cap where it has one (OSQP 4,000, SCS 5,000,
        subgradient 200,000), else the work limit :func:`cvxrank.solve` gives.
        The cap stops a run however fast the machine is, so the table does not
        depend on timing the way a time limit does. A run the cap stopped
        short of ``ε`` is a ``"user_limit"`` row, as :func:`cvxrank.solve`
        reports it; one whose certificate proves ``ε`` although it used every
        iteration is ``"optimal"`` (the certificate decides, as everywhere in
        cvxrank); ``solver_status`` keeps the solver's own word and
        ``work_limit`` the cap.
    warm_start : bool, default False
        Warm-start each cost setting from the previous one of the same
        (instance, formulation, solver, profile). The problem is compiled
        once per such group either way (DPP, :class:`cvxrank.path.PathSolver`).
    threads : int, default 1
        BLAS threads of each run (threadpoolctl), so parallel runs do not
        oversubscribe the cores and timings stay comparable.
    repeats : int, default 1
        Times each run is made, each in a fresh process (cold: nothing cached
        from the previous repeat). The row keeps the first repeat's results;
        its time columns are medians over the repeats, ``peak_memory`` the
        largest, ``wall_time_min`` / ``wall_time_max`` the spread; a repeat
        whose status or iterations differ from the first is named in
        ``message``. The reference is solved once.
    """

    instances: tuple
    formulations: tuple = DEFAULTS["formulations"]
    solvers: tuple | None = None
    profiles: tuple = DEFAULTS["profiles"]
    costs: tuple = (CostSetting(),)
    timeout: float = DEFAULTS["timeout"]
    reference: tuple = DEFAULTS["reference"]
    reference_timeout: float | None = None
    solver_options: dict = field(default_factory=dict)
    warm_start: bool = False
    threads: int = DEFAULTS["threads"]
    max_iter: int | None = None
    repeats: int = DEFAULTS["repeats"]

    def __post_init__(self):
        if self.solvers is None:
            installed = available_solvers()
            object.__setattr__(self, "solvers", tuple(s for s in DEFAULTS["solvers"] if s in installed))
        instances = tuple(self.instances)
        if not instances or not all(isinstance(i, Instance) for i in instances):
            raise ValidationError("instances must be a non-empty sequence of cvxrank.study.Instance")
        keys = [(i.name, i.size) for i in instances]
        if len(set(keys)) != len(keys):
            raise ValidationError(f"two instances have the same (name, size): {keys}")
        formulations, solvers, profiles = check_names(self.formulations, self.solvers, self.profiles)
        profiles = tuple(get_profile(p) for p in self.profiles)
        costs = tuple(self.costs)
        if not costs or not all(isinstance(c, CostSetting) for c in costs):
            raise ValidationError("costs must be a non-empty sequence of CostSetting")
        if len({c.name for c in costs}) != len(costs):
            raise ValidationError(f"cost settings need distinct names: {[c.name for c in costs]}")
        check_time_limit(self.timeout, "timeout")
        check_time_limit(self.reference_timeout, "reference_timeout")
        ref = tuple(self.reference)
        if len(ref) != 3:
            raise ValidationError(f"reference must be (solver, formulation, profile), got {self.reference!r}")
        check_names([ref[1]], [ref[0]], [ref[2]])
        options = dict(self.solver_options or {})
        unknown = [s for s in options if s not in solvers and s != ref[0]]
        if unknown:
            raise ValidationError(f"solver_options for solvers not in the study: {unknown}")
        check("max_iter", self.max_iter, POSITIVE_INT.or_none())
        check("threads", self.threads, POSITIVE_INT)
        check("repeats", self.repeats, POSITIVE_INT)
        for name, value in (("instances", instances), ("formulations", tuple(formulations)),
                            ("solvers", tuple(solvers)), ("profiles", profiles), ("costs", costs),
                            ("reference", (ref[0].lower(), ref[1], get_profile(ref[2]))),
                            ("reference_timeout", float(self.reference_timeout or 5 * self.timeout)),
                            ("timeout", float(self.timeout)), ("solver_options", options)):
            object.__setattr__(self, name, value)

    def cells(self, instance: Instance) -> list[tuple[str, str, Profile]]:
        """The (formulation, solver, profile) runs of one instance (each over all cost settings)."""
        out = []
        for solver in self.solvers:
            forms = ["native"] if solver in NATIVE_SOLVERS else [f for f in self.formulations if f != "native"]
            for form in forms:
                out.extend((form, solver, p) for p in self.profiles)
        return out

    @property
    def n_runs(self) -> int:
        """Rows the study produces."""
        return sum(len(self.cells(i)) for i in self.instances) * len(self.costs)

    def run_options(self, solver: str) -> dict:
        """Options of every run of ``solver``: the iteration cap (:func:`iteration_cap`), then ``solver_options``."""
        return {**iteration_cap(solver, self.max_iter), **self.solver_options.get(solver, {})}

    def caps(self) -> dict:
        """``{solver: {option: cap}}``: the iteration cap each solver's runs get (``solver_options`` may override it)."""
        return {s: iteration_cap(s, self.max_iter) for s in self.solvers}

    def definition(self) -> dict:
        """Everything that determines the rows, as JSON-able data (the hash covers it)."""
        extra = {} if self.max_iter is None else {"max_iter": self.max_iter}
        return {**extra,
            "columns": list(COLUMNS),
            "caps": self.caps(),
            "instances": [i.describe() for i in self.instances],
            "formulations": list(self.formulations),
            "solvers": list(self.solvers),
            "profiles": [[p.name, p.tol, p.max_primal_residual, p.max_dual_residual] for p in self.profiles],
            "costs": [c.describe() for c in self.costs],
            "timeout": self.timeout,
            "reference": [self.reference[0], self.reference[1], self.reference[2].name],
            "reference_timeout": self.reference_timeout,
            "solver_options": {s: {k: repr(v) for k, v in sorted(o.items())}
                               for s, o in sorted(self.solver_options.items())},
            "warm_start": self.warm_start,
            "threads": self.threads,
            "repeats": self.repeats,
        }

    @cached_property
    def hash(self) -> str:
        """SHA-256 of :meth:`definition` (first 16 hex digits)."""
        text = json.dumps(self.definition(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]
