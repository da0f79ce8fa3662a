"""ListMLE / cs-RgList (He et al., equation (3)): loss, derivatives, Newton, CVXPY form."""

import json

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp, softmax

from cvxrank.data import RankingData
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import (
    InaccurateSolutionWarning,
    SolverError,
    SolverNotAvailableError,
    ValidationError,
)
from cvxrank.listwise import (
    EXP_CONE_SOLVERS,
    build_listwise,
    certificate_bounds,
    cs_rglist_weights,
    listwise_layout,
    listwise_loss,
    listwise_loss_derivatives,
    listwise_objective,
    objective_derivatives,
    perfect_order,
    query_losses,
    solve_listwise_cvxpy,
    solve_newton,
)
from cvxrank.listwise.loss import _hessian, _pieces
from cvxrank.solvers import available_solvers

EXP_SOLVERS = [s for s in EXP_CONE_SOLVERS if s in available_solvers()]


# -- an independent reference: one query, one position at a time ----------------------------
def reference(X, y, qid, w, pcf):
    """Loss, gradient and Hessian of Σ (U/V) ℓ_ij by the textbook formulas, looping over queries/positions.

    Ω: Python's stable ``sorted`` by descending grade; U = pcf ** grade of the position's document,
    V = its grade's count in the query; Hessian term Xᵀ(diag p − p pᵀ)X over the suffix.
    """
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    qid = np.asarray(qid)
    n = X.shape[1]
    loss, grad, hess = 0.0, np.zeros(n), np.zeros((n, n))
    for q in np.unique(qid):
        idx = sorted(np.flatnonzero(qid == q).tolist(), key=lambda i: -y[i])
        for pos, j in enumerate(idx):
            weight = 1.0 if pcf is None else pcf ** y[j] / sum(y[i] == y[j] for i in idx)
            Xs = X[idx[pos:]]
            scores = Xs @ w
            p = softmax(scores)
            loss += weight * (logsumexp(scores) - scores[0])
            grad += weight * (p @ Xs - Xs[0])
            hess += weight * (Xs.T @ (np.diag(p) - np.outer(p, p)) @ Xs)
    return loss, grad, hess


def random_instance(seed, *, n_queries=4, docs=(2, 9), n_features=3, sparse=False, grades=3):
    data = make_ranking(n_queries=n_queries, docs_per_query=docs, n_features=n_features, n_grades=grades,
                        density=0.6 if sparse else 1.0, random_state=seed)
    w = np.random.default_rng(seed + 50).standard_normal(n_features)
    return data, w


# -- loss, gradient, Hessian -------------------------------------------------------------------
@pytest.mark.parametrize("pcf", [None, 1.0, 2.5])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_derivatives_match_loop_reference(seed, pcf, sparse):
    data, w = random_instance(seed, sparse=sparse)
    loss, grad, hess = listwise_loss_derivatives(data, w, pcf=pcf)
    ref_loss, ref_grad, ref_hess = reference(data.X, data.y, data.qid, w, pcf)
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hess, ref_hess, rtol=1e-10, atol=1e-12)
    assert listwise_loss(data, w, pcf=pcf) == pytest.approx(ref_loss, rel=1e-12)


def test_mixed_query_lengths_cross_buckets():
    # lengths 1, 2, 3, 5, 9, 17 fall into different power-of-two buckets; one query has a single document
    rng = np.random.default_rng(3)
    sizes = [1, 2, 3, 5, 9, 17]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.standard_normal((qid.size, 4))
    y = rng.integers(0, 4, qid.size)
    data = RankingData(X, y, qid)
    w = rng.standard_normal(4)
    got = listwise_loss_derivatives(data, w, pcf=1.7)
    ref = reference(X, y, qid, w, 1.7)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    per_query = query_losses(data, w, pcf=1.7)
    assert per_query[0] == 0.0 and per_query.sum() == pytest.approx(ref[0], rel=1e-12)


