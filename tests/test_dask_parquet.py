"""Training over Parquet files and dask DataFrames read on the dask workers (loopback cluster, tiny data)."""

import numpy as np
import pandas as pd
import pytest

from cvxrank.data import RankingData, save_letor
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import cluster_client, kill_a_worker

distributed = pytest.importorskip("distributed")
pytest.importorskip("pyarrow")
dd = pytest.importorskip("dask.dataframe")

from cvxrank.native.dask_files import files_oracle, solve_files  # noqa: E402

TAU = {(1, 0): 1.0, (2, 0): 2.0, (2, 1): 1.5, (3, 0): 3.0, (3, 1): 2.5, (3, 2): 1.0}
FEATURES = [f"f{j}" for j in range(5)]


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=24, docs_per_query=(5, 16), n_features=5, n_grades=4, random_state=3)


def frame(data, qid="qid", label="y"):
    """One row per document: the query column, the grade column, then the features."""
    df = pd.DataFrame(data.X, columns=FEATURES)
    df.insert(0, label, data.y)
    df.insert(0, qid, data.qid)
    return df


def split_queries(data, n):
    return np.array_split(data.query_ids, n)


@pytest.fixture(scope="module")
def shards(tmp_path_factory, data):
    """The data as 3 Parquet files and as 3 LETOR files, split by query (the Parquet files keep pandas' index)."""
    folder = tmp_path_factory.mktemp("parquet")
    df = frame(data)
    parquet, letor = [], []
    for i, qs in enumerate(split_queries(data, 3)):
        keep = np.isin(data.qid, qs)
        df[keep].to_parquet(folder / f"part-{i}.parquet")
        save_letor(RankingData(data.X[keep], data.y[keep], data.qid[keep]), folder / f"part-{i}.letor")
        parquet.append(str(folder / f"part-{i}.parquet"))
        letor.append(str(folder / f"part-{i}.letor"))
    return {"parquet": parquet, "letor": letor, "folder": folder}


def within_certificates(a, b):
    assert abs(a.objective - b.objective) <= a.gap_L + b.gap_L
    assert np.abs(a.w - b.w).max() <= a.distance_bound + b.distance_bound


def local_solve(data, lam=0.05, **options):
    res = solve(RankingProblem(data, tau=TAU, mu="balanced", lam=lam), "cutting_plane", tol=1e-8, **options)
    assert res.status == "optimal"
    return res


def test_parquet_shards_equal_letor_shards_and_the_local_solve(client, data, shards):
    local = local_solve(data, newton_gap=0.1)
    parquet = solve_files(client, shards["parquet"], tau=TAU, mu="balanced", lam=0.05, tol=1e-8, newton_gap=0.1)
    letor = solve_files(client, shards["letor"], tau=TAU, mu="balanced", lam=0.05, tol=1e-8, newton_gap=0.1)
    assert parquet.status == letor.status == "optimal"
    within_certificates(local, parquet)
    within_certificates(letor, parquet)
    assert parquet.n_pairs == letor.n_pairs == local.extras["n_pairs"]
    assert parquet.n_documents == data.n_documents and parquet.n_shards == 3
    assert parquet.bytes_received < 2_000 * parquet.rounds * 3  # O(n) numbers a shard, never X


def test_parquet_shards_stay_on_the_workers_along_a_path(client, data, shards):
    """Two files in one shard, CSR X, named feature columns in another order: the same problem (its w permuted)."""
    order = [3, 0, 4, 1, 2]
    oracle = files_oracle(client, [shards["parquet"][:2], shards["parquet"][2]], tau=TAU, mu="balanced",
                          dense=False, features=[FEATURES[j] for j in order])
    assert len(oracle.shards) == 2 and oracle.n_features == 5 and oracle.columns == [FEATURES[j] for j in order]
    w = None
    for lam in (0.5, 0.05):
        res = solve_files(client, oracle=oracle, lam=lam, tol=1e-8, warm_start_w=w, newton_gap=0.1)
        local = local_solve(data, lam=lam, newton_gap=0.1)
        assert res.status == "optimal"
        assert abs(res.objective - local.objective) <= res.gap_L + local.gap_L
        assert np.abs(res.w - local.w[order]).max() <= res.distance_bound + local.distance_bound
        w = res.w
    oracle.close()


def whole_query_frame(data, npartitions):
    """A dask DataFrame from ``from_pandas`` whose partitions hold whole queries (the index sorted by query)."""
    df = frame(data)
    df.index = pd.Index(df["qid"].to_numpy(), name="position")
    ddf = dd.from_pandas(df.sort_index(), npartitions=npartitions)
    parts = [set(p["qid"]) for p in dd.compute(*ddf.to_delayed())]  # the test's own check, on tiny data
    assert sum(len(p) for p in parts) == data.n_queries
    return ddf


