"""The smoothed Newton phase of the pair-free solver against Clarabel, and its band of near-margin pairs."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.costs import pair_weights, theorem1_C
from cvxrank.data import RankingData
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.formulations import build_primal
from cvxrank.native import PairFreeOracle, cost_table, cutting_plane, kernels
from cvxrank.native.band import margin_band
from cvxrank.native.newton import _evaluate
from cvxrank.objectives import hinge_objective
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import assert_agree, exact_pair_dual, record_finish


class TiedInstance:
    """Random queries with τ and μ; ``ties``: features on a coarse grid, so scores tie and pairs sit on the margin."""

    def __init__(self, seed, *, lam, ties=False, density=1.0, n_features=5, mu="balanced"):
        data = make_ranking(n_queries=7, docs_per_query=(6, 14), n_features=n_features, n_grades=3 + seed % 2,
                            density=density, random_state=seed)
        if ties:
            X = data.X.copy()
            if sp.issparse(X):  # round the stored values
                X.data = np.round(2 * X.data) / 2
            else:
                X = np.round(2 * X) / 2
            data = RankingData(X, y=data.y, qid=data.qid)
        self.data = data
        self.pairs = make_pairs(data)
        rng = np.random.default_rng(seed + 100)
        self.tau = {t: float(rng.uniform(0.5, 3.0)) for t in self.pairs.types}
        self.mu = mu
        self.lam = lam
        self.weights = pair_weights(self.pairs, tau=self.tau, mu=mu)
        self.C = theorem1_C(self.weights, lam)


def clarabel_result(inst):
    res = solve(build_primal(inst.pairs, C=inst.C), "clarabel", tol=1e-9)
    assert res.status == "optimal"
    return res


CASES = [(0, 0.01, False, 1.0), (1, 0.1, True, 1.0), (2, 1.0, False, 0.4), (3, 0.05, True, 0.5),
         (4, 0.3, True, 1.0), (5, 0.02, False, 0.4)]


@pytest.mark.parametrize("seed,lam,ties,density", CASES)
def test_newton_phase_matches_clarabel(seed, lam, ties, density):
    inst = TiedInstance(seed, lam=lam, ties=ties, density=density)
    ref = clarabel_result(inst)
    F_ref = 2 * inst.lam * ref.qp_objective  # the QP (14) on the hinge scale of (9)
    res = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-8)
    assert res.status == "optimal" and 0 <= res.relative_gap <= 1e-8
    assert inst.data.is_sparse == (density < 1)
    h = res.history
    assert "delta" in h and h["delta"].notna().any()  # the Newton phase ran
    assert_agree(res, ref)
    assert res.objective == pytest.approx(hinge_objective(inst.pairs, res.w, inst.weights, inst.lam), rel=1e-12)
    # the certified lower bound never exceeds the optimum; every recorded bound is one
    assert np.all(h["dual_objective"] <= F_ref * (1 + 1e-10))
    # the optimum lies above Clarabel's certified lower bound (the exact finish may land below Clarabel's point)
    assert res.objective >= (F_ref - 2 * inst.lam * ref.gap_M) * (1 - 1e-10)
    assert np.all(np.diff(h["objective"]) <= 0) and np.all(np.diff(h["dual_objective"]) >= 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dual_bound_of_any_point_is_below_the_optimum(seed):
    """L(α(w)) with α_i = c_i clip((1 - m_i)/δ, 0, 1) is a lower bound at any w and δ (weak duality)."""
    inst = TiedInstance(seed, lam=0.05, ties=seed == 1)
    F_ref = 2 * inst.lam * clarabel_result(inst).qp_objective
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    rng = np.random.default_rng(seed)
    for delta in (0.5, 0.1, 1e-3):
        for scale in (0.1, 1.0, 10.0):
            w = rng.standard_normal(oracle.n_features) * scale
            F, F_delta, _grad, _H, (lower, _u, _u_band), _k, smooth_gap, _ = _evaluate(oracle, inst.lam, w, delta)
            assert lower <= F_ref * (1 + 1e-12)
            assert F == pytest.approx(hinge_objective(inst.pairs, w, inst.weights, inst.lam), rel=1e-12)
            assert F_delta <= F + 1e-12 * F  # the Huber loss lies below the hinge
            assert smooth_gap >= -1e-9 * max(1.0, abs(F))


def test_band_is_the_pairs_near_the_margin():
    """margin_band against the explicit pairs: the same pairs, with their weights."""
    inst = TiedInstance(6, lam=0.1)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    w = np.random.default_rng(0).standard_normal(oracle.n_features)
    w *= 2.0 / np.std(inst.pairs.margins(w))
    m = inst.pairs.margins(w)
    s = oracle.scores(w)
    order = oracle._order(s)
    for eps in (0.05, 0.3):
        for lower_only in (False, True):
            hi = 1.0 if lower_only else 1.0 + eps
            # keep the test away from rounding at the edges of the band
            assert np.min(np.abs(m - (1 - eps))) > 1e-9 and np.min(np.abs(m - hi)) > 1e-9
            ib, iw, c = margin_band(oracle, s[order], order, eps, lower_only=lower_only)
            expect = (m >= 1 - eps) & (m < hi) & (inst.weights > 0)
            assert c.shape[0] == int(expect.sum()) > 0
            got = np.sort(s[ib] - s[iw])
            np.testing.assert_allclose(got, np.sort(m[expect]), rtol=0, atol=1e-12)
            np.testing.assert_allclose(np.sort(c), np.sort(inst.weights[expect]), rtol=1e-12)


def same_optimum(a, b) -> bool:
    """Two certified runs agree within their certificates: ``|F_a - F_b| <= max(gap_a, gap_b)`` up to the float64
    rounding of the sums behind the objectives and bounds, at most ``floor`` relative (``certifiable_gap`` of
    :mod:`cvxrank.native.cutting_plane`; a computed bound can sit a rounding error above a computed objective, the
    gap then a hair below 0)."""
    room = max(a.floor, b.floor) * max(abs(a.objective), abs(b.objective))
    return abs(a.objective - b.objective) <= max(a.gap, b.gap) + room


def test_newton_gap_none_is_planes_only_and_checked():
    inst = TiedInstance(7, lam=0.1)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    planes = cutting_plane(oracle, inst.lam, tol=1e-8, newton_gap=None)
    both = cutting_plane(oracle, inst.lam, tol=1e-8)
    assert planes.status == both.status == "optimal"
    assert "delta" not in planes.history and both.history["delta"].notna().any()
    assert same_optimum(planes, both)
    for bad in (0, 1.5, True, "0.1"):
        with pytest.raises(ValidationError, match="newton_gap"):
            cutting_plane(oracle, inst.lam, newton_gap=bad)


def test_newton_phase_is_left_out_where_it_would_not_pay(monkeypatch):
    """Above NEWTON_MAX_FEATURES (dense n x n solves) or over the memory budget, the planes go on alone
    and still certify the same optimum."""
    import importlib

    from cvxrank import _memory

    cp_module = importlib.import_module("cvxrank.native.cutting_plane")  # the module, not the function

    inst = TiedInstance(7, lam=0.1)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    both = cutting_plane(oracle, inst.lam, tol=1e-8)
    assert both.history["delta"].notna().any()
    monkeypatch.setattr(cp_module, "NEWTON_MAX_FEATURES", inst.data.n_features - 1)
    planes = cutting_plane(oracle, inst.lam, tol=1e-8)
    assert "delta" not in planes.history and planes.status == "optimal"
    assert same_optimum(planes, both)
    monkeypatch.undo()
    _memory.set_memory_budget(_memory.newton_bytes(inst.data.n_features, 20_000) - 1)
    try:
        assert "delta" not in cutting_plane(oracle, inst.lam, tol=1e-8).history
    finally:
        _memory.set_memory_budget(None)
    sparse = make_ranking(n_queries=3, docs_per_query=(5, 8), n_features=2500, density=0.002, random_state=1)
    res = cutting_plane(PairFreeOracle.from_data(sparse), 1.0, tol=1e-6, pair_cd=False)
    assert "delta" not in res.history and res.status == "optimal"


def test_budget_halves_the_width_until_the_band_fits():
    """With ``budget``, δ is the first of δ₀, δ₀/2, ... whose band ``[1 - δ, 1)`` holds at most ``budget`` pairs of
    documents of one query (grades not checked), counted here from the explicit score differences."""
    inst = TiedInstance(7, lam=0.1)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    w = np.random.default_rng(1).standard_normal(oracle.n_features)
    s = oracle.scores(w)
    w *= 2.0 / np.std(s)
    s = oracle.scores(w)
    qid = inst.data.qid
    diff = np.concatenate([(s[qid == q][:, None] - s[qid == q][None, :]).ravel() for q in np.unique(qid)])

    def count(delta):
        assert np.min(np.abs(diff - (1 - delta))) > 1e-9  # away from rounding at the band's edge
        return int(np.count_nonzero((diff >= 1 - delta) & (diff < 1)))

    delta0 = 0.5
    assert count(delta0) > 40
    for budget in (0, 5, 40, count(delta0)):
        *_, k, _smooth_gap, delta = _evaluate(oracle, inst.lam, w, delta0, budget)
        halvings = round(np.log2(delta0 / delta))
        assert delta == delta0 / 2 ** halvings
        assert k <= count(delta) <= budget or delta <= 1e-12
        assert halvings == 0 or count(2 * delta) > budget


def _smoothed_minimiser(oracle, lam, w, delta):
    """Damped Newton on ``F_δ`` to its minimiser (tiny data): the point and the last evaluation."""
    for _ in range(100):
        ev = _evaluate(oracle, lam, w, delta)
        _F, Fd, g, H, *_ = ev
        if float(g @ g) < 1e-24 * max(1.0, Fd) ** 2:
            return w, ev
        p = -np.linalg.solve(H, g)
        t = 1.0
        while _evaluate(oracle, lam, w + t * p, delta)[1] > Fd + 1e-4 * t * float(g @ p) and t > 1e-12:
            t /= 2.0
        w = w + t * p
    raise AssertionError("Newton did not converge on the smoothed problem")


def test_tangent_predicts_the_path_of_minimisers():
    """The band's part ``Σ_B α_i d_i`` against the explicit pairs, and the tangent step to ``δ'`` (the continuation
    of the Newton phase) against the minimiser of ``F_δ'``: first order, so its error is far below the step."""
    inst = TiedInstance(0, lam=0.1)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    delta = 0.2
    w0 = _smoothed_minimiser(oracle, inst.lam, np.zeros(oracle.n_features), 0.5)[0]
    w, (_F, _Fd, _g, H, (_lower, _u, u_band), k, _sg, _) = _smoothed_minimiser(oracle, inst.lam, w0, delta)
    m = inst.pairs.margins(w)
    band = (m >= 1 - delta) & (m < 1)
    assert k == np.count_nonzero(band) > 5
    alpha = inst.weights[band] * (1 - m[band]) / delta
    D = np.asarray(inst.pairs.difference_matrix()[band].todense()) if sp.issparse(inst.data.X) \
        else inst.pairs.difference_matrix()[band]
    np.testing.assert_allclose(u_band, D.T @ alpha, rtol=1e-10, atol=1e-12 * np.abs(D.T @ alpha).max())
    for smaller in (delta * (1 - 1e-3), delta * (1 - 1e-2)):
        target = _smoothed_minimiser(oracle, inst.lam, w, smaller)[0]
        predicted = w + (delta - smaller) / delta * np.linalg.solve(H, u_band)
        step = np.linalg.norm(target - w)
        assert step > 1e-8 * np.linalg.norm(w)
        assert np.linalg.norm(predicted - target) <= 0.05 * step


