"""The ``cvxrank`` command line.

One module per command in this package (``fit.py``, ``verify.py``, ...); a
module whose name does not start with ``_`` is a command. Each defines

* ``HELP``: the one-line summary ``cvxrank --help`` shows,
* ``add_arguments(parser)``: its options (the parser's description and
  epilog come from the module docstring and ``EPILOG``),
* ``run(args) -> int``: the exit code.

Every failure the user can cause (:data:`USER_ERRORS`) ends in one line on stderr and exit code 2;
any other exception is a bug in cvxrank and ends in one line saying so, exit code 1
(``CVXRANK_TRACEBACK=1`` shows the traceback); a warning is one line ``cvxrank COMMAND: warning: ...``; SIGTERM ends a command like Ctrl-C (exit 130);
outputs are written to a temporary file and renamed into place
(:func:`cvxrank.cli._common.write_atomic`), so nothing is left half-written.
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import io
import os
import pkgutil
import signal
import sys
import threading
import warnings

from cvxrank import __version__
from cvxrank.exceptions import CvxrankError

#: What a user can cause: cvxrank's own errors (ValidationError, SolverError, ...), files that cannot
#: be read or written (OSError), and data too big for the machine (MemoryError). One line, exit 2.
USER_ERRORS = (CvxrankError, OSError, MemoryError)

__all__ = ["main", "build_parser", "commands"]

#: Order in ``cvxrank --help``; command modules not listed here follow alphabetically.
ORDER = ("demo", "fit", "predict", "evaluate", "verify", "simulate", "clicks", "cv", "compare", "bench")


def commands() -> list[str]:
    """Names of the command modules in this package, in help order."""
    names = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    return [n for n in ORDER if n in names] + sorted(n for n in names if n not in ORDER)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cvxrank",
        description="Learning to rank with convex optimisation: the Ranking SVM family as CVXPY problems, "
                    "interchangeable solvers, certified solutions.",
        epilog="run 'cvxrank COMMAND --help' for a command's options and examples",
    )
    parser.add_argument("--version", action="version", version=f"cvxrank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_module_parsers(sub, __name__, commands(), "func")
    return parser


def add_module_parsers(sub, package: str, names, dest: str) -> None:
    """One sub-parser per module ``package.NAME``: help from ``HELP``, description from the docstring,
    examples from ``EPILOG``, options from ``add_arguments``; ``args.<dest>`` is the module's ``run``."""
    for name in names:
        module = importlib.import_module(f"{package}.{name}")
        cmd = sub.add_parser(name, help=module.HELP, description=(module.__doc__ or module.HELP).strip(),
                             epilog=getattr(module, "EPILOG", None),
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(cmd)
        cmd.set_defaults(**{dest: module.run})


def main(argv=None) -> int:
    """Run ``cvxrank`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--version"]:  # answered before any command module is imported
        print(f"cvxrank {__version__}")
        return 0
    import pandas as pd

    parser = build_parser()
    args = parser.parse_args(argv)
    pd.set_option("display.width", 200)
    previous = _terminate_as_interrupt()
    restore_stdout = _print_any_file_name()
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning(args.command)
    _SIGNALLED.clear()
    try:
        try:
            return args.func(args)
        except (KeyboardInterrupt, Exception) as exc:
            if isinstance(exc, KeyboardInterrupt) or _SIGNALLED or _during_interrupt(exc):
                # An error raised while an interrupt unwinds (a worker pool closing its pipes, say)
                # is the interrupt's doing, not the user's nor a bug.
                print(f"cvxrank {args.command}: interrupted", file=sys.stderr)
                return 130
            raise
    except USER_ERRORS as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"cvxrank {args.command}: error: {message}", file=sys.stderr)
        return 2
    except Exception as exc:  # anything else is a bug in cvxrank, and says so
        if os.environ.get("CVXRANK_TRACEBACK"):
            raise
        message = " ".join(str(exc).split())
        print(f"cvxrank {args.command}: internal error (a bug in cvxrank): {type(exc).__name__}: {message}; "
              "set CVXRANK_TRACEBACK=1 for the traceback", file=sys.stderr)
        return 1
    finally:
        restore_stdout()
        warnings.showwarning = shown
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _file_name_bytes(exc):
    """Encoding error handler ``cvxrank-file-names``: a file name's bytes that are not text in the file
    system's encoding (Python reads them as lone surrogates, PEP 383) are written back as those bytes, as
    ``ls`` prints them; any other character the stream cannot encode becomes a backslash escape."""
    if isinstance(exc, UnicodeEncodeError):
        bad = exc.object[exc.start:exc.end]
        if all("\udc80" <= c <= "\udcff" for c in bad):
            return bytes(ord(c) - 0xDC00 for c in bad), exc.end
    return codecs.backslashreplace_errors(exc)


codecs.register_error("cvxrank-file-names", _file_name_bytes)


def _print_any_file_name():
    """Let stdout print every file name the command was given, for the command; returns the undo.

    A strict stdout (``PYTHONIOENCODING=utf-8``, or a UTF-8 locale other than C) cannot encode a
    name that is not UTF-8 (``m\\xff.json``): ``wrote m\\udcff.json`` used to fail after the model was
    written, as an internal error with exit code 1.
    """
    stream = sys.stdout
    if not isinstance(stream, io.TextIOWrapper) or stream.errors != "strict" or stream.closed:
        return lambda: None
    stream.reconfigure(errors="cvxrank-file-names")

    def restore():
        if not stream.closed:
            stream.reconfigure(errors="strict")

    return restore


def _one_line_warning(command: str):
    """``warnings.showwarning`` for a command: ``cvxrank COMMAND: warning: ...`` on one line, without
    Python's file name and source line (cvxrank's own warnings as they are, others with their category)."""
    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if not category.__module__.startswith("cvxrank"):
            text = f"{category.__name__}: {text}"
        print(f"cvxrank {command}: warning: {text}", file=sys.stderr if file is None else file)

    return show


#: Signals received during the running command (the handler records them before it raises).
_SIGNALLED: list = []


def _during_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt was being handled (its context chain)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__context__ or exc.__cause__
    return False


def _terminate(signum, frame):
    _SIGNALLED.append(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def _terminate_as_interrupt():
    """Make SIGTERM raise KeyboardInterrupt, so ``finally`` blocks run (temporary files are removed)
    and the command ends as an interrupted one (exit 130). Returns the previous handler (None when
    not on the main thread, where handlers cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _terminate)