@pytest.mark.parametrize("pcf", [None, 3.0])
def test_objective_derivatives_against_finite_differences(pcf):
    data, w = random_instance(5, n_features=4)
    C = 7.0
    f, g, H = objective_derivatives(data, w, C=C, pcf=pcf)
    assert f == pytest.approx(listwise_objective(data, w, C=C, pcf=pcf), rel=1e-14)
    h = 1e-6
    eye = np.eye(w.size)
    g_fd = np.array([(listwise_objective(data, w + h * e, C=C, pcf=pcf)
                      - listwise_objective(data, w - h * e, C=C, pcf=pcf)) / (2 * h) for e in eye])
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-6)
    H_fd = np.array([(objective_derivatives(data, w + h * e, C=C, pcf=pcf, hessian=False)[1]
                      - objective_derivatives(data, w - h * e, C=C, pcf=pcf, hessian=False)[1]) / (2 * h)
                     for e in eye])
    np.testing.assert_allclose(H, H_fd, rtol=1e-5, atol=1e-6)
    assert np.linalg.eigvalsh(H).min() >= 1 - 1e-12  # ½‖w‖² makes it ⪰ I


def test_hessian_robust_and_fast_paths_agree_and_survive_huge_score_spreads():
    data, w = random_instance(8, n_features=3, docs=(6, 12))
    layout = listwise_layout(data, pcf=2.0)
    pieces = _pieces(layout, w, derivatives=True)
    np.testing.assert_allclose(_hessian(layout, pieces, robust=True), _hessian(layout, pieces, robust=False),
                               rtol=1e-11, atol=1e-12)
    # scores spread by thousands inside a query: exp(log Z_j - log Z_1) underflows, the recurrence takes over
    w_big = 400 * w
    loss, grad, hess = listwise_loss_derivatives(layout, w_big)
    ref_loss, ref_grad, ref_hess = reference(data.X, data.y, data.qid, w_big, 2.0)
    assert np.isfinite(loss) and loss == pytest.approx(ref_loss, rel=1e-10)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(hess, ref_hess, rtol=1e-7, atol=1e-9)


def test_hessian_is_the_same_in_small_chunks(monkeypatch):
    import cvxrank.listwise.loss as loss_module

    data, w = random_instance(9, n_queries=7, docs=(2, 12), sparse=True)
    whole = listwise_loss_derivatives(data, w, pcf=2.0)[2]
    monkeypatch.setattr(loss_module, "CHUNK_ELEMENTS", 8)  # one query per chunk
    np.testing.assert_allclose(listwise_loss_derivatives(data, w, pcf=2.0)[2], whole, rtol=1e-12, atol=1e-14)


def test_hessian_stays_positive_definite_with_large_features_and_C():
    # the textbook form Xᵀdiag(c)X − Mᵀdiag(a)M cancels catastrophically here; ours is a sum of PSD terms
    data, w = random_instance(0, n_queries=6, docs=(6, 10), n_features=3)
    big = RankingData(data.X * 1e4, data.y, data.qid)
    _, _, H = objective_derivatives(big, w, C=1e6)
    assert np.linalg.eigvalsh(H).min() >= 1 - 1e-6


# -- conventions -------------------------------------------------------------------------------
def test_hand_computed_loss_and_tie_convention():
    # grades [0, 1, 1], scores [0, 1, 2]; Ω keeps the two grade-1 documents in input order: docs 1, 2, 0
    X = np.array([[0.0], [1.0], [2.0]])
    data = RankingData(X, [0, 1, 1], qid=[4, 4, 4])
    assert perfect_order(data.y, data.qid).tolist() == [1, 2, 0]
    expected = (np.log(np.exp(1) + np.exp(2) + 1) - 1) + (np.log(np.exp(2) + 1) - 2)
    assert listwise_loss(data, [1.0]) == pytest.approx(expected, rel=1e-14)
    # swapping the tied documents in the input changes Ω and therefore the loss (documented)
    swapped = RankingData(X[[0, 2, 1]], [0, 1, 1], qid=[4, 4, 4])
    expected_swapped = (np.log(np.exp(2) + np.exp(1) + 1) - 2) + (np.log(np.exp(1) + 1) - 1)
    assert listwise_loss(swapped, [1.0]) == pytest.approx(expected_swapped, rel=1e-14)
    assert abs(expected - expected_swapped) > 0.5
    # permuting documents of different grades (ties keeping their relative order) changes nothing
    shuffled = RankingData(X[[1, 0, 2]], [1, 0, 1], qid=[4, 4, 4])
    assert listwise_loss(shuffled, [1.0]) == pytest.approx(expected, rel=1e-14)


