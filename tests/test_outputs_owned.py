"""A command's folder is its own: no single-file output of another command (or another of its options)
replaces one of its files; the demo replaces only a folder it made, keeping files it did not write;
cv does not replace its earlier results silently; a full disk leaves no empty folder and no partial
set of files, and its message names the file; compare checks its variants up front and reports a
table of failed runs.

Everything runs in-process through ``cvxrank.cli.main`` and is refused before any solve, except the
two cross-validations on a full disk (a few small fits). End-to-end runs in subprocesses are in
tests/test_outputs_safe.py (slow)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os

import numpy as np
import pandas as pd
import pytest

import cvxrank as cr
from cvxrank._io import LOCK_FILE, OWNER_FILE, check_outputs, claim_folder, folder_lock
from cvxrank.cli import main
from cvxrank.data import save_letor
from cvxrank.estimators import RankSVM
from cvxrank.exceptions import ValidationError
from tests.conftest import FullDisk

SMALL = ["--instances", "ecml", "--sizes", "1", "--formulations", "primal", "--solvers", "clarabel", "--profiles",
         "low", "--no-progress"]
CV = ["cv", "--methods", "ranksvm", "--queries", "6", "--n-folds", "3", "--lams", "1", "--no-progress"]


def run_cli(argv):
    """``main(argv)``: the exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def refused(code, err, command, *words):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cvxrank {command}: error: "), err
    for word in words:
        assert word in lines[0], lines[0]