@pytest.mark.parametrize("delta", [0.0, -0.1, 0.75, 1.0, float("nan")])
def test_first_width_outside_the_range_is_refused(delta):
    from cvxrank.native.newton import smoothed_newton

    inst = TiedInstance(1, lam=0.1)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    with pytest.raises(ValidationError, match=r"delta must be in \(0, 1/2\]"):
        smoothed_newton(oracle, inst.lam, np.zeros(oracle.n_features), upper=1.0, lower=0.0, tol=1e-6, target=1e-6,
                        max_calls=10, delta=delta)



@pytest.mark.parametrize("steps", [0, -3, 2.5, True, "300"])
def test_steps_at_one_width_must_be_a_positive_integer(steps):
    from cvxrank.native.newton import smoothed_newton

    inst = TiedInstance(1, lam=0.1)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    with pytest.raises(ValidationError, match="width_steps must be a positive integer"):
        smoothed_newton(oracle, inst.lam, np.zeros(oracle.n_features), upper=1.0, lower=0.0, tol=1e-6, target=1e-6,
                        max_calls=10, width_steps=steps)

def test_band_budget_scales_with_documents_per_feature(monkeypatch):
    """``10 m / n`` pairs of positions, at least ``40 n``, at most BAND_BUDGET and at most ``m``; the Newton phase's
    default."""
    import cvxrank.native.newton as newton

    regimes = set()
    for m, n in [(16_303, 45), (101_616, 136), (1_000_103, 136), (3_005, 300), (30_000, 100), (10**7, 1)]:
        budget, ratio = newton.band_budget(m, n), 10 * m // n
        assert 40 * n <= budget or budget in (newton.BAND_BUDGET, m)  # at least 40 n, unless a cap is lower
        assert budget <= min(newton.BAND_BUDGET, m)  # at most the caps
        assert budget == min(newton.BAND_BUDGET, m, max(40 * n, ratio))  # otherwise 10 m / n
        regimes.add("cap" if budget == newton.BAND_BUDGET else "documents" if budget == m
                    else "floor" if budget == 40 * n else "10 m / n")
    assert regimes == {"cap", "documents", "floor", "10 m / n"}  # the cases reach all four
    inst = TiedInstance(2, lam=0.05)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    seen = []
    fit = newton._fit_band
    monkeypatch.setattr(newton, "_fit_band", lambda o, s_o, d, budget: seen.append(budget) or fit(o, s_o, d, budget))
    cutting_plane(oracle, inst.lam, tol=1e-8)
    assert seen == [newton.band_budget(oracle.n_documents, oracle.n_features)]


