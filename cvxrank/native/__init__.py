"""Pair-free native solver of the papers' problem: no pair is ever formed.

The weighted hinge loss (9) of Cao et al. (SIGIR 2006) with weights
``τ_k μ_q`` (one value per grade pair and per query) is evaluated, with a
subgradient and violation counts, in ``O(m log m + m n)`` time for ``m``
documents and ``n`` features, by sorting scores inside each query; a
stabilised 1-slack cutting-plane method, then Newton steps on the smoothed
hinge, solve the problem on top of it, with a certified duality gap.

=========================  ====================================================
module                     content
=========================  ====================================================
:mod:`.costs`              :class:`CostTable`: ``c[q, a, b] = τ_(a,b) μ_q``
:mod:`.oracle`             :class:`PairFreeOracle`: loss, ``Xᵀv``, counts
:mod:`.kernels`            its per-query sweeps compiled (``_sweep.c``, optional) or numpy
:mod:`.bundle`             :class:`Bundle`: the inner QP over the simplex
:mod:`.band`               the pairs near the margin, enumerated pair by pair
:mod:`.newton`             the smoothed Newton phase (Huber hinge, exact dual bound)
:mod:`.cutting_plane`      :func:`cutting_plane`, the algorithm on an oracle, and the
                           backend of ``cvxrank.solve(problem, "cutting_plane")``
:mod:`.truncated_newton`   the squared hinge: truncated Newton, certified by its dual
:mod:`.prox_newton`        the squared hinge with an ℓ1 term and bounds on ``w``:
                           orthant-wise projected truncated Newton, certified by its dual
:mod:`.dask`               :class:`DaskOracle`: the oracle over query shards
                           on a ``dask.distributed`` cluster (imported on demand)
=========================  ====================================================

Problems reach these solvers through :func:`cvxrank.solve` only (``solve_pairfree`` and
``solve_cutting_plane`` remain one release as deprecated aliases). This package imports
nothing of :mod:`cvxrank.solvers` (the solvers register the backends).
"""

from cvxrank.native.bundle import Bundle
from cvxrank.native.costs import (
    CostTable,
    cost_table,
    cost_table_from_pairs,
    grade_counts,
)
from cvxrank.native.cutting_plane import (
    CuttingPlaneRun,
    certifiable_gap,
    cutting_plane,
    solve_cutting_plane,  # noqa: F401 (deprecated alias of solve(problem, "cutting_plane"))
    solve_pairfree,  # noqa: F401 (deprecated alias of solve(problem, "cutting_plane"))
)
from cvxrank.native.oracle import OracleResult, PairFreeOracle

__all__ = [
    "Bundle",
    "CostTable",
    "CuttingPlaneRun",
    "OracleResult",
    "PairFreeOracle",
    "certifiable_gap",
    "cost_table",
    "cost_table_from_pairs",
    "cutting_plane",
    "grade_counts",
]
