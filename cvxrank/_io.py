"""Writing output files safely: the one place cvxrank writes a file; and reading FIFOs without hanging.

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
import secrets
import stat

from cvxrank.exceptions import ValidationError

__all__ = ["OWNER_FILE", "LOCK_FILE", "atomic_output", "check_outputs", "claim_folder", "folder_lock", "folder_owner",
           "frame_to_json", "plain_json", "read_input", "read_pipe", "write_atomic", "write_json", "FIFO_WAIT"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Seconds a named FIFO that no process has opened for writing is waited for before it is refused.
FIFO_WAIT = 10.0


def read_pipe(path: str) -> bytes:
    """All the bytes of a FIFO or a pipe (``<(cat f)``), without hanging on a FIFO nothing writes to.

    Opened without blocking, so the open does not wait for a writer. While a writer is connected the
    read waits for its data like ``cat`` (however slow it is); a named FIFO that no writer has opened
    within :data:`FIFO_WAIT` seconds is refused. An anonymous pipe always had its writer, so its end
    of data is the end of the file."""
    import select
    import time

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        try:
            writer_seen = os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")  # anonymous (Linux)
        except OSError:
            writer_seen = False
        deadline = time.monotonic() + FIFO_WAIT
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:  # a writer is connected and has nothing yet: wait for it
                writer_seen = True
                select.select([fd], [], [])
                continue
            if chunk:
                chunks.append(chunk)
                writer_seen = True
            elif writer_seen:  # the end of the data
                return b"".join(chunks)
            elif time.monotonic() < deadline:  # no writer has opened the FIFO yet
                time.sleep(0.02)
            else:
                raise ValidationError(f"{path}: a FIFO that nothing opened for writing within {FIFO_WAIT:g} s; "
                                      "start its writer first, or give a regular file")
    finally:
        os.close(fd)


def read_input(path) -> bytes:
    """The bytes of an input file (a model, a score file): a FIFO or a pipe through :func:`read_pipe`
    (never hanging on a FIFO nothing writes to), anything else through :func:`open`, whose
    ``OSError`` (missing file, a folder, ...) the caller turns into its message."""
    path = os.fspath(path)
    try:
        fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        fifo = False  # open() below raises the error the caller names
    if fifo:
        return read_pipe(path)
    with open(path, "rb") as fh:
        return fh.read()


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
    # The temporary file's name is chosen first and the file created inside the ``try``: a
    # KeyboardInterrupt (or SIGTERM, which the CLI turns into one) at any point, even inside the
    # call that creates it, reaches the ``finally`` with the name set, so the file is removed.
    tmp = None
    fd = None
    try:
        while fd is None:
            tmp = os.path.join(folder, f".cvxrank-{secrets.token_hex(6)}{suffix}")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # another writer's name: draw again (never remove its file)
                tmp = None
        os.chmod(tmp, 0o666 & ~_umask())  # created 0600; a written file gets the usual permissions
        if want_path:
            os.close(fd)
            fd = None
            yield tmp
        else:
            fh = os.fdopen(fd, mode, **kwargs)
            fd = None
            with fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())  # on disk before it takes the old file's place
        os.replace(tmp, path)
        tmp = None
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(outputs, inputs=(), *, folders=()) -> None:
    """Refuse, before any work is done, outputs that cannot be written or would destroy an input.

    Parameters
    ----------
    outputs : iterable of path or None
        Files a command will write (None entries are skipped). Each must not be a folder, its
        folder must exist, and it must not be the same file as any of ``inputs`` (compared by
        device and inode, so hard links, symbolic links and ``./x`` spellings are caught), nor
        two outputs the same path.
    inputs : iterable of path or None
        Files the command reads. A folder among them stands for every file inside it (a LETOR
        folds folder).
    folders : iterable of path or None
        Folders a command will create or write into: the parent must exist, the path must not be
        a file, and no input may be the folder or lie inside it with a name the command writes.

    Raises
    ------
    ValidationError
        Naming the output and the reason.
    """
    ins = [os.fspath(p) for p in inputs if p is not None]
    outs = [os.fspath(p) for p in outputs if p is not None]
    seen = {}
    for out in outs:
        if os.path.isdir(out):
            raise ValidationError(f"cannot write {out}: it is a folder")
        folder = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(folder):
            raise ValidationError(f"cannot write {out}: folder {folder} does not exist")
        for inp in ins:
            if _same_file(out, inp) or (os.path.isdir(inp) and os.path.exists(out) and any(
                    _same_file(out, os.path.join(root, f)) for root, _, files in os.walk(inp) for f in files)):
                raise ValidationError(f"refusing to write {out}: it is the input {inp} (an output never "
                                      "replaces an input; choose another path)")
        key = os.path.realpath(out)
        if key in seen and not (os.path.exists(out) and not stat.S_ISREG(os.stat(out).st_mode)):
            raise ValidationError(f"{seen[key]} and {out} are the same output file; choose two paths")
        seen[key] = out
    for folder in (os.fspath(p) for p in folders if p is not None):
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ValidationError(f"cannot write into {folder}: it is a file, not a folder")
        parent = os.path.dirname(os.path.abspath(folder))
        if not os.path.isdir(parent):
            raise ValidationError(f"cannot write into {folder}: folder {parent} does not exist")
        real = os.path.realpath(folder)
        for inp in ins:
            r = os.path.realpath(inp)
            if r == real or (os.path.isfile(inp) and os.path.dirname(r) == real
                             and os.path.basename(r) in _FOLDER_FILES):
                raise ValidationError(f"refusing to write into {folder}: the input {inp} would be replaced")


#: Names commands write into a folder they own (an input of that name in the folder is refused).
_FOLDER_FILES = frozenset({"results.csv", "per_query.csv", "selection.csv", "sign_tests.csv", "report.md",
                           "study.json", "commands.log", "theorem.csv"})


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


#: The file that names the command owning a folder (``cvxrank compare``, ``cv``, ``demo``).
OWNER_FILE = ".cvxrank-owner.json"
#: The file a command holds an exclusive lock on while it writes into its folder.
LOCK_FILE = ".cvxrank-lock"
#: Files that show which command made a folder written before owner files existed.
_SIGNS = {"study.json": "compare", "selection.csv": "cv", "results.json": "demo"}


def folder_owner(folder) -> str | None:
    """The command that owns ``folder`` (from its owner file, else from the files it holds), or None."""
    folder = os.fspath(folder)
    path = os.path.join(folder, OWNER_FILE)
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                return str(json.load(fh).get("command"))
        except (OSError, ValueError, AttributeError):
            return "unknown"
    for name, command in _SIGNS.items():
        if os.path.exists(os.path.join(folder, name)):
            return command
    return None


def claim_folder(folder, command: str, *, overwrite: bool = False, create: bool = True) -> None:
    """Refuse ``folder`` if another command owns it (unless ``overwrite``); else mark it as ``command``'s.

    A folder that does not exist yet, or is empty, is claimed. A folder holding files of no known
    command (a user's folder) is refused too, unless ``overwrite``: the command would write over them.
    With ``create=False`` only the check is made (before a long computation; nothing is written).

    Raises
    ------
    ValidationError
        Naming the folder, its owner and ``--overwrite``.
    """
    folder = os.fspath(folder)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ValidationError(f"cannot write into {folder}: it is a file, not a folder")
    if os.path.isdir(folder) and not overwrite:
        owner = folder_owner(folder)
        others = [n for n in os.listdir(folder) if n not in (OWNER_FILE, LOCK_FILE)]
        if owner is None and others:
            raise ValidationError(f"{folder} holds files not written by cvxrank ({', '.join(sorted(others)[:3])}"
                                  f"{', ...' if len(others) > 3 else ''}); choose an empty or new folder, or pass "
                                  "--overwrite")
        if owner is not None and owner != command:
            raise ValidationError(f"{folder} belongs to 'cvxrank {owner}', not 'cvxrank {command}'; choose another "
                                  "folder, or pass --overwrite to write into it anyway")
    if not create:
        return
    os.makedirs(folder, exist_ok=True)
    if folder_owner(folder) != command or not os.path.isfile(os.path.join(folder, OWNER_FILE)):
        write_json(os.path.join(folder, OWNER_FILE), {"command": command})


@contextlib.contextmanager
def folder_lock(folder):
    """Hold an exclusive lock on ``folder`` (``fcntl.flock`` on its :data:`LOCK_FILE`) while writing.

    A second command writing into the same folder at the same time is refused at once, not queued:
    two studies appending to one ``results.csv`` would store every run twice. The lock ends with
    the process, however it ends.

    Raises
    ------
    ValidationError
        When another process holds the lock.
    """
    import fcntl

    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            raise ValidationError(f"another cvxrank command{f' (process {holder})' if holder else ''} is writing "
                                  f"into {folder}; wait for it to finish, or choose another folder") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
