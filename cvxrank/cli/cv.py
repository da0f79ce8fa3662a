"""Cross-validate the papers' rankers with folds by query: parameters are chosen on the validation
queries, metrics measured on the test queries; prints NDCG@k, MAP and P@k per method and sign tests
on per-query NDCG@1 (Table 2 of SIGIR 2006). Data: a LETOR fold folder (Fold1/train.txt, vali.txt,
test.txt, ...), a train and a test file (validation queries held out of train), one file split
into query folds, or generated data."""

from __future__ import annotations

import os

from cvxrank.cli._common import MAX_ITER, check_option, split
from cvxrank.exceptions import CvxrankError

HELP = "cross-validate rankers with folds by query, parameters chosen on validation queries"
EPILOG = """examples:
  cvxrank cv                                                  # generated data, 5 folds, all methods
  cvxrank cv --train train.letor --test test.letor --out results/
  cvxrank cv --folds OHSUMED/ --methods ranksvm,rsvm-ir-qp --lams 0.001,0.01,0.1 --relevant 1
  cvxrank cv --data all.letor --n-folds 5 --baseline ranksvm --out cv/
"""


def add_arguments(parser) -> None:
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--folds", metavar="DIR", help="a LETOR folder with Fold*/train.txt, vali.txt, test.txt")
    src.add_argument("--data", metavar="FILE", help="one LETOR file, split into --n-folds query folds")
    src.add_argument("--train", metavar="FILE", help="training file (needs --test); 20%% of its queries validate")
    parser.add_argument("--test", metavar="FILE", help="test file for --train")
    parser.add_argument("--n-folds", type=int, default=5, dest="n_folds", help="query folds for --data or generated "
                                                                              "data (default 5)")
    parser.add_argument("--queries", type=int, default=30, help="generated data: queries (default 30)")
    parser.add_argument("--features", type=int, default=10, help="generated data: features (default 10)")
    parser.add_argument("--grades", type=int, default=3, help="generated data: grades (default 3)")
    parser.add_argument("--noise", type=float, default=2.0, help="generated data: label noise (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the folds and tau estimation")
    parser.add_argument("--methods", help="comma-separated (default: ranksvm, rsvm-ir-rank, rsvm-ir-query, "
                                          "rsvm-ir-qp, rsvm-ir-gd, listmle, cs-rglist)")
    parser.add_argument("--lams", help="lambda grid of the pairwise methods (default 0.01,0.1,1,10)")
    parser.add_argument("--Cs", dest="Cs", help="C grid of the listwise methods (default 0.1,1,10,100)")
    parser.add_argument("--gd-iter", type=int, default=2000, dest="gd_iter",
                        help="iterations of RSVM-IR-GD (default 2000)")
    parser.add_argument("--max-iter", type=int, dest="max_iter",
                        help="iteration (cutting_plane: oracle-call) cap of every fit but rsvm-ir-gd's (--gd-iter) "
                             "(default: each solver's work limit; a fit it stops counts with its certified gap)")
    parser.add_argument("--select", default="ndcg@10", help="validation metric that picks parameters "
                                                            "(default ndcg@10)")
    parser.add_argument("--k", default="1,3,5,10", help="cut-offs of NDCG@k and P@k (default 1,3,5,10)")
    parser.add_argument("--relevant", type=float, default=1, help="grade >= this is relevant for MAP, P@k "
                                                                  "(default 1)")
    parser.add_argument("--baseline", default="ranksvm", help="method the sign tests compare with "
                                                              "(default ranksvm; 'none' for all pairs)")
    parser.add_argument("--out", metavar="DIR", help="write results.csv, per_query.csv, selection.csv, "
                                                     "sign_tests.csv and report.md here")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the results of an earlier cv in --out, or write into an --out folder that "
                             "another command (e.g. compare) owns or that holds other files")
    parser.add_argument("--no-progress", action="store_true", dest="no_progress", help="no progress bar")


def _floats(text, what):
    try:
        return [float(v) for v in split(text)]
    except ValueError:
        raise CvxrankError(f"{what} must be comma-separated numbers, got {text!r}") from None