def test_shrink_keeps_about_2n_pairs_in_the_band():
    """A shrink of δ stops where the band would hold about 2n pairs (k δ'/δ ≥ 2n for n features), however far
    the gap asks for, and is at least a halving: on data with few pairs near the margin (make_ranking) the
    band would otherwise empty and the phase give up."""
    data = make_ranking(n_queries=60, docs_per_query=(20, 40), n_features=8, random_state=3)
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    run = cutting_plane(oracle, 5.0, tol=1e-8)
    h = run.history[run.history["delta"].notna()]
    deltas, bands = h["delta"].to_numpy(), h["band"].to_numpy()
    shrinks = np.flatnonzero(deltas[1:] < deltas[:-1])
    assert shrinks.size >= 1
    for i in shrinks:
        ratio = deltas[i + 1] / deltas[i]
        assert ratio <= 0.5 * (1 + 1e-12)
        assert ratio >= min(0.5, 2 * data.n_features / bands[i]) * (1 - 1e-12)
    assert run.status == "optimal"


@pytest.mark.parametrize("kernel", ["auto", "numpy"])
def test_hessian_free_products_and_sums_match_the_explicit_band(kernel):
    """The pair-free Hessian products ``2λu + Xᵀ 𝓛_B X u`` and the band's chunked sums against the band's rows
    written out (sparse X, 4 grades, τ and μ)."""
    from cvxrank.native.band import band_pairs
    from cvxrank.native.band_operator import BandOperator, band_sums

    inst = TiedInstance(3, lam=0.3, density=0.4, n_features=30)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu), kernel=kernel)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(oracle.n_features)
    w *= 2.0 / np.std(oracle.scores(w))
    s = oracle.scores(w)
    order = oracle._order(s)
    delta = 0.4
    s_o = s[order]
    _, _, _, p_in, p_out = oracle._violations(s_o / (1 - delta), order, s_band=s_o)
    ib, iw, c = band_pairs(oracle, order, p_out, p_in)
    assert c.shape[0] > 10
    X = inst.data.X.toarray()
    D = X[ib] - X[iw]
    H = 2 * inst.lam * np.eye(oracle.n_features) + D.T @ (D * (c / delta)[:, None])
    op = BandOperator(oracle, order, p_out, p_in, delta, inst.lam, c.shape[0])
    for _ in range(3):
        u = rng.standard_normal(oracle.n_features)
        np.testing.assert_allclose(op.matvec(u), H @ u, rtol=1e-10, atol=1e-10 * np.abs(H @ u).max())
        np.testing.assert_allclose(op.solve(u, tol=1e-12), np.linalg.solve(H, u), rtol=1e-8,
                                   atol=1e-8 * np.abs(np.linalg.solve(H, u)).max())
    k, first, second, total, squares, v_B = band_sums(oracle, order, s, p_out, p_in, delta)
    m = s[ib] - s[iw]
    alpha = np.clip(c * (1 - m) / delta, 0, c)
    assert k == c.shape[0]
    assert first == pytest.approx(float(c @ (1 - m)), rel=1e-12)
    assert second == pytest.approx(float(c @ (1 - m) ** 2), rel=1e-12)
    assert total == pytest.approx(float(alpha.sum()), rel=1e-12)
    assert squares == pytest.approx(float(alpha @ (alpha / c)), rel=1e-12)
    np.testing.assert_allclose(X.T @ v_B, D.T @ alpha, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed,lam", [(0, 0.05), (1, 0.5), (2, 5.0)])
def test_hessian_free_newton_phase_matches_clarabel(monkeypatch, seed, lam):
    """The Hessian-free Newton phase (made to run on tiny sparse data by lowering NEWTON_MAX_FEATURES): certified
    solutions agree with Clarabel within the two certificates and every recorded bound lies below the optimum."""
    import importlib

    cp_module = importlib.import_module("cvxrank.native.cutting_plane")
    inst = TiedInstance(seed, lam=lam, density=0.3, n_features=40, ties=seed == 1)
    ref = solve(build_primal(inst.pairs, C=inst.C), "clarabel", tol=1e-7)
    assert ref.status == "optimal"
    F_ref = 2 * inst.lam * ref.qp_objective
    monkeypatch.setattr(cp_module, "NEWTON_MAX_FEATURES", 10)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    run = cutting_plane(oracle, inst.lam, tol=1e-8, hessian_free=True, newton_gap=0.5)
    assert run.status == "optimal" and run.relative_gap <= 1e-8
    h = run.history
    assert "delta" in h and h["delta"].notna().any()  # the Hessian-free phase ran
    assert np.all(h["dual_objective"] <= F_ref * (1 + 1e-10))
    assert run.objective >= (F_ref - 2 * inst.lam * ref.gap_M) * (1 - 1e-10)
    assert abs(run.objective - F_ref) <= run.gap + 2 * inst.lam * ref.gap_M + 1e-10 * F_ref
    res = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-8,
                hessian_free=True, newton_gap=0.5)
    assert res.status == "optimal"
    assert_agree(res, ref)
    with pytest.raises(ValidationError, match="hessian_free"):
        cutting_plane(oracle, inst.lam, hessian_free="yes")