def test_weights_use_the_grade_value_as_exponent_and_divide_by_grade_count():
    y = [3, 1, 1, 0, 2, 2, 2]
    qid = [1, 1, 1, 1, 2, 2, 2]
    np.testing.assert_allclose(cs_rglist_weights(y, qid, pcf=2.0), [8, 1, 1, 1, 4 / 3, 4 / 3, 4 / 3])
    np.testing.assert_allclose(cs_rglist_weights(y, qid, pcf=None), np.ones(7))
    # pcf = 1 is not plain ListMLE: the division by V stays
    np.testing.assert_allclose(cs_rglist_weights(y, qid, pcf=1.0), [1, 0.5, 0.5, 1, 1 / 3, 1 / 3, 1 / 3])


def test_queries_need_not_be_contiguous_and_ids_may_be_strings():
    data, w = random_instance(4)
    perm = np.random.default_rng(0).permutation(data.n_documents)
    shuffled = RankingData(data.X[perm], data.y[perm], np.array([f"q{q}" for q in data.qid[perm]]))
    ref = reference(shuffled.X, shuffled.y, shuffled.qid, w, 2.0)  # ties: the shuffled input order
    assert listwise_loss(shuffled, w, pcf=2.0) == pytest.approx(ref[0], rel=1e-12)
    np.testing.assert_allclose(listwise_loss_derivatives(shuffled, w, pcf=2.0)[1], ref[1], rtol=1e-10, atol=1e-12)


# -- validation --------------------------------------------------------------------------------
def test_pcf_below_one_is_rejected_naming_pcf():
    data, _ = random_instance(0)
    for bad in (0.5, -2, float("nan"), True, "2"):
        with pytest.raises(ValidationError, match="pCf"):
            solve_newton(data, pcf=bad)
    with pytest.raises(ValidationError, match="pCf"):
        build_listwise(data, pcf=0.99)
    with pytest.raises(ValidationError, match="pCf"):
        cs_rglist_weights(data.y, data.qid, 0.0)


def test_bad_C_tol_w0_and_data_are_rejected():
    data, _ = random_instance(0)
    for C in (0, -1.0, float("inf"), None):
        with pytest.raises(ValidationError, match="C must"):
            solve_newton(data, C=C)
    with pytest.raises(ValidationError, match="tol"):
        solve_newton(data, tol=0)
    with pytest.raises(ValidationError, match="max_iter"):
        solve_newton(data, max_iter=0)
    with pytest.raises(ValidationError, match="NaN"):
        solve_newton(data, w0=np.full(data.n_features, np.nan))
    with pytest.raises(ValidationError, match="features"):
        solve_newton(data, w0=np.zeros(data.n_features + 1))
    singles = RankingData(np.eye(3), [0, 1, 2], qid=[1, 2, 3])
    with pytest.raises(ValidationError, match="two or more documents"):
        solve_newton(singles)
    with pytest.raises(ValidationError, match="NaN"):
        RankingData(np.array([[np.nan], [1.0]]), [0, 1], [1, 1])
    with pytest.raises(ValidationError, match="RankingData"):
        solve_newton(np.eye(3))
    with pytest.raises(ValidationError, match="overflows"):
        cs_rglist_weights([0, 5000], [1, 1], pcf=6.0)


