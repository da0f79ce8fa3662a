"""An output never replaces an input; interrupts leave no temporary file; only user errors
exit 2. Every case goes through the CLI in a subprocess, as a user would meet it. No device node of
the machine is touched: the "devices" here are FIFOs and symbolic links made in tmp_path.

All slow (each case starts interpreters that import cvxrank and CVXPY); tests/test_io.py checks the
same rules in-process in the fast suite."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys

import pytest

from cvxrank.data import save_letor
from cvxrank.datasets import make_ranking
from tests.conftest import readline_within

pytestmark = pytest.mark.slow

ENV = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}


def cli(*args, cwd, timeout=240, env=None):
    return subprocess.run([sys.executable, "-m", "cvxrank.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env or ENV)


@pytest.fixture
def work(tmp_path):
    save_letor(make_ranking(n_queries=4, n_features=3, random_state=0), tmp_path / "d.letor")
    return tmp_path


def _n_docs(work):
    return sum(1 for line in (work / "d.letor").read_text().splitlines() if line.strip() and line[0] != "#")


def _fit(work):
    r = cli("fit", "d.letor", "--model", "m.json", cwd=work)
    assert r.returncode == 0, r.stderr
    return work / "m.json"


def _refused(r, what):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "refusing to write" in lines[0] and what in lines[0], lines[0]


@pytest.mark.parametrize("spelling", ["d.letor", "./d.letor", "link.letor", "hard.letor"])
def test_fit_refuses_to_write_the_model_over_its_training_file(work, spelling):
    os.symlink("d.letor", work / "link.letor")
    os.link(work / "d.letor", work / "hard.letor")
    before = (work / "d.letor").read_bytes()
    r = cli("fit", "d.letor", "--model", spelling, "--solver", "clarabel", cwd=work)
    _refused(r, spelling)
    assert "RankSVM on" not in r.stdout  # refused before the fit, not after
    assert (work / "d.letor").read_bytes() == before
    assert os.path.islink(work / "link.letor")


def test_predict_refuses_its_data_and_its_model_as_output(work):
    _fit(work)
    data, model = (work / "d.letor").read_bytes(), (work / "m.json").read_bytes()
    _refused(cli("predict", "m.json", "d.letor", "--output", "d.letor", cwd=work), "d.letor")
    _refused(cli("predict", "m.json", "d.letor", "--output", "m.json", cwd=work), "m.json")
    assert (work / "d.letor").read_bytes() == data and (work / "m.json").read_bytes() == model


def test_evaluate_refuses_inputs_and_writes_all_outputs_or_none(work):
    _fit(work)
    _refused(cli("evaluate", "d.letor", "--model", "m.json", "--json", "m.json", cwd=work), "m.json")
    r = cli("evaluate", "d.letor", "--model", "m.json", "--json", "a.json", "--per-query", "missing/dir/pq.csv",
            cwd=work)
    assert r.returncode == 2 and "missing" in r.stderr
    assert not (work / "a.json").exists()  # the first output is not written when the second cannot be
    r = cli("evaluate", "d.letor", "--model", "m.json", "--json", "a.json", "--per-query", "a.json", cwd=work)
    assert r.returncode == 2 and "same output" in r.stderr and not (work / "a.json").exists()


def test_compare_and_cv_refuse_to_overwrite_their_letor_input(work):
    before = (work / "d.letor").read_bytes()
    r = cli("compare", "--instances", "letor:d.letor", "--solvers", "clarabel", "--formulations", "primal",
            "--out", "st", "--report", "d.letor", "--no-progress", cwd=work)
    _refused(r, "d.letor")
    assert not (work / "st").exists()  # refused before the study started
    os.mkdir(work / "cvout")
    os.replace(work / "d.letor", work / "cvout" / "results.csv")
    r = cli("cv", "--data", "cvout/results.csv", "--out", "cvout", "--methods", "ranksvm", cwd=work)
    assert r.returncode == 2 and "refusing to write into cvout" in r.stderr, r.stderr
    assert (work / "cvout" / "results.csv").read_bytes() == before


def test_verify_refuses_its_data_as_json_output_before_solving(work):
    before = (work / "d.letor").read_bytes()
    os.symlink("d.letor", work / "link.letor")
    for spelling in ("d.letor", "./d.letor", "link.letor"):
        r = cli("verify", "--data", "d.letor", "--json", spelling, cwd=work)
        _refused(r, spelling)
        assert "Theorem 1" not in r.stdout  # refused before the first solve, not after
        assert (work / "d.letor").read_bytes() == before


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(work):
    _fit(work)
    os.symlink("scores.txt", work / "s.link")
    r = cli("predict", "m.json", "d.letor", "--output", "s.link", cwd=work)
    assert r.returncode == 0, r.stderr
    assert os.path.islink(work / "s.link")
    assert len((work / "scores.txt").read_text().split()) == _n_docs(work)


def test_output_into_a_fifo_is_written_through(work):
    _fit(work)
    fifo = work / "pipe"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "cvxrank.cli", "predict", "m.json", "d.letor", "--output", "pipe"],
                            cwd=work, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(fifo, encoding="utf-8") as fh:
        text = fh.read()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert len(text.split()) == _n_docs(work)
    assert all(abs(float(v)) < 1e6 for v in text.split())
    assert os.path.exists(fifo) and not os.path.isfile(fifo)  # still a FIFO, not replaced by a file
    assert not glob.glob(str(work / ".cvxrank-*"))


# --- 6. interrupts ---------------------------------------------------------------------------

SLOW_WRITER = """
import signal, sys, time
from cvxrank import _io
import cvxrank.cli as cli

