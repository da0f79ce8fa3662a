"""Writing output files safely: the one place cvxrank writes a file; and reading FIFOs without hanging.

A regular file is written to a temporary file in the same folder and renamed
onto its path (:func:`os.replace`), so a reader never sees it half-written and
an interrupted write leaves the old file (and no temporary file) behind. A
symbolic link is followed (its target is replaced, not the link). A path that
exists and is not a regular file (a FIFO, ``/dev/null``, a terminal) is written
through, never replaced. A write that fails without naming its file (a full disk) is re-raised
naming it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import secrets
import stat

from cvxrank.exceptions import ValidationError

__all__ = [
    "FIFO_WAIT",
    "LOCK_FILE",
    "OWNER_FILE",
    "append_text",
    "atomic_output",
    "check_outputs",
    "claim_folder",
    "discard_folder",
    "folder_lock",
    "folder_owner",
    "frame_to_json",
    "owning_folder",
    "plain_json",
    "read_input",
    "read_pipe",
    "write_all",
    "write_atomic",
    "write_json",
    "writing_into",
]


#: How text files encode what UTF-8 cannot: a file name that is not UTF-8 (``d\xff.letor``, read by
#: Python as a lone surrogate) is written as the escape ``\udcff``, so every text file cvxrank writes
#: is valid UTF-8 and a report naming such a file never fails half-way.
TEXT_ERRORS = "backslashreplace"
#: The name of a temporary file cvxrank writes before renaming it into place (:func:`_temporary`).
_TEMPORARY = re.compile(r"\.cvxrank-[0-9a-f]{12}\.[^/]*")


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
    kwargs = {} if binary else {"encoding": "utf-8", "errors": TEXT_ERRORS}
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
    made: list = []  # the name goes in before the file is created (_temporary)
    fd = None
    try:
        tmp, fd = _temporary(folder, suffix, made)
        if want_path:
            fd, closing = None, fd  # forgotten first: an interrupt in between leaks it, never closes another
            os.close(closing)
            yield tmp
        else:
            # The descriptor stays this function's (closefd=False): an interrupt inside fdopen() may leave a
            # file object whose finaliser would close it, and the finally below would then close a
            # descriptor that is no longer this file's (and fail before removing the file).
            with os.fdopen(fd, mode, closefd=False, **kwargs) as fh:
                yield fh
                fh.flush()
            os.fsync(fd)  # on disk before it takes the old file's place
        os.replace(tmp, path)
        made.clear()
    except OSError as exc:
        _naming(exc, path)
    finally:
        try:
            if fd is not None:
                os.close(fd)
        finally:  # removed even if closing failed
            for tmp in made:
                with contextlib.suppress(OSError):
                    if os.path.lexists(tmp):
                        os.unlink(tmp)


#: Errors of a write that does not name its file (``write`` and ``fsync`` on a full disk, over a
#: quota, ...): re-raised naming the file being written.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


def _naming(exc: OSError, path: str | None):
    """Raise ``exc`` naming ``path`` when it is a write error that names no file (``[Errno 28] No space
    left on device: 'st/results.csv'``), else ``exc`` as it is (call inside its ``except``)."""
    if path is not None and exc.filename is None and exc.errno in _WRITE_ERRNOS:
        raise type(exc)(exc.errno, exc.strerror or os.strerror(exc.errno), path) from exc
    raise exc


def _temporary(folder: str, suffix: str, made: list | None = None) -> tuple[str, int]:
    """A new temporary file ``.cvxrank-*SUFFIX`` in ``folder``, with the usual permissions: its name and an
    open descriptor. Its name is appended to ``made`` before the file is created (so a caller's
    ``finally`` that removes the names in ``made`` removes it, whenever an interrupt comes)."""
    while True:
        tmp = os.path.join(folder, f".cvxrank-{secrets.token_hex(6)}{suffix}")
        if made is not None:
            made.append(tmp)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another writer's name: draw again (never remove its file)
            if made is not None:
                made.pop()
            continue
        try:
            os.chmod(tmp, 0o666 & ~_umask())  # created 0600; a written file gets the usual permissions
        except BaseException:
            os.close(fd)
            raise
        return tmp, fd


def write_all(files) -> list[str]:
    """Write several text files, all of them or none: each goes to a temporary file in its folder and
    is flushed to disk; only when every one is written are they renamed onto their paths. A failure
    (a full disk, an interrupt) before that leaves every old file as it was and no temporary file.

    Parameters
    ----------
    files : mapping of path to str
        The files and their text. A path that exists and is not a regular file (a FIFO) is written
        through after the others are in place.

    Returns
    -------
    list of str
        The paths, in the order given.
    """
    plan = []
    current = None
    for path, text in files.items():
        path = os.fspath(path)
        target = os.path.realpath(path) if os.path.islink(path) else path
        if os.path.isdir(target):
            raise ValidationError(f"cannot write {path}: it is a folder")
        folder = os.path.dirname(os.path.abspath(target))
        if not os.path.isdir(folder):
            raise ValidationError(f"cannot write {path}: folder {folder} does not exist")
        plan.append((path, target, folder, text))
    made: list = []
    done = []
    try:
        for path, target, folder, text in plan:
            if os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode):
                continue  # written through below
            current = path
            tmp, fd = _temporary(folder, ".tmp", made)
            with os.fdopen(fd, "w", encoding="utf-8", errors=TEXT_ERRORS) as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            done.append((tmp, target))
        for tmp, target in done:
            current = target
            os.replace(tmp, target)
            made.remove(tmp)
        for path, target, _, text in plan:
            if os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode):
                current = path
                with open(target, "w", encoding="utf-8", errors=TEXT_ERRORS) as fh:
                    fh.write(text)
    except OSError as exc:
        _naming(exc, current)
    finally:
        for tmp in made:
            if os.path.lexists(tmp):
                os.unlink(tmp)
    return [p for p, *_ in plan]


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(outputs, inputs=(), *, folders=(), own=None) -> None:
    """Refuse, before any work is done, outputs that cannot be written or would destroy an input or a
    command's folder.

    Parameters
    ----------
    outputs : iterable of path or None
        Files a command will write (None entries are skipped). Each must not be a folder, its
        folder must exist (or be one of ``folders``), and it must not be the same file as any of
        ``inputs`` (compared by device and inode, so hard links, symbolic links and ``./x``
        spellings are caught), nor two outputs the same path. Nor may it lie in a folder a cvxrank
        command owns (:func:`owning_folder`: the file's folder or the one above it is marked by
        :data:`OWNER_FILE` or :data:`LOCK_FILE`), except in the calling command's own folder
        (``own``) under a name it does not write itself.
    inputs : iterable of path or None
        Files the command reads. A folder among them stands for every file inside it (a LETOR
        folds folder).
    folders : iterable of path or None
        Folders a command will create or write into: the parent must exist, the path must not be
        a file, and no input may be the folder or lie inside it with a name the command writes.
    own : mapping of path to set of str or None, optional
        The folders the calling command owns and writes itself, each with the names (files or
        sub-folders, at its top level) it writes there; None for all of them (a command that
        replaces the whole folder). An output there under another name is allowed (``compare
        --report OUT/report.md``), one of these names is refused (``--report OUT/results.csv``).

    Raises
    ------
    ValidationError
        Naming the output and the reason.
    """
    ins = [os.fspath(p) for p in inputs if p is not None]
    outs = [os.fspath(p) for p in outputs if p is not None]
    made = [os.path.realpath(os.fspath(p)) for p in folders if p is not None]
    mine = {os.path.realpath(os.fspath(f)): (os.fspath(f), names) for f, names in (own or {}).items() if f is not None}
    seen = {}
    for out in outs:
        if os.path.isdir(out):
            raise ValidationError(f"cannot write {out}: it is a folder")
        folder = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(folder) and os.path.realpath(folder) not in made:
            raise ValidationError(f"cannot write {out}: folder {folder} does not exist")
        for inp in ins:
            if _same_file(out, inp) or (os.path.isdir(inp) and os.path.exists(out) and any(
                    _same_file(out, os.path.join(root, f)) for root, _, files in os.walk(inp) for f in files)):
                raise ValidationError(f"refusing to write {out}: it is the input {inp} (an output never "
                                      "replaces an input; choose another path)")
        _check_not_owned(out, mine)
        if os.path.isdir(folder) and not (os.path.exists(out) and not stat.S_ISREG(os.stat(out).st_mode)):
            _check_writable(folder, out)
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
        _check_writable(folder if os.path.isdir(folder) else parent, folder)
        real = os.path.realpath(folder)
        for inp in ins:
            r = os.path.realpath(inp)
            if r == real or (os.path.isfile(inp) and os.path.dirname(r) == real
                             and os.path.basename(r) in _FOLDER_FILES):
                raise ValidationError(f"refusing to write into {folder}: the input {inp} would be replaced")


def _check_writable(folder: str, out: str) -> None:
    """Refuse ``out`` unless a file can be created in ``folder``: tried by creating and removing one
    (``os.access`` says yes to root whatever the mode, and knows nothing of read-only mounts)."""
    made: list = []
    try:
        _, fd = _temporary(folder, ".probe", made)
        os.close(fd)
    except OSError as exc:
        raise ValidationError(f"cannot write {out}: {exc.strerror or exc} in {folder}") from None
    finally:  # removed whatever comes, an interrupt too
        for tmp in made:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _shown(path: str) -> str:
    """``path`` relative to the working folder when it lies below it, else as it is."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def owning_folder(path) -> tuple[str, str] | None:
    """The folder a cvxrank command owns that the file ``path`` would be written into, and the command.

    The file's folder, or the folder above it (``OUT/figures/``, the demo's ``cv/``), counts when it
    holds :data:`OWNER_FILE` or :data:`LOCK_FILE` (the marks :func:`claim_folder` and :func:`folder_lock`
    leave). A symbolic link is followed, as :func:`atomic_output` follows it.

    Returns
    -------
    tuple of (str, str) or None
        The folder (resolved) and the command (``"compare"``, ``"cv"``, ``"demo"``; ``"unknown"``
        when only a lock marks it), or None.
    """
    real = os.path.realpath(os.fspath(path))
    folder = os.path.dirname(real)
    for candidate in dict.fromkeys((folder, os.path.dirname(folder))):
        if os.path.isfile(os.path.join(candidate, OWNER_FILE)) or os.path.lexists(os.path.join(candidate, LOCK_FILE)):
            return candidate, folder_owner(candidate) or "unknown"
    return None