# -- Newton ------------------------------------------------------------------------------------
@pytest.mark.parametrize("pcf", [None, 3.0])
def test_newton_converges_fast_from_the_papers_start(pcf):
    data = make_ranking(n_queries=8, docs_per_query=(5, 12), n_features=4, random_state=2)
    res = solve_newton(data, C=20.0, pcf=pcf, max_iter=50)
    assert res.status == "optimal" and res.solver_status == "converged"
    assert res.iterations < 50  # stopped by convergence, not by max_iter
    assert res.grad_norm < 1e-8 and res.relative_gap_bound < 1e-12
    hist = res.history
    assert hist.iteration.tolist() == list(range(res.iterations + 1))
    assert hist.objective.iloc[0] == pytest.approx(
        listwise_objective(data, np.full(4, 1 / data.n_queries), C=20.0, pcf=pcf), rel=1e-14)  # Step 1: w = 1/m
    assert np.all(np.diff(hist.objective) <= 1e-9 * hist.objective.iloc[0])
    assert hist.grad_norm.iloc[-1] == pytest.approx(res.grad_norm)
    assert res.method == ("listmle" if pcf is None else "cs-rglist")


def test_newton_sparse_equals_dense():
    data, _ = random_instance(6, n_queries=6, sparse=True)
    dense = RankingData(data.X.toarray(), data.y, data.qid)
    assert sp.issparse(data.X)
    a = solve_newton(data, C=5.0, pcf=2.0)
    b = solve_newton(dense, C=5.0, pcf=2.0)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-10, atol=1e-12)
    assert a.objective == pytest.approx(b.objective, rel=1e-13)


def test_pure_newton_can_diverge_and_the_line_search_fixes_it():
    # features of scale 10 and C = 100: the paper's full step from w = 1/m falls into a 2-cycle
    base = make_ranking(n_queries=2, docs_per_query=4, n_features=2, random_state=0)
    data = RankingData(base.X * 10, base.y, base.qid)
    with pytest.warns(InaccurateSolutionWarning):
        pure = solve_newton(data, C=100.0, line_search=False, max_iter=30)
    damped = solve_newton(data, C=100.0, max_iter=30)
    assert pure.status == "user_limit"
    assert damped.status == "optimal" and damped.iterations < 30
    assert pure.objective > 1e3 * damped.objective
    tail = pure.history.objective.to_numpy()[-4:]
    assert tail[0] == pytest.approx(tail[2]) and tail[1] == pytest.approx(tail[3])  # the cycle


def test_newton_hits_max_iter_warns_and_reports_user_limit():
    data, _ = random_instance(1)
    with pytest.warns(InaccurateSolutionWarning, match="relative gap"):
        res = solve_newton(data, C=50.0, max_iter=1)
    assert res.status == "user_limit" and res.iterations == 1 and not res.found


def test_newton_converges_on_a_medium_instance():
    """About 1,500 documents: certified before its max_iter, by its own gradient bound (no clock)."""
    data = make_ranking(n_queries=50, docs_per_query=(20, 40), n_features=10)
    res = solve_newton(data, C=1.0, pcf=2.0, max_iter=50)
    assert res.status == "optimal" and res.solver_status == "converged" and res.iterations < 50
    assert res.grad_norm < 1e-8 and res.relative_gap_bound < 1e-8


def test_summary_is_json_friendly_and_bounds_hold():
    data, _ = random_instance(2)
    res = solve_newton(data, C=3.0, pcf=None, max_iter=2, tol=0.5)  # stopped early on purpose
    summary = json.loads(json.dumps(res.summary()))
    assert summary["pcf"] is None and summary["method"] == "listmle"
    exact = solve_newton(data, C=3.0)
    # certified bounds of the early iterate hold against the exact optimum
    assert np.linalg.norm(res.w - exact.w) <= res.distance_bound
    assert res.objective - exact.objective <= res.gap_bound + 1e-12
    assert res.lower_bound <= exact.objective + 1e-12
    b = certificate_bounds(4.0, [3.0, 4.0])
    assert b == {"grad_norm": 5.0, "gap_bound": 12.5, "relative_gap_bound": 3.125, "lower_bound": -8.5}


