"""What runs inside a study's worker process: load an instance, solve a group of runs, make rows.

A :class:`Task` is one (instance, formulation, solver, profile) with all the
study's cost settings: the problem is built and compiled once and re-solved
per cost setting through its parameters (:class:`cvxrank.path.PathSolver`).
The worker sends messages to its parent over a connection: ``("loaded",
sizes)`` once the data are made, ``("row", row)`` after each run, and
``("error", message)`` if the instance cannot be loaded. The parent
(:mod:`cvxrank.study._isolate`) enforces the time limits.

Run as ``python -m cvxrank.study.worker FD_IN FD_OUT`` it reads one task from
file descriptor ``FD_IN`` and writes its messages to ``FD_OUT`` (the
isolation used where :mod:`multiprocessing` cannot start children, such as
inside Dask's daemonic workers).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

from cvxrank._memory import peak_rss, reset_peak_rss
from cvxrank.costs import pair_weights
from cvxrank.exceptions import InaccurateSolutionWarning
from cvxrank.formulations.base import FORMULATION_EXTENSIONS, states
from cvxrank.metrics import ndcg_score
from cvxrank.pairs import make_pairs
from cvxrank.path import PathSolver
from cvxrank.problem import RankingProblem
from cvxrank.solvers.registry import get_spec
from cvxrank.study.definition import tau_for
from cvxrank.study.instances import Instance
from cvxrank.study.profiles import Profile, passes, solver_options

__all__ = ["Task", "blas_threads", "child_main", "execute", "one_line", "skeleton_row", "timed_solve"]


@dataclass(frozen=True)
class Task:
    """One group of runs: an instance, a formulation, a solver, a profile and the cost settings.

    ``kind`` is ``"run"`` or ``"reference"`` (the instance's reference solve);
    ``cost_parametrization`` is the QP forms' ``costs`` (see
    :func:`cvxrank.formulations.base.cost_parameters`).
    """

    kind: str
    instance: Instance
    formulation: str
    solver: str
    profile: Profile
    costs: tuple
    options: dict
    warm_start: bool = False
    threads: int = 1
    cost_parametrization: str = "scale"


def one_line(text: str, limit: int = 500) -> str:
    """A message squeezed onto one line (CSV rows stay one line each)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def skeleton_row(task: Task, cost, sizes: dict | None, status: str, message: str = "") -> dict:
    """The row of a run that produced no solution (``timeout``, ``error``)."""
    sizes = sizes or {}
    nan = math.nan
    return {
        "instance": task.instance.name, "size": task.instance.size, "documents": sizes.get("documents", nan),
        "pairs": sizes.get("pairs", nan), "features": sizes.get("features", nan), "cost": cost.name,
        "formulation": task.formulation, "solver": task.solver, "profile": task.profile.name, "status": status,
        "found": False, "setup_time": nan, "solve_time": nan, "solve_time_source": "", "certify_time": nan,
        "wall_time": nan, "iterations": nan, "work_limit": nan, "objective": nan, "reference_objective": nan,
        "reference_gap": nan, "objective_error": nan, "w_error": nan, "primal_residual": nan, "dual_residual": nan,
        "duality_gap": nan, "relative_gap": nan, "ndcg10": nan, "peak_memory": nan,
        "blas_threads": _BLAS_THREADS[0] if _BLAS_THREADS else nan, "repeats": 1, "wall_time_min": nan,
        "wall_time_max": nan, "lam": cost.lam, "tol": task.profile.tol, "resolved_formulation": "",
        "solver_status": "", "solver_version": "", "message": one_line(message),
    }


# -- memory -----------------------------------------------------------------
def _reset_peak() -> float:
    """Reset the peak-RSS mark where Linux allows it; return the current RSS in MiB."""
    return reset_peak_rss() / 2**20


def _peak() -> float:
    return peak_rss() / 2**20


# -- times and threads ------------------------------------------------------------
def _usable(t) -> bool:
    return t is not None and isinstance(t, (int, float, np.floating)) and math.isfinite(t) and t > 0


