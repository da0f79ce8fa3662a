"""Listwise Newton (ListMLE, cs-RgList) over shards read on the dask workers (loopback cluster, tiny data)."""


import numpy as np
import pytest

from cvxrank.data import RankingData, load_letor, save_letor
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.listwise import (
    listwise_layout,
    listwise_loss_derivatives,
    objective_derivatives,
    solve_newton,
)
from cvxrank.listwise.loss import objective_from_sums
from tests.conftest import cluster_client, write_letor_shards

distributed = pytest.importorskip("distributed")

from cvxrank.listwise.dask import solve_newton_files


def subset(data, queries):
    keep = np.isin(data.qid, queries)
    return RankingData(data.X[keep], data.y[keep], data.qid[keep])


def local_data(paths):
    """The shards' documents in one RankingData, as read from the files."""
    parts = load_letor(paths, dense=True)
    return RankingData(np.vstack([p.X for p in parts]), np.concatenate([p.y for p in parts]),
                       np.concatenate([p.qid for p in parts]))


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=24, docs_per_query=(5, 16), n_features=5, n_grades=4, random_state=3)


@pytest.fixture(scope="module")
def shards(tmp_path_factory, data):
    return write_letor_shards(tmp_path_factory.mktemp("listwise"), data, 3)


def same_solve(local, remote):
    assert remote.status == local.status == "optimal"
    assert remote.iterations == local.iterations
    assert abs(remote.objective - local.objective) <= 1e-10 * local.objective
    assert np.abs(remote.w - local.w).max() <= 1e-8
    assert len(remote.history) == len(local.history)
    assert remote.grad_norm <= 1e-6 and remote.method == local.method


