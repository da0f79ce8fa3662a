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
    experiments    cross-validation and sign tests, the ECML simulation;  study: solver comparisons
    estimators     scikit-learn rankers (RankSVM, ..., CsRgList), JSON model files
    path, theorem  λ / cost grids on one compiled problem (DPP);  Theorem 1 checked numerically
    listwise       ListMLE / cs-RgList: Newton (Steps 1-5) and the exponential-cone form
    solvers        solve(): the solver registry, CVXPY backends, native subgradient/gd, fallback
    native         solve_pairfree: the pair-free oracle and cutting-plane solver
    formulations   build_primal, build_lifted_primal, build_dual, build_hinge: compile a problem
    solution       SolveResult on both scales;  certificate: duality gaps from a dual point
    problem        RankingProblem: data or pairs, one Costs value, λ;  objectives: L(w), M(w), L_D(α)
    costs          Costs (τ, μ or per-pair weights), pair_weights, theorem1_C
    pairs          make_pairs, preference_pairs, PairSet (D = P X)
    data           RankingData, load_letor;  datasets: make_ranking
    metrics        ndcg_score, mean_average_precision, ... (imports nothing of ours);
                   evaluation: the papers' table of NDCG@k, MAP, P@k
"""

__version__ = "0.1.0"

from cvxrank._memory import MemoryBudgetError, set_memory_budget
from cvxrank.costs import Costs, balanced_mu, estimate_tau, pair_weights, theorem1_C
from cvxrank.data import RankingData, load_letor
from cvxrank.datasets import make_ecml_simulation, make_ohsumed_like, make_ranking, make_web_like
from cvxrank.exceptions import (
    CvxrankError,
    InaccurateSolutionWarning,
    SolverError,
    SolverNotAvailableError,
    ValidationError,
)
from cvxrank.formulations import (
    Formulation,
    build,
    build_dual,
    build_hinge,
    build_lifted_primal,
    build_primal,
    choose_formulation,
)
from cvxrank.native import solve_pairfree
from cvxrank.objectives import dual_objective, hinge_objective, qp_objective
from cvxrank.pairs import PairSet, make_pairs, preference_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solution import SolveResult
from cvxrank.solvers import available_solvers, solve, solve_with_fallback
from cvxrank.theorem import verify_theorem1

__all__ = [
    "__version__",
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
