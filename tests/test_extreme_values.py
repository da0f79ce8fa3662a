"""Extreme values where a user meets them: tolerances, feature scales, variant numbers and bounds.

Each case was once accepted and ended meaninglessly (an "optimal" that certified nothing, a NaN deep
in a solver, LAPACK noise on stdout); each is now refused in one line naming what to change, or
handled exactly.
"""

import warnings

import pytest

import cvxrank as cr
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError


@pytest.fixture(scope="module")
def problem():
    return cr.RankingProblem(cr.make_ranking(n_queries=3, n_features=3, random_state=0), lam=0.5)


# -- tolerances ---------------------------------------------------------------------------
@pytest.mark.parametrize("tol", [1e-300, 1e-16, 5e-324])
def test_a_tolerance_no_float64_gap_can_certify_is_refused_with_the_reason(problem, tol):
    with pytest.raises(ValidationError, match=r"tol must be a number in \[1e-15, 1\) \(below about 4.4 float64 "
                                              "epsilons no relative duality gap can be certified\\)"):
        cr.solve(problem, "clarabel", tol=tol)


def test_the_smallest_tolerance_is_accepted_and_judged_honestly(problem):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        res = cr.solve(problem, "clarabel", tol=1e-15)
    # "optimal" only with a certified gap within it; anything else says so
    assert res.relative_gap <= 1e-15 if res.status == "optimal" else res.status != "optimal"