def _check_not_owned(out: str, mine: dict) -> None:
    """Refuse ``out`` inside a command's folder, unless it is the calling command's own folder under a
    name the command does not write (:func:`check_outputs`)."""
    real = os.path.realpath(out)
    hit = owning_folder(out)
    roots = [r for r in mine if r in (os.path.dirname(real), os.path.dirname(os.path.dirname(real)))]
    if hit is not None and hit[0] not in mine:
        folder, command = hit
        who = "a cvxrank command" if command == "unknown" else f"'cvxrank {command}'"
        raise ValidationError(f"refusing to write {out}: it lies in {_shown(folder)}, a folder that {who} owns "
                              "(it would replace or mix with that command's files); choose a path outside it")
    for root in roots:
        given, names = mine[root]
        top = os.path.relpath(real, root).split(os.sep)[0]
        if names is None:
            raise ValidationError(f"refusing to write {out}: it lies in {given}, the folder this command "
                                  "replaces as a whole; choose a path outside it")
        if top in names:
            raise ValidationError(f"refusing to write {out}: this command writes {top} in its folder {given} "
                                  "itself; choose another name")


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


def append_text(path, text: str) -> None:
    """Append ``text`` to ``path`` in one ``write``, flushed to disk; a failed write (a full disk) names the file."""
    path = os.fspath(path)
    try:
        with open(path, "a", encoding="utf-8", errors=TEXT_ERRORS) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        _naming(exc, path)


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
        # Another command's temporary file (its owner mark an instant before its rename) is cvxrank's too:
        # the folder lock, not this check, settles which of two commands writes.
        others = [n for n in os.listdir(folder) if n not in (OWNER_FILE, LOCK_FILE) and not _TEMPORARY.fullmatch(n)]
        if owner is None and others:
            raise ValidationError(f"{folder} holds files not written by cvxrank ({', '.join(sorted(others)[:3])}"
                                  f"{', ...' if len(others) > 3 else ''}); choose an empty or new folder, or pass "
                                  "--overwrite")
        if owner is not None and owner != command:
            raise ValidationError(f"{folder} belongs to 'cvxrank {owner}', not 'cvxrank {command}'; choose another "
                                  "folder, or pass --overwrite to write into it anyway")
    if not create:
        return
    new = not os.path.isdir(folder)
    empty = new or not os.listdir(folder)
    os.makedirs(folder, exist_ok=True)
    try:
        if folder_owner(folder) != command or not os.path.isfile(os.path.join(folder, OWNER_FILE)):
            write_json(os.path.join(folder, OWNER_FILE), {"command": command})
    except BaseException:
        if empty:  # a full disk: no empty folder of ours left behind
            discard_folder(folder, remove=new)
        raise