@pytest.mark.parametrize("zero_tau", [False, True])
@pytest.mark.parametrize("below", [False, True])
@pytest.mark.parametrize("limit", [1000, 12, 3])
def test_margin_set_is_the_explicit_pairs_near_the_margin(limit, below, zero_tau):
    """The jump chain's sets at ``w`` against the explicit pairs: ``F(w)``; the ``limit`` pairs nearest the margin
    within ``[1 - ε, 1 + ε)`` (``below``: with a positive margin below ``1 + ε``) with their differences and
    weights; the rest below ``1`` summed in ``W_V``, ``g_V``, counted before the limit in ``under``; and the box QP
    over them is a lower bound on the optimum (weak duality, whatever the sets). ``zero_tau``: a grade pair without
    weight, whose pairs are neither listed nor counted."""
    from cvxrank.native.newton import _band_dual, _margin_set

    inst = TiedInstance(6, lam=0.1)
    if zero_tau:
        inst.tau[min(inst.tau)] = 0.0
        inst.weights = pair_weights(inst.pairs, tau=inst.tau, mu=inst.mu)
        inst.C = theorem1_C(inst.weights, inst.lam)
        assert (inst.weights == 0).any() and (inst.weights > 0).any()
    F_ref = 2 * inst.lam * clarabel_result(inst).qp_objective
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    w = np.random.default_rng(0).standard_normal(oracle.n_features)
    w *= 2.0 / np.std(inst.pairs.margins(w))
    m, c_all = inst.pairs.margins(w), inst.weights
    eps = 0.3
    assert np.min(np.abs(m - (1 - eps))) > 1e-9 and np.min(np.abs(m - (1 + eps))) > 1e-9
    F, (D, c, g_V, W_V, pairs), inside, under = _margin_set(oracle, inst.lam, w, eps, limit, below=below)
    assert F == pytest.approx(hinge_objective(inst.pairs, w, inst.weights, inst.lam), rel=1e-12)
    edge = 1e-12 if below else 1 - eps  # V: margin below it
    assert (m > 0).any() and (m <= 0).any() and np.min(np.abs(m)) > 1e-9
    band = np.flatnonzero((m >= edge) & (m < 1 + eps) & (c_all > 0))
    kept = band[np.argsort(np.abs(m[band] - 1.0), kind="stable")[:limit]]
    assert c.shape[0] == min(limit, band.size) and 0 < c.shape[0] and inside == band.size
    assert under == np.count_nonzero((m < edge) & (c_all > 0))
    got = np.sort(D @ w)
    np.testing.assert_allclose(got, np.sort(m[kept]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.sort(c), np.sort(c_all[kept]), rtol=1e-12)
    V = (m < 1.0) & (c_all > 0)
    V[kept] = False
    assert W_V == pytest.approx(float(c_all[V].sum()), rel=1e-12)
    X = inst.data.X.toarray() if sp.issparse(inst.data.X) else inst.data.X
    d = X[inst.pairs.better] - X[inst.pairs.worse]
    np.testing.assert_allclose(g_V, d[V].T @ c_all[V], rtol=1e-10, atol=1e-10)
    # the weight of each document's pairs in V (what the bound's rounding allowance reads), and the kept pairs
    mag, ib, iw, k = pairs
    n_doc = inst.data.n_documents
    expected = (np.bincount(inst.pairs.better[V], c_all[V], n_doc) + np.bincount(inst.pairs.worse[V], c_all[V], n_doc))
    np.testing.assert_allclose(mag, expected, rtol=1e-12, atol=1e-12)
    assert sorted(zip(ib, iw)) == sorted(zip(inst.pairs.better[kept], inst.pairs.worse[kept])) and k == inside
    w_j, L_j, u_j, record = _band_dual(inst.lam, D, c, g_V, W_V, pairs)
    assert L_j <= F_ref * (1 + 1e-12)
    assert w_j == pytest.approx(u_j / (2 * inst.lam))
    assert record[:4] == pairs and record[5] == pytest.approx(W_V + record[4].sum(), rel=1e-15)


def test_gram_cache_follows_the_band_pair_by_pair():
    """GramCache.update equals Σ_B c_i d_i d_iᵀ formed afresh, band after band, whether it updates (a few pairs
    in and out) or rebuilds (most pairs changed)."""
    from cvxrank.native.newton import GramCache

    rng = np.random.default_rng(3)
    m, n = 40, 6
    X = rng.standard_normal((m, n))
    all_b, all_w = np.triu_indices(m, 1)
    weight = rng.uniform(0.5, 2.0, all_b.size)

    def rows(b, w, scale):
        return (X[b] - X[w]) * scale[:, None]

    cache = GramCache(m, rows)
    chosen = rng.random(all_b.size) < 0.3
    updated = rebuilt = 0
    for step in range(30):
        flip = rng.random(all_b.size) < (0.6 if step % 10 == 9 else 0.03)  # now and then most pairs change
        chosen ^= flip
        idx = np.flatnonzero(chosen)
        ib, iw, c = all_b[idx], all_w[idx], weight[idx]
        delta = 0.5 ** (step // 10 + 1)
        Ds = rows(ib, iw, np.sqrt(c / delta))
        before = cache.updates
        S = cache.update(ib, iw, c, Ds, delta)
        updated += cache.updates > before
        rebuilt += cache.updates == 0
        expect = (X[ib] - X[iw]).T @ ((X[ib] - X[iw]) * c[:, None])
        np.testing.assert_allclose(S, expect, rtol=1e-11, atol=1e-11 * np.abs(expect).max())
    assert updated > 10 and rebuilt >= 3  # both routes ran


@pytest.mark.parametrize("seed,lam,ties,density", CASES[:3])
def test_newton_phase_with_the_gram_cache_matches_clarabel(monkeypatch, seed, lam, ties, density):
    """The Hessian updated pair by pair (here on 5 features, below the cache's default threshold) changes nothing
    the certificate sees: certified, within Clarabel's bounds, every bound below the optimum."""
    import cvxrank.native.newton as newton

    monkeypatch.setattr(newton, "GRAM_CACHE_FEATURES", 1)
    used = []
    update = newton.GramCache.update
    monkeypatch.setattr(newton.GramCache, "update", lambda self, *a: used.append(self.updates) or update(self, *a))
    inst = TiedInstance(seed, lam=lam, ties=ties, density=density)
    ref = clarabel_result(inst)
    F_ref = 2 * inst.lam * ref.qp_objective
    res = solve(RankingProblem(inst.data, tau=inst.tau, mu=inst.mu, lam=inst.lam), "cutting_plane", tol=1e-8)
    assert res.status == "optimal" and res.relative_gap <= 1e-8 and used
    assert_agree(res, ref)
    assert np.all(res.history["dual_objective"] <= F_ref * (1 + 1e-10))


@pytest.mark.parametrize("route", ["dense", "woodbury", "cg"])
def test_a_damped_solve_is_the_shifted_system_and_keeps_the_undamped_factor(monkeypatch, route):
    """``_Band.solve(rhs, shift=μ)`` is ``(2λI + D_sᵀD_s + μI)⁻¹ rhs`` on each route; an undamped solve after it
    still gives ``H⁻¹ rhs`` (the damped factor is not kept), and ``largest_diagonal`` is ``H``'s."""
    import cvxrank.native.newton as module

    rng = np.random.default_rng(4)
    n, lam = 12, 0.05
    k = {"dense": 30, "woodbury": 5, "cg": 30}[route]
    Ds = rng.standard_normal((k, n)) * rng.uniform(0.1, 10.0, k)[:, None]
    if route == "cg":
        monkeypatch.setattr(module, "DENSE_ENTRIES", 10)  # neither n x n nor k x k fits: conjugate gradients
        Ds = sp.csr_matrix(Ds)
    band = module._Band(lam, n, Ds)
    assert band.route == route
    dense = Ds.toarray() if sp.issparse(Ds) else Ds
    H = 2 * lam * np.eye(n) + dense.T @ dense
    rhs = rng.standard_normal(n)
    for shift in (0.0, 3.0, 0.0, 1e3, 0.0):
        got = band.solve(rhs, tol=1e-13, shift=shift)
        np.testing.assert_allclose(got, np.linalg.solve(H + shift * np.eye(n), rhs), rtol=1e-8, atol=0)
    assert band.largest_diagonal() == pytest.approx(np.diag(H).max(), rel=1e-12)


def test_damped_newton_steps_certify_where_undamped_ones_stalled(monkeypatch):
    """On 10 queries of 10-30 documents with 100 features at λ = 0.5 (μ balanced), Newton's steps from the first
    point are orders of magnitude too long along the directions the band does not curve, and the line search cut
    them back along the same direction: the solve took 244 calls, most of them planes after the phase stalled.
    With the Levenberg–Marquardt damping it certifies within 150, damped steps taken, and agrees with Clarabel."""
    import cvxrank.native.newton as module

    shifts = []
    solve_band = module._Band.solve

    def recording(self, rhs, *, tol=1e-10, shift=0.0):
        shifts.append(shift)
        return solve_band(self, rhs, tol=tol, shift=shift)

    monkeypatch.setattr(module._Band, "solve", recording)
    data = make_ranking(n_queries=10, docs_per_query=(10, 30), n_features=100, random_state=2)
    problem = RankingProblem(data, mu="balanced", lam=0.5)
    res = solve(problem, "cutting_plane", tol=1e-8, max_iter=150)
    assert res.status == "optimal" and res.extras["oracle_calls"] <= 150
    assert any(s > 0 for s in shifts) and 0.0 in shifts  # damped steps and Newton's own
    assert_agree(res, solve(problem, "clarabel", tol=1e-9))


def test_aim_lowers_the_target_only_where_the_allowance_would_leave_the_gap_above_tol():
    """``aim``: the target stays where gap plus allowance proves tol, or where the allowance alone is beyond
    AIM_ROOM of tol (float64's floor); else tol less 1.25 times the allowance (relative)."""
    from cvxrank.native.stopping import AIM_ROOM, aim

    F, tol, target = 10.0, 1e-6, 0.99e-6
    assert aim(F, F - 5e-6, tol, target, extra=4e-6) == target  # 5e-7 + 4e-7 relative: proves tol
    assert aim(F, F - 9e-6, tol, target, extra=4e-6) == pytest.approx(tol - 1.25 * 4e-7)
    assert aim(F, F - 9e-6, tol, target, extra=1.01 * AIM_ROOM * tol * F) == target
    edge = aim(F, F - 9e-6, tol, target, extra=AIM_ROOM * tol * F)  # 1.25 x the allowance is all of tol: a tenth
    assert edge == pytest.approx(0.1 * tol) and edge * F + AIM_ROOM * tol * F <= tol * F
    assert aim(F, F - 9e-6, tol, target, extra=AIM_ROOM * tol * F, floor=0.15 * tol) == 0.15 * tol


def test_no_point_yet_proves_no_target():
    """``target_proven`` with no upper bound yet (``F_best`` infinite, as a phase starts when the caller has none):
    ``inf - lower <= target * inf`` holds in IEEE arithmetic, and the threshold phase stopped as "proven" there."""
    from cvxrank.native.stopping import target_proven

    assert not target_proven(np.inf, 1.0, 1e-6)
    assert not target_proven(np.inf, 1.0, 1e-6, extra=0.0)
    assert not target_proven(np.nan, 1.0, 1e-6)
    assert target_proven(10.0, 10.0 - 5e-6, 1e-6) and not target_proven(10.0, 10.0 - 2e-5, 1e-6)


def test_margin_set_below_falls_back_to_the_two_sided_window(monkeypatch):
    """``_margin_set(below=True)`` walks the sorted positions from the wrong-order pairs up: past BELOW_POSITIONS it
    lists the two-sided window instead, the same sets as ``below=False``."""
    from cvxrank.native import newton
    from cvxrank.native.newton import _margin_set

    inst = TiedInstance(6, lam=0.1)
    oracle = PairFreeOracle.from_data(inst.data, cost_table(inst.data, inst.tau, inst.mu))
    w = np.random.default_rng(0).standard_normal(oracle.n_features)
    w *= 2.0 / np.std(inst.pairs.margins(w))
    wide = _margin_set(oracle, inst.lam, w, 0.3, 1000, below=True)
    two = _margin_set(oracle, inst.lam, w, 0.3, 1000)
    assert wide[2] > two[2]  # more pairs listed below the width
    monkeypatch.setattr(newton, "BELOW_POSITIONS", 0)
    fell = _margin_set(oracle, inst.lam, w, 0.3, 1000, below=True)
    assert fell[0] == two[0] and fell[2:] == two[2:]
    np.testing.assert_array_equal(fell[1][1], two[1][1])
    np.testing.assert_array_equal(fell[1][2], two[1][2])


@pytest.mark.parametrize("sparse", [False, True])
def test_on_margin_puts_the_free_pairs_on_the_margin(sparse):
    """``_on_margin``: a ``w`` off ``w*`` in the span of the free pairs' differences comes back to ``w*`` (six free
    pairs on the margin in five features: more equalities than features, consistent), a pair at a bound of its box
    keeps its margin, and a point already on the margin is returned as it is."""
    from cvxrank.native.newton import _on_margin

    rng = np.random.default_rng(3)
    D = rng.standard_normal((9, 5))
    w_star = rng.standard_normal(5)
    D[:6] /= (D[:6] @ w_star)[:, None]  # the free pairs: margin 1 at w*
    c = np.full(9, 2.0)
    nu = np.array([0.3, 1.0, 1.7, 0.5, 0.9, 1.2, 0.0, 2.0, 0.0])  # the last three at a bound
    w = w_star + D[:6].T @ (1e-4 * rng.standard_normal(6))
    Dm = sp.csr_matrix(D) if sparse else D
    x = _on_margin(Dm, D @ D.T, nu, c, w)
    np.testing.assert_allclose(D[:6] @ x, 1.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(x, w_star, rtol=0, atol=1e-8)
    assert _on_margin(Dm, D @ D.T, nu, c, w_star) is w_star  # within MARGIN_RESIDUAL already
    assert _on_margin(Dm, D @ D.T, np.zeros(9), c, w) is w  # no free pair
    # inconsistent equalities (d, 2d, 3d all "on the margin"): least squares leaves them further off at its worst
    # pair (0.571 against 0.5), so the point is kept
    E = np.array([[1.0], [2.0], [3.0]])
    half = np.array([0.5])
    assert _on_margin(sp.csr_matrix(E) if sparse else E, E @ E.T, np.full(3, 0.5), np.ones(3), half) is half


def test_the_chain_widens_its_set_when_more_pairs_than_features_sit_on_the_margin():
    """20 queries x 50-100 documents, 200 features, λ = 5: at the optimum 311 pairs sit on the margin (and 193 below
    it), more than the 1.5 n = 300 of a link's set: the chain never closed the gap (2.5e-5, ``optimal_inaccurate``
    after 306 calls) until its retry took every pair within the width (JUMP_WIDE)."""
    data = make_ranking(n_queries=20, docs_per_query=(50, 100), n_features=200, random_state=0)
    res = solve(RankingProblem(data, mu="balanced", lam=5.0), "cutting_plane", tol=1e-6)
    assert res.status == "optimal" and res.relative_gap <= 1e-6


def test_the_chain_retries_with_the_pairs_below_the_width():
    """20 queries x 50-100 documents, 200 features (seed 4), λ = 0.5: 368 pairs on the margin and 2 below it at the
    optimum. At the Newton phase's best point one of those on the margin sat below the width (0.978), held at its
    bound in V, and the chain's sets gave points far above the best: 2.3e-3, ``optimal_inaccurate`` after 361 calls,
    until the retry listed the few pairs below the width too."""
    data = make_ranking(n_queries=20, docs_per_query=(50, 100), n_features=200, random_state=4)
    res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-6)
    assert res.status == "optimal" and res.relative_gap <= 1e-6


@pytest.mark.parametrize("seed", [1, 2])
def test_the_chain_goes_on_after_its_retry_while_its_sets_change(seed):
    """40 queries x 10-30 documents, 200 features, λ = 0.05: at the optimum about 220-265 pairs sit on the margin.
    At each width the retry's set (every pair near the margin at the best point) brought the lower bound within
    1e-6 of the optimum while its point stayed above the best, and the chain stopped there, though the sets at that
    point held the pair still missing: 1,314 and 1,525 calls. Going on while the listing changes (with the pairs below
    the width listed as the retry's were), the first widths' chains reach the optimum, well inside 300 calls."""
    data = make_ranking(n_queries=40, docs_per_query=(10, 30), n_features=200, random_state=seed)
    res = solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", tol=1e-6, max_iter=300)
    assert res.status == "optimal" and res.relative_gap <= 1e-6


def test_the_wide_jump_holds_every_pair_between_tied_documents():
    """5 queries x 100-200 documents, 150 features, λ = 0.5: separable, and at the optimum 667 pairs sit on the
    margin (all pairs between a boundary's tied documents), more than the 4 n = 600 the wide jump kept; each of its
    chains failed, and the Newton steps ground through every width (1,024 calls). With room for them (JUMP_WIDE),
    a wide jump certifies the solve well inside 500 calls."""
    data = make_ranking(n_queries=5, docs_per_query=(100, 200), n_features=150, random_state=3)
    res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-6, max_iter=500)
    assert res.status == "optimal" and res.relative_gap <= 1e-6


@pytest.mark.slow
def test_the_band_after_a_shrink_may_exceed_the_budget():
    """25 queries x 20-40 documents, 400 features, λ = 0.05: separable, with 983 pairs on the margin at the
    optimum against a band budget of m = 705 positions. After a shrink from δ = 1.6e-2 the budget's re-check halved δ
    to 3.8e-6 in one evaluation, the Newton step there failed, the phase ended and the planes stood still at 1.8e-2.
    Allowing twice the budget after a shrink (BUDGET_AFTER_SHRINK), the own gap closes; what is left is the
    certificate's rounding allowance at this small objective (float64's floor, about 2e-6 here)."""
    data = make_ranking(n_queries=25, docs_per_query=(20, 40), n_features=400, random_state=3)
    with warnings.catch_warnings():  # the allowance is above tol: optimal_inaccurate
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", tol=1e-6, max_iter=2000)
    assert res.extras["pairfree_relative_gap"] <= 1e-9
    assert res.relative_gap <= 1e-5  # the allowance alone


@pytest.mark.slow
def test_the_newton_phase_goes_on_while_the_smoothed_objective_falls():
    """15 queries x 50-100 documents, 300 features (seed 1), λ = 0.5: at the first width (δ = 0.12, about 650 band
    pairs) the damped steps lowered F_δ for dozens of evaluations while the best F and the gap stood still; the
    phase counted that as a stall and left at a gap of 0.5, and 470 planes then took more than 20 s for 2e-3.
    Counting F_δ's progress at the width in force, the phase goes on through its widths and certifies the solve
    (about 1,450 calls, 1.6 s, where the planes took 34 s; fewer since the wide jumps)."""
    data = make_ranking(n_queries=15, docs_per_query=(50, 100), n_features=300, random_state=1)
    res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-6, max_iter=3000)
    assert res.status == "optimal" and res.relative_gap <= 1e-6
    widths = res.history["delta"].dropna()
    assert widths.max() > 0.1 and widths.min() < 0.1  # past its first width (0.125), where it had stopped


