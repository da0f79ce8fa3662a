"""ClickRankSVM: scikit-learn conventions, the core problem it solves, estimated propensities, model files,
clear errors; and a smoke run of the WSDM 2017 click experiment."""

import numpy as np
import pytest
from sklearn.base import clone

import cvxrank as cr
from cvxrank.clicks import click_problem, make_clicks, position_propensity
from cvxrank.estimators import ClickRankSVM, load_model
from cvxrank.exceptions import ValidationError


@pytest.fixture(scope="module")
def data():
    return cr.make_ranking(n_queries=12, docs_per_query=10, n_features=4, random_state=1)


@pytest.fixture(scope="module")
def log(data):
    return make_clicks(data, eta=1.0, n_sessions=600, top_k=6, random_state=0)


@pytest.fixture(scope="module")
def swap_log(data):
    return make_clicks(data, eta=1.0, n_sessions=6000, top_k=6, swap=True, random_state=1)


def test_public_names():
    assert not hasattr(cr, "ClickRankSVM")  # estimators live in cvxrank.estimators, like RankSVM
    for name in ("ClickLog", "read_clicks", "write_clicks", "click_pairs", "click_problem", "make_clicks"):
        assert getattr(cr, name) is getattr(cr.clicks, name)


def test_params_are_stored_as_given_and_clone_round_trips():
    props = np.array([1.0, 0.5, 0.25])
    model = ClickRankSVM(propensities=props, clip=5.0, lam=0.2, normalize=True)
    params = model.get_params()
    assert params["propensities"] is props and params["clip"] == 5.0 and params["rule"] == "propensity"
    twin = clone(model)
    assert twin.get_params()["lam"] == 0.2 and np.array_equal(twin.get_params()["propensities"], props)
    plain = ClickRankSVM(propensities=2.0, estimator="swap", clip=5.0).get_params()
    assert ClickRankSVM().set_params(**plain).get_params() == plain
    assert not [k for k in vars(ClickRankSVM()) if k.endswith("_")], "nothing fitted in __init__"
    with pytest.raises(ValueError, match="Invalid parameter"):
        ClickRankSVM().set_params(no_such=1)


def test_sklearn_parameter_checks():
    from sklearn.utils.estimator_checks import (
        check_get_params_invariance,
        check_no_attributes_set_in_init,
        check_parameters_default_constructible,
        check_set_params,
    )

    est = ClickRankSVM()
    check_parameters_default_constructible("ClickRankSVM", est)
    check_no_attributes_set_in_init("ClickRankSVM", est)
    check_get_params_invariance("ClickRankSVM", est)
    check_set_params("ClickRankSVM", est)


@pytest.mark.parametrize("kwargs, rule, propensities", [
    ({"propensities": 1.0}, "propensity", lambda k: position_propensity(k, 1.0)),
    ({"propensities": "log", "clip": 4.0}, "propensity", None),
    ({"propensities": 0.0}, "propensity", lambda k: np.ones(len(k))),
    ({"rule": "skip_above"}, "skip_above", None),
])
def test_fit_is_the_click_problem_within_the_certificates(log, kwargs, rule, propensities):
    model = ClickRankSVM(lam=0.1, **kwargs).fit(log)
    extra = {} if rule == "skip_above" else {"propensities": propensities, "clip": kwargs.get("clip")}
    problem = click_problem(log, rule, lam=0.1, **extra)
    ref = cr.solve(problem, "clarabel")
    a, b = model.result_, ref
    assert a.found and b.found
    assert abs(a.objective - b.objective) <= a.gap_L + b.gap_L
    assert model.n_pairs_ == problem.n_pairs and model.lam_ == 0.1
    assert model.n_clicks_ == log.n_clicks and model.n_sessions_ == log.n_sessions
    np.testing.assert_allclose(model.predict(log.documents.X), log.documents.X @ model.coef_)
    if rule == "skip_above":
        assert model.propensities_ is None and model.eta_ is None
    else:
        assert model.propensities_.shape == (6,)


