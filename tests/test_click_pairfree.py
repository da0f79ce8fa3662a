"""Pair-free training on click logs: costs that factor per document (preference groups).

The oracle of ``cvxrank.native.document_oracle`` against the explicit merged pairs of
``click_pairs(log, "propensity")``, and pair-free solves through the one door against Clarabel on
those pairs, within the certified bounds.
"""

import numpy as np
import pandas as pd
import pytest

import cvxrank as cr
from cvxrank._memory import MemoryBudgetError, set_memory_budget
from cvxrank.clicks import ClickLog, click_pairs, click_problem, make_clicks
from cvxrank.clicks.pairs import click_groups
from cvxrank.data import RankingData
from cvxrank.exceptions import SolverNotAvailableError, ValidationError
from cvxrank.native import kernels
from cvxrank.native.document_oracle import DocumentOracle
from cvxrank.preference_groups import PreferenceGroups
from cvxrank.solvers.registry import choose_solver
from cvxrank.variants import Variant

SQUARED = Variant(loss="squared_hinge")


def _two_logs(data, seed):
    """Two simulated logs of the same documents with different shown lists (top 4 and top 7): a document is
    then shown, and clicked, in several groups of its query, so merged pairs span groups."""
    a = make_clicks(data, eta=1.0, n_sessions=150, top_k=4, random_state=seed).to_frame()
    b = make_clicks(data, eta=1.0, n_sessions=150, top_k=7, random_state=seed + 1).to_frame()
    b["session"] += a["session"].max() + 1
    return ClickLog.from_frame(pd.concat([a, b], ignore_index=True), data, propensity="propensity")


@pytest.fixture(scope="module")
def log():
    data = cr.make_ranking(n_queries=6, docs_per_query=(5, 10), n_features=3, random_state=3)
    return _two_logs(data, 5)


