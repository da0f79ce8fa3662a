"""Benchmark a lambda path solved through CVXPY Parameters (DPP) against building and solving each point.

For each (formulation, solver) configuration, in this one process with single-threaded BLAS:
  path    cvxrank.path.PathSolver: the problem is built and compiled once, then each of the
          --points lambda values (log-spaced from --lam-max down to --lam-min) only sets the
          parameter C = weights/(2 lambda) (weights and lambda for the hinge form) and re-solves,
          warm-started as cvxrank.path.WARM_START says (OSQP, SCS on the scale form; not Clarabel);
  fresh   for each lambda: cvxrank.build(...) + cvxrank.solve(...), a new problem every time.
The configuration native:cutting_plane compiles nothing (it reads a cvxrank.RankingProblem): its
path differs from its fresh solves only by starting each point from the previous w. It is not a
DPP re-solve, and its row shows what a warm start alone is worth.
Both certify every solution (cvxrank's duality gap) and must agree (objective and w). The time of
each mode is split into build (CVXPY expressions), compile (CVXPY's compilation, or parameter
update on a re-solve), solve (the solver's own time) and the rest (certificate, Python). DPP can
only remove build and compile (and warm starts can shorten the solves); the ratio fresh/path is
reported as measured, next to its bound without warm starts, fresh / (fresh - build - compile):
the ratio a path would reach if its re-solves cost nothing but the fresh solves and certificates.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from cvxrank._args import positive_ints, split
from cvxrank._io import write_json

HELP = "lambda path by DPP re-solves vs building and solving each point, with the bound DPP can reach"
EPILOG = """examples:
  cvxrank bench path                                  # default configurations, 10 points
  cvxrank bench path --configs lifted:clarabel --queries 4
  cvxrank bench path --instance ranking --queries 2,8,32   # one table per size
  cvxrank bench path --instance ranking --queries 4 --configs hinge:ecos,dual:clarabel
  cvxrank bench path --json path.json --report path.md
