"""The one writer of output files (cvxrank._io): atomic for regular files, never replacing a link or a FIFO."""

import contextlib
import os
import re
import signal
import threading

import pytest

from cvxrank._io import (
    atomic_output,
    check_outputs,
    LOCK_FILE,
    OWNER_FILE,
    claim_folder,
    folder_lock,
    write_atomic,
    writing_into,
)
from cvxrank.exceptions import ValidationError


def test_regular_file_is_replaced_atomically_and_no_temporary_file_survives(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    write_atomic(path, "new")
    assert path.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    with pytest.raises(RuntimeError):
        with atomic_output(path) as fh:
            fh.write("half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_symlink_is_followed_not_replaced(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    write_atomic(fifo, "scores\n")
    reader.join(timeout=10)
    assert got == ["scores\n"] and fifo.is_fifo()


def test_bad_targets_are_refused(tmp_path):
    with pytest.raises(ValidationError, match="does not exist"):
        write_atomic(tmp_path / "missing" / "x.txt", "x")
    with pytest.raises(ValidationError, match="is a folder"):
        write_atomic(tmp_path, "x")


# -- the rules tests/test_outputs_safe.py checks through the CLI in subprocesses (slow), here in-process --

def test_an_output_that_is_an_input_is_refused_however_it_is_spelled(tmp_path, monkeypatch):
    (tmp_path / "d.letor").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    os.symlink("d.letor", tmp_path / "link.letor")
    os.link(tmp_path / "d.letor", tmp_path / "hard.letor")
    monkeypatch.chdir(tmp_path)
    for spelling in ("d.letor", "./d.letor", "link.letor", "hard.letor"):
        with pytest.raises(ValidationError, match=f"refusing to write {re.escape(spelling)}: it is the input"):
            check_outputs([spelling], ["d.letor"])
    check_outputs(["m.json"], ["d.letor"])  # any other path is fine


def test_fit_refuses_its_training_file_as_its_model_before_fitting(tmp_path, monkeypatch, capsys):
    from cvxrank.cli import main

    data = tmp_path / "d.letor"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n2 qid:2 1:0.9\n0 qid:2 1:0.2\n")
    before = data.read_bytes()
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "d.letor", "--model", "./d.letor"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "refusing to write ./d.letor" in err
    assert "RankSVM on" not in out and data.read_bytes() == before  # refused before the fit


def test_a_folder_belongs_to_one_command_and_is_locked_while_written(tmp_path):
    st = tmp_path / "st"
    claim_folder(st, "compare")
    claim_folder(st, "compare")  # its own folder: a resume
    with pytest.raises(ValidationError, match=r"belongs to 'cvxrank compare'.*--overwrite"):
        claim_folder(st, "cv")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    with pytest.raises(ValidationError, match="not written by cvxrank"):
        claim_folder(mine, "cv")
    # flock: a second holder is refused at once, even in the same process
    with folder_lock(st), pytest.raises(ValidationError, match=f"process {os.getpid()}"), folder_lock(st):
        pass
    with folder_lock(st):  # the lock ended with its holder
        pass


def test_a_command_refused_by_the_lock_leaves_the_folder_to_its_holder(tmp_path, monkeypatch):
    """Two commands start into one new folder: both see it new, the other takes the lock between this
    one's claim and its lock. This one is refused and must not discard the folder (the holder's marks
    and the folder it is writing into); a failure while holding the lock discards what it made."""
    import cvxrank._io as io

    out = tmp_path / "out"
    other = contextlib.ExitStack()
    claim = io.claim_folder

    def claim_then_the_other_locks(folder, command, **kw):
        claim(folder, command, **kw)
        other.enter_context(folder_lock(folder))

    monkeypatch.setattr(io, "claim_folder", claim_then_the_other_locks)
    with other, pytest.raises(ValidationError, match="another cvxrank command"), writing_into(out, "cv"):
        pass
    assert sorted(p.name for p in out.iterdir()) == sorted([OWNER_FILE, LOCK_FILE])
    monkeypatch.setattr(io, "claim_folder", claim)
    fresh = tmp_path / "fresh"
    with pytest.raises(RuntimeError, match="disk full"), writing_into(fresh, "cv"):
        raise RuntimeError("disk full")
    assert not fresh.exists()
    with writing_into(fresh, "cv"):
        (fresh / "results.csv").write_text("a\n")
    assert (fresh / "results.csv").exists() and (fresh / OWNER_FILE).exists()


@pytest.mark.parametrize("where", ["chmod", "open"])
def test_an_interrupt_while_the_temporary_file_is_made_leaves_none(tmp_path, monkeypatch, where):
    """A Ctrl-C (or the CLI's SIGTERM) inside the call that creates the temporary file, just after the
    file exists: the file is removed all the same (a SIGTERM during ``compare`` once left one)."""
    real_open, real_chmod = os.open, os.chmod

    def open_then_interrupted(path, *args, **kwargs):
        real_open(path, *args, **kwargs)
        raise KeyboardInterrupt

    def interrupted(path, mode):
        real_chmod(path, mode)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, where, open_then_interrupted if where == "open" else interrupted)
    with pytest.raises(KeyboardInterrupt), atomic_output(tmp_path / "out.txt") as fh:
        fh.write("never")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_as_the_file_object_is_made_leaves_no_file_and_stays_an_interrupt(tmp_path, monkeypatch):
    """A Ctrl-C (or the CLI's SIGTERM) that lands once the temporary file's object is made but before it is handed
    back: the object is dropped (its finaliser runs), and the write still ends as an interrupt, the old file kept
    and no temporary file left (a second close of the descriptor once raised 'Bad file descriptor' instead and
    skipped the removal: about 1 in 75 SIGTERMs sent to a loop of writes)."""
    import builtins
    import io

    real = io.open

    def made_then_interrupted(*args, **kwargs):
        fh = real(*args, **kwargs)
        del fh  # dropped, as the interrupt drops it: its finaliser runs now
        raise KeyboardInterrupt

    path = tmp_path / "out.txt"
    path.write_text("old\n")
    monkeypatch.setattr(io, "open", made_then_interrupted)
    monkeypatch.setattr(builtins, "open", made_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new\n")
    monkeypatch.undo()
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_an_interrupt_leaves_no_temporary_file_and_ends_a_command_with_130(tmp_path, monkeypatch, capsys):
    from cvxrank import cli
    from cvxrank.cli import predict

    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with pytest.raises(KeyboardInterrupt), atomic_output(path) as fh:
        fh.write("partial")
        raise KeyboardInterrupt
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    with pytest.raises(KeyboardInterrupt):  # the CLI's SIGTERM handler, so that finally blocks run
        cli._terminate(signal.SIGTERM, None)

    def interrupted(args):
        raise KeyboardInterrupt

    def bug(args):
        raise ValueError("internal detail")

    monkeypatch.delenv("CVXRANK_TRACEBACK", raising=False)
    monkeypatch.setattr(predict, "run", interrupted)
    assert cli.main(["predict", "m.json", "d.letor"]) == 130
    assert capsys.readouterr().err == "cvxrank predict: interrupted\n"

    def closing_after_a_signal(args):  # an interrupt that a cleanup turns into another error
        try:
            cli._terminate(signal.SIGTERM, None)
        finally:
            raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(predict, "run", closing_after_a_signal)
    assert cli.main(["predict", "m.json", "d.letor"]) == 130
    assert capsys.readouterr().err == "cvxrank predict: interrupted\n"
    monkeypatch.setattr(predict, "run", bug)  # a bug exits 1 and says so, a user error exits 2
    assert cli.main(["predict", "m.json", "d.letor"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (a bug in cvxrank)" in err and "CVXRANK_TRACEBACK=1" in err


def test_save_letor_follows_the_umask(tmp_path):
    from cvxrank.data import save_letor
    from cvxrank.datasets import make_ranking

    old = os.umask(0o022)
    try:
        save_letor(make_ranking(n_queries=2, n_features=2, random_state=0), tmp_path / "x.letor")
    finally:
        os.umask(old)
    assert (os.stat(tmp_path / "x.letor").st_mode & 0o777) == 0o644
