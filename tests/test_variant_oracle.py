"""The variants' pair-free oracle (margins per grade pair, squared hinge) against pairs written out by hand."""

import numpy as np
import pytest

from cvxrank.exceptions import ValidationError
from cvxrank.native import cost_table
from cvxrank.native.variant_oracle import VariantOracle, margin_table
from cvxrank.problem import RankingProblem
from tests.conftest import brute_force_pairs
from tests.test_native_oracle import random_instance

MARGINS = (None, "grade_difference", "gain_difference")
CASES = [pytest.param(seed, integer, sparse, margin,
                      id=f"seed{seed}-{'int' if integer else 'float'}{'-sparse' if sparse else ''}-{margin}")
         for seed in range(4) for integer in (False, True) for sparse in (False, True) for margin in MARGINS]


def instance(seed, integer, sparse, margin):
    data, _, tau, _, w = random_instance(seed, integer=integer, sparse=sparse)
    mu = "balanced" if seed % 2 else None
    D, c, m = brute_force_pairs(data, tau=tau, mu=mu, margin=margin)
    oracle = VariantOracle.from_data(data, cost_table(data, costs=RankingProblem(data, tau=tau, mu=mu).costs),
                                     margin=margin)
    return data, oracle, D, c, m, w


@pytest.mark.parametrize("seed,integer,sparse,margin", CASES)
def test_squared_hinge_matches_the_pairs(seed, integer, sparse, margin):
    data, oracle, D, c, m, w = instance(seed, integer, sparse, margin)
    t = m - D @ w
    tp = np.maximum(t, 0.0)
    r = oracle.squared_hinge(w, hessian=True)
    scale = max(1.0, float(c @ tp ** 2))
    assert abs(r.loss - float(c @ tp ** 2)) <= 1e-12 * scale
    assert abs(r.linear - float((c * m) @ tp)) <= 1e-12 * scale
    assert r.n_violated == int(np.count_nonzero(t > 0))
    X = data.X
    np.testing.assert_allclose(X.T @ r.score_gradient, -2.0 * D.T @ (c * tp), atol=1e-10 * scale)
    u = np.random.default_rng(seed).standard_normal(w.size)
    np.testing.assert_allclose(X.T @ r.hessian_product(X @ u), 2.0 * D.T @ (c * (t > 0) * (D @ u)),
                               atol=1e-10 * scale * max(1.0, np.abs(u).max()))


@pytest.mark.parametrize("seed,integer,sparse,margin", CASES)
def test_hinge_with_margins_matches_the_pairs(seed, integer, sparse, margin):
    data, oracle, D, c, m, w = instance(seed, integer, sparse, margin)
    t = m - D @ w
    r = oracle(w)
    scale = max(1.0, float(c @ np.abs(t)))
    assert abs(r.loss - float(c @ np.maximum(t, 0.0))) <= 1e-12 * scale
    assert abs(r.violated_weight - float((c * m) @ (t > 0))) <= 1e-12 * scale
    np.testing.assert_allclose(r.gradient, -D.T @ (c * (t > 0)), atol=1e-10 * scale)
    assert r.n_violated == int(np.count_nonzero(t > 0))
    # the plane is a minorant of the loss everywhere (the cutting plane's lower bound rests on it)
    for v in np.random.default_rng(seed).standard_normal((5, w.size)):
        assert r.violated_weight + r.gradient @ v <= float(c @ np.maximum(m - D @ v, 0.0)) + 1e-9 * scale


def test_margin_one_is_the_papers_oracle():
    data, oracle, D, c, m, w = instance(5, False, False, None)
    from cvxrank.native import PairFreeOracle

    base = PairFreeOracle.from_data(data, cost_table(data))
    one = VariantOracle.from_data(data, cost_table(data))
    a, b = base(w), one(w)
    assert a.loss == pytest.approx(b.loss, rel=1e-13) and a.violated_weight == pytest.approx(b.violated_weight)
    np.testing.assert_allclose(a.gradient, b.gradient, atol=1e-12)


def test_margin_tables_and_refusals():
    assert margin_table([0, 2, 3], "gain_difference")[2, 0] == 7.0
    assert margin_table([1, 2], None).tolist() == [[0.0, 0.0], [1.0, 0.0]]
    with pytest.raises(ValidationError, match="per-pair margins need the pairs"):
        margin_table([0, 1], np.ones(3))
    with pytest.raises(ValidationError, match="positive and finite"):
        VariantOracle(np.zeros((2, 1)), [0, 0], [0, 1], np.ones((1, 2, 2)), margins=[[0, 0], [0, 0]])
