"""Reproductions of the papers' experiments.

:func:`run_ecml_simulation`: the simulation of section 4.1 of Xu et al.
(ECML 2006), Ranking SVM against the cost-sensitive Ranking SVM, with the
paper's numbers (:data:`PAPER_ECML`) for comparison. Plots of the results are
in :mod:`cvxrank.plots`. The cross-validation runner of the SIGIR experiments
is :mod:`cvxrank.experiments.cv` (imported on its own: it needs scikit-learn).
"""

from cvxrank.experiments.simulation import (
    DEFAULT_LAM,
    ECML_NS,
    ECML_TAU,
    METHOD_LABELS,
    METHODS,
    PAPER_ECML,
    SimulationResult,
    angle_degrees,
    run_ecml_simulation,
)

__all__ = [
    "DEFAULT_LAM",
    "ECML_NS",
    "ECML_TAU",
    "METHODS",
    "METHOD_LABELS",
    "PAPER_ECML",
    "SimulationResult",
    "angle_degrees",
    "run_ecml_simulation",
]
