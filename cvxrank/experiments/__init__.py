"""Reproductions of the papers' experiments.

:func:`run_ecml_simulation`: the simulation of section 4.1 of Xu et al.
(ECML 2006), Ranking SVM against the cost-sensitive Ranking SVM, with the
paper's numbers (:data:`PAPER_ECML`) for comparison. Plots of the results are
in :mod:`cvxrank.plots`. The cross-validation runner of the SIGIR experiments
is :mod:`cvxrank.experiments.cv` (imported on its own: it needs scikit-learn).
"""

import importlib

_SIMULATION = ("ECML_NS", "ECML_TAU", "METHODS", "METHOD_LABELS", "PAPER_ECML", "SimulationResult",
               "angle_degrees", "run_ecml_simulation")


def __getattr__(name):
    """The names of :mod:`cvxrank.experiments.simulation`, imported on first use (PEP 562), so that
    ``cvxrank.experiments._defaults`` (read by ``cvxrank simulate --help``) does not load CVXPY."""
    if name == "SIMULATION_LAM":
        from cvxrank.experiments._defaults import SIMULATION_LAM
        return SIMULATION_LAM
    if name not in _SIMULATION:
        raise AttributeError(f"module 'cvxrank.experiments' has no attribute {name!r}")
    return getattr(importlib.import_module("cvxrank.experiments.simulation"), name)


__all__ = [
    "SIMULATION_LAM",
    "ECML_NS",
    "ECML_TAU",
    "METHODS",
    "METHOD_LABELS",
    "PAPER_ECML",
    "SimulationResult",
    "angle_degrees",
    "run_ecml_simulation",
]
