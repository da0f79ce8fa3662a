"""Run a :class:`~cvxrank.study.Study`: locally on a pool of worker processes, or on a Dask cluster.

Every group of runs (instance x formulation x solver x profile, over the cost
settings) is one task, executed in its own process under the study's time
limit (:func:`cvxrank.study._isolate.run_isolated`), so a runaway or
crashing solver becomes a ``timeout`` or ``error`` row. Each instance first
gets its reference solution (the study's ``reference`` solver and
formulation at its profile); a row's ``objective_error`` and ``w_error`` are
measured against it, and rows are written to the output folder as soon as
both are known (:class:`~cvxrank.study.store.ResultStore`).

A study with ``repeats`` > 1 makes every run that many times, each in a fresh process, and stores
one row per run when all its repeats are in (:func:`merge_repeats`: median times and their spread).

Locally, ``jobs`` threads each drive one worker process at a time. With
``scheduler`` the tasks go to a Dask cluster instead (``distributed`` must be
installed): a ``distributed.Client``, the address of a running scheduler
(``tcp://HOST:PORT``), or ``local:N`` for a LocalCluster of N worker processes
on this machine, started and stopped with the study. A scheduler that cannot be reached within
``connect_timeout`` seconds is an error before any run starts. The worker
processes of Dask are daemonic, so there each run is started as
``python -m cvxrank.study.worker`` (about a second of imports per task).
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing
import sys
from collections import defaultdict

import numpy as np
import pandas as pd

from cvxrank._validation import POSITIVE, POSITIVE_INT, check
from cvxrank.exceptions import CvxrankError, ValidationError
from cvxrank.study._isolate import WORKER_NAME, isolation_mode, kill_all, run_isolated
from cvxrank.study.definition import Study, size_text
from cvxrank.study.store import ResultStore, row_key
from cvxrank.study.worker import Task, one_line, skeleton_row

__all__ = ["connect", "run_study"]


def _ref_id(instance, size, cost) -> str:
    return f"{instance}|{size_text(size)}|{cost}"


def connect(scheduler, connect_timeout: float = 5.0):
    """A ``distributed.Client`` for ``scheduler``, and a function that releases what was opened.

    Parameters
    ----------
    scheduler : str or distributed.Client
        A client (used as it is and left open); the address of a running
        scheduler (``tcp://HOST:PORT``); or ``"local:N"``, which starts a
        ``distributed.LocalCluster`` of ``N`` single-threaded worker processes
        on 127.0.0.1 for this study and stops it afterwards.
    connect_timeout : float, default 5
        Seconds to wait for the scheduler.

    Returns
    -------
    (distributed.Client, callable)

    Raises
    ------
    CvxrankError
        When ``distributed`` is missing or the scheduler does not answer
        within ``connect_timeout`` seconds.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise CvxrankError("running a study on Dask needs dask.distributed: pip install 'cvxrank[dask]'") from None
    if isinstance(scheduler, Client):
        return scheduler, lambda: None
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ValidationError(f"scheduler must be an address such as tcp://127.0.0.1:8786, local:N or a "
                              f"distributed.Client, got {scheduler!r}")
    address = scheduler.strip()
    if address.startswith("local:"):
        n = address[len("local:"):]
        if not n.isdigit() or int(n) < 1:
            raise ValidationError(f"write a local Dask cluster as local:N with N >= 1 workers, got {scheduler!r}")
        cluster = LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=":0")
        client = Client(cluster, set_as_default=False)

        def close():
            client.close()
            cluster.close()

        return client, close
    check("connect_timeout", connect_timeout, POSITIVE)
    try:  # checked before a Client exists: a Client half made from a bad address fails again when collected
        from distributed.comm.addressing import parse_address, parse_host_port

        parse_host_port(parse_address(address)[1])
    except ValueError as exc:
        raise ValidationError(f"scheduler {scheduler!r} is not an address such as tcp://127.0.0.1:8786 or "
                              f"local:N ({one_line(exc, 200)})") from None
    try:
        client = Client(address, timeout=connect_timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise CvxrankError(f"cannot reach the Dask scheduler at {scheduler} within {connect_timeout:g} s "
                           f"({one_line(exc, 200)}); check the address (tcp://HOST:PORT) and that "
                           "'dask scheduler' is running there") from None
    return client, client.close


class _Local:
    """Worker processes driven by a thread pool."""

    def __init__(self, jobs: int, isolation: str):
        self.pool = cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="cvxrank-study")
        self.isolation = isolation

    def submit(self, task, timeout, load_timeout):
        return self.pool.submit(run_isolated, task, timeout=timeout, load_timeout=load_timeout,
                                isolation=self.isolation)

    @staticmethod
    def wait_any(futures):
        return cf.wait(futures, return_when=cf.FIRST_COMPLETED)[0]

    def close(self, cancel: bool = False):
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)


