"""Run a :class:`~cvxrank.study.worker.Task` in its own process, under time limits.

The child reports over a one-way connection (see :mod:`cvxrank.study.worker`);
the parent waits at most ``load_timeout`` for the data, then at most
``timeout`` for each run, and kills the child when a limit passes. Whatever
happens, the parent returns one row per cost setting of the task: a run that
exceeds its limit is a ``"timeout"`` row, a child that dies (a crash, a
signal, running out of memory) gives ``"error"`` rows with the exit status.

Two ways to start the child:

* ``"forkserver"``: :mod:`multiprocessing`'s fork server, preloaded with
  cvxrank and CVXPY, so no child imports them again;
* ``"subprocess"``: ``python -m cvxrank.study.worker``, which pays the
  imports in every child but works where :mod:`multiprocessing` may not
  start children, e.g. in the daemonic worker processes of Dask.

``"auto"`` takes the first where it can, and the second where a fork server's child would fail
before it runs anything: in a daemonic process, and where the main module is a file that cannot be
read again (a script piped on stdin, ``python - < study.py``; :func:`main_reimportable`). A
notebook, ``python -c`` and ``python -m`` need no ``if __name__ == "__main__":`` guard either way:
their children import no main module, or import it by name. A loader of
:meth:`~cvxrank.study.Instance.from_loader` defined in ``__main__`` (a notebook cell, a script on
stdin) travels by value (cloudpickle, when installed), since no worker can import it by name.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import threading
from multiprocessing.connection import Connection

from cvxrank.exceptions import ValidationError
from cvxrank.study.worker import Task, child_main, one_line, skeleton_row

__all__ = ["WORKER_NAME", "isolation_mode", "kill_all", "main_reimportable", "run_isolated"]

ISOLATIONS = ("auto", "forkserver", "subprocess")
#: Name prefix of the worker processes.
WORKER_NAME = "cvxrank-study"

_LIVE: set = set()
_LIVE_LOCK = threading.Lock()
_CTX = None
_CTX_LOCK = threading.Lock()


def main_reimportable() -> bool:
    """Whether a :mod:`multiprocessing` child can prepare this process's main module.

    A fork server's child imports the main module again before it runs its task: by name after
    ``python -m``; from its file after ``python script.py``; not at all after ``python -c``, in an
    interactive session or a notebook (no file). A script read from stdin names the file
    ``<stdin>``, which the child cannot open: it exits before running anything.
    """
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) is not None:
        return True
    path = getattr(main, "__file__", None)
    return path is None or os.path.isfile(path)


def isolation_mode(isolation: str = "auto") -> str:
    """Resolve ``"auto"``: forkserver unless this process is daemonic, lacks it, or has a main module its
    children cannot import again (:func:`main_reimportable`); then subprocess."""
    if isolation not in ISOLATIONS:
        raise ValidationError(f"unknown isolation {isolation!r}; choose from {', '.join(ISOLATIONS)}")
    if isolation != "auto":
        return isolation
    if (multiprocessing.current_process().daemon or "forkserver" not in multiprocessing.get_all_start_methods()
            or not main_reimportable()):
        return "subprocess"
    return "forkserver"


def _forkserver():
    global _CTX
    with _CTX_LOCK:
        if _CTX is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["cvxrank.study.worker"])
            _CTX = ctx
    return _CTX


class _Child:
    """A started worker process and the connection it reports on."""

    def __init__(self, task: Task, mode: str):
        self._stderr = None
        self.mode = mode
        if mode == "forkserver":
            ctx = _forkserver()
            reader, writer = ctx.Pipe(duplex=False)
            self.proc = ctx.Process(target=child_main, args=(writer, task), daemon=True,
                                    name=f"{WORKER_NAME}-{task.solver}")
            self.proc.start()
            writer.close()
            self.conn = reader
        else:
            task_r, task_w = os.pipe()
            res_r, res_w = os.pipe()
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
            try:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "cvxrank.study.worker", str(task_r), str(res_w)],
                    pass_fds=(task_r, res_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=self._stderr)
            finally:
                os.close(task_r)
                os.close(res_w)
            self.conn = Connection(res_r, writable=False)
            outbox = Connection(task_w, readable=False)
            try:
                outbox.send(list(sys.path))
                outbox.send(task)
            except OSError:
                pass  # the child died before reading; its exit status tells why
            finally:
                outbox.close()
        with _LIVE_LOCK:
            _LIVE.add(self)

    def wait(self, seconds: float):
        """The exit code after at most ``seconds`` (None if still running)."""
        if isinstance(self.proc, subprocess.Popen):
            try:
                return self.proc.wait(seconds)
            except subprocess.TimeoutExpired:
                return None
        self.proc.join(seconds)
        return self.proc.exitcode

    def exit_status(self, loaded: bool = True) -> str:
        """How the child ended, in words (waits a moment for it)."""
        code = self.wait(5)
        if code is None:
            return "the worker process stopped reporting"
        if code < 0:
            try:
                return f"the worker process was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"the worker process was killed by signal {-code}"
        text = f"the worker process exited with code {code} without a result"
        if self._stderr is not None:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - 400))
            tail = self._stderr.read().decode(errors="replace").strip()
            if tail:
                text += f" (stderr: {tail})"
        elif self.mode == "forkserver" and code == 1 and not loaded:
            text += ("; a worker imports the script that started the study as its main module, so the script's "
                     "code must sit under if __name__ == '__main__': (or run it with isolation='subprocess')")
        return text

    def kill(self) -> None:
        try:
            self.proc.kill()
        except (OSError, AttributeError, ValueError):
            pass

    def close(self) -> None:
        self.kill()
        if self.wait(5) is not None and not isinstance(self.proc, subprocess.Popen):
            self.proc.close()
        self.conn.close()
        if self._stderr is not None:
            self._stderr.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)


def kill_all() -> None:
    """Kill every worker process this process has running (used when a study is interrupted)."""
    with _LIVE_LOCK:
        children = list(_LIVE)
    for child in children:
        child.kill()


def run_isolated(task: Task, *, timeout: float, load_timeout: float = 600.0, isolation: str = "auto") -> list[dict]:
    """Run ``task`` in a child process; return one row per cost setting, whatever happens.

    Parameters
    ----------
    task : Task
    timeout : float
        Seconds allowed for each run, counted from the previous report of
        the child (its data loaded, or its previous run finished).
    load_timeout : float, default 600
        Seconds allowed for making the instance's data and pairs.
    isolation : {"auto", "forkserver", "subprocess"}
    """
    mode = isolation_mode(isolation)
    pending = list(task.costs)
    rows, sizes = [], None
    try:
        child = _Child(task, mode)
    except OSError as exc:
        return [skeleton_row(task, c, None, "error", f"could not start a worker process: {exc}") for c in pending]
    try:
        limit = load_timeout
        while pending:
            if not child.conn.poll(limit):
                child.kill()
                what = "making the instance's data" if sizes is None else "the run"
                rows.append(skeleton_row(task, pending.pop(0), sizes, "timeout",
                                         f"{what} exceeded the {limit:g} s limit; the worker was killed"))
                rows.extend(skeleton_row(task, c, sizes, "timeout", "not run: an earlier run of its group timed out")
                            for c in pending)
                break
            try:
                kind, payload = child.conn.recv()
            except (EOFError, OSError):
                message = child.exit_status(loaded=sizes is not None)
                rows.extend(skeleton_row(task, c, sizes, "error", message) for c in pending)
                break
            if kind == "loaded":
                sizes, limit = payload, timeout
            elif kind == "row":
                pending.pop(0)
                rows.append(payload)
            elif kind == "interrupted":  # no rows for the runs left: a resume runs them
                break
            else:  # "error": the instance could not be loaded, or the worker failed outside a run
                rows.extend(skeleton_row(task, c, sizes, "error", one_line(payload)) for c in pending)
                break
    finally:
        child.close()
    return rows
