import cvxpy as cp
import numpy as np
import pytest

from cvxrank.exceptions import ValidationError
from cvxrank.formulations import (
    FORMULATIONS,
    build,
    build_dual,
    build_hinge,
    build_lifted_primal,
    build_primal,
    choose_formulation,
)
from cvxrank.data import RankingData
from cvxrank.datasets import make_ranking
from cvxrank.pairs import make_pairs
from cvxrank.solvers import solve
from tests.conftest import assert_agree

BUILDERS = {
    "primal": lambda inst: build_primal(inst.pairs, C=inst.C),
    "lifted": lambda inst: build_lifted_primal(inst.pairs, C=inst.C),
    "dual": lambda inst: build_dual(inst.pairs, C=inst.C),
    "hinge": lambda inst: build_hinge(inst.pairs, weights=inst.weights, lam=inst.lam),
}


@pytest.mark.parametrize("name", FORMULATIONS)
def test_every_builder_is_dpp(small, name):
    f = BUILDERS[name](small)
    assert f.name == name
    assert f.problem.is_dcp(dpp=True)
    assert all(isinstance(p, cp.Parameter) and p.is_nonneg() for p in f.parameters.values())


@pytest.mark.parametrize("name", FORMULATIONS)
def test_sparse_features_build_and_solve(name):
    from tests.conftest import Instance

    inst = Instance(3, density=0.5)
    assert inst.data.is_sparse
    f = BUILDERS[name](inst)
    d = inst.data
    ref = build_primal(make_pairs(RankingData(d.X.toarray(), d.y, d.qid)), C=inst.C)
    assert_agree(solve(f, "clarabel"), solve(ref, "clarabel"))


QP_BUILDERS = {"primal": build_primal, "lifted": build_lifted_primal, "dual": build_dual}


@pytest.mark.parametrize("name", ["primal", "lifted", "dual"])
def test_new_costs_resolve_without_recompiling(small, name):
    """DPP, per-pair costs: any new C re-solves to the same answer as a fresh build."""
    f = QP_BUILDERS[name](small.pairs, C=small.C, costs="per_pair")
    assert sorted(f.parameters) == ["C"]
    f.problem.solve(solver="CLARABEL")
    compiled = f.problem._cache.param_prog
    new_C = small.C * np.linspace(0.2, 3.0, small.pairs.n_pairs)
    f.set_costs(new_C)
    got = solve(f, "clarabel")
    assert f.problem._cache.param_prog is compiled  # CVXPY reused its compiled form for the new C
    assert_agree(got, solve(build_primal(small.pairs, C=new_C), "clarabel"))
    np.testing.assert_allclose(f.C(), new_C)


@pytest.mark.parametrize("name", ["primal", "lifted", "dual"])
def test_scaled_costs_resolve_without_recompiling(small, name):
    """DPP, scale parametrization: a multiple of C (a λ path) moves one scalar; other C are refused."""
    f = QP_BUILDERS[name](small.pairs, C=small.C)
    assert sorted(f.parameters) == ["scale"] and f.parameters["scale"].value == 1.0
    np.testing.assert_array_equal(f.C(), small.C)
    f.problem.solve(solver="CLARABEL")
    compiled = f.problem._cache.param_prog
    f.set_costs(small.C * 0.3)
    assert f.parameters["scale"].value == pytest.approx(0.3, rel=1e-14)
    got = solve(f, "clarabel")
    assert f.problem._cache.param_prog is compiled
    assert_agree(got, solve(build_primal(small.pairs, C=small.C * 0.3, costs="per_pair"), "clarabel"))
    np.testing.assert_allclose(f.C(), small.C * 0.3, rtol=1e-14)
    with pytest.raises(ValidationError, match="costs='per_pair'"):
        f.set_costs(small.C * np.linspace(0.2, 3.0, small.pairs.n_pairs))
    with pytest.raises(ValidationError, match="non-negative"):
        f.set_costs(-small.C)


def test_scale_form_puts_costs_in_the_objective(small):
    """The default form has no epigraph row: ``Σ C_i ξ_i`` is the solver's linear objective ``q``."""
    scaled = build_lifted_primal(small.pairs, C=small.C)
    per_pair = build_lifted_primal(small.pairs, C=small.C, costs="per_pair")
    assert "t" not in scaled.variables and "t" in per_pair.variables
    n_rows = [f.problem.get_problem_data("CLARABEL")[0]["A"].shape[0] for f in (scaled, per_pair)]
    assert n_rows[1] == n_rows[0] + 1
    scaled.problem.solve(solver="CLARABEL")
    per_pair.problem.solve(solver="CLARABEL")
    assert scaled.problem.value == pytest.approx(per_pair.problem.value, rel=1e-7)


def test_unknown_cost_parametrization_is_refused(small):
    with pytest.raises(ValidationError, match="unknown cost parametrization 'vector'.*scale, per_pair"):
        build(small.pairs, C=small.C, formulation="primal", costs="vector")
    with pytest.raises(ValidationError, match="unknown cost parametrization"):
        build_dual(small.pairs, C=small.C, costs="vector")


def test_hinge_lambda_parameter_resolves(small):
    f = build_hinge(small.pairs, weights=small.weights, lam=small.lam)
    f.problem.solve(solver="CLARABEL")
    f.parameters["lam"].value = 2.0  # written behind the formulation's back: its problem follows
    assert_agree(solve(f, "clarabel"), solve(build_primal(small.pairs, C=small.weights / 4.0), "clarabel"))
    weights, lam = f.hinge_costs()
    assert lam == 2.0