def test_dask_dataframe_equals_the_local_solve(client, data):
    ddf = whole_query_frame(data, 3)
    local = local_solve(data, newton_gap=0.1)
    res = solve_files(client, ddf, tau=TAU, mu="balanced", lam=0.05, tol=1e-8, newton_gap=0.1)
    assert res.status == "optimal" and res.n_shards == 3
    within_certificates(local, res)
    assert res.n_pairs == local.extras["n_pairs"]
    # the query column as the index (set_index), and a partition left empty by a filter: no shard
    by_index = dd.from_pandas(frame(data).set_index("qid").sort_index(), npartitions=3)
    middle = by_index.get_partition(1).index.unique().compute().tolist()
    kept = by_index.map_partitions(lambda part: part[~part.index.isin(middle)])
    narrower = solve_files(client, kept, tau=TAU, mu="balanced", lam=0.05, tol=1e-8, newton_gap=0.1)
    assert narrower.status == "optimal" and narrower.n_shards == 2
    within_certificates(local_solve(data.select_queries(np.setdiff1d(data.query_ids, middle)), newton_gap=0.1),
                        narrower)


def test_shuffled_dask_dataframe_as_the_docs_show(client, data):
    ddf = dd.from_pandas(frame(data), npartitions=3, sort=False).shuffle("qid")
    res = solve_files(client, ddf, tau=TAU, mu="balanced", lam=0.05, tol=1e-8, newton_gap=0.1)
    within_certificates(local_solve(data, newton_gap=0.1), res)


