"""Dual coordinate descent over the pairs with exact finishes (cvxrank.native.pair_cd, ``pair_cd=True``): the
pairs it enumerates against pairs written out by hand, its solutions against Clarabel's within the two
certificates, every bound it records below the optimum, and the rounding allowance of its bound against exact
rational arithmetic."""

import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.costs import pair_weights, theorem1_C
from cvxrank.data import RankingData
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.formulations import build_primal
from cvxrank.native import PairFreeOracle, cost_table
from cvxrank.native.kernels import COMPILED
from cvxrank.native.pair_cd import all_pairs
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.rounding import pair_dual_rounding
from cvxrank.solvers import solve
from tests.conftest import (
    assert_agree,
    brute_force_pairs,
    exact_pair_dual,
    record_finish,
)
from tests.conftest import sparse_narrow as _narrow
from tests.conftest import sparse_wide as _wide

compiled = pytest.mark.skipif(not COMPILED, reason="the compiled sweeps were not built")


#: The certificate kinds of a solve whose bound is not pair_cd's: the planes' or the Newton phase's.
NOT_PAIR_CD = ("cutting-plane bound", "band dual bound")

def test_all_pairs_are_the_pairs_written_out_by_hand():
    data = _narrow(0)
    perm = np.random.default_rng(0).permutation(data.n_documents)  # queries interleaved
    data = RankingData(data.X[perm], y=data.y[perm], qid=data.qid[perm])
    tau = {(1, 0): 1.0, (2, 0): 2.5, (2, 1): 0.0}  # a grade pair of weight 0 is no pair
    oracle = PairFreeOracle.from_data(data, cost_table(data, tau=tau, mu="balanced"))
    pairs = all_pairs(oracle)
    better, worse = pairs.documents()
    c = oracle.values[oracle._qc[better], oracle._gc[better], oracle._gc[worse]]
    X = data.X.toarray()
    D, c_ref, _ = brute_force_pairs(data, tau=tau, mu="balanced")
    keep = c_ref > 0
    mine = sorted(zip(map(tuple, (X[better] - X[worse]).round(12)), c.round(12)))
    ref = sorted(zip(map(tuple, D[keep].round(12)), c_ref[keep].round(12)))
    assert pairs.lb.dtype == pairs.lw.dtype == np.uint16 and pairs.n_pairs == len(ref)
    assert mine == ref
    # block q holds the pairs of query q; degree bounds the pairs of every document
    query = np.repeat(np.arange(pairs.starts.shape[0]), np.diff(pairs.blocks))
    assert np.array_equal(oracle._qc[better], query) and np.array_equal(oracle._qc[worse], query)
    assert pairs.degree >= (np.bincount(better, minlength=data.n_documents)
                            + np.bincount(worse, minlength=data.n_documents)).max()


def test_pairs_are_formed_a_chunk_at_a_time_and_as_int32_for_long_queries(monkeypatch):
    """The same pairs whatever the chunk (one position's pairs may exceed it) and with int32 local indices."""
    import cvxrank.native.pair_cd as module

    data = _narrow(3)
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    ref = all_pairs(oracle)
    monkeypatch.setattr(module, "CHUNK", 3)
    monkeypatch.setattr(module, "LOCAL_MAX", 4)
    small = all_pairs(oracle)
    assert small.lb.dtype == np.int32 and ref.lb.dtype == np.uint16
    for a, b in zip(ref.documents(), small.documents()):
        assert np.array_equal(a, b)


def _clarabel(data, lam):
    pairs = make_pairs(data)
    res = solve(build_primal(pairs, C=theorem1_C(pair_weights(pairs, mu="balanced"), lam)), "clarabel", tol=1e-8)
    assert res.status == "optimal"
    return res


@compiled
@pytest.mark.parametrize("make", [_wide, _narrow], ids=["separable", "not separable"])
@pytest.mark.parametrize("lam", [0.05, 5.0, 500.0])
def test_agrees_with_clarabel_and_every_bound_is_below_the_optimum(make, lam):
    data = make(seed=int(lam) % 7)
    ref = _clarabel(data, lam)
    res = solve(RankingProblem(data, mu="balanced", lam=lam), "cutting_plane", tol=1e-8, pair_cd=True)
    assert res.status == "optimal"
    assert_agree(res, ref)
    upper = 2 * lam * ref.qp_objective  # Clarabel's point: an upper bound on the optimum
    assert np.all(res.history["dual_objective"] <= upper * (1 + 1e-10) + 1e-12)
    assert res.certificate.kind in ("pairwise dual bound", "cutting-plane bound")


def _descent_inputs(data):
    """What the compiled descent reads, as :func:`cvxrank.native.pair_cd.pair_cd` makes it."""
    from cvxrank.native.pair_cd import _csr, _row_norms

    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    indptr, indices, values = _csr(oracle.X)
    pairs = all_pairs(oracle)
    gc = np.asarray(oracle._gc, dtype=np.int64)
    cell = (oracle._qc * oracle._G + gc) * oracle._G
    table = np.ascontiguousarray(oracle.values, dtype=np.float64).ravel()
    return oracle, (indptr, indices, values, _row_norms(indptr, values)), pairs, cell, gc, table