def test_qp_forms_count_as_hinge_with_half_lambda(small):
    weights, lam = build_primal(small.pairs, C=small.C).hinge_costs()
    assert lam == 0.5
    np.testing.assert_array_equal(weights, small.C)


def test_build_auto_and_names(small):
    assert choose_formulation(small.pairs) in ("primal", "lifted")
    f = build(small.pairs, C=small.C, formulation="auto")
    assert f.name == choose_formulation(small.pairs)
    g = build(small.pairs, weights=small.weights, lam=small.lam, formulation="dual")
    np.testing.assert_allclose(g.C(), small.C)
    with pytest.raises(ValidationError, match="unknown formulation 'qp'.*primal"):
        build(small.pairs, C=small.C, formulation="qp")
    # The hinge form of a QP with costs C is (9) with weights C and λ = 1/2 (Theorem 1 read backwards).
    h = build(small.pairs, C=small.C, formulation="hinge")
    assert h.ranking.lam == 0.5 and np.allclose(h.ranking.weights, small.C)
    with pytest.raises(ValidationError, match="give both weights and lam"):
        build(small.pairs, weights=small.weights, formulation="hinge")
    with pytest.raises(ValidationError, match="needs C, or weights and lam"):
        build(small.pairs, formulation="primal")


def test_choose_formulation_prefers_lift_for_long_queries():
    long = make_pairs(make_ranking(n_queries=2, docs_per_query=200, n_features=40, random_state=0))
    short = make_pairs(make_ranking(n_queries=20, docs_per_query=3, n_features=2, random_state=0))
    assert choose_formulation(long) == "lifted"
    assert choose_formulation(short) == "primal"


@pytest.mark.parametrize("bad, match", [
    (np.array([1.0, -1.0]), "one value per pair"),
    (-1.0, "non-negative"),
    (np.nan, "NaN or infinite"),
    ("abc", "numeric"),
])
def test_bad_costs(small, bad, match):
    with pytest.raises(ValidationError, match=match):
        build_primal(small.pairs, C=bad)


@pytest.mark.parametrize("lam", [0.0, -1.0, np.inf, np.nan, "x"])
def test_bad_lambda(small, lam):
    with pytest.raises(ValidationError, match="lam"):
        build_hinge(small.pairs, weights=small.weights, lam=lam)


def test_recover_before_solve_is_an_error(small):
    with pytest.raises(ValidationError, match="not been solved"):
        build_primal(small.pairs, C=small.C).recover_w()
    with pytest.raises(ValidationError, match="not been solved"):
        build_dual(small.pairs, C=small.C).recover_w()


@pytest.mark.parametrize("name", FORMULATIONS)
def test_many_pairs_do_not_densify(name):
    """~20k pairs: a parameter-times-variable objective would make CVXPY allocate an ℓ x ℓ array (3 GB)."""
    import tracemalloc

    from cvxrank.costs import pair_weights, theorem1_C
    from cvxrank.datasets import make_ecml_simulation
    from cvxrank.solvers import solve

    pairs = make_pairs(make_ecml_simulation(sizes=(200, 60, 30), random_state=0))
    assert pairs.n_pairs == 200 * 60 + 200 * 30 + 60 * 30
    weights = pair_weights(pairs)
    tracemalloc.start()
    f = build(pairs, C=theorem1_C(weights, 1.0), weights=weights, lam=1.0, formulation=name)
    res = solve(f, "clarabel")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert res.status == "optimal"
    dense = 8 * pairs.n_pairs**2  # bytes of the l x l float64 array a densified objective would allocate
    assert peak < dense / 8, f"peak {peak / 1e6:.0f} MB, an l x l array {dense / 1e6:.0f} MB"


def test_hinge_form_in_both_cost_parametrizations(small):
    """The hinge form holds its weights as a scale (default) or per pair; both give the QP's optimum."""
    scaled = build_hinge(small.pairs, weights=small.weights, lam=small.lam)
    per_pair = build_hinge(small.pairs, weights=small.weights, lam=small.lam, costs="per_pair")
    assert scaled.parameters.keys() == {"scale", "lam"} and per_pair.parameters.keys() == {"weights", "lam"}
    assert scaled.problem.is_dcp(dpp=True) and per_pair.problem.is_dcp(dpp=True)
    for f in (scaled, per_pair):
        weights, lam = f.hinge_costs()
        np.testing.assert_allclose(weights, small.weights)
        assert lam == small.lam
    qp = solve(build_primal(small.pairs, C=small.C), "clarabel")
    assert_agree(solve(scaled, "clarabel"), qp)
    assert_agree(solve(per_pair, "clarabel"), qp)
    # new weights and lambda: a multiple re-solves on the scale form, anything on the per-pair form
    compiled = scaled.problem._cache.param_prog
    scaled.set_weights(3.0 * small.weights, 2.0 * small.lam)
    got = solve(scaled, "clarabel")
    assert scaled.problem._cache.param_prog is compiled
    np.testing.assert_allclose(scaled.C(), 3.0 * small.weights / (4.0 * small.lam), rtol=1e-14)
    assert_agree(got, solve(build_primal(small.pairs, C=scaled.C()), "clarabel"))
    other = small.weights * np.linspace(0.5, 2.0, small.pairs.n_pairs)
    with pytest.raises(ValidationError, match="costs='per_pair'"):
        scaled.set_weights(other, small.lam)
    per_pair.set_weights(other, small.lam)
    np.testing.assert_array_equal(per_pair.hinge_costs()[0], other)
    per_pair.set_costs(small.C)  # QP costs: weights = C, lambda = 1/2
    assert per_pair.hinge_costs()[1] == 0.5
