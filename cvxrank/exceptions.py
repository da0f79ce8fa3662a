"""Exceptions and warnings raised by cvxrank.

Every error a user can trigger with bad input is a :class:`ValidationError`
(a :class:`ValueError`), so ``except ValueError`` keeps working; solver
trouble is a :class:`SolverError`.
"""

__all__ = [
    "CvxrankError",
    "ValidationError",
    "SolverError",
    "SolverNotAvailableError",
    "InaccurateSolutionWarning",
]


class CvxrankError(Exception):
    """Base class of every exception cvxrank raises on purpose."""


class ValidationError(CvxrankError, ValueError):
    """Input that cvxrank refuses, with a message naming what is wrong."""


class SolverError(CvxrankError, RuntimeError):
    """A solver failed; the message names the solver and suggests another."""


class SolverNotAvailableError(SolverError, ValueError):
    """An unknown or uninstalled solver was requested; the message lists the installed ones."""


class InaccurateSolutionWarning(UserWarning):
    """The solution's certificate (duality gap) is weaker than the requested tolerance."""