@pytest.fixture(scope="module")
def grid_log():
    """Integer features: with w = (1, 0, 0) and (1, 1, 0) scores tie and differ by exactly 1 (and by 1 ± 1 ulp
    with the third feature's 1e-16 scale)."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(40, 3)).astype(np.float64)
    X[:, 2] = rng.integers(-1, 2, size=40) * np.spacing(1.0)
    data = RankingData(X, rng.integers(0, 3, size=40), qid=np.repeat(np.arange(4), 10))
    return _two_logs(data, 11)


def _explicit(log, clip=None):
    pairs, c = click_pairs(log, "propensity", clip=clip)
    return pairs, c


def _pairs_values(pairs, c, w):
    """Hinge, squared hinge, their gradients in w and the violated weight, from the explicit pairs."""
    X = pairs.data.X
    m = pairs.margins(w)
    t = np.where(m < 1, 1.0 - m, 0.0)
    v = -(pairs.P.T @ (c * (m < 1)))
    g2 = -2.0 * (pairs.P.T @ (c * t))
    return float(c @ t), X.T @ v, float(c[m < 1].sum()), float(c @ (t * t)), X.T @ g2, m


def test_groups_are_the_merged_click_pairs(log):
    for clip in (None, 3.0):
        groups = click_groups(log, clip=clip)
        assert groups.n_groups > log.documents.n_queries  # several shown lists per query
        pairs, c = _explicit(log, clip)
        formed, weights = groups.pairs()
        assert groups.n_pairs == pairs.n_pairs == formed.n_pairs
        assert groups.n_group_pairs > groups.n_pairs  # some pairs of two groups were merged
        np.testing.assert_array_equal(formed.better, pairs.better)
        np.testing.assert_array_equal(formed.worse, pairs.worse)
        np.testing.assert_allclose(weights, c, rtol=1e-13)
        np.testing.assert_allclose(groups.weight_of(better=pairs.better, worse=pairs.worse), c, rtol=1e-13)


#: The boundaries of the sorted groups by the compiled sweep and by numpy (the same integers).
KERNELS = ["numpy", pytest.param("compiled", marks=pytest.mark.skipif(not kernels.COMPILED, reason="not built"))]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("fixture, ws", [
    ("log", [np.array([0.3, -0.7, 1.1]), np.array([2.0, 0.5, -1.0]), np.zeros(3)]),
    ("grid_log", [np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0]),
                  np.array([0.5, 0.5, 0.0])]),
])
def test_oracle_is_the_explicit_pairs(request, fixture, ws, kernel):
    log = request.getfixturevalue(fixture)
    groups = click_groups(log, clip=4.0)
    pairs, c = _explicit(log, 4.0)
    oracle = DocumentOracle.from_groups(groups, kernel=kernel)
    rng = np.random.default_rng(1)
    boundary = ties = 0
    for w in ws:
        loss, grad, W, sq, grad2, m = _pairs_values(pairs, c, w)
        boundary += int(np.sum(m == 1.0))
        ties += int(np.sum(m == 0.0))
        r = oracle(w)
        scale = float(c.sum()) * (1.0 + float(np.abs(m).max()))
        assert r.loss == pytest.approx(loss, rel=1e-12, abs=1e-12 * scale)
        assert r.violated_weight == pytest.approx(W, rel=1e-12)
        np.testing.assert_allclose(r.gradient, grad, rtol=1e-12, atol=1e-12 * scale)
        q = oracle.squared_hinge(w, hessian=True)
        assert q.loss == pytest.approx(sq, rel=1e-12, abs=1e-12 * scale ** 2)
        assert q.linear == pytest.approx(loss, rel=1e-12, abs=1e-12 * scale)
        np.testing.assert_allclose(oracle.gradient(q.score_gradient), grad2, rtol=1e-12, atol=1e-12 * scale ** 2)
        u = rng.normal(size=log.documents.n_documents)
        Hu = 2.0 * (pairs.P.T @ ((c * (m < 1)) * (pairs.P @ u)))
        np.testing.assert_allclose(oracle.gradient(q.hessian_product(u[oracle.documents])),
                                   log.documents.X.T @ Hu, rtol=1e-11, atol=1e-11 * scale)
        for delta in (0.5, 0.25):  # the Huber-smoothed hinge of the Newton phase and its dual point
            sm = oracle.smoothed_scores(oracle.scores(w), delta)
            r = 1.0 - m
            V, B = m < 1.0 - delta, (m >= 1.0 - delta) & (m < 1.0)
            alpha = c * np.clip(r / delta, 0.0, 1.0)
            assert sm.loss == pytest.approx(loss, rel=1e-12, abs=1e-12 * scale)
            assert sm.smoothed == pytest.approx(c[V] @ (r[V] - delta / 2) + c[B] @ r[B] ** 2 / (2 * delta),
                                                rel=1e-12, abs=1e-12 * scale)
            assert sm.alpha_sum == pytest.approx(alpha.sum(), rel=1e-12)
            assert sm.band >= int(B.sum()) and (sm.band > 0) == bool(B.any())  # group form: merged pairs count per group
            np.testing.assert_allclose(oracle.gradient(sm.score_alpha), pairs.rmatvec(alpha), rtol=1e-12,
                                       atol=1e-12 * scale)
            HBu = pairs.P.T @ ((c * B / delta) * (pairs.P @ u))
            np.testing.assert_allclose(oracle.gradient(sm.hessian_product(u[oracle.documents])),
                                       log.documents.X.T @ HBu, rtol=1e-11, atol=1e-11 * scale / delta)
    if fixture == "grid_log":
        assert boundary > 0 and ties > 0  # the exact test was exercised at margins of exactly 1 and 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_boundary_within_an_ulp(kernel):
    """Margins of 1 - ulp, 1 and 1 + ulp: violated, not, not (the explicit pairs' test, bit for bit)."""
    X = np.array([[0.0], [1.0], [np.nextafter(1.0, 0.0)], [np.nextafter(1.0, 2.0)], [2.0]])
    docs = RankingData(X, [0, 0, 0, 0, 0], qid=[1, 1, 1, 1, 1])
    groups = PreferenceGroups(docs, group=[0] * 5, document=[0, 1, 2, 3, 4], weight=[1.0, 2.0, 0.0, 3.0, 0.5])
    pairs, c = groups.pairs()
    oracle = DocumentOracle.from_groups(groups, kernel=kernel)
    for w in (np.array([1.0]), np.array([-1.0]), np.array([0.5])):
        loss, grad, W, sq, grad2, m = _pairs_values(pairs, c, w)
        if abs(w[0]) == 1.0:
            assert np.any(m == 1.0) and np.any((m < 1.0) & (m > 0.999)) and np.any((m > 1.0) & (m < 1.001))
        r = oracle(w)
        assert r.violated_weight == W and r.loss == pytest.approx(loss, rel=1e-14, abs=1e-14)
        np.testing.assert_allclose(r.gradient, grad, rtol=1e-14, atol=1e-14)
        assert oracle.squared_hinge(w).loss == pytest.approx(sq, rel=1e-14, abs=1e-14)


@pytest.mark.skipif(not kernels.COMPILED, reason="the compiled sweeps were not built")
@pytest.mark.parametrize("fixture", ["log", "grid_log"])
def test_compiled_and_numpy_boundaries_give_the_same_bits(request, fixture):
    """Every result of the oracle is the same float64 value whichever path found the boundaries (ties and
    differences of exactly 1 in grid_log)."""
    groups = click_groups(request.getfixturevalue(fixture), clip=4.0)
    fast, slow = (DocumentOracle.from_groups(groups, kernel=k) for k in ("compiled", "numpy"))
    rng = np.random.default_rng(2)
    for w in (np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0]), rng.normal(size=3), np.zeros(3)):
        s = fast.scores(w)
        u = rng.normal(size=s.shape[0])
        a, b = fast.evaluate_scores(s), slow.evaluate_scores(s)
        assert (a.loss, a.violated_weight, a.n_violated, a.rounding) == (b.loss, b.violated_weight, b.n_violated,
                                                                         b.rounding)
        np.testing.assert_array_equal(a.score_gradient, b.score_gradient)
        a, b = fast.squared_hinge_scores(s, hessian=True), slow.squared_hinge_scores(s, hessian=True)
        assert (a.loss, a.linear) == (b.loss, b.linear)
        np.testing.assert_array_equal(a.score_gradient, b.score_gradient)
        np.testing.assert_array_equal(a.hessian_product(u), b.hessian_product(u))
        for delta in (0.5, 0.1):
            a, b = fast.smoothed_scores(s, delta), slow.smoothed_scores(s, delta)
            assert (a.loss, a.smoothed, a.alpha_sum, a.alpha_square, a.band) == (b.loss, b.smoothed, b.alpha_sum,
                                                                                  b.alpha_square, b.band)
            np.testing.assert_array_equal(a.score_alpha, b.score_alpha)
            np.testing.assert_array_equal(a.hessian_product(u), b.hessian_product(u))
            np.testing.assert_array_equal(a.inner_scores(), b.inner_scores())
            for x, y in zip(a.band_pairs(0.3), b.band_pairs(0.3)):
                np.testing.assert_array_equal(x, y)
    with pytest.raises(ValidationError, match="kernel must be one of"):
        cr.solve(click_problem(request.getfixturevalue(fixture), "propensity"), "cutting_plane", oracle_kernel="gpu")


