"""Failure injection for the study runner: the study survives, resumes and loses no finished row.

Injected failures:

* a worker process killed (SIGKILL) in the middle of a solve;
* a solver that hangs (sleeps far beyond the study's time limit);
* the study's own process killed mid-study (SIGKILL to its process group), then resumed;
* the disk filling up while a row is appended (``ENOSPC`` after a torn half line), then resumed.

The first two are injected inside the worker by the instance's loader
(:meth:`cvxrank.study.Instance.from_loader` runs in the worker process): it
replaces the ``cutting_plane`` entry of :data:`cvxrank.solvers.NATIVE_SOLVERS`
there, so only that worker is affected.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from cvxrank.datasets import make_ranking
from cvxrank.study import CostSetting, Instance, Study, load_results, run_study
from cvxrank.study._isolate import run_isolated
from cvxrank.study.definition import KEY
from cvxrank.study.profiles import PROFILES
from cvxrank.study.store import ResultStore
from cvxrank.study.worker import Task

ROOT = Path(__file__).resolve().parents[1]
#: Seconds per run: the hanging solver is killed after this. Far above a tiny solve's time on any machine,
#: however busy, so that only the hanging run can reach it; what it costs, each study below waits once.
TIMEOUT = 10.0


def _data(seed):
    return make_ranking(n_queries=3, docs_per_query=(4, 6), n_features=3, random_state=seed)


def ok_loader(size, seed):
    return _data(seed)


def hang_loader(size, seed):
    """Data whose native (cutting_plane) solve never returns."""
    import cvxrank.solvers

    def hang(*args, **kwargs):
        time.sleep(3600)

    cvxrank.solvers.NATIVE_SOLVERS["cutting_plane"] = hang
    return _data(seed)


def kill_loader(size, seed):
    """Data whose native (cutting_plane) solve kills its own worker process mid-run."""
    import cvxrank.solvers

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    cvxrank.solvers.NATIVE_SOLVERS["cutting_plane"] = die
    return _data(seed)


def make_study(names=("ok", "hang", "kill")) -> Study:
    """Three instances x (clarabel on lifted, cutting_plane) x two cost settings = 12 rows."""
    loaders = {"ok": (ok_loader, 1), "hang": (hang_loader, 2), "kill": (kill_loader, 3)}
    instances = [Instance.from_loader(name, *loaders[name]) for name in names]
    return Study(instances, formulations=["lifted"], solvers=["clarabel", "cutting_plane"], profiles=["mid"],
                 costs=[CostSetting(lam=0.1), CostSetting(lam=1.0)], timeout=TIMEOUT, reference_timeout=60)


def _keys(df: pd.DataFrame) -> list[tuple]:
    return sorted(tuple(str(r[k]) for k in KEY) for r in df.to_dict("records"))


def _stored_lines(folder) -> list[str]:
    return (Path(folder) / "results.csv").read_text(encoding="utf-8").splitlines()[1:]


def _check_complete(df: pd.DataFrame, study: Study) -> None:
    assert len(df) == study.n_runs and len(set(_keys(df))) == study.n_runs  # every run once, none lost
    by = {(r["instance"], r["solver"], r["cost"]): r for r in df.to_dict("records")}
    names = {inst.name for inst in study.instances}
    for cost in ("lam=0.1", "lam=1"):
        for inst in names:
            assert by[(inst, "clarabel", cost)]["status"] == "optimal"  # the other runs of an instance are fine
        assert by[("ok", "cutting_plane", cost)]["status"] == "optimal"
        if "kill" in names:
            killed = by[("kill", "cutting_plane", cost)]
            assert killed["status"] == "error" and "SIGKILL" in killed["message"]
    if "hang" in names:
        hung = by[("hang", "cutting_plane", "lam=0.1")]
        assert hung["status"] == "timeout" and f"{TIMEOUT:g} s limit" in hung["message"]
        assert by[("hang", "cutting_plane", "lam=1")]["status"] == "timeout"


def _task(name, loader, seed):
    return Task("run", Instance.from_loader(name, loader, seed), "lifted", "cutting_plane", PROFILES["mid"],
                (CostSetting(lam=0.1), CostSetting(lam=1.0)), {})


@pytest.mark.timeout(300)  # a safety net: a hang fails instead of blocking the suite
def test_a_hanging_run_is_killed_at_its_limit_and_its_group_is_not_run():
    """The hanging solver sleeps an hour: it exceeds any limit, so a short one decides nothing by speed."""
    rows = run_isolated(_task("hang", hang_loader, 2), timeout=0.5)
    assert [r["status"] for r in rows] == ["timeout", "timeout"] and not any(r["found"] for r in rows)
    assert "0.5 s limit" in rows[0]["message"] and "earlier run of its group timed out" in rows[1]["message"]


@pytest.mark.timeout(300)
def test_a_worker_killed_mid_solve_gives_error_rows():
    rows = run_isolated(_task("kill", kill_loader, 3), timeout=600)
    assert [r["status"] for r in rows] == ["error", "error"] and "SIGKILL" in rows[0]["message"]


@pytest.mark.slow  # a second interpreter imports cvxrank and CVXPY: about 10 s on a busy 2-core machine
def test_study_process_killed_then_resumed(tmp_path):
    out = tmp_path / "out"
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from tests.test_study_failures import make_study\n"
            "from cvxrank.study import run_study\n"
            f"run_study(make_study(), {str(out)!r}, jobs=1, progress=False)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    results = out / "results.csv"
    deadline = time.monotonic() + 300  # a safety net: the loop ends on the event (3 rows stored)
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if results.is_file() and len(_stored_lines(out)) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the study ended before it could be killed: {proc.stderr.read()!r}"
        os.killpg(proc.pid, signal.SIGKILL)  # the study process and its worker processes, mid-study
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        proc.stderr.close()
    before = _stored_lines(out)
    # The same import path as the killed process: the loaders' module names are part of the study's hash.
    from tests.test_study_failures import make_study as same_make_study

    study = same_make_study()
    assert 3 <= len(before) < study.n_runs
    df = run_study(study, out, jobs=2, progress=False)
    assert df.attrs["skipped"] == len(before)  # rows stored before the kill were not run again
    _check_complete(df, study)
    assert _stored_lines(out)[: len(before)] == before  # and kept exactly as they were


@pytest.mark.parametrize("names", [
    pytest.param(("ok",), id="ok"),
    # the hanging solver makes each study wait TIMEOUT once
    pytest.param(("ok", "hang", "kill"), id="ok-hang-kill", marks=pytest.mark.slow),
])
def test_disk_full_while_appending_then_resumed(tmp_path, monkeypatch, names):
    study = make_study(names)
    out = tmp_path / "out"
    real_append = ResultStore.append
    calls = {"n": 0}

    def filling_disk(self, rows):
        calls["n"] += 1
        # the disk fills during the second write (the fewest a study of two solvers makes, in any order of
        # completion: rows wait for their reference, then go per cost setting): half a line lands, then ENOSPC
        if calls["n"] == 2:
            with open(self.results, "a", encoding="utf-8") as fh:
                fh.write("ok,1,torn half li")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_append(self, rows)

    monkeypatch.setattr(ResultStore, "append", filling_disk)
    with pytest.raises(OSError, match="No space left on device"):
        run_study(study, out, jobs=2, progress=False)
    monkeypatch.setattr(ResultStore, "append", real_append)
    raw = (out / "results.csv").read_text(encoding="utf-8")
    assert raw.endswith("torn half li")
    before = _stored_lines(out)[:-1]  # whole lines written before the disk filled
    assert before
    df = run_study(study, out, jobs=2, progress=False)
    assert df.attrs["skipped"] == len(before)
    _check_complete(df, study)  # the hanging solver's runs are "timeout" rows: it did not hang the study
    assert _stored_lines(out)[: len(before)] == before
    assert "torn half li" not in (out / "results.csv").read_text(encoding="utf-8")
    assert _keys(load_results(out)) == _keys(df)
    again = run_study(study, out, jobs=2, progress=False)  # resuming a finished study runs nothing
    assert again.attrs["ran"] == 0 and again.attrs["skipped"] == study.n_runs
