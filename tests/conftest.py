"""Shared fixtures: small seeded instances and the installed solvers."""

from pathlib import Path

import numpy as np
import pytest

from cvxrank.costs import pair_weights, theorem1_C
from cvxrank.datasets import make_ranking
from cvxrank.pairs import make_pairs
from cvxrank.solvers import available_solvers

#: The shared real data set, referred to by its relative path (never copied here).
LIGHTGBM_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "lightgbm_rank"

#: CVXPY solvers the core issue requires, parametrised when installed.
CORE_CVXPY = [s for s in ("clarabel", "ecos", "osqp", "scs") if s in available_solvers()]


class Instance:
    """Pairs with τ/μ costs, λ and Theorem 1's C."""

    def __init__(self, seed, *, lam=0.1, n_queries=6, n_features=4, n_grades=3, tau=True, mu="balanced",
                 density=1.0):
        self.data = make_ranking(n_queries=n_queries, docs_per_query=(6, 12), n_features=n_features,
                                 n_grades=n_grades, density=density, random_state=seed)
        self.pairs = make_pairs(self.data)
        rng = np.random.default_rng(seed + 100)
        self.tau = {t: float(rng.uniform(0.5, 3.0)) for t in self.pairs.types} if tau else None
        self.mu = mu
        self.lam = lam
        self.weights = pair_weights(self.pairs, tau=self.tau, mu=mu)
        self.C = theorem1_C(self.weights, lam)


@pytest.fixture(params=[0, 1, 2], ids=lambda s: f"seed{s}")
def instance(request):
    return Instance(request.param)


@pytest.fixture
def small():
    return Instance(7)
