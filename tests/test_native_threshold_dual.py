"""The dual of the hard-margin threshold form (cvxrank.native.threshold_dual): its projection against an exact
reference, its constraints against the pairs written out, its bounds against Clarabel's optimum, its hand-over where
the hard-margin solution is not the optimum, and the solves through the door that run it."""

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import brentq

from cvxrank.costs import pair_weights, theorem1_C
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.formulations import build_primal
from cvxrank.native import PairFreeOracle, cost_table
from cvxrank.native.kernels import COMPILED, sweep
from cvxrank.native.threshold_dual import _gap, boundaries, flows, threshold_dual
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import assert_agree, brute_force_pairs
from tests.conftest import sparse_narrow as _narrow
from tests.conftest import sparse_wide as _wide

compiled = pytest.mark.skipif(not COMPILED, reason="the compiled sweeps were not built")


def _gaps(data):
    """``_wide`` data with grades 0, 1, 2 and 4 (some missing in each query) and a query of grade 3 alone."""
    rng = np.random.default_rng(7)
    y = np.array(data.y, dtype=float)
    y = np.where(rng.random(y.shape[0]) < 0.5, y * 2, y)  # grades 0, 1, 2, 4: gaps in most queries
    qid = np.array(data.qid)
    y[qid == qid[0]] = 3  # one query with a single grade: no boundary
    return RankingData(data.X, y=y, qid=qid)


def _optimum(data, lam, **costs):
    """Clarabel's objective of (9) (scale of (9): 2λ times (14)'s)."""
    pairs = make_pairs(data)
    res = solve(build_primal(pairs, C=theorem1_C(pair_weights(pairs, **costs), lam)), "clarabel", tol=1e-8)
    assert res.status == "optimal"
    return 2 * lam * res.qp_objective, res