def test_normalize_is_lambda_on_the_mean_loss(log):
    plain = ClickRankSVM(propensities=1.0, lam=0.1).fit(log)
    scaled = ClickRankSVM(propensities=1.0, lam=0.1, normalize=True).fit(log)
    assert scaled.lam_ == pytest.approx(0.1 * plain.weight_sum_)
    ref = cr.solve(click_problem(log, "propensity", lam=0.1 * plain.weight_sum_), "clarabel")
    assert abs(scaled.result_.objective - ref.objective) <= scaled.result_.gap_L + ref.gap_L


def test_a_pair_free_solver_trains_without_forming_the_pairs(log, monkeypatch):
    """With a native solver the estimator reads the click groups (costs per document), never their pairs."""
    from cvxrank.preference_groups import PreferenceGroups

    explicit = ClickRankSVM(propensities=1.0, normalize=True).fit(log)  # Clarabel on the explicit pairs

    def no_pairs(self):
        raise AssertionError("the pairs were formed")

    monkeypatch.setattr(PreferenceGroups, "pairs", no_pairs)
    native = ClickRankSVM(propensities=1.0, normalize=True, solver="cutting_plane").fit(log)
    a, b = explicit.result_, native.result_
    assert b.status == "optimal" and native.weight_sum_ == pytest.approx(explicit.weight_sum_, rel=1e-12)
    assert native.n_pairs_ == explicit.n_pairs_
    assert abs(a.objective - b.objective) <= a.gap_L + b.gap_L
    assert np.abs(a.w - b.w).max() <= a.distance_bound + b.distance_bound


def test_the_true_eta_is_recorded(log):
    model = ClickRankSVM(propensities=2.0).fit(log)
    assert model.eta_ == 2.0
    np.testing.assert_allclose(model.propensities_, position_propensity(np.arange(1, 7), 2.0))
    from_log = ClickRankSVM(propensities="log").fit(log)
    np.testing.assert_allclose(from_log.propensities_, position_propensity(np.arange(1, 7), 1.0))
    assert np.isnan(from_log.eta_)


@pytest.mark.parametrize("estimator", ["swap", "em"])
def test_estimated_propensities_recover_eta(log, swap_log, estimator):
    model = ClickRankSVM(propensities="estimate", estimator=estimator).fit(log, propensity_log=swap_log)
    est = model.propensity_estimate_
    assert est.method == estimator and model.eta_ == est.eta
    assert abs(model.eta_ - 1.0) <= 3 * est.eta_se and est.eta_se < 0.2
    np.testing.assert_allclose(model.propensities_, position_propensity(np.arange(1, 7), est.eta))
    theta = ClickRankSVM(propensities="estimate", estimator=estimator, propensity_form="theta").fit(
        log, propensity_log=swap_log)
    np.testing.assert_allclose(theta.propensities_, est.theta)


def test_estimate_from_a_plain_log_is_refused_with_the_reason(log):
    with pytest.raises(ValidationError, match="not identifiable"):
        ClickRankSVM(propensities="estimate", estimator="em").fit(log)
    with pytest.raises(ValidationError, match="swap"):
        ClickRankSVM(propensities="estimate", estimator="swap").fit(log)


def test_model_file_round_trip(log, tmp_path):
    model = ClickRankSVM(propensities=1.0, lam=0.1, normalize=True).fit(log)
    path = tmp_path / "clicks.json"
    model.save(path)
    back = ClickRankSVM.load(path)
    assert type(back) is ClickRankSVM and back.get_params() == model.get_params()
    np.testing.assert_array_equal(back.coef_, model.coef_)
    np.testing.assert_array_equal(back.propensities_, model.propensities_)
    assert back.eta_ == 1.0 and back.n_pairs_ == model.n_pairs_ and back.lam_ == model.lam_
    np.testing.assert_allclose(back.predict(log.documents.X), model.predict(log.documents.X))
    assert type(load_model(path)) is ClickRankSVM
    with pytest.raises(ValidationError, match="cannot store parameter propensities"):
        ClickRankSVM(propensities=lambda k: 1.0 / k).fit(log).save(tmp_path / "f.json")


