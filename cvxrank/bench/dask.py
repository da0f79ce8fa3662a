"""Benchmark the distributed route against the local solver on the same data.

The instance (make_web_like: --queries queries of 50-150 documents, 136 features) is written as
--shards gzipped LETOR files by a child process. Then, in this order:
  dask    a LocalCluster of --workers worker processes (one thread each, --memory-limit each,
          spilling off: a shard is not managed data), started by this process; the client is a
          process of its own, as a user's script would be (it imports only distributed and
          cvxrank.native.dask_files): the workers read the shards into dense X
          (cvxrank.native.dask_files.files_oracle with dense=True: a reading peak of about 2x a
          shard's X, not 3x) and the planes and the Newton phase run over them
          (cvxrank.native.dask_files.solve_files);
  local   this process reads the same files (load_letor) and solves with
          cvxrank.solve(problem, "cutting_plane", start="zero"): the same method, from w = 0 as
          over the shards (locally the default first fits the grades).
Reported for each: read time, solve time, oracle calls, and peak RSS; for dask also the rounds
and the payload bytes per round (w out, the shards' numbers back), the client process's peak RSS
(all of it: the interpreter and its libraries included) and each worker's peak RSS. The two solutions must agree within their certified
bounds (|L_a - L_b| <= gap_a + gap_b, max |w_a - w_b| <= distance_a + distance_b).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HELP = "the distributed route (LocalCluster, shards read on the workers) vs the local solver on the same files"
EPILOG = """examples:
  cvxrank bench dask                                  # make_web_like(), 8 shards, 2 workers
  cvxrank bench dask --queries 2000 --shards 4        # a smaller instance
  cvxrank bench dask --folder /data/web-shards        # keep (and re-use) the shard files
"""


def add_arguments(parser) -> None:
    parser.add_argument("--queries", type=int, default=10_000, help="queries of make_web_like (default 10000)")
    parser.add_argument("--shards", type=int, default=8, help="shard files (default 8)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster workers (default 2)")
    parser.add_argument("--memory-limit", dest="memory_limit", default="auto",
                        help="memory_limit of each worker (default auto: 0.75 x the size of X + 256 MB, for the "
                             "worker process itself)")
    parser.add_argument("--lam", type=float, default=0.5, help="lambda (default 0.5)")
    parser.add_argument("--mu", default="balanced", help="mu: balanced or none (default balanced)")
    parser.add_argument("--tol", type=float, default=1e-6, help="certified relative gap (default 1e-6)")
    parser.add_argument("--folder", help="where the shard files are written (kept; re-used when present)")
    parser.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")


def _write_shards(queries, n_shards, seed, folder):
    """In a child process: generate the instance and write it as gzipped LETOR shards; return X's bytes."""
    import gzip

    from sklearn.datasets import dump_svmlight_file

    from cvxrank.datasets import make_web_like

    data = make_web_like(n_queries=queries, random_state=seed)
    for i, qs in enumerate(np.array_split(data.query_ids, n_shards)):
        keep = np.isin(data.qid, qs)
        path = os.path.join(folder, f"shard-{i}.letor.gz")
        with gzip.open(path + ".part", "wb", compresslevel=1) as fh:
            dump_svmlight_file(data.X[keep], data.y[keep], fh, query_id=data.qid[keep], zero_based=False)
        os.replace(path + ".part", path)
    with open(os.path.join(folder, "x_bytes"), "w") as fh:
        fh.write(str(data.X.nbytes))


#: The dask client: a process of its own that imports only what a user's script needs. Argument: a JSON object
#: (scheduler, files, mu, lam, tol); prints "RESULT <json>" with the solve and its own peak RSS.
CLIENT = """
import json, sys, time
args = json.loads(sys.argv[1])
from distributed import Client
from cvxrank._memory import peak_rss
from cvxrank.native.dask_files import files_oracle, solve_files
client = Client(args["scheduler"], timeout=60)
try:
    start = peak_rss()
    t = time.perf_counter()
    oracle = files_oracle(client, args["files"], mu=args["mu"], dense=True, timeout=300.0)
    read = time.perf_counter() - t
    res = solve_files(client, oracle=oracle, lam=args["lam"], tol=args["tol"])
    out = {"read_time": read, "solve_time": res.solve_time, "oracle_calls": res.oracle_calls, "rounds": res.rounds,
           "bytes_sent": res.bytes_sent, "bytes_received": res.bytes_received, "status": res.status,
           "relative_gap": res.relative_gap, "objective": res.objective, "gap_L": res.gap_L,
           "distance_bound": res.distance_bound, "w": res.w.tolist(), "client_rss_start": start,
           "client_peak_rss": peak_rss(), "heavy_modules": sorted(m for m in ("pandas", "scipy.optimize", "cvxpy",
                                                                            "sklearn", "matplotlib") if m in sys.modules)}
finally:
    client.close()
print("RESULT " + json.dumps(out))
"""


def _worker_peak():
    from cvxrank._memory import peak_rss

    return peak_rss()


def _mb(x):
    return f"{x / 2**20:,.0f} MiB"


