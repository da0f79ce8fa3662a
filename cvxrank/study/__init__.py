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

import importlib

#: Where each public name lives. Loaded on first use (PEP 562), so that ``cvxrank compare``'s parser
#: reads :data:`cvxrank.study.defaults.DEFAULTS` without importing CVXPY or pandas.
_WHERE = {
    "COLUMNS": "definition", "KEY": "definition", "STUDY_FORMULATIONS": "definition", "CostSetting": "definition",
    "Study": "definition", "DEFAULTS": "defaults", "FAMILIES": "instances", "Instance": "instances",
    "make_instances": "instances", "PROFILES": "profiles", "TOLERANCE_OPTIONS": "profiles", "Profile": "profiles",
    "solver_options": "profiles", "write_report": "report", "connect": "runner", "run_study": "runner",
    "StudyMismatchError": "store", "load_results": "store", "compare_tables": "summary",
    "growth_exponents": "summary", "performance_profiles": "summary", "shifted_geometric_mean": "summary",
    "shifted_geometric_means": "summary", "success_rates": "summary",
}


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"cvxrank.study.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cvxrank.study' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "COLUMNS",
    "DEFAULTS",
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
