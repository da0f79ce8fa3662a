"""Benchmark the pair-free cutting-plane solver against solvers that materialise pairs.

Instances (generated, seeded): "ohsumed" is make_ohsumed_like() (about 16,000 documents,
106 queries, 3 grades, 45 features, 600,000 pairs); "web" is make_web_like() (about
1,000,000 documents, 10,000 queries, 5 grades, 136 features, 33 million pairs); "scaling"
times one oracle call on web-like data of growing size and fits the exponent of time vs m;
"floor" counts every pair-free solve (lambda 0.5..500) in floor passes of this process (one X w,
one X^T v, one argsort of the m scores) at gaps 1e-2, 1e-4, 1e-6, with and without the Newton
phase; "squared" solves the squared hinge; "elastic" the squared hinge with an l1 term and bounds on w
(prox_newton against Clarabel on the lifted form); "certificate" times the certificate's share.

On each solved instance the problem is the weighted hinge problem (9) of Cao et al. (SIGIR
2006) with lambda = 1/(2C) and the chosen tau/mu, solved in this one process by:
  cvxrank     solve(problem, "cutting_plane") (pair-free cutting planes, then smoothed Newton; certified gap);
  LinearSVC   scikit-learn, loss="hinge", fit_intercept=False, dual=True, C = 1/(2 lambda), on the
              pair differences built with numpy (cvxrank.make_pairs + difference_matrix, half the
              rows negated so that both classes occur), pair weights as sample_weight; the time
              includes building the pairs;
  Clarabel    cvxrank.build(pairs, C, formulation="lifted") + cvxrank.solve(f, "clarabel"),
              pair building and CVXPY compilation included.
Every w is scored with the same exact objective (9); "rel gap" is (F(w) - L)/F(w) with L the
best certified lower bound of the run, so it bounds every method's suboptimality. Memory is
the peak increase of the process's resident set size (RSS, sampled from /proc/self/statm
every 2 ms) over its value when the method starts: it counts native allocations (liblinear,
Clarabel) that tracemalloc would miss. Ratios are to cvxrank's own figures in the same run.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import tracemalloc
import warnings

import numpy as np

from cvxrank._args import positive_ints, split
from cvxrank._io import write_json
from cvxrank._memory import peak_rss, reset_peak_rss
from cvxrank.exceptions import ValidationError

HELP = ("pair-free cutting planes + Newton (hinge) and truncated Newton (squared hinge) vs LinearSVC and "
        "Clarabel on OHSUMED- and web-sized data; floor passes; oracle scaling")
EPILOG = """examples:
  cvxrank bench native                                   # ohsumed (all three methods) + oracle scaling
  cvxrank bench native --instances ohsumed,web,scaling --json native.json   # the full run (minutes, ~2 GB)
  cvxrank bench native --instances ohsumed --skip clarabel --C 1e-4
  cvxrank bench native --instances web --web-queries 2000 # a smaller web-like instance
  cvxrank bench native --instances scaling --scaling-queries 500,1000,2000,4000
  cvxrank bench native --instances squared               # squared hinge: truncated Newton vs Clarabel, LinearSVC
  cvxrank bench native --instances elastic               # squared hinge + l1 / bounds: prox_newton vs Clarabel lifted
  cvxrank bench native --instances floor                 # solves in floor passes, lambda 0.5..500
  cvxrank bench native --instances floor --floor-data web --floor-lams 0.5   # the web-sized instance (~2 GB)
  cvxrank bench native --instances floor --floor-methods cutting_plane,linearsvc,clarabel   # references, in floor passes
  cvxrank bench native --instances floor --floor-data web --floor-lams 500 --floor-methods cutting_plane \
      --floor-dtype float32                              # X in float32: peak RSS against the float64 X
  cvxrank bench native --instances scaling --oracle-threads 1,2   # the oracle in 1 and 2 threads side by side
  cvxrank bench native --instances shapes                # real sample, make_ranking, sparse 20k x 20k, one huge
                                                         # query, heavy ties, 300 dense features at lambda
                                                         # 0.05..500, in floor passes
