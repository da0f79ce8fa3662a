"""The scikit-learn rankers against the core problem, scikit-learn's own checks and model selection."""

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

import cvxrank as cr
from cvxrank.estimators import CostSensitiveRankSVM, CsRgList, ListMLE, RankSVM, RankSVMIR
from cvxrank.estimators.methods import METHODS, make_ranker, method_label
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.metrics import ndcg_score
from tests.conftest import assert_agree

TAU = {(2, 1): 1.0, (2, 0): 2.0, (1, 0): 0.25}


@pytest.fixture(scope="module")
def data():
    return cr.make_ranking(n_queries=8, docs_per_query=(5, 9), n_features=4, random_state=3)


def reference_w(data, tau=None, mu=None, lam=1.0):
    """The core route: explicit pairs, Theorem 1's C, the dual form, Clarabel."""
    pairs = cr.make_pairs(data)
    weights = cr.pair_weights(pairs, tau=tau, mu=mu)
    res = cr.solve(cr.build(pairs, C=cr.theorem1_C(weights, lam), formulation="dual"), "clarabel", tol=1e-9)
    assert res.found
    return res.w


# scikit-learn's estimator checks. They fit with qid=None (one query) and arbitrary real targets,
# so tau="estimate" (which needs non-negative integer-like grades per query) is set to None here.
@parametrize_with_checks([RankSVM(), CostSensitiveRankSVM(tau=None), RankSVMIR(tau=None), ListMLE(), CsRgList()])
def test_sklearn_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("model, tau, mu", [
    (RankSVM(lam=0.3), None, None),
    (CostSensitiveRankSVM(tau=TAU, lam=0.3), TAU, None),
    (RankSVMIR(tau=TAU, lam=0.3), TAU, "balanced"),
    (RankSVMIR(tau=TAU, variant="rank", lam=0.3), TAU, None),
    (RankSVMIR(tau=TAU, variant="query", lam=0.3), None, "balanced"),
])
def test_coef_is_the_core_solution(data, model, tau, mu):
    model.fit(data.X, data.y, qid=data.qid)
    np.testing.assert_allclose(model.coef_, reference_w(data, tau, mu, lam=0.3), atol=1e-6)
    assert model.result_.found and model.result_.relative_gap <= 1e-6
    assert model.n_iter_ == model.result_.iterations > 0
    assert model.n_features_in_ == data.n_features
    np.testing.assert_allclose(model.predict(data.X), data.X @ model.coef_)


def test_C_is_lam_of_the_qp_form(data):
    a = RankSVM(C=2.0).fit(data.X, data.y, qid=data.qid)
    b = RankSVM(lam=0.25).fit(data.X, data.y, qid=data.qid)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-7)
    with pytest.raises(ValidationError, match="lam or C, not both"):
        RankSVM(C=1.0, lam=1.0).fit(data.X, data.y, qid=data.qid)


def test_ranking_data_and_arrays_and_sparse_agree(data):
    import scipy.sparse as sp

    a = RankSVM(lam=0.5).fit(data)
    b = RankSVM(lam=0.5).fit(data.X, data.y, qid=data.qid)
    c = RankSVM(lam=0.5).fit(sp.csr_matrix(data.X), data.y, qid=data.qid)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
    np.testing.assert_allclose(a.coef_, c.coef_, atol=1e-6)
    with pytest.raises(ValidationError, match="not both"):
        RankSVM().fit(data, data.y)


def test_score_is_mean_ndcg_at_k(data):
    model = RankSVM(lam=0.5, score_k=3).fit(data.X, data.y, qid=data.qid)
    expected = ndcg_score(data.y, data.X @ model.coef_, data.qid, k=3)
    assert model.score(data.X, data.y, qid=data.qid) == pytest.approx(expected)
    assert model.score(data) == pytest.approx(expected)


