"""A study's output folder: its definition, its reference solutions and its rows.

=====================  ==========================================================
file                   content
=====================  ==========================================================
``study.json``         the study definition and its hash (written first)
``references.json``    the reference solution of each (instance, size, cost)
``results.csv``        one line per finished run, appended as runs finish
=====================  ==========================================================

Each row is appended with one ``write`` and flushed to disk, so an
interrupted study leaves whole lines (a torn last line is dropped on the next
start) and resumes where it stopped: rows already stored are not run again.
A folder holding results of a *different* definition is refused unless the
caller asks to overwrite it.
"""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import pandas as pd

from cvxrank import __version__
from cvxrank._io import append_text, write_atomic
from cvxrank.exceptions import CvxrankError
from cvxrank.study.definition import COLUMNS, KEY, Study, size_text

__all__ = ["ResultStore", "StudyMismatchError", "load_results", "row_key"]


class StudyMismatchError(CvxrankError):
    """The output folder holds results of another study definition."""


def row_key(row) -> tuple:
    """The identity of a run: instance, size, cost, formulation, solver, profile (as text)."""
    return tuple(size_text(row[k]) if k == "size" else str(row[k]) for k in KEY)


def load_results(folder) -> pd.DataFrame:
    """The rows stored in ``folder/results.csv`` (columns :data:`~cvxrank.study.COLUMNS`)."""
    path = Path(folder) / "results.csv"
    if not path.is_file():
        raise CvxrankError(f"no study results in {folder} (results.csv is missing)")
    df = pd.read_csv(path, dtype={"instance": str, "cost": str, "formulation": str, "solver": str,
                                  "profile": str, "status": str, "message": str})
    df["found"] = df["found"].astype(str).str.lower() == "true"
    for col in COLUMNS:  # a table written before a column existed: not measured then
        if col not in df.columns:
            df[col] = float("nan")
    for col in ("message", "resolved_formulation", "solver_status", "solver_version", "solve_time_source"):
        df[col] = ["" if pd.isna(v) else str(v) for v in df[col]]  # an all-empty column reads as float NaN
    return df[list(COLUMNS)]


class ResultStore:
    """The output folder of one study.

    Parameters
    ----------
    folder : path
        Created if missing.
    study : Study
    overwrite : bool, default False
        Replace results of another definition instead of refusing.

    Raises
    ------
    StudyMismatchError
        When ``folder`` holds results of another definition (or results
        without a definition) and ``overwrite`` is False.
    """

    def __init__(self, folder, study: Study, *, overwrite: bool = False):
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise CvxrankError(f"{self.folder} exists and is not a folder")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.meta = self.folder / "study.json"
        self.results = self.folder / "results.csv"
        self.refs = self.folder / "references.json"
        self.study = study
        self._check(overwrite)
        self._repair()

    def _check(self, overwrite: bool) -> None:
        stored = None
        if self.meta.is_file():
            try:
                stored = json.loads(self.meta.read_text(encoding="utf-8")).get("hash")
            except (OSError, ValueError):
                stored = "unreadable"
        has_rows = self.results.is_file() or self.refs.is_file()
        if stored == self.study.hash:
            return
        if (stored is not None or has_rows) and not overwrite:
            what = f"study {stored}" if stored else "a study of unknown definition (no study.json)"
            raise StudyMismatchError(
                f"{self.folder} holds results of {what}, not of this study ({self.study.hash}); "
                "pass overwrite=True (cvxrank compare --overwrite) to replace them, or choose another folder")
        for path in (self.results, self.refs, self.meta):
            if path.exists():
                path.unlink()
        doc = {"hash": self.study.hash, "created": time.strftime("%Y-%m-%d %H:%M:%S"), "cvxrank": __version__,
               "definition": self.study.definition()}
        write_atomic(self.meta, json.dumps(doc, indent=2, default=str) + "\n")

    def _repair(self) -> None:
        """Create ``results.csv`` with its header, or drop a torn last line left by an interruption."""
        if not self.results.is_file():
            write_atomic(self.results, ",".join(COLUMNS) + "\n")
            return
        data = self.results.read_bytes()
        header = data.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
        if data.strip() and header != ",".join(COLUMNS):
            raise CvxrankError(f"{self.results} is not a study table (its first line is {header[:60]!r}, not the "
                               "columns of cvxrank compare); it was replaced by another file: move it away and run "
                               "again to rerun the study, or choose another folder")
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.results, "r+b") as fh:
                fh.truncate(cut)
        if not data.strip():
            write_atomic(self.results, ",".join(COLUMNS) + "\n")

    def finished(self) -> set:
        """Keys (:func:`row_key`) of the rows already stored."""
        df = pd.read_csv(self.results, dtype=str, keep_default_na=False, usecols=list(KEY))
        return {row_key(r) for r in df.to_dict("records")}

    def append(self, rows) -> None:
        """Append rows (dicts with the :data:`COLUMNS`), one line each, flushed to disk."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        for row in rows:
            writer.writerow(["" if row.get(c) is None else row.get(c) for c in COLUMNS])
        append_text(self.results, buf.getvalue())

    def references(self) -> dict:
        """``{"instance|size|cost": reference}`` stored so far."""
        if not self.refs.is_file():
            return {}
        try:
            refs = json.loads(self.refs.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise CvxrankError(f"{self.refs} is not the study's references ({exc}); it was replaced by another "
                               "file: move it away and run again to compute the references again") from None
        if not isinstance(refs, dict):
            raise CvxrankError(f"{self.refs} is not the study's references (not a JSON object); move it away and "
                               "run again to compute the references again")
        return refs

    def save_references(self, refs: dict) -> None:
        write_atomic(self.refs, json.dumps(refs, indent=1, allow_nan=True) + "\n")

    def load(self) -> pd.DataFrame:
        return load_results(self.folder)
