"""Reproduce the click experiment of Joachims, Swaminathan and Schnabel (WSDM 2017, Propensity
SVM-Rank): clicks are simulated on graded training data with position bias (1/k)^eta, and the naive
click model, the propensity-weighted model with the true and with an estimated eta, a production
ranker and the full-information model are scored by NDCG@10 on the true grades of a test split.
Every fit is certified. Exit code 1 if a fit is not certified optimal."""

from __future__ import annotations

import os

from cvxrank._figures import figure_files
from cvxrank.cli._common import write_json
from cvxrank.exceptions import CvxrankError

HELP = "reproduce the WSDM 2017 click experiment (Propensity SVM-Rank) on LETOR or generated data"
EPILOG = """examples:
  cvxrank clicks                                      # generated data, eta 0.5,1,2, 1k/4k/16k sessions
  cvxrank clicks --train ../shared/data/lightgbm_rank/train.letor --test ../shared/data/lightgbm_rank/test.letor
  cvxrank clicks --etas 1 --sessions 2000 --repeats 1 --json clicks.json --plots figures/
  cvxrank clicks --estimator em --models naive,skip_above,propensity_true,propensity_estimated

--plots DIR writes clicks_ndcg (NDCG@10 against sessions, one panel per eta), as .png and .pdf.
"""

#: The figure ``--plots`` draws (file stem) and the files it writes.
FIGURE_STEMS = ("clicks_ndcg",)
FIGURES = tuple(figure_files(FIGURE_STEMS))


def add_arguments(parser) -> None:
    from cvxrank.experiments._defaults import CLICK_ETAS, CLICK_LAM, CLICK_SESSIONS

    parser.add_argument("--train", metavar="PATH", help="graded training data (LETOR/SVMlight with qid); "
                        "default: generated data")
    parser.add_argument("--test", metavar="PATH", help="graded test data with the same features (needed with --train)")
    parser.add_argument("--n-features", type=int, dest="n_features",
                        help="features of --train/--test (default: the largest index of both files)")
    parser.add_argument("--etas", metavar="E,...", default=",".join(f"{e:g}" for e in CLICK_ETAS),
                        help=f"position-bias severities eta of p_k = (1/k)^eta (default {','.join(map(str, CLICK_ETAS))})")
    parser.add_argument("--sessions", metavar="N,...", default=",".join(map(str, CLICK_SESSIONS)),
                        help=f"sessions per simulated log (default {','.join(map(str, CLICK_SESSIONS))})")
    parser.add_argument("--repeats", type=int, default=2, help="fresh logs per cell (default 2)")
    parser.add_argument("--lam", type=float, default=CLICK_LAM,
                        help=f"lambda per unit of mean weighted loss, every model (default {CLICK_LAM:g})")
    parser.add_argument("--estimator", choices=("swap", "em"), default="swap",
                        help="how the estimated-eta model estimates eta (default swap interventions)")
    parser.add_argument("--models", metavar="M,...",
                        help="click models: naive, skip_above, propensity_true, propensity_estimated "
                             "(default naive,propensity_true,propensity_estimated; the production ranker and the "
                             "full-information model are always fitted)")
    parser.add_argument("--noise", type=float, default=0.1,
                        help="click probability of an examined non-relevant document (default 0.1)")
    parser.add_argument("--solver", default="clarabel", help="solver of every fit (default clarabel)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulation (default 0)")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--plots", metavar="DIR", help="write the figure (PNG and PDF) into DIR")


def _numbers(text: str, flag: str, kind=float) -> tuple:
    try:
        values = tuple(kind(p) for p in text.split(","))
    except ValueError:
        raise CvxrankError(f"{flag} must be {'integers' if kind is int else 'numbers'} separated by commas, "
                           f"got {text!r}") from None
    return values


def _data(args):
    from cvxrank.data import load_letor
    from cvxrank.experiments.clicks import make_click_data

    if (args.train is None) != (args.test is None):
        raise CvxrankError("--train and --test go together (graded training and test splits)")
    if args.train is None:
        if args.n_features is not None:
            raise CvxrankError("--n-features is for --train/--test files")
        return (*make_click_data(n_features=100, random_state=args.seed), "generated data")
    if args.n_features is None:
        train, test = load_letor([args.train, args.test])
    else:
        train, test = (load_letor(p, n_features=args.n_features) for p in (args.train, args.test))
    return train, test, os.path.basename(args.train)


def run(args) -> int:
    from cvxrank._io import check_outputs
    from cvxrank.cli.simulate import _check_plot_dir
    from cvxrank.experiments.clicks import run_click_experiment

    etas, sessions = _numbers(args.etas, "--etas"), _numbers(args.sessions, "--sessions", int)
    models = tuple(m.strip() for m in args.models.split(",")) if args.models else None
    folder = _check_plot_dir(args.plots) if args.plots else None
    inputs = [p for p in (args.train, args.test) if p]
    check_outputs([args.json] if args.json else [], inputs)
    train, test, name = _data(args)
    kwargs = {"models": models} if models else {}
    result = run_click_experiment(train, test, etas=etas, n_sessions=sessions, repeats=args.repeats, lam=args.lam,
                                  estimator=args.estimator, noise=args.noise, solver=args.solver,
                                  random_state=args.seed, dataset=name, **kwargs)
    print(result.report())
    if args.json:
        write_json(args.json, result.to_json())
        print(f"wrote {args.json}")
    if folder:
        from cvxrank.plots import save_figures
        from cvxrank.plots.clicks import plot_click_experiments

        os.makedirs(folder, exist_ok=True)
        axes = plot_click_experiments(result)
        for path in save_figures({FIGURE_STEMS[0]: axes[0].figure}, folder):
            print(f"wrote {path}")
    return 0 if (result.frame["status"] == "optimal").all() else 1