def run(args) -> int:
    import dask
    import distributed

    from cvxrank._memory import parse_size, peak_rss, reset_peak_rss
    from cvxrank.data import RankingData, load_letor
    from cvxrank.problem import RankingProblem
    from cvxrank.solvers import solve

    folder = args.folder or tempfile.mkdtemp(prefix="cvxrank-dask-")
    os.makedirs(folder, exist_ok=True)
    files = [os.path.join(folder, f"shard-{i}.letor.gz") for i in range(args.shards)]
    t = time.perf_counter()
    if not all(os.path.exists(f) for f in files) or not os.path.exists(os.path.join(folder, "x_bytes")):
        code = (f"from cvxrank.bench.dask import _write_shards; "
                f"_write_shards({args.queries}, {args.shards}, {args.seed}, {folder!r})")
        done = subprocess.run([sys.executable, "-c", code], check=False)
        if done.returncode != 0:
            print(f"writing the shards failed (exit code {done.returncode})")
            return 1
    with open(os.path.join(folder, "x_bytes")) as fh:
        x_bytes = int(fh.read())
    print(f"make_web_like({args.queries}) as {args.shards} gzipped shards in {folder} "
          f"({time.perf_counter() - t:.1f} s); X = {_mb(x_bytes)}", flush=True)
    limit = int(0.75 * x_bytes + 2**28) if args.memory_limit == "auto" else parse_size(args.memory_limit)
    mu = None if args.mu == "none" else args.mu
    out = {"queries": args.queries, "shards": args.shards, "workers": args.workers, "x_bytes": x_bytes,
           "memory_limit": limit, "lam": args.lam, "tol": args.tol}

    # -- dask: the client, a process of its own, never holds X
    config = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": False,
              "distributed.worker.memory.pause": False}
    with dask.config.set(config):
        cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                           memory_limit=limit, host="127.0.0.1", dashboard_address=":0")
        try:
            with distributed.Client(cluster) as watcher:
                watcher.wait_for_workers(args.workers)
            given = {"scheduler": cluster.scheduler_address, "files": files, "mu": mu, "lam": args.lam, "tol": args.tol}
            done = subprocess.run([sys.executable, "-c", CLIENT, json.dumps(given)], capture_output=True, text=True,
                                  check=False)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
            if done.returncode != 0 or not lines:
                print(f"the dask client failed (exit code {done.returncode}): "
                      f"{(done.stderr.strip().splitlines() or ['no message'])[-1]}")
                return 1
            d = json.loads(lines[-1][len("RESULT "):])
            with distributed.Client(cluster) as watcher:
                workers = watcher.run(_worker_peak)
        finally:
            cluster.close()
    w_dask = np.asarray(d.pop("w"))
    d.update(bytes_out_per_round=d["bytes_sent"] / max(d["rounds"], 1),
             bytes_back_per_round=d["bytes_received"] / max(d["rounds"], 1), worker_peak_rss=sorted(workers.values()))
    print(f"dask   read {d['read_time']:7.1f} s  solve {d['solve_time']:7.2f} s  calls {d['oracle_calls']:4d}  rounds "
          f"{d['rounds']:4d}  {d['bytes_out_per_round']:,.0f} B out / {d['bytes_back_per_round']:,.0f} B back a round  "
          f"gap {d['relative_gap']:.1e}  client process peak {_mb(d['client_peak_rss'])} "
          f"({d['client_peak_rss'] / x_bytes:.1%} of X; {_mb(d['client_rss_start'])} once connected)  workers' peak "
          f"{', '.join(_mb(x) for x in d['worker_peak_rss'])} (limit {_mb(limit)})", flush=True)

    # -- local: the same files in this process
    reset_peak_rss()
    t = time.perf_counter()
    parts = load_letor(files, dense=True)
    data = RankingData(np.vstack([p.X for p in parts]), np.concatenate([p.y for p in parts]),
                       np.concatenate([p.qid for p in parts]))
    del parts
    read = time.perf_counter() - t
    local = solve(RankingProblem(data, mu=mu, lam=args.lam), "cutting_plane", tol=args.tol, start="zero")
    calls = int(local.extras["oracle_calls"])
    lo = {"read_time": read, "solve_time": local.solve_time, "oracle_calls": calls, "status": local.status,
          "relative_gap": local.relative_gap, "peak_rss": peak_rss()}
    print(f"local  read {read:7.1f} s  solve {local.solve_time:7.2f} s  calls {calls:4d}  gap "
          f"{local.relative_gap:.1e}  peak {_mb(lo['peak_rss'])}", flush=True)

    agree_objective = abs(d["objective"] - local.objective) <= d["gap_L"] + local.gap_L
    agree_w = float(np.abs(w_dask - local.w).max()) <= d["distance_bound"] + local.distance_bound
    checks = {
        "agree within certified bounds": agree_objective and agree_w,
        "dask certified tol": d["status"] == "optimal",
        "dask calls <= local calls + 2": d["oracle_calls"] <= calls + 2,
        "dask solve time <= 2 x local": d["solve_time"] <= 2 * local.solve_time,
        "client process peak RSS < 10 % of X": d["client_peak_rss"] < 0.1 * x_bytes,
        "worker memory_limit below X": limit < x_bytes,
    }
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'MISS'} {name}")
    if d["heavy_modules"]:
        print(f"  note: the client imported {', '.join(d['heavy_modules'])}")
    out.update(dask=d, local=lo, checks=checks, objective_difference=abs(d["objective"] - local.objective),
               w_difference=float(np.abs(w_dask - local.w).max()))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2, default=float)
    return 0 if checks["agree within certified bounds"] else 1
