"""The defaults of a study, in one place: :class:`cvxrank.study.Study` and ``cvxrank compare`` both
read them, so the command line and the API give the same table for the same study.

This module imports nothing (the command line reads it while it builds its parser). The iteration
caps are :func:`cvxrank.study.definition.iteration_cap`; ``λ`` is :data:`cvxrank.DEFAULT_LAM`.
"""

__all__ = ["DEFAULTS"]

#: Formulations, solvers (the installed ones of these), profiles, time limit per run (seconds, a safety
#: net), reference (solver, formulation, profile), BLAS threads per run and repeats of each run.
DEFAULTS = {
    "formulations": ("primal", "lifted", "dual", "hinge"),
    "solvers": ("clarabel", "ecos", "osqp", "scs"),
    "profiles": ("mid",),
    "timeout": 60.0,
    "reference": ("clarabel", "auto", "high"),
    "threads": 1,
    "repeats": 1,
}