@pytest.mark.slow
def test_a_crawl_with_a_band_too_wide_for_the_jump_ends_in_a_wide_jump():
    """15 queries x 50-100 documents, 300 features (seed 2), λ = 0.5: the band never thinned below 1.5 n (649 pairs
    at δ = 7.6e-6), so no jump ran, and the Newton steps crawled for 800 evaluations; the planes after them stood
    still and the solve ended ``optimal_inaccurate`` at 1.7e-5. After CRAWL Newton steps at one width, the jump on the
    pairs near the margin (about 900) certifies it."""
    data = make_ranking(n_queries=15, docs_per_query=(50, 100), n_features=300, random_state=2)
    res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-6)
    assert res.status == "optimal" and res.relative_gap <= 1e-6
    jumps = res.history[res.history["jump"].eq(True)]
    assert (jumps["band"] > 1.5 * 300).any()  # a jump taken while the band was too wide for the band's own


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["numpy", pytest.param("compiled", marks=pytest.mark.skipif(
    not kernels.COMPILED, reason="the compiled sweeps were not built"))])
def test_the_wide_jump_chain_reaches_the_optimum_at_a_small_lambda(kernel):
    """The same data at λ = 0.05: the first wide jump's point had ``λ‖w‖²`` at the lower bound but a few pairs outside
    its set below the margin (a loss of 0.065), the chain stopped there as it had not lowered ``F``, and the solve
    ended with its own gap at 1e-4. With a second link on the sets read at that point, the own gap closes; what is
    left is the certificate's rounding allowance at this small objective (float64's floor, about 5e-6 here)."""
    data = make_ranking(n_queries=15, docs_per_query=(50, 100), n_features=300, random_state=2)
    with warnings.catch_warnings():  # the allowance is above tol: optimal_inaccurate
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", tol=1e-6, oracle_kernel=kernel)
    assert res.extras["pairfree_relative_gap"] <= 1e-9
    assert res.relative_gap <= 1e-5  # the allowance alone