def snapshot(folder):
    """Every file of ``folder`` and its bytes (the lock file aside: a command leaves it)."""
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != LOCK_FILE}


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A study folder as ``cvxrank compare ... --out st`` leaves it (its definition, table and references)."""
    from cvxrank.cli import compare
    from cvxrank.study.store import ResultStore

    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    compare.add_arguments(parser)
    claim_folder("st", "compare")
    store = ResultStore("st", compare.study_from_args(parser.parse_args(SMALL + ["--out", "st"])))
    store.save_references({"ecml-1|1|lam=0.5": {"objective": 1.0}})
    return tmp_path / "st"


@pytest.fixture
def cvdir(tmp_path, monkeypatch):
    """A folder as ``cvxrank cv --out cvdir`` leaves it."""
    monkeypatch.chdir(tmp_path)
    claim_folder("cvdir", "cv")
    for name in ("results.csv", "per_query.csv", "selection.csv", "sign_tests.csv", "report.md"):
        (tmp_path / "cvdir" / name).write_text(f"{name} of an earlier cv\n")
    return tmp_path / "cvdir"


@pytest.fixture
def model(tmp_path):
    data = cr.make_ranking(n_queries=3, n_features=2, random_state=0)
    save_letor(data, tmp_path / "d.letor")
    RankSVM(lam=1.0).fit(data).save(tmp_path / "m.json")
    return "m.json", "d.letor"


# --- 1. a single-file output never replaces a file of a command's folder -------------------------

@pytest.mark.parametrize("name", ["results.csv", "study.json", "references.json", OWNER_FILE, "commands.log"])
def test_compare_report_is_refused_onto_a_file_of_its_own_study(study, name):
    before = snapshot(study)
    code, out, err = run_cli(["compare", *SMALL, "--out", "st", "--report", f"st/{name}"])
    refused(code, err, "compare", f"st/{name}", "choose another name")
    assert "study" not in out  # refused before the study ran
    assert snapshot(study) == before
    # its report next to its table is its own file (the check compare makes, without running the study)
    check_outputs(["st/report.md"], folders=["st"], own={"st": {name}})
    with pytest.raises(ValidationError, match="lies in st, a folder that 'cvxrank compare' owns"):
        check_outputs(["st/report.md"], folders=["st2"], own={"st2": {name}})


@pytest.mark.parametrize("name, text", [("results.csv", "# Solver comparison study\n"),
                                        ("references.json", "# Solver comparison study\n")])
def test_a_study_file_replaced_by_another_file_is_named_on_resume(study, name, text):
    (study / name).write_text(text)
    code, out, err = run_cli(["compare", *SMALL, "--out", "st", "--no-report"])
    refused(code, err, "compare", os.path.join("st", name), "move it away")
    assert "runs ran now" not in out and (study / name).read_text() == text


def test_compare_report_is_refused_in_a_cv_folder(study, cvdir):
    before = snapshot(cvdir)
    code, out, err = run_cli(["compare", *SMALL, "--out", "st2", "--report", "cvdir/results.csv"])
    refused(code, err, "compare", "cvdir/results.csv", "'cvxrank cv'")
    assert snapshot(cvdir) == before and not os.path.exists("st2")


def test_predict_and_fit_outputs_are_refused_in_a_command_folder(study, cvdir, model):
    model_path, data = model
    before = snapshot(study)
    with folder_lock(study):  # a study writing its folder at this moment
        code, _, err = run_cli(["predict", model_path, data, "--output", "st/results.csv"])
    refused(code, err, "predict", "st/results.csv", "'cvxrank compare'")
    code, _, err = run_cli(["predict", model_path, data, "--output", "st/scores.txt"])  # a new name there too
    refused(code, err, "predict", "st/scores.txt", "'cvxrank compare'")
    os.symlink("st/results.csv", "link.csv")  # a link is followed when written, so it is refused too
    code, _, err = run_cli(["predict", model_path, data, "--output", "link.csv"])
    refused(code, err, "predict", "link.csv", "'cvxrank compare'")
    assert snapshot(study) == before
    before = snapshot(cvdir)
    code, out, err = run_cli(["fit", data, "--model", "cvdir/selection.csv"])
    refused(code, err, "fit", "cvdir/selection.csv", "'cvxrank cv'")
    assert "RankSVM on" not in out and snapshot(cvdir) == before  # refused before the fit
    code, _, err = run_cli(["predict", model_path, data, "--output", "scores.txt"])  # elsewhere: written
    assert code == 0, err


# --- 2. the demo replaces only a folder it made, keeping files it did not write ------------------

def test_demo_never_replaces_a_folder_of_user_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine\n")
    for argv in (["--out", "mine"], ["--out", "."]):
        code, out, err = run_cli(["demo", "--quick", *argv])
        refused(code, err, "demo")
        assert "Theorem 1" not in out
    with pytest.raises(SystemExit) as exc, contextlib.redirect_stderr(io.StringIO()):
        main(["demo", "--quick", "--out", "mine", "--overwrite"])  # no longer a way to delete them
    assert exc.value.code == 2
    assert (tmp_path / "notes.txt").read_text() == "mine\n" and (tmp_path / "mine" / "notes.txt").is_file()
    # the working folder is never replaced, even when an earlier demo made it
    claim_folder(tmp_path / "d", "demo")
    monkeypatch.chdir(tmp_path / "d")
    code, _, err = run_cli(["demo", "--quick", "--out", "."])
    refused(code, err, "demo", "working folder")
    # nor another command's folder
    monkeypatch.chdir(tmp_path)
    claim_folder(tmp_path / "cvdir", "cv")
    code, _, err = run_cli(["demo", "--quick", "--out", "cvdir"])
    refused(code, err, "demo", "belongs to 'cvxrank cv'")


def test_demo_replacing_its_folder_keeps_the_files_it_did_not_write(tmp_path):
    from cvxrank.cli.demo import _move_into_place

    out, new = tmp_path / "demo", tmp_path / ".new"
    for folder, text in ((out, "old"), (new, "new")):
        (folder / "cv").mkdir(parents=True)
        (folder / OWNER_FILE).write_text(json.dumps({"command": "demo"}))
        (folder / "report.md").write_text(text)
        (folder / "cv" / "results.csv").write_text(text)
    (out / "notes.txt").write_text("mine")
    (out / "cv" / "mine.txt").write_text("mine")
    (out / "sub").mkdir()
    (out / "sub" / "x").write_text("mine")
    _move_into_place(str(new), str(out))
    assert (out / "report.md").read_text() == "new" and (out / "cv" / "results.csv").read_text() == "new"
    assert {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()
            and "mine" in p.read_text()} == {"notes.txt": "mine", "cv/mine.txt": "mine", "sub/x": "mine"}
    assert sorted(os.listdir(tmp_path)) == ["demo"]  # the old folder is gone, nothing else left


# --- 3. cv's earlier results; a full disk -------------------------------------------------------

def test_cv_does_not_replace_its_earlier_results_without_overwrite(cvdir):
    before = snapshot(cvdir)
    code, out, err = run_cli([*CV, "--out", "cvdir"])
    refused(code, err, "cv", "earlier 'cvxrank cv'", "--overwrite")
    assert "cross-validation on" not in out and snapshot(cvdir) == before


_FDOPEN = os.fdopen


def fill_disk(monkeypatch, after: int = 0):
    """``os.fdopen`` (every atomic writer's temporary file) on a disk that is full after ``after`` files."""
    real, opened = _FDOPEN, []

    def fdopen(fd, mode="r", *args, **kwargs):
        fh = real(fd, mode, *args, **kwargs)
        if not mode.startswith("w"):  # a pipe read, say
            return fh
        opened.append(fd)
        return fh if len(opened) <= after else FullDisk(fh)

    monkeypatch.setattr(os, "fdopen", fdopen)


def test_compare_on_a_full_disk_leaves_no_folder_and_names_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fill_disk(monkeypatch)
    code, _, err = run_cli(["compare", *SMALL, "--out", "st"])
    refused(code, err, "compare", "No space left on device", os.path.join("st", OWNER_FILE))
    assert os.listdir(tmp_path) == []
    fill_disk(monkeypatch, after=1)  # the owner file is written, the study definition is not
    code, _, err = run_cli(["compare", *SMALL, "--out", "st"])
    refused(code, err, "compare", "No space left on device", "study.json")
    assert os.listdir(tmp_path) == []


def test_cv_on_a_full_disk_writes_all_its_files_or_none(tmp_path, monkeypatch, cvdir):
    before = snapshot(cvdir)
    fill_disk(monkeypatch, after=2)  # two of its five files would fit
    code, _, err = run_cli([*CV, "--out", "cvdir", "--overwrite"])
    refused(code, err, "cv", "No space left on device", os.path.join("cvdir", "selection.csv"))
    assert snapshot(cvdir) == before
    assert not [n for n in os.listdir(cvdir) if n.endswith(".tmp")]
    code, _, err = run_cli([*CV, "--out", "new"])
    refused(code, err, "cv", "No space left on device")
    assert not os.path.exists("new")


# --- 4. compare: variants checked up front; a table of failed runs only -----------------------------

@pytest.mark.parametrize("variants, words", [
    ("papers,lower=1", ["lower=1", "w = 0"]),
    ("upper=-0.5", ["upper=-0.5", "w = 0"]),
    ("lower=0,lower=-0", ["lower=0 and lower=-0", "twice"]),
])
def test_compare_refuses_variants_up_front(tmp_path, variants, words):
    code, out, err = run_cli(["compare", *SMALL, "--variants", variants, "--out", tmp_path / "st"])
    refused(code, err, "compare", *words)
    assert not (tmp_path / "st").exists()


def test_the_report_of_a_study_whose_runs_all_failed(tmp_path):
    from cvxrank.study import COLUMNS, write_report

    rows = [{c: np.nan for c in COLUMNS} | {"instance": "oneq", "size": s, "cost": "lam=0.5", "formulation": "primal",
                                            "solver": "clarabel", "profile": "low", "status": "error", "found": False,
                                            "lam": 0.5, "tol": 1e-3, "resolved_formulation": "", "solver_status": "",
                                            "solver_version": "", "message": "oneq.letor has 1 queries"}
            for s in (5, 10)]
    path = write_report(pd.DataFrame(rows, columns=list(COLUMNS)), tmp_path / "report.md", time_limit=60)
    text = path.read_text()
    assert "no run was found" in text and "oneq.letor has 1 queries" in text and "2 error of 2 runs" in text