def test_tau_estimate_is_reproducible_and_is_the_heuristic(data):
    a = RankSVMIR(lam=0.3, random_state=7).fit(data.X, data.y, qid=data.qid)
    b = RankSVMIR(lam=0.3, random_state=7).fit(data.X, data.y, qid=data.qid)
    assert a.tau_ == b.tau_
    np.testing.assert_array_equal(a.coef_, b.coef_)
    table = cr.estimate_tau(data, T=100, random_state=7)
    assert a.tau_ == {(r.higher, r.lower): r.tau for r in table.itertuples()}


def test_zero_tau_pairs_drop_out(data):
    # Every query here has grade 2, so NDCG@1 never sees a (1, 0) error: its estimated tau is 0,
    # and the fit equals the one without those pairs (weight 0 is allowed in the QP).
    model = CostSensitiveRankSVM(lam=0.3, random_state=1).fit(data)
    assert model.tau_[(1, 0)] == 0.0
    pairs = cr.make_pairs(data)
    weights = cr.pair_weights(pairs, {k: (v if v > 0 else 1.0) for k, v in model.tau_.items()})
    weights[(pairs.pair_type == (1, 0)).all(axis=1)] = 0.0
    ref = cr.solve(cr.build(pairs, C=cr.theorem1_C(weights, 0.3)), "clarabel", tol=1e-9)
    np.testing.assert_allclose(model.coef_, ref.w, atol=1e-6)


def test_tau_estimation_needs_two_grades():
    one = cr.RankingData(np.eye(3), [1, 1, 1], [1, 1, 1])
    with pytest.raises(ValidationError, match="grade"):
        CostSensitiveRankSVM().fit(one)


def test_gd_optimizer_is_fig3_and_honest(data):
    model = RankSVMIR(tau=TAU, lam=1.0, optimizer="gd", max_iter=400)
    with pytest.warns(InaccurateSolutionWarning):
        model.fit(data.X, data.y, qid=data.qid)
    res = model.result_
    assert res.solver == "gd" and res.status == "user_limit" and res.iterations == 400
    # The certified gap G bounds ||w - w*||^2 <= G / lam (strong convexity of (9), modulus 2 lam).
    w_star = reference_w(data, TAU, "balanced", lam=1.0)
    assert np.linalg.norm(model.coef_ - w_star) <= np.sqrt(res.duality_gap / 1.0) + 1e-9
    with pytest.raises(ValidationError, match="contradicts"):
        RankSVMIR(optimizer="gd", solver="clarabel").fit(data)


def test_other_solvers_and_formulations(data):
    ref = RankSVM(lam=0.5).fit(data)
    for params in ({"solver": "ecos"}, {"formulation": "lifted"}, {"formulation": "hinge"},
                   {"solver": "subgradient", "formulation": "hinge", "tol": 1e-4}):
        got = RankSVM(lam=0.5, **params).fit(data)
        # Within the distances the two certificates prove, never tighter.
        assert np.linalg.norm(got.coef_ - ref.coef_) <= got.result_.distance_bound + ref.result_.distance_bound


@pytest.mark.parametrize("params, message", [
    ({"formulation": "sparse"}, "unknown formulation"),
    ({"tol": 0}, "tol must be"),
    ({"max_iter": 0}, "max_iter must be"),
    ({"solver_options": [1]}, "solver_options must be a dict"),
    ({"score_k": 0}, "score_k must be"),
    ({"lam": -1}, "lam must be positive"),
    ({"C": 0}, "C must be positive"),
    ({"solver": "nope"}, "unknown solver"),
])
def test_bad_parameters(data, params, message):
    with pytest.raises(ValueError, match=message):
        RankSVM(**params).fit(data)


def test_bad_ir_parameters(data):
    with pytest.raises(ValidationError, match="variant"):
        RankSVMIR(variant="both-ways").fit(data)
    with pytest.raises(ValidationError, match="optimizer"):
        RankSVMIR(optimizer="sgd").fit(data)
    with pytest.raises(ValidationError, match="tau must be"):
        RankSVMIR(tau="guess").fit(data)


