"""Helpers shared by the command modules: argument parsers, atomic writes, data loading."""

from __future__ import annotations

import json
import os
import tempfile

from cvxrank.exceptions import CvxrankError

__all__ = ["parse_grade", "parse_tau", "parse_mu", "split", "write_atomic", "write_json", "frame_to_json", "plain", "add_data_arguments",
           "data_from_args"]


def parse_grade(text: str):
    """A grade as written on the command line: int when integral, else float."""
    text = text.strip()
    try:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        raise CvxrankError(f"{text!r} is not a grade (a number)") from None


def parse_tau(text: str | None):
    """``"2-1=3,2-0=3,1-0=0.5"`` -> ``{(2, 1): 3.0, (2, 0): 3.0, (1, 0): 0.5}``; ``"estimate"`` passes through."""
    if text is None:
        return None
    if text.strip() == "estimate":
        return "estimate"
    table = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        hi, dash, lo = key.strip().partition("-")
        if not (sep and dash):
            raise CvxrankError(f"--tau item {item!r} is not HIGHER-LOWER=VALUE (e.g. 2-1=3)")
        try:
            table[(parse_grade(hi), parse_grade(lo))] = float(value)
        except (ValueError, CvxrankError):
            raise CvxrankError(f"--tau item {item!r} is not HIGHER-LOWER=VALUE with numbers") from None
    return table


def parse_mu(text: str | None):
    """``none`` -> None, ``balanced`` -> ``"balanced"`` ((10) of SIGIR 2006)."""
    if text is None or text == "none":
        return None
    if text == "balanced":
        return "balanced"
    raise CvxrankError(f"--mu must be 'none' or 'balanced', got {text!r}")


def split(text: str | None):
    """``"a,b"`` -> ``["a", "b"]``; None stays None."""
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def write_atomic(path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CvxrankError(f"cannot write {path}: folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".cvxrank-", suffix=".tmp")
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; a written file gets the usual permissions
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path, obj) -> None:
    """:func:`write_atomic` of ``obj`` as indented JSON."""
    write_atomic(path, json.dumps(obj, indent=2) + "\n")


def plain(value):
    """``value`` with every float kept as is (``json`` writes the shortest repr that reads back
    exactly; ``DataFrame.to_json`` would round to 10 digits): numpy scalars and arrays become
    Python numbers and lists, NaN and infinities ``None``, mapping keys strings, tuples lists."""
    import math

    import numpy as np

    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def frame_to_json(df) -> dict:
    """A DataFrame as ``{"meta": df.attrs, "rows": [...]}``, floats unrounded (:func:`plain`)."""
    return {"meta": plain(dict(df.attrs)), "rows": plain(df.to_dict(orient="records"))}


def add_data_arguments(parser, *, queries: int = 10, features: int = 5, grades: int = 3) -> None:
    """``--data FILE`` or a generated data set (``--queries --features --grades --seed``)."""
    parser.add_argument("--data", metavar="FILE", help="a LETOR/SVMlight file with qid (default: generated data)")
    parser.add_argument("--queries", type=int, default=queries,
                        help=f"generated data: number of queries (default {queries})")
    parser.add_argument("--features", type=int, default=features, help=f"generated data: features (default {features})")
    parser.add_argument("--grades", type=int, default=grades, help=f"generated data: grades (default {grades})")
    parser.add_argument("--seed", type=int, default=0, help="generated data: seed (default 0)")


def data_from_args(args):
    """The data set :func:`add_data_arguments` describes, and a one-line description of it."""
    from cvxrank.data import load_letor
    from cvxrank.datasets import make_ranking

    if args.data:
        return load_letor(args.data), f"data: {args.data}"
    data = make_ranking(n_queries=args.queries, n_features=args.features, n_grades=args.grades,
                        random_state=args.seed)
    return data, (f"data: generated (make_ranking, {args.queries} queries, {args.features} features, "
                  f"{args.grades} grades, seed {args.seed})")