"""

INSTANCES = ("ohsumed", "web", "scaling", "certificate", "squared", "elastic", "floor", "shapes")
#: The shapes of the shapes instance (real sample, make_ranking, sparse 20k x 20k, one huge query, heavy ties,
#: 300 dense features on 2,401 documents).
SHAPES = ("letor", "make_ranking", "sparse_wide", "one_query", "ties", "many_features")
#: The variants of the elastic instance: an l1 weight as a fraction of the one that makes w = 0 optimal, bounds.
ELASTIC_VARIANTS = ("l1", "lower0", "l1+lower0", "l1+signs")
#: The real sample the elastic instance also solves (cvxrank's LETOR reader), when it is there.
LETOR_SAMPLE = "../shared/data/lightgbm_rank/train.letor"
REFERENCES = ("linearsvc", "clarabel")
#: Methods the floor instance compares: the default (planes, then the Newton phase), its cutting planes alone
#: (planes_only: newton_gap=None), and the two references on explicit pairs.
FLOOR_METHODS = ("cutting_plane", "planes_only", "linearsvc", "clarabel")
FLOOR_GAPS = (1e-2, 1e-4, 1e-6)
#: Targets the pair-free solver is held to (ratios to a reference measured in the same run).
TARGETS = {"ohsumed": {"gap": 1e-6, "time_vs_linearsvc": 0.1, "time_vs_clarabel": 0.05,
                       "memory_vs_linearsvc": 0.2, "seconds": 1.0},
           "web": {"gap": 1e-4, "seconds": 300.0, "memory_gb": 4.0}}


def add_arguments(parser) -> None:
    parser.add_argument("--instances", default="ohsumed,scaling,certificate", metavar="I1,I2",
                        help=f"any of {','.join(INSTANCES)} (default ohsumed,scaling,certificate)")
    parser.add_argument("--skip", default="", metavar="R1,R2",
                        help="references not to run: linearsvc, clarabel (skipped anyway on web)")
    parser.add_argument("--C", type=float, default=1e-3,
                        help="QP cost per unit pair weight, C = 1/(2 lambda) (default 1e-3)")
    parser.add_argument("--tau", metavar="H-L=V,...", help="tau per grade pair (default all 1)")
    parser.add_argument("--mu", default="balanced", metavar="none|balanced",
                        help="query weights (default balanced, (10) of SIGIR 2006)")
    parser.add_argument("--tol", type=float, default=1e-6, help="ohsumed: relative gap requested (default 1e-6)")
    parser.add_argument("--web-tol", type=float, default=1e-4, help="web: relative gap requested (default 1e-4)")
    parser.add_argument("--web-time-limit", type=float, default=300.0, help="web: seconds (default 300)")
    parser.add_argument("--ohsumed-queries", type=int, default=106, help="ohsumed: queries (default 106)")
    parser.add_argument("--web-queries", type=int, default=10_000, help="web: queries (default 10000)")
    parser.add_argument("--scaling-queries", default="625,1250,2500,5000,10000", metavar="Q1,Q2,...",
                        help="scaling: web-like sizes in queries of ~100 documents (default 625,...,10000)")
    parser.add_argument("--scaling-features", type=int, default=136, help="scaling: features (default 136)")
    parser.add_argument("--scaling-lengths", default="25,50,100,200,400", metavar="L1,L2,...",
                        help="scaling: query lengths at a fixed number of documents (default 25,...,400; '' to skip)")
    parser.add_argument("--scaling-documents", type=int, default=200_000,
                        help="scaling: documents of the query-length series (default 200000)")
    parser.add_argument("--repeat", type=int, default=5, help="scaling: oracle calls timed per size (median)")
    parser.add_argument("--certificate-queries", type=int, default=1,
                        help="certificate: OHSUMED-like queries of the explicit-pairs solve (default 1: ~8,400 pairs)")
    parser.add_argument("--squared-queries", default="18,53,106", metavar="Q1,Q2,...",
                        help="squared: OHSUMED-like sizes in queries (default 18,53,106: ~100k, 300k, 600k pairs)")
    parser.add_argument("--elastic-queries", default="18,53,106", metavar="Q1,Q2,...",
                        help="elastic: OHSUMED-like sizes in queries (default 18,53,106: ~100k, 300k, 600k pairs)")
    parser.add_argument("--elastic-variants", default=",".join(ELASTIC_VARIANTS), metavar="V1,V2",
                        help=f"elastic: any of {','.join(ELASTIC_VARIANTS)} (default all): l1 = --elastic-l1 times "
                             "the l1 from which w = 0 is optimal; lower0: w >= 0; signs: w >= 0 on even features, "
                             "w <= 0 on odd ones")
    parser.add_argument("--elastic-l1", type=float, default=0.05,
                        help="elastic: l1 as a fraction of the l1 that makes w = 0 optimal (default 0.05)")
    parser.add_argument("--elastic-letor", default=LETOR_SAMPLE, metavar="PATH",
                        help=f"elastic: a LETOR file also solved ('' to skip; default {LETOR_SAMPLE}, ~13.5k pairs)")
    parser.add_argument("--elastic-hard", default="20,150,250,200", metavar="Q,MIN,MAX,N",
                        help="elastic: the hard shape, make_ranking with Q queries of MIN..MAX documents and N "
                             "features (default 20,150,250,200: ~270k pairs, 200 features; '' to skip)")
    parser.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    parser.add_argument("--memory", choices=("rss", "tracemalloc"), default="rss",
                        help="peak memory by sampled RSS (default; counts native allocations) or tracemalloc")
    parser.add_argument("--floor-data", choices=("ohsumed", "web"), default="ohsumed",
                        help="floor: generated data (default ohsumed: 600k pairs, 45 features)")
    parser.add_argument("--floor-lams", default="0.5,5,50,500", metavar="L1,L2,...",
                        help="floor: values of lambda (default 0.5,5,50,500, i.e. C = 1 .. 0.001 per pair)")
    parser.add_argument("--floor-methods", default="cutting_plane,planes_only", metavar="M1,M2",
                        help=f"floor: methods to run (any of {','.join(FLOOR_METHODS)}; default the two pair-free "
                             "ones; linearsvc and clarabel run where their pairs fit the memory budget, linearsvc after a "
                             "method whose certified bound scores it)")
    parser.add_argument("--floor-tol", type=float, default=1e-6, help="floor: relative gap requested (default 1e-6)")
    parser.add_argument("--floor-reference-tol", type=float, metavar="TOL",
                        help="floor: relative gap for planes_only (default --floor-tol; 1e-4 keeps the web run short)")
    parser.add_argument("--floor-repeat", type=int, metavar="R",
                        help="floor: with R > 1 each pair-free solve's time (and its calls and gaps) is that of the "
                             "median of R solves, each from a fresh oracle and without the memory sampler (a thread "
                             "that competes for the interpreter), and the floor pass the median of as many passes; the "
                             "memory comes from one more, sampled, solve. Default 5 on ohsumed, 1 on web (one sampled "
                             "solve: time and memory together)")
    parser.add_argument("--floor-dtype", choices=("float64", "float32"), default="float64",
                        help="floor: storage of X (default float64); float32 halves it, the solver computes in "
                             "float64 (memory ratios are then given against the float64 X too)")
    parser.add_argument("--oracle-threads", default="1", metavar="T1,T2",
                        help="scaling and floor: threads of the oracle's sort, search and sums (PairFreeOracle "
                             "threads, default 1; 'auto': 2 from 100k documents); several values are measured side "
                             "by side in this process (default 1). BLAS stays at 1 thread")
    parser.add_argument("--kernel", default="auto", metavar="K1,K2",
                        help="floor: the oracle's sweeps, any of auto,compiled,numpy (PairFreeOracle kernel, default "
                             "auto: compiled when built); several values are measured side by side in this process; "
                             "the other instances use auto")
    parser.add_argument("--shapes", default=",".join(SHAPES), metavar="S1,S2",
                        help=f"shapes: which data shapes (any of {','.join(SHAPES)}; default all)")
    parser.add_argument("--shapes-lams", default="0.05,0.5,5,500", metavar="L1,L2",
                        help="shapes: values of lambda (default 0.05,0.5,5,500)")
    parser.add_argument("--shapes-repeat", type=int, default=2,
                        help="shapes: solves per (shape, lambda), each round after a floor pass timed in this "
                             "process (of the data's X, and of the X the solver keeps where that differs); the "
                             "median time, the spread and the time over each median floor pass are reported "
                             "(default 2)")
    parser.add_argument("--shapes-time-limit", type=float, default=60.0,
                        help="shapes: seconds per solve, a safety net (status user_limit; default 60)")
    parser.add_argument("--shapes-memory", action="store_true",
                        help="shapes: one more solve per (shape, lambda) under tracemalloc; its peak over the bytes X "
                             "stores (CSR: data, indices, indptr) is the 'peak/X' column")
    parser.add_argument("--shapes-max-planes", type=int, default=None, metavar="N",
                        help="shapes: the cutting planes' max_planes (aggregation beyond N planes; default no limit)")
    parser.add_argument("--shapes-pair-cd", choices=("auto", "on", "off"), default="auto",
                        help="shapes: the cutting planes' pair_cd (dual coordinate descent over the pairs with an exact "
                             "finish): auto (default: a CSR X with more than 2,000 features and at least one per "
                             "document), on (any CSR X) or off")
    parser.add_argument("--shapes-threshold", default="auto", metavar="T1,T2",
                        help="shapes: the cutting planes' threshold (the hard-margin threshold form's dual before "
                             "pair_cd), any of auto (default: before an automatic pair_cd), on, off; several: one row "
                             "each, their solves alternating (e.g. auto,off: with it and pair_cd alone)")
    parser.add_argument("--shapes-start", default="auto", metavar="S1,S2",
                        help="shapes: the cutting planes' first point, any of auto, regression, zero (default auto: "
                             "the grades' least-squares fit, scaled, on problems of at most 10,000 documents); "
                             "several: one row each, their solves alternating")
    parser.add_argument("--json", metavar="PATH",
                        help="also write every figure as JSON, with the machine as 'environment' (CPU, cores, the "
                             "SIMD extensions numpy sorts with, BLAS, package versions: the floor pass depends on them)")


# -- measuring ---------------------------------------------------------------------
def _rss() -> int | None:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Measure:
    """Wall time and peak memory of a block: RSS increase (sampled) or tracemalloc peak."""

    def __init__(self, how: str = "rss", interval: float = 0.002):
        self.how = how if (how == "tracemalloc" or _rss() is not None) else "tracemalloc"
        self.interval = interval
        self.seconds = 0.0
        self.peak_bytes = 0

    def __enter__(self):
        gc.collect()
        if self.how == "tracemalloc":
            tracemalloc.start()
        else:
            self._base = self._peak = _rss()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        self._t0 = time.perf_counter()
        return self

    def _sample(self):
        while not self._stop.wait(self.interval):
            self._peak = max(self._peak, _rss())

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        if self.how == "tracemalloc":
            self.peak_bytes = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        else:
            self._stop.set()
            self._thread.join()
            self._peak = max(self._peak, _rss())
            self.peak_bytes = self._peak - self._base
        return False


def _fmt_bytes(b: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(b) < 1024 or unit == "TB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024.0
    return f"{b:.1f} TB"


# -- the methods ---------------------------------------------------------------------
def _run_cvxrank(data, tau, mu, lam, tol, time_limit):
    from cvxrank.problem import RankingProblem
    from cvxrank.solvers import solve

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve(RankingProblem(data, tau=tau, mu=mu, lam=lam), "cutting_plane", tol=tol, time_limit=time_limit)
    return res.w, res, {"status": res.status, "iterations": res.iterations,
                        "certified_by_itself": res.relative_gap, "lower_bound": res.lower_bound}


def _pairs_and_weights(data, tau, mu):
    from cvxrank.costs import pair_weights
    from cvxrank.pairs import make_pairs

    pairs = make_pairs(data)
    return pairs, pair_weights(pairs, tau, mu)


def _run_linearsvc(data, tau, mu, lam):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    pairs, weights = _pairs_and_weights(data, tau, mu)
    D = pairs.difference_matrix()
    z = np.ones(pairs.n_pairs)
    z[1::2] = -1.0  # both classes must occur: negate every other difference and its label
    D[1::2] *= -1.0
    clf = LinearSVC(loss="hinge", fit_intercept=False, C=1.0 / (2.0 * lam), dual=True, max_iter=100_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        clf.fit(D, z, sample_weight=weights)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return clf.coef_.ravel().copy(), None, {"status": "converged" if converged else "max_iter",
                                           "iterations": int(np.max(clf.n_iter_))}


def _run_clarabel(data, tau, mu, lam):
    from cvxrank.costs import theorem1_C
    from cvxrank.exceptions import InaccurateSolutionWarning
    from cvxrank.formulations import build
    from cvxrank.solvers import solve

    pairs, weights = _pairs_and_weights(data, tau, mu)
    f = build(pairs, C=theorem1_C(weights, lam), formulation="lifted")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = solve(f, "clarabel")
    return res.w, res, {"status": res.status, "iterations": res.iterations,
                        "certified_by_itself": res.relative_gap, "lower_bound": res.lower_bound}


# -- instances -------------------------------------------------------------------------
def _solve_instance(name, data, args, tau, mu, lam, tol, time_limit, references, skip_reason):
    from cvxrank.native import PairFreeOracle, cost_table

    costs = cost_table(data, tau, mu)
    n_pairs = costs.total_pairs
    print(f"\n== {name}: {data.n_documents:,} documents, {data.n_queries:,} queries, {data.n_features} features, "
          f"{len(data.grades)} grades, {n_pairs:,} pairs; C = {args.C:g} (lambda = {lam:g}), "
          f"tau {'given' if tau else 'all 1'}, mu {mu or 'none'}; requested relative gap {tol:g}", flush=True)
    rows = []
    runners = {"cvxrank": lambda: _run_cvxrank(data, tau, mu, lam, tol, time_limit),
               "linearsvc": lambda: _run_linearsvc(data, tau, mu, lam),
               "clarabel": lambda: _run_clarabel(data, tau, mu, lam)}
    labels = {"cvxrank": "cvxrank cutting_plane (pair-free)", "linearsvc": "sklearn LinearSVC (liblinear)",
              "clarabel": "CVXPY + Clarabel, lifted primal"}
    results = {}
    for method in ("cvxrank", *REFERENCES):
        if method != "cvxrank" and method not in references:
            rows.append({"instance": name, "method": method, "label": labels[method], "skipped": skip_reason(method)})
            print(f"  {labels[method]}: skipped ({skip_reason(method)})", flush=True)
            continue
        print(f"  running {labels[method]} ...", flush=True)
        with Measure(args.memory) as m:
            w, _, info = runners[method]()
        results[method] = (w, m, info)
    oracle = PairFreeOracle.from_data(data, costs)
    lower = max(info.get("lower_bound", -np.inf) for _, _, info in results.values())
    base_t, base_m = results["cvxrank"][1].seconds, results["cvxrank"][1].peak_bytes
    for method, (w, m, info) in results.items():
        F = lam * float(w @ w) + oracle(w, counts=False).loss
        rows.append({"instance": name, "method": method, "label": labels[method], "seconds": m.seconds,
                     "time_ratio": m.seconds / base_t, "peak_bytes": int(m.peak_bytes),
                     "memory_ratio": m.peak_bytes / base_m if base_m > 0 else float("nan"), "memory_measure": m.how,
                     "objective": F, "relative_gap": (F - lower) / F, "status": info["status"],
                     "iterations": info.get("iterations"), "self_certified_gap": info.get("certified_by_itself")})
    meta = {"instance": name, "n_documents": data.n_documents, "n_queries": data.n_queries,
            "n_features": data.n_features, "n_pairs": n_pairs, "C": args.C, "lam": lam, "tol": tol,
            "lower_bound": lower, "memory_measure": results["cvxrank"][1].how}
    meta["process_peak_rss_bytes"] = _max_rss()
    _print_table(rows, meta["memory_measure"])
    _print_targets(name, rows, meta)
    return rows, meta


def _max_rss() -> int | None:
    """Peak resident set size of the whole process so far (data included), or None."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # kB on Linux
    except (ImportError, OSError):  # pragma: no cover - not on Linux
        return None