class _Dask:
    """Tasks sent to a Dask cluster; each worker isolates its runs in child processes."""

    def __init__(self, client):
        from distributed import as_completed

        self.client = client
        # the client's own loop: works whether or not the client is the default one
        self.done = as_completed(loop=client.loop)

    def submit(self, task, timeout, load_timeout):
        fut = self.client.submit(run_isolated, task, timeout=timeout, load_timeout=load_timeout, isolation="auto",
                                 pure=False)
        self.done.add(fut)
        return fut

    def wait_any(self, futures):
        return [next(self.done)]

    def close(self, cancel: bool = False):
        if cancel:
            self.client.cancel(list(self.done.futures))


def _tasks(study: Study, finished: set, refs: dict):
    """Reference tasks and run tasks still to do."""
    ref_solver, ref_form, ref_profile = study.reference
    ref_tasks, run_tasks = [], []
    common = {"warm_start": study.warm_start, "threads": study.threads}
    for inst in study.instances:
        missing = tuple(c for c in study.costs if _ref_id(inst.name, inst.size, c.name) not in refs)
        if missing:
            ref_tasks.append(Task("reference", inst, ref_form, ref_solver, ref_profile, missing,
                                  dict(study.solver_options.get(ref_solver, {})), **common))
        for form, solver, profile in study.cells(inst):
            todo = tuple(c for c in study.costs
                         if row_key({"instance": inst.name, "size": inst.size, "cost": c.name, "formulation": form,
                                     "solver": solver, "profile": profile.name}) not in finished)
            if todo:
                run_tasks.append(Task("run", inst, form, solver, profile, todo, study.run_options(solver), **common))
    return ref_tasks, run_tasks


def _reference(row: dict) -> dict:
    keep = ("status", "objective", "relative_gap", "solver", "formulation", "resolved_formulation", "wall_time",
            "message")
    ref = {k: row.get(k) for k in keep}
    ref["w"] = row.get("_w")
    return ref


def _finish(row: dict, ref: dict | None) -> dict:
    """Fill the reference columns of a run's row; drop its ``w``."""
    w = row.pop("_w", None)
    if ref is None:
        return row
    ref_obj = ref.get("objective")
    ref_obj = math.nan if ref_obj is None else float(ref_obj)
    row["reference_objective"] = ref_obj
    ref_gap = ref.get("relative_gap")
    row["reference_gap"] = math.nan if ref_gap is None else float(ref_gap)
    obj = row.get("objective")
    if obj is not None and np.isfinite(obj) and np.isfinite(ref_obj) and ref_obj != 0:
        row["objective_error"] = abs(obj - ref_obj) / abs(ref_obj)
    ref_w = ref.get("w")
    if w is not None and ref_w is not None:
        w, ref_w = np.asarray(w), np.asarray(ref_w)
        norm = np.linalg.norm(ref_w)
        if w.shape == ref_w.shape and norm > 0:
            row["w_error"] = float(np.linalg.norm(w - ref_w) / norm)
    return row


#: Columns a repeated run reports as the median over its repeats.
REPEATED_TIMES = ("setup_time", "solve_time", "certify_time", "wall_time")


