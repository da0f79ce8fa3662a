"""A study on a two-worker Dask LocalCluster (loopback) gives the local table, times aside."""

import socket

import pytest

from cvxrank.datasets import make_ranking
from cvxrank.exceptions import CvxrankError, ValidationError
from cvxrank.study import CostSetting, Instance, Study, compare_tables, run_study

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow  # Dask clusters: worker processes start and import cvxrank and CVXPY


def tiny_study():
    data = make_ranking(n_queries=4, docs_per_query=(5, 8), n_features=3, random_state=5)
    return Study([Instance.from_data("tiny", data), Instance.generated("ecml", 2)], ["lifted", "dual"],
                 ["clarabel", "cutting_plane"], ["mid"], costs=[CostSetting(1.0), CostSetting(0.1)],
                 timeout=60)


@pytest.fixture(scope="module")
def client():
    """Two worker processes on loopback; the client is not the default one (as in `cvxrank compare`)."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=":0")
    with cluster, distributed.Client(cluster, set_as_default=False) as c:
        yield c


def test_dask_and_local_runs_give_the_same_table(client, tmp_path):
    study = tiny_study()
    local = run_study(study, tmp_path / "local", jobs=2, progress=False)
    on_dask = run_study(study, tmp_path / "dask", scheduler=client, progress=False)
    assert len(on_dask) == study.n_runs == 2 * (2 + 1) * 2
    assert on_dask["found"].all()
    assert compare_tables(local, on_dask).empty
    # the same through the scheduler's address; everything is stored, so nothing runs again
    again = run_study(study, tmp_path / "dask", scheduler=client.scheduler.address, progress=False)
    assert again.attrs["ran"] == 0 and compare_tables(local, again).empty


def test_a_local_cluster_started_for_the_study(tmp_path):
    study = Study([Instance.generated("ecml", 2)], ["lifted"], ["clarabel"], ["mid"])
    df = run_study(study, tmp_path, scheduler="local:2", progress=False)
    assert df["found"].all() and df.attrs["ran"] == 1
    with pytest.raises(ValidationError, match="local:N"):
        run_study(study, tmp_path, scheduler="local:two", progress=False)


def test_an_unreachable_scheduler_fails_fast_with_a_clear_error(tmp_path):
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # the limit ended the attempt (the message states it), not a retry loop
    with pytest.raises(CvxrankError, match=f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port} within 2 s"):
        run_study(tiny_study(), tmp_path, scheduler=f"tcp://127.0.0.1:{port}", connect_timeout=2, progress=False)
    assert not (tmp_path / "results.csv").exists()  # nothing started