def _print_table(rows, how):
    head = (f"  {'method':36s} {'time':>9s} {'x cvxrank':>9s} {'peak mem':>10s} {'x cvxrank':>9s} "
            f"{'objective F(w)':>18s} {'rel gap':>9s}  status")
    print(head)
    for r in rows:
        if "skipped" in r:
            continue
        print(f"  {r['label']:36s} {r['seconds']:8.2f}s {r['time_ratio']:9.3g} {_fmt_bytes(r['peak_bytes']):>10s} "
              f"{r['memory_ratio']:9.3g} {r['objective']:18.12g} {r['relative_gap']:9.1e}  {r['status']}"
              f" ({r['iterations']} it)")
    print(f"  memory: {'peak RSS increase during the method (sampled every 2 ms)' if how == 'rss' else 'tracemalloc peak'}"
          "; rel gap: (F(w) - best certified lower bound) / F(w)")


def _print_targets(name, rows, meta):
    t = TARGETS.get(name)
    if t is None:
        return
    by = {r["method"]: r for r in rows if "skipped" not in r}
    me = by["cvxrank"]
    checks = [(f"certified relative gap <= {t['gap']:g}", me["relative_gap"] <= t["gap"], f"{me['relative_gap']:.2e}")]
    if "seconds" in t:
        checks.append((f"wall time < {t['seconds']:g} s", me["seconds"] < t["seconds"], f"{me['seconds']:.2f} s"))
    if "memory_gb" in t and meta.get("process_peak_rss_bytes"):
        peak = meta["process_peak_rss_bytes"]
        checks.append((f"process peak RSS < {t['memory_gb']:g} GB (data included)", peak < t["memory_gb"] * 2**30,
                       _fmt_bytes(peak)))
    if "linearsvc" in by:
        ref = by["linearsvc"]
        checks.append((f"time <= {t['time_vs_linearsvc']:g} x LinearSVC", me["seconds"] <= t["time_vs_linearsvc"]
                       * ref["seconds"], f"{me['seconds'] / ref['seconds']:.3f} x"))
        checks.append((f"memory <= {t['memory_vs_linearsvc']:g} x LinearSVC",
                       me["peak_bytes"] <= t["memory_vs_linearsvc"] * ref["peak_bytes"],
                       f"{me['peak_bytes'] / max(ref['peak_bytes'], 1):.3f} x"))
    if "clarabel" in by:
        ref = by["clarabel"]
        checks.append((f"time <= {t['time_vs_clarabel']:g} x Clarabel", me["seconds"] <= t["time_vs_clarabel"]
                       * ref["seconds"], f"{me['seconds'] / ref['seconds']:.3f} x"))
    print("  targets:")
    for label, ok, value in checks:
        print(f"    {'PASS' if ok else 'MISS'}  {label:38s} measured {value}")
    meta["targets"] = [{"target": label, "passed": bool(ok), "measured": value} for label, ok, value in checks]


def oracle_threads(text: str) -> list:
    """``--oracle-threads``: a list of positive ints, ``auto`` (None) allowed."""
    values = []
    for x in split(text) or []:
        if x == "auto":
            values.append(None)
        elif x.isdigit() and int(x) > 0:
            values.append(int(x))
        else:
            raise ValidationError(f"--oracle-threads takes positive ints or 'auto', got {x!r}")
    if not values:
        raise ValidationError("--oracle-threads needs at least one value")
    return values


def _kernels(text: str) -> list:
    """``--kernel``: a list of auto, compiled, numpy (each checked: compiled needs the built module)."""
    from cvxrank.native.kernels import check_kernel

    values = split(text) or []
    if not values:
        raise ValidationError("--kernel needs at least one value")
    for x in values:
        try:
            check_kernel(x)
        except ValidationError as exc:
            raise ValidationError(f"--{exc}") from None
    return values


def _kernel_label(kernel) -> str:
    """``auto`` shown as what it runs: ``compiled`` or ``numpy``."""
    from cvxrank.native.kernels import check_kernel

    return "-" if kernel is None else ("compiled" if check_kernel(kernel) else "numpy")


def _threads_label(threads) -> str:
    return "auto" if threads is None else str(threads)


def _time_oracle(data, repeat, rng, threads=(None,)):
    """Median seconds of one oracle call (loss and ``Xᵀv``, no counts) at a random ``w``, 1 BLAS thread:
    ``({threads: (from scratch, after a nearby point)}, pairs)``, one oracle per value of ``threads``
    (``PairFreeOracle(threads=)``), their calls interleaved at the same points. From scratch the oracle
    sorts the scores anew; after a call at a point 1 % away it re-sorts from that call's order, as in a solve."""
    from cvxrank.native import PairFreeOracle, cost_table
    from cvxrank.native.cutting_plane import blas_threads

    costs = cost_table(data)
    oracles = {t: PairFreeOracle.from_data(data, costs, threads=t) for t in threads}
    w = rng.standard_normal(data.n_features) / np.sqrt(data.n_features)
    fresh = {t: [] for t in threads}
    near = {t: [] for t in threads}
    with blas_threads(1):  # as in the solver
        for oracle in oracles.values():
            oracle(w, counts=False)
        for _ in range(repeat):
            w_near = w + 0.01 * np.linalg.norm(w) * rng.standard_normal(w.shape[0]) / np.sqrt(w.shape[0])
            for t, oracle in oracles.items():
                oracle.reset_order()
                t0 = time.perf_counter()
                oracle(w, counts=False)
                fresh[t].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                oracle(w_near, counts=False)
                near[t].append(time.perf_counter() - t0)
    times = {t: (float(np.median(fresh[t])), float(np.median(near[t]))) for t in threads}
    return times, next(iter(oracles.values())).n_pairs


def _others(times, threads) -> str:
    """`` | threads 2: 310.2 / 250.1 ms`` for every thread count after the first."""
    return "".join(f" | threads {_threads_label(t)}: {times[t][0] * 1e3:.2f} / {times[t][1] * 1e3:.2f} ms"
                   for t in threads[1:])


def _per_threads(times) -> dict:
    return {_threads_label(t): {"seconds_per_call": a, "seconds_per_call_near": b} for t, (a, b) in times.items()}


