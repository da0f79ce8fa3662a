"""The ``cvxrank`` command line.

One module per command in this package (``fit.py``, ``verify.py``, ...); a
module whose name does not start with ``_`` is a command. Each defines

* ``HELP``: the one-line summary ``cvxrank --help`` shows,
* ``add_arguments(parser)``: its options (the parser's description and
  epilog come from the module docstring and ``EPILOG``),
* ``run(args) -> int``: the exit code.

Every failure the user can cause ends in one line on stderr and exit code 2;
outputs are written to a temporary file and renamed into place
(:func:`cvxrank.cli._common.write_atomic`), so nothing is left half-written.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from cvxrank import __version__
from cvxrank.exceptions import CvxrankError

__all__ = ["main", "build_parser", "commands"]

#: Order in ``cvxrank --help``; command modules not listed here follow alphabetically.
ORDER = ("demo", "fit", "predict", "evaluate", "verify", "simulate", "cv", "compare", "bench")


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
    parser = build_parser()
    args = parser.parse_args(argv)
    import pandas as pd  # after parsing: --help and --version must not load pandas

    pd.set_option("display.width", 200)
    try:
        return args.func(args)
    except (CvxrankError, ValueError, OSError, MemoryError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"cvxrank {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"cvxrank {args.command}: interrupted", file=sys.stderr)
        return 130
