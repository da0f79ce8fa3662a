"""The command line on click logs: ``fit --clicks`` and the ``clicks`` experiment."""

from __future__ import annotations

import json

import pytest

import cvxrank as cr
from cvxrank.cli import main
from cvxrank.clicks import make_clicks, write_clicks
from cvxrank.data import save_letor
from cvxrank.estimators import ClickRankSVM, load_model


@pytest.fixture
def files(tmp_path):
    data = cr.make_ranking(n_queries=20, docs_per_query=(6, 10), n_features=4, random_state=0)
    save_letor(data, tmp_path / "docs.letor")
    log = make_clicks(data, eta=1.0, n_sessions=800, top_k=5, random_state=1)
    write_clicks(log, tmp_path / "clicks.txt")
    return tmp_path, data, log


def test_fit_on_clicks_writes_the_model_of_the_estimator(files, capsys):
    folder, data, log = files
    model = folder / "m.json"
    assert main(["fit", str(folder / "docs.letor"), "--clicks", str(folder / "clicks.txt"), "--model", str(model),
                 "--propensities", "1", "--clip", "10", "--lam", "0.5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ClickRankSVM (propensity) on") and "800 sessions" in out[0]
    assert out[-1].startswith("status optimal")
    saved = load_model(model)
    direct = ClickRankSVM(propensities=1.0, clip=10.0, lam=0.5).fit(log)
    a, b = saved.result_ if hasattr(saved, "result_") else None, direct.result_
    assert abs(saved.coef_ - direct.coef_).max() <= 2 * b.distance_bound + 1e-12
    assert a is None or a.status == "optimal"
    assert main(["predict", str(model), str(folder / "docs.letor"), "--output", str(folder / "s.txt")]) == 0
    assert len((folder / "s.txt").read_text().split()) == data.n_documents


@pytest.mark.parametrize("extra, message", [
    (["--tau", "estimate"], "--tau is for graded data"),
    (["--method", "rsvm-ir"], "--method is for graded data"),
    (["--l1", "0.1"], "--l1, --lower and --upper are for graded data"),
    (["--propensities", "often"], "--propensities must be estimate, log or a number"),
    (["--clip", "0.5"], "clip"),
])
def test_fit_on_clicks_refuses_graded_options_in_one_line(files, capsys, extra, message):
    folder, _, _ = files
    code = main(["fit", str(folder / "docs.letor"), "--clicks", str(folder / "clicks.txt"), "--model",
                 str(folder / "m.json"), *extra])
    err = capsys.readouterr().err.strip()
    assert code != 0 and message in err and len(err.splitlines()) == 1
    assert not (folder / "m.json").exists()


def test_click_options_need_a_click_log(files, capsys):
    folder, _, _ = files
    assert main(["fit", str(folder / "docs.letor"), "--model", str(folder / "m.json"), "--clip", "3"]) != 0
    assert "--clip is for click logs" in capsys.readouterr().err


def test_the_clicks_experiment_refuses_bad_arguments_before_it_runs(tmp_path, capsys):
    assert main(["clicks", "--train", str(tmp_path / "a.letor")]) != 0
    assert "--train and --test go together" in capsys.readouterr().err
    assert main(["clicks", "--etas", "1,x"]) != 0
    assert "--etas must be numbers" in capsys.readouterr().err


@pytest.mark.slow  # a small experiment: 5 certified fits on generated data
def test_the_clicks_experiment_runs_and_writes_its_outputs(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["clicks", "--etas", "1", "--sessions", "500", "--repeats", "1", "--json", str(out),
                 "--plots", str(tmp_path / "figs")]) == 0
    text = capsys.readouterr().out
    assert "NDCG@10 on the test split's true grades" in text and "status: {'optimal': 5}" in text
    rows = json.loads(out.read_text())["rows"]
    assert {r["model"] for r in rows} >= {"naive", "propensity_true", "propensity_estimated"}
    assert (tmp_path / "figs" / "clicks_ndcg.png").is_file() and (tmp_path / "figs" / "clicks_ndcg.pdf").is_file()
