"""Benchmark pair-free training on click logs against the same solver on graded data of the same size.

Each instance generates documents with grades, simulates a click log on them
(:func:`cvxrank.clicks.make_clicks`: the position-based model, the first feature as the production
ranker, the top ``--top-k`` shown, ``p_k = (1/k)^eta``), and in one process solves

  clicks   solve(click_problem(log, "propensity", lam), SOLVER): Propensity SVM-Rank on the log's
           preference groups (costs per document), pair-free (cvxrank.native.document_oracle);
  graded   solve(RankingProblem(graded, lam), SOLVER) on the same documents (those the groups hold,
           i.e. shown in a session with a click) with their grades and queries: tau = mu = 1;

each to a certified relative gap of --tol, with SOLVER cutting_plane (hinge) and truncated_newton
(squared hinge). The ratio is clicks time / graded time; the target is 2. Memory is the peak
resident set size during the solve above its value before (Linux's VmHWM, reset first).

Instances: "web" is make_web_like() (1,000,000 documents, 136 features, 5 grades) with --sessions
sessions (default 1,000,000); "letor" the real sample ../shared/data/lightgbm_rank/train.letor
(3,005 documents, 300 sparse features) with clicks simulated on it; "hard" make_ranking with long
queries and long shown lists (--hard, default 100 queries of 150-250 documents, 100 features, the
top 100 shown: groups of 100 documents, ~10,000 pairs each).
"""

from __future__ import annotations

import gc
import os
import time

from cvxrank._args import split
from cvxrank._io import write_json

HELP = "pair-free click training (Propensity SVM-Rank) vs the same solver on graded data of the same size"
EPILOG = """examples:
  cvxrank bench clicks                                  # web (1M sessions), letor, hard: minutes, ~2 GB
  cvxrank bench clicks --instances letor,hard --hard-sessions 20000
  cvxrank bench clicks --instances web --web-queries 2000 --sessions 200000 --solvers truncated_newton
"""

INSTANCES = ("web", "letor", "hard")
SOLVERS = ("cutting_plane", "truncated_newton")
LETOR_SAMPLE = "../shared/data/lightgbm_rank/train.letor"
#: The target: pair-free click training within this factor of the same solver's time on the graded data.
TARGET_RATIO = 2.0


def add_arguments(parser) -> None:
    parser.add_argument("--instances", default=",".join(INSTANCES), metavar="I1,I2",
                        help=f"any of {','.join(INSTANCES)} (default all)")
    parser.add_argument("--solvers", default=",".join(SOLVERS), metavar="S1,S2",
                        help="cutting_plane (hinge), truncated_newton (squared hinge); default both")
    parser.add_argument("--sessions", type=int, default=1_000_000, help="web and letor: sessions (default 1000000)")
    parser.add_argument("--web-queries", type=int, default=10_000, help="web: queries of ~100 documents (default 10000)")
    parser.add_argument("--top-k", type=int, default=10, help="web and letor: results shown per session (default 10)")
    parser.add_argument("--letor", default=LETOR_SAMPLE, metavar="PATH", help=f"letor: the file (default {LETOR_SAMPLE})")
    parser.add_argument("--hard", default="100,150,250,100,100", metavar="Q,MIN,MAX,N,K",
                        help="hard: make_ranking with Q queries of MIN..MAX documents, N features, the top K shown "
                             "(default 100,150,250,100,100)")
    parser.add_argument("--hard-sessions", type=int, default=100_000, help="hard: sessions (default 100000)")
    parser.add_argument("--eta", type=float, default=1.0, help="examination p_k = (1/k)^eta (default 1)")
    parser.add_argument("--lam", type=float, default=0.5, help="lambda of (9) for both problems (default 0.5: C = 1)")
    parser.add_argument("--tol", type=float, default=1e-6, help="certified relative gap (default 1e-6)")
    parser.add_argument("--seed", type=int, default=0, help="data and click seed (default 0)")
    parser.add_argument("--json", metavar="PATH", help="write the rows as JSON")


def _peak(fn):
    """``(result, seconds, peak RSS increase in bytes)`` of ``fn()``."""
    from cvxrank._memory import peak_rss, reset_peak_rss

    gc.collect()
    base = reset_peak_rss()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    return out, seconds, max(peak_rss() - base, 0)


def _instance(name, args):
    """``(data, log, title)`` of an instance, with the time each step took."""
    from cvxrank.clicks import make_clicks
    from cvxrank.datasets import make_ranking, make_web_like

    t0 = time.perf_counter()
    top_k, sessions = args.top_k, args.sessions
    if name == "web":
        data = make_web_like(n_queries=args.web_queries, random_state=args.seed)
    elif name == "letor":
        from cvxrank.data import load_letor

        data = load_letor(args.letor)
    else:
        q, lo, hi, n, top_k = (int(v) for v in split(args.hard))
        sessions = args.hard_sessions
        data = make_ranking(n_queries=q, docs_per_query=(lo, hi), n_features=n, random_state=args.seed)
    t1 = time.perf_counter()
    log = make_clicks(data, eta=args.eta, n_sessions=sessions, top_k=top_k, random_state=args.seed)
    t2 = time.perf_counter()
    print(f"\n== {name}: {data.n_documents:,} documents, {data.n_features} features, {data.n_queries:,} queries; "
          f"{log.n_sessions:,} sessions (top {top_k}, eta {args.eta:g}), {log.n_clicks:,} clicks; "
          f"generated in {t1 - t0:.1f} s, clicks simulated in {t2 - t1:.1f} s", flush=True)
    return data, log


def _solve(problem, solver, tol):
    import warnings

    from cvxrank.exceptions import InaccurateSolutionWarning
    from cvxrank.solvers import solve

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        return solve(problem, solver, tol=tol)