@compiled
def test_the_descent_carries_its_shrinking_from_call_to_call():
    """Two passes a call with the shrinking carried over reach the optimum that Clarabel finds (every ``α`` in its
    box, the dual value from ``α`` alone), with pairs shrunk between calls; a count that does not fit its block is
    an internal error."""
    from cvxrank.native.kernels import sweep

    data, lam = _narrow(2), 0.5
    ref = _clarabel(data, lam)
    oracle, csr, pairs, cell, gc, table = _descent_inputs(data)
    alpha, w = np.zeros(pairs.n_pairs), np.zeros(data.n_features)
    state = np.array([1], dtype=np.uint64)
    active, limits = np.full(pairs.starts.shape[0], -1, dtype=np.int64), np.empty(2)
    shrunk = False
    for _ in range(2000):  # (about 1,800 passes: the descent is slow on these pairs, not the point here)
        done = sweep().pair_cd(*csr, *pairs.arrays, cell, gc, table, alpha, w, lam, 2, state, 1e-12, active, limits)
        shrunk |= bool(np.all(active >= 0)) and int(active.sum()) < pairs.n_pairs  # written back
        if done < 2:
            break
    assert done < 2 and shrunk  # converged, after calls that began with pairs left out
    c = table[cell[pairs.documents()[0]] + gc[pairs.documents()[1]]]
    assert np.all((alpha >= 0) & (alpha <= c))
    v, V = np.zeros(data.n_documents), np.zeros(data.n_documents)
    sweep().pair_sums(*pairs.arrays, alpha, v, V)
    u = oracle.gradient(v)
    dual = float(alpha.sum()) - float(u @ u) / (4 * lam)
    assert dual == pytest.approx(2 * lam * ref.qp_objective, rel=1e-7)
    bad = active.copy()
    bad[0] = np.diff(pairs.blocks)[0] + 1
    with pytest.raises(ValueError, match="internal error: an active count"):
        sweep().pair_cd(*csr, *pairs.arrays, cell, gc, table, alpha, w, lam, 1, state, 1e-12, bad, limits)


@compiled
def test_a_call_leaves_the_pairs_shrunk_before_it_where_they_are():
    """A pass that starts from carried counts shuffles and visits only each query's active pairs: the shrunk ones
    at the end of its block stay as they are, where a pass without the counts shuffles the whole block."""
    from cvxrank.native.kernels import sweep

    data, lam = _narrow(2), 0.5
    _, csr, pairs, cell, gc, table = _descent_inputs(data)
    alpha, w = np.zeros(pairs.n_pairs), np.zeros(data.n_features)
    state = np.array([1], dtype=np.uint64)
    active, limits = np.full(pairs.starts.shape[0], -1, dtype=np.int64), np.empty(2)
    sweep().pair_cd(*csr, *pairs.arrays, cell, gc, table, alpha, w, lam, 6, state, 1e-12, active, limits)
    tail = np.concatenate([np.arange(a + k, b) for a, b, k in zip(pairs.blocks[:-1], pairs.blocks[1:], active)])
    assert tail.size > 10  # pairs shrunk by the first call

    def rerun(*carried):  # one more pass from copies of the same state; the tail's pairs and α after it
        lb, lw, al, st = pairs.lb.copy(), pairs.lw.copy(), alpha.copy(), state.copy()
        arrays = (pairs.docs, pairs.starts, pairs.blocks, lb, lw)
        sweep().pair_cd(*csr, *arrays, cell, gc, table, al, w.copy(), lam, 1, st, 1e-12,
                        *(x.copy() for x in carried))
        return lb[tail], lw[tail], al[tail]

    before = (pairs.lb[tail], pairs.lw[tail], alpha[tail])
    assert all(np.array_equal(x, y) for x, y in zip(rerun(active, limits), before))
    assert not all(np.array_equal(x, y) for x, y in zip(rerun(), before))


