"""Shared fixtures: small seeded instances and the installed solvers."""

import errno
import queue
import threading
from pathlib import Path

import numpy as np
import pytest

from cvxrank.costs import pair_weights, theorem1_C
from cvxrank.datasets import make_ranking
from cvxrank.pairs import make_pairs
from cvxrank.solvers import available_solvers

#: The shared real data set, referred to by its relative path (never copied here).
LIGHTGBM_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "lightgbm_rank"

#: The core CVXPY solvers (Clarabel, ECOS, OSQP, SCS), parametrised when installed.
CORE_CVXPY = [s for s in ("clarabel", "ecos", "osqp", "scs") if s in available_solvers()]


class Instance:
    """Pairs with τ/μ costs, λ and Theorem 1's C."""

    def __init__(self, seed, *, lam=0.1, n_queries=6, n_features=4, n_grades=3, tau=True, mu="balanced",
                 density=1.0):
        self.data = make_ranking(n_queries=n_queries, docs_per_query=(6, 12), n_features=n_features,
                                 n_grades=n_grades, density=density, random_state=seed)
        self.pairs = make_pairs(self.data)
        rng = np.random.default_rng(seed + 100)
        self.tau = {t: float(rng.uniform(0.5, 3.0)) for t in self.pairs.types} if tau else None
        self.mu = mu
        self.lam = lam
        self.weights = pair_weights(self.pairs, tau=self.tau, mu=mu)
        self.C = theorem1_C(self.weights, lam)


@pytest.fixture(params=[0, 1, 2], ids=lambda s: f"seed{s}")
def instance(request):
    return Instance(request.param)


@pytest.fixture
def small():
    return Instance(7)


def assert_agree(a, b):
    """Two certified solutions of one problem agree as far as their certificates prove, never tighter.

    ``‖w_a − w_b‖ ≤ b_a + b_b`` with ``b = sqrt(2 gap_M)`` the distance to ``w*`` each certificate
    proves, and ``|M_a − M_b| ≤ max(gap_M)`` plus float64 rounding of the two sums.
    """
    assert a.status == "optimal" and b.status == "optimal", (a, b)
    assert np.linalg.norm(a.w - b.w) <= a.distance_bound + b.distance_bound, (a, b)
    rounding = 64 * np.finfo(float).eps * max(abs(a.qp_objective), abs(b.qp_objective))
    assert abs(a.qp_objective - b.qp_objective) <= max(a.gap_M, b.gap_M) + rounding, (a, b)



def sparse_wide(seed, n_features=150):
    """Sparse data with more features than documents: separable, the optimum hard-margin for small λ."""
    import scipy.sparse as sp

    from cvxrank.data import RankingData

    data = make_ranking(n_queries=5, docs_per_query=(6, 12), n_features=n_features, density=0.05, random_state=seed)
    return RankingData(sp.csr_matrix(data.X), y=data.y, qid=data.qid)


def sparse_narrow(seed):
    """Sparse data with few features for its pairs: not separable, many pairs at the upper bound."""
    import scipy.sparse as sp

    from cvxrank.data import RankingData

    data = make_ranking(n_queries=6, docs_per_query=(8, 14), n_features=8, density=0.5, random_state=seed)
    return RankingData(sp.csr_matrix(data.X), y=data.y, qid=data.qid)


def exact_pair_dual(X, better, worse, alpha, lam):
    """``Σα − ‖Σ α_i d_i‖² / (4λ)``, ``d_i = x_better − x_worse``, in exact rational arithmetic on the float64
    values (the dual value of (9) at ``α``, against which the rounding allowances are checked)."""
    from fractions import Fraction

    Xf = [[Fraction(float(v)) for v in row] for row in X]
    u = [Fraction(0)] * len(Xf[0])
    for b, w, a in zip(better, worse, alpha):
        fa = Fraction(float(a))
        for j in range(len(u)):
            u[j] += fa * (Xf[b][j] - Xf[w][j])
    return sum(Fraction(float(a)) for a in alpha) - sum(x * x for x in u) / (4 * Fraction(float(lam)))