@pytest.mark.slow
def test_a_crawl_on_few_features_is_certified():
    """8 queries x 80-120 documents, 120 features, λ = 0.05: ``optimal_inaccurate`` at 1.8e-6 (own gap 1e-6) after
    1,224 calls without the wide jump; certified with it."""
    data = make_ranking(n_queries=8, docs_per_query=(80, 120), n_features=120, random_state=1)
    res = solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", tol=1e-6)
    assert res.status == "optimal" and res.relative_gap <= 1e-6


@pytest.mark.skipif(not kernels.COMPILED, reason="the compiled sweeps were not built")
def test_the_damping_reads_the_band_of_its_step_with_either_kernel():
    """The compiled sweeps write a trial's band rows into a buffer the oracle reuses; the damping of the next steps
    read the largest diagonal of the step's band after the trials had written over it, so the compiled and numpy
    kernels took different steps from the same evaluation (here from the sixth call on). Read before the trials,
    the two kernels give the same history, damped steps included."""
    data = make_ranking(n_queries=8, docs_per_query=(80, 120), n_features=120, random_state=1)
    with warnings.catch_warnings():  # 40 calls: short of tol
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        histories = [solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", tol=1e-6, max_iter=40,
                           oracle_kernel=kernel).history for kernel in ("compiled", "numpy")]
    assert histories[0]["delta"].notna().sum() > 5  # the Newton phase ran
    np.testing.assert_array_equal(histories[0]["objective"].to_numpy(), histories[1]["objective"].to_numpy())


