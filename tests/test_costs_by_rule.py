"""Costs and margins per query or by a function of the pairs, tau="estimate" on a problem, short reprs.

The data set is small enough to write its pairs out by hand: the expected per-pair vectors below
are typed in, not computed by cvxrank.
"""

import json

import cvxpy as cp
import numpy as np
import pytest

import cvxrank as cr
from cvxrank.costs import Costs, abbreviate, check_lam, estimate_tau
from cvxrank.data import RankingData
from cvxrank.estimators import CostSensitiveRankSVM, RankSVM, load_model, save_model
from cvxrank.exceptions import SolverNotAvailableError, ValidationError
from cvxrank.pairs import make_pairs
from cvxrank.variants import Variant

X = np.array([[1.0, 0.5], [0.2, 1.0], [-0.3, 0.1], [0.8, -0.4], [0.1, 0.3], [0.5, 0.9], [0.0, -1.0],
              [0.7, 0.2]])
Y = [2, 1, 0, 1, 0, 1, 0, 2]
QID = [10, 10, 10, 20, 20, 20, 30, 30]

# The pairs by hand, in cvxrank's pair order: by query, then the better document (grade descending,
# ties by row), then the worse one. Query 20 has two grade-1 documents (rows 3 and 5) over row 4.
BETTER = [0, 0, 1, 3, 5, 7]
WORSE = [1, 2, 2, 4, 4, 6]
HIGHER = [2, 2, 1, 1, 1, 2]
LOWER = [1, 0, 0, 0, 0, 0]
QUERY_OF_PAIR = [10, 10, 10, 20, 20, 30]

QUERY_MARGIN = {10: 1.0, 20: 2.0, 30: 0.5}
MARGINS_BY_HAND = [1.0, 1.0, 1.0, 2.0, 2.0, 0.5]


def cost_rule(higher, lower, qid, better, worse):
    """The grade gap, doubled in query 20."""
    return (higher - lower) * np.where(qid == 20, 2.0, 1.0)


WEIGHTS_BY_HAND = [1.0, 2.0, 1.0, 2.0, 2.0, 2.0]
LAM = 0.1


@pytest.fixture(scope="module")
def data():
    return RankingData(X, Y, qid=QID)


def test_pair_order_is_the_documented_one(data):
    pairs = make_pairs(data)
    assert pairs.better.tolist() == BETTER and pairs.worse.tolist() == WORSE
    assert pairs.pair_type.tolist() == [list(t) for t in zip(HIGHER, LOWER)]
    assert data.query_ids[pairs.query].tolist() == QUERY_OF_PAIR


def test_margin_per_query_and_cost_rule_give_the_vectors_written_by_hand(data):
    problem = cr.RankingProblem(data, weights=cost_rule, lam=LAM, variant=Variant(margin=QUERY_MARGIN))
    assert problem.has_pairs  # a function of the pairs forms them at construction
    np.testing.assert_array_equal(problem.weights, WEIGHTS_BY_HAND)
    np.testing.assert_array_equal(problem.C, np.array(WEIGHTS_BY_HAND) / (2 * LAM))  # Theorem 1
    np.testing.assert_array_equal(problem.variant.margins(problem.pairs), MARGINS_BY_HAND)


def test_the_rule_receives_the_pairs_in_order_and_is_called_once(data):
    seen = []

    def rule(**arrays):
        seen.append({k: v.tolist() for k, v in arrays.items()})
        with pytest.raises(ValueError):
            arrays["better"][0] = 99  # read-only: a rule cannot change the pairs
        return np.ones(len(arrays["better"]))

    problem = cr.RankingProblem(data, weights=rule, variant=Variant(margin=rule))
    problem.variant.margins(problem.pairs)
    problem.variant.margins(problem.pairs)  # kept: the margins of a pair set are computed once
    assert len(seen) == 2  # the costs once, the margins once
    assert seen[0] == {"higher": HIGHER, "lower": LOWER, "qid": QUERY_OF_PAIR, "better": BETTER, "worse": WORSE}


def _independent_optimum(margins, weights, lam):
    """Problem (9) with margins, written in CVXPY on the pairs typed in above."""
    D = X[BETTER] - X[WORSE]
    w = cp.Variable(2)
    loss = cp.sum(cp.multiply(np.array(weights), cp.pos(np.array(margins) - D @ w)))
    cp.Problem(cp.Minimize(loss + lam * cp.sum_squares(w))).solve(solver="CLARABEL")
    return w.value


def _L(w, margins, weights, lam):
    D = X[BETTER] - X[WORSE]
    return float(np.dot(weights, np.maximum(0.0, np.array(margins) - D @ w)) + lam * w @ w)


