"""Solver comparison studies: instances x formulations x solvers x profiles x cost settings.

A study is a long-format table, one row per run, with fixed columns
(:data:`COLUMNS`); a failed run is a row (status ``timeout`` or ``error``),
never a dead study. Build a :class:`Study`, run it with :func:`run_study`
(locally in worker processes, or on a Dask cluster), summarise it
(:func:`success_rates`, :func:`shifted_geometric_means`,
:func:`performance_profiles`, :func:`growth_exponents`) and write a Markdown
report with figures (:func:`write_report`). ``cvxrank compare`` does all of
it from the command line.

Examples
--------
>>> from cvxrank.study import Instance, Study, run_study, success_rates
>>> study = Study([Instance.generated("ecml", 2)], formulations=["lifted"], solvers=["clarabel"],
...               profiles=["low", "mid"])
>>> study.n_runs
2
"""

from cvxrank.study.definition import (
    COLUMNS,
    KEY,
    STUDY_FORMULATIONS,
    CostSetting,
    Study,
)
from cvxrank.study.instances import FAMILIES, Instance, make_instances
from cvxrank.study.profiles import PROFILES, TOLERANCE_OPTIONS, Profile, solver_options
from cvxrank.study.report import write_report
from cvxrank.study.runner import connect, run_study
from cvxrank.study.store import StudyMismatchError, load_results
from cvxrank.study.summary import (
    compare_tables,
    growth_exponents,
    performance_profiles,
    shifted_geometric_mean,
    shifted_geometric_means,
    success_rates,
)

__all__ = [
    "COLUMNS",
    "FAMILIES",
    "KEY",
    "PROFILES",
    "STUDY_FORMULATIONS",
    "TOLERANCE_OPTIONS",
    "CostSetting",
    "Instance",
    "Profile",
    "Study",
    "StudyMismatchError",
    "compare_tables",
    "connect",
    "growth_exponents",
    "load_results",
    "make_instances",
    "performance_profiles",
    "run_study",
    "shifted_geometric_mean",
    "shifted_geometric_means",
    "solver_options",
    "success_rates",
    "write_report",
]
