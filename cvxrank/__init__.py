"""cvxrank: learning to rank with convex optimisation.

The Ranking SVM family of Herbrich et al., Xu et al. (ECML 2006, cost-sensitive)
and Cao et al. (SIGIR 2006, RSVM-IR) stated as explicit convex problems in
CVXPY, solved by interchangeable solvers, every solution certified by a
duality gap.

One problem, one certified solution::

    RankingProblem  --build()-->  Formulation  --solve()-->  SolveResult (+ certificate)
         |                                                        ^
         +---------------- native solvers read it directly -------+

Layout (imports point down this list only; ``tests/test_architecture.py`` enforces it)::

    cli, bench     the command line (one module per command) and the benchmarks
    plots          the figures
    experiments    cross-validation and sign tests, the ECML simulation, the WSDM 2017 click experiment;
                   study: solver comparisons
    estimators     scikit-learn rankers (RankSVM, ..., CsRgList, ClickRankSVM), JSON model files
    path, theorem  λ / cost grids on one compiled problem (DPP);  Theorem 1 checked numerically
    listwise       ListMLE / cs-RgList: Newton (Steps 1-5) and the exponential-cone form
    solvers        solve(): the one door to every solver; the registry, CVXPY backends, native
                   subgradient/gd, the "auto" and "fallback" policies
    native         the pair-free oracle, cutting planes and truncated Newton (backends of solve)
    formulations   build_primal, build_lifted_primal, build_dual, build_hinge: compile a problem
    solution       SolveResult (objective L(w) of (9), one scale) and its Certificate;
                   certificate: duality gaps from a dual point
    clicks         click logs (ClickLog, read_clicks), pairs and 1/propensity weights from clicks,
                   propensity estimators, the click simulator (make_clicks), IPS risk
    problem        RankingProblem: data or pairs, one Costs value, λ;  objectives: L(w), M(w), L_D(α)
    costs          Costs (τ, μ or per-pair weights), pair_weights, theorem1_C
    pairs          make_pairs, preference_pairs, PairSet (D = P X)
    data           RankingData, load_letor;  datasets: make_ranking
    metrics        ndcg_score, mean_average_precision, ... (imports nothing of ours);
                   evaluation: the papers' table of NDCG@k, MAP, P@k
"""

__version__ = "0.1.0"

import importlib

#: Public name -> the module that defines it. The package imports them on first use
#: (PEP 562), so ``import cvxrank`` and ``cvxrank --version`` do not load CVXPY, SciPy or pandas.
_EXPORTS = {
    "ClickLog": "cvxrank.clicks", "click_pairs": "cvxrank.clicks", "click_problem": "cvxrank.clicks",
    "make_clicks": "cvxrank.clicks", "read_clicks": "cvxrank.clicks", "write_clicks": "cvxrank.clicks",
    "MemoryBudgetError": "cvxrank._memory", "set_memory_budget": "cvxrank._memory",
    "Costs": "cvxrank.costs", "DEFAULT_LAM": "cvxrank.costs", "balanced_mu": "cvxrank.costs", "estimate_tau": "cvxrank.costs",
    "pair_weights": "cvxrank.costs", "theorem1_C": "cvxrank.costs",
    "RankingData": "cvxrank.data", "load_letor": "cvxrank.data",
    "make_ecml_simulation": "cvxrank.datasets", "make_ohsumed_like": "cvxrank.datasets",
    "make_ranking": "cvxrank.datasets", "make_web_like": "cvxrank.datasets",
    "CvxrankError": "cvxrank.exceptions", "InaccurateSolutionWarning": "cvxrank.exceptions",
    "SolverError": "cvxrank.exceptions", "SolverNotAvailableError": "cvxrank.exceptions",
    "ValidationError": "cvxrank.exceptions",
    "Formulation": "cvxrank.formulations", "build": "cvxrank.formulations", "build_dual": "cvxrank.formulations",
    "build_hinge": "cvxrank.formulations", "build_lifted_primal": "cvxrank.formulations",
    "build_primal": "cvxrank.formulations", "choose_formulation": "cvxrank.formulations",
    "solve_pairfree": "cvxrank.native",
    "dual_objective": "cvxrank.objectives", "hinge_objective": "cvxrank.objectives",
    "qp_objective": "cvxrank.objectives",
    "PairSet": "cvxrank.pairs", "make_pairs": "cvxrank.pairs", "preference_pairs": "cvxrank.pairs",
    "RankingProblem": "cvxrank.problem", "Certificate": "cvxrank.solution", "SolveResult": "cvxrank.solution",
    "available_solvers": "cvxrank.solvers", "solve": "cvxrank.solvers", "solve_with_fallback": "cvxrank.solvers",
    "verify_theorem1": "cvxrank.theorem",
}


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cvxrank' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "__version__",
    "DEFAULT_LAM",
    "Certificate",
    "ClickLog",
    "Costs",
    "CvxrankError",
    "Formulation",
    "InaccurateSolutionWarning",
    "MemoryBudgetError",
    "PairSet",
    "RankingData",
    "RankingProblem",
    "SolveResult",
    "SolverError",
    "SolverNotAvailableError",
    "ValidationError",
    "available_solvers",
    "balanced_mu",
    "build",
    "build_dual",
    "build_hinge",
    "build_lifted_primal",
    "build_primal",
    "choose_formulation",
    "click_pairs",
    "click_problem",
    "dual_objective",
    "estimate_tau",
    "hinge_objective",
    "load_letor",
    "make_clicks",
    "make_ecml_simulation",
    "make_ohsumed_like",
    "make_pairs",
    "make_ranking",
    "make_web_like",
    "pair_weights",
    "preference_pairs",
    "qp_objective",
    "read_clicks",
    "solve",
    "set_memory_budget",
    "theorem1_C",
    "verify_theorem1",
    "write_clicks",
]
