"""Each memory estimate of :mod:`cvxrank._memory` against the measured peak of its operation.

Every case runs in a fresh Python process: it imports what it needs and builds its input, then resets
the kernel's peak-RSS counter (``echo 5 > /proc/self/clear_refs``), notes its resident memory, runs the
operation and reads the new peak (``VmHWM``). The difference is what the operation added, whoever
allocated it (NumPy, SciPy, CVXPY's canonicalisation, Clarabel's Rust code), which tracemalloc would
miss. Each estimate must lie within ``[0.5, 2]`` times that measurement, on instances large enough
(30-300 MB) that allocator slack and page granularity do not decide the ratio.

The Newton phase's :func:`~cvxrank._memory.newton_bytes` is a gate, not an estimate: it assumes the
band's cap of 20,000 pairs, an upper bound, and only decides whether the phase runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"),
                                reason="needs Linux's /proc/self/clear_refs to reset the peak RSS")

_HARNESS = """
import json, resource, sys
def _status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
{setup}
estimate = {estimate}
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
base = _status("VmRSS")
{operation}
print(json.dumps({{"estimate": int(estimate), "measured": _status("VmHWM") - base}}))
"""


def measure(setup: str, operation: str, estimate: str, budget: str = "4GiB") -> tuple[int, int]:
    """``(estimate, measured peak)`` in bytes of ``operation`` in a fresh process after ``setup``.

    ``setup`` must import every module the operation uses (an import inside it would be measured), and
    ``budget`` be finite: the cutting-plane solver's Newton phase runs only when its Hessians fit it."""
    code = _HARNESS.format(setup=textwrap.dedent(setup), operation=textwrap.dedent(operation), estimate=estimate)
    env = dict(os.environ, CVXRANK_MEMORY_BUDGET=budget, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["estimate"], result["measured"]


def assert_within_2x(estimate: int, measured: int) -> None:
    assert measured > 10 * 2**20, f"the operation added only {measured} bytes: too small to compare"
    assert 0.5 <= estimate / measured <= 2.0, f"estimate {estimate / 2**20:.1f} MiB, measured {measured / 2**20:.1f} MiB"


IMPORTS = """
import clarabel, cvxpy, sklearn.datasets
import cvxrank as cr, cvxrank.data, cvxrank.datasets, cvxrank._svmlight, cvxrank.formulations, cvxrank.native
"""
PROBLEM = IMPORTS + """
import cvxrank as cr
from cvxrank import _memory as M
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
data = cr.make_ranking(n_queries=12, docs_per_query=100, n_features=5, random_state=0)
p = RankingProblem(data, lam=1.0)
"""

#: 400,000 features of which each document uses 3 (a file with a stray large index): the per-feature terms.
WIDE = IMPORTS + """
import numpy as np, scipy.sparse as sp, cvxrank as cr
from cvxrank import _memory as M
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
NF = 400_000
d = cr.make_ranking(n_queries=20, docs_per_query=10, n_features=3, random_state=0)
cols = np.tile([0, 1, 2], d.n_documents) + np.tile([0, 0, NF - 3], d.n_documents)
X = sp.csr_matrix((d.X.ravel(), cols, np.arange(0, 3 * d.n_documents + 1, 3)), shape=(d.n_documents, NF))
data = cr.RankingData(X, d.y, d.qid)
p = RankingProblem(data, lam=1.0)
"""


@pytest.mark.parametrize("formulation", ["primal", "dual"])
def test_cvxpy_formulation_holding_D(formulation):
    """D's copies plus the per-pair and per-feature parts (formulation_bytes), 40,000 pairs x 5 features."""
    assert_within_2x(*measure(PROBLEM, f"solve(p, 'clarabel', formulation={formulation!r})",
                              "M.formulation_bytes(make_pairs(data))"))


def test_lifted_formulation():
    assert_within_2x(*measure(PROBLEM, "solve(p, 'clarabel', formulation='lifted')",
                              "M.problem_bytes(data.n_documents, data.n_features, p.n_pairs, data.X.size, 'lifted')"))


@pytest.mark.parametrize("solver, route", [("clarabel", "cvxpy"), ("cutting_plane", "pairfree")])
def test_per_feature_estimates(solver, route):
    """400,000 features, 600 pairs: the weight vectors dominate."""
    options = ", formulation='primal'" if solver == "clarabel" else ""
    assert_within_2x(*measure(WIDE, f"solve(p, {solver!r}{options})",
                              f"M.problem_bytes(data.n_documents, data.n_features, p.n_pairs, X.nnz, {route!r})"))


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_reading_a_letor_file(tmp_path, suffix):
    """About 800,000 values (40,000 lines x 20 features); the .gz is estimated from its decompressed text."""
    import gzip

    import cvxrank.data as cr_data
    from cvxrank.datasets import make_ranking

    path = tmp_path / "d.letor"
    cr_data.save_letor(make_ranking(n_queries=4000, docs_per_query=10, n_features=20, random_state=0), path)
    if suffix:
        path = tmp_path / "d.letor.gz"
        path.write_bytes(gzip.compress((tmp_path / "d.letor").read_bytes(), compresslevel=1))
    setup = IMPORTS + f"from cvxrank import _memory as M\npath = {str(path)!r}"
    assert_within_2x(*measure(setup, "data = cr.load_letor(path)", "M.letor_read_bytes(path)"))


@pytest.mark.parametrize("density", [1.0, 0.3])
def test_generating_data(density):
    setup = IMPORTS + "from cvxrank import _memory as M"
    op = f"data = cr.make_ranking(n_queries=8000, docs_per_query=10, n_features=40, density={density})"
    assert_within_2x(*measure(setup, op, f"M.generated_bytes(80000, 40, {density})"))


@pytest.mark.parametrize("solver", ["clarabel", "cutting_plane"])
def test_a_typod_feature_index_is_refused_before_allocating(tmp_path, solver):
    """``fit`` on a file with index 100000000, in a child process capped at 2 GiB of address space
    beyond its start: exit 2 with the feature count, and its peak stays within 64 MiB of the baseline."""
    path = tmp_path / "typo.letor"
    path.write_bytes(b"2 qid:1 1:0.5 100000000:0.2\n0 qid:1 1:0.1\n1 qid:1 2:0.3\n")
    code = textwrap.dedent(f"""
        import resource, sys
        import cvxrank.estimators, cvxrank.solvers, cvxpy, clarabel
        from cvxrank.cli import main
        def status(key):
            for line in open("/proc/self/status"):
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        size = status("VmSize")
        resource.setrlimit(resource.RLIMIT_AS, (size + 2 * 2**30, resource.RLIM_INFINITY))
        base = status("VmRSS")
        code = main(["fit", {str(path)!r}, "--model", {str(tmp_path / "m.json")!r}, "--solver", {solver!r}])
        print("added", status("VmHWM") - base, file=sys.stderr)
        sys.exit(code)
    """)
    env = dict(os.environ, CVXRANK_MEMORY_BUDGET="64MiB")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    message, added = proc.stderr.splitlines()
    assert message.startswith("cvxrank fit: error: ") and "100,000,000 features" in message
    assert int(added.split()[1]) < 64 * 2**20
    assert not (tmp_path / "m.json").exists()
