"""Comma lists as typed on the command line (``cvxrank`` commands and ``cvxrank bench``)."""

from __future__ import annotations

__all__ = ["positive_ints", "split"]


def split(text: str | None) -> list[str] | None:
    """``"a,b"`` -> ``["a", "b"]`` (blanks dropped); None stays None.

    Examples
    --------
    >>> split(" clarabel, ecos,,")
    ['clarabel', 'ecos']
    """
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def positive_ints(text: str | None, option: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``; anything else is a one-line :class:`~cvxrank.exceptions.ValidationError`
    naming ``option``.

    Examples
    --------
    >>> positive_ints("18, 53", "--sizes")
    [18, 53]
    """
    from cvxrank.exceptions import ValidationError

    message = f"{option} must be positive integers separated by commas, got {text!r}"
    try:
        values = [int(v) for v in split(text) or []]
    except ValueError:
        raise ValidationError(message) from None
    if not values or min(values) < 1:
        raise ValidationError(message)
    return values
