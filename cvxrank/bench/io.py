"""Reading LETOR files: time against lines, and a web-sized file against scikit-learn's reader.

In this one process, on generated LETOR files (seeded; grades 0-4, 100 documents a query, every
feature present on every line, as in LETOR and MSLR files):
  scaling  cvxrank.load_letor on --sizes lines of --features features: seconds per size and the
           exponent b of a least-squares fit time ~ lines^b (linear reading: b close to 1);
           scikit-learn's load_svmlight_file(query_id=True), which load_letor no longer calls in one
           piece, is timed on the sizes up to --qid-max-lines for comparison (it is quadratic);
  big      a --big-lines x --big-features file (default 2,000,000 x 136, an MSLR-WEB30K fold,
           about 2.6 GB on disk) read by load_letor and by load_svmlight_file(query_id=False), the
           fastest scikit-learn reading with no query ids: the ratio of the two times.
load_letor does more than the reference: the strict line checks, the query ids, and the dense X
it returns for files whose rows are full. Files are written once into --dir and reused.
"""

from __future__ import annotations

import os
import time

import numpy as np

from cvxrank._args import positive_ints

HELP = "reading LETOR files: time against lines (fitted exponent) and a 2M-line file vs scikit-learn"
EPILOG = """examples:
  cvxrank bench io                                  # scaling sizes and the 2M x 136 file (minutes, ~3 GB disk)
  cvxrank bench io --skip-big                       # the scaling table only
  cvxrank bench io --sizes 50000,100000,200000,400000 --features 20
  cvxrank bench io --big-lines 500000 --dir /var/tmp/cvxrank-io --json io.json
"""

#: Targets: largest fitted exponent of time vs lines, and largest time ratio to load_svmlight_file(query_id=False).
EXPONENT_TARGET = 1.15
RATIO_TARGET = 1.5


def add_arguments(parser) -> None:
    parser.add_argument("--sizes", default="100000,200000,400000,800000", metavar="N,N,...",
                        help="lines of the scaling files (default 100000,200000,400000,800000)")
    parser.add_argument("--features", type=int, default=10, help="features of the scaling files (default 10)")
    parser.add_argument("--qid-max-lines", type=int, default=200_000, dest="qid_max_lines",
                        help="time scikit-learn's query_id=True reader up to this many lines (default 200000)")
    parser.add_argument("--big-lines", type=int, default=2_000_000, dest="big_lines",
                        help="lines of the big file (default 2000000)")
    parser.add_argument("--big-features", type=int, default=136, dest="big_features",
                        help="features of the big file (default 136)")
    parser.add_argument("--skip-big", action="store_true", dest="skip_big", help="only the scaling table")
    parser.add_argument("--dir", default=None, metavar="DIR",
                        help="where the generated files are written and reused (default: a folder in the "
                             "system's temporary directory)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")


def _write_file(path: str, lines: int, features: int, seed: int = 0) -> None:
    """A seeded LETOR file: grade, qid (100 documents a query), every feature with 6 decimals."""
    from cvxrank._io import atomic_output

    rng = np.random.default_rng(seed)
    row_format = "%d qid:%d " + " ".join(f"{j}:%.6f" for j in range(1, features + 1)) + "\n"

    with atomic_output(path) as fh:
        block = 20_000
        for start in range(0, lines, block):
            n = min(block, lines - start)
            rows = np.empty((n, features + 2))
            rows[:, 0] = rng.integers(0, 5, n)
            rows[:, 1] = (start + np.arange(n)) // 100
            rows[:, 2:] = rng.random((n, features))
            fh.write("".join(row_format % tuple(r) for r in rows.tolist()))


