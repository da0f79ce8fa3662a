"""Short text of any value for reprs and error messages: arrays, mappings and functions abbreviated."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["SHOWN_ENTRIES", "abbreviate", "plain"]


def plain(value):
    """A numpy scalar as the Python scalar it holds (dict keys compare across the two)."""
    return value.item() if hasattr(value, "item") else value


#: Arrays and mappings of up to this many entries print in full in reprs and messages
#: (:func:`abbreviate`); longer ones print as their size and range.
SHOWN_ENTRIES = 6
#: The longest text :func:`abbreviate` gives for any other value.
_SHOWN_CHARS = 80


def _value_range(values) -> str:
    """``", 0.5..2"``: the range of the finite numbers among ``values``, and how many are not finite."""
    try:
        arr = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        return ""
    finite = arr[np.isfinite(arr)]
    text = f", {finite.min():g}..{finite.max():g}" if finite.size else ""
    if finite.size < arr.size:
        text += f", {arr.size - finite.size} not finite"
    return text


def _clipped(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS - 3] + "..."


def abbreviate(value, unit: str = "entries") -> str:
    """``value`` as short text for a repr or an error message.

    A function prints as its name, an array or a mapping of more than :data:`SHOWN_ENTRIES`
    entries as its size and the range of its values (``unit`` names a mapping's entries),
    anything else as its repr cut to 80 characters. Reprs and messages of :class:`~cvxrank.costs.Costs`,
    :class:`~cvxrank.variants.Variant` and :class:`~cvxrank.problem.RankingProblem` go through it,
    so a 13,543-entry margin never prints in full; so do option checks (:func:`cvxrank._validation.check`).

    Examples
    --------
    >>> abbreviate(np.linspace(0.5, 2.0, 13543))
    '<array of 13543 floats, 0.5..2>'
    >>> abbreviate([1.0, 2.0]), abbreviate({"q1": 2.0})
    ('[1.0, 2.0]', "{'q1': 2.0}")
    >>> abbreviate({q: 1.0 + q for q in range(300)}, "queries")
    '<300 queries, 1..300>'
    >>> abbreviate(lambda higher, lower, **_: higher - lower)
    '<function <lambda>>'
    """
    if value is None or isinstance(value, (str, bytes, bool, int, float, np.generic)):
        return _clipped(repr(plain(value)))
    if isinstance(value, Mapping):
        if len(value) <= SHOWN_ENTRIES:
            return _clipped(repr({plain(k): plain(v) for k, v in value.items()}))
        return f"<{len(value)} {unit}{_value_range(list(value.values()))}>"
    if callable(value):
        return f"<function {getattr(value, '__qualname__', type(value).__name__)}>"
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - any object: its repr, cut
        return _clipped(repr(value))
    if arr.dtype.kind not in "biuf" or arr.ndim == 0:
        return _clipped(repr(value))
    if arr.ndim == 1 and arr.size <= SHOWN_ENTRIES:
        return _clipped(repr(arr.tolist()))
    kind = {"f": "floats", "b": "booleans"}.get(arr.dtype.kind, "integers")
    size = f"{arr.size} {kind}" if arr.ndim == 1 else f"shape {arr.shape}, {kind}"
    return f"<array of {size}{_value_range(arr) if arr.dtype.kind != 'b' else ''}>"
