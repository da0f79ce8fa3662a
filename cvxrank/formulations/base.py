"""The :class:`Formulation` object every builder returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet

__all__ = ["Formulation", "check_costs"]


def check_costs(values, n_pairs: int, what: str = "C") -> np.ndarray:
    """Validate a per-pair cost vector: shape ``(n_pairs,)`` (a scalar is broadcast), finite, ``>= 0``."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be numeric, got {type(values).__name__}") from None
    if arr.ndim == 0:
        arr = np.full(n_pairs, float(arr))
    if arr.shape != (n_pairs,):
        raise ValidationError(f"{what} must have one value per pair ({n_pairs}), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValidationError(f"{what} has a NaN or infinite value")
    if np.any(arr < 0):
        raise ValidationError(f"{what} must be non-negative, found {arr.min():g}")
    return arr


@dataclass(eq=False)
class Formulation:
    """A ranking problem declared in CVXPY, with what is needed to read it back.

    Builders (:func:`~cvxrank.formulations.build_primal` and friends)
    return one; :func:`cvxrank.solve` solves it. Costs are
    ``cp.Parameter`` objects: set ``formulation.parameters["C"].value`` (or
    ``"weights"``, ``"lam"``) and solve again without recompiling (DPP).

    Attributes
    ----------
    name : str
        ``"primal"``, ``"lifted"``, ``"dual"`` or ``"hinge"``.
    problem : cvxpy.Problem
    variables : dict of str to cvxpy.Variable
    parameters : dict of str to cvxpy.Parameter
    pairs : PairSet
    equation : str
        The paper's equation this formulation states.
    """

    name: str
    problem: cp.Problem
    variables: dict
    parameters: dict
    pairs: PairSet
    equation: str
    _margin_constraint: cp.Constraint | None = field(default=None, repr=False)

    # -- costs in hinge form ---------------------------------------------
    def hinge_costs(self) -> tuple[np.ndarray, float]:
        """Current ``(weights, λ)`` of the equivalent hinge problem (9).

        A QP-form problem with costs ``C`` is the hinge problem with
        ``weights = C`` and ``λ = 1/2`` (Theorem 1 read backwards), so its
        hinge objective equals its QP objective ``M(w)``.
        """
        if "C" in self.parameters:
            return np.asarray(self.parameters["C"].value, dtype=np.float64), 0.5
        return (
            np.asarray(self.parameters["weights"].value, dtype=np.float64),
            float(self.parameters["lam"].value),
        )

    def C(self) -> np.ndarray:
        """Per-pair QP costs ``C_i = weights_i / (2λ)`` at the current parameter values."""
        weights, lam = self.hinge_costs()
        return weights / (2.0 * lam)

    # -- reading a solution back -----------------------------------------
    def recover_w(self) -> np.ndarray:
        """The weight vector ``w`` of the last solve (for the dual: ``w = Dᵀα``, (16)/SIGIR)."""
        if self.name == "dual":
            alpha = self.variables["alpha"].value
            if alpha is None:
                raise ValidationError("the dual problem has not been solved yet")
            return self.pairs.rmatvec(alpha)
        w = self.variables["w"].value
        if w is None:
            raise ValidationError(f"the {self.name} problem has not been solved yet")
        return np.asarray(w, dtype=np.float64).ravel()

    def recover_alpha(self) -> np.ndarray | None:
        """Dual variables ``α`` of the margin constraints from the last solve, or None.

        From the solver's constraint duals for ``primal`` and ``lifted``, the
        variable itself for ``dual``; ``hinge`` has no margin constraint.
        """
        if self.name == "dual":
            value = self.variables["alpha"].value
        elif self._margin_constraint is not None:
            value = self._margin_constraint.dual_value
        else:
            return None
        return None if value is None else np.asarray(value, dtype=np.float64).ravel()

    def __repr__(self) -> str:
        return (
            f"Formulation(name={self.name!r}, equation={self.equation!r}, "
            f"n_pairs={self.pairs.n_pairs}, n_features={self.pairs.n_features}, "
            f"parameters={sorted(self.parameters)})"
        )
