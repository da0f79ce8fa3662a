"""Training over LETOR files read on the dask workers (loopback cluster, tiny data)."""

import gzip

import numpy as np
import pytest

from cvxrank.data import RankingData, load_letor, save_letor
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import SolverError, ValidationError
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import cluster_client, kill_a_worker, write_letor_shards

distributed = pytest.importorskip("distributed")

from cvxrank.native.dask_files import files_oracle, shard_groups, solve_files  # noqa: E402

TAU = {(1, 0): 1.0, (2, 0): 2.0, (2, 1): 1.5, (3, 0): 3.0, (3, 1): 2.5, (3, 2): 1.0}


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    data = make_ranking(n_queries=24, docs_per_query=(5, 16), n_features=5, n_grades=4, random_state=3)
    return write_letor_shards(tmp_path_factory.mktemp("shards"), data, 3)


def local_data(paths):
    parts = load_letor(paths, dense=True)
    return RankingData(np.vstack([p.X for p in parts]), np.concatenate([p.y for p in parts]),
                       np.concatenate([p.qid for p in parts]))


def within_certificates(a, b):
    assert abs(a.objective - b.objective) <= a.gap_L + b.gap_L
    assert np.abs(a.w - b.w).max() <= a.distance_bound + b.distance_bound


@pytest.mark.parametrize("newton_gap", [0.1, pytest.param(None, marks=pytest.mark.slow)], ids=["newton", "planes"])
def test_solve_from_files_equals_the_local_solve(client, shards, newton_gap):
    # from w = 0 as over the shards (locally start="auto" would fit the grades first)
    local = solve(RankingProblem(local_data(shards), tau=TAU, mu="balanced", lam=0.05), "cutting_plane",
                  tol=1e-8, newton_gap=newton_gap, start="zero")
    remote = solve_files(client, shards, tau=TAU, mu="balanced", lam=0.05, tol=1e-8, newton_gap=newton_gap)
    assert local.status == remote.status == "optimal"
    within_certificates(local, remote)
    assert remote.oracle_calls <= local.extras["oracle_calls"] + 2
    assert remote.n_pairs == local.extras["n_pairs"]
    assert remote.bytes_received < 2_000 * remote.rounds * 3  # O(n) numbers a shard, never X


def test_squared_hinge_from_files_equals_the_local_solve(client, shards):
    from cvxrank.variants import Variant

    problem = RankingProblem(local_data(shards), tau=TAU, mu="balanced", lam=0.05, variant=Variant(loss="squared_hinge"))
    local = solve(problem, "truncated_newton", tol=1e-8)
    remote = solve_files(client, shards, tau=TAU, mu="balanced", lam=0.05, tol=1e-8, loss="squared_hinge")
    assert local.status == remote.status == "optimal"
    within_certificates(local, remote)
    assert remote.oracle_calls == local.extras["oracle_calls"]
    on_cluster = solve(problem, "truncated_newton", tol=1e-8, client=client, n_shards=3)
    within_certificates(local, on_cluster)
    assert on_cluster.extras["oracle_calls"] == local.extras["oracle_calls"]


@pytest.mark.slow
def test_shards_stay_on_the_workers_along_a_path(client, shards):
    oracle = files_oracle(client, [shards[:2], shards[2]], mu="balanced")
    assert len(oracle.shards) == 2 and oracle.n_features == 5
    w = None
    for lam in (0.5, 0.05):
        res = solve_files(client, oracle=oracle, lam=lam, tol=1e-8, warm_start_w=w)
        local = solve(RankingProblem(local_data(shards), mu="balanced", lam=lam), "cutting_plane",
                      tol=1e-8)
        within_certificates(local, res)
        w = res.w
    oracle.close()