def _scaling(args):
    from cvxrank.datasets import make_ranking, make_web_like

    sizes = positive_ints(args.scaling_queries, "--scaling-queries")
    threads = oracle_threads(args.oracle_threads)
    if len(sizes) < 2:
        raise ValidationError("--scaling-queries needs at least two sizes (four or more for a meaningful fit)")
    print(f"\n== oracle scaling in m: web-like data, {args.scaling_features} features, ~100 documents per query; "
          f"median of {args.repeat} calls (loss and subgradient X^T v, no counts; 1 BLAS thread), each sorting "
          f"from scratch; oracle threads {','.join(map(_threads_label, threads))} (figures for the first, "
          "then 'from scratch / after a point 1 % away' for the others)", flush=True)
    rows = []
    rng = np.random.default_rng(args.seed)
    for q in sizes:
        data = make_web_like(n_queries=q, n_features=args.scaling_features, random_state=args.seed)
        times, n_pairs = _time_oracle(data, args.repeat, rng, threads)
        t, t_near = times[threads[0]]
        rows.append({"instance": "scaling", "series": "documents", "n_queries": q, "n_documents": data.n_documents,
                     "n_pairs": n_pairs, "seconds_per_call": t, "seconds_per_call_near": t_near,
                     "oracle_threads": _per_threads(times)})
        print(f"  m = {data.n_documents:>9,} documents  {n_pairs:>12,} pairs  {t * 1e3:9.2f} ms per call"
              f"  ({t / data.n_documents * 1e9:6.1f} ns per document); after a point 1 % away {t_near * 1e3:9.2f} ms"
              f"{_others(times, threads)}", flush=True)
        del data
        gc.collect()
    slope = float(np.polyfit(np.log([r["n_documents"] for r in rows]), np.log([r["seconds_per_call"] for r in rows]),
                             1)[0])
    print(f"  fitted exponent of time vs m: {slope:.3f} over {len(rows)} sizes (an m log m cost fits about 1.05)")
    meta = {"instance": "scaling", "exponent_documents": slope, "sizes": len(rows)}
    lengths = [int(x) for x in split(args.scaling_lengths) or []]
    if len(lengths) >= 2:
        print(f"\n== oracle scaling in query length: {args.scaling_documents:,} documents, {args.scaling_features} "
              "features, 5 grades; pairs grow with the length, the oracle's work should not", flush=True)
        series = []
        for length in lengths:
            q = max(1, args.scaling_documents // length)
            data = make_ranking(q, length, args.scaling_features, noise=np.sqrt(args.scaling_features),
                                proportions=(0.52, 0.32, 0.13, 0.02, 0.01), random_state=args.seed)
            times, n_pairs = _time_oracle(data, args.repeat, rng, threads)
            t = times[threads[0]][0]
            series.append({"instance": "scaling", "series": "query_length", "query_length": length,
                           "n_documents": data.n_documents, "n_pairs": n_pairs, "seconds_per_call": t,
                           "oracle_threads": _per_threads(times)})
            print(f"  {length:>5} documents per query  {n_pairs:>13,} pairs  {t * 1e3:9.2f} ms per call"
                  f"{_others(times, threads)}", flush=True)
            del data
            gc.collect()
        pair_slope = float(np.polyfit(np.log([r["n_pairs"] for r in series]),
                                      np.log([r["seconds_per_call"] for r in series]), 1)[0])
        print(f"  fitted exponent of time vs number of pairs: {pair_slope:.3f} (a method that visits pairs: 1)")
        meta["exponent_pairs"] = pair_slope
        rows.extend(series)
    return rows, meta


def _certificate_share(args, tau, mu, lam):
    """The certificate's share of a native solve on explicit pairs: pairwise re-certification against the own bound.

    Both routes run the same cutting-plane solve (``solve(build_hinge(problem), "cutting_plane")``).
    Before: the solution was re-certified pairwise (the reduced dual by L-BFGS-B over bands of pairs,
    refined to ``tol x 1e-3``) from the model's pairwise dual point. After: the method's own lower
    bound certifies it when it proves ``tol``; the time of that check is ``certify_time``.
    """
    from cvxrank.certificate import certify
    from cvxrank.datasets import make_ohsumed_like
    from cvxrank.formulations import build_hinge
    from cvxrank.native import PairFreeOracle, cost_table_from_pairs, cutting_plane
    from cvxrank.pairs import make_pairs
    from cvxrank.problem import RankingProblem
    from cvxrank.solvers import solve

    data = make_ohsumed_like(n_queries=args.certificate_queries, random_state=args.seed)
    problem = RankingProblem(make_pairs(data), tau=tau, mu=mu, lam=lam)
    pairs, tol = problem.pairs, args.tol
    # before: the solve, then the pairwise re-certification the old finish() ran
    t0 = time.perf_counter()
    oracle = PairFreeOracle.from_data(data, cost_table_from_pairs(pairs, problem.weights))
    run = cutting_plane(oracle, lam, tol=tol, keep_points=True)
    t_solve_before = time.perf_counter() - t0
    alpha = np.zeros(pairs.n_pairs)
    for beta_k, point in zip(run.beta[1:], run.points[1:]):
        if beta_k > 0:
            alpha += beta_k * (pairs.margins(point) < 1)
    t0 = time.perf_counter()
    cert = certify(pairs, problem.C, run.w, [np.minimum(alpha, 1.0) * problem.C], target=tol * 1e-3)
    t_cert_before = time.perf_counter() - t0
    # after: cvxrank.solve keeps the method's own certificate
    res = solve(build_hinge(problem), "cutting_plane", tol=tol)
    t_solve_after = res.setup_time + res.solve_time
    rows = [
        {"instance": "certificate", "route": "before: pairwise re-certification (L-BFGS-B, tol x 1e-3)",
         "pairs": pairs.n_pairs, "solve_s": t_solve_before, "certificate_s": t_cert_before,
         "share": t_cert_before / (t_solve_before + t_cert_before), "relative_gap": cert.relative_gap},
        {"instance": "certificate", "route": f"after: the method's own bound ({res.certificate})",
         "pairs": pairs.n_pairs, "solve_s": t_solve_after, "certificate_s": res.certify_time,
         "share": res.certify_time / (t_solve_after + res.certify_time), "relative_gap": res.relative_gap},
    ]
    print(f"\ncertificate share of a native solve on explicit pairs: solve(build_hinge(problem), 'cutting_plane'), "
          f"{pairs.n_pairs:,} pairs, {data.n_features} features, tol {tol:g}")
    print(f"{'route':<62} {'solve s':>9} {'cert. s':>9} {'share':>7} {'rel. gap':>9}")
    for r in rows:
        print(f"{r['route']:<62} {r['solve_s']:9.3f} {r['certificate_s']:9.3f} {r['share']:7.1%} {r['relative_gap']:9.1e}")
    return rows, {"instance": "certificate", "pairs": pairs.n_pairs, "tol": tol, "target_share": 0.2}


def _squared(args, tau, mu, lam):
    """The squared-hinge variant: truncated_newton (pair-free) vs Clarabel (lifted) and LinearSVC (squared hinge)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    from cvxrank.datasets import make_ohsumed_like
    from cvxrank.exceptions import InaccurateSolutionWarning
    from cvxrank.formulations import build
    from cvxrank.native import cost_table
    from cvxrank.native.variant_oracle import VariantOracle
    from cvxrank.problem import RankingProblem
    from cvxrank.solvers import solve
    from cvxrank.variants import Variant

    variant = Variant(loss="squared_hinge")
    sizes = positive_ints(args.squared_queries, "--squared-queries")
    rows, metas = [], []
    print(f"\n== squared hinge (loss='squared_hinge'), C = {args.C:g} (lambda = {lam:g}), tau "
          f"{'given' if tau else 'all 1'}, mu {mu or 'none'}; requested relative gap {args.tol:g}", flush=True)
    print(f"  {'pairs':>9s} {'method':42s} {'time':>9s} {'x newton':>9s} {'peak mem':>10s} {'objective F(w)':>18s} "
          f"{'rel gap':>9s}  status")
    for queries in sizes:
        data = make_ohsumed_like(n_queries=queries, random_state=args.seed)
        costs = cost_table(data, tau, mu)
        oracle = VariantOracle.from_data(data, costs)
        results = {}

        def newton(data):
            res = solve(RankingProblem(data, tau=tau, mu=mu, lam=lam, variant=variant), "truncated_newton",
                        tol=args.tol)
            return res.w, res.status, res.iterations, res.hinge_objective - res.gap_L

        def clarabel(data):
            problem = RankingProblem(data, tau=tau, mu=mu, lam=lam, variant=variant)
            res = solve(build(problem, formulation="lifted"), "clarabel", tol=args.tol)
            return res.w, res.status, res.iterations, res.hinge_objective - res.gap_L

        def linearsvc(data):
            pairs, weights = _pairs_and_weights(data, tau, mu)
            D = pairs.difference_matrix()
            z = np.ones(pairs.n_pairs)
            z[1::2], D[1::2] = -1.0, -D[1::2]
            clf = LinearSVC(loss="squared_hinge", fit_intercept=False, C=1.0 / (2.0 * lam), dual=False,
                            tol=1e-8, max_iter=10_000)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                clf.fit(D, z, sample_weight=weights)
            ok = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
            return clf.coef_.ravel().copy(), "converged" if ok else "max_iter", int(np.max(clf.n_iter_)), -np.inf

        labels = {"newton": "cvxrank truncated_newton (pair-free)", "clarabel": "CVXPY + Clarabel, lifted primal",
                  "linearsvc": "sklearn LinearSVC (squared hinge, primal)"}
        for method, runner in (("newton", newton), ("clarabel", clarabel), ("linearsvc", linearsvc)):
            if method in ("clarabel", "linearsvc") and method in set(split(args.skip) or []):
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InaccurateSolutionWarning)
                with Measure(args.memory) as m:
                    results[method] = (*runner(data), m)
        lower = max(r[3] for r in results.values())
        base = results["newton"][4].seconds
        for method, (w, status, iterations, _, m) in results.items():
            F = lam * float(w @ w) + oracle.squared_hinge(w).loss
            row = {"instance": "squared", "queries": queries, "n_pairs": costs.total_pairs, "method": method,
                   "label": labels[method], "seconds": m.seconds, "time_ratio": m.seconds / base,
                   "peak_bytes": int(m.peak_bytes), "objective": F, "relative_gap": (F - lower) / F,
                   "status": status, "iterations": iterations}
            rows.append(row)
            print(f"  {costs.total_pairs:9,d} {labels[method]:42s} {m.seconds:8.2f}s {row['time_ratio']:9.3g} "
                  f"{_fmt_bytes(m.peak_bytes):>10s} {F:18.12g} {row['relative_gap']:9.1e}  {status} ({iterations} it)",
                  flush=True)
        metas.append({"queries": queries, "n_pairs": costs.total_pairs, "n_documents": data.n_documents,
                      "lower_bound": lower})
    print("  rel gap: (F(w) - best certified lower bound of the row's size) / F(w); target: "
          "truncated_newton >= 10x faster than Clarabel (lifted) from 100k pairs on")
    for meta in metas:
        by = {r["method"]: r for r in rows if r["queries"] == meta["queries"]}
        if "clarabel" in by and meta["n_pairs"] >= 100_000:
            speed = by["clarabel"]["seconds"] / by["newton"]["seconds"]
            print(f"    {'PASS' if speed >= 10 else 'MISS'}  {meta['n_pairs']:,} pairs: {speed:.1f}x faster than Clarabel")
            meta["speedup_vs_clarabel"] = speed
    return rows, {"instance": "squared", "C": args.C, "lam": lam, "tol": args.tol, "sizes": metas}


def _elastic_variant(name, threshold, fraction, n_features):
    from cvxrank.variants import Variant

    l1 = fraction * threshold if "l1" in name else 0.0
    lower = upper = None
    if "lower0" in name:
        lower = 0.0
    elif "signs" in name:
        lower = np.where(np.arange(n_features) % 2 == 0, 0.0, -np.inf)
        upper = np.where(np.arange(n_features) % 2 == 0, np.inf, 0.0)
    return Variant(loss="squared_hinge", l1=l1, lower=lower, upper=upper)


def _elastic_data(args):
    """``(label, data)`` of the elastic instance: OHSUMED-like sizes, the LETOR sample, the hard shape."""
    from cvxrank.data import load_letor
    from cvxrank.datasets import make_ohsumed_like, make_ranking

    for queries in positive_ints(args.elastic_queries, "--elastic-queries"):
        yield f"ohsumed-like {queries} queries", make_ohsumed_like(n_queries=queries, random_state=args.seed)
    if args.elastic_letor:
        if os.path.exists(args.elastic_letor):
            yield f"LETOR {os.path.basename(args.elastic_letor)}", load_letor(args.elastic_letor)
        else:
            print(f"  (no LETOR file at {args.elastic_letor}: skipped)", flush=True)
    hard = positive_ints(args.elastic_hard, "--elastic-hard") if args.elastic_hard else []
    if hard:
        q, lo, hi, n = hard
        yield (f"hard: {q} queries of {lo}-{hi} documents, {n} features",
               make_ranking(n_queries=q, docs_per_query=(lo, hi), n_features=n, random_state=args.seed))


def _elastic(args, tau, mu, lam):
    """The squared hinge with an l1 term and bounds on w: prox_newton (pair-free) vs Clarabel on the lifted form."""
    from cvxrank.exceptions import InaccurateSolutionWarning
    from cvxrank.native import cost_table
    from cvxrank.native.variant_oracle import VariantOracle
    from cvxrank.problem import RankingProblem
    from cvxrank.solvers import solve

    names = split(args.elastic_variants)
    rows = []
    print(f"\n== squared hinge with l1 and bounds, C = {args.C:g} (lambda = {lam:g}), tau {'given' if tau else 'all 1'}, "
          f"mu {mu or 'none'}; l1 = {args.elastic_l1:g} x the l1 from which w = 0 is optimal; requested relative "
          f"gap {args.tol:g}; times in one process, Clarabel's with pair building and compilation", flush=True)
    print(f"  {'data':44s} {'pairs':>9s} {'variant':10s} {'prox_newton':>11s} {'steps':>5s} {'Clarabel':>9s} "
          f"{'speed-up':>8s} {'gap newton':>10s} {'gap Clar.':>9s} {'zeros':>7s}  agree")
    warm = RankingProblem(_tiny_ranking(), lam=lam, variant=_elastic_variant("l1+lower0", 1.0, 0.1, 3))
    for solver, kw in (("prox_newton", {}), ("clarabel", {"formulation": "lifted"})):  # imports and first calls
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solve(warm, solver, **kw)
    for label, data in _elastic_data(args):
        costs = cost_table(data, tau, mu)
        oracle = VariantOracle.from_data(data, costs)
        r0 = oracle.squared_hinge(np.zeros(data.n_features))
        threshold = float(np.abs(oracle.gradient(r0.score_gradient)).max(initial=0.0))
        for name in names:
            variant = _elastic_variant(name, threshold, args.elastic_l1, data.n_features)
            problem = RankingProblem(data, tau=tau, mu=mu, lam=lam, variant=variant)
            out = {}
            for method, kw in (("prox_newton", {}), ("clarabel", {"formulation": "lifted"})):
                if method == "clarabel" and "clarabel" in set(split(args.skip) or []):
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", InaccurateSolutionWarning)
                    with Measure(args.memory) as m:
                        res = solve(problem, method, tol=args.tol, **kw)
                out[method] = (res, m)
            a, ma = out["prox_newton"]
            row = {"instance": "elastic", "data": label, "n_pairs": costs.total_pairs, "n_documents": data.n_documents,
                   "n_features": data.n_features, "variant": variant.describe() if name != "l1+signs" else
                   f"{variant.describe()} (signs)", "l1": variant.l1, "prox_newton_seconds": ma.seconds,
                   "prox_newton_status": a.status, "prox_newton_iterations": a.iterations,
                   "prox_newton_relative_gap": a.relative_gap, "prox_newton_peak_bytes": int(ma.peak_bytes),
                   "zeros": int(np.sum(a.w == 0)), "oracle_calls": a.extras.get("oracle_calls"),
                   "cg_iterations": a.extras.get("cg_iterations")}
            agree, speed, b_gap, b_t = "-", float("nan"), float("nan"), float("nan")
            if "clarabel" in out:
                b, mb = out["clarabel"]
                speed, b_gap, b_t = mb.seconds / ma.seconds, b.relative_gap, mb.seconds
                ok = (abs(a.objective - b.objective) <= a.gap_L + b.gap_L
                      and float(np.abs(a.w - b.w).max()) <= a.distance_bound + b.distance_bound)
                agree = "yes" if ok else "NO"
                row.update({"clarabel_seconds": mb.seconds, "clarabel_status": b.status,
                            "clarabel_relative_gap": b.relative_gap, "clarabel_peak_bytes": int(mb.peak_bytes),
                            "speedup": speed, "agree": ok})
            rows.append(row)
            print(f"  {label:44s} {costs.total_pairs:9,d} {name:10s} {ma.seconds:10.3f}s {a.iterations:5d} "
                  f"{b_t:8.2f}s {speed:7.1f}x {a.relative_gap:10.1e} {b_gap:9.1e} {row['zeros']:3d}/{data.n_features:<3d}  "
                  f"{agree}", flush=True)
    timed = [r for r in rows if "speedup" in r and r["n_pairs"] >= 100_000]
    if timed:
        worst = min(timed, key=lambda r: r["speedup"])
        print(f"  target: prox_newton >= 10x faster than Clarabel (lifted) from 100k pairs on: "
              f"{'PASS' if worst['speedup'] >= 10 else 'MISS'} (slowest {worst['speedup']:.1f}x, {worst['data']}, "
              f"{worst['variant']}); all within certified bounds: {all(r['agree'] for r in rows if 'agree' in r)}")
    return rows, {"instance": "elastic", "C": args.C, "lam": lam, "tol": args.tol, "l1_fraction": args.elastic_l1}


def _tiny_ranking():
    from cvxrank.datasets import make_ranking

    return make_ranking(n_queries=4, n_features=3, random_state=0)


# -- floor: solves counted in floor passes ------------------------------------------
def _floor_pass(X, repeat: int = 5) -> float:
    """Median seconds of one floor pass: ``s = X w``, ``Xᵀ v`` and ``argsort`` of the ``m`` scores (1 BLAS thread).

    Any exact method on the pair-free oracle does at least this per oracle call. The products are the
    oracle's own (:func:`cvxrank.native.products.products`: compiled passes for a float64 or float32 CSR ``X``, else
    :mod:`cvxrank._float64`'s float64 arithmetic) on the ``X`` given: the data's, or the one the solver keeps
    (:func:`~cvxrank.native.cutting_plane.solver_x`; on the real sample a dense array without the columns that
    carry no pair information, whose pass takes about half the CSR's), which the shape suite times too.
    """
    from cvxrank.native.cutting_plane import blas_threads
    from cvxrank.native.kernels import COMPILED
    from cvxrank.native.products import products

    rng = np.random.default_rng(0)
    w = rng.standard_normal(X.shape[1])
    v = rng.standard_normal(X.shape[0])
    times = []
    product = products(X, COMPILED)
    with blas_threads(1):
        for _ in range(repeat + 1):
            t0 = time.perf_counter()
            s = product.matvec(w)
            np.argsort(s)
            product.rmatvec(v)
            times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


def _floor_solver(method):
    import functools

    from cvxrank.native import cutting_plane

    return cutting_plane if method == "cutting_plane" else functools.partial(cutting_plane, newton_gap=None)


def _floor_reference(method, data, tau, mu, lam, costs, fp, x_bytes, args, rows):
    """LinearSVC on pair differences or Clarabel on the lifted QP at ``lam``, in floor passes, where it fits.

    Neither reports a certified gap along the way: each runs once to its own default accuracy, and its
    final ``w`` is scored by the oracle against the best certified lower bound of this ``lam`` so far
    (run a pair-free method first), or Clarabel's own certified bound where that is better. Its time is
    then entered at every gap that ``w`` reaches: an upper bound on its time to that gap.
    """
    from cvxrank._memory import fits_memory
    from cvxrank.native import PairFreeOracle

    runner = {"linearsvc": _run_linearsvc, "clarabel": _run_clarabel}[method]
    need = costs.total_pairs * data.n_features * 8
    row = {"instance": "floor", "data": args.floor_data, "dtype": str(data.X.dtype), "method": method, "lam": lam,
           "C": 1.0 / (2.0 * lam)}
    if not fits_memory(3 * need):
        row["skipped"] = (f"its pair differences alone take {costs.total_pairs:,} pairs x {data.n_features} features "
                          f"x 8 B = {_fmt_bytes(need)}")
        print(f"  {method:14s} {'-':>4s} {'-':>8s} {lam:7g}  skipped: {row['skipped']}", flush=True)
        return row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Measure(args.memory) as meas:
            w, _, info = runner(data, tau, mu, lam)
    oracle = PairFreeOracle.from_data(data, costs)
    F = lam * float(w @ w) + oracle(w, counts=False).loss
    lowers = [r["lower_bound"] for r in rows if r.get("lam") == lam and "lower_bound" in r]
    lower = max(lowers + [info.get("lower_bound", -np.inf)])
    rel = (F - lower) / F
    gaps = {f"{g:.0e}": ({"seconds": meas.seconds, "oracle_calls": None, "floor_passes": meas.seconds / fp}
                         if rel <= g else None) for g in FLOOR_GAPS}
    row.update({"seconds": meas.seconds, "oracle_calls": None, "floor_passes": meas.seconds / fp,
                "floor_pass_seconds": fp, "peak_bytes": int(meas.peak_bytes), "memory_vs_X": meas.peak_bytes / x_bytes,
                "relative_gap": rel, "status": info["status"], "objective": F, "scored_against": lower,
                "at_gap": gaps})
    cells = "".join(f" {'-':>22s}" if gaps[k] is None else
                    f" {gaps[k]['seconds']:7.2f} {'-':>5s} {gaps[k]['floor_passes']:8.1f}" for k in gaps)
    print(f"  {method:14s} {'-':>4s} {'-':>8s} {lam:7g} {meas.seconds:7.2f}s {'-':>6s} {row['floor_passes']:9.1f} "
          f"{_fmt_bytes(meas.peak_bytes):>10s} {row['memory_vs_X']:5.2f}{cells}  {info['status']} (gap {rel:.1e})",
          flush=True)
    return row


def _at_gaps(history, floor_pass):
    """Time, oracle calls and floor passes at which the run's certified gap first reached each of FLOOR_GAPS."""
    out = {}
    rel = history["relative_gap"].to_numpy()
    for g in FLOOR_GAPS:
        hit = np.flatnonzero(rel <= g)
        key = f"{g:.0e}"
        if hit.size:
            row = history.iloc[int(hit[0])]
            out[key] = {"seconds": float(row["time"]), "oracle_calls": int(row["oracle_calls"]),
                        "floor_passes": float(row["time"]) / floor_pass}
        else:
            out[key] = None
    return out


def _floor(args, tau, mu):
    """Every pair-free method at every lambda, in floor passes of this process."""
    from cvxrank.costs import check_lam
    from cvxrank.datasets import make_ohsumed_like, make_web_like
    from cvxrank.native import PairFreeOracle, cost_table

    make = make_web_like if args.floor_data == "web" else make_ohsumed_like
    queries = args.web_queries if args.floor_data == "web" else args.ohsumed_queries
    data = make(n_queries=queries, random_state=args.seed, dtype=np.dtype(args.floor_dtype))
    lams = [check_lam(float(x)) for x in split(args.floor_lams) or []]
    methods = split(args.floor_methods) or []
    threads = oracle_threads(args.oracle_threads)
    kernels = _kernels(args.kernel)
    unknown = [m for m in methods if m not in FLOOR_METHODS]
    if unknown or not methods or not lams:
        raise ValidationError(f"--floor-methods takes {', '.join(FLOOR_METHODS)} (got {methods}); --floor-lams a list")
    if "linearsvc" in methods and not any(m in ("cutting_plane", "planes_only", "clarabel")
                                          for m in methods[:methods.index("linearsvc")]):
        raise ValidationError("--floor-methods: linearsvc certifies nothing itself; list cutting_plane, planes_only or "
                              "clarabel before it, whose certified bound scores its w")
    costs = cost_table(data, tau, mu)
    values = data.X.data if hasattr(data.X, "indptr") else data.X
    x_bytes = 8 * values.size  # X in float64: every ratio "x X" is to it, also when X is stored in float32
    stored = values.nbytes
    repeat = args.floor_repeat if args.floor_repeat is not None else (1 if args.floor_data == "web" else 5)
    if repeat < 1:
        raise ValidationError(f"--floor-repeat must be at least 1, got {repeat}")
    fp = _floor_pass(data.X, max(5, repeat))
    gc.collect()
    generation_peak = peak_rss()  # read before the reset below, which clears the kernel's mark (ru_maxrss too)
    base_rss = reset_peak_rss()  # from here the peak counts X, the interpreter and the solves, not generation
    storage = ("" if stored == x_bytes else
               f" in float64, {_fmt_bytes(stored)} as stored here in {data.X.dtype} (ratios 'x X' are to the float64 size)")
    print(f"\n== floor: {args.floor_data}-like, {data.n_documents:,} documents, {data.n_features} features, "
          f"{costs.total_pairs:,} pairs, mu {mu or 'none'}; X takes {_fmt_bytes(x_bytes)}{storage}; one floor pass "
          f"(X w, X^T v, argsort of m) = {fp * 1e3:.2f} ms", flush=True)
    head = "".join(f" {'to ' + f'{g:.0e}':>22s}" for g in FLOOR_GAPS)
    print(f"  {'method':14s} {'thr':>4s} {'kernel':>8s} {'lambda':>7s} {'time':>8s} {'calls':>6s} {'floor p.':>9s} {'peak mem':>10s} "
          f"{'x X':>5s}{head}  status")
    print(f"  {'':14s} {'':4s} {'':8s} {'':7s} {'':8s} {'':6s} {'':9s} {'':10s} {'':5s}"
          + "".join(f" {'s / calls / floor p.':>22s}" for _ in FLOOR_GAPS))
    rows = []
    for lam, method, thr, kern in [(lam, method, thr, kern) for lam in lams for method in methods
                                   for thr in (threads if method not in REFERENCES else [None])
                                   for kern in (kernels if method not in REFERENCES else [None])]:
        if method in REFERENCES:
            rows.append(_floor_reference(method, data, tau, mu, lam, costs, fp, x_bytes, args, rows))
            continue
        solver = _floor_solver(method)
        tol = args.floor_tol if method == "cutting_plane" or args.floor_reference_tol is None \
            else args.floor_reference_tol
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Measure(args.memory) as meas:
                oracle = PairFreeOracle.from_data(data, costs, threads=thr, kernel=kern)
                run = solver(oracle, lam, tol=tol)
            del oracle
            times = [run.solve_time]
            if repeat > 1:  # the median of R unsampled solves (each from a fresh oracle) for time, calls and gaps
                runs = []
                for _ in range(repeat):
                    oracle = PairFreeOracle.from_data(data, costs, threads=thr, kernel=kern)
                    runs.append(solver(oracle, lam, tol=tol))
                    del oracle
                runs.sort(key=lambda r: r.solve_time)
                run, times = runs[(repeat - 1) // 2], [r.solve_time for r in runs]
        gaps = _at_gaps(run.history, fp)
        row = {"instance": "floor", "data": args.floor_data, "dtype": str(data.X.dtype), "method": method,
               "oracle_threads": _threads_label(thr), "kernel": _kernel_label(kern), "lam": lam, "C": 1.0 / (2.0 * lam), "seconds": run.solve_time,
               "oracle_calls": run.oracle_calls,
               "floor_passes": run.solve_time / fp, "floor_pass_seconds": fp, "peak_bytes": int(meas.peak_bytes),
               "memory_vs_X": meas.peak_bytes / x_bytes, "relative_gap": run.relative_gap, "status": run.status,
               "objective": run.objective, "lower_bound": run.lower_bound, "at_gap": gaps, "repeat": repeat,
               "seconds_each": times}
        rows.append(row)
        cells = "".join(f" {'-':>22s}" if gaps[k] is None else
                        f" {gaps[k]['seconds']:7.2f} {gaps[k]['oracle_calls']:5d} {gaps[k]['floor_passes']:8.1f}"
                        for k in gaps)
        print(f"  {method:14s} {_threads_label(thr):>4s} {_kernel_label(kern):>8s} {lam:7g} {run.solve_time:7.2f}s {run.oracle_calls:6d} "
              f"{row['floor_passes']:9.1f} {_fmt_bytes(meas.peak_bytes):>10s} {row['memory_vs_X']:5.2f}{cells}  {run.status}", flush=True)
        gc.collect()
    print("  thr: the oracle's threads (sort, search, sums; BLAS at 1); kernel: its sweeps (compiled or numpy); floor p.: solve time / one floor pass of this "
          "process; peak mem: RSS increase during oracle set-up and solve (X excluded)")
    timed = ("one solve, with the memory sampler running" if repeat == 1 else
             f"the median of {repeat} solves without the memory sampler (the memory from one more, sampled)")
    print(f"  time, calls and gaps: {timed}; the floor pass: the median of {max(5, repeat)}")
    if any(m in REFERENCES for m in methods):
        print("  linearsvc / clarabel: one run to their own default accuracy, its w scored against the best certified "
              "lower bound of that lambda; its time is entered at every gap that w reaches (an upper bound)")
    solves_peak = peak_rss()
    peak = max(generation_peak, solves_peak)
    of = "" if stored == x_bytes else f" (X in {data.X.dtype}: {solves_peak / stored:.2f} x its own size)"
    print(f"  process RSS after generating the data: {_fmt_bytes(base_rss)} = {base_rss / x_bytes:.2f} x X; peak RSS "
          f"during the solves (X, the interpreter and the data included): {_fmt_bytes(solves_peak)} = "
          f"{solves_peak / x_bytes:.2f} x X{of}; X = {_fmt_bytes(x_bytes)}, its float64 size")
    print(f"  process peak RSS while generating the data: {_fmt_bytes(generation_peak)} = "
          f"{generation_peak / x_bytes:.2f} x X")
    meta = {"instance": "floor", "data": args.floor_data, "n_documents": data.n_documents,
            "n_features": data.n_features, "n_pairs": costs.total_pairs, "x_bytes": x_bytes,
            "x_dtype": str(data.X.dtype), "x_stored_bytes": stored,
            "floor_pass_seconds": fp, "repeat": repeat, "process_peak_rss_bytes": peak, "rss_after_data_bytes": base_rss,
            "generation_peak_rss_bytes": generation_peak, "solves_peak_rss_bytes": solves_peak}
    return rows, meta


# -- shapes: the data people have --------------------------------------------------------
def _sparse_wide(seed: int, n_documents: int = 20_000, n_features: int = 20_000, per_row: int = 30,
                 per_query: int = 100):
    """Sparse high-dimensional data: CSR ``n_documents x n_features`` with about ``per_row`` non-zeros a row, queries
    of ``per_query`` documents, 3 grades cut at each query's quantiles of a noisy linear score (no dense draw)."""
    import scipy.sparse as sp

    from cvxrank.data import RankingData

    rng = np.random.default_rng(seed)
    nnz = n_documents * per_row
    rows = np.repeat(np.arange(n_documents), per_row)
    cols = rng.integers(0, n_features, nnz)
    X = sp.csr_matrix((rng.standard_normal(nnz), (rows, cols)), shape=(n_documents, n_features))
    X.sum_duplicates()
    latent = X @ rng.standard_normal(n_features) + 0.5 * rng.standard_normal(n_documents)
    qid = np.arange(n_documents) // per_query
    y = np.zeros(n_documents, dtype=np.int64)
    for q in range(qid[-1] + 1):
        idx = np.flatnonzero(qid == q)
        y[idx] = np.searchsorted(np.quantile(latent[idx], [1 / 3, 2 / 3]), latent[idx])
    return RankingData(X, y=y, qid=qid)


def _shape_data(name: str, seed: int):
    """``(label, data)`` of a shape, or ``(label, None)`` when its file is missing."""
    from cvxrank.data import RankingData, load_letor
    from cvxrank.datasets import make_ranking

    if name == "letor":
        if not os.path.exists(LETOR_SAMPLE):
            return f"real sample ({LETOR_SAMPLE} missing: skipped)", None
        return "real sample (train.letor)", load_letor(LETOR_SAMPLE)
    if name == "make_ranking":
        return "make_ranking 100 q x 20-60 docs, 50 f", make_ranking(n_queries=100, docs_per_query=(20, 60),
                                                                      n_features=50, random_state=seed)
    if name == "sparse_wide":
        return "sparse 20k docs x 20k f, ~30 nnz/row", _sparse_wide(seed)
    if name == "one_query":
        return "one query of 20,000 docs, 20 f", make_ranking(n_queries=1, docs_per_query=(20_000, 20_000),
                                                               n_features=20, random_state=seed)
    if name == "many_features":  # dense, few documents a feature: the Newton phase's hard case at small λ
        return "make_ranking 60 q x 20-60 docs, 300 f", make_ranking(n_queries=60, docs_per_query=(20, 60),
                                                                      n_features=300, random_state=seed)
    data = make_ranking(n_queries=100, docs_per_query=(20, 60), n_features=50, random_state=seed)
    return "heavy ties (make_ranking, X rounded)", RankingData(np.round(data.X), y=data.y, qid=data.qid)


def _svmrank_note() -> str | None:
    """None when ``svm_rank_learn`` is on the PATH, else why the SVMrank column is empty (never downloaded)."""
    import shutil

    if shutil.which("svm_rank_learn"):
        return None
    return "svm_rank_learn is not on the PATH: the SVMrank column is skipped (the benchmark never downloads it)"


def _run_svmrank(data, lam, tol, workdir):
    """SVMrank (Joachims) on ``data`` at the same objective: ``-c`` per query is ``C #queries`` with ``C = 1/(2λ)``
    per pair (μ = 1 only, SVMrank's own loss); seconds of ``svm_rank_learn`` and its ``w``."""
    import subprocess

    from cvxrank.data import save_letor

    path = os.path.join(workdir, "train.dat")
    save_letor(data, path)
    c = data.n_queries / (2.0 * lam)
    t0 = time.perf_counter()
    subprocess.run(["svm_rank_learn", "-c", repr(c), "-e", repr(tol), "-l", "1", path,
                    os.path.join(workdir, "model")], check=True, capture_output=True)
    return time.perf_counter() - t0


def _shapes(args, tau, mu):
    """The native solver on the shapes of data people have, through the one door, in floor passes of this process."""
    from cvxrank.costs import check_lam
    from cvxrank.native import cost_table
    from cvxrank.native.cutting_plane import solver_x
    from cvxrank.problem import RankingProblem
    from cvxrank.solvers import solve

    lams = [check_lam(float(x)) for x in split(args.shapes_lams) or []]
    starts = split(args.shapes_start) or ["auto"]
    thresholds = split(args.shapes_threshold) or ["auto"]
    runs = [(start, threshold) for start in starts for threshold in thresholds]  # their solves alternate
    note = _svmrank_note()
    rows = []
    print("\n== shapes: solve(problem, 'cutting_plane', tol) through the door; floor p. = time / one floor pass "
          "(X w, X^T v, argsort of m) of the data's X in this process, timed between the solves (median); kept X = "
          "the same in floor passes of the X the solver keeps (dense when small and not very sparse, the columns "
          "without pair information dropped: solver_x); fixed = door time - the solver's own time (checks, cost table, oracle, certificate)")
    if note:
        print(f"  {note}")
    print(f"  {'shape':40s} {'lambda':>7s} {'time':>9s} {'spread':>7s} {'calls':>6s} {'floor p.':>9s} {'kept X':>7s} "
          f"{'fixed':>8s} {'1 pass':>8s} {'rel gap':>8s}  bar (100 floor p. + 20 ms)")
    for name in split(args.shapes) or []:
        label, data = _shape_data(name, args.seed)
        if data is None:
            print(f"  {label}")
            continue
        costs = cost_table(data, tau, mu)
        X = data.X
        x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if hasattr(X, "indptr") else X.nbytes
        print(f"  {label}: {data.n_documents:,} documents, {data.n_features} features, {costs.total_pairs:,} pairs",
              flush=True)
        kept = solver_x(data)[0]
        if kept is X:
            kept = None  # the solver reads the data's X itself: one floor pass for both columns
        else:
            print(f"    the solver keeps X as {_describe_x(kept)} (the data's: {_describe_x(X)})", flush=True)
        for lam in lams:
            problem = RankingProblem(data, tau=tau, mu=mu, lam=lam)
            pair_cd = {"auto": None, "on": True, "off": False}[args.shapes_pair_cd]
            options = {"tol": args.tol, "time_limit": args.shapes_time_limit, "max_planes": args.shapes_max_planes,
                       "pair_cd": pair_cd}
            times = {r: [] for r in runs}
            own, last, passes, kept_passes = {r: [] for r in runs}, {}, [], []
            for _ in range(args.shapes_repeat):
                # X w, Xᵀ v and an argsort of the m scores, the least an oracle call does: measured between the
                # solves, so that a change of the machine's load between them moves both sides of the ratio
                passes.append(_floor_pass(data.X, FLOOR_PASS_REPEAT))
                kept_passes.append(passes[-1] if kept is None else _floor_pass(kept, FLOOR_PASS_REPEAT))
                for r in runs:  # several first points or threshold settings: their solves alternate
                    start, threshold = r
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t0 = time.perf_counter()
                        last[r] = solve(problem, "cutting_plane", start=start, threshold=THRESHOLDS[threshold],
                                        **options)
                        times[r].append(time.perf_counter() - t0)
                        own[r].append(float(last[r].solve_time))
            for r in runs:  # SVMrank (when on the PATH) once per (shape, lambda): beside the first row
                rows.append(_shape_row(args, problem, {**options, "threshold": THRESHOLDS[r[1]]}, name, label, lam,
                                       r, times[r], own[r], last[r], (passes, kept_passes), x_bytes, costs,
                                       note if r == runs[0] else "once", tau, mu, data))
        del data, kept
        gc.collect()
    met, kept_met = sum(r["bar"] for r in rows), sum(r["bar_kept_x"] for r in rows)
    print(f"  bar met on {met} of {len(rows)} (shape, lambda)" + ("" if len(runs) == 1 else " and setting")
          + f"; against a floor pass of the X the solver keeps, on {kept_met}")
    return rows, {"instance": "shapes", "tol": args.tol, "svmrank": note or "run"}


#: ``--shapes-threshold``'s values as ``solve(..., threshold=...)`` takes them.
THRESHOLDS = {"auto": None, "on": True, "off": False}

#: Floor passes timed (their median, after one untimed) before each round of a shape row's solves.
FLOOR_PASS_REPEAT = 3


def _describe_x(X) -> str:
    """``"a dense 3,005 x 200 float64 array"`` or ``"CSR 3,005 x 300 float64, 32% stored"``."""
    m, n = X.shape
    if hasattr(X, "indptr"):
        return f"CSR {m:,} x {n:,} {X.dtype}, {X.nnz / max(m * n, 1):.0%} stored"
    return f"a dense {m:,} x {n:,} {X.dtype} array"


def _shape_row(args, problem, options, name, label, lam, run, times, own, res, passes, x_bytes, costs, note, tau,
               mu, data) -> dict:
    """One row of the shape suite, printed: the median of the timed solves of ``run`` (the first point ``start``
    and the ``--shapes-threshold`` setting) over the median of the floor passes timed between them, the bar;
    ``passes`` is ``(floor passes of the data's X, floor passes of the X the solver keeps)``: the bar is read
    against the first (the yardstick of the data as given) and, as ``bar_kept_x``, against the second,
    and with ``--shapes-memory`` the peak of one more solve under tracemalloc. ``oracle_calls`` are the solve's; the
    first point's own work (products with ``X`` and sweeps, :mod:`cvxrank.native.start`) is in ``start_products`` and
    ``start_sweeps`` (its time is in ``seconds``). SVMrank runs only when ``note`` is None."""
    import tempfile

    from cvxrank.solvers import solve

    start, threshold = run
    peak = None
    if args.shapes_memory:  # apart from the timed solves: tracemalloc slows Python code
        with warnings.catch_warnings(), Measure("tracemalloc") as m:
            warnings.simplefilter("ignore")
            solve(problem, "cutting_plane", start=start, **options)
        peak = m.peak_bytes / x_bytes
    passes, kept_passes = passes
    t, one, kept = float(np.median(times)), float(np.median(passes)), float(np.median(kept_passes))
    fixed = float(np.median(np.subtract(times, own)))
    bar = t <= 100 * one + 0.020 and res.status == "optimal"
    bar_kept = t <= 100 * kept + 0.020 and res.status == "optimal"
    row = {"instance": "shapes", "shape": name, "label": label, "lam": lam, "seconds": t,
           "seconds_each": times, "oracle_calls": int(res.extras["oracle_calls"]), "eval_seconds": one,
           "eval_seconds_each": [float(p) for p in passes],
           "floor_passes": t / one, "kept_x_eval_seconds": kept,
           "kept_x_eval_seconds_each": [float(p) for p in kept_passes], "floor_passes_kept_x": t / kept,
           "bar_kept_x": bool(bar_kept), "fixed_seconds": fixed, "relative_gap": float(res.relative_gap),
           "status": res.status, "bar": bool(bar), "n_pairs": int(costs.total_pairs),
           "peak_over_x": peak, "max_planes": args.shapes_max_planes, "pair_cd": args.shapes_pair_cd,
           "threshold": threshold,
           "bound": res.certificate.kind, "start": start, "started": res.extras.get("start"),
           "start_products": res.extras.get("start_products"), "start_sweeps": res.extras.get("start_sweeps")}
    if note is None and (mu is None or mu == "none"):
        with tempfile.TemporaryDirectory() as tmp:
            row["svmrank_seconds"] = _run_svmrank(data, lam, 1e-3, tmp)
    spread = (max(times) - min(times)) / t if t > 0 else 0.0
    tags = ([] if args.shapes_start == start else [f"start {start}"]) + (
        [] if args.shapes_threshold == threshold else [f"threshold {threshold}"])
    print(f"  {', '.join(tags):>40s} {lam:7g} {t:8.3f}s {spread:6.0%} "
          f"{row['oracle_calls']:6d} {row['floor_passes']:9.1f} {row['floor_passes_kept_x']:7.1f} "
          f"{fixed * 1e3:6.1f}ms {one * 1e3:6.2f}ms "
          f"{row['relative_gap']:8.1e}  {'MET' if bar else 'missed'} ({res.status})"
          + ("" if peak is None else f"  peak/X {peak:.2f}"), flush=True)
    return row


def check_args(args) -> tuple[list, set, float, object]:
    """Refuse any option no run could use, in one line, before the first instance is generated (each
    option is checked whether or not the instances asked for read it); return the instances, the
    references to skip, ``λ = 1/(2C)`` and the :class:`~cvxrank.costs.Costs` of ``--tau`` and ``--mu``."""
    from cvxrank._io import check_outputs
    from cvxrank._validation import POSITIVE, POSITIVE_INT, SEED, TOL, Interval
    from cvxrank.bench._checks import check_lam_option, check_option, number_list
    from cvxrank.costs import Costs, check_lam

    instances = split(args.instances) or []
    unknown = [i for i in instances if i not in INSTANCES]
    if unknown or not instances:
        raise ValidationError(f"unknown instances {unknown}; choose from {', '.join(INSTANCES)}")
    skip = set(split(args.skip) or [])
    bad = skip - set(REFERENCES)
    if bad:
        raise ValidationError(f"--skip takes {', '.join(REFERENCES)}, got {sorted(bad)}")
    lam = check_lam(1.0 / (2.0 * check_lam_option("C", args.C)))
    costs = Costs.from_text(args.tau, args.mu)
    for flag in ("tol", "web-tol", "floor-tol"):
        check_option(flag, getattr(args, flag.replace("-", "_")), TOL)
    if args.floor_reference_tol is not None:
        check_option("floor-reference-tol", args.floor_reference_tol, TOL)
    check_option("web-time-limit", args.web_time_limit, POSITIVE)
    for flag in ("ohsumed-queries", "web-queries", "scaling-features", "scaling-documents", "repeat",
                 "certificate-queries"):
        check_option(flag, getattr(args, flag.replace("-", "_")), POSITIVE_INT)
    if args.floor_repeat is not None:
        check_option("floor-repeat", args.floor_repeat, POSITIVE_INT)
    check_option("seed", args.seed, SEED)
    if len(number_list("scaling-queries", args.scaling_queries, POSITIVE_INT, kind=int)) < 2:
        raise ValidationError("--scaling-queries needs at least two sizes (four or more for a meaningful fit)")
    number_list("scaling-lengths", args.scaling_lengths, POSITIVE_INT, kind=int, empty=True)
    number_list("squared-queries", args.squared_queries, POSITIVE_INT, kind=int)
    number_list("elastic-queries", args.elastic_queries, POSITIVE_INT, kind=int)
    if len(number_list("elastic-hard", args.elastic_hard, POSITIVE_INT, kind=int, empty=True)) not in (0, 4):
        raise ValidationError("--elastic-hard takes four numbers: queries, fewest and most documents, features")
    check_option("elastic-l1", args.elastic_l1, POSITIVE)
    bad = [v for v in (split(args.elastic_variants) or []) if v not in ELASTIC_VARIANTS]
    if bad or not split(args.elastic_variants):
        raise ValidationError(f"--elastic-variants takes {', '.join(ELASTIC_VARIANTS)}, got {args.elastic_variants!r}")
    for value in number_list("floor-lams", args.floor_lams, Interval()):
        check_lam_option("floor-lams", value)
    methods = split(args.floor_methods) or []
    unknown = [m for m in methods if m not in FLOOR_METHODS]
    if unknown or not methods:
        raise ValidationError(f"--floor-methods takes {', '.join(FLOOR_METHODS)}, got {args.floor_methods!r}")
    oracle_threads(args.oracle_threads)
    _kernels(args.kernel)
    bad = [v for v in (split(args.shapes) or []) if v not in SHAPES]
    if bad or not split(args.shapes):
        raise ValidationError(f"--shapes takes {', '.join(SHAPES)}, got {args.shapes!r}")
    for value in number_list("shapes-lams", args.shapes_lams, Interval()):
        check_lam_option("shapes-lams", value)
    check_option("shapes-repeat", args.shapes_repeat, POSITIVE_INT)
    check_option("shapes-time-limit", args.shapes_time_limit, POSITIVE)
    from cvxrank.native.cutting_plane import START_CHOICES

    values = split(args.shapes_start) or []
    bad = [v for v in values if v not in START_CHOICES]
    if bad or not values or len(set(values)) < len(values):
        raise ValidationError(f"--shapes-start takes {', '.join(START_CHOICES)}, each once, got {args.shapes_start!r}")
    values = split(args.shapes_threshold) or []
    bad = [v for v in values if v not in THRESHOLDS]
    if bad or not values or len(set(values)) < len(values):
        raise ValidationError(f"--shapes-threshold takes {', '.join(THRESHOLDS)}, each once, got "
                              f"{args.shapes_threshold!r}")
    if "on" in values and args.shapes_pair_cd == "off":
        raise ValidationError("--shapes-threshold on runs before pair_cd: not with --shapes-pair-cd off")
    if args.shapes_max_planes is not None and args.shapes_max_planes < 4:
        raise ValidationError(f"--shapes-max-planes must be at least 4, got {args.shapes_max_planes}")
    check_outputs([args.json])  # before the run, not after it
    return instances, skip, lam, costs


def run(args) -> int:
    from cvxrank.datasets import make_ohsumed_like, make_web_like
    from cvxrank.study.report import environment

    instances, skip, lam, costs = check_args(args)
    tau, mu = costs.tau, costs.mu
    env = environment()  # the floor pass's sort moves with numpy's SIMD extensions: the JSON keeps the machine
    print(f"machine: {env['cpu']}, {env['cores']} cores; numpy {env['packages'].get('numpy', '?')} with "
          f"{', '.join(env['simd']) or 'no SIMD extensions beyond its baseline'}; BLAS {', '.join(env['blas']) or 'not found'}")
    out = {"rows": [], "meta": [], "environment": env}
    for name in instances:
        if name == "scaling":
            rows, meta = _scaling(args)
        elif name == "certificate":
            rows, meta = _certificate_share(args, tau, mu, lam)
        elif name == "squared":
            rows, meta = _squared(args, tau, mu, lam)
        elif name == "elastic":
            rows, meta = _elastic(args, tau, mu, lam)
        elif name == "floor":
            rows, meta = _floor(args, tau, mu)
        elif name == "shapes":
            rows, meta = _shapes(args, tau, mu)
        elif name == "ohsumed":
            data = make_ohsumed_like(n_queries=args.ohsumed_queries, random_state=args.seed)
            refs = [r for r in REFERENCES if r not in skip]
            rows, meta = _solve_instance(name, data, args, tau, mu, lam, args.tol, None, refs,
                                         lambda r: "--skip")
        else:
            data = make_web_like(n_queries=args.web_queries, random_state=args.seed)
            from cvxrank.native import cost_table

            n_pairs = cost_table(data).total_pairs
            need = n_pairs * data.n_features * 8
            why = {"linearsvc": f"it needs the pair differences D: {n_pairs:,} pairs x {data.n_features} features x 8 B "
                                f"= {_fmt_bytes(need)}, before liblinear's own copy",
                   "clarabel": f"one slack and one margin constraint per pair ({n_pairs:,}) in an interior-point "
                               f"KKT system; pair storage at the D estimate, {_fmt_bytes(need)}, gives the order"}
            rows, meta = _solve_instance(name, data, args, tau, mu, lam, args.web_tol, args.web_time_limit, [],
                                         why.get)
            meta["reference_memory_estimate_bytes"] = need
            del data
            gc.collect()
        out["rows"].extend(rows)
        out["meta"].append(meta)
    if args.json:
        write_json(args.json, out)
        print(f"wrote {args.json}")
    return 0