"""

#: Least ratio fresh / path wall time a DPP path is held to.
TARGET = 3.0
DEFAULT_CONFIGS = ("lifted:clarabel,primal:clarabel,dual:clarabel,hinge:clarabel,lifted:ecos,dual:ecos,hinge:ecos,"
                   "lifted:scs,lifted:osqp,native:cutting_plane")


def add_arguments(parser) -> None:
    parser.add_argument("--instance", choices=("ohsumed", "ranking"), default="ohsumed",
                        help="ohsumed: make_ohsumed_like (45 features, ~150 documents a query); ranking: "
                             "make_ranking with 20 features and 20-40 documents a query (default ohsumed)")
    parser.add_argument("--queries", default="1", metavar="N[,N...]",
                        help="queries of the instance; a comma list runs every configuration at each size "
                             "(default 1)")
    parser.add_argument("--points", type=int, default=10, help="lambda values (default 10)")
    parser.add_argument("--lam-max", type=float, default=10.0, dest="lam_max", help="largest lambda (default 10)")
    parser.add_argument("--lam-min", type=float, default=0.1, dest="lam_min", help="smallest lambda (default 0.1)")
    parser.add_argument("--configs", default=DEFAULT_CONFIGS, metavar="F:S,...",
                        help=f"formulation:solver pairs (default {DEFAULT_CONFIGS})")
    parser.add_argument("--tol", type=float, default=1e-6, help="certified relative gap (default 1e-6)")
    parser.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the table as JSON")
    parser.add_argument("--report", metavar="PATH", help="also write a Markdown report")


def _data(args, queries: int):
    from cvxrank.datasets import make_ohsumed_like, make_ranking

    if args.instance == "ohsumed":
        return make_ohsumed_like(n_queries=queries, random_state=args.seed)
    return make_ranking(n_queries=queries, docs_per_query=(20, 40), n_features=20, random_state=args.seed)


def _sizes(text: str) -> list[int]:
    return positive_ints(text, "--queries")


def measure(pairs, formulation: str, solver: str, lams, tol: float = 1e-6) -> dict:
    """Time one configuration both ways; return totals, the split of each and the agreement."""
    from cvxrank.costs import theorem1_C
    from cvxrank.exceptions import InaccurateSolutionWarning
    from cvxrank.formulations import build, build_hinge
    from cvxrank.path import PathSolver
    from cvxrank.problem import RankingProblem
    from cvxrank.solvers import solve

    weights = np.ones(pairs.n_pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        path = PathSolver(RankingProblem(pairs), formulation=formulation, solver=solver, tol=tol)
        start = time.perf_counter()
        on_path = [path.solve(weights=weights, lam=lam) for lam in lams]
        t_path = time.perf_counter() - start
        fresh, build_fresh = [], 0.0
        start = time.perf_counter()
        for lam in lams:
            t0 = time.perf_counter()
            if formulation == "native":
                form = RankingProblem(pairs, weights=weights, lam=lam)
            elif formulation == "hinge":
                form = build_hinge(pairs, weights=weights, lam=lam)
            else:
                form = build(pairs, C=theorem1_C(weights, lam), formulation=formulation)
            build_fresh += time.perf_counter() - t0
            fresh.append(solve(form, solver, tol=tol))
        t_fresh = time.perf_counter() - start

    def split_time(results, total, build_time):
        compile_ = sum(r.setup_time for r in results)
        solve_ = sum(r.solve_time for r in results)
        return {"build": build_time, "compile": compile_, "solve": solve_,
                "rest": total - build_time - compile_ - solve_}

    fresh_split = split_time(fresh, t_fresh, build_fresh)
    obj = max(abs(a.qp_objective - b.qp_objective) / abs(b.qp_objective) for a, b in zip(on_path, fresh))
    werr = max(np.linalg.norm(a.w - b.w) / max(np.linalg.norm(b.w), 1e-300) for a, b in zip(on_path, fresh))
    return {
        "formulation": formulation, "solver": solver, "points": len(lams), "path_s": t_path, "fresh_s": t_fresh,
        "ratio": t_fresh / t_path, "path": split_time(on_path, t_path, path.build_time),
        "fresh": fresh_split,
        "bound": t_fresh / max(t_fresh - fresh_split["build"] - fresh_split["compile"], 1e-12),
        "iterations_path": int(sum(r.iterations or 0 for r in on_path)),
        "iterations_fresh": int(sum(r.iterations or 0 for r in fresh)),
        "objective_difference": obj, "w_difference": werr,
        "statuses": sorted({r.status for r in on_path + fresh}),
    }


HEADER = (f"{'formulation':>11} {'solver':>13} {'path s':>8} {'fresh s':>8} {'ratio':>6} {'bound':>6} | "
          f"{'fresh: build+compile':>20} {'solve':>7} {'rest':>6} | {'path: build+compile':>19} {'solve':>7} "
          f"{'rest':>6} | {'iters p/f':>11} {'obj diff':>8} {'w diff':>8} statuses")


def _line(r) -> str:
    f, p = r["fresh"], r["path"]
    return (f"{r['formulation']:>11} {r['solver']:>13} {r['path_s']:8.2f} {r['fresh_s']:8.2f} {r['ratio']:6.2f} "
            f"{r['bound']:6.2f} | "
            f"{f['build'] + f['compile']:20.2f} {f['solve']:7.2f} {f['rest']:6.2f} | "
            f"{p['build'] + p['compile']:19.2f} {p['solve']:7.2f} {p['rest']:6.2f} | "
            f"{r['iterations_path']:>5}/{r['iterations_fresh']:<5} {r['objective_difference']:8.1e} "
            f"{r['w_difference']:8.1e} {','.join(r['statuses'])}")


def check_args(args) -> tuple[list, list]:
    """Refuse any option no run could use, in one line, before the first solve; return the
    configurations ``[(formulation, solver), ...]`` and the sizes in queries."""
    from cvxrank._io import check_outputs
    from cvxrank._validation import SEED, TOL, Interval
    from cvxrank.bench._checks import check_config, check_lam_option, check_option
    from cvxrank.exceptions import ValidationError

    configs = [check_config(item) for item in split(args.configs) or []]
    if not configs:
        raise ValidationError(f"--configs needs at least one FORMULATION:SOLVER, got {args.configs!r}")
    check_option("points", args.points, Interval(2, None, integer=True))
    lam_max, lam_min = check_lam_option("lam-max", args.lam_max), check_lam_option("lam-min", args.lam_min)
    if not lam_min < lam_max:
        raise ValidationError(f"--lam-min ({lam_min:g}) must be below --lam-max ({lam_max:g})")
    check_option("tol", args.tol, TOL)
    check_option("seed", args.seed, SEED)
    check_outputs([args.json, args.report])  # before the run, not after it
    return configs, _sizes(args.queries)


def run(args) -> int:
    from threadpoolctl import threadpool_limits

    from cvxrank.pairs import make_pairs
    from cvxrank.study.report import environment

    configs, sizes = check_args(args)
    lams = np.geomspace(args.lam_max, args.lam_min, args.points)
    env = environment()
    print(f"{args.instance}-like instances; {args.points} lambdas from {args.lam_max:g} down to {args.lam_min:g}; "
          f"tol {args.tol:g}; CPU {env['cpu']} ({env['cores']} cores), BLAS 1 thread")
    rows, instances, blocks = [], [], []
    with threadpool_limits(1):
        for queries in sizes:
            data = _data(args, queries)
            pairs = make_pairs(data)
            instance = {"queries": data.n_queries, "documents": data.n_documents, "pairs": pairs.n_pairs,
                        "features": data.n_features}
            instances.append(instance)
            title = (f"{data.n_queries} queries, {data.n_documents} documents, {pairs.n_pairs} pairs, "
                     f"{data.n_features} features")
            print(f"\n{title}\n{HEADER}", flush=True)
            lines = []
            for form, solver in configs:
                rows.append({**measure(pairs, form, solver, lams, args.tol), **instance})
                lines.append(_line(rows[-1]))
                print(lines[-1], flush=True)
            blocks.append(f"{title}\n" + "\n".join([HEADER] + lines))
    agree = all(r["objective_difference"] <= 10 * args.tol for r in rows)
    dpp = [r for r in rows if r["formulation"] != "native"]
    if dpp:
        best = max(dpp, key=lambda r: r["ratio"])
        print(f"\nbest DPP path: {best['solver']}/{best['formulation']} on {best['pairs']} pairs, "
              f"{best['ratio']:.2f}x faster than building and solving {args.points} problems "
              f"(target >= {TARGET:g}x: {'met' if best['ratio'] >= TARGET else 'NOT met'})")
        print(f"bound without warm starts (fresh / (fresh - its build and compile)): "
              f"{min(r['bound'] for r in dpp):.2f}-{max(r['bound'] for r in dpp):.2f}x")
    for r in rows:
        if r["formulation"] == "native":
            print(f"native {r['solver']} on {r['pairs']} pairs (no compilation; warm start only): path "
                  f"{r['ratio']:.2f}x faster than {args.points} cold solves")
    print(f"path and fresh solutions agree (relative objective difference <= 10 tol): {agree}")
    doc = {"instance": args.instance, "sizes": instances, "lams": lams.tolist(), "tol": args.tol,
           "environment": env, "rows": rows, "target": TARGET}
    if args.json:
        write_json(args.json, doc)
        print(f"wrote {args.json}")
    if args.report:
        from cvxrank._io import write_atomic

        write_atomic(args.report, "# lambda path: DPP re-solves vs fresh builds\n\n```\n"
                     + "\n\n".join(blocks) + "\n```\n")
        print(f"wrote {args.report}")
    return 0