def test_shard_sums_give_the_local_objective(data):
    """The raw sums of two query halves, added and scaled by C/m with m all queries: objective_derivatives."""
    w = np.linspace(-0.5, 0.5, data.n_features)
    halves = np.array_split(data.query_ids, 2)
    sums = [listwise_loss_derivatives(listwise_layout(subset(data, qs), 2.0), w) for qs in halves]
    f, g, H = objective_from_sums(w, sum(s[0] for s in sums), sums[0][1] + sums[1][1], sums[0][2] + sums[1][2],
                                  C=10.0, n_queries=data.n_queries)
    f0, g0, H0 = objective_derivatives(data, w, C=10.0, pcf=2.0)
    assert f == pytest.approx(f0, rel=1e-13)
    np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(H, H0, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pcf", [None, 3.0], ids=["listmle", "cs-rglist"])
def test_distributed_newton_equals_the_local_one(client, shards, pcf):
    local = solve_newton(local_data(shards), C=10.0, pcf=pcf)
    remote = solve_newton_files(client, shards, C=10.0, pcf=pcf)
    same_solve(local, remote)
    assert remote.pcf == local.pcf and remote.C == 10.0
    assert remote.extras["n_shards"] == 3 and remote.extras["n_lists"] == local.extras["n_lists"]
    # 1 + n + n² numbers back a shard and round (with some framing), never X
    assert remote.extras["bytes_received"] <= remote.extras["rounds"] * 3 * (8 * (1 + 5 + 25) + 500)


def test_pure_newton_steps_and_the_iteration_cap(client, shards):
    with pytest.warns(InaccurateSolutionWarning, match="certified relative gap"):
        local = solve_newton(local_data(shards), C=1.0, line_search=False, max_iter=2)
    with pytest.warns(InaccurateSolutionWarning, match="certified relative gap"):
        remote = solve_newton_files(client, shards, C=1.0, line_search=False, max_iter=2)
    assert remote.iterations == local.iterations == 2 and remote.solver_status == "user_limit"
    np.testing.assert_allclose(remote.w, local.w, rtol=0, atol=1e-10)


def test_single_document_queries_count_in_m(client, tmp_path):
    """m of (3) is every query (as listwise_layout counts it), a shard of one-document queries included."""
    base = make_ranking(n_queries=6, docs_per_query=(4, 8), n_features=4, n_grades=3, random_state=1)
    singles = RankingData(np.random.default_rng(0).normal(size=(3, 4)), [2, 0, 1], qid=[101, 102, 103])
    paths = write_letor_shards(tmp_path, base, 2, compress=())
    save_letor(singles, tmp_path / "singles.letor")
    paths.append(str(tmp_path / "singles.letor"))
    local = solve_newton(local_data(paths), C=5.0, pcf=2.0)
    assert listwise_layout(local_data(paths)).n_queries == 9
    remote = solve_newton_files(client, paths, C=5.0, pcf=2.0)
    same_solve(local, remote)
    assert remote.extras["n_shards"] == 2  # the one-document shard has no loss term to send
    with pytest.raises(ValidationError, match="no query has two or more documents.*3 queries of one document"):
        solve_newton_files(client, [paths[-1]])


def test_feature_count_is_the_largest_index(client, tmp_path, data):
    """A LETOR shard whose last feature is all zero is read narrower; its layout is widened on the worker."""
    X = data.X.copy()
    first = np.isin(data.qid, data.query_ids[:8])
    X[first, -1] = 0.0
    narrow = RankingData(X, data.y, data.qid)
    paths = write_letor_shards(tmp_path, narrow, 3, compress=())
    assert load_letor(paths[0]).n_features == 4
    same_solve(solve_newton(narrow, C=10.0, pcf=3.0), solve_newton_files(client, paths, C=10.0, pcf=3.0))
    wide = solve_newton_files(client, paths, C=10.0, pcf=3.0, n_features=7)
    assert wide.w.shape == (7,) and np.all(wide.w[5:] == 0)


def test_overlapping_queries_are_refused(client, tmp_path):
    save_letor(RankingData(np.eye(3), [2, 1, 0], qid=[7, 7, 8]), tmp_path / "a.letor")
    save_letor(RankingData(np.eye(3), [1, 0, 1], qid=[8, 8, 9]), tmp_path / "b.letor")
    with pytest.raises(ValidationError, match=r"^query 8 is in more than one shard: shard 0 \(.*a.letor\); shard 1 "
                                              r"\(.*b.letor\); a query must sit in one shard \(its pairs would be "
                                              r"lost\)$"):
        solve_newton_files(client, [str(tmp_path / "a.letor"), str(tmp_path / "b.letor")])


def test_bad_arguments_are_refused_before_reading(client, shards):
    with pytest.raises(ValidationError, match="C"):
        solve_newton_files(client, shards, C=-1.0)
    with pytest.raises(ValidationError, match="pCf"):
        solve_newton_files(client, shards, pcf=0.5)
    with pytest.raises(ValidationError, match="line_search"):
        solve_newton_files(client, shards, line_search="yes")
    with pytest.raises(ValidationError, match="w has 2 entries"):
        solve_newton_files(client, shards, w0=[1.0, 2.0])


def test_parquet_shards(client, tmp_path, data):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    columns = [f"f{j}" for j in range(data.n_features)]
    df = pd.DataFrame(data.X, columns=columns)
    df.insert(0, "y", data.y)
    df.insert(0, "qid", data.qid)
    paths = []
    for i, qs in enumerate(np.array_split(data.query_ids, 2)):
        df[np.isin(data.qid, qs)].to_parquet(tmp_path / f"part-{i}.parquet")
        paths.append(str(tmp_path / f"part-{i}.parquet"))
    same_solve(solve_newton(data, C=10.0, pcf=3.0), solve_newton_files(client, paths, C=10.0, pcf=3.0))


@pytest.mark.parametrize("name", ["ListMLE", "CsRgList"])
def test_estimator_fit_files(client, shards, name):
    from cvxrank import estimators

    cls = getattr(estimators, name)
    local_X = local_data(shards)
    model = cls(C=10.0, tol=1e-8).fit_files(shards, client=client)
    local = cls(C=10.0, tol=1e-8).fit(local_X)
    np.testing.assert_allclose(model.predict(local_X.X), local.predict(local_X.X), rtol=0, atol=1e-8)
    assert model.n_iter_ == local.n_iter_ and model.n_features_in_ == 5 and model.C_ == 10.0
    assert model.solve_summary_["status"] == "optimal" and model.solve_summary_["method"] == local.result_.method
    assert model.score(local_X) == pytest.approx(local.score(local_X), abs=1e-12)
    with pytest.raises(ValidationError, match="needs the data in memory"):
        cls(solver="clarabel").fit_files(shards, client=client)
    with pytest.raises(ValidationError, match="not 'eps'"):
        cls(solver_options={"eps": 1e-3}).fit_files(shards, client=client)


@pytest.mark.slow
def test_worker_processes(shards):
    """Real worker processes: the layouts are built and kept there, the sums pickled back."""
    cluster, client = cluster_client(processes=True)
    try:
        same_solve(solve_newton(local_data(shards), C=10.0, pcf=3.0),
                   solve_newton_files(client, shards, C=10.0, pcf=3.0))
    finally:
        client.close()
        cluster.close()
