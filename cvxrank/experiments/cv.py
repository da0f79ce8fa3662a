"""Cross-validation of the papers' rankers: folds by query, parameters chosen on a validation split.

The protocol of the SIGIR 2006 experiments (and of LETOR): every fold has a
training, a validation and a test part, with no query in two parts. For each
method and fold, every point of the method's parameter grid is fitted on the
training part and scored on the validation part (mean NDCG@10 by default);
the best one is evaluated on the test part. The result holds the per-query
test metrics of every method, their means (per fold, then over folds), the
chosen parameters and sign tests between methods on per-query NDCG@1 (as in
Table 2 of the SIGIR paper).

Splits come from :func:`query_folds` (generated or any RankingData),
:func:`letor_folds` (a ``Fold1/train.txt|vali.txt|test.txt`` layout) or
:func:`holdout_split` (a train and a test file; validation queries are
carved out of the training file).
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.model_selection import ParameterGrid

from cvxrank._validation import Interval, Options, check
from cvxrank.data import RankingData, load_letor
from cvxrank.evaluation import DEFAULT_KS, per_query_metrics
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.experiments.significance import sign_test_table
from cvxrank.reporting import markdown_table

__all__ = ["Split", "CVResult", "DEFAULT_METHODS", "DEFAULT_GRIDS", "query_folds", "letor_folds", "holdout_split",
           "cross_validate"]

#: The methods of Table 2 of the SIGIR paper plus the listwise ones (names of cvxrank.estimators.methods).
DEFAULT_METHODS = ("ranksvm", "rsvm-ir-rank", "rsvm-ir-query", "rsvm-ir-qp", "rsvm-ir-gd", "listmle", "cs-rglist")

#: Parameter grid per method (a method not listed gets the "pairwise" grid).
DEFAULT_GRIDS = {
    "pairwise": {"lam": [0.01, 0.1, 1.0, 10.0]},
    "listmle": {"C": [0.1, 1.0, 10.0, 100.0]},
    "cs-rglist": {"C": [0.1, 1.0, 10.0, 100.0], "pcf": [1.5, 2.0]},
}


@dataclass
class Split:
    """One fold: training, validation (optional) and test data, with no query shared.

    ``separate_test=True`` marks a test set from another file (its query ids
    may repeat the training file's numbering without being the same queries),
    so only training and validation are checked for shared query ids.
    """

    name: str
    train: RankingData
    vali: RankingData | None
    test: RankingData
    separate_test: bool = False

    def __post_init__(self):
        parts = {"train": self.train, "vali": self.vali, "test": self.test}
        for part, d in parts.items():
            if d is not None and not isinstance(d, RankingData):
                raise ValidationError(f"split {self.name}: {part} must be RankingData, got {type(d).__name__}")
        ids = {p: set(np.asarray(d.query_ids).tolist()) for p, d in parts.items() if d is not None}
        checks = (("train", "vali"),) if self.separate_test else (("train", "test"), ("train", "vali"), ("vali", "test"))
        for a, b in checks:
            if a in ids and b in ids and ids[a] & ids[b]:
                shared = sorted(ids[a] & ids[b])[:5]
                raise ValidationError(f"split {self.name}: queries {shared} are in both {a} and {b}")


def _split_ids(ids, n_parts, rng):
    ids = np.asarray(ids)
    return [np.sort(part) for part in np.array_split(ids[rng.permutation(ids.shape[0])], n_parts)]


def query_folds(data: RankingData, n_folds: int = 5, *, random_state=0) -> list[Split]:
    """LETOR-style rotation over query folds: fold ``i`` tests on part ``i``, validates on ``i+1``, trains on the rest.

    Queries are shuffled with ``random_state`` and dealt into ``n_folds``
    parts of (nearly) equal numbers of queries.
    """
    if not isinstance(data, RankingData):
        raise ValidationError(f"query_folds takes RankingData, got {type(data).__name__}")
    if not Interval(3, None, integer=True).admits(n_folds):
        raise ValidationError(f"n_folds must be an integer >= 3 (train, validation, test), got {n_folds!r}")
    if n_folds > data.n_queries:
        raise ValidationError(f"n_folds={n_folds} but the data have only {data.n_queries} queries: "
                              "a split would have a query-less part")
    parts = _split_ids(data.query_ids, n_folds, np.random.default_rng(random_state))
    splits = []
    for i in range(n_folds):
        test, vali = parts[i], parts[(i + 1) % n_folds]
        train = np.concatenate([p for j, p in enumerate(parts) if j not in (i, (i + 1) % n_folds)])
        splits.append(Split(f"fold{i + 1}", data.select_queries(train), data.select_queries(vali),
                            data.select_queries(test)))
    return splits


def holdout_split(train: RankingData, test: RankingData, *, vali_fraction: float = 0.2, random_state=0,
                  name: str = "holdout") -> list[Split]:
    """One split from a training and a test set; ``vali_fraction`` of the training queries validate."""
    check("vali_fraction", vali_fraction, Interval(0, 1, closed="neither"))
    ids = np.asarray(train.query_ids)
    n_vali = int(round(vali_fraction * ids.shape[0]))
    if n_vali < 1 or n_vali >= ids.shape[0]:
        raise ValidationError(f"{ids.shape[0]} training queries are too few to hold out {vali_fraction:.0%} "
                              "for validation")
    perm = np.random.default_rng(random_state).permutation(ids.shape[0])
    vali, rest = np.sort(ids[perm[:n_vali]]), np.sort(ids[perm[n_vali:]])
    return [Split(name, train.select_queries(rest), train.select_queries(vali), test, separate_test=True)]


def letor_folds(root, *, n_features: int | None = None) -> list[Split]:
    """The splits of a LETOR folder: ``root/Fold*/{train,vali,test}.{txt,letor}``.

    All files are read with one feature count. A missing fold folder or file
    is an error naming it.
    """
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise ValidationError(f"{root}: no such folder")
    folds = sorted((d for d in os.listdir(root) if d.lower().startswith("fold") and
                    os.path.isdir(os.path.join(root, d))), key=lambda d: (len(d), d))
    if not folds:
        raise ValidationError(f"{root} has no Fold* folders (expected Fold1/train.txt, vali.txt, test.txt, ...)")
    paths, missing = [], []
    for fold in folds:
        for part in ("train", "vali", "test"):
            found = [os.path.join(root, fold, part + ext) for ext in (".txt", ".letor")
                     if os.path.isfile(os.path.join(root, fold, part + ext))]
            if found:
                paths.append(found[0])
            else:
                missing.append(os.path.join(fold, part + ".txt"))
    if missing:
        raise ValidationError(f"{root}: missing fold files {', '.join(missing[:6])}")
    data = load_letor(paths, n_features=n_features)
    return [Split(fold, *data[3 * i:3 * i + 3]) for i, fold in enumerate(folds)]


@dataclass
class CVResult:
    """Per-query test metrics of every method, the chosen parameters, and summaries."""

    per_query: pd.DataFrame
    selection: pd.DataFrame
    meta: dict = field(default_factory=dict)

    @property
    def per_fold(self) -> pd.DataFrame:
        """Each fold's mean over its test queries: columns ``method``, ``fold`` and the metrics."""
        metrics = [c for c in self.per_query.columns if c not in ("method", "fold", "qid")]
        return self.per_query.groupby(["method", "fold"], sort=False)[metrics].mean().reset_index()

    @property
    def summary(self) -> pd.DataFrame:
        """Mean over folds of each fold's mean over test queries; one row per method (in run order)."""
        per_fold = self.per_fold.set_index(["method", "fold"])
        table = per_fold.groupby(level="method", sort=False).mean()
        return table.reindex(list(dict.fromkeys(self.per_query["method"])))

    @property
    def chosen(self) -> pd.Series:
        """The parameters chosen per method, with the number of folds that chose them, e.g.
        ``"lam=10 (4/5 folds), lam=1 (1/5)"``; indexed like :attr:`summary`."""
        out = {}
        for method, sel in self.selection.groupby("method", sort=False):
            counts = sel["params"].value_counts(sort=True)
            parts = [f"{p} ({n}/{len(sel)}{' folds' if i == 0 else ''})" for i, (p, n) in enumerate(counts.items())]
            out[method] = ", ".join(parts)
        return pd.Series(out, name="chosen").reindex(self.summary.index)

    def edge_warnings(self) -> list[str]:
        """One line per method and parameter value chosen at the edge (lowest or highest value) of its
        grid: the validation score may still rise beyond the grid, so the grid should be widened.
        Only grids of at least three values count: with two, every choice is an edge."""
        if "at_edge" not in self.selection:
            return []
        lines = []
        for method, sel in self.selection.groupby("method", sort=False):
            edges = sel["at_edge"].fillna("").str.split("; ").explode()
            counts = edges[edges != ""].value_counts(sort=True)
            if len(counts):
                where = ", ".join(f"{edge} in {n} of {len(sel)} folds" for edge, n in counts.items())
                lines.append(f"{method} chose the edge of its grid: {where}; the best value may lie outside "
                             "the grid (widen it)")
        return lines

    def sign_tests(self, metric: str = "ndcg@1", *, baseline: str | None = None) -> pd.DataFrame:
        """Sign tests on per-query ``metric`` between methods (every pair, or each against ``baseline``)."""
        return sign_test_table(self.per_query, metric, baseline=baseline)

    def to_markdown(self, *, title: str = "Cross-validation", metrics=None) -> str:
        """A report: the means table, the chosen parameters and the sign tests on NDCG@1."""
        summary = self.summary if metrics is None else self.summary[list(metrics)]
        baseline = self.meta.get("baseline")
        lines = [f"# {title}", ""]
        if self.meta.get("description"):
            lines += [self.meta["description"], ""]
        lines += ["## Test metrics (mean over folds of the mean over test queries)", "",
                  markdown_table(summary.assign(chosen=self.chosen)), ""]
        warnings_ = self.edge_warnings()
        if warnings_:
            lines += ["**Warning: parameters chosen at the edge of their grid.**", ""]
            lines += [f"- {w}" for w in warnings_] + [""]
        sel = self.selection.copy()
        lines += ["## Parameters chosen on the validation queries", "",
                  markdown_table(sel.set_index(["method", "fold"]), floatfmt=".3g"), ""]
        tests = self.sign_tests("ndcg@1", baseline=baseline) if "ndcg@1" in self.per_query else None
        if tests is not None and len(tests):
            lines += [f"## Sign tests on per-query NDCG@1{' against ' + baseline if baseline else ''}", "",
                      "wins/losses count test queries where `method` scores higher/lower than `versus`; "
                      "ties are dropped; two-sided exact binomial p-value.", "",
                      markdown_table(tests.set_index("method"), floatfmt=".3g"), ""]
        return "\n".join(lines)

    def save(self, folder) -> list[str]:
        """Write ``results.csv`` (the means), ``per_query.csv``, ``selection.csv``, ``sign_tests.csv`` and
        ``report.md`` into ``folder`` (created if missing): all of them or none (:func:`cvxrank._io.write_all`:
        a full disk or an interrupt leaves every earlier file as it was)."""
        from cvxrank._io import write_all

        folder = os.fspath(folder)
        parent = os.path.dirname(os.path.abspath(folder))
        if not os.path.isdir(parent):
            raise ValidationError(f"cannot write into {folder}: folder {parent} does not exist")
        os.makedirs(folder, exist_ok=True)
        # pandas 2.0 with numpy 1.24 writes a NaN (a sign test without pairs) through a cast that warns
        with np.errstate(invalid="ignore"):
            files = {
                "results.csv": self.summary.to_csv(),
                "per_query.csv": self.per_query.to_csv(index=False),
                "selection.csv": self.selection.to_csv(index=False),
                "sign_tests.csv": self.sign_tests("ndcg@1", baseline=self.meta.get("baseline")).to_csv(index=False),
                "report.md": self.to_markdown(title=self.meta.get("title", "Cross-validation")) + "\n",
            }
        return write_all({os.path.join(folder, name): text for name, text in files.items()})


#: The files :meth:`CVResult.save` writes.
SAVED_FILES = frozenset({"results.csv", "per_query.csv", "selection.csv", "sign_tests.csv", "report.md"})


def _grid_for(method: str, grids) -> list[dict]:
    grids = DEFAULT_GRIDS if grids is None else {**DEFAULT_GRIDS, **grids}
    return list(ParameterGrid(grids.get(method, grids["pairwise"])))


def _fit(method, params, fixed, train, random_state):
    from cvxrank.estimators.methods import make_ranker

    model = make_ranker(method, **fixed, **params)
    if "random_state" in model.get_params() and "random_state" not in fixed:
        model.set_params(random_state=random_state)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        model.fit(train)
    return model, time.perf_counter() - start


def _fit_grid(method, grid, fixed, train, random_state):
    """Yield ``(point, fitted model, seconds)`` for every grid point.

    A pure ``λ`` grid of a pairwise method goes through :meth:`fit_path`: one
    compiled CVXPY problem re-solved through its Parameters (DPP).
    """
    from cvxrank.estimators.methods import make_ranker

    proto = make_ranker(method, **fixed)
    if hasattr(proto, "fit_path") and len(grid) > 1 and all(set(p) == {"lam"} for p in grid):
        if "random_state" in proto.get_params() and "random_state" not in fixed:
            proto.set_params(random_state=random_state)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
            models = proto.fit_path(train, lams=[p["lam"] for p in grid])
        seconds = (time.perf_counter() - start) / len(grid)
        for point, model in zip(grid, models):
            yield point, model, seconds
        return
    for point in grid:
        model, seconds = _fit(method, point, fixed, train, random_state)
        yield point, model, seconds


def _status(model) -> tuple[str, float]:
    s = getattr(model, "solve_summary_", None) or {}
    return str(s.get("status", "")), float(s.get("relative_gap", np.nan))


def method_labels(methods, what: str = "methods") -> list[str]:
    """The tables' labels of ``methods``; a :class:`ValidationError` for an unknown name or a method named
    twice (maybe by an alias: ``rsvm-ir`` is ``rsvm-ir-qp``), which would be fitted twice for one row."""
    from cvxrank.estimators.methods import method_label

    labels = [method_label(m) for m in methods]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValidationError(f"{what} {','.join(map(str, methods))} name {', '.join(twice)} more than once")
    return labels


def cross_validate(splits, methods=DEFAULT_METHODS, *, grids=None, params=None, ks=DEFAULT_KS, relevant=1,
                   select_by: str = "ndcg@10", random_state=0, progress: bool | None = None,
                   baseline: str | None = None, max_iter: int | None = None) -> CVResult:
    """Run every method on every split, choosing parameters on the validation part.

    Parameters
    ----------
    splits : list of Split, or RankingData
        RankingData is split by :func:`query_folds` (5 folds, ``random_state``).
    methods : sequence of str
        Names of :data:`cvxrank.estimators.methods.METHODS`.
    grids : dict, optional
        ``{method: {param: [values]}}`` overriding :data:`DEFAULT_GRIDS`
        (key ``"pairwise"`` for every pairwise method without its own).
    params : dict, optional
        ``{method: {param: value}}`` fixed parameters (e.g. ``{"rsvm-ir-gd": {"max_iter": 2000}}``).
    ks, relevant :
        Metrics of :func:`cvxrank.evaluation.per_query_metrics`.
    select_by : str, default "ndcg@10"
        The validation metric (mean over validation queries) that picks the grid point.
    progress : bool, optional
        Show a tqdm progress bar (default: when stderr is a terminal).
    baseline : str, optional
        The method the report's sign tests compare with (default: all pairs).
    max_iter : int, optional
        The iteration (``cutting_plane``: oracle-call) cap of every fit whose method ``params`` sets none.
        Default: each solver's work limit
        (:attr:`~cvxrank.solvers.registry.SolverSpec.work_limit`), which :func:`cvxrank.solve` gives.

    Returns
    -------
    CVResult
    """
    from tqdm.auto import tqdm

    from cvxrank.estimators.methods import method_label
    from cvxrank.solvers.registry import ITERATION_CAP

    if isinstance(splits, RankingData):
        splits = query_folds(splits, random_state=random_state)
    splits = list(splits)
    if not splits or not all(isinstance(s, Split) for s in splits):
        raise ValidationError("splits must be a non-empty list of Split (or a RankingData)")
    methods = list(methods)
    labels = method_labels(methods)  # validates the names before any fit
    params = params or {}
    for m in params:
        method_label(m)
    check("max_iter", max_iter, ITERATION_CAP.or_none())
    metric_names = list(per_query_metrics([1, 0], [1.0, 0.0], [1, 1], ks=ks, relevant=relevant).columns)
    check("select_by", select_by, Options(tuple(metric_names)))
    if baseline is not None and baseline not in labels and baseline not in methods:
        raise ValidationError(f"baseline {baseline!r} is not one of the methods {methods}")
    baseline = method_label(baseline) if baseline in methods else baseline
    runs = sum(len(_grid_for(m, grids)) * len(splits) for m in methods)
    bar = tqdm(total=runs, desc="cv", disable=(not _isatty()) if progress is None else not progress, leave=False)
    rows, selection = [], []
    try:
        for method, label in zip(methods, labels):
            fixed = {**({} if max_iter is None else {"max_iter": max_iter}), **dict(params.get(method, {}))}
            grid = _grid_for(method, grids)
            for split in splits:
                best = None
                for point, model, seconds in _fit_grid(method, grid, fixed, split.train, random_state):
                    bar.set_postfix_str(f"{label} {split.name} {point}")
                    if split.vali is not None and len(grid) > 1:
                        v = split.vali
                        score = float(per_query_metrics(v.y, model.decision_function(v.X), v.qid, ks=ks,
                                                        relevant=relevant)[select_by].mean())
                    else:
                        score = np.nan
                    if best is None or score > best[0]:
                        best = (score, point, model, seconds)
                    bar.update(1)
                score, point, model, seconds = best
                status, gap = _status(model)
                edge = _edges(point, grid) if split.vali is not None and len(grid) > 1 else ""
                selection.append({"method": label, "fold": split.name, "params": _fmt(point),
                                  f"vali_{select_by}": score, "status": status, "relative_gap": gap,
                                  "fit_seconds": seconds, "at_edge": edge})  # a path's time is shared equally by its points
                t = split.test
                table = per_query_metrics(t.y, model.decision_function(t.X), t.qid, ks=ks, relevant=relevant)
                table.insert(0, "fold", split.name)
                table.insert(0, "method", label)
                rows.append(table.reset_index())
    finally:
        bar.close()
    per_query = pd.concat(rows, ignore_index=True)
    per_query = per_query[["method", "fold", "qid"] + metric_names]
    meta = {"methods": labels, "splits": [s.name for s in splits], "select_by": select_by, "ks": list(ks),
            "relevant": relevant, "baseline": baseline}
    return CVResult(per_query, pd.DataFrame(selection), meta)


def _edges(point: dict, grid: list[dict]) -> str:
    """``"lam=10 (top)"`` for each numeric parameter of ``point`` at the lowest ("bottom") or highest
    ("top") of the values ``grid`` tries for it, when it tries at least three (with one value there is
    no choice, with two every choice is an edge and says nothing); joined by "; "."""
    found = []
    for key, value in point.items():
        values = sorted({g[key] for g in grid if isinstance(g[key], (int, float)) and not isinstance(g[key], bool)})
        if len(values) < 3 or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if value == values[0]:
            found.append(f"{_fmt({key: value})} (bottom)")
        elif value == values[-1]:
            found.append(f"{_fmt({key: value})} (top)")
    return "; ".join(found)


def _fmt(point: dict) -> str:
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.items()) or "-"


def _isatty() -> bool:
    import sys

    return hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