def test_queries_across_partitions_or_files_are_refused(client, data, tmp_path):
    df = pd.DataFrame({"qid": [1, 1, 1, 2], "y": [2, 1, 0, 1], "a": [0.5, 0.1, 0.3, 0.9]})
    ddf = dd.from_pandas(df, npartitions=2, sort=False)  # rows 0-1 and 2-3: query 1 in both
    with pytest.raises(ValidationError, match=r"^query 1 is in more than one partition: partition 0 and partition 1; "
                                              r".*ddf\.set_index\('qid'\) or ddf\.shuffle\('qid'\)") as info:
        files_oracle(client, ddf)
    assert "\n" not in str(info.value)
    df.iloc[:3].to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"qid": [1, 3], "y": [1, 0], "a": [0.2, 0.7]}).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(ValidationError, match=r"^query 1 is in more than one shard: shard 0 \(\S*a\.parquet\); "
                                              r"shard 1 \(\S*b\.parquet\)"):
        files_oracle(client, [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")])


def write(df, path):
    df.to_parquet(path, index=False)
    return str(path)


def test_differing_feature_columns_are_refused(client, data, tmp_path):
    df = frame(data)
    first = df.qid.isin(split_queries(data, 2)[0])
    a = write(df[first], tmp_path / "a.parquet")
    swapped = write(df[~first][["qid", "y", "f0", "f2", "f1", "f3", "f4"]], tmp_path / "swapped.parquet")
    extra = write(df[~first].assign(f5=1.0), tmp_path / "extra.parquet")
    fewer = write(df[~first].drop(columns="f4"), tmp_path / "fewer.parquet")
    with pytest.raises(ValidationError, match=r"^\S*swapped\.parquet: feature column 1 is 'f2', not 'f1' as in "
                                              r"\S*a\.parquet; every shard needs the same feature columns"):
        files_oracle(client, [a, swapped])
    with pytest.raises(ValidationError, match=r"^\S*extra\.parquet: has an extra feature column 'f5' \(column 5\)"):
        files_oracle(client, [a, extra])
    with pytest.raises(ValidationError, match=r"^\S*fewer\.parquet: lacks the feature column 'f4' \(column 4\)"):
        files_oracle(client, [[a, fewer]])  # two files of one shard: checked on the worker
    oracle = files_oracle(client, [a, swapped], features=FEATURES)  # named columns: the order is the caller's
    assert oracle.n_features == 5
    oracle.close()


def test_missing_columns_are_refused(client, data, tmp_path):
    df = frame(data)
    a = write(df, tmp_path / "a.parquet")
    no_qid = write(df.rename(columns={"qid": "query"}), tmp_path / "no-qid.parquet")
    with pytest.raises(ValidationError, match=r"^\S*no-qid\.parquet: no query column 'qid' \(columns: \['query', "):
        files_oracle(client, [no_qid])
    with pytest.raises(ValidationError, match=r"^\S*a\.parquet: no label column 'grade'"):
        files_oracle(client, [a], label="grade")
    with pytest.raises(ValidationError, match=r"^\S*a\.parquet: no feature column 'f9'"):
        files_oracle(client, [a], features=["f0", "f9"])
    ddf = dd.from_pandas(df.drop(columns="y"), npartitions=2)
    with pytest.raises(ValidationError, match="^the dask DataFrame has no label column 'y'"):
        files_oracle(client, ddf)
    text = write(df.assign(f1=df.f1.astype(str)), tmp_path / "text.parquet")
    with pytest.raises(ValidationError, match=r"^\S*text\.parquet: feature columns must be numeric.*'f1'"):
        files_oracle(client, [text])


def test_what_does_not_apply_is_refused(client, shards, data):
    with pytest.raises(ValidationError, match=r"Parquet and LETOR files in one call \(\S*part-0\.parquet, "
                                              r"\S*part-1\.letor\)"):
        files_oracle(client, [shards["parquet"][0], shards["letor"][1]])
    with pytest.raises(ValidationError, match="n_features applies to LETOR files"):
        files_oracle(client, shards["parquet"], n_features=5)
    with pytest.raises(ValidationError, match="name the columns of Parquet files or a dask DataFrame"):
        files_oracle(client, shards["letor"], qid="query")
    with pytest.raises(ValidationError, match="is a pandas DataFrame, in the client's memory"):
        files_oracle(client, frame(data))
    with pytest.raises(ValidationError, match="feature column 'y' is the label column"):
        files_oracle(client, shards["parquet"], features=["f0", "y"])


def test_estimator_and_cli_on_parquet(client, data, shards, tmp_path, capsys):
    from cvxrank.cli import main
    from cvxrank.estimators import RankSVM
    from cvxrank.estimators.persistence import load_model

    renamed = [write(pd.read_parquet(p).rename(columns={"qid": "query", "y": "grade"}), tmp_path / f"r{i}.pq")
               for i, p in enumerate(shards["parquet"])]
    model = RankSVM(lam=0.05, tol=1e-8).fit_files(renamed, client=client, qid="query", label="grade")
    local = RankSVM(lam=0.05, tol=1e-8, solver="cutting_plane").fit(data)
    within_certificates(local.result_, model.result_)
    assert model.n_features_in_ == 5 and model.solve_summary_["shards"] == 3
    path = tmp_path / "m.json"
    assert main(["fit", "--scheduler", client.scheduler.address, *renamed, "--model", str(path), "--lam", "0.05",
                 "--tol", "1e-8", "--qid-column", "query", "--label-column", "grade", "--features",
                 "f0,f1,f2,f3,f4"]) == 0
    assert "status optimal" in capsys.readouterr().out
    np.testing.assert_allclose(load_model(path).coef_, local.coef_, atol=2 * local.result_.distance_bound + 1e-9)
    assert main(["fit", "--scheduler", client.scheduler.address, *shards["letor"], "--model",
                 str(tmp_path / "x.json"), "--qid-column", "query"]) == 2
    assert "--qid-column: for Parquet TRAIN files" in capsys.readouterr().err
    assert main(["fit", shards["letor"][0], "--model", str(tmp_path / "y.json"), "--features", "f0"]) == 2
    assert "--features is for Parquet shards on a dask cluster" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "y.json").exists()


def test_estimator_fit_files_on_a_dask_dataframe(client, data):
    from cvxrank.estimators import RankSVMIR

    ddf = whole_query_frame(data, 2)
    model = RankSVMIR(tau=TAU, mu="balanced", lam=0.05, tol=1e-8).fit_files(ddf, client=client)
    local = RankSVMIR(tau=TAU, mu="balanced", lam=0.05, tol=1e-8, solver="cutting_plane").fit(data)
    within_certificates(local.result_, model.result_)
    assert model.solve_summary_["shards"] == 2


@pytest.mark.slow
def test_worker_processes_budget_and_a_killed_worker(data, shards):
    """Worker processes: the memory budget applies to a Parquet shard and a partition; a worker killed mid-path is
    replaced, its shards read (or its partitions computed) again, with the same solution."""
    from cvxrank._memory import MemoryBudgetError, set_memory_budget

    cluster, client = cluster_client(processes=True)
    try:
        ddf = whole_query_frame(data, 3)
        client.run(set_memory_budget, "1KB")
        with pytest.raises(MemoryBudgetError, match=r"part-\d\.parquet: reading \d+ rows x 5 feature columns needs"):
            files_oracle(client, shards["parquet"])
        with pytest.raises(MemoryBudgetError, match=r"partition \d: \d+ rows x 5 feature columns as X needs"):
            files_oracle(client, ddf)
        client.run(set_memory_budget, None)
        local = local_solve(data, lam=0.5)
        for source in (shards["parquet"], ddf):
            oracle = files_oracle(client, source, tau=TAU, mu="balanced", timeout=60.0)
            first = solve_files(client, oracle=oracle, lam=0.5, tol=1e-8)
            kill_a_worker(client)
            again = solve_files(client, oracle=oracle, lam=0.5, tol=1e-8)
            within_certificates(local, first)
            within_certificates(local, again)
            oracle.close()
            client.wait_for_workers(2, timeout=60)
    finally:
        client.close()
        cluster.close()
