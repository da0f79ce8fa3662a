"""Fit a ranker on a LETOR/SVMlight file and save it as a JSON model file.

Methods (the papers' names): ranksvm (RSVM), cs-ranksvm (cost-sensitive Ranking SVM, ECML 2006),
rsvm-ir-rank, rsvm-ir-query, rsvm-ir-qp (alias rsvm-ir) and rsvm-ir-gd (SIGIR 2006), listmle and
cs-rglist (listwise). The model file holds the weights, the settings, the feature count, the cvxrank
version and the solver's certified duality gap; `cvxrank predict` reads it.

Every solver runs within a work limit (iterations or oracle calls; --max-iter, default the solver's
own from cvxrank's registry: clarabel and ecos 100, osqp 100,000, scs 10,000, subgradient 300,000,
gd 5,000, cutting_plane 3,000 oracle calls), so every fit ends. The last line states the status and
the certified relative gap; a fit that its limit stopped short of --tol ends "status user_limit" and
says how to raise the limit. Exit code 3 then (the model is written, with its certified gap); 0 when
the solver finished on its own (status optimal, or optimal_inaccurate when its certificate falls
short of --tol, with a warning). --verbose shows the solver's progress."""

from __future__ import annotations

from cvxrank._validation import check
from cvxrank.cli._common import MAX_ITER, parse_mu, parse_tau
from cvxrank.exceptions import ValidationError

HELP = "fit a ranker on a LETOR file and save it as a JSON model"
EPILOG = """examples:
  cvxrank fit train.letor --model model.json                        # Ranking SVM, lambda = 1
  cvxrank fit train.letor --model m.json --method rsvm-ir --tau estimate --mu balanced --lam 0.1
  cvxrank fit train.letor --model m.json --method cs-ranksvm --tau 2-1=1,2-0=1,1-0=0.1
  cvxrank fit train.letor --model m.json --method cs-rglist --pcf 2 --C 10
  cvxrank fit train.letor --model m.json --solver osqp --formulation dual --tol 1e-4
  cvxrank fit big.letor --model m.json --solver cutting_plane --dtype float32   # X in float32: half the memory
  cvxrank fit --scheduler tcp://host:8786 shard-*.letor.gz --model m.json   # shards read on a dask cluster
  cvxrank fit --scheduler tcp://host:8786 part-*.parquet --model m.json --qid-column qid --label-column y
  cvxrank fit docs.letor --clicks clicks.txt --model m.json                 # Propensity SVM-Rank, eta by EM
  cvxrank fit docs.letor --clicks clicks.txt --model m.json --propensities 1 --clip 10

With --clicks LOG, TRAIN holds the documents the click log shows (its doc:ROW fields are 0-based rows
of TRAIN; grades are not used) and the ranker is cvxrank.estimators.ClickRankSVM: each clicked document
preferred to the others of its session, weighted 1/p of its position (Joachims et al., WSDM 2017),
or --rule skip_above (Joachims 2002). The click-log format: docs/clicks.md.
"""


def add_arguments(parser) -> None:
    parser.add_argument("train", metavar="TRAIN", nargs="+",
                        help="training data: a LETOR/SVMlight file with qid (with --scheduler: one file per shard, "
                             "LETOR or Parquet: .parquet/.pq files, one row per document)")
    parser.add_argument("--scheduler", metavar="ADDR",
                        help="fit on a dask cluster (tcp://host:8786): the workers read the TRAIN files, one shard "
                             "each, and the pair-free solver runs over them; X never reaches this process")
    frames = parser.add_argument_group("Parquet shards (with --scheduler)")
    frames.add_argument("--qid-column", metavar="NAME", dest="qid_column",
                        help="the query id column of the Parquet files (default qid)")
    frames.add_argument("--label-column", metavar="NAME", dest="label_column",
                        help="the grade column of the Parquet files (default y)")
    frames.add_argument("--features", metavar="A,B,...",
                        help="the feature columns, in order (default every other column; all files must then have "
                             "the same columns in the same order)")
    parser.add_argument("--model", metavar="PATH", required=True, help="where to write the JSON model")
    parser.add_argument("--method",
                        help="ranksvm (default), cs-ranksvm, rsvm-ir-rank, rsvm-ir-query, rsvm-ir-qp, rsvm-ir-gd, "
                             "listmle, cs-rglist")
    clicks = parser.add_argument_group("learning from clicks")
    clicks.add_argument("--clicks", metavar="LOG", help="train on this click log (TRAIN: the documents it shows)")
    clicks.add_argument("--rule", choices=("propensity", "skip_above"),
                        help="pairs from clicks (default propensity: clicked > every other shown document, weight 1/p)")
    clicks.add_argument("--propensities", metavar="estimate|log|ETA",
                        help="p_k: estimate (default, by --estimator), log (the log's p: fields) or ETA of (1/k)^ETA")
    clicks.add_argument("--estimator", choices=("em",), help="propensity estimator (default em; swap interventions "
                        "need their own log and ranker: cvxrank.estimators.ClickRankSVM.fit)")
    clicks.add_argument("--clip", type=float, help="clip the weights 1/p at this value (>= 1)")
    clicks.add_argument("--normalize", action="store_true",
                        help="lambda per unit of mean weighted loss (the weights divided by their sum)")
    parser.add_argument("--verbose", action="store_true",
                        help="show the solver's progress (a CVXPY solver's own log, a line per certificate check "
                             "of the native solvers)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="storage of the features (default float64); float32 halves it, the solvers still "
                             "compute in float64 and certify the solution for the float32 values")
    add_ranker_arguments(parser)


