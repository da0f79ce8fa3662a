"""Figure files: one figure written atomically, several as PNG and a vector format (PDF or SVG).

The one writer of figure files, used by :mod:`cvxrank.plots` (which re-exports both functions),
the examples, the study report and the command line. It sits low in the package's layers so
that every layer that draws may save. matplotlib is imported by the Figure being saved, not here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cvxrank._io import atomic_output
from cvxrank._style import DPI
from cvxrank.exceptions import ValidationError

__all__ = ["FIGURE_FORMATS", "VECTOR_FORMATS", "figure_files", "save_figure", "save_figures"]

#: The vector formats :func:`save_figures` can write beside the PNG (scalable for papers and slides).
VECTOR_FORMATS = ("pdf", "svg")

#: The formats :func:`save_figures` writes by default: a PNG for screens, a PDF for papers.
FIGURE_FORMATS = ("png", "pdf")


def figure_files(stems, formats=FIGURE_FORMATS) -> list[str]:
    """The file names :func:`save_figures` gives the figures ``stems`` (figure by figure, format by format).

    Examples
    --------
    >>> figure_files(["hinge", "curve"])
    ['hinge.png', 'hinge.pdf', 'curve.png', 'curve.pdf']
    """
    return [f"{stem}.{fmt}" for stem in stems for fmt in formats]


def save_figure(fig, path, *, dpi: int | None = None) -> str:
    """Write a Figure (or the Figure of an Axes) to ``path`` atomically.

    The image goes to a temporary file in the target folder, which is then
    renamed onto ``path`` (:func:`os.replace`), so ``path`` is never left
    half-written. The format comes from the file name's extension (``.png``,
    ``.svg``, ``.pdf``, ...).

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    ValidationError
        When the folder does not exist, the extension is not an image format
        matplotlib writes, or ``fig`` is not a Figure or Axes.
    """
    if not hasattr(fig, "savefig"):  # an Axes: save its Figure
        fig = getattr(fig, "figure", fig)
    if not hasattr(fig, "savefig"):
        raise ValidationError(f"save_figure takes a matplotlib Figure or Axes, got {type(fig).__name__}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValidationError(f"cannot write {path}: folder {folder} does not exist")
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if fmt not in formats:
        raise ValidationError(f"cannot write {path}: the extension must be one of {', '.join(sorted(formats))}")
    # no creation date in the vector files: the same figure gives the same bytes on every run
    metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(fmt)
    with atomic_output(path, suffix=f".{fmt}", want_path=True) as target:
        fig.savefig(target, format=fmt, dpi=dpi or DPI, metadata=metadata)
    return path


def save_figures(figures, folder=None, *, formats=FIGURE_FORMATS, dpi: int | None = None) -> list[str]:
    """Write figures as PNG and a vector format (PDF or SVG) into one folder.

    Each figure ``name`` becomes ``folder/name.png`` and ``folder/name.pdf`` (one file per
    format), each written atomically by :func:`save_figure`. The PNG is for screens and web
    pages (:data:`cvxrank._style.DPI` dots per inch); the vector file scales without blur in a
    paper or on a slide.

    Parameters
    ----------
    figures : mapping of str to Figure or Axes
        ``{name: figure}``; a name is a plain file stem (no folder, no extension).
    folder : path-like, optional
        The output folder, created when missing (its parent must exist). Default: a new
        temporary folder (:func:`tempfile.mkdtemp`, prefix ``cvxrank-figures-``), so nothing
        already on disk is ever overwritten.
    formats : sequence of str, default ("png", "pdf")
        File formats, each one matplotlib writes; at least one of :data:`VECTOR_FORMATS`
        (``"pdf"``, ``"svg"``).
    dpi : int, optional
        Resolution of the raster files (default :data:`cvxrank._style.DPI`).

    Returns
    -------
    list of str
        The paths written, figure by figure, in the order of ``formats``.

    Raises
    ------
    ValidationError
        When ``figures`` is not a non-empty mapping, a name is not a plain file stem, the formats
        hold no vector format, or the folder's parent does not exist.

    Examples
    --------
    >>> import os, tempfile
    >>> from cvxrank.plots import plot_weighted_hinge
    >>> paths = save_figures({"hinge": plot_weighted_hinge()}, tempfile.mkdtemp())
    >>> [os.path.basename(p) for p in paths]
    ['hinge.png', 'hinge.pdf']
    """
    import tempfile

    if not isinstance(figures, Mapping) or not figures:
        raise ValidationError("figures must be a non-empty mapping {name: Figure or Axes}")
    formats = [formats] if isinstance(formats, str) else [str(f).lower().lstrip(".") for f in formats]
    if not any(f in VECTOR_FORMATS for f in formats):
        raise ValidationError(f"formats must hold a vector format ({' or '.join(VECTOR_FORMATS)}), got {formats!r}")
    for name in figures:
        if (not isinstance(name, str) or not name or name in (".", "..") or os.sep in name or "/" in name
                or os.path.splitext(name)[1]):
            raise ValidationError(f"a figure's name must be a plain file stem such as 'hinge', got {name!r}")
    if folder is None:
        folder = tempfile.mkdtemp(prefix="cvxrank-figures-")
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        parent = os.path.dirname(os.path.abspath(folder))
        if not os.path.isdir(parent):
            raise ValidationError(f"cannot create {folder}: folder {parent} does not exist")
        os.makedirs(folder, exist_ok=True)
    return [save_figure(fig, os.path.join(folder, f"{name}.{fmt}"), dpi=dpi)
            for name, fig in figures.items() for fmt in formats]