def test_predict_with_wrong_feature_count(data):
    model = RankSVM().fit(data)
    with pytest.raises(ValueError, match="4 features"):
        model.predict(np.ones((2, 3)))


def test_grid_search_with_group_folds_routes_qid():
    data = cr.make_ranking(n_queries=9, docs_per_query=(5, 8), n_features=3, random_state=5)
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = RankSVM().set_fit_request(qid=True).set_score_request(qid=True)
        search = GridSearchCV(ranker, {"lam": [0.01, 1.0, 100.0]}, cv=GroupKFold(n_splits=3))
        search.fit(data.X, data.y, qid=data.qid, groups=data.qid)
    # The same numbers by hand: folds by query, score = mean NDCG@10 of the held-out queries.
    manual = {}
    for lam in (0.01, 1.0, 100.0):
        scores = []
        for train, test in GroupKFold(n_splits=3).split(data.X, data.y, groups=data.qid):
            assert not set(data.qid[train]) & set(data.qid[test])
            m = RankSVM(lam=lam).fit(data.X[train], data.y[train], qid=data.qid[train])
            scores.append(ndcg_score(data.y[test], data.X[test] @ m.coef_, data.qid[test], k=10))
        manual[lam] = np.mean(scores)
    got = dict(zip(search.cv_results_["param_lam"], search.cv_results_["mean_test_score"]))
    for lam, value in manual.items():
        assert got[lam] == pytest.approx(value, abs=1e-6)
    assert search.best_params_["lam"] == max(manual, key=manual.get)


def test_methods_registry():
    assert {"ranksvm", "cs-ranksvm", "rsvm-ir-rank", "rsvm-ir-query", "rsvm-ir-qp", "rsvm-ir-gd"} <= set(METHODS)
    assert make_ranker("RSVM-IR", lam=0.1).get_params()["variant"] == "both"
    assert make_ranker("rsvm-ir-query").variant == "query"
    assert method_label("rsvm-ir-gd") == "RSVM-IR-GD"
    with pytest.raises(ValidationError, match="unknown method"):
        make_ranker("lambdamart")
    with pytest.raises(ValidationError, match="does not take tau"):
        make_ranker("ranksvm", tau="estimate")
    with pytest.raises(ValidationError, match="does not take variant"):
        make_ranker("rsvm-ir-rank", variant="query")


def test_listwise_estimators_match_the_solvers(data):
    from cvxrank.listwise import solve_listwise_cvxpy, solve_newton

    for cls, pcf in ((ListMLE, None), (CsRgList, 2.0)):
        kw = {} if pcf is None else {"pcf": pcf}
        newton = cls(C=5.0, **kw).fit(data.X, data.y, qid=data.qid)
        ref = solve_newton(data, C=5.0, pcf=pcf, tol=1e-10)
        np.testing.assert_allclose(newton.coef_, ref.w, atol=1e-8)
        assert newton.result_.found and newton.n_iter_ == newton.result_.iterations
        cone = cls(C=5.0, solver="clarabel", **kw).fit(data)
        np.testing.assert_allclose(cone.coef_, solve_listwise_cvxpy(data, C=5.0, pcf=pcf).w, atol=1e-7)
        np.testing.assert_allclose(cone.coef_, newton.coef_, atol=1e-4)
        np.testing.assert_allclose(cls(lam=0.1, **kw).fit(data).coef_, cls(C=5.0, **kw).fit(data).coef_)


def test_listwise_bad_input(data):
    with pytest.raises(ValidationError, match="pCf|pcf"):
        CsRgList(pcf=0.5).fit(data)
    with pytest.raises(ValidationError, match="C or lam, not both"):
        ListMLE(C=1.0, lam=1.0).fit(data)
    with pytest.raises(ValueError, match="C"):
        ListMLE(C=-1.0).fit(data)