def merge_repeats(rows: list[dict]) -> dict:
    """One row of a run made ``len(rows)`` times: the first repeat's results, times as medians.

    ``peak_memory`` is the largest of the repeats, ``wall_time_min`` / ``wall_time_max`` the spread of the
    wall time, ``solve_time_source`` ``"cvxrank"`` if any repeat's solve time was cvxrank's. A repeat
    whose status or iteration count differs from the first is named in ``message``: a run's outcome
    must not depend on the repeat.

    Examples
    --------
    >>> rows = [{"status": "optimal", "iterations": 9, "wall_time": t, "setup_time": 0.1, "solve_time": t / 2,
    ...          "certify_time": 0.01, "peak_memory": m, "solve_time_source": "solver", "message": ""}
    ...         for t, m in ((1.0, 5.0), (3.0, 6.0), (2.0, 4.0))]
    >>> row = merge_repeats(rows)
    >>> row["repeats"], row["wall_time"], row["wall_time_min"], row["wall_time_max"], row["peak_memory"]
    (3, 2.0, 1.0, 3.0, 6.0)
    """
    row = dict(rows[0])
    walls = np.array([r.get("wall_time", math.nan) for r in rows], dtype=float)
    row["repeats"] = len(rows)
    row["wall_time_min"] = float(np.nanmin(walls)) if np.isfinite(walls).any() else math.nan
    row["wall_time_max"] = float(np.nanmax(walls)) if np.isfinite(walls).any() else math.nan
    if len(rows) == 1:
        return row
    for col in REPEATED_TIMES:
        values = np.array([r.get(col, math.nan) for r in rows], dtype=float)
        row[col] = float(np.median(values[np.isfinite(values)])) if np.isfinite(values).any() else math.nan
    memory = np.array([r.get("peak_memory", math.nan) for r in rows], dtype=float)
    row["peak_memory"] = float(np.nanmax(memory)) if np.isfinite(memory).any() else math.nan
    if any(r.get("solve_time_source") == "cvxrank" for r in rows):
        row["solve_time_source"] = "cvxrank"
    outcomes = [(r.get("status"), r.get("iterations")) for r in rows]
    if len({(s, None if i is None or (isinstance(i, float) and math.isnan(i)) else int(i))
            for s, i in outcomes}) > 1:
        said = "; ".join(f"{s}, {i} iterations" for s, i in outcomes)
        row["message"] = one_line(f"{row.get('message') or ''} the repeats differ: {said}".strip())
    for r in rows[1:]:
        r.pop("_w", None)
    return row


def _order(df: pd.DataFrame, study: Study) -> pd.DataFrame:
    """Rows in grid order (instances, cost settings, cells as the study lists them)."""
    rank = {}
    for inst in study.instances:
        for cost in study.costs:
            for form, solver, profile in study.cells(inst):
                key = row_key({"instance": inst.name, "size": inst.size, "cost": cost.name, "formulation": form,
                               "solver": solver, "profile": profile.name})
                rank[key] = len(rank)
    pos = [rank.get(row_key(r), len(rank)) for r in df.to_dict("records")]
    return df.iloc[np.argsort(pos, kind="stable")].reset_index(drop=True)


