"""Benchmark the automatic formulation choice (cvxrank.formulations.choose_formulation).

Part 1, the headline: on an OHSUMED-sized instance (make_ohsumed_like: 106 queries, ~16,000
documents, 45 features, ~600,000 pairs) the QP (14) of SIGIR 2006 is solved with Clarabel with
formulation "auto" and with the dense primal ("primal", D = P X materialised), each in both cost
parametrizations ("scale", the default, and "per_pair"; cvxrank.formulations.base.cost_parameters)
and in its own worker process with a time limit. Reported: wall time (build, compile, solve,
certificate), peak memory above the worker's baseline, the certified relative gaps and objectives,
and the ratio of the *faster* dense primal to auto (default parametrization).

Part 2, the rule: instances with the same number of pairs (about --shape-pairs) but different
query lengths (3 equal grades, --features features) are solved with the primal, lifted and dual
formulations. For each shape the table shows the non-zeros the rule compares
(nnz(D) ~ pairs x features against nnz(X) + documents + 3 pairs), the rule's choice and the
formulation that was fastest, and how much slower the choice was than the fastest.

Every run is certified by cvxrank's duality gap; all runs use single-threaded BLAS and run one at
a time, so the ratios are measured in one run on the same machine.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from cvxrank._args import split
from cvxrank._io import write_atomic, write_json

HELP = "automatic formulation vs dense primal on an OHSUMED-sized instance (target >= 8x); the rule by query length"
EPILOG = """examples:
  cvxrank bench formulations                         # both parts (about 15 minutes on 2 cores)
  cvxrank bench formulations --report docs/formulation-choice.md --json formulations.json
  cvxrank bench formulations --skip-shapes --queries 53        # headline only, half the size
  cvxrank bench formulations --skip-headline --shapes 3,10,30,100 --shape-pairs 20000
