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
import math
import os
import stat
import tempfile

from cvxrank.exceptions import ValidationError

__all__ = ["atomic_output", "frame_to_json", "plain_json", "write_atomic", "write_json"]


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


def plain_json(obj):
    """``obj`` as strict JSON data: numpy scalars and arrays as Python numbers and lists, keys as
    strings, NaN and infinities as None; finite floats untouched.

    ``json.dumps`` writes a Python float by its shortest round-trip repr, so every float comes
    back bit for bit (pandas' ``to_json`` keeps 10 significant digits by default, which stored a
    certified gap of 3.9e-11 as 0.0).

    Examples
    --------
    >>> import numpy as np
    >>> plain_json({"gap": np.float64(3.9e-11), "w": np.array([1.0, np.nan]), 2: np.inf})
    {'gap': 3.9e-11, 'w': [1.0, None], '2': None}
    """
    if isinstance(obj, dict):
        return {str(k): plain_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain_json(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):  # numpy scalars and arrays
        return plain_json(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def frame_to_json(df) -> dict:
    """A DataFrame as ``{"meta": df.attrs, "rows": [...]}`` with every float kept as it is."""
    return plain_json({"meta": dict(df.attrs), "rows": df.to_dict(orient="records")})


def write_atomic(path, text: str) -> None:
    """Write ``text`` to ``path`` (:func:`atomic_output`)."""
    with atomic_output(path) as fh:
        fh.write(text)


def write_json(path, obj) -> None:
    """:func:`write_atomic` of ``obj`` as indented JSON (floats written in full, as Python's repr)."""
    write_atomic(path, json.dumps(plain_json(obj), indent=2, allow_nan=False) + "\n")