def discard_folder(folder, disposable=None, *, remove: bool = True) -> bool:
    """Empty ``folder`` and remove it (``remove``) if it holds nothing but cvxrank's marks
    (:data:`OWNER_FILE`, :data:`LOCK_FILE`) and files of no value (``disposable(path) -> bool``); for a
    command that failed before storing anything in a folder it made (a full disk, an interrupt).
    With ``remove=False`` the folder itself stays (a user's empty folder).

    Returns
    -------
    bool
        Whether the folder was emptied. A folder holding anything else is left as it is.
    """
    folder = os.fspath(folder)
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    marks = {OWNER_FILE, LOCK_FILE}
    paths = [os.path.join(folder, n) for n in names]
    if not all(n in marks or (disposable is not None and os.path.isfile(p) and not os.path.islink(p)
                                  and disposable(p))
               for n, p in zip(names, paths)):
        return False
    try:
        for path in sorted(paths, key=lambda p: os.path.basename(p) == LOCK_FILE):  # the lock last
            os.unlink(path)
        if remove:
            os.rmdir(folder)
    except OSError:
        return False
    return True


@contextlib.contextmanager
def writing_into(folder, command: str, *, overwrite: bool = False, disposable=None):
    """Claim ``folder`` for ``command`` (:func:`claim_folder`), hold its lock (:func:`folder_lock`) and,
    if the block fails before storing anything in a folder that was new or empty, discard what it left
    (:func:`discard_folder`).

    The discard happens while the lock is held: a command refused by the lock never touches the folder,
    which another command is writing into (the two may both have seen it new).

    Raises
    ------
    ValidationError
        From :func:`claim_folder` or :func:`folder_lock`; the folder is left as it was.
    """
    folder = os.fspath(folder)
    new = not os.path.exists(folder)
    empty = new or not os.listdir(folder)
    claim_folder(folder, command, overwrite=overwrite)
    with folder_lock(folder):
        try:
            yield
        except BaseException:
            if empty:  # a full disk, an early interrupt: no empty folder of ours left behind
                discard_folder(folder, disposable, remove=new)
            raise


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