@pytest.mark.parametrize("kwargs, match", [
    ({"rule": "clicks"}, "rule"),
    ({"propensities": "guess"}, "propensities"),
    ({"propensities": -1.0}, "eta"),
    ({"propensities": True}, "propensities must be"),
    ({"estimator": "bayes"}, "estimator"),
    ({"propensity_form": "spline"}, "propensity_form"),
    ({"clip": 0.5}, "clip"),
    ({"rule": "skip_above", "clip": 3.0}, "clip applies to rule='propensity'"),
    ({"normalize": "yes"}, "normalize must be True or False"),
    ({"lam": 0.1, "C": 1.0}, "lam or C, not both"),
    ({"lam": -1.0}, "lam"),
])
def test_bad_params_give_clear_errors(log, kwargs, match):
    with pytest.raises(ValidationError, match=match):
        ClickRankSVM(**kwargs).fit(log)


def test_an_unknown_solver_lists_the_installed_ones(log):
    with pytest.raises(cr.SolverNotAvailableError, match="unknown solver 'no_such_solver'; installed: clarabel"):
        ClickRankSVM(solver="no_such_solver", propensities=1.0).fit(log)


def test_bad_inputs_give_clear_errors(data, log):
    with pytest.raises(ValidationError, match="takes a ClickLog"):
        ClickRankSVM().fit(data)
    with pytest.raises(ValidationError, match="y must be None"):
        ClickRankSVM(propensities=1.0).fit(log, data.y)
    with pytest.raises(ValidationError, match="only with propensities='estimate'"):
        ClickRankSVM(propensities=1.0).fit(log, propensity_log=log)
    with pytest.raises(ValidationError, match=r"has no propensity \(the array covers positions 1..2\)"):
        ClickRankSVM(propensities=[1.0, 0.5]).fit(log)


def test_click_experiment_smoke():
    from cvxrank.experiments.clicks import make_click_data, run_click_experiment

    train, test = make_click_data(n_queries=24, n_test=8, n_features=4)
    res = run_click_experiment(train, test, etas=(1.0,), n_sessions=(200, 400), repeats=1,
                               models=("naive", "skip_above", "propensity_true", "propensity_estimated"))
    frame = res.frame
    assert set(frame["status"]) == {"optimal"}
    assert len(frame) == 2 + 2 * 4
    assert frame["ndcg"].between(0, 1).all()
    assert list(res.table().columns) == ["naive", "skip_above", "propensity_true", "propensity_estimated",
                                         "production", "full_information"]
    assert "NDCG@10" in res.report()
    again = run_click_experiment(train, test, etas=(1.0,), n_sessions=(200, 400), repeats=1,
                                 models=("naive", "skip_above", "propensity_true", "propensity_estimated"))
    np.testing.assert_array_equal(again.frame["ndcg"], frame["ndcg"])  # seeded
    with pytest.raises(ValidationError, match="models"):
        run_click_experiment(train, test, models=("oracle",))


def test_click_plot_draws_every_model():
    import pandas as pd

    from cvxrank.plots.clicks import plot_click_experiments

    frame = pd.DataFrame({"model": ["production", "full_information", "naive", "naive", "propensity_true"],
                          "eta": [np.nan, np.nan, 0.5, 2.0, 2.0], "n_sessions": [np.nan, np.nan, 100, 100, 100],
                          "ndcg": [0.6, 0.7, 0.62, 0.61, 0.66]})
    axes = plot_click_experiments(frame)
    assert [ax.get_title() for ax in axes] == ["η = 0.5", "η = 2"]
    assert len(axes[1].lines) >= 3
