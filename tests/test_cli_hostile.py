"""The command line on hostile files: one line on stderr, exit code 2, no traceback, nothing half-written.

Every case runs ``cvxrank.cli.main([...])`` in-process and checks the output
folder's contents afterwards: no temporary file, no partial output, and an
output that existed before a failed run is left as it was. A disk that fills
up mid-write is simulated by a writer that raises ``ENOSPC`` after part of
the text (a size-limited tmpfs needs root).

The generated-file property runs ``CVXRANK_FUZZ_EXAMPLES`` cases (default
100; the valid-looking ones also through ``fit``); see tests/test_fuzz_inputs.py for the long run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import warnings

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import cvxrank as cr
from cvxrank.cli import main
from cvxrank.estimators import load_model
from cvxrank.exceptions import InaccurateSolutionWarning
from tests.conftest import FullDisk
from tests.test_fuzz_inputs import FUZZ, letor_files, letor_oracle

GOOD = cr.make_ranking(n_queries=4, docs_per_query=(4, 6), n_features=3, random_state=5)

HOSTILE = {
    "empty": b"",
    "comments_only": b"# nothing\n\n",
    "binary": bytes(range(256)) * 4,
    "utf16": "1 qid:1 1:0.5\n0 qid:1 1:0.2\n".encode("utf-16"),
    "truncated": b"2 qid:1 1:0.5 2:0.1\n0 qid:1 1:",
    "bad_qid": b"2 qid:one 1:0.5\n0 qid:1 1:0.2\n",
    "unsorted": b"2 qid:1 2:0.5 1:0.1\n0 qid:1 1:0.2\n",
    "duplicate_index": b"2 qid:1 1:0.5 1:0.1\n0 qid:1 1:0.2\n",
    "huge_index": b"2 qid:1 99999999999:0.5\n0 qid:1 1:0.2\n",
    "zero_index": b"2 qid:1 0:0.5\n0 qid:1 1:0.2\n",
    "non_numeric": b"2 qid:1 1:abc\n0 qid:1 1:0.2\n",
    "nan": b"2 qid:1 1:nan\n0 qid:1 1:0.2\n",
    "inf_grade": b"1e999 qid:1 1:0.5\n0 qid:1 1:0.2\n",
    "unicode": "2 qid:1 1:０.5\n0 qid:1 1:0.2\n".encode(),
    "underscore": b"2 qid:1 1:1_000\n0 qid:1 1:0.2\n",
}
#: Readable, but nothing to learn from: every query has a single grade.
NO_PAIRS = b"1 qid:1 1:0.5\n1 qid:1 1:0.2\n1 qid:2 1:0.3\n1 qid:3 1:0.1\n"


def _write(path, content: bytes) -> str:
    path.write_bytes(content)
    return str(path)


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    d = tmp_path_factory.mktemp("good")
    letor = str(d / "good.letor")
    cr.data.save_letor(GOOD, letor)
    model = str(d / "model.json")
    assert main(["fit", letor, "--model", model, "--solver", "clarabel"]) == 0
    return letor, model


def run_cli(argv):
    """``main(argv)`` with stdout and stderr captured.

    Warnings that a shell user would see on stderr (Python's default filters
    show ``RuntimeWarning``, ``UserWarning``, ``FutureWarning``) are appended
    to stderr as one line each, so a failure that also warns is not "one line".
    :class:`InaccurateSolutionWarning` is cvxrank's intended notice and is left out.
    """
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(argv)
    shown = [w for w in caught if issubclass(w.category, (RuntimeWarning, UserWarning, FutureWarning))
             and not issubclass(w.category, InaccurateSolutionWarning)]
    text = err.getvalue() + "".join(f"{w.category.__name__}: {w.message}\n" for w in shown)
    return code, out.getvalue(), text


def assert_clean_failure(code, err, command, folder, before=None):
    """Exit 2, one line ``cvxrank COMMAND: error: ...`` on stderr, and the folder exactly as before."""
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cvxrank {command}: error: "), err
    assert "Traceback" not in err
    assert sorted(os.listdir(folder)) == sorted(before or []), f"left behind: {os.listdir(folder)}"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_data_file(name, good, tmp_path):
    """Every command that reads a data file refuses a hostile one cleanly."""
    good_letor, model = good
    bad = _write(tmp_path / f"{name}.letor", HOSTILE[name])
    out = tmp_path / "out"
    out.mkdir()
    for argv in (
        ["fit", bad, "--model", str(out / "model.json")],
        ["predict", model, bad, "--output", str(out / "scores.txt")],
        ["evaluate", bad, "--model", model, "--json", str(out / "m.json"), "--per-query", str(out / "pq.csv")],
        ["evaluate", bad, "--scores", good_letor, "--json", str(out / "m.json")],
        ["cv", "--data", bad, "--n-folds", "3", "--methods", "ranksvm", "--no-progress", "--out", str(out / "cv")],
        ["verify", "--data", bad, "--solvers", "clarabel", "--json", str(out / "v.json")],
    ):
        code, _, err = run_cli(argv)
        assert_clean_failure(code, err, argv[0], out)


def test_no_pairs_to_learn_from(tmp_path):
    data = _write(tmp_path / "same.letor", NO_PAIRS)
    out = tmp_path / "out"
    out.mkdir()
    for argv in (["fit", data, "--model", str(out / "model.json")],
                 ["cv", "--data", data, "--n-folds", "3", "--methods", "ranksvm", "--no-progress", "--out",
                  str(out / "cv")],
                 ["verify", "--data", data, "--solvers", "clarabel", "--json", str(out / "v.json")]):
        code, _, err = run_cli(argv)
        assert_clean_failure(code, err, argv[0], out)
        assert "pair" in err


@pytest.mark.parametrize("content, message", [
    (b"0 qid:1 1:0.5\n1024 qid:1 1:1\n", "y_true is too large"),  # fit used to save, then fail on NDCG
    (b"1 qid:1 1:1e308\n0 qid:1 1:-1e308\n", "rescale the features"),  # used to warn, then a vague CVXPY error
    # the long fuzz run: ||d_i|| of a 1e300 feature overflowed in the certificate (a RuntimeWarning line)
    (b"1 qid:1 1:0.0 2:1e300\n2 qid:1\n0 qid:2 1:1.0\n0 qid:1\n0 qid:2\n0 qid:2\n1 qid:2\n1024 qid:2",
     "y_true is too large"),
])
def test_fit_regressions(content, message, tmp_path):
    """Found by the generated-file property: a failing fit must write no model and print one line."""
    data = _write(tmp_path / "d.letor", content)
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli(["fit", data, "--model", str(out / "model.json"), "--solver", "clarabel"])
    assert_clean_failure(code, err, "fit", out)
    assert message in err


MODELS = {
    "not_json": b"{not json",
    "empty": b"",
    "list": b"[1, 2, 3]",
    "wrong_version": None,  # filled from the good model below
    "extra_key": None,
    "missing_key": None,
    "executes": None,
    "deep": b"[" * 100_000 + b"]" * 100_000,
}


def _model_variant(name, good_model):
    with open(good_model, encoding="utf-8") as fh:
        doc = json.load(fh)
    if name == "wrong_version":
        doc["format_version"] = 99
    elif name == "extra_key":
        doc["__class__"] = "os.system"
    elif name == "missing_key":
        del doc["coef"]
    elif name == "executes":
        doc["estimator"] = "!!python/object/apply:os.system"
    return json.dumps(doc).encode()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_hostile_model_file(name, good, tmp_path):
    good_letor, good_model = good
    content = MODELS[name] if MODELS[name] is not None else _model_variant(name, good_model)
    model = _write(tmp_path / "model.json", content)
    out = tmp_path / "out"
    out.mkdir()
    for argv in (["predict", model, good_letor, "--output", str(out / "scores.txt")],
                 ["evaluate", good_letor, "--model", model, "--json", str(out / "m.json")]):
        code, _, err = run_cli(argv)
        assert_clean_failure(code, err, argv[0], out)


@pytest.mark.parametrize("content", [b"", b"0.1\nabc\n", b"0.1\nnan\n", b"1\n" * 3, "０.5\n".encode(), b"\xff\xfe"])
def test_hostile_score_file(content, good, tmp_path):
    good_letor, _ = good
    scores = _write(tmp_path / "scores.txt", content)
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli(["evaluate", good_letor, "--scores", scores, "--json", str(out / "m.json")])
    assert_clean_failure(code, err, "evaluate", out)


@pytest.fixture
def full_disk(monkeypatch):
    """``os.fdopen`` (what every atomic writer of cvxrank opens its temporary file with) on a filling disk."""
    real = os.fdopen

    def fdopen(fd, *args, **kwargs):
        return FullDisk(real(fd, *args, **kwargs), limit=10)

    monkeypatch.setattr(os, "fdopen", fdopen)


@pytest.mark.parametrize("command", ["fit", "predict", "evaluate"])
def test_disk_full_leaves_previous_output_intact(command, good, tmp_path, request):
    good_letor, good_model = good
    out = tmp_path / "out"
    out.mkdir()
    target = out / {"fit": "model.json", "predict": "scores.txt", "evaluate": "m.json"}[command]
    target.write_text("previous complete output\n")
    argv = {"fit": ["fit", good_letor, "--model", str(target), "--solver", "clarabel"],
            "predict": ["predict", good_model, good_letor, "--output", str(target)],
            "evaluate": ["evaluate", good_letor, "--model", good_model, "--json", str(target)]}[command]
    request.getfixturevalue("full_disk")
    code, _, err = run_cli(argv)
    assert_clean_failure(code, err, command, out, before=[target.name])
    assert "No space left on device" in err
    assert target.read_text() == "previous complete output\n"


def test_output_into_missing_folder_or_onto_a_folder(good, tmp_path):
    good_letor, good_model = good
    code, _, err = run_cli(["predict", good_model, good_letor, "--output", str(tmp_path / "nope" / "s.txt")])
    assert_clean_failure(code, err, "predict", tmp_path, before=[])
    (tmp_path / "adir").mkdir()
    code, _, err = run_cli(["predict", good_model, good_letor, "--output", str(tmp_path / "adir")])
    assert_clean_failure(code, err, "predict", tmp_path, before=["adir"])
    assert os.listdir(tmp_path / "adir") == []


def test_memory_budget_error_is_one_line(good, tmp_path, monkeypatch):
    """A refused materialisation of D reaches the user as one line naming the way out."""
    good_letor, _ = good
    from cvxrank._memory import formulation_bytes
    from cvxrank.pairs import make_pairs

    need = formulation_bytes(make_pairs(cr.load_letor(good_letor)))
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", str(need - 1))  # reading and the problem fit, D x 16 copies does not
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli(["fit", good_letor, "--model", str(out / "m.json"), "--solver", "clarabel",
                            "--formulation", "primal"])
    assert_clean_failure(code, err, "fit", out)
    assert "formulation='lifted'" in err and "cutting_plane" in err


def _scores_surely_finite(X, model_path) -> bool:
    """``sum_j |x_j| |w_j|`` is finite for every document: no order of summation can overflow."""
    coef = np.abs(np.asarray(load_model(model_path).coef_, dtype=float).ravel())[: X.shape[1]]
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.all(np.isfinite(np.abs(X[:, : coef.shape[0]]) @ coef)))


@FUZZ
@given(content=st.one_of(letor_files(), letor_files(mutate=False)))
@example(content=b"0 qid:1 1:0.0 2:1.3941868306225347e+308\n0 qid:1")  # the long run of 2026-11-23: score -inf
def test_cli_on_generated_files(content, good, tmp_path_factory):
    """Generated files through ``predict`` (all cases) and ``fit`` (the valid-looking ones)."""
    _, good_model = good
    folder = tmp_path_factory.mktemp("gen")
    data = _write(folder / "data.letor", content)
    out = folder / "out"
    out.mkdir()
    expected = letor_oracle(content)
    code, _, err = run_cli(["predict", good_model, data, "--output", str(out / "scores.txt")])
    if code != 0:
        assert_clean_failure(code, err, "predict", out)
        # refused: not LETOR, more features than the model, or scores that may overflow (predict writes
        # no inf; when even sum |x_j| |w_j| is finite, no score can overflow and that refusal is wrong)
        assert (expected is None or expected[3] > GOOD.n_features
                or ("non-finite score" in err and not _scores_surely_finite(expected[0], good_model))), err
    else:
        assert expected is not None and os.listdir(out) == ["scores.txt"]
        assert len((out / "scores.txt").read_text().split()) == len(expected[1])
        os.unlink(out / "scores.txt")
    if expected is None or expected[3] > 20:  # fit only small valid-looking files (w has n_features entries)
        return
    code, _, err = run_cli(["fit", data, "--model", str(out / "model.json"), "--solver", "clarabel"])
    if code not in (0, 3):  # 3: stopped at its work limit, the model written with its certified gap
        assert_clean_failure(code, err, "fit", out)
    else:
        assert os.listdir(out) == ["model.json"]
        assert load_model(out / "model.json").n_features_in_ == expected[3]


# --- odd inputs, FIFOs, links, warnings, memory budget (more in tests/test_outputs_safe.py, through a subprocess) ---

@pytest.mark.parametrize("methods", ["ranksvm,ranksvm", "rsvm-ir,rsvm-ir-qp", "listmle,ListMLE"])
def test_cv_refuses_a_method_named_twice(methods, tmp_path):
    """The same method twice (or by its alias) would be fitted twice for one row: refused before the data is read."""
    code, out, err = run_cli(["cv", "--methods", methods, "--baseline", "none", "--no-progress",
                              "--data", str(tmp_path / "not-read.letor")])
    assert_clean_failure(code, err, "cv", tmp_path)
    assert "--methods" in err and "more than once" in err and out == ""


def _write_fifo_later(fifo, content: bytes, *, delay: float, pause: float = 0.0):
    """A thread that opens ``fifo`` for writing after ``delay`` s, waits ``pause`` s, then writes ``content``."""
    import threading
    import time

    def writer():
        time.sleep(delay)
        with open(fifo, "wb") as fh:
            time.sleep(pause)
            fh.write(content)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    return thread


@pytest.mark.timeout(300)  # a safety net: a hang fails instead of blocking the suite
def test_a_fifo_nothing_writes_to_is_refused_without_hanging(good, tmp_path, monkeypatch):
    import cvxrank._io

    monkeypatch.setattr(cvxrank._io, "FIFO_WAIT", 0.3)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    good_letor, _ = good
    out = tmp_path / "out"
    out.mkdir()
    for argv in (["fit", str(fifo), "--model", str(out / "m.json")],  # the data file
                 ["predict", str(fifo), good_letor, "--output", str(out / "s.txt")],  # the model file
                 ["evaluate", good_letor, "--scores", str(fifo), "--json", str(out / "m.json")]):  # the scores
        code, _, err = run_cli(argv)
        assert_clean_failure(code, err, argv[0], out)  # the wait ended at FIFO_WAIT, as the message says:
        assert f"{fifo}: a FIFO that nothing opened for writing within 0.3 s" in err and "not a cvxrank" not in err


@pytest.mark.parametrize("delay, pause", [(0.1, 0.0), (0.0, 0.6)])
def test_a_fifo_is_read_when_its_writer_comes_late_or_is_slow(delay, pause, good, tmp_path, monkeypatch):
    """A writer that opens within FIFO_WAIT is read; one that has opened is waited for, however slow (like cat)."""
    import cvxrank._io

    # a limit far beyond the writer's delay: a busy machine cannot make the writer miss it
    monkeypatch.setattr(cvxrank._io, "FIFO_WAIT", 60.0)
    good_letor, model = good
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    with open(good_letor, "rb") as fh:
        content = fh.read()
    thread = _write_fifo_later(fifo, content, delay=delay, pause=pause)
    code, out, err = run_cli(["predict", model, str(fifo)])
    thread.join(5)
    assert code == 0, err
    assert out == run_cli(["predict", model, good_letor])[1]


def test_a_loop_of_links_is_named_as_unreadable_not_missing(tmp_path):
    os.symlink("b.letor", tmp_path / "a.letor")
    os.symlink("a.letor", tmp_path / "b.letor")
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli(["fit", str(tmp_path / "a.letor"), "--model", str(out / "m.json")])
    assert_clean_failure(code, err, "fit", out)
    assert "cannot be read" in err and "no such file" not in err


def test_a_warning_is_one_line_without_a_source_line(good, monkeypatch):
    """What Python would print as ``file:line: Category: message`` plus the source line is one line."""
    import cvxrank.cli.predict

    def warns(args):
        warnings.warn("overflow encountered in dot", RuntimeWarning, stacklevel=1)
        warnings.warn(InaccurateSolutionWarning("certified relative gap inf > tol 1e-06\n(solver status 'x')"),
                      stacklevel=1)
        return 0

    monkeypatch.setattr(cvxrank.cli.predict, "run", warns)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("always")
        assert main(["predict", good[1], good[0]]) == 0
    assert err.getvalue().splitlines() == [
        "cvxrank predict: warning: RuntimeWarning: overflow encountered in dot",
        "cvxrank predict: warning: certified relative gap inf > tol 1e-06 (solver status 'x')"]
    assert warnings.showwarning.__module__ == "warnings"  # restored after the command


@pytest.mark.parametrize("argv, named", [
    (["verify", "--queries", "100000000"], "100,000,000 queries"),
    (["verify", "--features", "100000000"], "100,000,000 features"),
    (["cv", "--queries", "100000000"], "100,000,000 queries"),
    (["simulate", "--sizes", "100000000,1,1"], "ECML simulation"),
    (["compare", "--sizes", "100000000"], "instance of size 100000000"),
    (["compare", "--instances", "web", "--sizes", "1000000"], "web instance of size 1000000"),
])
def test_generated_data_above_the_budget_is_refused_before_generating(argv, named, tmp_path, monkeypatch):
    """Sizes of generated data are estimated (cvxrank._memory.generated_bytes) before drawing."""
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", "64MiB")
    out = tmp_path / "out"
    out.mkdir()
    if argv[0] == "compare":
        argv = [*argv, "--out", str(out / "study")]
    code, _, err = run_cli(argv)
    assert_clean_failure(code, err, argv[0], out)
    assert "generating" in err and named in err and "64.0 MiB" in err


@pytest.mark.parametrize("index", [100000000, 2000000000])
@pytest.mark.parametrize("solver", ["clarabel", "cutting_plane", "subgradient"])
def test_a_typod_feature_index_is_refused_with_its_feature_count(index, solver, tmp_path, monkeypatch):
    """One index ``100000000:0.2`` makes every weight vector that long; refused, naming the count
    (tests/test_memory_estimates.py runs it in a child process and checks its peak memory stays small)."""
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", "64MiB")
    data = _write(tmp_path / "typo.letor", f"2 qid:1 1:0.5 {index}:0.2\n0 qid:1 1:0.1\n1 qid:1 2:0.3\n".encode())
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli(["fit", data, "--model", str(out / "m.json"), "--solver", solver])
    assert_clean_failure(code, err, "fit", out)
    assert f"{index:,} features" in err and "largest feature index" in err


def test_the_lifted_route_is_guarded(tmp_path, monkeypatch):
    """The route the D refusal recommends counts its pairs (600k pairs took 1.59 GB under 64 MiB)."""
    data = str(tmp_path / "many_pairs.letor")
    cr.data.save_letor(cr.make_ranking(n_queries=40, docs_per_query=100, n_features=5, random_state=0), data)
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", "64MiB")
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run_cli(["fit", data, "--model", str(out / "m.json"), "--solver", "clarabel",
                            "--formulation", "lifted"])
    assert_clean_failure(code, err, "fit", out)
    assert "lifted CVXPY formulation" in err and "133,320 pairs" in err and "solver='cutting_plane'" in err