def run_study(study: Study, out, *, jobs: int = 1, scheduler=None, overwrite: bool = False, progress: bool = True,
              connect_timeout: float = 5.0, load_timeout: float = 600.0, isolation: str = "auto") -> pd.DataFrame:
    """Run (or resume) a study and return its long-format table.

    Parameters
    ----------
    study : Study
    out : path
        Output folder (:class:`~cvxrank.study.store.ResultStore`): rows
        already stored there for this study are not run again.
    jobs : int, default 1
        Runs at a time, locally (ignored with ``scheduler``).
    scheduler : str or distributed.Client, optional
        Run on a Dask cluster instead: a client, a scheduler's address
        (``tcp://HOST:PORT``) or ``"local:N"`` (a LocalCluster of ``N``
        workers started for this study), see :func:`connect`.
    overwrite : bool, default False
        Replace results of another study definition in ``out`` instead of refusing.
    progress : bool, default True
        Show a tqdm progress bar (on stderr).
    connect_timeout : float, default 5
        Seconds to wait for a Dask scheduler.
    load_timeout : float, default 600
        Seconds a worker may take to make an instance's data.
    isolation : {"auto", "forkserver", "subprocess"}
        How local runs start their process (see :mod:`cvxrank.study._isolate`).

    Returns
    -------
    pandas.DataFrame
        Every row of the study (columns :data:`~cvxrank.study.COLUMNS`), in
        grid order; ``attrs`` holds ``hash``, ``ran`` (rows run by this
        call), ``skipped`` (rows found in ``out``), ``references``, ``out``, and how the runs ran:
        ``jobs``, ``isolation`` (local runs) or ``scheduler`` (Dask), which the report states.

    Raises
    ------
    StudyMismatchError
        ``out`` holds another study's results and ``overwrite`` is False.
    CvxrankError
        The Dask scheduler cannot be reached.
    """
    if not isinstance(study, Study):
        raise ValidationError(f"run_study takes a Study, got {type(study).__name__}")
    if multiprocessing.current_process().name.startswith(WORKER_NAME):
        raise CvxrankError("run_study was called inside a study worker: the worker re-imported the script that "
                           "started the study; put the script's code under if __name__ == '__main__':")
    jobs = check("jobs", jobs, POSITIVE_INT)
    mode = isolation_mode(isolation)  # validates the name
    client, release = (None, None) if scheduler is None else connect(scheduler, connect_timeout)
    try:
        store = ResultStore(out, study, overwrite=overwrite)
        finished = store.finished()
        refs = store.references()
        ref_tasks, run_tasks = _tasks(study, finished, refs)
        n_todo = sum(len(t.costs) for t in run_tasks)
        executor = _Local(jobs, isolation) if client is None else _Dask(client)
        _execute(executor, study, store, refs, ref_tasks, run_tasks, progress, load_timeout)
    finally:
        if release is not None:
            release()
    df = _order(store.load(), study)
    df.attrs.update(hash=study.hash, ran=n_todo, skipped=study.n_runs - n_todo, out=str(out),
                    jobs=None if client is not None else jobs, isolation=None if client is not None else mode,
                    scheduler=None if scheduler is None else str(scheduler),
                    references={k: {kk: v for kk, v in r.items() if kk != "w"} for k, r in store.references().items()})
    return df


def _execute(executor, study, store, refs, ref_tasks, run_tasks, progress, load_timeout) -> None:
    from tqdm.auto import tqdm

    total = sum(len(t.costs) for t in ref_tasks) + study.repeats * sum(len(t.costs) for t in run_tasks)
    bar = tqdm(total=total, desc="cvxrank study", unit="run", disable=not progress or total == 0, file=sys.stderr)
    pending = {}
    for task in ref_tasks:
        pending[executor.submit(task, study.reference_timeout, load_timeout)] = task
    for task in run_tasks:
        for _ in range(study.repeats):  # each repeat in its own process: cold, as the first
            pending[executor.submit(task, study.timeout, load_timeout)] = task
    waiting = defaultdict(list)
    repeated = defaultdict(list)  # rows of a run until all its repeats are in
    try:
        while pending:
            for fut in executor.wait_any(pending):
                task = pending.pop(fut)
                try:
                    rows = fut.result()
                except Exception as exc:  # noqa: BLE001 - a lost Dask worker: rows, not a dead study
                    rows = [skeleton_row(task, c, None, "error", f"worker failed: {type(exc).__name__}: {exc}")
                            for c in task.costs]
                bar.update(len(rows))
                if task.kind == "reference":
                    for row in rows:
                        refs[_ref_id(row["instance"], row["size"], row["cost"])] = _reference(row)
                    store.save_references(refs)
                    ready = [k for k in waiting if k in refs]
                    for k in ready:
                        store.append([_finish(r, refs[k]) for r in waiting.pop(k)])
                    continue
                done = []
                for one in rows:
                    key = row_key(one)
                    repeated[key].append(one)
                    if len(repeated[key]) < study.repeats:
                        continue
                    row = merge_repeats(repeated.pop(key))
                    k = _ref_id(row["instance"], row["size"], row["cost"])
                    if k in refs:
                        done.append(_finish(row, refs[k]))
                    else:
                        waiting[k].append(row)
                if done:
                    store.append(done)
        for k, rows in waiting.items():  # only if a reference never came back
            store.append([_finish(r, refs.get(k)) for r in rows])
    except BaseException:
        kill_all()
        executor.close(cancel=True)
        raise
    finally:
        bar.close()
    executor.close()