def test_problem_forms_no_pair_until_asked(log):
    problem = click_problem(log, "propensity", lam=0.1)
    assert problem.groups is not None and not problem.has_pairs and problem.source == "preferences"
    pairs, c = _explicit(log)
    assert problem.n_pairs == pairs.n_pairs and not problem.has_pairs
    assert problem.with_lam(0.2).groups is problem.groups
    np.testing.assert_allclose(problem.C, c / 0.2, rtol=1e-13)  # Theorem 1: C_i = c_i / (2λ); the pairs formed now
    assert problem.has_pairs
    explicit = click_problem(log, "propensity", lam=0.1, merge=False)
    assert explicit.groups is None and explicit.has_pairs
    with pytest.raises(ValidationError, match="carry their own costs"):
        cr.RankingProblem(click_groups(log), mu="balanced")


@pytest.mark.parametrize("solver, variant, options", [("cutting_plane", None, {}),
                                                      ("cutting_plane", None, {"newton_gap": None}),
                                                      ("truncated_newton", SQUARED, {})])
@pytest.mark.parametrize("lam", [0.05, 5.0])
def test_pairfree_training_is_the_explicit_solve(log, solver, variant, options, lam):
    problem = click_problem(log, "propensity", lam=lam, clip=5.0, variant=variant)
    a = cr.solve(problem, solver, tol=1e-7, **options)
    assert not problem.has_pairs  # the pair-free solve formed none
    pairs, c = _explicit(log, 5.0)
    b = cr.solve(cr.RankingProblem(pairs, weights=c, lam=lam, variant=variant), "clarabel")
    assert a.status == "optimal" and b.status == "optimal"
    assert a.extras["oracle"] == "preference groups" and a.extras["n_pairs"] == pairs.n_pairs
    assert abs(a.objective - b.objective) <= a.gap_L + b.gap_L
    assert np.abs(a.w - b.w).max() <= a.distance_bound + b.distance_bound
    # every lower bound the solver recorded lies below the optimum (which Clarabel's objective bounds above)
    assert a.history["dual_objective"].max() <= b.objective * (1.0 + 1e-12)
    assert a.objective - a.gap_L <= b.objective * (1.0 + 1e-12)