def _reference_projection(v, sig):
    """The projection of v onto {ν ≥ 0, Σ σ ν = 0} by a root of the excess (bracketed, to full precision)."""
    if not (sig > 0).any() or not (sig < 0).any():
        return np.zeros_like(v)

    def excess(theta):
        return float(np.sum(sig * np.maximum(0.0, v - theta * sig)))

    span = 2.0 * (1.0 + np.abs(v).max())
    theta = brentq(excess, -span, span, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    return np.maximum(0.0, v - theta * sig)


@compiled
def test_balance_is_the_projection_onto_the_balanced_non_negative_set():
    rng = np.random.default_rng(0)
    for trial in range(300):
        sizes = rng.integers(1, 9, rng.integers(1, 7))
        starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        K = int(starts[-1])
        scale = rng.choice([1e-8, 1.0, 1e6])
        v = rng.standard_normal(K) * scale
        if trial % 5 == 0:
            v = np.round(v / scale) * scale  # ties
        sig = rng.choice([-1.0, 1.0], K)
        theta = rng.standard_normal(sizes.shape[0]) * scale * (trial % 3)  # cold and warm starts
        out = np.full(K, np.nan)
        sweep().balance(v, sig, starts, theta, out)
        for b in range(sizes.shape[0]):
            part = slice(starts[b], starts[b + 1])
            ref = _reference_projection(v[part], sig[part])
            assert np.all(out[part] >= 0)
            np.testing.assert_allclose(out[part], ref, rtol=0, atol=1e-12 * scale * max(1, sizes[b]))
            assert abs(np.sum(sig[part] * out[part])) <= 1e-12 * scale * sizes[b]


@compiled
def test_balance_rejects_inconsistent_boundaries():
    v, sig, out = np.ones(4), np.array([1.0, -1.0, 1.0, -1.0]), np.empty(4)
    with pytest.raises(ValueError, match="internal error"):
        sweep().balance(v, sig, np.array([0, 3], dtype=np.int64), np.zeros(1), out)
    with pytest.raises(ValueError, match="internal error"):
        sweep().balance(v, sig, np.array([0, 3, 2, 4], dtype=np.int64), np.zeros(3), out)
    with pytest.raises(ValueError, match="internal error: the projection's input has a NaN"):
        sweep().balance(np.array([np.nan, 1.0, 2.0, 3.0]), sig, np.array([0, 2, 4], dtype=np.int64), np.zeros(2), out)


@compiled
def test_threshold_step_is_the_numpy_step_and_its_sums():
    """The fused step: the projected point and the per-document sums equal numpy's bit for bit (the same arithmetic
    entry by entry), the four sums numpy's within rounding."""
    rng = np.random.default_rng(3)
    for trial in range(50):
        sizes = rng.integers(1, 12, rng.integers(1, 8))
        starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        K, m = int(starts[-1]), int(rng.integers(1, 30))
        doc, sig = rng.integers(0, m, K).astype(np.int64), rng.choice([-1.0, 1.0], K)
        z, nu = np.maximum(rng.standard_normal(K), 0.0), np.maximum(rng.standard_normal(K), 0.0)
        s, L = rng.standard_normal(m) * 3.0, float(rng.uniform(0.1, 10.0))
        theta, theta_ref = (np.zeros(sizes.shape[0]) for _ in range(2))
        grad = 0.5 - sig * s[doc]
        ref = np.empty(K)
        sweep().balance(z + grad / L, sig, starts, theta_ref, ref)
        new, u = np.full(K, np.nan), np.full(m, np.nan)
        total, slope, squares, along = sweep().threshold_step(z, s, doc, sig, starts, theta, L, nu, new, u)
        assert np.array_equal(new, ref) and np.array_equal(theta, theta_ref)
        assert np.array_equal(u, np.bincount(doc, sig * ref, minlength=m))
        d = ref - z
        np.testing.assert_allclose([total, slope, squares, along],
                                   [ref.sum(), grad @ d, d @ d, grad @ (ref - nu)], rtol=1e-12, atol=1e-12)


@compiled
def test_threshold_step_and_the_product_reject_bad_input():
    starts, sig = np.array([0, 2], dtype=np.int64), np.array([1.0, -1.0])
    z, new, u = np.zeros(2), np.empty(2), np.empty(3)
    with pytest.raises(ValueError, match="internal error: a document index"):
        sweep().threshold_step(z, np.zeros(3), np.array([0, 3], dtype=np.int64), sig, starts, np.zeros(1), 1.0, z,
                               new, u)
    with pytest.raises(ValueError, match="internal error: L must be positive"):
        sweep().threshold_step(z, np.zeros(3), np.array([0, 1], dtype=np.int64), sig, starts, np.zeros(1), 0.0, z,
                               new, u)
    with pytest.raises(ValueError, match="internal error: the projection's input"):
        sweep().threshold_step(z, np.array([np.inf, 0.0, 0.0]), np.array([0, 1], dtype=np.int64), sig, starts,
                               np.zeros(1), 1.0, z, new, u)
    indptr, data, out = np.array([0, 1, 2], dtype=np.int64), np.ones(2), np.empty(3)
    with pytest.raises(ValueError, match="internal error: a column index"):
        sweep().rmatvec_rows(indptr, np.array([0, 3], dtype=np.int32), data, np.ones(2), out)
    with pytest.raises(ValueError, match="internal error: indptr"):
        sweep().rmatvec_rows(np.array([0, 2, 1], dtype=np.int64), np.array([0, 1], dtype=np.int32), data,
                             np.ones(2), out)


def _pairs(data):
    """``(better, worse)`` of every within-query pair of different grades, in :func:`brute_force_pairs`' order."""
    y, qid = np.asarray(data.y), np.asarray(data.qid)
    found = [(i, j) for q in np.unique(qid) for i in np.flatnonzero(qid == q) for j in np.flatnonzero(qid == q)
             if y[i] > y[j]]
    return np.array(found).T


@pytest.mark.parametrize("gaps", [False, True], ids=["three grades", "grades with gaps"])
def test_boundaries_are_the_pairs_of_consecutive_grades(gaps):
    data = _gaps(_wide(3)) if gaps else _wide(3)
    tau = None if gaps else {(1, 0): 1.0, (2, 1): 2.0, (2, 0): 3.0}
    oracle = PairFreeOracle.from_data(data, cost_table(data, tau=tau, mu="balanced"))
    bd = boundaries(oracle)
    _, c, _ = brute_force_pairs(data, tau=tau, mu="balanced")
    better, worse = _pairs(data)
    y, qid = np.asarray(data.y), np.asarray(data.qid)
    present = {q: np.unique(y[qid == q]) for q in np.unique(qid)}
    adjacent = np.array([not np.any((present[qid[i]] > y[j]) & (present[qid[i]] < y[i]))
                         for i, j in zip(better, worse)])
    assert not adjacent.all()  # (some pairs skip a grade)
    assert bd.n_pairs == int(adjacent.sum())
    assert bd.side == max(max(int(a), int(b)) for a, b in zip(bd.mid - bd.starts[:-1], bd.starts[1:] - bd.mid))
    # every boundary: the documents of two consecutive grades of one query, all of them, and their pairs' weight
    covered = 0
    for b in range(bd.cost.shape[0]):
        up, down = bd.doc[bd.starts[b]:bd.mid[b]], bd.doc[bd.mid[b]:bd.starts[b + 1]]
        assert np.all(bd.sig[bd.starts[b]:bd.mid[b]] == 1) and np.all(bd.sig[bd.mid[b]:bd.starts[b + 1]] == -1)
        (q,), (g_up,), (g_down,) = set(qid[np.r_[up, down]]), set(y[up]), set(y[down])
        assert g_up > g_down and not np.any((present[q] > g_down) & (present[q] < g_up))
        assert sorted(up) == list(np.flatnonzero((qid == q) & (y == g_up)))
        assert sorted(down) == list(np.flatnonzero((qid == q) & (y == g_down)))
        mine = adjacent & np.isin(better, up) & np.isin(worse, down)
        assert int(mine.sum()) == up.shape[0] * down.shape[0]
        np.testing.assert_allclose(c[mine], bd.cost[b], rtol=1e-14)
        covered += int(mine.sum())
    assert covered == bd.n_pairs
    # the least gap over the boundaries is the least margin of the consecutive grades' pairs; once positive, of
    # every pair
    X = data.X.toarray()
    rng = np.random.default_rng(0)
    for _ in range(5):
        s = X @ rng.standard_normal(X.shape[1])
        assert _gap(s, bd) == (s[better] - s[worse])[adjacent].min()
        s = 1.5 * y + 0.01 * rng.random(y.shape[0])  # scores that follow the grades
        assert _gap(s, bd) > 0 and _gap(s, bd) == (s[better] - s[worse]).min()


def test_no_boundaries_where_a_consecutive_grade_pair_has_no_weight():
    data = _wide(1)
    oracle = PairFreeOracle.from_data(data, cost_table(data, tau={(1, 0): 1.0, (2, 1): 0.0, (2, 0): 1.0}))
    assert boundaries(oracle) is None


def _balanced(bd, seed):
    """A random balanced ``ν ≥ 0`` with some zeros."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(bd.doc.shape[0]) + 0.3
    nu = np.empty_like(v)
    sweep().balance(v, bd.sig, bd.starts, np.zeros(bd.cost.shape[0]), nu)
    return nu


@compiled
@pytest.mark.parametrize("lam", [0.05, 3.0])
def test_flows_are_a_point_of_the_box_and_their_value_is_exact_within_its_allowance(lam):
    data = _gaps(_wide(2, n_features=40))
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    bd = boundaries(oracle)
    X = data.X.toarray()
    Xf = [[Fraction(float(x)) for x in row] for row in X]
    rng = np.random.default_rng(9)
    unbalanced = np.abs(rng.standard_normal(bd.doc.shape[0]))
    unbalanced[bd.starts[0]:bd.mid[0]] = 0.0  # a side that sums to 0: no flow across that boundary
    for seed in range(4):
        # the first: flows beyond the box, scaled down; the last: not balanced (the flows are still a point of (16))
        nu = unbalanced if seed == 3 else _balanced(bd, seed) * (1.0 if seed else 40.0)
        fl = flows(oracle, bd, lam, nu)
        assert 0 < fl.t <= fl.t_max
        # the pairs' α exactly, from the same κ_b (the float the function computes)
        sums = np.add.reduceat(nu, bd.segments)
        U, D = sums[0::2], sums[1::2]
        kappa = np.divide(2.0 * lam, np.maximum(U, D), out=np.zeros_like(U), where=(U > 0) & (D > 0))
        t, alpha_sum, u = Fraction(fl.t), Fraction(0), [Fraction(0)] * X.shape[1]
        for b in range(bd.cost.shape[0]):
            up, down = range(bd.starts[b], bd.mid[b]), range(bd.mid[b], bd.starts[b + 1])
            for i in up:
                for j in down:
                    a = t * Fraction(float(kappa[b])) * Fraction(float(nu[i])) * Fraction(float(nu[j]))
                    assert a <= Fraction(float(bd.cost[b]))  # in the box
                    alpha_sum += a
                    di, dj = Xf[bd.doc[i]], Xf[bd.doc[j]]
                    u = [uk + a * (p - q) for uk, p, q in zip(u, di, dj)]
        exact = alpha_sum - sum(x * x for x in u) / (4 * Fraction(lam))
        assert abs(Fraction(fl.value) - exact) <= Fraction(2 * lam * fl.rounding(data.X, bd, lam))
        assert fl.value == pytest.approx(float(exact), rel=1e-12)
        if seed == 0:
            assert fl.t <= fl.t_max < 1.0  # (the scaled one needed its multiple)


@compiled
@pytest.mark.parametrize(("make", "lam", "costs"), [
    (_wide, 0.05, {"mu": "balanced"}),
    (_wide, 0.5, {}),
    (lambda seed: _gaps(_wide(seed)), 0.05, {"mu": "balanced"}),
    (_wide, 0.5, {"tau": {(1, 0): 1.0, (2, 1): 2.0, (2, 0): 0.0}}),
], ids=["balanced", "plain", "grades with gaps", "a zero weight across two grades"])
@pytest.mark.parametrize("seed", [0, 1])
def test_proves_the_hard_margin_optimum_between_clarabels_bounds(make, lam, costs, seed):
    data = make(seed)
    optimum, ref = _optimum(data, lam, **costs)
    oracle = PairFreeOracle.from_data(data, cost_table(data, **costs))
    w, F, lower, _, _, rows, rounding = threshold_dual(oracle, lam, upper=np.inf, lower=0.0, target=1e-8,
                                                       max_calls=50_000)
    assert F - lower <= 1e-8 * F and rounding is not None
    below = optimum - 2 * lam * ref.gap_M  # Clarabel's certified lower bound
    assert below * (1 - 1e-12) <= F and F == pytest.approx(lam * float(w @ w) + oracle.loss(w), rel=1e-14)
    assert lower <= optimum * (1 + 1e-12)
    assert all(row["dual_objective"] <= optimum * (1 + 1e-12) for row in rows)
    assert np.linalg.norm(w - ref.w) <= np.sqrt(2 * ref.gap_M) + np.sqrt((F - lower) / lam)


@compiled
@pytest.mark.parametrize(("make", "lam"), [(_wide, 500.0), (_narrow, 0.05), (_narrow, 5.0)],
                         ids=["large lambda", "not separable, small lambda", "not separable"])
def test_hands_over_where_the_hard_margin_solution_is_not_the_optimum(make, lam):
    data = make(4)
    optimum, ref = _optimum(data, lam, mu="balanced")
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    _, F, lower, _, calls, _, _ = threshold_dual(oracle, lam, upper=np.inf, lower=0.0, target=1e-8,
                                                 max_calls=50_000)
    assert calls < 50_000 and not (np.isfinite(F) and F - lower <= 1e-8 * F)  # handed over, well before the cap
    assert lower <= optimum * (1 + 1e-12)
    assert F >= (optimum - 2 * lam * ref.gap_M) * (1 - 1e-12)


@compiled
@pytest.mark.parametrize("make", [_wide, _narrow, lambda seed: _gaps(_wide(seed))],
                         ids=["separable", "not separable", "grades with gaps"])
@pytest.mark.parametrize("lam", [0.05, 5.0, 500.0])
def test_the_door_with_it_agrees_with_clarabel(make, lam):
    data = make(int(lam) % 5)
    _, ref = _optimum(data, lam, mu="balanced")
    res = solve(RankingProblem(data, mu="balanced", lam=lam), "cutting_plane", tol=1e-8, pair_cd=True,
                threshold=True)
    assert res.status == "optimal"
    assert_agree(res, ref)
    assert np.all(res.history["dual_objective"] <= 2 * lam * ref.qp_objective * (1 + 1e-10) + 1e-12)


@compiled
def test_it_runs_before_an_automatic_pair_cd(monkeypatch):
    import cvxrank.native.threshold_dual as module

    ran = []
    original = module.threshold_dual

    def spy(*args, **kwargs):
        ran.append(original(*args, **kwargs))
        return ran[-1]

    monkeypatch.setattr(module, "threshold_dual", spy)
    data = _wide(5, n_features=2500)  # sparse, more features than the Newton phase takes and than documents
    _, ref = _optimum(data, 0.5, mu="balanced")
    for threshold, runs in ((None, 1), (False, 0)):
        ran.clear()
        res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-8, threshold=threshold)
        assert len(ran) == runs
        assert_agree(res, ref)
    assert ran == [] and res.status == "optimal"


def test_threshold_is_checked():
    problem = RankingProblem(_wide(0), lam=0.5)
    with pytest.raises(ValidationError, match="threshold must be True, False or None"):
        solve(problem, "cutting_plane", threshold="yes")
    with pytest.raises(ValidationError, match="not with pair_cd=False"):
        solve(problem, "cutting_plane", threshold=True, pair_cd=False)


@compiled
def test_a_step_that_fits_no_model_ends_the_phase_and_the_solve_certifies():
    """Not separable and tiny: ``ν`` grows until rounding fails every backtracking test; ``L`` once doubled to
    float64's overflow (an internal error). The phase ends within its room, and pair_cd and the planes certify."""
    X = np.array([[-0.9, 0.9, 0.9], [-0.7, 0.1, -0.2], [0.6, -0.6, -0.4], [-0.1, 0.1, 1.0], [-1.1, 0.3, 1.1],
                  [0.1, -1.0, 1.1], [0.5, 0.7, -1.4], [0.1, -2.1, 1.1], [-2.1, -0.2, 0.3], [0.2, 0.2, 0.6],
                  [1.0, 0.6, 0.0], [-1.0, -0.5, 0.1], [0.2, -0.9, -2.3], [2.7, 0.0, 0.0], [-0.8, 1.4, -1.5],
                  [-0.8, 0.5, -1.5], [0.6, -0.5, -0.5], [-0.2, 0.1, 1.5], [-0.2, -1.9, -0.2], [-1.0, 0.2, -1.0],
                  [0.7, -1.3, 1.0], [0.5, -1.5, 0.6], [0.5, 0.1, -0.4]])
    y = [1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1]
    data = RankingData(sp.csr_matrix(X), y=y, qid=[1, 1, 1] + [2] * 20)
    optimum, ref = _optimum(data, 0.05)
    oracle = PairFreeOracle.from_data(data, cost_table(data))
    _, F, lower, _, calls, _, _ = threshold_dual(oracle, 0.05, upper=np.inf, lower=0.0, target=1e-12,
                                                 max_calls=3000)
    assert calls < 3000 and lower <= optimum * (1 + 1e-12)
    res = solve(RankingProblem(data, lam=0.05), "cutting_plane", tol=1e-6, pair_cd=True, threshold=True)
    assert_agree(res, ref)


@compiled
def test_the_work_limit_holds_and_every_bound_stays_valid():
    import warnings

    data = _wide(2)
    optimum, ref = _optimum(data, 0.05, mu="balanced")
    below = optimum - 2 * 0.05 * ref.gap_M  # Clarabel's certified lower bound
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    for max_calls in range(0, 40, 3):
        _, F, lower, _, calls, _, _ = threshold_dual(oracle, 0.05, upper=np.inf, lower=0.0, target=1e-12,
                                                     max_calls=max_calls)
        assert calls <= max_calls and lower <= optimum * (1 + 1e-12) and below * (1 - 1e-12) <= F
    problem = RankingProblem(data, mu="balanced", lam=0.05)
    for max_iter in (2, 5, 9, 12, 13, 30):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve(problem, "cutting_plane", tol=1e-12, pair_cd=True, threshold=True, max_iter=max_iter)
        assert res.extras["oracle_calls"] <= max_iter
        assert res.lower_bound <= optimum * (1 + 1e-12)


@compiled
def test_every_upper_bound_it_keeps_has_the_oracles_loss_in_it():
    """Its upper points are summed by the oracle before a bound or a row takes them: with the oracle's loss made
    larger by a constant, the returned ``F`` and every row's objective carry that constant."""
    data = _wide(1)
    optimum, ref = _optimum(data, 0.5, mu="balanced")
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    true_loss, extra = oracle.loss, 0.01 * optimum
    oracle.loss = lambda w: true_loss(w) + extra
    w, F, lower, _, _, rows, _ = threshold_dual(oracle, 0.5, upper=np.inf, lower=0.0, target=1e-8, max_calls=5_000)
    assert w is not None and F == pytest.approx(0.5 * float(w @ w) + true_loss(w) + extra, rel=1e-14)
    below = optimum - 2 * 0.5 * ref.gap_M  # Clarabel's certified lower bound
    finite = [row["objective"] for row in rows if np.isfinite(row["objective"])]
    assert finite and min(finite) >= below * (1 - 1e-12) + extra
    assert lower <= optimum * (1 + 1e-12)
