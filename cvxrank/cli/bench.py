"""Run a benchmark of cvxrank against its references, in one process, and print the ratios.

Benchmarks are not tests: they take seconds to minutes and report measured times, memory and
accuracy as ratios to a reference measured in the same run."""

from __future__ import annotations

from cvxrank.bench import benchmarks

HELP = "run a benchmark (cvxrank bench NAME --help lists its options)"
EPILOG = """examples:
  cvxrank bench --help              # the benchmarks installed
  cvxrank bench native --help
"""


def add_arguments(parser) -> None:
    from cvxrank.cli import add_module_parsers

    sub = parser.add_subparsers(dest="benchmark", metavar="NAME")
    sub.required = True
    add_module_parsers(sub, "cvxrank.bench", benchmarks(), "bench_run")


def run(args) -> int:
    return args.bench_run(args)