def _file(folder: str, lines: int, features: int) -> str:
    path = os.path.join(folder, f"letor-{lines}x{features}.txt")
    if not os.path.exists(path):
        print(f"  writing {os.path.basename(path)} ...", flush=True)
        _write_file(path, lines, features)
    return path


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _exponent(sizes, seconds) -> float:
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def run(args) -> int:
    import tempfile

    from sklearn.datasets import load_svmlight_file

    from cvxrank._io import check_outputs
    from cvxrank._validation import POSITIVE_INT
    from cvxrank.bench._checks import check_option
    from cvxrank.data import load_letor
    from cvxrank.exceptions import CvxrankError

    sizes = positive_ints(args.sizes, "--sizes")
    if len(sizes) < 3 or min(sizes) < 1000 or max(sizes) < 4 * min(sizes):
        raise CvxrankError("--sizes needs at least 3 sizes of at least 1000 lines spanning at least 4x, "
                           f"got {args.sizes!r}")
    for name in ("features", "big_features", "big_lines", "qid_max_lines"):
        check_option(name.replace("_", "-"), getattr(args, name), POSITIVE_INT)
    check_outputs([args.json])  # before the files are written and read, not after
    folder = args.dir or os.path.join(tempfile.gettempdir(), "cvxrank-bench-io")
    os.makedirs(folder, exist_ok=True)
    result = {"scaling": [], "big": None}

    print(f"scaling: load_letor on {args.features}-feature files, and load_svmlight_file(query_id=True) "
          f"up to {args.qid_max_lines:,} lines")
    print(f"{'lines':>10s} {'load_letor':>11s} {'sklearn qid':>12s} {'sklearn no qid':>15s}")
    for n in sizes:
        path = _file(folder, n, args.features)
        ours = _time(lambda: load_letor(path))
        noqid = _time(lambda: load_svmlight_file(path, query_id=False, zero_based=False))
        qid = _time(lambda: load_svmlight_file(path, query_id=True, zero_based=False)) \
            if n <= args.qid_max_lines else None
        result["scaling"].append({"lines": n, "load_letor_s": ours, "sklearn_qid_s": qid, "sklearn_noqid_s": noqid})
        print(f"{n:>10,d} {ours:>10.2f}s {('%.2fs' % qid) if qid is not None else '-':>12s} {noqid:>14.2f}s",
              flush=True)
    rows = result["scaling"]
    b = _exponent([r["lines"] for r in rows], [r["load_letor_s"] for r in rows])
    result["exponent"] = b
    timed = [r for r in rows if r["sklearn_qid_s"] is not None]
    qid_b = _exponent([r["lines"] for r in timed], [r["sklearn_qid_s"] for r in timed]) if len(timed) >= 2 else None
    result["sklearn_qid_exponent"] = qid_b
    print(f"load_letor: time ~ lines^{b:.2f} over {sizes[0]:,}-{sizes[-1]:,} lines "
          f"(target <= {EXPONENT_TARGET}: {'met' if b <= EXPONENT_TARGET else 'NOT met'})")
    if qid_b is not None:
        print(f"load_svmlight_file(query_id=True): time ~ lines^{qid_b:.2f} over the {len(timed)} sizes it ran")

    if not args.skip_big:
        path = _file(folder, args.big_lines, args.big_features)
        size = os.path.getsize(path)
        print(f"\nbig: {args.big_lines:,} lines x {args.big_features} features ({size / 2**30:.2f} GiB on disk)")
        ref = _time(lambda: load_svmlight_file(path, query_id=False, zero_based=False))
        ours = _time(lambda: load_letor(path))
        ratio = ours / ref
        result["big"] = {"lines": args.big_lines, "features": args.big_features, "bytes": size,
                         "load_letor_s": ours, "sklearn_noqid_s": ref, "ratio": ratio}
        print(f"load_svmlight_file(query_id=False) {ref:.1f} s;  load_letor {ours:.1f} s;  ratio {ratio:.2f} "
              f"(target <= {RATIO_TARGET}: {'met' if ratio <= RATIO_TARGET else 'NOT met'})")
    if args.json:
        from cvxrank._io import write_json

        write_json(args.json, result)
        print(f"wrote {args.json}")
    return 0