"""

#: Least ratio of the faster dense primal's wall time to that of formulation="auto" (part 1).
TARGET = 8.0
SHAPE_FORMULATIONS = ("primal", "lifted", "dual")
#: Part 1's runs, "formulation/cost parametrization"; the ratio is against the faster dense primal.
HEADLINE_RUNS = ("auto/scale", "primal/scale", "primal/per_pair", "auto/per_pair")


def add_arguments(parser) -> None:
    parser.add_argument("--queries", type=int, default=106, help="headline: OHSUMED-like queries (default 106)")
    parser.add_argument("--lam", type=float, default=0.5,
                        help="lambda of (9)/SIGIR; C = 1/(2 lambda) (default 0.5, cvxrank.DEFAULT_LAM)")
    parser.add_argument("--tol", type=float, default=1e-6, help="certified relative gap and solver tolerance "
                                                                "(default 1e-6)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run (default 1800)")
    parser.add_argument("--shapes", default="3,6,12,25,50,100,200", metavar="D1,D2,...",
                        help="part 2: documents per query (default 3,6,12,25,50,100,200)")
    parser.add_argument("--shape-pairs", type=int, default=30_000, dest="shape_pairs",
                        help="part 2: pairs per instance, about (default 30000)")
    parser.add_argument("--features", type=int, default=45, help="part 2: features (default 45)")
    parser.add_argument("--skip-headline", action="store_true", dest="skip_headline", help="skip part 1")
    parser.add_argument("--skip-shapes", action="store_true", dest="skip_shapes", help="skip part 2")
    parser.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    parser.add_argument("--report", metavar="PATH", help="also write the Markdown report (docs/formulation-choice.md)")


def shaped(n_queries, seed, *, docs, features):
    """``n_queries`` queries of ``docs`` documents, 3 equal grades (a loader for :class:`~cvxrank.study.Instance`)."""
    from cvxrank.datasets import make_ranking

    return make_ranking(n_queries, docs, features, n_grades=3, noise=math.sqrt(features), random_state=seed)


def _sizes(pairs) -> dict:
    from cvxrank.formulations import choose_formulation

    X = pairs.data.X
    per_doc = X.nnz / X.shape[0] if hasattr(X, "nnz") else X.shape[1]
    dense = pairs.n_pairs * per_doc
    lifted = (X.nnz if hasattr(X, "nnz") else X.size) + pairs.n_documents + 3 * pairs.n_pairs
    return {"documents": pairs.n_documents, "pairs": pairs.n_pairs, "features": pairs.n_features,
            "nnz_dense": int(dense), "nnz_lifted": int(lifted), "rule": choose_formulation(pairs)}


def _run(instance, formulation, args, costs: str = "scale") -> dict:
    from cvxrank.study import CostSetting, Profile
    from cvxrank.study._isolate import run_isolated
    from cvxrank.study.worker import Task

    profile = Profile("bench", args.tol)
    task = Task("run", instance, formulation, "clarabel", profile, (CostSetting(args.lam),), {},
                cost_parametrization=costs)
    row = run_isolated(task, timeout=args.timeout)[0]
    row.pop("_w", None)
    return row


def headline(args) -> dict:
    """Part 1: auto vs dense primal on the OHSUMED-sized instance."""
    from cvxrank.pairs import make_pairs
    from cvxrank.study import Instance

    inst = Instance.generated("ohsumed", args.queries, seed=args.seed)
    sizes = _sizes(make_pairs(inst.load()[0]))
    print(f"part 1: OHSUMED-like, {args.queries} queries, {sizes['documents']} documents, {sizes['pairs']} pairs, "
          f"{sizes['features']} features; nnz(D) = {sizes['nnz_dense']:,}, lifted {sizes['nnz_lifted']:,}; "
          f"auto picks {sizes['rule']!r}", flush=True)
    rows = {}
    for key in HEADLINE_RUNS:
        form, costs = key.split("/")
        rows[key] = _run(inst, form, args, costs)
        r = rows[key]
        print(f"  {form:6s} ({r['resolved_formulation'] or '-'}, costs={costs}): {r['status']}, "
              f"wall {r['wall_time']:.1f} s, peak memory {r['peak_memory']:.0f} MiB, certified gap "
              f"{r['relative_gap']:.1e}, objective {r['objective']:.10g} {r['message']}", flush=True)
    a = rows["auto/scale"]
    dense = [rows[k] for k in HEADLINE_RUNS if k.startswith("primal/") and rows[k]["status"] == "optimal"]
    ok = a["status"] == "optimal" and len(dense) == 2
    p = min(dense, key=lambda r: r["wall_time"]) if ok else None
    ratio = p["wall_time"] / a["wall_time"] if ok else float("nan")
    diff = abs(a["objective"] - p["objective"]) / p["objective"] if ok else float("nan")
    bound = (a["relative_gap"] + p["relative_gap"]) if ok else float("nan")
    faster = next(k for k in HEADLINE_RUNS if rows[k] is p).split("/")[1] if ok else None
    if ok:
        print(f"  faster dense primal (costs={faster}) / auto wall time: {ratio:.1f}x (target >= {TARGET:g}x: "
              f"{'met' if ratio >= TARGET else 'NOT met'}); memory {p['peak_memory'] / a['peak_memory']:.1f}x; "
              f"objectives differ by {diff:.1e} (relative), within the certified gaps' sum {bound:.1e}: "
              f"{diff <= bound}", flush=True)
    else:
        limit = f"{args.timeout:g} s"
        print(f"  a run did not finish optimally (time limit {limit}); no ratio", flush=True)
    return {"instance": sizes, "runs": rows, "ratio": ratio, "reference": faster, "objective_difference": diff,
            "gap_sum": bound, "target": TARGET}


def shapes(args) -> list:
    """Part 2: primal, lifted and dual at a fixed number of pairs and growing query length."""
    from cvxrank.pairs import make_pairs
    from cvxrank.study import Instance

    out = []
    print(f"part 2: about {args.shape_pairs} pairs, {args.features} features, 3 grades; query length varies",
          flush=True)
    for docs in [int(d) for d in split(args.shapes)]:
        per_query = docs * docs / 3.0  # pairs of a query of `docs` documents in 3 equal grades, about
        queries = max(1, round(args.shape_pairs / per_query))
        loader = functools.partial(shaped, docs=docs, features=args.features)
        inst = Instance.from_loader(f"d{docs}", loader, queries, seed=args.seed)
        sizes = _sizes(make_pairs(inst.load()[0]))
        times = {}
        for form in SHAPE_FORMULATIONS:
            r = _run(inst, form, args)
            times[form] = r["wall_time"] if r["status"] == "optimal" else float("inf")
        fastest = min(times, key=times.get)
        regret = times[sizes["rule"]] / times[fastest] if np.isfinite(times[fastest]) else float("nan")
        row = {"docs_per_query": docs, "queries": queries, **sizes, "times": times, "fastest": fastest,
               "rule_regret": regret}
        out.append(row)
        print(f"  {docs:4d} docs/query x {queries:5d} queries: {sizes['pairs']:7d} pairs, nnz dense/lifted "
              f"{sizes['nnz_dense'] / sizes['nnz_lifted']:5.2f}; " + ", ".join(
                  f"{f} {t:6.2f} s" for f, t in times.items())
              + f"; rule {sizes['rule']}, fastest {fastest}, rule/fastest {regret:.2f}", flush=True)
    return out


def report(head, shape_rows, args) -> str:
    """The Markdown of docs/formulation-choice.md."""
    from cvxrank.study.report import environment

    env = environment()
    lines = ["# Formulation choice: measured", "",
             ("`cvxrank.formulations.choose_formulation` picks the dense primal QP (14) of SIGIR 2006 or its "
             "lifted form (`s = Xw`, `P s ≥ 1 − ξ`) by comparing the non-zeros of their constraint matrices: "
             "`nnz(D) ≈ pairs × features` against `nnz(X) + documents + 3 pairs`; the lifted form is chosen when "
             "it is no larger. This page is the report of `cvxrank bench formulations`, which "
             "measures the choice; every run is certified by cvxrank's duality gap."), "",
             "Produced by:", "", "```",
             (f"cvxrank bench formulations --queries {args.queries} --lam {args.lam:g} --tol {args.tol:g} "
             f"--shapes {args.shapes} --shape-pairs {args.shape_pairs} --features {args.features} "
             f"--report {args.report}"), "```", "",
             f"Machine: {env['cpu']}, {env['cores']} logical cores, shared with other jobs; BLAS single-threaded; "
             f"one run at a time, each in its own process. Python {env['python']}; "
             + ", ".join(f"{k} {v}" for k, v in env["packages"].items() if k in
                         ("cvxrank", "cvxpy", "clarabel", "numpy", "scipy")) + ".", ""]
    if head:
        s, runs = head["instance"], head["runs"]
        a = runs["auto/scale"]
        lines += ["## OHSUMED-sized instance: automatic vs dense primal", "",
                  (f"`make_ohsumed_like(n_queries={args.queries})`: {s['documents']:,} documents, {s['pairs']:,} "
                  f"pairs, {s['features']} features; λ = {args.lam:g} (C = {1 / (2 * args.lam):g} per pair), "
                  f"Clarabel with tolerance {args.tol:g}. `auto` picks **{s['rule']}** "
                  f"(nnz {s['nnz_lifted']:,} against {s['nnz_dense']:,} for the dense `D`). Each formulation "
                  "runs in both cost parametrizations: `scale` (the default: `C` in the solver's linear "
                  "objective) and `per_pair` (one parameter per pair, in an epigraph row)."), "",
                  "| formulation | costs | status | wall time (s) | peak memory (MiB) | certified gap | objective (9) |",
                  "|---|---|---|---:|---:|---:|---:|"]
        for key in HEADLINE_RUNS:
            form, costs = key.split("/")
            r = runs[key]
            name = f"auto ({r['resolved_formulation'] or '?'})" if form == "auto" else "primal (dense D)"
            lines.append(f"| {name} | {costs} | {r['status']} | {r['wall_time']:.1f} | {r['peak_memory']:.0f} | "
                         f"{r['relative_gap']:.1e} | {r['objective']:.10g} |")
        if np.isfinite(head["ratio"]):
            p = runs[f"primal/{head['reference']}"]
            lines += ["", (f"**The automatic formulation is {head['ratio']:.1f}× faster than the faster dense "
                          f"primal** (its `{head['reference']}` run; target ≥ {TARGET:g}×: "
                          f"{'met' if head['ratio'] >= TARGET else 'not met'}), with "
                          f"{p['peak_memory'] / a['peak_memory']:.1f}× less memory. The two objectives differ by "
                          f"{head['objective_difference']:.1e} (relative), within the sum of the certified gaps "
                          f"({head['gap_sum']:.1e}): the same optimum.")]
        else:
            lines += ["", "A run did not finish optimally within the time limit: no ratio."]
        lines.append("")
    if shape_rows:
        lines += ["## The rule across query lengths", "",
                  (f"About {args.shape_pairs:,} pairs and {args.features} features each, 3 equal grades; only the "
                  "query length changes. Times are wall times of Clarabel (build, compile, solve, certificate)."), "",
                  ("| docs/query | queries | pairs | nnz(D) / nnz(lifted) | primal (s) | lifted (s) | dual (s) | "
                  "rule | fastest | rule / fastest |"), "|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"]
        for r in shape_rows:
            t = r["times"]
            lines.append(f"| {r['docs_per_query']} | {r['queries']} | {r['pairs']:,} | "
                         f"{r['nnz_dense'] / r['nnz_lifted']:.2f} | {t['primal']:.2f} | {t['lifted']:.2f} | "
                         f"{t['dual']:.2f} | {r['rule']} | {r['fastest']} | {r['rule_regret']:.2f} |")
        worst = max(shape_rows, key=lambda r: r["rule_regret"])
        right = sum(r["rule"] == r["fastest"] for r in shape_rows)
        lines += ["", (f"The rule picked the fastest formulation on {right} of {len(shape_rows)} shapes; its worst "
                      f"choice was {worst['rule_regret']:.2f}× the fastest time ({worst['docs_per_query']} documents "
                      "a query). The dual is never chosen by the rule (ADMM solvers such as OSQP stall on it); its time is shown for comparison."), ""]
    return "\n".join(lines)


def check_args(args) -> None:
    """Refuse any option no run could use, in one line, before the first (maybe half-hour) run."""
    from cvxrank._io import check_outputs
    from cvxrank._validation import POSITIVE_INT, SEED, TIMEOUT, TOL, Interval
    from cvxrank.bench._checks import check_lam_option, check_option, number_list
    from cvxrank.exceptions import ValidationError

    if args.skip_headline and args.skip_shapes:
        raise ValidationError("nothing to do: both parts skipped")
    check_option("queries", args.queries, POSITIVE_INT)
    check_lam_option("lam", args.lam)
    check_option("tol", args.tol, TOL)
    check_option("timeout", args.timeout, TIMEOUT)
    # a query of d documents in 3 equal grades has pairs only from d = 2; 3 puts one document in each grade
    number_list("shapes", args.shapes, Interval(3, None, integer=True), kind=int)
    check_option("shape-pairs", args.shape_pairs, POSITIVE_INT)
    check_option("features", args.features, POSITIVE_INT)
    check_option("seed", args.seed, SEED)
    check_outputs([args.json, args.report])  # before the (maybe half-hour) runs, not after them


def run(args) -> int:
    check_args(args)
    head = None if args.skip_headline else headline(args)
    shape_rows = [] if args.skip_shapes else shapes(args)
    if args.json:
        write_json(args.json, {"headline": head, "shapes": shape_rows, "lam": args.lam, "tol": args.tol})
        print(f"wrote {args.json}")
    if args.report:
        write_atomic(args.report, report(head, shape_rows, args) + "\n")
        print(f"wrote {args.report}")
    return 0
