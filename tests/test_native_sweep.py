"""A seeded randomized sweep of tiny problems through the pair-free solver's door, each against Clarabel on the
lifted QP: every certified bound of one solver holds against the other's point, two optimal solutions agree within
their certificates, and no valid input ends in an exception. The data mix what breaks solvers: ties from rounding,
repeated documents, all-zero rows, single-grade queries, more features than documents, features scaled by 1e3 and
1e-3, float32, CSR; the options mix the phases a user can force."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.data import RankingData
from cvxrank.exceptions import InaccurateSolutionWarning
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import assert_agree

pytestmark = pytest.mark.slow

LAMS = (1e-4, 0.05, 0.5, 5.0, 500.0)
OPTIONS = ({}, {"newton_gap": None}, {"pair_cd": True}, {"pair_cd": True, "threshold": True},
           {"pair_cd": False, "threshold": False})


def _instance(seed):
    """A random problem and the options to solve it with, or None when its queries hold no pair."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 16, size=rng.integers(1, 6))
    m, n = int(sizes.sum()), int(rng.choice([1, 2, 3, 5, 12, 25, 40]))
    X = rng.standard_normal((m, n))
    if rng.random() < 0.3:
        X = np.round(X)  # ties
    if rng.random() < 0.2:
        X[rng.integers(m)] = 0.0
    if rng.random() < 0.2:
        X[1] = X[0]  # a repeated document
    if rng.random() < 0.2:
        X *= float(rng.choice([1e-3, 1e3]))
    y = rng.integers(0, int(rng.integers(2, 5)), size=m)
    qid = np.repeat(np.arange(sizes.shape[0]), sizes)
    if rng.random() < 0.2:
        y[qid == 0] = 0  # a query of one grade
    if not any(np.unique(y[qid == q]).shape[0] > 1 for q in range(sizes.shape[0])):
        return None
    dtype = np.float32 if rng.random() < 0.3 else np.float64
    csr = rng.random() < 0.5
    data = RankingData(sp.csr_matrix(X) if csr else X, y=y, qid=qid, dtype=dtype)
    options = dict(OPTIONS[int(rng.integers(len(OPTIONS)))])
    mu = "balanced" if rng.random() < 0.5 else None
    return RankingProblem(data, mu=mu, lam=float(rng.choice(LAMS))), options


def test_every_bound_holds_against_clarabel_and_most_solves_certify():
    solved, short = 0, []
    for seed in range(400):
        made = _instance(seed)
        if made is None:
            continue
        problem, options = made
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
            res = solve(problem, "cutting_plane", tol=1e-6, **options)
            ref = solve(problem, "clarabel", tol=1e-8)
        solved += 1
        assert res.status in ("optimal", "optimal_inaccurate", "user_limit"), (seed, res)
        rounding = 1e-9 * max(abs(res.objective), abs(ref.objective)) + 1e-12
        # either solution's objective is L at its point (an upper bound on L*); either lower bound is proved
        assert res.lower_bound <= ref.objective + rounding, (seed, res, ref)
        assert ref.lower_bound <= res.objective + rounding, (seed, res, ref)
        assert res.objective == pytest.approx(problem.hinge_objective(res.w), rel=1e-9, abs=1e-12), seed
        if res.status == "optimal" and ref.status == "optimal":
            assert_agree(res, ref)
        elif res.status != "optimal":
            short.append((seed, res.status, options))
    # (on 2026-11-28: 6 of 378 short of 1e-6, every one at λ = 1e-4 or on features scaled by 1e3, where the
    # planes' master problem loses its precision; 9 before the planes' finish on a stall)
    assert solved >= 350 and len(short) <= 0.05 * solved, (solved, short)