def test_solution_matches_an_independent_cvxpy_problem_within_the_certified_gap(data):
    problem = cr.RankingProblem(data, weights=cost_rule, lam=LAM, variant=Variant(margin=QUERY_MARGIN))
    res = cr.solve(problem, "clarabel")
    assert res.status == "optimal"
    w_ref = _independent_optimum(MARGINS_BY_HAND, WEIGHTS_BY_HAND, LAM)
    L_ref = _L(w_ref, MARGINS_BY_HAND, WEIGHTS_BY_HAND, LAM)  # an upper bound on the optimum
    assert res.lower_bound <= L_ref + 1e-9
    assert abs(res.objective - L_ref) <= res.gap_L + 1e-7 * L_ref
    # the problem's own objective is the formula on the pairs typed in, at any w
    w = np.array([0.7, -1.3])
    assert problem.hinge_objective(w) == pytest.approx(_L(w, MARGINS_BY_HAND, WEIGHTS_BY_HAND, LAM), rel=1e-12)
    # and margins or weights in another order would give another optimum: the check can fail
    swapped = _L(_independent_optimum(MARGINS_BY_HAND[::-1], WEIGHTS_BY_HAND[::-1], LAM),
                 MARGINS_BY_HAND[::-1], WEIGHTS_BY_HAND[::-1], LAM)
    assert abs(swapped - L_ref) > 100 * res.gap_L


def test_costs_per_query_are_mu(data):
    costs = Costs(mu={10: 1.0, 20: 3.0, 30: 0.5})
    np.testing.assert_array_equal(costs.pair_weights(make_pairs(data)), [1.0, 1.0, 1.0, 3.0, 3.0, 0.5])
    with pytest.raises(ValidationError, match=r"mu has no value for queries \[30\]"):
        Costs(mu={10: 1.0, 20: 3.0}).pair_weights(make_pairs(data))
    with pytest.raises(ValidationError, match=r"mu has query ids that are not in the data: \[40\]"):
        Costs(mu={10: 1.0, 20: 3.0, 30: 1.0, 40: 1.0}).pair_weights(make_pairs(data))


def test_margin_per_query_must_cover_every_query_with_pairs(data):
    pairs = make_pairs(data)
    with pytest.raises(ValidationError, match=r"margin has no value for queries \[30\]"):
        Variant(margin={10: 1.0, 20: 2.0}).margins(pairs)
    with pytest.raises(ValidationError, match=r"margin\[20\] must be non-negative"):
        Variant(margin={10: 1.0, 20: -2.0, 30: 1.0})
    with pytest.raises(ValidationError, match="every pair has margin 0"):
        Variant(margin={10: 0.0, 20: 0.0, 30: 0.0}).margins(pairs)


def _bad(kind, rule):
    return Costs(weights=rule).pair_weights if kind == "costs" else Variant(margin=rule).margins


