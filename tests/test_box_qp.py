"""The box QP of the exact finish on the band (cvxrank.native.box_qp) against Clarabel on small singular instances."""

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.native.box_qp import box_qp


def _singular(seed, k=12, n=5):
    """A Gram matrix of pair differences with a pair twice and a difference that is the sum of two others."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(8, n))
    pairs = [(0, 1), (1, 2), (0, 2), (0, 1), (3, 4), (4, 5), (3, 5), (5, 6), (6, 7), (2, 7), (1, 6), (3, 4)][:k]
    D = np.array([X[i] - X[j] for i, j in pairs])
    lam = 0.3
    g = rng.normal(size=n)
    return D @ D.T / (2.0 * lam), D @ g / (2.0 * lam) - 1.0, rng.uniform(0.1, 2.0, size=len(pairs))


def _clarabel(Q, c, u):
    clarabel = pytest.importorskip("clarabel")
    k = c.shape[0]
    eye = sp.identity(k, format="csc")
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    sol = clarabel.DefaultSolver(sp.csc_matrix(np.triu(Q)), c, sp.vstack([eye, -eye], format="csc"),
                                 np.concatenate([u, np.zeros(k)]), [clarabel.NonnegativeConeT(2 * k)], settings).solve()
    return np.clip(np.asarray(sol.x), 0.0, u)


def _f(Q, c, x):
    return 0.5 * float(x @ Q @ x) + float(c @ x)


@pytest.mark.parametrize("seed", range(6))
def test_box_qp_is_clarabel_on_singular_gram_matrices(seed):
    Q, c, u = _singular(seed)
    assert np.linalg.matrix_rank(Q) < Q.shape[0]
    r = box_qp(Q, c, u)
    assert np.all(r.x >= 0.0) and np.all(r.x <= u)  # feasibility exact
    ref = _clarabel(Q, c, u)
    assert r.f == pytest.approx(_f(Q, c, r.x), rel=1e-12, abs=1e-12)
    assert _f(Q, c, r.x) <= _f(Q, c, ref) + 1e-8 * max(1.0, abs(_f(Q, c, ref)))
    assert r.kkt <= 1e-6  # the projected gradient (margins minus 1 in the finish) is small


@pytest.mark.parametrize("seed", range(6))
def test_the_polish_alone_reaches_clarabel(seed):
    # Projected Newton from 0 without the interior point: on these instances its free set repeats from one step
    # to the next (the step reuses that set's factor), and it must still end at the optimum.
    Q, c, u = _singular(seed)
    r = box_qp(Q, c, u, interior_iterations=0)
    assert np.all(r.x >= 0.0) and np.all(r.x <= u)
    ref = _clarabel(Q, c, u)
    assert r.f == pytest.approx(_f(Q, c, r.x), rel=1e-12, abs=1e-12)
    assert _f(Q, c, r.x) <= _f(Q, c, ref) + 1e-8 * max(1.0, abs(_f(Q, c, ref)))
    assert r.kkt <= 1e-6


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("where", ["optimum", "vertex", "outside", "zero"])
def test_the_interior_point_from_a_start_reaches_clarabel(seed, where):
    # warm=True: the interior-point method starts near x0 (WARM_PUSH inside the box) instead of u/2: from the
    # optimum, from a vertex of the box, from outside it and from 0 it must end at the same optimum, a fixed variable
    # (bound 0) kept.
    Q, c, u = _singular(seed)
    u[3] = 0.0
    ref = _clarabel(Q, c, u)
    rng = np.random.default_rng(seed)
    x0 = {"optimum": ref, "vertex": np.where(rng.random(u.shape[0]) < 0.5, 0.0, u), "outside": 3.0 * u - 1.0,
          "zero": np.zeros_like(u)}[where]
    r = box_qp(Q, c, u, x0, warm=True)
    assert np.all(r.x >= 0.0) and np.all(r.x <= u) and r.x[3] == 0.0
    assert r.f == pytest.approx(_f(Q, c, r.x), rel=1e-12, abs=1e-12)
    assert _f(Q, c, r.x) <= _f(Q, c, ref) + 1e-8 * max(1.0, abs(_f(Q, c, ref)))
    assert r.kkt <= 1e-6


def test_the_interior_point_starts_where_it_is_told():
    """``_interior_point`` before its first iteration: ``u/2``, or ``x0`` moved WARM_PUSH of its bound inside the box
    (what ``box_qp(..., warm=True)`` passes it; without ``warm`` it starts at ``u/2`` whatever ``x0``)."""
    from cvxrank.native.box_qp import WARM_PUSH, _interior_point

    Q, c, u = _singular(1)
    x0 = np.linspace(-1.0, 3.0, u.shape[0])
    start, it = _interior_point(Q, c, u, tol=1e-11, max_iter=0, x0=x0)
    assert it == 0
    np.testing.assert_array_equal(start, np.clip(x0, WARM_PUSH * u, (1.0 - WARM_PUSH) * u))
    np.testing.assert_array_equal(_interior_point(Q, c, u, tol=1e-11, max_iter=0)[0], 0.5 * u)


def test_box_qp_start_and_edge_cases():
    Q, c, u = _singular(7)
    start = u * 2.0  # clipped into the box
    r = box_qp(Q, c, u, start, max_iter=1)
    assert np.all(r.x >= 0.0) and np.all(r.x <= u)
    assert _f(Q, c, r.x) <= _f(Q, c, np.clip(start, 0.0, u)) + 1e-12  # never worse than its start
    empty = box_qp(np.zeros((0, 0)), np.zeros(0), np.zeros(0))
    assert empty.x.shape == (0,) and empty.converged
    zero = box_qp(np.zeros((3, 3)), np.array([-1.0, 1.0, 0.0]), np.array([2.0, 2.0, 2.0]))  # linear: to the bounds
    np.testing.assert_array_equal(zero.x[:2], [2.0, 0.0])


@pytest.mark.parametrize("args, message", [
    ((np.eye(2), np.zeros(3), np.ones(3)), "shape"),
    ((np.eye(2), np.zeros(2), np.ones(3)), "shape"),
    ((np.eye(2), np.zeros(2), np.array([1.0, -1.0])), ">= 0"),
    ((np.eye(2), np.array([np.nan, 0.0]), np.ones(2)), "finite"),
    ((np.eye(2), np.zeros(2), np.array([1.0, np.inf])), "finite"),
])
def test_box_qp_refuses_bad_input_with_a_clear_error(args, message):
    from cvxrank.exceptions import ValidationError

    with pytest.raises(ValidationError, match=message):
        box_qp(*args)
    with pytest.raises(ValidationError, match="x0"):
        box_qp(np.eye(2), np.zeros(2), np.ones(2), np.zeros(3))
