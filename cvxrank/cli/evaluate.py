"""Evaluate a ranking of a LETOR file: NDCG@k, MAP and P@k averaged over queries.

The ranking comes from a saved model (--model) or from a file of scores, one a line in file order
(--scores; what 'cvxrank predict' and SVMrank write). NDCG uses gains 2^r - 1 and a log2(1 + j)
discount ((20) of SIGIR 2006); MAP and P@k count grade >= --relevant as relevant; a query with no
relevant document scores 0 and counts in the mean (the LETOR convention).

--convention letor / mslr reproduce the LETOR 4.0 / MSLR evaluation scripts (Eval-Score-4.0.pl):
their gain tables (0,1,3 / 0,1,3,7,15), relevant grade >= 1 / >= 2, ties in file order, positions 1
and 2 undiscounted, and NDCG@k = 0 for a query with fewer than k documents; published LETOR baselines
were computed this way. See docs/metrics.md for the table of conventions."""

from __future__ import annotations

import numpy as np

from cvxrank._io import read_input
from cvxrank.cli._common import split, write_atomic, write_json
from cvxrank.exceptions import CvxrankError

HELP = "NDCG@k, MAP and P@k of a model or a score file on a LETOR file"
EPILOG = """examples:
  cvxrank evaluate test.letor --model model.json
  cvxrank evaluate test.letor --scores test.scores --k 1,3,5,10 --relevant 2
  cvxrank evaluate test.letor --model model.json --json metrics.json --per-query per_query.csv
  cvxrank evaluate test.letor --model model.json --convention mslr   # the MSLR script's numbers
"""


def add_arguments(parser) -> None:
    parser.add_argument("data", metavar="DATA", help="a LETOR/SVMlight file with qid")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", metavar="MODEL", help="a JSON model written by 'cvxrank fit'")
    source.add_argument("--scores", metavar="FILE", help="scores, one a line, in the order of DATA")
    parser.add_argument("--k", default="1,3,5,10", help="cut-offs for NDCG@k and P@k (default 1,3,5,10)")
    parser.add_argument("--convention", default="cvxrank", choices=("cvxrank", "letor", "mslr"),
                        help="cvxrank (default), or the LETOR 4.0 / MSLR evaluation script's conventions")
    parser.add_argument("--relevant", type=float,
                        help="smallest grade counted as relevant for MAP and P@k (default 1; mslr: 2)")
    parser.add_argument("--json", metavar="PATH", help="also write the means as JSON")
    parser.add_argument("--per-query", metavar="CSV", dest="per_query", help="also write per-query values as CSV")


def read_scores(path: str, n: int) -> np.ndarray:
    """Scores from a file, one a line; the count must be ``n`` and every value finite."""
    try:
        text = read_input(path).decode("utf-8")
        lines = [line.strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    except FileNotFoundError:
        raise CvxrankError(f"score file {path} does not exist") from None
    except UnicodeDecodeError:
        raise CvxrankError(f"score file {path} is not text") from None
    while lines and not lines[-1]:
        lines.pop()
    scores = np.empty(len(lines))
    for i, line in enumerate(lines):
        try:
            scores[i] = float(line.split()[0])
        except (ValueError, IndexError):
            raise CvxrankError(f"{path}, line {i + 1}: {line[:40]!r} is not a number") from None
        if not np.isfinite(scores[i]):
            raise CvxrankError(f"{path}, line {i + 1}: score {line!r} is not finite")
    if scores.shape[0] != n:
        raise CvxrankError(f"{path} has {scores.shape[0]} scores but the data file has {n} documents")
    return scores


def run(args) -> int:
    from cvxrank.cli.predict import predict_file
    from cvxrank.data import load_letor
    from cvxrank._io import check_outputs
    from cvxrank.evaluation import per_query_metrics

    # every output path is checked first: either all outputs are written or none
    check_outputs([args.json, args.per_query], [args.data, args.model, args.scores])
    try:
        ks = tuple(int(k) for k in split(args.k))
    except ValueError:
        raise CvxrankError(f"--k must be comma-separated integers, got {args.k!r}") from None
    if args.model:
        _, data, scores = predict_file(args.model, args.data)
        source = args.model
    else:
        data = load_letor(args.data)
        scores = read_scores(args.scores, data.n_documents)
        source = args.scores
    from cvxrank.evaluation import CONVENTIONS

    relevant = CONVENTIONS[args.convention]["relevant"] if args.relevant is None else args.relevant
    if args.convention != "cvxrank" and relevant != CONVENTIONS[args.convention]["relevant"]:
        raise CvxrankError(f"--relevant {args.relevant:g} cannot be combined with --convention {args.convention}, "
                           f"whose script counts grade >= {CONVENTIONS[args.convention]['relevant']} as relevant")
    table = per_query_metrics(data.y, scores, data.qid, ks=ks, relevant=relevant, convention=args.convention)
    means = table.mean()
    print(f"{source} on {args.data}: {data.n_queries} queries, {data.n_documents} documents "
          f"(relevant: grade >= {relevant:g}; convention {args.convention})")
    print(means.to_frame("mean").T.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if args.json:
        write_json(args.json, {"data": args.data, "source": source, "n_queries": int(data.n_queries),
                               "relevant": relevant, "convention": args.convention, "metrics": {k: float(v) for k, v in means.items()}})
        print(f"wrote {args.json}")
    if args.per_query:
        write_atomic(args.per_query, table.to_csv())
        print(f"wrote {args.per_query}")
    return 0