def timed_solve(res, wall: float) -> tuple[float, str]:
    """``(solve_time, source)`` of a result: the solver's own time when it is usable, else cvxrank's.

    A solver-reported time of 0, a negative one, NaN or none (PIQP through CVXPY reports 0.0) cannot
    enter a ratio or a mean; it is replaced by cvxrank's wall clock around the solver call
    (``extras["wall_time"]`` of the CVXPY backend, less CVXPY's compilation), or, without that, by
    ``wall`` (the whole call, timed by the study) less compilation and certificate. ``source`` is
    ``"solver"`` or ``"cvxrank"`` (the ``solve_time_source`` column).

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> timed_solve(R(solve_time=0.5, setup_time=0.1, certify_time=0.0, extras={}), 1.0)
    (0.5, 'solver')
    >>> timed_solve(R(solve_time=0.0, setup_time=0.1, certify_time=0.0, extras={"wall_time": 0.4}), 1.0)
    (0.30000000000000004, 'cvxrank')
    """
    extras = res.extras if isinstance(getattr(res, "extras", None), dict) else {}
    if extras.get("solve_time_source") in ("solver", "cvxrank") and _usable(res.solve_time):
        return float(res.solve_time), extras["solve_time_source"]  # a backend that says whose time it is
    stats = extras.get("solver_stats")
    # the CVXPY backend already put its own timing where the solver gave none: that is not the solver's
    reported = res.solve_time if stats is None or getattr(stats, "solve_time", None) is not None else None
    if _usable(reported):
        return float(reported), "solver"
    own = extras.get("wall_time")
    if _usable(own):
        rest = own - (res.setup_time if _usable(res.setup_time) else 0.0)
        return float(rest if rest > 0 else own), "cvxrank"
    rest = wall - sum(t for t in (res.setup_time, res.certify_time) if _usable(t))
    return float(rest if rest > 0 else wall), "cvxrank"


_BLAS_THREADS: list = []


