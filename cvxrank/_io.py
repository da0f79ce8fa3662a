"""Writing output files safely: the one place cvxrank writes a file.

A regular file is written to a temporary file in the same folder and renamed
onto its path (:func:`os.replace`), so a reader never sees it half-written and
an interrupted write leaves the old file (and no temporary file) behind. A
symbolic link is followed (its target is replaced, not the link). A path that
exists and is not a regular file (a FIFO, ``/dev/null``, a terminal) is written
through, never replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile

from cvxrank.exceptions import ValidationError

__all__ = ["atomic_output", "write_atomic", "write_json"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path, *, binary: bool = False, suffix: str = ".tmp", want_path: bool = False):
    """Open ``path`` for writing, atomically for regular files (see the module docstring).

    Yields a file object, or with ``want_path=True`` the name of the file to
    write (for writers that take a path, such as ``Figure.savefig``).

    Raises
    ------
    ValidationError
        When the folder does not exist or ``path`` is a folder.
    """
    path = os.fspath(path)
    if os.path.islink(path):
        path = os.path.realpath(path)
    if os.path.isdir(path):
        raise ValidationError(f"cannot write {path}: it is a folder")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValidationError(f"cannot write {path}: folder {folder} does not exist")
    mode = "wb" if binary else "w"
    kwargs = {} if binary else {"encoding": "utf-8"}
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        if want_path:
            yield path
        else:
            with open(path, mode, **kwargs) as fh:  # a device or FIFO: write through, never replace it
                yield fh
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".cvxrank-", suffix=suffix)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual permissions
        if want_path:
            os.close(fd)
            yield tmp
        else:
            with os.fdopen(fd, mode, **kwargs) as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())  # on disk before it takes the old file's place
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def write_atomic(path, text: str) -> None:
    """Write ``text`` to ``path`` (:func:`atomic_output`)."""
    with atomic_output(path) as fh:
        fh.write(text)


def write_json(path, obj) -> None:
    """:func:`write_atomic` of ``obj`` as indented JSON (floats written in full, as Python's repr)."""
    write_atomic(path, json.dumps(obj, indent=2) + "\n")
