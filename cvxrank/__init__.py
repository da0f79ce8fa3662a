"""cvxrank: learning to rank with convex optimisation.

The Ranking SVM family of Herbrich et al., Xu et al. (ECML 2006, cost-sensitive)
and Cao et al. (SIGIR 2006, RSVM-IR) stated as explicit convex problems in
CVXPY, solved by interchangeable solvers, every solution certified by a
duality gap.

Layout (imports point down this list only)::

    cli, bench     the command line (one module per command) and the benchmarks
    experiments    cross-validation and sign tests, the ECML simulation;  plots: the figures
    estimators     scikit-learn rankers (RankSVM, ..., CsRgList), JSON model files
    theorem        verify_theorem1: Theorem 1 / Proposition 1 checked numerically
    path           solve_path: lambda / cost grids on one compiled problem (DPP)
    solvers        solve(): CVXPY backends, native solvers, certificates, SolveResult
    native         solve_pairfree: the pair-free oracle and cutting-plane solver
    listwise       ListMLE / cs-RgList: Newton (Steps 1-5) and the exponential-cone form
    formulations   build_primal, build_lifted_primal, build_dual, build_hinge
    objectives     L(w), M(w), L_D(α) evaluated in numpy
    costs          pair_weights (τ, μ), theorem1_C
    pairs          make_pairs, preference_pairs, PairSet (D = P X)
    data           RankingData, load_letor;  datasets: make_ranking
    metrics        ndcg_score, mean_average_precision, ... (imports nothing of ours);
                   evaluation: the papers' table of NDCG@k, MAP, P@k
"""

__version__ = "0.1.0"

import importlib

#: Where each public name lives. The names are imported on first use (PEP 562), so that
#: ``import cvxrank.cli`` (``cvxrank --help``, ``--version``) does not load CVXPY, SciPy or pandas.
_EXPORTS = {
    "cvxrank._memory": ("MemoryBudgetError", "set_memory_budget"),
    "cvxrank.costs": ("balanced_mu", "estimate_tau", "pair_weights", "theorem1_C"),
    "cvxrank.data": ("RankingData", "load_letor"),
    "cvxrank.datasets": ("make_ecml_simulation", "make_ohsumed_like", "make_ranking", "make_web_like"),
    "cvxrank.exceptions": ("CvxrankError", "InaccurateSolutionWarning", "SolverError", "SolverNotAvailableError",
                           "ValidationError"),
    "cvxrank.formulations": ("Formulation", "build", "build_dual", "build_hinge", "build_lifted_primal",
                             "build_primal", "choose_formulation"),
    "cvxrank.native": ("solve_pairfree",),
    "cvxrank.objectives": ("dual_objective", "hinge_objective", "qp_objective"),
    "cvxrank.pairs": ("PairSet", "make_pairs", "preference_pairs"),
    "cvxrank.solvers": ("SolveResult", "available_solvers", "solve", "solve_with_fallback"),
    "cvxrank.theorem": ("verify_theorem1",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'cvxrank' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "__version__",
    "CvxrankError",
    "Formulation",
    "InaccurateSolutionWarning",
    "MemoryBudgetError",
    "PairSet",
    "RankingData",
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
    "dual_objective",
    "estimate_tau",
    "hinge_objective",
    "load_letor",
    "make_ecml_simulation",
    "make_ohsumed_like",
    "make_pairs",
    "make_ranking",
    "make_web_like",
    "pair_weights",
    "preference_pairs",
    "qp_objective",
    "solve",
    "solve_pairfree",
    "solve_with_fallback",
    "set_memory_budget",
    "theorem1_C",
    "verify_theorem1",
]