def splits_from_args(args):
    """The splits the data options describe, and a one-line description."""
    from cvxrank.data import load_letor
    from cvxrank.datasets import make_ranking
    from cvxrank.experiments.cv import holdout_split, letor_folds, query_folds

    if args.test and not args.train:
        raise CvxrankError("--test needs --train")
    if args.folds:
        return letor_folds(args.folds), f"LETOR folds in {args.folds}"
    if args.train:
        if not args.test:
            raise CvxrankError("--train needs --test")
        train, test = load_letor([args.train, args.test])
        return holdout_split(train, test, random_state=args.seed), \
            f"train {args.train} (20% of its queries validate), test {args.test}"
    if args.data:
        return query_folds(load_letor(args.data), args.n_folds, random_state=args.seed), \
            f"{args.data} in {args.n_folds} query folds"
    data = make_ranking(n_queries=args.queries, n_features=args.features, n_grades=args.grades,
                        noise=args.noise, random_state=args.seed)
    return query_folds(data, args.n_folds, random_state=args.seed), \
        (f"generated data (make_ranking: {args.queries} queries, {args.features} features, {args.grades} grades, "
         f"noise {args.noise:g}, seed {args.seed}) in {args.n_folds} query folds")


def run(args) -> int:
    from cvxrank._io import check_outputs, writing_into
    from cvxrank.experiments.cv import DEFAULT_METHODS, cross_validate, method_labels
    from cvxrank.reporting import markdown_table

    check_outputs([], [args.data, args.train, args.test, args.folds], folders=[args.out])
    if args.max_iter is not None:
        check_option("max-iter", args.max_iter, MAX_ITER)
    if args.out:  # checked now, written after the (maybe long) cross-validation
        _check_out(args.out, args.overwrite)

    try:
        ks = tuple(int(k) for k in split(args.k))
    except ValueError:
        raise CvxrankError(f"--k must be comma-separated integers, got {args.k!r}") from None
    methods = split(args.methods) or list(DEFAULT_METHODS)
    method_labels(methods, "--methods")  # before reading the data
    grids = {}
    if args.lams:
        grids["pairwise"] = {"lam": _floats(args.lams, "--lams")}
    if args.Cs:
        cs = _floats(args.Cs, "--Cs")
        grids["listmle"] = {"C": cs}
        grids["cs-rglist"] = {"C": cs, "pcf": [1.5, 2.0]}
    params = {"rsvm-ir-gd": {"max_iter": args.gd_iter}} if "rsvm-ir-gd" in methods else {}
    baseline = None if args.baseline == "none" else args.baseline
    if baseline is not None and baseline not in methods:
        raise CvxrankError(f"--baseline {baseline} is not among --methods {','.join(methods)}")
    splits, desc = splits_from_args(args)
    result = cross_validate(splits, methods, grids=grids or None, params=params, ks=ks, relevant=args.relevant,
                            select_by=args.select, random_state=args.seed,
                            progress=False if args.no_progress else None, baseline=baseline,
                            max_iter=args.max_iter)
    result.meta["description"] = f"Data: {desc}. Command: `cvxrank cv ...` (cvxrank.experiments.cv)."
    print(f"cross-validation on {desc}")
    print(markdown_table(result.summary.assign(chosen=result.chosen)))
    for line in result.edge_warnings():
        print(f"warning: {line}")
    tests = result.sign_tests("ndcg@1", baseline=result.meta["baseline"])
    if len(tests):
        print("\nsign tests on per-query NDCG@1:")
        print(markdown_table(tests.set_index("method"), floatfmt=".3g"))
    if args.out:
        _check_out(args.out, args.overwrite)  # again: another cv may have written it meanwhile
        with writing_into(args.out, "cv", overwrite=args.overwrite):  # all the files or none
            for path in result.save(args.out):
                print(f"wrote {path}")
    return 0


def _check_out(out, overwrite: bool) -> None:
    """Refuse an ``--out`` of another command or of user files (:func:`cvxrank._io.claim_folder`), or one
    holding the results of an earlier ``cvxrank cv``, unless ``overwrite``."""
    from cvxrank._io import claim_folder, folder_owner
    from cvxrank.experiments.cv import SAVED_FILES

    claim_folder(out, "cv", overwrite=overwrite, create=False)
    if overwrite or not os.path.isdir(out) or folder_owner(out) != "cv":
        return
    earlier = sorted(n for n in SAVED_FILES if os.path.lexists(os.path.join(out, n)))
    if earlier:
        raise CvxrankError(f"{out} holds the results of an earlier 'cvxrank cv' ({', '.join(earlier[:3])}"
                           f"{', ...' if len(earlier) > 3 else ''}); pass --overwrite to replace them, or choose "
                           "another folder")
