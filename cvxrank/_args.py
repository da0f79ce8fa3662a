"""Comma lists as typed on the command line (``cvxrank`` commands and ``cvxrank bench``)."""

from __future__ import annotations

__all__ = ["split"]


def split(text: str | None) -> list[str] | None:
    """``"a,b"`` -> ``["a", "b"]`` (blanks dropped); None stays None.

    Examples
    --------
    >>> split(" clarabel, ecos,,")
    ['clarabel', 'ecos']
    """
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]