@compiled
def test_pairs_whose_rows_do_not_meet_take_the_same_steps_without_their_dot_product():
    """With the 2-bit codes the descent forms ``<x_b, x_w>`` only while a pair's rows are not known to meet on no
    non-zero entry: the same ``α``, ``w`` and order of the pairs, bit for bit, as without them; each code known
    after the passes says truly whether the two rows share a non-zero entry (both kinds occur here), and the codes
    move with their pairs when the passes permute them."""
    from cvxrank.native.kernels import sweep

    data, lam = _wide(5, n_features=60), 0.05
    _, csr, pairs, cell, gc, table = _descent_inputs(data)
    runs = []
    for codes in (None, np.zeros((pairs.n_pairs + 3) // 4, dtype=np.uint8)):
        lb, lw = pairs.lb.copy(), pairs.lw.copy()
        arrays = (pairs.docs, pairs.starts, pairs.blocks, lb, lw)
        alpha, w, state = np.zeros(pairs.n_pairs), np.zeros(data.n_features), np.array([7], dtype=np.uint64)
        active, limits = np.full(pairs.starts.shape[0], -1, dtype=np.int64), np.empty(2)
        for _ in range(3):  # calls that carry the shrinking (and the codes) from one to the next
            sweep().pair_cd(*csr, *arrays, cell, gc, table, alpha, w, lam, 4, state, 1e-12, active, limits,
                            *(() if codes is None else (codes,)))
        runs.append((lb, lw, alpha, w, codes))
    (lb0, lw0, alpha0, w0, _), (lb1, lw1, alpha1, w1, codes) = runs
    assert np.array_equal(lb0, lb1) and np.array_equal(lw0, lw1)
    assert np.array_equal(alpha0, alpha1) and np.array_equal(w0, w1)
    code = (codes[np.arange(pairs.n_pairs) >> 2] >> ((np.arange(pairs.n_pairs) & 3) * 2)) & 3
    X = data.X.toarray()
    starts = np.repeat(pairs.starts, np.diff(pairs.blocks))
    better, worse = pairs.docs[starts + lb1], pairs.docs[starts + lw1]
    meet = np.any((X[better] != 0) & (X[worse] != 0), axis=1)
    assert np.sum(code == 1) > 0 and np.sum(code == 2) > 0
    assert not np.any(meet[code == 1]) and np.all(meet[code == 2])
    with pytest.raises(ValueError, match="internal error: array codes"):
        sweep().pair_cd(*csr, *pairs.arrays, cell, gc, table, alpha0, w0, lam, 1, state, 1e-12, active, limits,
                        codes[: (pairs.n_pairs - 1) // 4])


@compiled
def test_repeated_indices_in_a_row_are_the_sum_scipy_means():
    """A CSR matrix that stores each entry as two halves at the same index is the same matrix to scipy: the same
    optimum (the rows' squared norms of the descent count the sums, not the squares of the parts)."""
    data = _wide(3)
    X = sp.csr_matrix(data.X)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    r, c, v = np.tile(rows, 2), np.tile(X.indices, 2), np.tile(X.data / 2, 2)
    order = np.lexsort((c, r))
    indptr = np.concatenate(([0], np.cumsum(np.bincount(r, minlength=X.shape[0]))))
    halves = sp.csr_matrix((v[order], c[order], indptr), shape=X.shape)
    assert halves.nnz == 2 * X.nnz and abs(halves - X).max() == 0
    runs = [solve(RankingProblem(RankingData(M, y=data.y, qid=data.qid), lam=0.05), "cutting_plane", tol=1e-9,
                  pair_cd=True, max_iter=2000) for M in (X, halves)]
    assert all(res.status == "optimal" for res in runs)
    assert_agree(runs[1], runs[0])


@compiled
def test_the_finish_pass_writes_its_pairs_as_bits_and_reads_them_back():
    """The pass of a finish's products over the pairs inside their box: picked by ``α`` (the bits written, one a
    pair), then read from the bits alone, the same sums bit for bit, and both the sums over those pairs written out
    with numpy."""
    from cvxrank.native.kernels import sweep

    data, lam = _narrow(4), 0.5
    _, csr, pairs, cell, gc, table = _descent_inputs(data)
    alpha, w = np.zeros(pairs.n_pairs), np.zeros(data.n_features)
    sweep().pair_cd(*csr, *pairs.arrays, cell, gc, table, alpha, w, lam, 20, np.array([3], dtype=np.uint64), 1e-12)
    better, worse = pairs.documents()
    c = table[cell[better] + gc[worse]]
    inside = (alpha > 0) & (alpha < c)
    assert 0 < inside.sum() < pairs.n_pairs
    s = np.random.default_rng(0).normal(size=data.n_documents)
    picked, read = np.empty(data.n_documents), np.empty(data.n_documents)
    mask = np.full((pairs.n_pairs + 63) // 64, 12345, dtype=np.uint64)  # written over, not or-ed into
    count = sweep().pair_margin_sums(*pairs.arrays, alpha, cell, gc, table, s, 0.5, 2.0, picked, mask, None)
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[:pairs.n_pairs].astype(bool)
    assert count == inside.sum() and np.array_equal(bits, inside)
    assert sweep().pair_margin_sums(*pairs.arrays, None, cell, gc, table, s, 0.5, 2.0, read, mask, None) == count
    assert np.array_equal(picked, read)
    y = 0.5 + 2.0 * (s[better] - s[worse])
    expected = (np.bincount(better[inside], y[inside], data.n_documents)
                - np.bincount(worse[inside], y[inside], data.n_documents))
    np.testing.assert_allclose(read, expected, rtol=1e-12, atol=1e-12)


@compiled
def test_separable_optimum_is_the_same_w_for_every_small_lambda():
    """Hard margin: below some λ the optimum is one ``w`` and ``L* = λ‖w‖²`` (every pair at margin 1 or above)."""
    data = _wide(3)
    runs = [solve(RankingProblem(data, lam=lam), "cutting_plane", tol=1e-9, pair_cd=True) for lam in (0.01, 0.1)]
    assert all(r.status == "optimal" and r.certificate.kind == "pairwise dual bound" for r in runs)
    assert np.linalg.norm(runs[0].w - runs[1].w) <= runs[0].distance_bound + runs[1].distance_bound
    for r, lam in zip(runs, (0.01, 0.1)):
        assert r.objective == pytest.approx(lam * float(r.w @ r.w), rel=1e-8)


@compiled
def test_a_finish_takes_the_pairs_its_reference_point_violates():
    """No pair inside its box (α = 0) and a reference point just inside the hard-margin optimum ``w*`` (scaled by
    0.99): the pairs on the margin at ``w*`` are the ones violated there, and the least-norm point that puts them on
    the margin is ``w*`` itself."""
    import cvxrank.native.pair_cd as module

    data = _wide(3)
    lam = 0.01
    ref = solve(RankingProblem(data, lam=lam), "cutting_plane", tol=1e-10, pair_cd=True)
    oracle = PairFreeOracle.from_data(data, cost_table(data))
    pairs = all_pairs(oracle)
    gc = np.asarray(oracle._gc, dtype=np.int64)
    cell = (oracle._qc * oracle._G + gc) * oracle._G
    table = np.ascontiguousarray(oracle.values, dtype=np.float64).ravel()
    alpha = np.zeros(pairs.n_pairs)
    zero = np.zeros(data.n_features)
    assert module._finish(oracle, zero, pairs, alpha, cell, gc, table) is None  # no pair inside its box
    w = module._finish(oracle, zero, pairs, alpha, cell, gc, table, reference=0.99 * ref.w)
    assert np.linalg.norm(w - ref.w) <= 1e-6 * np.linalg.norm(ref.w)


def test_conjugate_gradients_from_a_start_reach_the_solution_nearest_it():
    """``A = BᵀB`` singular: from a start in the range of ``A`` (an earlier finish's step) the least-norm solution of
    ``A x = b``; from any other start, that solution plus the start's component in the null space of ``A``."""
    from cvxrank.native.newton import _cg

    rng = np.random.default_rng(3)
    B = rng.normal(size=(6, 10))
    A = B.T @ B
    b = A @ rng.normal(size=10)
    least = np.linalg.pinv(A) @ b
    inside = B.T @ rng.normal(size=6)
    x = _cg(lambda z: A @ z, b, 1e-12, 100, x0=inside)
    assert np.linalg.norm(x - least) <= 1e-8 * np.linalg.norm(least)
    outside = rng.normal(size=10)
    null_part = outside - np.linalg.pinv(A) @ (A @ outside)
    x = _cg(lambda z: A @ z, b, 1e-12, 100, x0=outside)
    assert np.linalg.norm(null_part) > 0.1 * np.linalg.norm(outside)
    assert np.linalg.norm(x - (least + null_part)) <= 1e-8 * np.linalg.norm(least + null_part)


def test_conjugate_gradients_end_at_the_look_that_says_so():
    """``check`` is called every ``every`` iterations with the iterate; True ends the run there: the iterate of a run
    capped at that many iterations, after that many products."""
    from cvxrank.native.newton import _cg

    rng = np.random.default_rng(4)
    B = rng.normal(size=(40, 40)) * np.logspace(0, 3, 40)  # ill-conditioned: no convergence within 20 iterations
    A = B.T @ B
    b = rng.normal(size=40)
    products, looks = [0], []

    def matvec(z):
        products[0] += 1
        return A @ z

    x = _cg(matvec, b, 1e-14, 200, check=lambda z: looks.append(z.copy()) or len(looks) == 2, every=10)
    assert products[0] == 20 and len(looks) == 2
    np.testing.assert_array_equal(x, looks[-1])
    np.testing.assert_array_equal(x, _cg(lambda z: A @ z, b, 1e-14, 20))


@compiled
@pytest.mark.parametrize(("seed", "lam"), [(3, 0.05), (1, 0.5)])
def test_a_finish_ends_once_its_point_proves_the_target(monkeypatch, seed, lam):
    """A finish's conjugate gradients look at ``F`` every FINISH_CHECK products and end at the look that proves the
    target: fewer products than a finish run to its tolerance, the solution still Clarabel's."""
    import cvxrank.native.pair_cd as module

    data = _wide(seed)
    original, products = module._cg, [0]

    def counted(matvec, *args, **kwargs):
        def product(z):
            products[0] += 1
            return matvec(z)
        return original(product, *args, **kwargs)

    monkeypatch.setattr(module, "_cg", counted)
    runs = {}
    for every in (module.FINISH_CHECK, 10**9):
        products[0] = 0
        monkeypatch.setattr(module, "FINISH_CHECK", every)
        res = solve(RankingProblem(data, mu="balanced", lam=lam), "cutting_plane", tol=1e-6, pair_cd=True)
        assert res.status == "optimal" and res.relative_gap <= 1e-6
        runs[every] = (res, products[0])
    (watched, few), (_, many) = runs.values()
    assert 0 < few < many
    assert_agree(watched, _clarabel(data, lam))


@compiled
def test_pairs_as_int32_local_indices_give_the_same_solution(monkeypatch):
    """Pairs held as int32 local indices (queries over LOCAL_MAX documents): Clarabel's solution."""
    import cvxrank.native.pair_cd as module

    monkeypatch.setattr(module, "LOCAL_MAX", 4)
    finishes = []
    original = module._finish
    monkeypatch.setattr(module, "_finish", lambda *args, **kwargs: finishes.append(1) or original(*args, **kwargs))
    for make, lam in [(_wide, 0.05), (_narrow, 5.0)]:
        data = make(seed=3)
        res = solve(RankingProblem(data, mu="balanced", lam=lam), "cutting_plane", tol=1e-8, pair_cd=True)
        assert res.status == "optimal" and res.certificate.kind == "pairwise dual bound"
        assert_agree(res, _clarabel(data, lam))
    assert finishes


@compiled
@pytest.mark.parametrize("share", [0.4, 0.6])
def test_the_phase_aims_at_the_gap_the_certificate_will_find(share):
    """Without an allowance this run stops at a gap just under its target (0.99 of it); with an allowance of 0.4 of
    the target it goes on until its gap is within the other 0.6; an allowance above half the target (float64's
    floor) is not chased: the gap within the target is enough."""
    from cvxrank.native.pair_cd import pair_cd

    data = _narrow(6)
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    lam, target = 0.05, 0.1

    def run(allowance=None):
        _, F, lower, *_ = pair_cd(oracle, lam, upper=np.inf, lower=0.0, target=target, max_calls=10_000,
                                  allowance=allowance)
        return (F - lower) / F

    assert 0.6 * target < run() <= target
    asked = []

    def extra(w):
        F = lam * float(w @ w) + oracle(w, counts=False).loss
        asked.append(share * target * F)
        return asked[-1]

    rel = run(extra)
    assert asked  # asked once the phase's own gap was within the target
    assert rel <= (1.0 - share if share < 0.5 else 1.0) * target


@compiled
def test_a_stalled_descent_hands_back_to_the_planes():
    """Four documents on one feature at λ = 1e-4: the descent's gap sat near 2e-2 for its whole work limit (3,000
    passes, ``user_limit``). It now returns once its gap stops halving, and the planes certify."""
    from cvxrank.native.pair_cd import STALL_PASSES, pair_cd

    data = RankingData(sp.csr_matrix(np.array([[-2.0], [0.0], [1.0], [-1.0]])), y=[0, 1, 2, 3], qid=[3, 3, 3, 3])
    ref = _clarabel(data, 1e-4)
    res = solve(RankingProblem(data, mu="balanced", lam=1e-4), "cutting_plane", tol=1e-3, pair_cd=True,
                threshold=False)
    assert_agree(res, ref)
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    _, F, lower, _, calls, _, _ = pair_cd(oracle, 1e-4, upper=oracle.total_weight, lower=0.0, target=1e-12,
                                          max_calls=20 * STALL_PASSES)
    assert calls < 20 * STALL_PASSES and lower <= 2 * 1e-4 * ref.qp_objective * (1 + 1e-10)


@compiled
def test_work_limit_counts_passes_and_keeps_a_valid_bound():
    data = _narrow(1)
    ref = _clarabel(data, 0.5)
    with pytest.warns(InaccurateSolutionWarning):
        res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-12, pair_cd=True,
                    max_iter=12)
    assert res.status == "user_limit" and res.extras["oracle_calls"] <= 12
    assert res.lower_bound <= 2 * 0.5 * ref.qp_objective * (1 + 1e-10)


def test_without_a_sparse_x_or_the_compiled_sweeps_the_solve_goes_on_as_before():
    data = _narrow(2)
    dense = RankingData(data.X.toarray(), y=data.y, qid=data.qid)
    for problem, options in [(RankingProblem(dense, lam=0.5), {}),
                             (RankingProblem(data, lam=0.5), {"oracle_kernel": "numpy"})]:
        res = solve(problem, "cutting_plane", tol=1e-8, pair_cd=True, **options)
        assert res.status == "optimal" and res.certificate.kind in NOT_PAIR_CD
    with pytest.raises(ValidationError, match="pair_cd must be True, False or None"):
        solve(RankingProblem(data, lam=0.5), "cutting_plane", pair_cd="yes")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dual_rounding_bounds_the_computed_value(seed):
    """The bound holds against exact arithmetic, with entries of very different sizes, and is not vacuous."""
    rng = np.random.default_rng(seed)
    m, n, P, lam = 12, 6, 40, 0.37
    X = rng.standard_normal((m, n)) * 10.0 ** rng.integers(-6, 7, (m, n))
    better, worse = rng.integers(0, m, P), rng.integers(0, m, P)
    alpha = rng.uniform(0, 1, P) * 10.0 ** rng.integers(-3, 4, P)
    Xs = sp.csr_matrix(X)
    v = np.bincount(better, alpha, m) - np.bincount(worse, alpha, m)
    u = Xs.T @ v
    w = u / (2 * lam)
    computed = float(alpha.sum()) - lam * float(w @ w)
    exact = exact_pair_dual(X, better, worse, alpha, lam)
    V = np.bincount(better, alpha, m) + np.bincount(worse, alpha, m)
    degree = int((np.bincount(better, minlength=m) + np.bincount(worse, minlength=m)).max())
    bound = 2 * lam * pair_dual_rounding(Xs, V, degree, alpha, u, lam)
    assert abs(Fraction(computed) - exact) <= Fraction(bound)
    assert bound <= 1e-9 * (float(alpha.sum()) + float(u @ u) / (4 * lam))


@compiled
def test_float32_features_are_read_as_they_are():
    """A float32 CSR ``X``: the pass reads float64 copies of its values, the bound's sums run on ``X`` itself; the
    solution agrees with Clarabel's on the same values."""
    data = _wide(4)
    X32 = data.X.astype(np.float32)
    data32 = RankingData(X32, y=data.y, qid=data.qid)
    ref = _clarabel(RankingData(X32.astype(np.float64), y=data.y, qid=data.qid), 0.5)
    res = solve(RankingProblem(data32, mu="balanced", lam=0.5), "cutting_plane", tol=1e-8, pair_cd=True)
    assert res.status == "optimal" and res.certificate.kind == "pairwise dual bound"
    assert_agree(res, ref)


@compiled
def test_on_by_default_for_sparse_data_with_more_features_than_documents():
    """None (the default) runs it above NEWTON_MAX_FEATURES features with at least one feature per document, and
    not with hessian_free or fewer features than documents."""
    wide = make_ranking(n_queries=4, docs_per_query=(6, 10), n_features=2500, density=0.01, random_state=0)
    wide = RankingData(sp.csr_matrix(wide.X), y=wide.y, qid=wide.qid)
    res = solve(RankingProblem(wide, lam=0.5), "cutting_plane", tol=1e-8)
    assert res.status == "optimal" and res.certificate.kind == "pairwise dual bound"
    assert_agree(res, _clarabel(wide, 0.5))
    off = solve(RankingProblem(wide, lam=0.5), "cutting_plane", tol=1e-8, hessian_free=True)
    assert off.certificate.kind in NOT_PAIR_CD
    narrow = _narrow(0)
    assert solve(RankingProblem(narrow, lam=0.5), "cutting_plane", tol=1e-8).certificate.kind in NOT_PAIR_CD


@compiled
def test_after_a_newton_phase_that_ends_short_the_dual_phases_certify():
    """One query of 600 documents with 200 dense features, λ = 0.5: at the optimum 3,238 of its 120,000 pairs sit
    on the margin, none below. The Newton phase took hundreds of steps at one width and the planes after it stood
    still (``optimal_inaccurate`` at 1.7e-3). Ended after NEWTON_WIDTH_STEPS steps at one width, the threshold form's
    dual from bounds of its own certifies it (pair_cd would follow where it handed over)."""
    data = make_ranking(n_queries=1, docs_per_query=(600, 600), n_features=200, random_state=1)
    res = solve(RankingProblem(data, mu="balanced", lam=0.5), "cutting_plane", tol=1e-6)
    assert res.status == "optimal" and res.relative_gap <= 1e-6
    assert res.certificate.kind == "pairwise dual bound"  # the bound is the dual phases'


@pytest.mark.slow
@compiled
def test_a_long_width_with_fewer_band_pairs_than_documents_is_not_cut():
    """One query of 1,000 documents with 100 features, λ = 0.05: not separable, and its first width takes more than
    NEWTON_WIDTH_STEPS Newton steps with about 670 band pairs. Cut there, the dual phases after it did not converge
    (1.8e-2 at the 3,000-call limit); the Newton phase goes on while the band holds fewer pairs than documents and
    closes its own gap (what is left is the certificate's rounding allowance at this small objective)."""
    data = make_ranking(n_queries=1, docs_per_query=(1000, 1000), n_features=100, random_state=1)
    with warnings.catch_warnings():  # the allowance is above tol: optimal_inaccurate
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", tol=1e-6)
    assert res.extras["pairfree_relative_gap"] <= 1e-6
    assert res.relative_gap <= 1e-5


@compiled
@pytest.mark.parametrize("lam", [0.05, 5.0])
def test_pair_cd_on_a_dense_x_is_the_csr_run_and_brackets_clarabel(lam):
    """After a Newton phase that ended short, pair_cd may read a dense X (through a CSR copy): from the same bounds
    it gives the CSR oracle's run, and its bounds bracket Clarabel's optimum."""
    from cvxrank.native.pair_cd import pair_cd

    data = _narrow(3)
    dense = RankingData(data.X.toarray(), y=data.y, qid=data.qid)
    ref = 2 * lam * _clarabel(data, lam).qp_objective
    runs = []
    for d in (data, dense):
        oracle = PairFreeOracle.from_data(d, cost_table(d, mu="balanced"))
        upper = oracle(np.zeros(oracle.n_features)).loss  # F(0)
        runs.append(pair_cd(oracle, lam, upper=upper, lower=0.0, target=1e-9, max_calls=500))
    (_, F_csr, low_csr, *_), (_, F_dense, low_dense, *_) = runs
    assert F_dense == pytest.approx(F_csr, rel=1e-12) and low_dense == pytest.approx(low_csr, rel=1e-12)
    assert low_dense <= ref * (1 + 1e-9) and F_dense >= ref * (1 - 1e-9)
    assert low_dense > 0.5 * ref  # (it ran: from a lower bound of 0)


@compiled
def test_by_default_the_planes_go_first_and_pair_cd_takes_over_when_they_lag(monkeypatch):
    """``pair_cd=None`` on sparse data with many features: the planes first, at most PAIR_CD_PLANES of them. At a
    large λ they certify alone; at a small one pair_cd takes over once they are above PAIR_CD_GAP after
    PAIR_CD_AFTER calls, above PAIR_CD_EARLY_GAP after PAIR_CD_EARLY, or above the target after PAIR_CD_LATEST
    calls. Every result is Clarabel's."""
    import importlib

    module = importlib.import_module("cvxrank.native.cutting_plane")  # (the package exports a function of that name)

    wide = make_ranking(n_queries=4, docs_per_query=(6, 10), n_features=2500, density=0.01, random_state=0)
    wide = RankingData(sp.csr_matrix(wide.X), y=wide.y, qid=wide.qid)

    def planes_then_pairs(res):  # the planes' rows before pair_cd's first (its rows carry a band size)
        phase = res.history["band"].notna().to_numpy() if "band" in res.history else np.zeros(len(res.history), bool)
        return res.history[~phase], res.history[phase]

    large = solve(RankingProblem(wide, mu="balanced", lam=50.0), "cutting_plane", tol=1e-8)
    assert large.status == "optimal" and large.certificate.kind == "cutting-plane bound"
    assert planes_then_pairs(large)[1].empty
    assert_agree(large, _clarabel(wide, 50.0))

    small = solve(RankingProblem(wide, mu="balanced", lam=0.5), "cutting_plane", tol=1e-8)
    assert small.status == "optimal" and small.certificate.kind == "pairwise dual bound"
    planes, pairs = planes_then_pairs(small)
    before = planes[planes.index < pairs.index[0]]
    assert before["oracle_calls"].max() >= module.PAIR_CD_AFTER
    assert before["relative_gap"].min() > module.PAIR_CD_GAP
    assert before["relative_gap"].iloc[module.PAIR_CD_EARLY - 1] <= module.PAIR_CD_EARLY_GAP  # (not plainly far off)
    assert_agree(small, _clarabel(wide, 0.5))

    far = solve(RankingProblem(wide, mu="balanced", lam=5.0), "cutting_plane", tol=1e-8)  # plainly far off at 8
    assert far.status == "optimal" and far.certificate.kind == "pairwise dual bound"
    planes, pairs = planes_then_pairs(far)
    before = planes[planes.index < pairs.index[0]]
    assert before["oracle_calls"].max() == module.PAIR_CD_EARLY
    assert before["relative_gap"].iloc[-1] > module.PAIR_CD_EARLY_GAP
    assert_agree(far, _clarabel(wide, 5.0))

    monkeypatch.setattr(module, "PAIR_CD_GAP", 1.0)  # never lagging by their gap: the planes until PAIR_CD_LATEST
    monkeypatch.setattr(module, "PAIR_CD_LATEST", 40)
    late = solve(RankingProblem(wide, mu="balanced", lam=0.5), "cutting_plane", tol=1e-8)
    planes, pairs = planes_then_pairs(late)
    before = planes[planes.index < pairs.index[0]]
    assert before["oracle_calls"].max() >= 40 and before["relative_gap"].min() > 1e-8
    assert planes["planes"].max() <= module.PAIR_CD_PLANES
    assert late.status == "optimal" and late.certificate.kind == "pairwise dual bound"
    assert_agree(late, small)


@compiled
def test_over_the_memory_budget_the_planes_go_on(monkeypatch):
    """The pairs would not fit (their bytes made larger than any budget): the planes certify instead."""
    import cvxrank.native.pair_cd as module

    monkeypatch.setattr(module, "pair_cd_bytes", lambda *args: 1 << 62)
    res = solve(RankingProblem(_wide(5), lam=0.5), "cutting_plane", tol=1e-8, pair_cd=True)
    assert res.status == "optimal" and res.certificate.kind in NOT_PAIR_CD



@pytest.mark.parametrize("seed", [0, 1, 2])
def test_primal_rounding_of_the_live_pairs_holds_against_exact_arithmetic(seed):
    """The pair-free objective as the oracle sums it (``W + Σ_d v_d (s_d − s_{q0})``, shifted by each query's lowest
    score), against exact rational arithmetic on explicit pairs, near a point with most pairs above the margin and a
    document in each query scaled a thousand times down the ranking (the shift's size): within the allowance that
    charges only the pairs the oracle lists as possibly live, itself far below the one that charges every pair."""
    from cvxrank import rounding

    rng = np.random.default_rng(seed)
    m, n, lam = 36, 5, 0.37
    X = rng.standard_normal((m, n)) * 10.0 ** rng.integers(-3, 4, n)
    w = rng.standard_normal(n) / np.abs(X).max(axis=0)
    qid = np.arange(m) // 12
    outliers = np.array([np.argmin(np.where(qid == q, X @ w, np.inf)) for q in range(3)])
    X[outliers] *= 1000.0  # each query's lowest-scored document, far lower
    s = X @ w
    y = np.empty(m, dtype=np.int64)
    for q in range(3):  # grades by score, so most pairs are in order
        at = np.flatnonzero(qid == q)
        y[at[np.argsort(s[at])]] = np.arange(at.size) * 3 // at.size
    data = RankingData(X, y=y, qid=qid)
    problem = RankingProblem(data, mu="balanced", lam=lam)
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    pairs = make_pairs(data)
    margins = pairs.margins(w)
    w = w * 1.2 / np.quantile(margins[margins > 0], 0.2)  # a fifth of the ordered pairs below the margin
    computed = lam * float(w @ w) + oracle(w, counts=False).loss
    G = oracle._G
    c = oracle._flat[(oracle._qc[pairs.better] * G + oracle._gc[pairs.better]) * G + oracle._gc[pairs.worse]]
    wf = [Fraction(float(v)) for v in w]
    exact = Fraction(float(lam)) * sum(v * v for v in wf)
    for b, v, weight in zip(pairs.better, pairs.worse, c):
        margin = sum((Fraction(float(X[b, j])) - Fraction(float(X[v, j]))) * wf[j] for j in range(n))
        exact += Fraction(float(weight)) * max(Fraction(0), 1 - margin)

    def live(slack):
        return oracle.live_weights(w, slack) / (2 * lam)

    bound = 2 * lam * rounding.primal_rounding(problem, w, live=live)
    assert abs(Fraction(computed) - exact) <= Fraction(bound)
    assert bound < 0.5 * 2 * lam * rounding.primal_rounding(problem, w)
    # the listed weights cover every pair whose computed or exact hinge is not 0
    t = rounding.abs_scores(problem, w)
    slack = 2 * float(np.max(rounding._gammas(rounding._row_terms(X) + rounding.SLACK) * (t + 1)))
    near = pairs.margins(w) < 1 + slack
    listed = live(slack) * (2 * lam)
    need = np.bincount(pairs.better[near], c[near], m) + np.bincount(pairs.worse[near], c[near], m)
    assert np.all(listed >= need) and near.sum() < 0.5 * pairs.n_pairs

@pytest.mark.parametrize("seed", [0, 1])
def test_primal_rounding_of_a_sparse_row_counts_its_entries(seed):
    """The pair-free objective as the oracle sums it, against exact rational arithmetic on explicit pairs, on sparse
    rows of three entries among 300 features with magnitudes 1e-6..1e6: within the allowance, whose score term
    counts a row's entries (γ_19), not the features (γ_316)."""
    from cvxrank import rounding

    rng = np.random.default_rng(seed)
    m, n = 24, 300
    rows = np.repeat(np.arange(m), 3)
    X = sp.csr_matrix((rng.standard_normal(3 * m) * 10.0 ** rng.integers(-6, 7, 3 * m),
                       (rows, rng.integers(0, n, 3 * m))), shape=(m, n))
    X.sum_duplicates()  # older scipy keeps a repeated (row, column) as two stored entries: two terms
    data = RankingData(X, y=rng.integers(0, 3, m), qid=np.arange(m) // 8)
    problem = RankingProblem(data, mu="balanced", lam=0.37)
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    w = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
    computed = 0.37 * float(w @ w) + oracle(w, counts=False).loss
    pairs = make_pairs(data)
    Xf = X.toarray()
    weights = pair_weights(pairs, mu="balanced")
    wf = [Fraction(float(v)) for v in w]
    exact = Fraction(0.37) * sum(v * v for v in wf)
    for b, v, c in zip(pairs.better, pairs.worse, weights):
        margin = sum((Fraction(float(Xf[b, j])) - Fraction(float(Xf[v, j]))) * wf[j] for j in np.flatnonzero(
            (Xf[b] != 0) | (Xf[v] != 0)))
        exact += Fraction(float(c)) * max(Fraction(0), 1 - margin)
    bound = 2 * 0.37 * rounding.primal_rounding(problem, w)
    assert abs(Fraction(computed) - exact) <= Fraction(bound)
    # the score term with γ_{n+16} alone would exceed the whole allowance; a dense X counts the same entries
    t = rounding.abs_scores(problem, w)
    W, reach = rounding._document_weights(problem)
    assert bound < 2 * 0.37 * float(np.sum(W * rounding.gamma(n + rounding.SLACK) * (t + reach)))
    dense = RankingProblem(RankingData(Xf, y=data.y, qid=data.qid), mu="balanced", lam=0.37)
    assert rounding.primal_rounding(dense, w) == pytest.approx(bound / (2 * 0.37), rel=1e-12)


def test_a_pair_free_objective_is_bounded_pair_free_when_the_problem_holds_its_pairs(monkeypatch):
    """A problem whose pairs were formed before the solve: the pair-free solver's ``L`` is still the oracle's sum per
    document, shifted by each query's lowest score (here a document far below the others, so the shifted terms are
    large), and its allowance is the pair-free one (``pair_free=True``); the pairs' own bound, which the certificate
    used for it before, is below that sum's actual error."""
    from cvxrank import rounding

    seen = record_finish(monkeypatch)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((160, 2))
    y = rng.integers(1, 4, 160)
    qid = np.arange(160) // 40
    X[::40] = [-3e6, 0.0]  # each query's first document, far lowest
    y[::40] = 0
    data = RankingData(X, y=y, qid=qid)
    problem = RankingProblem(data, lam=0.5)
    pairs = problem.pairs  # formed before the solve
    res = solve(problem, "cutting_plane", tol=1e-6)
    report, w = seen[-1][2], res.w
    wf = [Fraction(float(v)) for v in w]
    scores = [sum(Fraction(float(X[d, j])) * wf[j] for j in range(2)) for d in range(X.shape[0])]
    exact = Fraction(0.5) * sum(v * v for v in wf)
    for b, v, c in zip(pairs.better, pairs.worse, problem.weights):
        exact += Fraction(float(c)) * max(Fraction(0), 1 - (scores[b] - scores[v]))
    error = abs(Fraction(report.objective_L) - exact)
    oracle = PairFreeOracle.from_data(data, cost_table(data))

    def live(slack):
        return oracle.live_weights(w, slack) / (2 * problem.lam)

    allowance = rounding.primal_rounding(problem, w, live=live, terms=report.objective_terms, pair_free=True)
    assert report.primal_rounding == allowance
    assert error <= Fraction(2 * problem.lam * allowance)
    assert Fraction(2 * problem.lam * rounding.primal_rounding(problem, w)) < error  # the pairs' own bound