def add_ranker_arguments(parser) -> None:
    """Options every ranker-fitting command shares (fit, cv)."""
    parser.add_argument("--lam", type=float, help="lambda of the hinge form (9) (default 1)")
    parser.add_argument("--C", type=float, dest="C", help="QP cost C instead of lambda (lambda = 1/(2C))")
    parser.add_argument("--tau", metavar="H-L=V,...|estimate",
                        help="tau per grade pair, e.g. 2-1=1,2-0=1,1-0=0.1, or 'estimate' (Fig. 1 heuristic); "
                             "default estimate for cs-ranksvm and rsvm-ir-qp/-rank/-gd; ranksvm "
                             "(every pair weight 1) and rsvm-ir-query take none")
    parser.add_argument("--mu", metavar="none|balanced",
                        help="query weights: none or balanced (10); default balanced for rsvm-ir-qp/-query/-gd; "
                             "ranksvm, cs-ranksvm and rsvm-ir-rank take none")
    parser.add_argument("--pcf", type=float, help="cs-rglist: penalty base pCf >= 1 (U = pCf^grade; default 3)")
    parser.add_argument("--loss", choices=("hinge", "squared_hinge"),
                        help="pairwise methods: the loss of a pair's margin shortfall (default hinge, the papers')")
    parser.add_argument("--margin", choices=("grade_difference", "gain_difference"),
                        help="pairwise methods: rescale each pair's margin (default 1, the papers')")
    parser.add_argument("--l1", type=float, help="pairwise methods: elastic-net weight on ||w||_1 (default 0)")
    parser.add_argument("--lower", type=float, help="pairwise methods: lower bound on every weight, e.g. 0")
    parser.add_argument("--upper", type=float, help="pairwise methods: upper bound on every weight")
    parser.add_argument("--solver", help="a solver of cvxrank.available_solvers(), which include any solver CVXPY has "
                        "installed that can take a QP, e.g. highs (listwise methods: "
                        "cvxrank.available_solvers('listwise')), or the policy auto (default) or fallback")
    parser.add_argument("--formulation", help="auto (default), primal, lifted, dual or hinge")
    parser.add_argument("--tol", type=float, help="certified relative gap (default: the solver's own, "
                        "cvxrank.solvers.registry.SolverSpec.default_tol)")
    parser.add_argument("--max-iter", type=int, dest="max_iter",
                        help="iteration (cutting_plane: oracle-call) cap of the solver (default: its work limit, "
                             "cvxrank.solvers.registry.SolverSpec.work_limit; a run it stops ends as user_limit)")
    parser.add_argument("--seed", type=int, help="random_state of the tau estimation")


def ranker_params(args) -> dict:
    """The estimator parameters the options of :func:`add_ranker_arguments` give (unset ones omitted)."""
    params = {"lam": args.lam, "C": args.C, "tau": parse_tau(args.tau), "pcf": args.pcf, "solver": args.solver,
              "formulation": args.formulation, "tol": args.tol, "max_iter": args.max_iter,
              "random_state": args.seed, "loss": args.loss, "margin": args.margin, "l1": args.l1,
              "lower": args.lower, "upper": args.upper}
    params = {k: v for k, v in params.items() if v is not None}
    if args.max_iter is not None:
        check("--max-iter", args.max_iter, MAX_ITER)
    from cvxrank.costs import check_C, check_lam

    if args.C is not None:  # named as typed, before the data is read
        check_C(args.C, "--C")
    if args.lam is not None:
        check_lam(args.lam, "--lam")
    if args.mu is not None:
        params["mu"] = parse_mu(args.mu)  # None ("none") is a value here, not "unset"
    if any(v is not None for v in (args.l1, args.lower, args.upper)):
        _variant_params(args, params)
    return params


