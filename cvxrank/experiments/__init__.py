"""Reproductions of the papers' experiments.

:func:`run_ecml_simulation`: the simulation of section 4.1 of Xu et al.
(ECML 2006), Ranking SVM against the cost-sensitive Ranking SVM, with the
paper's numbers (:data:`PAPER_ECML`) for comparison. Plots of the results are
in :mod:`cvxrank.plots`. :func:`run_click_experiment`: Propensity SVM-Rank
against the naive and full-information rankers on simulated clicks (Joachims et
al., WSDM 2017), :mod:`cvxrank.experiments.clicks`; its plots are in
:mod:`cvxrank.plots.clicks`. The cross-validation runner of the SIGIR experiments
is :mod:`cvxrank.experiments.cv` (imported on its own: it needs scikit-learn).
"""

import importlib

_SIMULATION = ("ECML_NS", "ECML_TAU", "METHODS", "METHOD_LABELS", "PAPER_ECML", "SimulationResult",
               "angle_degrees", "run_ecml_simulation")
_CLICKS = ("CLICK_ETAS", "CLICK_LAM", "CLICK_MODELS", "CLICK_MODEL_LABELS", "CLICK_SESSIONS", "ClickExperimentResult",
           "make_click_data", "run_click_experiment")


def __getattr__(name):
    """The names of :mod:`cvxrank.experiments.simulation`, imported on first use (PEP 562), so that
    ``cvxrank.experiments._defaults`` (read by ``cvxrank simulate --help``) does not load CVXPY."""
    if name == "SIMULATION_LAM":
        from cvxrank.experiments._defaults import SIMULATION_LAM
        return SIMULATION_LAM
    if name in _CLICKS:
        return getattr(importlib.import_module("cvxrank.experiments.clicks"), name)
    if name not in _SIMULATION:
        raise AttributeError(f"module 'cvxrank.experiments' has no attribute {name!r}")
    return getattr(importlib.import_module("cvxrank.experiments.simulation"), name)


__all__ = [
    "SIMULATION_LAM",
    "CLICK_ETAS",
    "CLICK_LAM",
    "CLICK_MODELS",
    "CLICK_MODEL_LABELS",
    "CLICK_SESSIONS",
    "ClickExperimentResult",
    "ECML_NS",
    "ECML_TAU",
    "METHODS",
    "METHOD_LABELS",
    "PAPER_ECML",
    "SimulationResult",
    "angle_degrees",
    "make_click_data",
    "run_click_experiment",
    "run_ecml_simulation",
]
