"""Parameter constraints, checked in one place with one message each.

In the style of scikit-learn's ``Interval`` and ``StrOptions``: a constraint says what a value
may be, :func:`check` refuses anything else with a :class:`~cvxrank.exceptions.ValidationError`
that names the parameter, what it must be and what it got. ``True`` and ``False`` are never
numbers here, and NaN lies in no interval.

The checks that ``solve``, the native solvers, the estimators, the study and the command line
share are spelt once below (:func:`check_tol`, :func:`check_max_iter`, :func:`check_time_limit`).

Examples
--------
>>> check("tol", 1e-6, TOL)
1e-06
>>> check("max_iter", 0, POSITIVE_INT)
Traceback (most recent call last):
...
cvxrank.exceptions.ValidationError: max_iter must be a positive integer, got 0
>>> check("n_features", None, POSITIVE_INT.or_none()) is None
True
>>> [FINITE.admits(x) for x in (1e300, float("inf"), float("nan"), True)]
[True, False, False, False]
>>> check_time_limit(float("inf"))
Traceback (most recent call last):
...
cvxrank.exceptions.ValidationError: time_limit must be a positive finite number or None, got inf
>>> check("pcf", 0.5, Interval(1, math.inf, closed="left"))
Traceback (most recent call last):
...
cvxrank.exceptions.ValidationError: pcf must be a finite number >= 1, got 0.5
>>> check("--max-iter", 2**31, Interval(1, 2**31 - 1, integer=True))
Traceback (most recent call last):
...
cvxrank.exceptions.ValidationError: --max-iter must be a positive integer <= 2147483647, got 2147483648
>>> check_each("ks", (1, 10), POSITIVE_INT)
(1, 10)
>>> check_each("ks", [5, True], POSITIVE_INT)
Traceback (most recent call last):
...
cvxrank.exceptions.ValidationError: ks must be a non-empty sequence of which each is a positive integer, got [5, True]
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

from cvxrank._text import abbreviate
from cvxrank.exceptions import ValidationError

__all__ = [
    "FINITE",
    "MIN_TOL",
    "NONNEG_INT",
    "POSITIVE",
    "POSITIVE_INT",
    "SEED",
    "TIMEOUT",
    "TOL",
    "Interval",
    "Options",
    "check",
    "check_each",
    "check_flag",
    "check_max_iter",
    "check_names",
    "check_time_limit",
    "check_tol",
    "check_vector",
]


@dataclass(frozen=True)
class Interval:
    """A real (or integer) number between ``left`` and ``right`` (None: unbounded).

    ``closed`` is ``"both"``, ``"left"``, ``"right"`` or ``"neither"``; ``integer`` asks for an
    integral value; ``none`` admits None; ``why``, when given, is said after the range in a refusal.
    """

    left: float | None = None
    right: float | None = None
    closed: str = "both"
    integer: bool = False
    none: bool = False
    why: str = ""

    def admits(self, value) -> bool:
        if value is None:
            return self.none
        if isinstance(value, bool) or not isinstance(value, numbers.Integral if self.integer else numbers.Real):
            return False
        if not self.integer and math.isnan(float(value)):
            return False
        lo = self.left is None or (value >= self.left if self.closed in ("both", "left") else value > self.left)
        hi = self.right is None or (value <= self.right if self.closed in ("both", "right") else value < self.right)
        return bool(lo and hi)

    def or_none(self) -> Interval:
        """The same interval, admitting None too (an optional parameter)."""
        return replace(self, none=True)

    def __str__(self) -> str:
        lo_in, hi_in = self.closed in ("both", "left"), self.closed in ("both", "right")
        left = None if self.left == -math.inf and not lo_in else self.left  # "> -inf" and "< inf" only say
        right = None if self.right == math.inf and not hi_in else self.right  # "finite"
        finite = (left is None and self.left is not None) or (right is None and self.right is not None)
        noun = "integer" if self.integer else "finite number" if finite else "number"
        kind = f"{'an' if self.integer else 'a'} {noun}"
        if (left == 0 or (self.integer and left == 1 and lo_in)) and (right is None or self.integer):
            text = f"a {'non-negative' if left == 0 and lo_in else 'positive'} {noun}"  # 0 and 1 in words
            if right is not None:
                text += f" {'<=' if hi_in else '<'} {_num(right)}"
        elif left is not None and right is not None:
            text = f"{kind} in {'[' if lo_in else '('}{_num(left)}, {_num(right)}{']' if hi_in else ')'}"
        elif left is not None:
            text = f"{kind} {'>=' if lo_in else '>'} {_num(left)}"
        elif right is not None:
            text = f"{kind} {'<=' if hi_in else '<'} {_num(right)}"
        else:
            text = kind
        return text + (" or None" if self.none else "") + (f" ({self.why})" if self.why else "")


def _num(x) -> str:
    """A bound as written: ints in full (2147483647), floats short (1e-06)."""
    return str(x) if isinstance(x, numbers.Integral) else f"{x:g}"


@dataclass(frozen=True)
class Options:
    """One of a fixed set of strings (case-sensitive)."""

    values: tuple

    def admits(self, value) -> bool:
        return isinstance(value, str) and value in self.values

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


#: The smallest relative gap a tolerance may ask for: the objective and its lower bound are sums
#: rounded in float64, so a relative gap below a few machine epsilons (``4.4 ε ≈ 1e-15``) cannot be
#: certified, and a smaller ``tol`` would only make "optimal" mean nothing.
MIN_TOL = 1e-15
#: A relative duality-gap tolerance, in ``[MIN_TOL, 1)``.
TOL = Interval(MIN_TOL, 1, closed="left",
               why="below about 4.4 float64 epsilons no relative duality gap can be certified")
#: An iteration or oracle-call cap.
POSITIVE_INT = Interval(1, None, integer=True)
NONNEG_INT = Interval(0, None, integer=True)
#: A positive finite number (seconds, a step, a radius).
POSITIVE = Interval(0, math.inf, closed="neither")
#: A wait in seconds (a worker's time limit): Python's clocks hold about 9.2e9 s (int64 nanoseconds), and a
#: longer wait overflows inside ``Connection.poll``; 1e9 s (about 31 years) means "no limit" in practice.
TIMEOUT = Interval(0, 1e9, closed="right", why="longer waits overflow the clock")
#: A data seed: numpy's legacy generators and the generated instances take ``0 <= seed < 2**32``.
SEED = Interval(0, 2**32, closed="left", integer=True)
#: Any finite number (not NaN, not ±inf).
FINITE = Interval(-math.inf, math.inf, closed="neither")


def check(name: str, value, constraint):
    """Return ``value`` (an int for integer intervals, a float for real ones) or refuse it."""
    if not constraint.admits(value):
        raise ValidationError(f"{name} must be {constraint}, got {abbreviate(value)}")
    if value is None or isinstance(constraint, Options):
        return value
    return int(value) if constraint.integer else float(value)


def check_tol(tol, name: str = "tol") -> float:
    """A relative-gap tolerance in ``[MIN_TOL, 1)`` (:data:`TOL`).

    Examples
    --------
    >>> check_tol(1e-300)
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: tol must be a number in [1e-15, 1) (below about 4.4 float64 epsilons no relative duality gap can be certified), got 1e-300
    """
    return check(name, tol, TOL)


def check_max_iter(max_iter, name: str = "max_iter") -> int:
    """An iteration (or oracle-call) cap: an integer ≥ 1."""
    return check(name, max_iter, POSITIVE_INT)


def check_time_limit(time_limit, name: str = "time_limit") -> float | None:
    """A wall-clock safety net in seconds (positive, finite) or None (no limit)."""
    return check(name, time_limit, POSITIVE.or_none())


def check_each(name: str, values, constraint) -> tuple:
    """A non-empty sequence of values each admitted by ``constraint``, as a tuple (each as :func:`check`
    returns it); else one refusal naming ``name`` and the whole sequence."""
    try:
        items = list(values)
    except TypeError:
        items = None
    if not items or not all(constraint.admits(v) for v in items):
        raise ValidationError(f"{name} must be a non-empty sequence of which each is {constraint}, got {values!r}")
    return tuple(check(name, v, constraint) for v in items)


def check_flag(name: str, value) -> bool:
    """``value`` if it is ``True`` or ``False`` (numpy's too), else one refusal: a flag given as ``"yes"`` or ``1``
    is a mistake, not a truth value."""
    if type(value).__name__ not in ("bool", "bool_"):
        raise ValidationError(f"{name} must be True or False, got {abbreviate(value)}")
    return bool(value)


def check_vector(name: str, value, size: int | None = None):
    """``value`` as a 1-D float64 array of finite numbers (of ``size`` of them when given), or one refusal that says
    what is wrong: not numbers, the wrong count, or which entry is not finite.

    Examples
    --------
    >>> check_vector("w", [1, 2.5])
    array([1. , 2.5])
    >>> check_vector("w", "abc", 3)
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: w must be 3 finite numbers, got 'abc'
    >>> check_vector("w", [0.0, float("nan"), 1.0], 3)
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: w must be 3 finite numbers; entry 1 is nan
    """
    import numpy as np  # (numpy is imported where vectors are checked, not with every option check)

    count = "" if size is None else f"{size} "
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or isinstance(value, (str, bytes)):
        raise ValidationError(f"{name} must be {count}finite numbers, got {abbreviate(value)}")
    array = array.ravel()
    if size is not None and array.shape[0] != size:
        raise ValidationError(f"{name} must be {count}finite numbers, got {array.shape[0]}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValidationError(f"{name} must be {count}finite numbers; entry {int(bad[0])} is {array[bad[0]]}")
    return array


def check_names(given, valid, what: str) -> None:
    """Refuse names of ``given`` that are not in ``valid``, naming the valid ones."""
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise ValidationError(f"{what} does not take {', '.join(map(repr, unknown))}; valid: "
                              f"{', '.join(sorted(valid)) or 'none'}")