# -- CVXPY -------------------------------------------------------------------------------------
def naive_cvxpy_optimum(data, C, pcf):
    """Independent reference: one cp.log_sum_exp per position, written from equation (3)."""
    X = data.X.toarray() if sp.issparse(data.X) else data.X
    w = cp.Variable(data.n_features)
    terms = []
    for q in np.unique(data.qid):
        idx = sorted(np.flatnonzero(data.qid == q).tolist(), key=lambda i: -data.y[i])
        for pos, j in enumerate(idx[:-1]):
            weight = 1.0 if pcf is None else pcf ** data.y[j] / sum(data.y[i] == data.y[j] for i in idx)
            terms.append(weight * (cp.log_sum_exp(X[idx[pos:]] @ w) - X[j] @ w))
    m = len(np.unique(data.qid))
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C / m * cp.sum(terms)))
    prob.solve(solver=cp.ECOS)
    assert prob.status == cp.OPTIMAL
    return prob.value, w.value


@pytest.mark.parametrize("pcf", [None, 2.0])
@pytest.mark.parametrize("solver", EXP_SOLVERS)
def test_newton_and_cvxpy_agree(solver, pcf):
    data = make_ranking(n_queries=4, docs_per_query=(3, 7), n_features=3, random_state=11)
    C = 6.0
    newton = solve_newton(data, C=C, pcf=pcf)
    conic = solve_listwise_cvxpy(data, C=C, pcf=pcf, solver=solver)
    assert conic.status == "optimal" and conic.solver == solver
    assert conic.objective == pytest.approx(newton.objective, rel=1e-7)
    np.testing.assert_allclose(conic.w, newton.w, atol=1e-4)
    assert np.linalg.norm(conic.w - newton.w) <= conic.distance_bound + 1e-12  # the certificate holds
    assert conic.extras["solver_objective"] == pytest.approx(newton.objective, rel=1e-6)


@pytest.mark.skipif("ecos" not in EXP_SOLVERS, reason="ECOS not installed")
def test_cvxpy_form_matches_an_independent_log_sum_exp_model():
    data = make_ranking(n_queries=3, docs_per_query=(3, 6), n_features=2, random_state=4)
    value, w = naive_cvxpy_optimum(data, C=4.0, pcf=2.5)
    newton = solve_newton(data, C=4.0, pcf=2.5)
    assert newton.objective == pytest.approx(value, rel=1e-7)
    np.testing.assert_allclose(newton.w, w, atol=1e-4)


def test_program_is_dpp_and_set_costs_resolves_without_rebuilding():
    data = make_ranking(n_queries=3, docs_per_query=(3, 6), n_features=2, random_state=5)
    program = build_listwise(data, C=1.0, pcf=None)
    assert program.problem.is_dcp(dpp=True)
    counts = np.bincount(data.query_index)
    assert program.n_cones == int(((counts - 1) * (counts + 2) // 2).sum())
    program.set_costs(C=8.0, pcf=3.0)
    res = program.solve("clarabel")
    assert res.C == 8.0 and res.pcf == 3.0
    assert res.objective == pytest.approx(solve_newton(data, C=8.0, pcf=3.0).objective, rel=1e-7)
    program.set_costs(pcf=None)
    assert program.solve("clarabel").objective == pytest.approx(solve_newton(data, C=8.0).objective, rel=1e-7)


def test_cvxpy_rejects_solvers_without_exponential_cones():
    data = make_ranking(n_queries=2, docs_per_query=3, n_features=2)
    with pytest.raises(SolverNotAvailableError, match="exponential"):
        solve_listwise_cvxpy(data, solver="osqp")
    with pytest.raises(SolverNotAvailableError, match="exponential"):
        solve_listwise_cvxpy(data, solver="nonsense")
    assert issubclass(SolverNotAvailableError, SolverError)
