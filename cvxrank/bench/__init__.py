"""Benchmarks, run by ``cvxrank bench NAME`` (never by the test suite).

One module per benchmark; a module whose name does not start with ``_`` is a
benchmark. Each defines ``HELP`` (one line), ``EPILOG`` (optional examples),
``add_arguments(parser)`` and ``run(args) -> int``, like the command modules of
:mod:`cvxrank.cli`. Benchmarks measure ratios against a reference inside one
run, because absolute times drift on shared machines.
"""

from __future__ import annotations

import pkgutil

__all__ = ["benchmarks"]


def benchmarks() -> list[str]:
    """Names of the benchmark modules in this package."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
