"""Checks of the options every native pair-free solver takes (one place, one message each)."""

from __future__ import annotations

import numpy as np

from cvxrank.exceptions import ValidationError

__all__ = ["check_common", "positive_int"]


def positive_int(value, name: str) -> int:
    """``value`` as an int, refused unless a positive integer (``True`` is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValidationError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_common(tol, time_limit, warm_start_w, n_features: int) -> np.ndarray:
    """Refuse a ``tol`` outside (0, 1) and a ``time_limit`` that is not a positive number of seconds;
    return the starting point (``w = 0`` by default) as ``n_features`` finite floats."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)) or not (0 < tol < 1):
        raise ValidationError(f"tol must be a number in (0, 1), got {tol!r}")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not time_limit > 0):
        raise ValidationError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    w = np.zeros(n_features) if warm_start_w is None else np.array(warm_start_w, dtype=np.float64).ravel()
    if w.shape != (n_features,) or not np.all(np.isfinite(w)):
        raise ValidationError(f"warm_start_w must be {n_features} finite numbers, got shape {w.shape}")
    return w