# Ctrl-C as at a terminal: a job started in the background (nohup, '&', some CI runners) inherits
# SIGINT ignored, and Python then installs no KeyboardInterrupt handler
signal.signal(signal.SIGINT, signal.default_int_handler)

def slow(args):
    with _io.atomic_output(args[0]) as fh:
        fh.write("partial")
        print("writing", flush=True)
        time.sleep(60)
    return 0

cli._terminate_as_interrupt()  # the CLI's SIGTERM handler is what is tested
try:
    slow(sys.argv[1:])
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_no_temporary_file_survives_sigint_or_sigterm(tmp_path, sig):
    (tmp_path / "out.txt").write_text("old\n")
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, "out.txt"], cwd=tmp_path, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert readline_within(proc).strip() == "writing"
    assert glob.glob(str(tmp_path / ".cvxrank-*.tmp"))  # the temporary file exists while writing
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert not glob.glob(str(tmp_path / ".cvxrank-*"))
    assert (tmp_path / "out.txt").read_text() == "old\n"  # the old file is kept


def test_sigterm_ends_a_cli_command_as_interrupted(work):
    proc = subprocess.Popen([sys.executable, "-m", "cvxrank.cli", "compare", "--instances", "ecml", "--sizes",
                             "200", "--solvers", "clarabel", "--formulations", "lifted", "--out", "st",
                             "--no-progress"], cwd=work, env={**ENV, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the signal goes when the study has started (its first line is printed), not after a guessed delay
    assert readline_within(proc).startswith("study "), proc.stderr.read() if proc.poll() is not None else ""
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err
    assert not glob.glob(str(work / "**" / ".cvxrank-*.tmp"), recursive=True)


# --- 9. user errors exit 2, bugs exit 1 --------------------------------------------------------

def test_a_bug_is_reported_as_a_bug_not_as_a_user_error(work):
    code = ("import sys, cvxrank.cli.predict as p\n"
            "def boom(args):\n    raise ValueError('internal detail')\n"
            "p.run = boom\n"
            "import cvxrank.cli as c\nsys.exit(c.main(sys.argv[1:]))\n")
    r = subprocess.run([sys.executable, "-c", code, "predict", "m.json", "d.letor"], cwd=work, env=ENV,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error (a bug in cvxrank)" in lines[0] and "CVXRANK_TRACEBACK=1" in lines[0]
    r = subprocess.run([sys.executable, "-c", code, "predict", "m.json", "d.letor"], cwd=work,
                       env={**ENV, "CVXRANK_TRACEBACK": "1"}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" in r.stderr and "internal detail" in r.stderr


def test_a_user_error_is_one_line_and_exit_2(work):
    r = cli("predict", "nothere.json", "d.letor", cwd=work)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


# --- 6. an interrupted study run is re-run on resume, never stored as a solver failure ----------

INTERRUPTED_WORKER = """
import os, signal, sys
import cvxrank.study.worker as wk
from cvxrank.datasets import make_ranking
from cvxrank.study import CostSetting, Instance
from cvxrank.study.profiles import PROFILES

def send(msg):  # SIGINT reaches the worker after its first run
    msgs.append(msg)
    if msg[0] == "row":
        os.kill(os.getpid(), signal.SIGINT)

inst = Instance.from_data("t", make_ranking(n_queries=3, n_features=3, random_state=0))
task = wk.Task("run", inst, "lifted", "osqp", PROFILES["low"], (CostSetting(1.0), CostSetting(0.1)), {})
msgs = []
wk._hold_interrupts()
wk.execute(task, send)
print([m[0] for m in msgs])
print([m[1]["status"] for m in msgs if m[0] == "row"])
print(os.getpgid(0) != int(sys.argv[1]))
"""


def test_a_worker_leaves_the_terminal_group_and_stops_between_runs_on_sigint(tmp_path):
    pytest.importorskip("osqp")
    r = subprocess.run([sys.executable, "-c", INTERRUPTED_WORKER, str(os.getpgid(0))], cwd=tmp_path, env=ENV,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    kinds, statuses, own_group = (eval(line) for line in r.stdout.strip().splitlines()[-3:])  # noqa: S307
    # the first run finished; the second is left for a resume (no row, so no stored "error")
    assert kinds == ["loaded", "row", "interrupted"]
    assert statuses == ["optimal"]
    assert own_group  # a terminal's Ctrl-C (sent to the foreground group) does not reach the worker



# --- 2, 3. folders are owned by one command and locked while written ---------------------------

QUICK_COMPARE = ("compare", "--instances", "ecml", "--sizes", "2", "--solvers", "clarabel", "--formulations",
                 "primal", "--profiles", "low", "--no-progress", "--no-report")


def test_cv_refuses_a_compare_folder_and_compare_refuses_a_cv_folder(work):
    r = cli(*QUICK_COMPARE, "--out", "st", cwd=work)
    assert r.returncode == 0, r.stderr
    results = (work / "st" / "results.csv").read_bytes()
    r = cli("cv", "--out", "st", "--methods", "ranksvm", "--queries", "9", "--n-folds", "3", cwd=work)
    assert r.returncode == 2 and "belongs to 'cvxrank compare'" in r.stderr and "--overwrite" in r.stderr, r.stderr
    assert "cross-validation on" not in r.stdout  # refused before the cross-validation ran
    assert (work / "st" / "results.csv").read_bytes() == results
    r = cli(*QUICK_COMPARE, "--out", "st", cwd=work)  # its own folder: a resume
    assert r.returncode == 0 and "0 runs ran now" in r.stdout, r.stdout + r.stderr
    r = cli("cv", "--out", "cvdir", "--methods", "ranksvm", "--queries", "9", "--n-folds", "3", cwd=work)
    assert r.returncode == 0, r.stderr
    r = cli(*QUICK_COMPARE, "--out", "cvdir", cwd=work)
    assert r.returncode == 2 and "belongs to 'cvxrank cv'" in r.stderr, r.stderr
    r = cli("demo", "--quick", "--out", "st", cwd=work)
    assert r.returncode == 2 and "belongs to 'cvxrank compare'" in r.stderr, r.stderr
    assert (work / "st" / "results.csv").read_bytes() == results


def test_a_folder_of_user_files_is_not_written_into_without_overwrite(work):
    (work / "mine").mkdir()
    (work / "mine" / "notes.txt").write_text("mine\n")
    r = cli("cv", "--out", "mine", "--methods", "ranksvm", "--queries", "9", "--n-folds", "3", cwd=work)
    assert r.returncode == 2 and "not written by cvxrank" in r.stderr, r.stderr


HOLD_LOCK = """
import sys, time
from cvxrank._io import folder_lock
with folder_lock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(60)
"""


def test_a_second_compare_into_a_locked_folder_refuses(work):
    r = cli(*QUICK_COMPARE, "--out", "st", cwd=work)
    assert r.returncode == 0, r.stderr
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, "st"], cwd=work, env=ENV, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert readline_within(holder).strip() == "locked"
        r = cli(*QUICK_COMPARE, "--out", "st", cwd=work)
        assert r.returncode == 2 and "is writing into st" in r.stderr and str(holder.pid) in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    finally:
        holder.kill()
        holder.wait()
    r = cli(*QUICK_COMPARE, "--out", "st", cwd=work)  # the lock ends with its process
    assert r.returncode == 0, r.stderr


def test_no_single_file_output_replaces_a_file_of_a_finished_study(work):
    r = cli(*QUICK_COMPARE, "--out", "st", cwd=work)
    assert r.returncode == 0, r.stderr
    before = {p.name: p.read_bytes() for p in (work / "st").iterdir() if p.is_file() and p.name != ".cvxrank-lock"}
    again = [a for a in QUICK_COMPARE if a != "--no-report"]
    for name in ("results.csv", "study.json", "references.json", ".cvxrank-owner.json"):
        _refused(cli(*again, "--out", "st", "--report", f"st/{name}", cwd=work), f"st/{name}")
    _fit(work)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, "st"], cwd=work, env=ENV, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert readline_within(holder).strip() == "locked"  # as while the study writes
        r = cli("predict", "m.json", "d.letor", "--output", "st/results.csv", cwd=work)
        _refused(r, "st/results.csv")
        assert "'cvxrank compare'" in r.stderr
    finally:
        holder.kill()
        holder.wait()
    assert before == {name: (work / "st" / name).read_bytes() for name in before}
    r = cli(*QUICK_COMPARE, "--out", "st", cwd=work)  # the study resumes: nothing to run again
    assert r.returncode == 0 and "0 runs ran now; 1 were already in st" in r.stdout, r.stdout + r.stderr


def test_the_demo_keeps_files_it_did_not_write_and_never_replaces_the_working_folder(work):
    r = cli("demo", "--quick", "--out", "d", cwd=work)
    assert r.returncode == 0, r.stderr
    (work / "d" / "notes.txt").write_text("mine\n")
    (work / "d" / "cv" / "mine.csv").write_text("mine\n")
    report = (work / "d" / "report.md").read_text()
    r = cli("demo", "--quick", "--out", "d", "--seed", "1", cwd=work)
    assert r.returncode == 0, r.stderr
    assert (work / "d" / "report.md").read_text() != report  # replaced by the new demo
    assert (work / "d" / "notes.txt").read_text() == "mine\n" and (work / "d" / "cv" / "mine.csv").is_file()
    assert not [n for n in os.listdir(work) if n.startswith(".cvxrank")]  # no old or temporary folder left
    r = cli("demo", "--quick", "--out", ".", cwd=work / "d")
    assert r.returncode == 2 and "working folder" in r.stderr, r.stderr
    assert (work / "d" / "notes.txt").is_file()


def test_compare_reports_a_study_whose_runs_all_failed(work):
    (work / "oneq.letor").write_text("2 qid:1 1:0.5 2:0.1\n1 qid:1 1:0.3 2:0.2\n0 qid:1 1:0.1 2:0.9\n")
    r = cli("compare", "--instances", "letor:oneq.letor", "--sizes", "2", "--formulations", "primal", "--solvers",
            "clarabel", "--profiles", "low", "--no-progress", "--out", "lq", cwd=work)
    assert r.returncode == 0, r.stderr
    report = (work / "lq" / "report.md").read_text()
    assert "1 error of 1 runs" in report and "has 1 queries" in report and "no run was found" in report


@pytest.fixture
def small_disk(tmp_path):
    """A real tmpfs of 1 MiB, all but 8 KiB of it taken (needs root and mount: skipped otherwise)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True,
                           timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip("cannot run mount")
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.decode(errors='replace').strip()}")
    try:
        with open(mnt / "filler", "wb") as fh:
            fh.write(b"\0" * (1024 - 8) * 1024)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30)


def test_a_really_full_disk_leaves_no_folder_and_names_the_file(work, small_disk):
    for command in (("cv", "--methods", "ranksvm", "--queries", "6", "--n-folds", "3", "--lams", "1",
                     "--no-progress"), QUICK_COMPARE):
        out = small_disk / "out"
        r = cli(*command, "--out", out, cwd=work)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "No space left on device" in r.stderr and str(out) in r.stderr, r.stderr
        assert os.listdir(small_disk) == ["filler"]


def test_two_concurrent_compares_store_each_run_once(work):
    args = [sys.executable, "-m", "cvxrank.cli", *QUICK_COMPARE, "--sizes", "2,3", "--out", "st"]
    procs = [subprocess.Popen(args, cwd=work, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=240) + (p.returncode,) for p in procs]
    codes = sorted(r[2] for r in results)
    assert codes[0] == 0 and codes[1] in (0, 2), results
    import pandas as pd

    df = pd.read_csv(work / "st" / "results.csv")
    assert not df.duplicated(["instance", "size", "formulation", "solver", "profile"]).any()


# --- 7, 8. values checked before the first run; one line, never a traceback ---------------------

@pytest.mark.parametrize("extra, words", [
    (["--seed", "-1"], "--seed"), (["--timeout", "nan"], "--timeout"), (["--timeout", "inf"], "--timeout"),
    (["--connect-timeout", "-1"], "--connect-timeout"), (["--jobs", "0"], "--jobs"),
    (["--max-iter", "9223372036854775808"], "--max-iter"), (["--solvers", "clarabel,clarabel"], "more than once"),
    (["--lams", "1,1"], "more than once"), (["--tau", "2-1=nan,2-0=1,1-0=1"], "finite"),
    (["--scheduler", "nonsense"], "not an address"),
])
def test_compare_refuses_bad_values_in_one_line_before_any_run(work, extra, words):
    r = cli(*QUICK_COMPARE, "--out", "st", *extra, cwd=work)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], r.stderr
    assert not (work / "st" / "results.csv").exists() or extra[0] == "--scheduler"


@pytest.mark.parametrize("extra, words", [
    (["--solver", "clarabel", "--max-iter", "9223372036854775808"], "--max-iter"),
    (["--solver", "ecos", "--max-iter", "9223372036854775808"], "--max-iter"),
    (["--solver", "scs", "--max-iter", "9223372036854775808"], "--max-iter"),
    (["--solver", "osqp", "--max-iter", "2147483648"], "--max-iter"),
    (["--C", "1e308"], "--C=1e+308 is too large"),  # used to blame lam ("lam must be ... got 0.0")
    (["--C", "1e-320"], "--C=1e-320 is too small"),  # used to say "lam must be positive and finite, got inf"
    (["--lam", "1e-320"], "--lam=1e-320 is too small"),
    (["--method", "listmle", "--C", "1e300"], "--C=1e+300 is too large"),  # used to save a model, gap inf, warnings
    (["--method", "rsvm-ir-gd", "--lam", "1e-300"], "--lam=1e-300 is too small"),  # the same, gap nan
    (["--method", "cs-rglist", "--lam", "1e308"], "--lam=1e+308 is too large"),
])
def test_fit_refuses_unusable_values_in_one_line(work, extra, words):
    r = cli("fit", "d.letor", "--model", "m.json", *extra, cwd=work)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and words in r.stderr, r.stderr
    assert not (work / "m.json").exists()


def test_predict_refuses_to_write_non_finite_scores(work):
    import json

    _fit(work)
    doc = json.loads((work / "m.json").read_text())
    doc["coef"] = [1e308] * len(doc["coef"])
    (work / "big.json").write_text(json.dumps(doc))
    r = cli("predict", "big.json", "d.letor", "--output", "s.txt", cwd=work)
    assert r.returncode == 2 and "non-finite" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (work / "s.txt").exists()


# --- 5, 8. compressed files, pipes and folders as data ------------------------------------------

@pytest.mark.parametrize("codec", ["gzip", "bz2", "lzma"])
def test_compressed_letor_reads_as_its_text_and_is_checked_strictly(work, codec):
    import importlib
    import re

    import numpy as np

    from cvxrank.data import load_letor

    mod = importlib.import_module(codec)
    text = (work / "d.letor").read_bytes()
    with mod.open(work / "d.z", "wb") as fh:
        fh.write(text)
    a, b = load_letor(work / "d.letor"), load_letor(work / "d.z")
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and np.array_equal(a.qid, b.qid)
    lines = text.split(b"\n")
    lines[2] = re.sub(rb" 1:\S+", b" 1:1_000", lines[2])
    with mod.open(work / "bad.z", "wb") as fh:
        fh.write(b"\n".join(lines))
    r = cli("fit", "bad.z", "--model", "m.json", cwd=work)
    assert r.returncode == 2 and "line 3" in r.stderr and "1_000" in r.stderr, r.stderr
    lines = text.split(b"\n")
    lines[3] = lines[3].replace(b"qid:", b"qidx:")
    with mod.open(work / "bad.z", "wb") as fh:
        fh.write(b"\n".join(lines))
    r = cli("fit", "bad.z", "--model", "m.json", cwd=work)
    assert r.returncode == 2 and "line 4" in r.stderr, r.stderr


def test_a_fifo_is_read_and_a_folder_is_named_as_one(work):
    _fit(work)
    fifo = work / "in.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "cvxrank.cli", "predict", "m.json", "in.fifo"], cwd=work,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(fifo, "wb") as fh:
        fh.write((work / "d.letor").read_bytes())
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out == cli("predict", "m.json", "d.letor", cwd=work).stdout
    r = subprocess.run(["bash", "-c", f"'{sys.executable}' -m cvxrank.cli fit <(cat d.letor) --model p.json"],
                       cwd=work, env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = cli("fit", ".", "--model", "x.json", cwd=work)
    assert r.returncode == 2 and "is a directory" in r.stderr, r.stderr
