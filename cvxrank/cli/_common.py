"""Helpers shared by the command modules: argument parsers, atomic writes, data loading."""

from __future__ import annotations

from cvxrank._args import split
from cvxrank._io import frame_to_json, write_atomic, write_json
from cvxrank._validation import Interval, check
from cvxrank.exceptions import CvxrankError, ValidationError

__all__ = ["parse_tau", "parse_mu", "split", "write_atomic", "write_json", "frame_to_json", "add_data_arguments",
           "data_from_args", "check_option", "MAX_ITER", "MAX_ITER_LIMIT"]

#: The largest iteration cap every solver takes (OSQP and SCS read a 32-bit int; larger ones
#: overflowed inside the solver with a traceback).
MAX_ITER_LIMIT = 2**31 - 1
#: What ``--max-iter`` may be.
MAX_ITER = Interval(1, MAX_ITER_LIMIT, integer=True)


def check_option(flag: str, value, constraint):
    """:func:`cvxrank._validation.check` of the option ``--flag``: the same refusal, as the
    :class:`~cvxrank.exceptions.CvxrankError` the commands raise."""
    try:
        return check(f"--{flag}", value, constraint)
    except ValidationError as exc:
        raise CvxrankError(str(exc)) from None


def parse_tau(text: str | None):
    """``"2-1=3,2-0=3,1-0=0.5"`` -> ``{(2, 1): 3.0, (2, 0): 3.0, (1, 0): 0.5}`` (validated by
    :class:`cvxrank.costs.Costs`); ``"estimate"`` passes through."""
    if text is None:
        return None
    if text.strip() == "estimate":
        return "estimate"
    from cvxrank.costs import Costs

    return Costs.from_text(text).tau


def parse_mu(text: str | None):
    """``none`` -> None, ``balanced`` -> ``"balanced"`` ((10) of SIGIR 2006), validated by :class:`cvxrank.costs.Costs`."""
    from cvxrank.costs import Costs

    return None if text is None else Costs.from_text(None, text).mu


def add_data_arguments(parser, *, queries: int = 10, features: int = 5, grades: int = 3) -> None:
    """``--data FILE`` or a generated data set (``--queries --features --grades --seed``)."""
    parser.add_argument("--data", metavar="FILE", help="a LETOR/SVMlight file with qid (default: generated data)")
    parser.add_argument("--queries", type=int, default=queries,
                        help=f"generated data: number of queries (default {queries})")
    parser.add_argument("--features", type=int, default=features, help=f"generated data: features (default {features})")
    parser.add_argument("--grades", type=int, default=grades, help=f"generated data: grades (default {grades})")
    parser.add_argument("--seed", type=int, default=0, help="generated data: seed (default 0)")


def data_from_args(args):
    """The data set :func:`add_data_arguments` describes, and a one-line description of it."""
    from cvxrank.data import load_letor
    from cvxrank.datasets import make_ranking

    if args.data:
        return load_letor(args.data), f"data: {args.data}"
    data = make_ranking(n_queries=args.queries, n_features=args.features, n_grades=args.grades,
                        random_state=args.seed)
    return data, (f"data: generated (make_ranking, {args.queries} queries, {args.features} features, "
                  f"{args.grades} grades, seed {args.seed})")