def _row(name, solver, clicks, graded, problem, graded_problem, groups_seconds):
    (a, ta, ma), (b, tb, mb) = clicks, graded
    return {"instance": name, "solver": solver, "documents": int(a.extras["n_documents"]),
            "groups": int(problem.groups.n_groups), "members": int(a.extras["n_members"]),
            "click_pairs": int(problem.n_pairs), "graded_pairs": int(graded_problem.n_pairs),
            "groups_seconds": groups_seconds,
            "clicks_seconds": ta, "clicks_calls": int(a.extras["oracle_calls"]), "clicks_gap": a.relative_gap,
            "clicks_status": a.status, "clicks_memory": ma,
            "graded_seconds": tb, "graded_calls": int(b.extras["oracle_calls"]), "graded_gap": b.relative_gap,
            "graded_status": b.status, "graded_memory": mb, "ratio": ta / tb if tb > 0 else float("inf")}


def _print(r):
    from cvxrank._memory import format_bytes

    print(f"  {r['solver']:16s} clicks {r['clicks_seconds']:8.3f} s  {r['clicks_calls']:5d} calls  gap "
          f"{r['clicks_gap']:.1e} {r['clicks_status']:9s} mem {format_bytes(r['clicks_memory']):>9s} | graded "
          f"{r['graded_seconds']:8.3f} s  {r['graded_calls']:5d} calls  gap {r['graded_gap']:.1e} "
          f"{r['graded_status']:9s} mem {format_bytes(r['graded_memory']):>9s} | ratio {r['ratio']:6.2f} "
          f"({'met' if r['ratio'] <= TARGET_RATIO else 'NOT met'})", flush=True)


def check_args(args):
    from cvxrank._io import check_outputs
    from cvxrank._validation import POSITIVE_INT, SEED, TOL, Interval
    from cvxrank.bench._checks import check_lam_option, check_option
    from cvxrank.exceptions import ValidationError

    instances = split(args.instances) or []
    solvers = split(args.solvers) or []
    for what, given, valid in (("instances", instances, INSTANCES), ("solvers", solvers, SOLVERS)):
        bad = [v for v in given if v not in valid]
        if bad or not given:
            raise ValidationError(f"--{what} takes any of {','.join(valid)}, got {getattr(args, what)!r}")
    for flag in ("sessions", "web-queries", "top-k", "hard-sessions"):
        check_option(flag, getattr(args, flag.replace("-", "_")), POSITIVE_INT)
    hard = split(args.hard) or []
    if len(hard) != 5 or not all(v.isdigit() and int(v) > 0 for v in hard) or int(hard[1]) > int(hard[2]):
        raise ValidationError(f"--hard must be Q,MIN,MAX,N,K (positive integers, MIN <= MAX), got {args.hard!r}")
    check_option("eta", args.eta, Interval(0, None, closed="left"))
    check_lam_option("lam", args.lam)
    check_option("tol", args.tol, TOL)
    check_option("seed", args.seed, SEED)
    if "letor" in instances and not os.path.exists(args.letor):
        raise ValidationError(f"--letor {args.letor!r}: no such file (or leave letor out of --instances)")
    check_outputs([args.json])
    return instances, solvers


def run(args) -> int:
    from threadpoolctl import threadpool_limits

    from cvxrank.clicks import click_problem
    from cvxrank.data import RankingData
    from cvxrank.native.document_oracle import DocumentOracle
    from cvxrank.problem import RankingProblem
    from cvxrank.study.report import environment
    from cvxrank.variants import Variant

    instances, solvers = check_args(args)
    env = environment()
    print(f"pair-free click training vs the same solver on the graded documents; lam {args.lam:g}, tol {args.tol:g}; "
          f"CPU {env['cpu']} ({env['cores']} cores), BLAS 1 thread; {time.strftime('%Y-%m-%d')}")
    rows = []
    with threadpool_limits(1):
        for name in instances:
            data, log = _instance(name, args)
            t0 = time.perf_counter()
            problem = click_problem(log, "propensity", lam=args.lam)
            groups = problem.groups
            groups_seconds = time.perf_counter() - t0
            shown = DocumentOracle.from_groups(groups).documents  # the documents the click problem reads
            graded = RankingData(data.X[shown], data.y[shown], qid=data.qid[shown])
            graded_problem = RankingProblem(graded, lam=args.lam)
            print(f"  click groups {groups.n_groups:,} ({groups.n_members:,} members, built in {groups_seconds:.1f} s); "
                  f"explicit form: {problem.n_pairs:,} pairs (counted, not formed); graded: {graded.n_documents:,} "
                  f"documents, {graded_problem.n_pairs:,} pairs", flush=True)
            for solver in solvers:
                variant = None if solver == "cutting_plane" else Variant(loss="squared_hinge")
                p = problem if variant is None else problem.with_variant(variant)
                g = graded_problem if variant is None else graded_problem.with_variant(variant)
                clicks = _peak(lambda p=p: _solve(p, solver, args.tol))
                grade = _peak(lambda g=g: _solve(g, solver, args.tol))
                rows.append(_row(name, solver, clicks, grade, problem, graded_problem, groups_seconds))
                _print(rows[-1])
            del data, log, problem, graded, graded_problem
    met = [r for r in rows if r["ratio"] <= TARGET_RATIO and r["clicks_status"] == "optimal"]
    print(f"\ntarget (clicks within {TARGET_RATIO:g}x of the graded time, certified {args.tol:g}): met in {len(met)} of "
          f"{len(rows)} runs")
    if args.json:
        write_json(args.json, {"rows": rows, "environment": env, "lam": args.lam, "tol": args.tol,
                               "sessions": args.sessions, "date": time.strftime("%Y-%m-%d")})
        print(f"wrote {args.json}")
    return 0