def test_feature_count_is_the_largest_index(client, tmp_path):
    a = RankingData(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), [2, 1, 0], qid=[1, 1, 1])
    b = RankingData(np.array([[1.0, 0, 0, 2.0], [0, 1.0, 0, 0.5]]), [1, 0], qid=[2, 2])
    save_letor(a, tmp_path / "a.letor")
    save_letor(b, tmp_path / "b.letor")
    oracle = files_oracle(client, [str(tmp_path / "a.letor"), str(tmp_path / "b.letor")])
    assert oracle.n_features == 4
    with pytest.raises(ValidationError, match="above n_features=3"):
        files_oracle(client, [str(tmp_path / "a.letor"), str(tmp_path / "b.letor")], n_features=3)
    oracle.close()


def test_bad_shards_are_refused(client, shards, tmp_path):
    with pytest.raises(ValidationError, match="given twice"):
        files_oracle(client, [shards[0], shards[:2]])
    with pytest.raises(ValidationError, match="given twice"):
        shard_groups([shards[0], [shards[0]]])
    single = RankingData(np.eye(3), [1, 1, 1], qid=[9, 9, 9])
    save_letor(single, tmp_path / "flat.letor")
    with pytest.raises(ValidationError, match="flat.letor: the shard has no pair"):
        files_oracle(client, [shards[0], str(tmp_path / "flat.letor")])
    (tmp_path / "bad.letor").write_text("1 qid:1 1:0.5\n0 qid:1 2:x\n")
    with pytest.raises(ValidationError, match="bad.letor, line 2"):
        files_oracle(client, [shards[0], str(tmp_path / "bad.letor")])
    with gzip.open(tmp_path / "bad.letor.gz", "wb") as fh:  # read from a plain copy: the message names the original
        fh.write(b"1 qid:1 1:0.5\n0 qid:1 2:x\n")
    with pytest.raises(ValidationError, match=r"^\S*bad.letor.gz, line 2"):
        files_oracle(client, [shards[0], str(tmp_path / "bad.letor.gz")])
    with pytest.raises(ValidationError, match="no such file"):
        files_oracle(client, [str(tmp_path / "missing.letor")])


def test_overlapping_queries_name_the_query(client, tmp_path):
    a = RankingData(np.eye(3), [2, 1, 0], qid=[7, 7, 8])
    save_letor(a, tmp_path / "a.letor")
    save_letor(RankingData(np.eye(3), [1, 0, 1], qid=[8, 8, 9]), tmp_path / "b.letor")
    with pytest.raises(ValidationError, match=r"query 8 is in more than one shard: shard 0 \(.*a.letor\); shard 1"):
        files_oracle(client, [str(tmp_path / "a.letor"), str(tmp_path / "b.letor")])


@pytest.mark.slow
def test_lost_workers(shards):
    """One worker gone: its shards are read again on the other; none left: a clear error, no hang."""
    cluster, client = cluster_client()
    try:
        oracle = files_oracle(client, shards, mu="balanced", timeout=5.0)
        w = np.full(5, 0.1)
        before = oracle(w, counts=False)
        workers = list(cluster.workers.values())
        client.sync(workers[0].close)
        after = oracle(w, counts=False)
        assert after.loss == pytest.approx(before.loss, rel=1e-12)
        client.sync(workers[1].close)
        with pytest.raises(SolverError, match="no answer from the dask shards within 5 s"):
            oracle(w, counts=False)
    finally:
        client.close()
        cluster.close()


def test_estimator_fit_files(client, shards):
    from cvxrank.estimators import RankSVMIR

    model = RankSVMIR(tau=TAU, mu="balanced", lam=0.05, tol=1e-8).fit_files(shards, client=client)
    local = RankSVMIR(tau=TAU, mu="balanced", lam=0.05, tol=1e-8, solver="cutting_plane").fit(local_data(shards))
    within_certificates(local.result_, model.result_)
    assert model.n_features_in_ == 5 and model.solve_summary_["status"] == "optimal"
    with pytest.raises(ValidationError, match="tau='estimate' needs the documents on the client"):
        RankSVMIR(lam=0.05).fit_files(shards, client=client)
    with pytest.raises(ValidationError, match="fit other variants on data in memory"):
        RankSVMIR(tau=TAU, lam=0.05, margin="grade_difference").fit_files(shards, client=client)