def test_warm_start_and_work_limit(log):
    problem = click_problem(log, "propensity", lam=0.5)
    cold = cr.solve(problem, "cutting_plane")
    warm = cr.solve(problem.with_lam(0.55), "cutting_plane", warm_start=cold.w)
    assert warm.status == "optimal"
    with pytest.warns(cr.InaccurateSolutionWarning):
        capped = cr.solve(problem, "cutting_plane", max_iter=2)
    assert capped.status == "user_limit" and capped.extras["oracle_calls"] <= 2


def test_the_door_routes_and_refuses(log, monkeypatch):
    problem = click_problem(log, "propensity", lam=0.1, variant=Variant(loss="squared_hinge", l1=0.01))
    with pytest.raises(SolverNotAvailableError, match="'prox_newton' reads graded documents"):
        cr.solve(problem, "prox_newton")
    margins = click_problem(log, "propensity", lam=0.1, variant=Variant(margin="grade_difference"))
    with pytest.raises(ValidationError, match="margins 1 only"):
        cr.solve(margins, "cutting_plane")
    with pytest.raises(ValidationError, match="options of the graded pair-free oracle"):
        cr.solve(click_problem(log, "propensity"), "cutting_plane", oracle_threads=2)
    from cvxrank.native.cutting_plane import _solve as graded_backend

    with pytest.raises(ValidationError, match="through cvxrank.solve"):
        graded_backend(click_problem(log, "propensity"))
    from cvxrank.solvers import registry

    monkeypatch.setattr(registry, "AUTO_PAIRFREE_PAIRS", 10)
    assert choose_solver(click_problem(log, "propensity")) == "cutting_plane"
    assert choose_solver(click_problem(log, "propensity", variant=SQUARED)) == "truncated_newton"
    assert choose_solver(problem) == "clarabel"  # l1: no pair-free solver reads groups with it


def test_memory_is_checked_before_allocating(log):
    groups = click_groups(log)
    try:
        set_memory_budget(2_000)
        with pytest.raises(MemoryBudgetError, match="pair-free oracle"):
            DocumentOracle.from_groups(groups)
        with pytest.raises(MemoryBudgetError):
            click_groups(log)
    finally:
        set_memory_budget(None)


