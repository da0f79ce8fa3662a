"""The one writer of output files (cvxrank._io): atomic for regular files, never replacing a link or a FIFO."""

import os
import threading

import pytest

from cvxrank._io import atomic_output, write_atomic
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