@pytest.mark.slow
def test_a_stall_at_a_solved_width_goes_on_at_the_next_width():
    """30 queries x 30-60 documents, 250 features, λ = 0.05: the phase stalled at a width whose smoothed problem it
    had once solved to within the gap, and the planes after it ran into a 20 s limit; going on at the next width from
    the point nearest the smoothed optimum, the solve closes its own gap (what is left is the certificate's rounding
    allowance at this small objective)."""
    data = make_ranking(n_queries=30, docs_per_query=(30, 60), n_features=250, random_state=1)
    with warnings.catch_warnings():  # the allowance is above tol: optimal_inaccurate
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", tol=1e-6, max_iter=3000)
    assert res.extras["pairfree_relative_gap"] <= 1e-9


@pytest.mark.slow
def test_a_degenerate_margin_is_certified_from_the_jump():
    """60 queries x 20-60 documents, 300 dense features, λ = 0.5: at the optimum 408 pairs sit on the margin (more
    than the features) and the jump's box QP, solved to its tolerance in ``ν``, gave a point 5.1e-7 above its bound
    (``optimal_inaccurate`` at 1.05e-6 with the rounding allowance); put on the margin of its free pairs, 6e-14."""
    data = make_ranking(n_queries=60, docs_per_query=(20, 60), n_features=300, random_state=0)
    res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-6)
    assert res.status == "optimal" and res.relative_gap <= 1e-6


def test_a_small_objective_is_certified_despite_the_rounding_allowance():
    """10 queries, 100 features, λ = 0.5, tol 1e-8: the objective (about 1.7) is small beside the sums whose rounding
    the certificate allows for (about 0.7 tol relative): the solver's own 4.2e-9 was certified as 1.12e-8
    (``optimal_inaccurate``) until the run checked its end against that allowance and aimed lower."""
    data = make_ranking(n_queries=10, docs_per_query=(10, 30), n_features=100, random_state=1)
    problem = RankingProblem(data, mu="balanced", lam=0.5)
    res = solve(problem, "cutting_plane", tol=1e-8)
    assert res.status == "optimal" and res.relative_gap <= 1e-8
    assert_agree(res, solve(problem, "clarabel", tol=1e-9))


def test_a_one_argument_allowance_still_works():
    """``cutting_plane(allowance=...)`` took ``w ↦ float``; such a callable is wrapped (the bound's part 0), one that
    is not callable is refused."""
    oracle = PairFreeOracle.from_data(make_ranking(n_queries=5, n_features=4, random_state=0))
    run = cutting_plane(oracle, 0.5, tol=1e-6, allowance=lambda w: 1e-12)
    assert run.status == "optimal"
    with pytest.raises(ValidationError, match="allowance must be a callable"):
        cutting_plane(oracle, 0.5, tol=1e-6, allowance=1e-12)


