"""cvxrank fit / predict / evaluate on LETOR files."""

import json

import numpy as np
import pytest

import cvxrank as cr
from cvxrank.cli import main
from cvxrank.estimators import RankSVMIR, load_model
from cvxrank.evaluation import evaluate_ranking


def write_letor(path, data):
    cr.data.save_letor(data, path)
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("letor")
    train = cr.make_ranking(n_queries=8, docs_per_query=(5, 8), n_features=4, random_state=11)
    test = cr.make_ranking(n_queries=4, docs_per_query=(5, 8), n_features=4, random_state=12)
    return write_letor(d / "train.letor", train), write_letor(d / "test.letor", test), train, test


def test_fit_with_float32_features(files, tmp_path, capsys):
    train_path = files[0]
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    assert "--dtype {float64,float32}" in capsys.readouterr().out
    model = tmp_path / "m32.json"
    assert main(["fit", train_path, "--model", str(model), "--solver", "cutting_plane", "--lam", "0.1",
                 "--dtype", "float32"]) == 0
    assert "status optimal" in capsys.readouterr().out
    # what the Python API gives on the float32 data (tests/test_float32.py checks those against Clarabel)
    ref = cr.estimators.RankSVM(lam=0.1, solver="cutting_plane").fit(cr.load_letor(train_path, dtype=np.float32))
    np.testing.assert_array_equal(load_model(model).coef_, ref.coef_)


def test_fit_predict_evaluate(files, tmp_path, capsys):
    train_path, test_path, train, test = files
    model = tmp_path / "model.json"
    assert main(["fit", train_path, "--model", str(model), "--method", "rsvm-ir", "--tau", "estimate",
                 "--mu", "balanced", "--lam", "0.1", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "RSVM-IR-QP" in out and "status optimal" in out and f"wrote {model}" in out
    # The file holds what the Python API gives for the same settings.
    ref = RankSVMIR(lam=0.1, random_state=3).fit(cr.load_letor(train_path))
    np.testing.assert_allclose(load_model(model).coef_, ref.coef_, atol=1e-8)

    scores = tmp_path / "test.scores"
    assert main(["predict", str(model), test_path, "--output", str(scores)]) == 0
    values = np.array([float(v) for v in scores.read_text().split()])
    test_data = cr.load_letor(test_path)
    np.testing.assert_array_equal(values, test_data.X @ load_model(model).coef_)  # exact text round trip
    capsys.readouterr()
    assert main(["predict", str(model), test_path]) == 0
    assert capsys.readouterr().out.split() == scores.read_text().split()

    out_json = tmp_path / "metrics.json"
    per_query = tmp_path / "pq.csv"
    assert main(["evaluate", test_path, "--scores", str(scores), "--json", str(out_json),
                 "--per-query", str(per_query)]) == 0
    metrics = json.loads(out_json.read_text())["metrics"]
    expected = evaluate_ranking(test_data.y, values, test_data.qid)
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value)
    assert per_query.read_text().count("\n") == test_data.n_queries + 1
    capsys.readouterr()
    assert main(["evaluate", test_path, "--model", str(model), "--k", "2"]) == 0
    assert "ndcg@2" in capsys.readouterr().out


def test_predict_pads_a_file_with_fewer_features(files, tmp_path):
    train_path, _, _, _ = files
    model = tmp_path / "m.json"
    assert main(["fit", train_path, "--model", str(model)]) == 0
    small = tmp_path / "small.letor"
    small.write_text("1 qid:1 1:0.5\n0 qid:1 2:0.25\n")
    assert main(["predict", str(model), str(small), "--output", str(tmp_path / "s")]) == 0
    w = load_model(model).coef_
    assert [float(v) for v in (tmp_path / "s").read_text().split()] == [0.5 * w[0], 0.25 * w[1]]


def one_line_error(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err, err


def test_bad_input(files, tmp_path, capsys):
    train_path, test_path, _, _ = files
    model = tmp_path / "m.json"
    main(["fit", train_path, "--model", str(model)])
    wide = tmp_path / "wide.letor"
    wide.write_text("1 qid:1 1:1 9:1\n0 qid:1 2:1\n")
    one_line_error(capsys, ["predict", str(model), str(wide)], "features up to 9, but the model was fitted with 4")
    not_model = tmp_path / "x.json"
    not_model.write_text('{"weights": [1, 2]}')
    one_line_error(capsys, ["predict", str(not_model), test_path], "not a cvxrank model file")
    old = json.loads(model.read_text())
    old["format_version"] = 0
    (tmp_path / "old.json").write_text(json.dumps(old))
    one_line_error(capsys, ["predict", str(tmp_path / "old.json"), test_path], "model format 0")
    one_line_error(capsys, ["fit", train_path, "--model", str(tmp_path / "m2.json"), "--method", "ranksvm",
                            "--tau", "estimate"], "does not take tau")
    one_line_error(capsys, ["fit", train_path, "--model", str(tmp_path / "m2.json"), "--method", "magic"],
                   "unknown method")
    one_line_error(capsys, ["fit", train_path, "--model", "/nonexistent/dir/m.json"], "does not exist")
    assert not (tmp_path / "m2.json").exists()
    scores = tmp_path / "short.scores"
    scores.write_text("1.0\n2.0\n")
    one_line_error(capsys, ["evaluate", test_path, "--scores", str(scores)], "has 2 scores but the data file has")
    scores.write_text("1.0\nabc\n")
    one_line_error(capsys, ["evaluate", test_path, "--scores", str(scores)], "line 2: 'abc' is not a number")
    one_line_error(capsys, ["evaluate", test_path, "--model", str(model), "--k", "1,x"], "--k must be")
    single = tmp_path / "single.letor"
    single.write_text("1 qid:1 1:1\n1 qid:1 1:2\n1 qid:2 1:0\n")
    one_line_error(capsys, ["fit", str(single), "--model", str(tmp_path / "m3.json"), "--method", "cs-ranksvm"],
                   "grade")


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in ("demo", "fit", "predict", "evaluate", "verify"):
        assert name in out
    for name in ("fit", "predict", "evaluate"):
        with pytest.raises(SystemExit):
            main([name, "--help"])
        assert "examples:" in capsys.readouterr().out