def blas_threads() -> float:
    """The threads of the BLAS libraries loaded in this process (threadpoolctl; the largest if several)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a dependency of cvxrank
        return math.nan
    counts = [lib.get("num_threads") for lib in threadpool_info() if lib.get("user_api") == "blas"]
    counts = [c for c in counts if isinstance(c, int)]
    return float(max(counts)) if counts else math.nan


# -- running ------------------------------------------------------------------
def unsupported(solver: str, formulation: str, variant) -> str:
    """Why ``solver`` on ``formulation`` cannot state ``variant`` ("" when it can)."""
    if not get_spec(solver).accepts(variant):
        return f"{solver} does not solve the variant {variant.describe()}"
    if formulation in FORMULATION_EXTENSIONS and not states(formulation, variant):
        return f"the {formulation} formulation does not state the variant {variant.describe()}"
    return ""


def _run_one(path: PathSolver, pairs, test, cost, task: Task, sizes: dict) -> dict:
    first = path.n_solves == 0
    why = unsupported(task.solver, task.formulation, cost.variant)
    if why:
        return skeleton_row(task, cost, sizes, "unsupported", why)
    try:  # a tau table's entries for grade pairs this instance lacks are left out (tau_for)
        weights = pair_weights(pairs, tau=tau_for(cost.tau, pairs), mu=cost.mu)
        base = _reset_peak()
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
            res = path.solve(weights=weights, lam=cost.lam, variant=cost.variant)
        wall = time.perf_counter() - start
        peak = max(_peak() - base, 0.0)
    except Exception as exc:  # noqa: BLE001 - a failed run is a row, not a dead study
        return skeleton_row(task, cost, sizes, "error", f"{type(exc).__name__}: {exc}")
    # L(w) of the problem solved, recomputed from the pairs (the variant's, when one is set)
    objective = RankingProblem(pairs, weights=weights, lam=cost.lam, variant=cost.variant).hinge_objective(res.w)
    row = skeleton_row(task, cost, sizes, res.status)
    solve_time, source = timed_solve(res, wall - (path.build_time if first else 0.0))
    cap = res.extras.get("work_limit") if isinstance(res.extras, dict) else None
    row.update(
        found=passes(task.profile, status=res.status, relative_gap=res.relative_gap,
                     primal_residual=res.primal_residual, dual_residual=res.dual_residual),
        setup_time=res.setup_time + (path.build_time if first else 0.0), solve_time=solve_time,
        solve_time_source=source, certify_time=res.certify_time, work_limit=np.nan if cap is None else int(cap),
        wall_time=wall, iterations=np.nan if res.iterations is None else int(res.iterations), objective=objective,
        primal_residual=res.primal_residual, dual_residual=res.dual_residual,
        duality_gap=res.relative_gap * objective, relative_gap=res.relative_gap, peak_memory=peak,
        resolved_formulation=path.formulation_name, solver_status=str(res.solver_status),
        solver_version=str(res.solver_version),
    )
    if test is not None:
        row["ndcg10"] = float(ndcg_score(test.y, np.asarray(test.X @ res.w).ravel(), test.qid, k=10))
    row["_w"] = [float(v) for v in res.w]
    return row


def execute(task: Task, send) -> None:
    """Load the task's instance and run its cost settings, sending each row through ``send``.

    Run in a worker process (:func:`child_main`), SIGINT is noted until the current run ends; the
    worker then sends ``("interrupted", message)`` and stops, so no row is stored for the runs it
    did not finish and a resumed study runs them."""
    if task.threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(task.threads)
    _BLAS_THREADS[:] = [blas_threads()]
    try:
        train, test = task.instance.load()
        pairs = make_pairs(train)
    except Exception as exc:  # noqa: BLE001 - reported to the parent as the group's rows
        send(("error", one_line(f"loading instance {task.instance.name!r} failed: {type(exc).__name__}: {exc}")))
        return
    sizes = {"documents": train.n_documents, "pairs": pairs.n_pairs, "features": train.n_features}
    send(("loaded", sizes))
    options = {**solver_options(task.solver, task.profile), **task.options}
    tol = options.pop("tol")
    try:
        path = PathSolver(RankingProblem(pairs), formulation=task.formulation, solver=task.solver, tol=tol,
                          warm_start=task.warm_start, costs=task.cost_parametrization, **options)
    except Exception as exc:  # noqa: BLE001 - reported as error rows
        for cost in task.costs:
            send(("row", skeleton_row(task, cost, sizes, "error", f"{type(exc).__name__}: {exc}")))
        return
    for cost in task.costs:
        if _interrupted():
            send(("interrupted", "SIGINT reached the worker; the remaining runs are left for a resume"))
            return
        send(("row", _run_one(path, pairs, test, cost, task, sizes)))


def _hold_interrupts() -> None:
    """Take this worker out of the terminal's process group, and note SIGINT instead of raising it.

    Ctrl-C signals the whole foreground process group. OSQP installs its own SIGINT handler while it
    solves and turns an interrupt into a failed solve, which would be stored as a solver failure that
    a resume never re-runs. In its own session the worker never receives the terminal's SIGINT: the
    study process does, stops and kills its workers, and nothing is stored for the unfinished runs. A
    SIGINT sent to the worker itself between runs ends it after the current run
    (:func:`_interrupted`)."""
    try:
        os.setsid()
    except OSError:  # already a session or group leader
        pass
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _note_interrupt)


_INTERRUPTED = []


def _note_interrupt(signum, frame) -> None:
    _INTERRUPTED.append(signum)


def _interrupted() -> bool:
    return bool(_INTERRUPTED)


def child_main(conn, task: Task) -> None:
    """Entry point of a worker process: run ``task``, report through ``conn``, never raise."""
    try:
        _hold_interrupts()
        execute(task, conn.send)
    except BaseException as exc:  # noqa: BLE001 - report anything, the parent decides
        try:
            conn.send(("error", one_line(f"{type(exc).__name__}: {exc} | "
                                         + traceback.format_exc(limit=3))))
        except Exception:  # noqa: BLE001, S110 - the parent sees the closed pipe and the exit status
            pass
    finally:
        conn.close()


def _main(argv) -> int:
    """``python -m cvxrank.study.worker FD_IN FD_OUT``: the parent sends its ``sys.path``, then the task."""
    from multiprocessing.connection import Connection

    fd_in, fd_out = int(argv[0]), int(argv[1])
    outbox = Connection(fd_out, readable=False)
    # Keep solver chatter off the message pipe's neighbours: stdout goes to stderr.
    os.dup2(2, 1)
    with Connection(fd_in, writable=False) as inbox:
        try:
            sys.path[:] = inbox.recv()
            task = inbox.recv()
        except Exception as exc:  # noqa: BLE001 - e.g. a loader the worker cannot import
            outbox.send(("error", one_line(f"the worker could not read its task: {type(exc).__name__}: {exc}")))
            outbox.close()
            return 1
    child_main(outbox, task)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