def test_bench_clicks_runs_end_to_end_and_refuses_bad_options(tmp_path, capsys):
    import json

    from cvxrank.cli import main

    out = tmp_path / "clicks.json"
    assert main(["bench", "clicks", "--instances", "hard", "--hard", "4,12,20,3,8", "--hard-sessions", "300",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "== hard:" in text and "explicit form:" in text and "target (clicks within 2x" in text
    rows = json.loads(out.read_text())["rows"]
    assert [r["solver"] for r in rows] == ["cutting_plane", "truncated_newton"]
    for r in rows:
        assert r["clicks_status"] == "optimal" and r["ratio"] == r["clicks_seconds"] / r["graded_seconds"]
        assert r["documents"] <= 4 * 8 and r["click_pairs"] > 0
    for argv, message in ((["--solvers", "prox_newton"], "--solvers takes any of cutting_plane,truncated_newton"),
                          (["--hard", "4,30,20,3,8"], "--hard must be Q,MIN,MAX,N,K"),
                          (["--sessions", "0"], "--sessions must be a positive integer")):
        assert main(["bench", "clicks", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and message in captured.err and captured.out == ""


def _merged(better, worse, weight, n):
    """Group-form pairs summed into one weight per (better, worse)."""
    key = better * n + worse
    keys, inverse = np.unique(key, return_inverse=True)
    return keys, np.bincount(inverse.ravel(), weights=weight)


def test_band_pairs_and_inner_sums_are_the_explicit_ones(log):
    groups = click_groups(log, clip=4.0)
    pairs, c = _explicit(log, 4.0)
    oracle = DocumentOracle.from_groups(groups)
    docs, n = oracle.documents, log.documents.n_documents
    for w in (np.array([0.3, -0.7, 1.1]), np.array([2.0, 0.5, -1.0])):
        m = pairs.margins(w)
        for delta in (0.5, 0.1):
            sm = oracle.smoothed_scores(oracle.scores(w), delta)
            V, B = m < 1.0 - delta, (m >= 1.0 - delta) & (m < 1.0)
            ib, iw, a = sm.band_pairs()
            assert ib.shape[0] == sm.band and np.all(a > 0)
            keys, weight = _merged(docs[ib], docs[iw], a, n)
            np.testing.assert_array_equal(keys, np.sort(pairs.better[B] * n + pairs.worse[B]))
            np.testing.assert_allclose(weight, c[B][np.argsort(pairs.better[B] * n + pairs.worse[B])], rtol=1e-13)
            assert sm.inner_weight == pytest.approx(c[V].sum(), rel=1e-13)
            np.testing.assert_allclose(oracle.gradient(sm.inner_scores()), pairs.rmatvec(c * V), rtol=1e-12,
                                       atol=1e-12 * float(c.sum()))
            ib, iw, a = sm.band_pairs(above=delta)  # and the pairs just above the margin
            keys, _ = _merged(docs[ib], docs[iw], a, n)
            wide = (m >= 1.0 - delta) & (m < 1.0 + delta)
            np.testing.assert_array_equal(keys, np.sort(pairs.better[wide] * n + pairs.worse[wide]))


@pytest.mark.parametrize("lam", [0.05, 5.0])
def test_band_finish_is_a_dual_point_and_closes_the_gap(log, lam):
    """At a point near the optimum the band is the set of pairs on the margin: the exact finish over it gives a lower
    bound below the optimum (Clarabel's objective bounds it above) and a w whose exact objective meets it."""
    from cvxrank.native.document_newton import _band_finish, _Point

    problem = click_problem(log, "propensity", lam=lam, clip=5.0)
    pairs, c = _explicit(log, 5.0)
    ref = cr.solve(cr.RankingProblem(pairs, weights=c, lam=lam), "clarabel")
    oracle = DocumentOracle.from_groups(problem.groups)
    point = _Point(oracle, lam, ref.w, 1e-3)
    assert point.k > 0
    w, L, u = _band_finish(oracle, lam, point)
    F = lam * float(w @ w) + oracle(w).loss
    assert L >= point.L - 1e-12 * abs(point.L)  # never below the evaluation's own dual point
    assert L <= ref.objective * (1.0 + 1e-12) + ref.gap_L
    assert F - L <= 1e-7 * F
    np.testing.assert_allclose(w, u / (2.0 * lam))


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_first_width_is_halved_until_its_band_fits_the_budget(log, kernel):
    """band_sizes counts the band of smoothed_scores at each width; the Newton phase starts at the widest halving of
    sqrt(gap) whose band fits its budget, so its first steps are exact, and it still ends certified."""
    from cvxrank.native.document_newton import document_newton

    lam = 0.1
    oracle = DocumentOracle.from_groups(click_groups(log, clip=5.0), kernel=kernel)
    w = np.array([0.3, -0.2, 0.5])
    s = oracle.scores(w)
    widths = [0.5, 0.2, 0.05, 1e-3]
    assert oracle.band_sizes(s, widths) == [oracle.smoothed_scores(s, d).band for d in widths]
    F = lam * float(w @ w) + oracle(w).loss
    full = oracle.band_sizes(s, [0.5])[0]
    budget = full // 4
    assert budget > 0
    _, F_best, lower, _, _, _, rows = document_newton(oracle, lam, w, upper=F, lower=0.0, target=1e-6, max_calls=200,
                                                     budget=budget)
    assert rows[0]["delta"] < 0.5 and rows[0]["band"] <= budget
    assert oracle.band_sizes(s, [2.0 * rows[0]["delta"]])[0] > budget  # the widest halving that fits
    assert (F_best - lower) <= 1e-6 * F_best


def test_certificate_reads_only_the_shown_rows_when_few_documents_were_shown():
    """A log shows a few documents of many: the rounding allowance reads only the rows in some pair (the
    others enter no pair), and the certificate still agrees with Clarabel on the explicit pairs."""
    from cvxrank.rounding import _member_rows, abs_scores

    data = cr.make_ranking(n_queries=12, docs_per_query=(30, 40), n_features=5, random_state=3)
    log = make_clicks(data, eta=1.0, n_sessions=600, top_k=3, random_state=4)
    problem = click_problem(log, "propensity", lam=0.5)
    rows = _member_rows(problem)
    assert rows is not None and rows.size < 0.5 * data.n_documents
    w = np.linspace(-1.0, 1.0, data.n_features)
    t = abs_scores(problem, w)
    assert np.array_equal(t[rows], np.abs(data.X[rows]) @ np.abs(w)) and not t[np.setdiff1d(
        np.arange(data.n_documents), rows)].any()
    native = cr.solve(problem, "cutting_plane")
    explicit = cr.solve(cr.RankingProblem(*click_pairs(log, "propensity")[:1], weights=click_pairs(
        log, "propensity")[1], lam=0.5), "clarabel")
    assert native.status == "optimal" and explicit.status == "optimal"
    assert abs(native.objective - explicit.objective) <= native.gap_L + explicit.gap_L
    assert np.abs(native.w - explicit.w).max() <= native.distance_bound + explicit.distance_bound


def test_the_click_oracle_keeps_a_small_dense_ish_x_dense(monkeypatch):
    """The click oracle stores the shown documents' rows as PairFreeOracle stores X (a sparse X with a quarter of its
    entries or more and 2^16 to 2^22 entries, dense), with the numbers of the CSR form."""
    import scipy.sparse as sp

    from cvxrank.native import oracle as oracle_module

    rng = np.random.default_rng(4)
    m, n = 1_600, 60
    X = sp.random(m, n, density=0.3, format="csr", random_state=rng)
    data = RankingData(X, rng.integers(0, 3, m), qid=np.arange(m) // 40)
    groups = click_groups(make_clicks(data, eta=1.0, n_sessions=3_000, top_k=40, random_state=4))
    kept = DocumentOracle.from_groups(groups)
    assert isinstance(kept.X, np.ndarray) and kept.X.shape[0] * n >= oracle_module.DENSE_MIN_ENTRIES
    monkeypatch.setattr(oracle_module, "DENSE_SHARE", 2.0)  # never dense: the CSR form
    as_given = DocumentOracle.from_groups(groups)
    assert sp.issparse(as_given.X)
    w = rng.normal(size=n)
    a, b = kept(w), as_given(w)
    assert a.loss == pytest.approx(b.loss, rel=1e-12) and a.violated_weight == pytest.approx(b.violated_weight)
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=1e-11, atol=1e-11 * np.abs(b.gradient).max())


def test_the_allowance_of_groups_counts_the_members_the_oracle_sums():
    """Three documents in 4,000 groups: the click oracle's sums run over 12,000 members, so the objective's rounding
    allowance counts them (``γ`` of the members and the groups, not of the three documents), and the oracle's float64
    loss is within it of the exact rational loss over the groups' pairs."""
    from fractions import Fraction

    from cvxrank import rounding

    X = np.array([[1.0, 0.3], [0.2, -0.7], [-0.4, 0.9]])
    data = RankingData(X, y=np.zeros(3, dtype=np.int64), qid=np.zeros(3, dtype=np.int64))
    k = 4000
    rng = np.random.default_rng(0)
    group, document = np.repeat(np.arange(k), 3), np.tile(np.arange(3), k)
    weight = rng.uniform(0.1, 2.0, 3 * k)
    groups = PreferenceGroups(data, group, document, weight)
    problem = cr.RankingProblem(groups, lam=0.5)
    w = np.array([0.8, -1.1])
    s = X @ w
    W = groups.document_weights() / (2 * problem.lam)
    summed = rounding.gamma(groups.n_members + groups.n_groups) * float(np.sum(W * (1.0 + s - s.min())))
    bound = rounding.primal_rounding(problem, w)
    assert bound >= summed > 500 * rounding.gamma(3 + 3 + rounding.SLACK) * float(np.sum(W * (1.0 + s - s.min())))
    computed = problem.lam * float(w @ w) + DocumentOracle.from_groups(groups).evaluate_scores(s).loss
    exact = Fraction(problem.lam) * sum(Fraction(float(v)) ** 2 for v in w)
    sf = [sum(Fraction(float(X[d, j])) * Fraction(float(w[j])) for j in range(2)) for d in range(3)]
    for g in range(k):  # the pairs (i, j) of a group at cost a_i: i above j by less than 1
        for a in range(3):
            for b in range(3):
                if a != b:
                    exact += Fraction(float(weight[3 * g + a])) * max(Fraction(0), 1 - (sf[a] - sf[b]))
    assert abs(Fraction(computed) - exact) <= Fraction(2 * problem.lam * bound)


def _nine_documents():
    """9 documents in 3 groups (a member of weight 0, a group of two): at λ = 0.5 and tol 1e-8 the smoothed Newton
    phase ends at a narrow width."""
    X = np.array([[-0.329, 0.502, 0.319, -0.549], [-1.068, 1.801, 1.787, -0.599], [-1.098, -0.355, -0.959, 0.489],
                  [0.683, -0.110, 0.076, 0.477], [1.319, -0.950, -1.149, -0.276], [0.857, 0.019, -0.132, 1.264],
                  [-0.659, 0.899, -0.778, 0.674], [0.091, 0.091, 1.486, 0.358], [-0.010, 0.692, 0.647, -0.468]])
    data = RankingData(X, np.array([3, 1, 4, 0, 1, 1, 0, 4, 3]), qid=np.array([-5] * 7 + [2, 2]))
    group = np.array([0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2])
    document = np.array([6, 1, 5, 0, 3, 2, 4, 5, 2, 8, 7])
    weight = np.array([0.1, 0.5, 3.0, 0.0, 0.1, 0.5, 3.0, 0.5, 1.0, 0.0, 0.5])
    return PreferenceGroups(data, group, document, weight)


def test_the_newton_phases_bound_on_groups_stays_below_the_optimum():
    """The Newton phase's bound is the dual value of one α of the box: it ends below the optimum (Clarabel's objective
    on the same problem bounds that above). The oracle's pair-free sums of α divide differences of prefix sums by the
    width, and at the narrow width of this solve they had put the bound 3e-8 above the optimum."""
    problem = cr.RankingProblem(_nine_documents(), lam=0.5)
    ref = cr.solve(problem, "clarabel")
    result = cr.solve(problem, "cutting_plane", tol=1e-8)
    assert result.status == "optimal" and result.certificate.kind == "band dual bound"
    assert result.lower_bound <= ref.objective
    assert result.objective - ref.objective <= 1e-8 * ref.objective + ref.gap_L


@pytest.mark.parametrize("delta", [1e-3, 1e-7])
def test_the_newton_points_bound_is_the_explicit_dual_value(delta):
    """At a point and a width, the bound the phase keeps is ``Σ α - ‖Σ α d‖² / (4λ)`` for
    ``α = a min(1, max(0, (1 - m)/δ))`` over the groups' pairs, formed here pair by pair. The point is the optimum
    shrunk by ``δ/2``: its pairs on the margin sit in the middle of the band."""
    from cvxrank.native.document_newton import _Point

    groups, lam = _nine_documents(), 0.5
    oracle = DocumentOracle.from_groups(groups)
    w = (1.0 - delta / 2.0) * cr.solve(cr.RankingProblem(groups, lam=lam), "clarabel").w
    X, s = groups.data.X, groups.data.X @ w
    alpha, rows = [], []
    for g in np.unique(groups.group):
        members = np.flatnonzero(groups.group == g)
        for i in members:
            for j in members:
                if i != j and groups.weight[i] > 0:
                    bi, wj = groups.document[i], groups.document[j]
                    alpha.append(groups.weight[i] * min(1.0, max(0.0, (1.0 - (s[bi] - s[wj])) / delta)))
                    rows.append(X[bi] - X[wj])
    alpha, D = np.array(alpha), np.array(rows)
    u = D.T @ alpha
    explicit = alpha.sum() - float(u @ u) / (4.0 * lam)
    point = _Point(oracle, lam, w, delta)
    L, u_point = point.bound()
    assert point.k > 0
    assert L == pytest.approx(explicit, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(u_point, u, rtol=1e-12, atol=1e-12)