@pytest.mark.slow
def test_estimator_fit_files_squared_hinge(client, shards):
    from cvxrank.estimators import RankSVM

    model = RankSVM(lam=0.05, tol=1e-8, loss="squared_hinge").fit_files(shards, client=client)
    local = RankSVM(lam=0.05, tol=1e-8, loss="squared_hinge", solver="truncated_newton").fit(local_data(shards))
    within_certificates(local.result_, model.result_)
    assert model.solve_summary_["solver"] == "truncated_newton"


def test_cli_fit_with_scheduler(client, shards, tmp_path, capsys):
    from cvxrank.cli import main
    from cvxrank.estimators.persistence import load_model

    address = client.scheduler.address
    model = tmp_path / "m.json"
    assert main(["fit", "--scheduler", address, *shards, "--model", str(model), "--lam", "0.05", "--tol", "1e-8"]) == 0
    assert "status optimal" in capsys.readouterr().out
    local = solve(RankingProblem(local_data(shards), lam=0.05), "cutting_plane", tol=1e-8)
    np.testing.assert_allclose(load_model(model).coef_, local.w, atol=2 * local.distance_bound + 1e-9)
    assert main(["fit", *shards, "--model", str(tmp_path / "x.json")]) == 2  # several files need --scheduler
    assert "give --scheduler" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.slow
def test_cli_unreachable_scheduler(shards, tmp_path, capsys):
    from cvxrank.cli import main

    assert main(["fit", "--scheduler", "tcp://127.0.0.1:9", shards[0], "--model", str(tmp_path / "y.json")]) == 2
    assert "cannot reach the dask scheduler at tcp://127.0.0.1:9" in capsys.readouterr().err
    assert not (tmp_path / "y.json").exists()


@pytest.mark.slow
def test_worker_processes_budget_and_a_killed_worker(shards):
    """Worker processes: the memory budget applies on each worker; a worker killed mid-path is replaced and its
    shards are read again, with the same solution."""
    from cvxrank._memory import MemoryBudgetError, set_memory_budget

    cluster, client = cluster_client(processes=True)
    try:
        client.run(set_memory_budget, "1KB")
        with pytest.raises(MemoryBudgetError, match="shard-"):
            files_oracle(client, shards)
        client.run(set_memory_budget, None)
        oracle = files_oracle(client, shards, mu="balanced", timeout=60.0)
        first = solve_files(client, oracle=oracle, lam=0.5, tol=1e-8)
        kill_a_worker(client)
        again = solve_files(client, oracle=oracle, lam=0.5, tol=1e-8)
        local = solve(RankingProblem(local_data(shards), mu="balanced", lam=0.5), "cutting_plane", tol=1e-8)
        within_certificates(local, first)
        within_certificates(local, again)
    finally:
        client.close()
        cluster.close()


def test_a_compressed_shard_is_read_from_a_plain_copy(shards, tmp_path):
    from cvxrank.native.dask_files import _read_plain

    gz = [p for p in shards if p.endswith(".gz")]
    (copy,) = _read_plain(gz, True, np.float64)  # outside a worker (no memory_limit): from a plain copy
    (direct,) = load_letor(gz, dense=True)
    np.testing.assert_array_equal(copy.X, direct.X)
    np.testing.assert_array_equal(copy.qid, direct.qid)
    with gzip.open(tmp_path / "bad.letor.gz", "wb") as fh:
        fh.write(b"1 qid:1 1:0.5\n0 qid:1 2:x\n")
    with pytest.raises(ValidationError, match=r"^\S*/bad.letor.gz, line 2"):
        _read_plain([str(tmp_path / "bad.letor.gz")], True, np.float64)