@pytest.mark.parametrize("kind", ["costs", "margin"])
@pytest.mark.parametrize("rule, message", [
    (lambda better, **_: np.ones(len(better) - 1),
     r"returned shape \(5,\); it must return one number per pair, shape \(6,\)"),
    (lambda **_: 1.0, r"returned shape \(\); it must return one number per pair"),
    (lambda better, **_: np.where(better == 5, np.nan, 1.0),
     r"returned nan for pair 4 \(query 20, grades 1 over 0, documents 5 over 4\)"),
    (lambda better, **_: np.where(better == 7, -1.0, 1.0),
     r"returned -1 for pair 5 \(query 30, .*non-negative and finite"),
    (lambda **_: 1 // 0, r"raised ZeroDivisionError: integer division or modulo by zero"),
    (lambda hi, lo, **_: hi - lo,
     r"raised TypeError: .*called with the keyword arguments higher, lower, qid, better, worse"),
    (lambda **_: ["a"] * 6, r"returned \['a', 'a', 'a', 'a', 'a', 'a'\], not numbers"),
])
def test_bad_rules_are_refused_naming_what_is_wrong(data, kind, rule, message):
    what = "costs weights" if kind == "costs" else "margin"
    with pytest.raises(ValidationError, match=f"the {what} function <lambda> " + message) as info:
        _bad(kind, rule)(make_pairs(data))
    error = info.value  # no traceback of the rule's insides is chained to it
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_pairfree_solvers_take_cost_rules_constant_per_cell_and_refuse_the_rest(data):
    by_cell = cr.RankingProblem(data, weights=cost_rule, lam=LAM)  # constant in each (query, grade pair)
    plane, qp = cr.solve(by_cell, "cutting_plane"), cr.solve(by_cell, "clarabel")
    assert plane.status == qp.status == "optimal"
    assert abs(plane.objective - qp.objective) <= plane.gap_L + qp.gap_L
    by_document = cr.RankingProblem(data, weights=lambda better, **_: 1.0 + better, lam=LAM)
    with pytest.raises(ValidationError, match=r"pair weights differ inside query 20, grade pair \(1, 0\)"):
        cr.solve(by_document, "cutting_plane")
    per_query_margin = cr.RankingProblem(data, lam=LAM, variant=Variant(margin=QUERY_MARGIN))
    with pytest.raises(SolverNotAvailableError, match="does not take margin_per_pair"):
        cr.solve(per_query_margin, "cutting_plane")
    with pytest.raises(SolverNotAvailableError, match="does not take margin_per_pair"):
        cr.solve(per_query_margin.with_variant(Variant(loss="squared_hinge", margin=QUERY_MARGIN)), "truncated_newton")
    assert cr.solve(per_query_margin, "clarabel", formulation="dual").status == "optimal"


def test_tau_estimate_on_a_problem_is_estimate_tau_of_its_data():
    data = cr.make_ranking(n_queries=12, n_features=3, random_state=1)
    problem = cr.RankingProblem(data, tau="estimate", random_state=7)
    assert problem.costs.tau == Costs(tau=estimate_tau(data, random_state=7)).tau
    assert problem.costs.tau != cr.RankingProblem(data, tau="estimate", random_state=8).costs.tau  # T=100 draws
    exact = cr.RankingProblem(data, tau="estimate", tau_swaps=None, tau_average="all_queries")
    assert exact.costs.tau == Costs(tau=estimate_tau(data, T=None, average="all_queries")).tau
    # the estimators read tau="estimate" through the same code: the same table for the same seed
    fitted = CostSensitiveRankSVM(lam=1.0, random_state=7).fit(data.X, data.y, qid=data.qid)
    assert fitted.tau_ == problem.costs.tau
    assert cr.RankingProblem(data).with_costs(tau="estimate", random_state=7).costs.tau == problem.costs.tau


def test_reprs_and_messages_abbreviate_arrays(data):
    long_margin = np.linspace(0.5, 2.0, 13543)
    assert len(repr(Variant(margin=np.ones(10000)))) < 200
    assert "margin=<array of 13543 floats, 0.5..2>" in repr(Variant(margin=long_margin, lower=np.zeros(300)))
    assert "lower=<array of 300 floats, 0..0>" in repr(Variant(lower=np.zeros(300)))
    assert repr(Costs(weights=np.ones(13543))) == "Costs(weights=<array of 13543 floats, 1..1>)"
    assert repr(Costs(mu={q: 1.0 + q for q in range(300)})) == "Costs(mu=<300 queries, 1..300>)"
    assert repr(Costs(weights=cost_rule)) == "Costs(weights=<function cost_rule>)"
    problem = cr.RankingProblem(make_pairs(data), weights=np.arange(1.0, 7.0) * 1000,
                                variant=Variant(margin=np.full(6, 2.0) + np.arange(6)))
    assert len(repr(problem)) < 300 and "<array of" not in repr(problem)  # 6 values print in full
    assert repr(problem).endswith("margin=[2.0, 3.0, 4.0, 5.0, 6.0, 7.0], l1=0.0, lower=None, upper=None, "
                                  "constraints=None))")
    bad_margin = np.r_[np.ones(13542), -1.0]
    for make in (lambda: Variant(margin=bad_margin), lambda: Variant(margin=np.ones(13543)).margins(make_pairs(data)),
                 lambda: check_lam(np.ones(300)), lambda: Costs(tau={(2, 1): np.ones(300)}),
                 lambda: Variant(l1=np.ones(300)), lambda: Costs(weights=np.r_[np.ones(300), np.nan])):
        with pytest.raises(ValidationError) as info:
            make()
        assert len(str(info.value)) < 300, str(info.value)
        assert "<array of 13543 floats" in str(info.value) or "<array of 30" in str(info.value)
    assert abbreviate(np.zeros((100, 3))) == "<array of shape (100, 3), floats, 0..0>"


def test_describe_and_model_files_for_margins_per_query_and_by_rule(data, tmp_path):
    assert Variant(margin=QUERY_MARGIN).describe() == "margin=given"
    assert Variant(margin=cost_rule).describe() == "margin=given"
    model = RankSVM(lam=LAM, margin=QUERY_MARGIN).fit(data)
    save_model(model, tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["params"]["margin"] == [[10, 1.0], [20, 2.0], [30, 0.5]]
    loaded = load_model(tmp_path / "m.json")
    assert loaded.margin == QUERY_MARGIN
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    ruled = RankSVM(lam=LAM, margin=cost_rule).fit(data)
    assert ruled.result_.status == "optimal"
    with pytest.raises(ValidationError, match=r"cannot store margin=<function cost_rule> in a model file"):
        save_model(ruled, tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(ValidationError, match="cannot be stored as JSON"):
        Costs(weights=cost_rule).to_json()


def test_the_variants_page_example_prints_what_it_shows(capsys):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "variants.md").read_text()
    section = text.split("## Margins and costs per query or by rule\n", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    exec(code, {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[:2] == shown[:2]
    assert printed[2].split(", objective=")[0] == shown[2].split(", objective=")[0]
    assert float(printed[2].split("objective=")[1].split()[0]) == pytest.approx(
        float(shown[2].split("objective=")[1].split()[0]), rel=1e-6)