def record_finish(monkeypatch):
    """Record every ``(problem, w, report, tol)`` the pair-free cutting plane hands the door's certificate
    (``cvxrank.native.cutting_plane.finish``); returns the list it appends to."""
    import importlib

    module = importlib.import_module("cvxrank.native.cutting_plane")  # (the package exports a function of that name)
    seen = []
    real = module.finish

    def recording(problem, w, report, tol):
        seen.append((problem, w, report, tol))
        return real(problem, w, report, tol)

    monkeypatch.setattr(module, "finish", recording)
    return seen

def brute_force_pairs(data, tau=None, mu=None, margin=None):
    """Pairs written out by hand from the raw data, independently of cvxrank's pair code.

    Returns ``(D, c, m)``: the difference rows ``x_better − x_worse`` of every within-query pair of
    different grades, the weights ``τ_(a,b) μ_q`` (``mu="balanced"``: (10) of SIGIR 2006, or None),
    and the margins (1, or the ``"grade_difference"`` / ``"gain_difference"`` of the pair).
    """
    X, y, qid = data.X, data.y, data.qid
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    per_query = {q: sum(1 for i in np.flatnonzero(qid == q) for j in np.flatnonzero(qid == q) if y[i] > y[j])
                 for q in np.unique(qid)}
    top = max(per_query.values())
    rows, cost, margins = [], [], []
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        for i in idx:
            for j in idx:
                if y[i] > y[j]:
                    rows.append(X[i] - X[j])
                    t = 1.0 if tau is None else tau[(y[i].item(), y[j].item())]
                    cost.append(t * (1.0 if mu is None else top / per_query[q]))
                    margins.append({None: 1.0, "grade_difference": y[i] - y[j],
                                    "gain_difference": 2.0 ** y[i] - 2.0 ** y[j]}[margin])
    return np.array(rows), np.array(cost), np.array(margins, dtype=float)


class FullDisk:
    """A file object that writes ``limit`` characters and then fails with ENOSPC, like a disk filling up
    (``limit=0``: a disk already full)."""

    def __init__(self, fh, limit=0):
        self._fh, self._left = fh, limit

    def write(self, data):
        if len(data) > self._left:
            if self._left:
                self._fh.write(data[: self._left])
                self._fh.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        self._left -= len(data)
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


def readline_within(proc, timeout=300):
    """The next line ``proc`` prints, waited for as an event; ``timeout`` is only a safety net that fails
    a hung test (a passing one never waits for it)."""
    lines = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        proc.kill()
        pytest.fail(f"no line from the process within {timeout} s")


def cluster_client(processes=False):
    """A dask ``LocalCluster`` of 2 single-threaded workers on loopback (in this process unless ``processes``)
    and a client of it: ``(cluster, client)``; the caller closes both."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes, host="127.0.0.1",
                                       protocol="tcp", dashboard_address=":0")
    return cluster, distributed.Client(cluster)


def write_letor_shards(folder, data, n_shards, compress=(1,)):
    """``data`` split by query into ``n_shards`` LETOR files in ``folder`` (the shards in ``compress`` gzipped);
    their paths."""
    import gzip
    import shutil

    from cvxrank.data import RankingData, save_letor

    paths = []
    for i, qs in enumerate(np.array_split(data.query_ids, n_shards)):
        keep = np.isin(data.qid, qs)
        path = folder / f"shard-{i}.letor"
        save_letor(RankingData(data.X[keep], data.y[keep], data.qid[keep]), path)
        if i in compress:
            with open(path, "rb") as src, gzip.open(f"{path}.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            path.unlink()
            path = folder / f"shard-{i}.letor.gz"
        paths.append(str(path))
    return paths


def kill_a_worker(client):
    """End one worker's process of a process-based cluster (the call's own connection closes under it)."""
    import os

    victim = next(iter(client.scheduler_info()["workers"]))
    try:
        client.run(os._exit, 1, workers=[victim])
    except Exception:  # the connection to the killed worker closes under the call
        pass


@pytest.fixture(scope="module")
def client():
    """An in-process :func:`cluster_client`, shared by a module's tests (a module may define its own)."""
    cluster, c = cluster_client()
    yield c
    c.close()
    cluster.close()