def test_the_certificate_reuses_the_allowance_the_run_computed_at_its_point(monkeypatch):
    """The run computed the rounding allowance at its final point (its end checked against it): the primal part
    charged only the pairs its oracle listed as possibly live, the bound's part the Newton phase's pairwise dual.
    The door takes those numbers instead of computing them again; from scratch it charges every pair and its
    gap is never smaller; with the run's numbers the door certifies the same gap again."""
    import dataclasses

    from cvxrank import rounding
    from cvxrank.solution import certify_solution

    seen = record_finish(monkeypatch)
    data = make_ranking(n_queries=20, docs_per_query=(8, 16), n_features=6, random_state=3)
    res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-6)
    problem, w, report, tol = seen[-1]
    assert report.primal_rounding is not None and report.bound_rounding is not None
    assert res.certificate.kind == "band dual bound"
    assert 0 < report.primal_rounding <= rounding.primal_rounding(problem, w)
    assert 0 < report.bound_rounding < rounding.model_rounding(problem, w)
    fresh = certify_solution(problem, w, dataclasses.replace(report, primal_rounding=None, bound_rounding=None),
                             tol)[3]
    assert fresh.gap_L > res.certificate.gap_L
    again = certify_solution(problem, w, report, tol)[3]
    assert again.gap_L == res.certificate.gap_L and again.relative_gap == res.certificate.relative_gap


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_newton_bounds_rounding_holds_against_exact_arithmetic(seed):
    """A Newton evaluation's lower bound (``α = c`` on the pairs below ``1 - δ``, the smoothed ``α`` on the band)
    and its jump's (the box QP's ``ν`` on the band), as computed, against exact rational arithmetic at the same
    ``α``, on features spanning 1e-4..1e4: within their allowance (``band_dual_rounding``), which is below the
    planes' (``model_rounding``) that the certificate charged these bounds before."""
    from fractions import Fraction

    from cvxrank import rounding
    from cvxrank.native.newton import _dual_rounding, _jump, _point

    rng = np.random.default_rng(seed)
    m, n, lam, delta = 30, 6, 0.05, 0.3
    X = rng.standard_normal((m, n)) * 10.0 ** rng.integers(-4, 5, (m, n))
    data = RankingData(X, y=rng.integers(0, 3, m), qid=np.arange(m) // 10)
    problem = RankingProblem(data, mu="balanced", lam=lam)
    pairs = make_pairs(data)
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    G = oracle._G
    c_all = oracle._flat[(oracle._qc[pairs.better] * G + oracle._gc[pairs.better]) * G + oracle._gc[pairs.worse]]
    np.testing.assert_allclose(c_all, pair_weights(pairs, mu="balanced"), rtol=1e-12)
    w = rng.standard_normal(n) / np.abs(X).max(axis=0)
    w *= 2.0 / np.std(pairs.margins(w))
    ev = _point(oracle, lam, w, delta)
    assert 0 < ev["k"] < pairs.n_pairs
    s = oracle.scores(w) / (1.0 - delta)  # the sweep's V: computed margin below 1 at the scaled scores
    V = s[pairs.better] - s[pairs.worse] < 1.0
    mag = ev["record"][0]
    np.testing.assert_allclose(mag, np.bincount(pairs.better[V], c_all[V], m) + np.bincount(pairs.worse[V], c_all[V], m),
                               rtol=1e-12)
    found = _jump(lam, ev)
    assert found is not None
    checked = 0
    for L, record in ((ev["L"][0], ev["record"]), (found[1], found[3])):
        band_alpha = record[4]
        better = np.concatenate((pairs.better[V], record[1]))
        worse = np.concatenate((pairs.worse[V], record[2]))
        exact = exact_pair_dual(X, better, worse, np.concatenate((c_all[V], band_alpha)), lam)
        allowance = 2 * lam * _dual_rounding(oracle, lam, record)
        assert abs(Fraction(L) - exact) <= Fraction(allowance)
        u, total = record[6], record[5]
        assert allowance <= 1e-9 * (total + float(u @ u) / (4 * lam))  # not vacuous: the terms' own size
        # the planes' allowance at the bound's primal point charges every pair's weight
        assert allowance < 2 * lam * rounding.model_rounding(problem, u / (2 * lam))
        checked += 1
    assert checked == 2


def test_sparse_float32_band_rows_are_differences_in_float64(monkeypatch):
    """A sparse float32 ``X`` whose band is too wide for dense rows (``DENSE_ENTRIES`` made small here): the band's
    rows are differences of the float64 values, as the dense rows are, so the evaluation's bound is the same and
    within its allowance of the exact dual value (a float32 difference was off by 3e-8 relative, 2,500 times the
    allowance)."""
    from fractions import Fraction

    from cvxrank.native import newton

    rng = np.random.default_rng(0)
    m, n, lam, delta = 30, 6, 0.05, 0.3
    X = rng.standard_normal((m, n))
    X[rng.random((m, n)) < 0.4] = 0.0
    data = RankingData(sp.csr_matrix(X.astype(np.float32)), y=rng.integers(0, 3, m), qid=np.arange(m) // 10,
                       dtype=np.float32)
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    assert sp.issparse(oracle.X) and oracle.X.dtype == np.float32
    Xd = oracle.X.toarray().astype(np.float64)  # the values the problem is certified on
    pairs = make_pairs(data)
    G = oracle._G
    c_all = oracle._flat[(oracle._qc[pairs.better] * G + oracle._gc[pairs.better]) * G + oracle._gc[pairs.worse]]
    w = rng.standard_normal(n) / np.abs(Xd).max(axis=0)
    w *= 2.0 / np.std(pairs.margins(w))
    dense = newton._point(oracle, lam, w, delta)
    monkeypatch.setattr(newton, "DENSE_ENTRIES", 1)
    ev = newton._point(oracle, lam, w, delta)
    assert sp.issparse(ev["band"].Ds) and not sp.issparse(dense["band"].Ds)
    s = oracle.scores(w) / (1.0 - delta)
    V = s[pairs.better] - s[pairs.worse] < 1.0
    record = ev["record"]
    exact = exact_pair_dual(Xd, np.r_[pairs.better[V], record[1]], np.r_[pairs.worse[V], record[2]],
                             np.r_[c_all[V], record[4]], lam)
    assert abs(Fraction(ev["L"][0]) - exact) <= Fraction(2 * lam * newton._dual_rounding(oracle, lam, record))
    assert ev["L"][0] == pytest.approx(dense["L"][0], rel=1e-13)



def test_the_objective_allowance_counts_the_pairs_the_newton_phase_summed_one_by_one(monkeypatch):
    """The Newton phase's ``F`` adds its band's ``c_i (1 - m_i)`` one by one beside the per-document sums: the run
    reports how many for its final point (``objective_terms``), the allowance it hands the certificate counts them
    (``primal_rounding``'s ``terms``, with its live pairs), the door counts them from scratch too, and ``F`` is
    within that allowance of its exact value."""
    import dataclasses
    from fractions import Fraction

    from cvxrank import rounding
    from cvxrank.solution import certify_solution

    seen = record_finish(monkeypatch)
    data = make_ranking(n_queries=20, docs_per_query=(8, 16), n_features=6, random_state=3)
    problem = RankingProblem(data, mu="balanced", lam=0.5)
    res = solve(problem, "cutting_plane", tol=1e-6)
    _, w, report, tol = seen[-1]
    assert res.status == "optimal" and report.objective_terms > 0
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))

    def live(slack):
        return oracle.live_weights(w, slack) / (2 * problem.lam)

    with_terms = rounding.primal_rounding(problem, w, live=live, terms=report.objective_terms)
    assert report.primal_rounding == with_terms > rounding.primal_rounding(problem, w, live=live)
    fresh = certify_solution(problem, w, dataclasses.replace(report, primal_rounding=None), tol)[3]
    assert fresh.gap_M >= res.certificate.gap_M
    pairs = make_pairs(data)
    c = pair_weights(pairs, mu="balanced")
    wf = [Fraction(float(v)) for v in w]
    exact = Fraction(0.5) * sum(v * v for v in wf)
    X = data.X
    for b, v, weight in zip(pairs.better, pairs.worse, c):
        margin = sum((Fraction(float(X[b, j])) - Fraction(float(X[v, j]))) * wf[j] for j in range(X.shape[1]))
        exact += Fraction(float(weight)) * max(Fraction(0), 1 - margin)
    assert abs(Fraction(res.objective) - exact) <= Fraction(2 * problem.lam * with_terms)