def test_fit_path_equals_refits(data):
    lams = [3.0, 0.3, 0.03]
    models = RankSVMIR(tau=TAU, random_state=0).fit_path(data, lams=lams)
    assert [m.lam for m in models] == lams and all(m.result_.found for m in models)
    for m in models:
        ref = reference_w(data, TAU, "balanced", lam=m.lam)
        # Both are certified to a relative gap of 1e-6; strong convexity bounds their distance by sqrt(G/lam).
        bound = np.sqrt(m.result_.duality_gap / m.lam) + 1e-8
        assert np.linalg.norm(m.coef_ - ref) <= bound
    planes = RankSVMIR(tau=TAU, random_state=0, solver="cutting_plane").fit_path(data, lams=lams)
    for m, ref in zip(planes, models):  # pair-free, each point started from the previous w
        assert m.result_.formulation == "pairfree" and m.result_.found and m.lam == ref.lam
        # Each is within sqrt(G / lam) of w* (both gaps on the hinge scale (9) at this lam).
        bound = np.sqrt(m.result_.duality_gap / m.lam) + np.sqrt(ref.result_.duality_gap / m.lam) + 1e-8
        assert np.linalg.norm(m.coef_ - ref.coef_) <= bound
    gd = RankSVM(solver="subgradient", formulation="hinge").fit_path(data, lams=[1.0, 2.0])
    assert [m.result_.solver for m in gd] == ["subgradient", "subgradient"]
    with pytest.raises(ValidationError, match="lam must be positive"):
        RankSVM().fit_path(data, lams=[1.0, -1.0])


def test_fit_path_with_cutting_plane_starts_each_lam_from_the_previous_w(data, monkeypatch):
    import importlib

    cp_module = importlib.import_module("cvxrank.native.cutting_plane")  # the module, not the function
    starts, real = [], cp_module.cutting_plane

    def spy(oracle, lam, **kw):
        starts.append(kw.get("warm_start_w"))
        return real(oracle, lam, **kw)

    monkeypatch.setattr(cp_module, "cutting_plane", spy)
    models = RankSVM(solver="cutting_plane").fit_path(data, lams=[1.0, 0.3, 0.1])
    assert starts[0] is None and len(starts) == 3
    for start, previous in zip(starts[1:], models[:2]):
        np.testing.assert_array_equal(start, previous.coef_)


def test_auto_solver_goes_pair_free_for_large_problems(data, monkeypatch):
    import cvxrank.solvers.registry as registry

    small = RankSVMIR(tau=TAU, lam=0.3).fit(data)
    assert small.result_.solver == "clarabel"
    monkeypatch.setattr(registry, "AUTO_PAIRFREE_PAIRS", 10)   # "large" from 10 pairs on
    large = RankSVMIR(tau=TAU, lam=0.3).fit(data)
    assert large.result_.solver == "cutting_plane" and large.result_.found
    # Both certified to a relative gap of 1e-6: their distance is within the strong-convexity bound.
    bound = np.sqrt(large.result_.duality_gap / 0.3) + np.sqrt(small.result_.duality_gap / 0.3)
    assert np.linalg.norm(large.coef_ - small.coef_) <= bound


def test_fallback_chain_from_the_estimator(data):
    import warnings

    # Clarabel capped at 2 iterations cannot certify; the chain moves on to ECOS and records the attempts.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        model = RankSVM(lam=0.5, solver="fallback", solver_options={"clarabel": {"max_iter": 2}}).fit(data)
    assert model.result_.found and model.result_.solver == "ecos"
    attempts = model.result_.extras["attempts"]
    assert attempts[0]["solver"] == "clarabel" and attempts[0]["status"] != "optimal"
    assert_agree(model.result_, RankSVM(lam=0.5).fit(data).result_)


def test_max_iter_reaches_every_solver_of_the_fallback_chain(data):
    from cvxrank.exceptions import InaccurateSolutionWarning

    with pytest.warns(InaccurateSolutionWarning):
        model = RankSVM(solver="fallback", max_iter=1).fit(data)
    attempts = model.result_.extras["attempts"]
    assert [a["solver"] for a in attempts][:2] == ["clarabel", "ecos"]
    assert not model.result_.found  # one iteration certifies nothing, in any solver of the chain
