"""Run a benchmark of cvxrank against its references, in one process, and print the ratios.

Benchmarks are not tests: they take seconds to minutes and report measured times, memory and
accuracy as ratios to a reference measured in the same run."""

from __future__ import annotations

import argparse
import importlib

from cvxrank.bench import benchmarks

HELP = "run a benchmark (cvxrank bench NAME --help lists its options)"
EPILOG = """examples:
  cvxrank bench --help              # the benchmarks installed
  cvxrank bench native --help
"""


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="benchmark", metavar="NAME")
    sub.required = True
    for name in benchmarks():
        module = importlib.import_module(f"cvxrank.bench.{name}")
        b = sub.add_parser(name, help=module.HELP, description=(module.__doc__ or module.HELP).strip(),
                           epilog=getattr(module, "EPILOG", None),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(b)
        b.set_defaults(bench_run=module.run)


def run(args) -> int:
    return args.bench_run(args)
