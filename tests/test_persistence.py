"""JSON model files: exact round trips, and clear errors for anything that is not a valid model."""

import json

import numpy as np
import pytest

import cvxrank as cr
from cvxrank.estimators import CostSensitiveRankSVM, CsRgList, ListMLE, RankSVM, RankSVMIR, load_model, save_model
from cvxrank.estimators.persistence import FORMAT_VERSION, model_to_dict
from cvxrank.exceptions import ValidationError


@pytest.fixture(scope="module")
def data():
    return cr.make_ranking(n_queries=6, docs_per_query=(5, 8), n_features=3, random_state=2)


@pytest.fixture(scope="module")
def fitted(data):
    return RankSVMIR(lam=0.2, random_state=0).fit(data)


@pytest.mark.parametrize("model", [
    RankSVM(C=3.0, score_k=5),
    CostSensitiveRankSVM(tau={(2, 1): 1.0, (2, 0): 2.0, (1, 0): 0.5}, lam=0.5),
    RankSVMIR(lam=0.2, random_state=0, mu="balanced", variant="rank"),
    ListMLE(C=3.0),
    CsRgList(pcf=2.0, lam=0.5),
])
def test_round_trip_is_exact(model, data, tmp_path):
    model.fit(data)
    path = tmp_path / "m.json"
    model.save(path)
    loaded = type(model).load(path)
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.coef_, model.coef_)  # bit for bit
    np.testing.assert_array_equal(loaded.predict(data.X), model.predict(data.X))
    assert loaded.get_params() == model.get_params()
    for attr in ("tau_", "lam_", "C_", "n_iter_"):
        assert getattr(loaded, attr, None) == getattr(model, attr, None)
    assert loaded.solve_summary_["status"] == "optimal"
    assert loaded.solve_summary_["relative_gap"] == model.result_.relative_gap
    doc = json.loads(path.read_text())
    assert doc["cvxrank_version"] == cr.__version__ and doc["format_version"] == FORMAT_VERSION
    assert doc["solve"]["solver"] == model.result_.solver
    # A loaded model refits to the same weights: its parameters are complete.
    np.testing.assert_allclose(loaded.fit(data).coef_, model.coef_, atol=1e-9)


def test_load_checks_the_class(fitted, tmp_path):
    path = tmp_path / "m.json"
    save_model(fitted, path)
    with pytest.raises(ValidationError, match="holds a RankSVMIR, not a RankSVM"):
        RankSVM.load(path)


def test_unfitted_and_foreign_models_are_refused(tmp_path):
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LinearRegression

    with pytest.raises(NotFittedError):
        save_model(RankSVM(), tmp_path / "m.json")
    with pytest.raises(ValidationError, match="only cvxrank estimators"):
        save_model(LinearRegression().fit(np.eye(2), [0, 1]), tmp_path / "m.json")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_unsaveable_parameter(data, tmp_path):
    model = RankSVM(random_state=np.random.default_rng(0)).fit(data)
    with pytest.raises(ValidationError, match="cannot store parameter random_state"):
        save_model(model, tmp_path / "m.json")
    assert list(tmp_path.iterdir()) == []


def _mutate(doc, key, value):
    doc = json.loads(json.dumps(doc))
    if value is _DELETE:
        del doc[key]
    else:
        doc[key] = value
    return doc


_DELETE = object()


@pytest.mark.parametrize("key, value, message", [
    ("format", "sklearn-pickle", "not a cvxrank model file"),
    ("format_version", 99, "model format 99"),
    ("estimator", "os.system", "names estimator 'os.system'"),
    ("estimator", "BaseRanker", "names estimator 'BaseRanker'"),
    ("coef", [1.0, 2.0], "coef must be a list of 3 finite numbers"),
    ("coef", [1.0, "2", 3.0], "coef must be a list of 3 finite numbers"),
    ("coef", [1.0, True, 3.0], "coef must be a list of 3 finite numbers"),
    ("n_features", 0, "n_features must be a positive integer"),
    ("n_features", "3", "n_features must be a positive integer"),
    ("params", {"lam": 0.2, "__class__": "x"}, r"has no parameters \['__class__'\]"),
    ("params", [], "params must be an object"),
    ("fitted", None, "fitted must be an object"),
    ("extra", 1, r"unknown keys \['extra'\]"),
    ("coef", _DELETE, r"missing keys \['coef'\]"),
])
def test_malformed_model_files(fitted, tmp_path, key, value, message):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(_mutate(model_to_dict(fitted), key, value)))
    with pytest.raises(ValidationError, match=message):
        load_model(path)


@pytest.mark.parametrize("text, message", [
    ("", "invalid JSON"),
    ("{not json", "invalid JSON"),
    ("[1, 2]", "not a cvxrank model file"),
    ('{"format": "cvxrank-model", "x": NaN}', "not a finite number"),
])
def test_not_json_or_not_a_model(tmp_path, text, message):
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ValidationError, match=message):
        load_model(path)


def test_binary_and_missing_files(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ValidationError, match="not UTF-8"):
        load_model(path)
    with pytest.raises(ValidationError, match="does not exist"):
        load_model(tmp_path / "missing.json")


def test_bad_tau_in_file(fitted, tmp_path):
    doc = model_to_dict(fitted)
    doc["params"]["tau"] = [[2, 1, "inf"]]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValidationError, match="not a finite number"):
        load_model(path)