def _variant_params(args, params: dict) -> None:
    """Check ``--l1``, ``--lower`` and ``--upper`` before the data is read (the ranges of
    :class:`cvxrank.variants.Variant`, named as typed), and drop an infinite bound: ``--lower=-inf`` and
    ``--upper=inf`` are no bound, as in the Variant, and the model file stores None for them."""
    from cvxrank.exceptions import ValidationError
    from cvxrank.variants import Variant

    for flag in ("l1", "lower", "upper"):
        value = getattr(args, flag)
        if value is None:
            continue
        try:
            kept = getattr(Variant(**{flag: value}), flag)
        except ValidationError as exc:
            raise ValidationError(f"--{exc}") from None
        if kept is None:
            params.pop(flag, None)


def _click_params(args) -> dict:
    """The ClickRankSVM parameters of ``--clicks`` and its options; options of graded methods refused."""
    graded = [flag for flag, value in (("--method", args.method), ("--tau", args.tau), ("--mu", args.mu),
                                       ("--pcf", args.pcf), ("--margin", args.margin), ("--seed", args.seed))
              if value is not None]
    if graded:
        raise ValidationError(f"{', '.join(graded)} {'is' if len(graded) == 1 else 'are'} for graded data; with "
                              "--clicks the ranker is ClickRankSVM (--rule, --propensities, --clip, --normalize)")
    params = {k: v for k, v in ranker_params(args).items() if k in ("lam", "C", "solver", "formulation", "tol",
                                                                      "max_iter", "loss", "l1", "lower", "upper")}
    if params.keys() & {"loss", "l1", "lower", "upper"}:
        raise ValidationError("--loss, --l1, --lower and --upper are for graded data; ClickRankSVM solves the "
                              "papers' hinge problem")
    if args.rule is not None:
        params["rule"] = args.rule
    if args.propensities is not None:
        text = args.propensities.strip().lower()
        if text in ("estimate", "log"):
            params["propensities"] = text
        else:
            try:
                params["propensities"] = float(text)
            except ValueError:
                raise ValidationError(f"--propensities must be estimate, log or a number eta >= 0, got "
                                      f"{args.propensities!r}") from None
    if args.estimator is not None:
        params["estimator"] = args.estimator
    if args.clip is not None:
        params["clip"] = args.clip
    if args.normalize:
        params["normalize"] = True
    return params


def _run_clicks(args) -> int:
    """``fit --clicks``: ClickRankSVM on the click log, the documents from TRAIN."""
    import numpy as np

    from cvxrank._io import check_outputs
    from cvxrank.clicks import read_clicks
    from cvxrank.data import load_letor
    from cvxrank.estimators import ClickRankSVM

    check_outputs([args.model], [args.train, args.clicks])
    model = ClickRankSVM(**_click_params(args), **({"verbose": True} if args.verbose else {}))
    documents = load_letor(args.train, dtype=np.dtype(args.dtype))
    log = read_clicks(args.clicks, documents)
    model.fit(log)
    s = model.result_
    print(f"ClickRankSVM ({model.rule}) on {args.clicks}: {model.n_sessions_} sessions, {model.n_clicks_} clicks, "
          f"{model.n_pairs_} pairs over {documents.n_documents} documents of {args.train}")
    if model.eta_ is not None:
        print(f"propensities: p_k = (1/k)^{model.eta_:.4g}"
              + (" (estimated)" if model.propensity_estimate_ is not None else ""))
    print(f"solver {s.solver} ({s.formulation}): status {s.status}, certified relative gap {s.relative_gap:.2e}, "
          f"{s.setup_time + s.solve_time:.2f} s")
    model.save(args.model)
    print(f"wrote {args.model}")
    print(status_line(model.result_))
    return 3 if model.result_.status == "user_limit" else 0


