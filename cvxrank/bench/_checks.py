"""The checks every ``cvxrank bench`` subcommand runs on its options before it measures anything.

A benchmark runs for minutes; a value no run could use (a negative seed, a NaN time limit, a
configuration whose solver cannot solve its formulation) is refused first, in one line naming
the option (:func:`cvxrank._validation.check` with the intervals of :mod:`cvxrank._validation`,
as :func:`cvxrank.cli._common.check_option` does for the commands: the bench layer does not import
the command line), never as a traceback halfway through.
"""

from __future__ import annotations

from cvxrank._args import split
from cvxrank._validation import check
from cvxrank.exceptions import ValidationError

__all__ = ["check_config", "check_lam_option", "check_option", "number_list"]


def check_option(flag: str, value, constraint):
    """:func:`cvxrank._validation.check` of the option ``--flag`` (``flag`` without its dashes).

    Examples
    --------
    >>> from cvxrank._validation import SEED
    >>> check_option("seed", -1, SEED)
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: --seed must be a non-negative integer < 4294967296, got -1
    """
    return check(f"--{flag}", value, constraint)


def number_list(flag: str, text, constraint, *, kind=float, empty: bool = False) -> list:
    """``--flag``'s comma list, each value as ``kind`` and admitted by ``constraint``.

    Parameters
    ----------
    flag : str
        The option without its dashes (``"floor-lams"``).
    text : str or None
        As typed.
    constraint : Interval
    kind : type, default float
        ``int`` or ``float``.
    empty : bool, default False
        Whether an empty list (``''``: skip) is allowed.

    Examples
    --------
    >>> from cvxrank._validation import Interval
    >>> number_list("shapes", "3, 12", Interval(3, None, integer=True), kind=int)
    [3, 12]
    >>> number_list("shapes", "3,0", Interval(3, None, integer=True), kind=int)
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: --shapes must be an integer >= 3, got 0
    """
    items = split(text) or []
    if not items and not empty:
        raise ValidationError(f"--{flag} needs at least one value, got {text!r}")
    values = []
    for item in items:
        try:
            values.append(kind(item))
        except ValueError:
            noun = "integers" if kind is int else "numbers"
            raise ValidationError(f"--{flag} must be {noun} separated by commas, got {text!r}") from None
        check_option(flag, values[-1], constraint)
    return values


def check_lam_option(flag: str, value) -> float:
    """A ``λ`` (or ``C``, for ``flag == "C"``) given as ``--flag``: :func:`cvxrank.costs.check_lam`'s range."""
    from cvxrank.costs import check_C, check_lam

    return (check_C if flag == "C" else check_lam)(value, f"--{flag}")


def check_config(item: str, flag: str = "configs") -> tuple[str, str]:
    """One ``FORMULATION:SOLVER`` of ``--flag``, as ``(formulation, solver)``, or a one-line refusal.

    A configuration names a formulation (:data:`cvxrank.formulations.FORMULATIONS`, or ``native``:
    a native solver reads the problem itself) and an installed solver that solves the papers'
    pairwise problem on it: a CVXPY solver for a CVXPY formulation, a native one for ``native``
    (the registry, :mod:`cvxrank.solvers.registry`, says which is which).

    Examples
    --------
    >>> check_config("lifted:clarabel")
    ('lifted', 'clarabel')
    >>> check_config("lifted:cutting_plane")
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: --configs 'lifted:cutting_plane': cutting_plane is a native solver; it reads the problem itself, so its formulation is native (native:cutting_plane)
    """
    from cvxrank.formulations import FORMULATIONS
    from cvxrank.solvers import available_solvers
    from cvxrank.solvers.registry import SOLVERS
    from cvxrank.variants import Variant

    form, sep, solver = (part.strip() for part in item.partition(":"))
    solver = solver.lower()
    if not sep or not form or not solver:
        raise ValidationError(f"--{flag} item {item!r} is not FORMULATION:SOLVER")
    valid = (*FORMULATIONS, "native")
    if form not in valid:
        raise ValidationError(f"--{flag} {item!r}: unknown formulation {form!r}; choose one of {', '.join(valid)}")
    installed = available_solvers()
    if solver not in installed:
        what = f"the solver {solver!r} is not installed" if solver in SOLVERS else f"unknown solver {solver!r}"
        raise ValidationError(f"--{flag} {item!r}: {what}; installed: {', '.join(installed)}")
    spec = SOLVERS[solver]
    if not spec.accepts(Variant()):
        able = [s for s in installed if SOLVERS[s].accepts(Variant()) and (SOLVERS[s].kind == "native") ==
                (form == "native")]
        raise ValidationError(f"--{flag} {item!r}: {solver} does not solve the papers' problem (hinge loss); "
                           f"solvers that can here: {', '.join(able)}")
    if form == "native" and spec.kind != "native":
        raise ValidationError(f"--{flag} {item!r}: {solver} is a CVXPY solver; it needs a CVXPY formulation "
                           f"({', '.join(f'{f}:{solver}' for f in FORMULATIONS)})")
    if form != "native" and spec.kind == "native":
        raise ValidationError(f"--{flag} {item!r}: {solver} is a native solver; it reads the problem itself, so its "
                           f"formulation is native (native:{solver})")
    return form, solver
