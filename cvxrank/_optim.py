"""Numerical building blocks shared by cvxrank's Newton methods (pair-free squared hinge, listwise)."""

from __future__ import annotations

import numpy as np

__all__ = ["ARMIJO", "MIN_STEP", "armijo_step"]

#: Sufficient-decrease constant of Armijo's rule.
ARMIJO = 1e-4
#: Smallest step tried before giving up on a direction.
MIN_STEP = 2.0 ** -40


def armijo_step(phi, f: float, slope: float) -> tuple[float, float, int]:
    """Largest ``t = 2^{-k}`` with ``φ(t) ≤ f + 10⁻⁴ t slope`` (plus a rounding slack of ``4 ε |f|``).

    Parameters
    ----------
    phi : callable
        ``t -> φ(t)``, the objective along the direction (``φ(0) = f``).
    f : float
        ``φ(0)``.
    slope : float
        ``φ'(0)``, negative for a descent direction.

    Returns
    -------
    t, phi_t, evaluations : float, float, int
        The step (down to :data:`MIN_STEP`), ``φ(t)`` and the number of evaluations of ``φ``.

    Examples
    --------
    >>> armijo_step(lambda t: (t - 0.3) ** 2, 0.09, -0.6)[0]
    0.5
    """
    slack = 4.0 * np.finfo(float).eps * abs(f)
    t, evaluations = 1.0, 0
    while True:
        evaluations += 1
        value = float(phi(t))
        if value <= f + ARMIJO * t * slope + slack or t <= MIN_STEP:
            return t, value, evaluations
        t *= 0.5
