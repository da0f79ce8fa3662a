"""Plain-text output shared by reports: Markdown tables without extra dependencies."""

from __future__ import annotations

import numbers

import pandas as pd

__all__ = ["markdown_table", "format_value"]


def format_value(value, floatfmt: str = ".4f") -> str:
    """A table cell: floats with ``floatfmt``, NaN as empty, anything else as ``str``."""
    if value is None:
        return ""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, numbers.Integral)):
        return "" if pd.isna(value) else format(float(value), floatfmt)
    return str(value).replace("|", "\\|")


def markdown_table(df: pd.DataFrame, *, floatfmt: str = ".4f", index: bool = True) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (numbers right-aligned).

    Examples
    --------
    >>> print(markdown_table(pd.DataFrame({"ndcg@1": [0.5, 0.25]}, index=["a", "b"])))
    |  | ndcg@1 |
    |---|---:|
    | a | 0.5000 |
    | b | 0.2500 |
    """
    frame = df.reset_index() if index else df
    if index and all(name is None for name in df.index.names):
        frame = frame.rename(columns={frame.columns[0]: ""})
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    align = ["---:" if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
             else "---" for c in frame.columns]
    lines = [header, "|" + "|".join(align) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(format_value(v, floatfmt) for v in row) + " |")
    return "\n".join(lines)