def run(args) -> int:
    if args.scheduler is not None:
        return _run_dask(args)
    for flag in ("qid_column", "label_column", "features"):
        if getattr(args, flag) is not None:
            raise ValidationError(f"--{flag.replace('_', '-')} is for Parquet shards on a dask cluster: give "
                                  "--scheduler ADDR")
    if len(args.train) > 1:
        raise ValidationError("several TRAIN files are shards for a dask cluster: give --scheduler ADDR")
    args.train = args.train[0]
    if args.clicks is not None:
        return _run_clicks(args)
    for flag in ("rule", "propensities", "estimator", "clip", "normalize"):
        if getattr(args, flag) not in (None, False):
            raise ValidationError(f"--{flag} is for click logs: give --clicks LOG")
    args.method = args.method or "ranksvm"
    import numpy as np

    from cvxrank.data import load_letor
    from cvxrank.estimators.methods import make_ranker, method_label
    from cvxrank.metrics import ndcg_score

    from cvxrank._io import check_outputs

    check_outputs([args.model], [args.train])  # before the (maybe long) fit, not after
    model = make_ranker(args.method, **ranker_params(args), **({"verbose": True} if args.verbose else {}))
    data = load_letor(args.train, dtype=np.dtype(args.dtype))
    # The training NDCG is reported after the fit: grades it cannot score (2**y overflowing) fail
    # here, before a solve that may take minutes or fail on the same data less clearly.
    ndcg_score(data.y, np.zeros(data.n_documents), data.qid, k=model.score_k)
    model.fit(data)
    train_ndcg = model.score(data)  # before saving: a failure here must not leave a model file behind
    s = model.solve_summary_
    print(f"{method_label(args.method)} on {args.train}: {data.n_documents} documents, {data.n_queries} queries, "
          f"{data.n_features} features")
    print(f"solver {s.get('solver')} ({s.get('formulation')}): status {s.get('status')}, "
          f"certified relative gap {s.get('relative_gap', float('nan')):.2e}, "
          f"{s.get('setup_time', 0) + s.get('solve_time', 0):.2f} s")
    if getattr(model, "tau_", None):
        print("tau: " + ", ".join(f"{hi}-{lo}={v:.4g}" for (hi, lo), v in sorted(model.tau_.items())))
    print(f"training NDCG@10 {train_ndcg:.4f}")
    model.save(args.model)
    print(f"wrote {args.model}")
    print(status_line(model.result_))
    return 3 if model.result_.status == "user_limit" else 0


def _run_dask(args) -> int:
    """``--scheduler``: the TRAIN files read on the cluster's workers (:meth:`fit_files`)."""
    for flag in ("clicks", "rule", "propensities", "estimator", "clip"):
        if getattr(args, flag) is not None:
            raise ValidationError(f"--{flag} is not for --scheduler: a click log is fitted in memory")
    args.method = args.method or "ranksvm"
    try:
        from distributed import Client
    except ImportError:
        raise ValidationError("--scheduler needs dask.distributed: pip install 'cvxrank[dask]'") from None
    from cvxrank._io import check_outputs
    from cvxrank.estimators.methods import make_ranker, method_label
    from cvxrank.native.dask_files import PARQUET_SUFFIXES

    columns = {"qid": args.qid_column or "qid", "label": args.label_column or "y",
               "features": None if args.features is None else [c.strip() for c in args.features.split(",")]}
    if not all(p.lower().endswith(PARQUET_SUFFIXES) for p in args.train):
        given = [f"--{f.replace('_', '-')}" for f in ("qid_column", "label_column", "features")
                 if getattr(args, f) is not None]
        if given:
            raise ValidationError(f"{', '.join(given)}: for Parquet TRAIN files (.parquet, .pq); LETOR files carry "
                                  "their own fields")
    check_outputs([args.model], args.train)
    model = make_ranker(args.method, **ranker_params(args), **({"verbose": True} if args.verbose else {}))
    try:
        client = Client(args.scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise ValidationError(f"cannot reach the dask scheduler at {args.scheduler}: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    try:
        model.fit_files(args.train, client=client, dtype=args.dtype, **columns)
    finally:
        client.close()
    res = model.result_
    print(f"{method_label(args.method)} on {len(args.train)} shards via {args.scheduler}: {res.n_documents} documents, "
          f"{res.n_pairs} pairs, {model.n_features_in_} features")
    print(f"solver cutting_plane (pairfree, dask): status {res.status}, certified relative gap "
          f"{res.relative_gap:.2e}, {res.oracle_calls} oracle calls, {res.setup_time + res.solve_time:.2f} s")
    model.save(args.model)
    print(f"wrote {args.model}")
    print(f"status {res.status}, certified relative gap {res.relative_gap:.2e}")
    return 0 if res.status == "optimal" else 3


def status_line(result) -> str:
    """The last line of ``fit``: the status, the certified relative gap against ``tol`` and, for a run a limit
    stopped, which limit it was and how to raise it."""
    from cvxrank.solvers.registry import SOLVERS

    line = f"status {result.status}: certified relative gap {result.relative_gap:.2e}"
    if result.status == "optimal":
        return line + f" <= tol {result.tol:.0e}"
    line += f" > tol {result.tol:.0e}"
    spec = SOLVERS.get(result.solver)
    unit = spec.work_unit if spec is not None else "iterations"
    cap = result.extras.get("work_limit")
    work = spec.work_done(result) if spec is not None else result.iterations
    if result.status == "user_limit" and cap is not None and work is not None and work >= cap:
        return (line + f"; {result.solver} stopped at its work limit of {cap} {unit} "
                f"({result.extras.get('work_limit_option')}): raise it with --max-iter, or try another --solver")
    if result.status == "user_limit":
        return line + f"; {result.solver} stopped at a limit after {work} {unit}: raise it, or try another --solver"
    return (line + f"; {result.solver} stopped short of it (its own status {result.solver_status}): try another "
            "--solver, a larger --tol or --max-iter")
