"""Each memory estimate of :mod:`cvxrank._memory` against what its operation provably holds.

An estimate decides whether work is refused before it starts, so it must never be below the bytes the
operation's own results occupy: the data a reader returns, the arrays a generator draws, the copy of ``D``
a CVXPY formulation holds with its slack and weights, the weight vectors of a solver. Those floors follow
from the shapes alone and are checked in-process. How far above its floor an estimate lies (allocator
slack, the copies CVXPY and Clarabel make) depends on library versions and on the machine: no test pins
it to a measured peak.

One measurement is left (slow, in a child process): the refusal of a typo'd feature index, whose peak
stays far below the one weight vector of that length the solve would have allocated.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import cvxrank as cr
from cvxrank import _memory as M
from cvxrank.pairs import make_pairs


def held_bytes(data) -> int:
    """Bytes of a :class:`~cvxrank.data.RankingData`'s arrays (X dense or CSR, grades, query ids)."""
    X = data.X
    x = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sp.issparse(X) else np.asarray(X).nbytes
    return x + np.asarray(data.y).nbytes + np.asarray(data.qid).nbytes


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_reading_a_letor_file_is_estimated_at_least_at_its_result(tmp_path, suffix):
    """The .gz is counted from its decompressed text, not from its (smaller) size on disk."""
    path = tmp_path / "d.letor"
    cr.data.save_letor(cr.make_ranking(n_queries=200, docs_per_query=10, n_features=20, random_state=0), path)
    if suffix:
        path = tmp_path / "d.letor.gz"
        path.write_bytes(gzip.compress((tmp_path / "d.letor").read_bytes(), compresslevel=1))
    data = cr.load_letor(path)
    assert M.letor_read_bytes(path) >= held_bytes(data)


@pytest.mark.parametrize("density", [1.0, 0.3])
def test_generating_data_is_estimated_at_least_at_its_result(density):
    data = cr.make_ranking(n_queries=200, docs_per_query=10, n_features=40, density=density, random_state=0)
    assert data.is_sparse == (density < 1)
    assert M.generated_bytes(data.n_documents, 40, density) >= held_bytes(data)


def test_a_cvxpy_formulation_is_estimated_at_least_at_d_its_slack_and_weights():
    """``D`` (dense: exactly its bytes), one slack per pair and one weight per feature, in float64."""
    data = cr.make_ranking(n_queries=6, docs_per_query=40, n_features=5, random_state=0)
    pairs = make_pairs(data)
    D = pairs.difference_matrix()
    assert M.difference_matrix_bytes(pairs) == D.nbytes
    assert M.formulation_bytes(pairs) >= D.nbytes + 8 * (pairs.n_pairs + pairs.n_features)


def test_the_lifted_formulation_is_estimated_at_least_at_x_and_its_variables():
    """No ``D``: ``X`` (CSR: a value and a column index per entry), ``s = X w``, a slack per pair, ``w``."""
    data = cr.make_ranking(n_queries=6, docs_per_query=40, n_features=5, random_state=0)
    n_pairs, nnz = make_pairs(data).n_pairs, int(np.count_nonzero(data.X))
    floor = 12 * nnz + 8 * (data.n_documents + n_pairs + data.n_features)
    assert M.problem_bytes(data.n_documents, data.n_features, n_pairs, nnz, "lifted") >= floor


@pytest.mark.parametrize("route", ["cvxpy", "lifted", "native", "pairfree"])
def test_every_route_is_estimated_at_least_at_two_weight_vectors(route):
    """400,000 features of which each document uses 3 (a stray large index): ``w`` and a gradient (or the
    objective's diagonal) of that length, and a score per document, whatever the solver."""
    n_features, n_documents = 400_000, 200
    need = M.problem_bytes(n_documents, n_features, 600, 3 * n_documents, route)
    assert need >= 2 * 8 * n_features + 8 * n_documents


@pytest.mark.parametrize("density", [1.0, 0.2])
def test_d_is_estimated_from_counts_as_from_the_pairs(density):
    """Before any pair is formed, ``D``'s bytes come from the pair count and each document's pair degree
    (the pairs it belongs to): the same number as from the formed pairs, exactly."""
    from cvxrank.pairs import pair_degrees

    data = cr.make_ranking(n_queries=8, docs_per_query=(5, 30), n_features=12, density=density, random_state=1)
    problem = cr.RankingProblem(data, lam=0.1)
    from_counts = problem.difference_matrix_bytes()
    assert not problem.has_pairs
    pairs = make_pairs(data)
    assert from_counts == M.difference_matrix_bytes(pairs)
    degrees = np.bincount(pairs.better, minlength=data.n_documents) + np.bincount(pairs.worse,
                                                                                  minlength=data.n_documents)
    np.testing.assert_array_equal(pair_degrees(data), degrees)


def test_forming_pairs_is_estimated_at_least_at_the_pair_set():
    """What a pair set holds: two document indices, the query and the grade pair of each pair, and the
    incidence matrix ``P`` (two entries a pair, and its row pointers)."""
    data = cr.make_ranking(n_queries=20, docs_per_query=40, n_features=3, random_state=0)
    pairs = make_pairs(data)
    held = sum(a.nbytes for a in (pairs.better, pairs.worse, pairs.query, pairs.pair_type,
                                  pairs.P.data, pairs.P.indices, pairs.P.indptr))
    assert M.pair_set_bytes(pairs.n_pairs) >= held


def test_reading_a_model_is_estimated_at_least_at_its_bytes_and_weights(tmp_path):
    """The file's bytes and their text (one byte a character), and the float64 weight vector."""
    from cvxrank.estimators import RankSVM, load_model

    model = RankSVM(lam=0.1, solver="cutting_plane").fit(cr.make_ranking(n_queries=4, n_features=300,
                                                                        random_state=0))
    model.save(tmp_path / "m.json")
    raw = (tmp_path / "m.json").read_bytes()
    assert M.model_read_bytes(len(raw), raw.count(b",") + 1) >= 2 * len(raw) + load_model(tmp_path / "m.json").coef_.nbytes


@pytest.mark.slow  # a child process imports cvxrank, CVXPY and Clarabel
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak RSS from Linux's /proc")
@pytest.mark.parametrize("solver", ["clarabel", "cutting_plane"])
def test_a_typod_feature_index_is_refused_before_allocating(tmp_path, solver):
    """``fit`` on a file with index 100000000, in a child process capped at 2 GiB of address space
    beyond its start: exit 2 with the feature count, and its peak grows by far less than one weight vector
    of 10^8 float64 (800 MB), which the solve would have allocated (tests/test_cli_hostile.py checks the
    refusal in-process, in the fast suite)."""
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
    assert int(added.split()[1]) < 8 * 100_000_000 / 10  # a tenth of one weight vector: none was allocated
    assert not (tmp_path / "m.json").exists()
