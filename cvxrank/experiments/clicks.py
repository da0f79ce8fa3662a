"""Propensity SVM-Rank on simulated clicks: the synthetic experiment of Joachims, Swaminathan & Schnabel (WSDM 2017).

The paper (*Unbiased Learning-to-Rank with Biased Feedback*, section 6) simulates clicks on the
Yahoo! LTR data: a production ranker, a Ranking SVM trained with full information on 1 % of the
training queries, shows each query's top 10 results; position ``k`` is examined with probability
``(1/k)^η`` and an examined document is clicked with probability 1 when relevant and
``ε₋ = 0.1`` when not. It then trains on the clicks of the training queries and measures the
learned rankers on the test queries' true relevance, for several ``η`` and a growing number of
clicks: Propensity SVM-Rank (every click weighed ``1/p``) approaches the full-information
ranker, the naive ranker (the same objective, every click weighing 1) does not.

:func:`run_click_experiment` runs it with cvxrank's pieces on any graded training and test
split (:mod:`cvxrank.clicks` simulates and turns clicks into weighted pairs,
:class:`~cvxrank.estimators.ClickRankSVM` fits, :func:`cvxrank.solve` certifies), and reports
NDCG@10 of every model on the **true grades of the test split**
(:func:`cvxrank.metrics.ndcg_score`) and the paper's own measure, the average rank of the
relevant test documents. The models:

==========================  =====================================================================
``production``              RankSVM on ``production_fraction`` of the training queries, full information
``full_information``        RankSVM on the true grades of every training query (the skyline)
``naive``                   the clicks, ``rule="propensity"`` with every propensity 1 (``η = 0``):
                            the unweighted version of the same objective, the paper's naive baseline
``propensity_true``         Propensity SVM-Rank with the true ``η`` of the simulation
``propensity_estimated``    Propensity SVM-Rank with ``η̂`` estimated from swap interventions
                            (:func:`~cvxrank.clicks.make_clicks` ``swap=True``) or by EM
``skip_above``              (optional) Joachims 2002: click > skipped above, every pair 1
==========================  =====================================================================

Every model minimises its weighted hinge loss divided by the sum of its weights plus
``λ‖w‖²`` (``normalize=True`` of :class:`~cvxrank.estimators.ClickRankSVM`; for the RankSVMs,
``λ`` times their number of pairs): one ``λ`` for all, on the scale of the mean loss, whatever
the number of clicks and the size of the weights ``1/p``. All work is limited by counts
(sessions, repeats), never by time; every random draw comes from ``random_state``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cvxrank._validation import POSITIVE_INT, SEED, Interval, Options, check, check_each
from cvxrank.clicks import make_clicks, relevance_threshold, relevant_documents
from cvxrank.costs import check_lam
from cvxrank.data import RankingData
from cvxrank.datasets import make_ranking
from cvxrank.estimators import ClickRankSVM, RankSVM
from cvxrank.exceptions import CvxrankError, ValidationError
from cvxrank.experiments._defaults import CLICK_ETAS, CLICK_LAM, CLICK_SESSIONS
from cvxrank.metrics import ndcg_score
from cvxrank.problem import RankingProblem

__all__ = ["CLICK_ETAS", "CLICK_LAM", "CLICK_MODELS", "CLICK_MODEL_LABELS", "CLICK_SESSIONS", "ClickExperimentResult",
           "make_click_data", "mean_relevant_rank", "run_click_experiment"]

#: Every model the experiment knows, in report order; the first two are trained once.
CLICK_MODELS = ("production", "full_information", "naive", "skip_above", "propensity_true", "propensity_estimated")
#: The click models trained by default (``skip_above`` is optional).
DEFAULT_CLICK_MODELS = ("naive", "propensity_true", "propensity_estimated")
#: Names used in tables and legends.
CLICK_MODEL_LABELS = {"production": "production ranker", "full_information": "full information",
                      "naive": "naive (1/p = 1)", "skip_above": "click > skip above",
                      "propensity_true": "propensity, true η", "propensity_estimated": "propensity, estimated η"}
_FIXED = ("production", "full_information")


def mean_relevant_rank(data: RankingData, scores, relevant) -> float:
    """The paper's measure: the mean over queries of the average rank of their relevant documents.

    Ranks are ``1 = top`` of each query ranked by ``scores`` descending (ties by row); queries
    without a relevant document are skipped. Lower is better.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> data = RankingData(np.zeros((4, 1)), [1, 0, 0, 1], qid=[1, 1, 2, 2])
    >>> mean_relevant_rank(data, [0.5, 0.9, 0.1, 0.7], data.y == 1)
    1.5
    """
    s = np.asarray(scores, dtype=np.float64)
    order = np.lexsort((np.arange(data.n_documents), -s, data.query_index))
    start = np.append(0, np.cumsum(np.bincount(data.query_index, minlength=data.n_queries)))
    rank = np.empty(data.n_documents, dtype=np.float64)
    rank[order] = np.arange(data.n_documents) - np.repeat(start[:-1], np.diff(start)) + 1
    rel = np.asarray(relevant, dtype=bool)
    count = np.bincount(data.query_index[rel], minlength=data.n_queries)
    total = np.bincount(data.query_index[rel], weights=rank[rel], minlength=data.n_queries)
    has = count > 0
    return float(np.mean(total[has] / count[has])) if has.any() else float("nan")


def make_click_data(*, n_queries: int = 250, n_test: int = 50, n_features: int = 20, noise: float = 1.0,
                    random_state: int = 0) -> tuple[RankingData, RankingData]:
    """Generated graded data for the click experiment: ``(train, test)`` split by query.

    :func:`cvxrank.make_ranking` with 10 to 30 documents a query and five grades in the shares
    of the LightGBM sample (0.21, 0.40, 0.29, 0.07, 0.02, lowest grade first); the last
    ``n_test`` queries are the test split.

    Examples
    --------
    >>> train, test = make_click_data(n_queries=12, n_test=4, n_features=3)
    >>> train.n_queries, test.n_queries, train.n_features
    (8, 4, 3)
    """
    n_queries = check("n_queries", n_queries, POSITIVE_INT)
    n_test = check("n_test", n_test, POSITIVE_INT)
    if n_test >= n_queries:
        raise ValidationError(f"n_test={n_test} leaves no training query of n_queries={n_queries}")
    data = make_ranking(n_queries=n_queries, docs_per_query=(10, 30), n_features=n_features, noise=noise,
                        proportions=(0.21, 0.40, 0.29, 0.07, 0.02), random_state=random_state)
    ids = data.query_ids
    return data.select_queries(ids[:-n_test]), data.select_queries(ids[-n_test:])


@dataclass(eq=False)
class ClickExperimentResult:
    """Outcome of :func:`run_click_experiment`.

    Attributes
    ----------
    frame : pandas.DataFrame
        Long format, one row per fitted model: ``model, eta, n_sessions, repeat, ndcg`` (NDCG@10 on
        the test split's true grades), ``mean_rank`` (average rank of the relevant test documents,
        lower is better), ``eta_used`` (``η`` of the propensities: true, estimated, 0 for
        ``naive``), ``eta_se``, ``n_clicks``, ``n_pairs``, ``lam`` (of the problem solved),
        ``status``, ``relative_gap`` (certified), ``seconds`` (fit). ``production`` and
        ``full_information`` are trained once (``eta`` and ``n_sessions`` NaN). A failed fit is a
        row with its error in ``status`` and NaN scores.
    settings : dict
        Every argument that shaped the run, the data sizes and the package version.
    times : dict
        Wall-clock seconds: ``"fixed"`` (production and full-information models), ``"clicks"``
        (every simulation and click model) and ``"total"``.
    """

    frame: pd.DataFrame
    settings: dict
    times: dict = field(default_factory=dict)

    @property
    def models(self) -> list:
        """The click models of the run, in report order."""
        present = set(self.frame["model"])
        return [m for m in CLICK_MODELS if m in present and m not in _FIXED]

    def reference(self, metric: str = "ndcg") -> dict:
        """``{"production": value, "full_information": value}`` of ``metric``."""
        fixed = self.frame[self.frame["model"].isin(_FIXED)].set_index("model")[metric]
        return {m: float(fixed.get(m, np.nan)) for m in _FIXED}

    def table(self, metric: str = "ndcg", stat: str = "mean") -> pd.DataFrame:
        """``metric`` (``"ndcg"`` or ``"mean_rank"``) over the repeats: index ``(eta, n_sessions)``, a column
        per click model, then the two reference models (the same on every row). ``stat``: ``"mean"``
        or ``"std"`` (over repeats; 0 for the references)."""
        check("stat", stat, Options(("mean", "std")))
        clicks = self.frame[~self.frame["model"].isin(_FIXED)]
        grouped = clicks.groupby(["eta", "n_sessions", "model"])[metric]
        values = (grouped.mean() if stat == "mean" else grouped.std(ddof=1)).unstack("model")
        values = values[[m for m in self.models if m in values.columns]]
        values.index = values.index.set_levels([values.index.levels[0], values.index.levels[1].astype(int)])
        for m, v in self.reference(metric).items():
            values[m] = v if stat == "mean" else 0.0
        return values

    def comparison(self) -> pd.DataFrame:
        """The issue's question at each ``η`` and number of sessions: does the propensity-weighted model beat
        the naive one? Columns ``naive``, ``propensity_true``, ``propensity_estimated`` (mean NDCG@10),
        ``gain_true`` and ``gain_estimated`` (the mean differences to ``naive``), ``wins_true`` (repeats in
        which the true-``η`` model scores higher than ``naive`` on the same clicks, of ``repeats``)."""
        frame = self.frame[~self.frame["model"].isin(_FIXED)]
        wide = frame.pivot_table(index=["eta", "n_sessions", "repeat"], columns="model", values="ndcg")
        out = wide.groupby(level=["eta", "n_sessions"]).mean()
        cols = [m for m in ("naive", "propensity_true", "propensity_estimated") if m in out.columns]
        out = out[cols]
        if "naive" in out.columns:
            for m, name in (("propensity_true", "true"), ("propensity_estimated", "estimated")):
                if m in out.columns:
                    out[f"gain_{name}"] = out[m] - out["naive"]
            if "propensity_true" in wide.columns:
                wins = (wide["propensity_true"] > wide["naive"]).groupby(level=["eta", "n_sessions"]).sum()
                out["wins_true"] = wins.astype(int)
        out.index = out.index.set_levels([out.index.levels[0], out.index.levels[1].astype(int)])
        return out

    def report(self) -> str:
        """A plain-text report: settings, the mean NDCG@10 table, the comparison and the certificates."""
        s = self.settings
        ref = self.reference()
        table = self.table().drop(columns=list(_FIXED))
        table.columns = [CLICK_MODEL_LABELS[m] for m in table.columns]
        rank = self.reference("mean_rank")
        statuses = self.frame["status"].value_counts().to_dict()
        gaps = self.frame["relative_gap"].dropna()
        est = self.frame[self.frame["model"] == "propensity_estimated"].groupby("eta")["eta_used"].agg(["mean", "std"])
        lines = [
            f"Propensity SVM-Rank on simulated clicks (Joachims et al., WSDM 2017): {s['dataset']}",
            (f"train {s['train']['n_queries']} queries / {s['train']['n_documents']} documents, test "
             f"{s['test']['n_queries']} / {s['test']['n_documents']}; relevant: grade >= {s['threshold']}; "
             f"top {s['top_k']} shown, noise {s['noise']}, lambda {s['lam']:g} (per unit of mean loss), "
             f"{s['repeats']} repeats, seed {s['random_state']}"),
            (f"production ranker ({s['production_queries']} training queries, full information): NDCG@10 "
             f"{ref['production']:.4f}, mean relevant rank {rank['production']:.2f}; full information: NDCG@10 "
             f"{ref['full_information']:.4f}, mean relevant rank {rank['full_information']:.2f}"),
            "",
            "NDCG@10 on the test split's true grades (mean over repeats):",
            table.to_string(float_format=lambda v: f"{v:.4f}"),
            "",
            "propensity-weighted minus naive (mean NDCG@10 difference; wins: repeats where true eta > naive):",
            self._comparison_text(),
        ]
        if len(est):
            lines += ["", f"estimated eta ({s['estimator']}): " + ", ".join(
                f"eta {e:g}: {r['mean']:.3f} (sd {0.0 if np.isnan(r['std']) else r['std']:.3f})"
                for e, r in est.iterrows())]
        lines += ["", f"fits: {len(self.frame)}; status: {statuses}; largest certified relative gap "
                      f"{gaps.max():.1e}; time {self.times.get('total', float('nan')):.1f} s"]
        return "\n".join(lines)

    def _comparison_text(self) -> str:
        table = self.comparison()
        formats = {c: (lambda v: f"{v:+.4f}") if c.startswith("gain") else (lambda v: f"{v:.4f}") for c in table.columns}
        formats["wins_true"] = lambda v: f"{int(v)}/{self.settings['repeats']}"
        return table.to_string(formatters=formats)

    def to_json(self) -> dict:
        """JSON-ready: ``settings``, ``times``, ``rows`` (the long frame as records, NaN as null)."""
        from cvxrank._io import plain_json

        rows = self.frame.astype(object).where(self.frame.notna(), None).to_dict("records")
        return plain_json({"settings": self.settings, "times": self.times, "rows": rows})


def _summary(data: RankingData) -> dict:
    return {"n_queries": data.n_queries, "n_documents": data.n_documents, "n_features": data.n_features}


def _fit_row(model_name, fit, evaluate, **extra) -> dict:
    """Fit one model; a failure is a row (its message in ``status``), not a crash."""
    t0 = time.perf_counter()
    row = {"model": model_name, **extra}
    try:
        model = fit()
    except CvxrankError as exc:
        row.update(status=f"error: {exc}", seconds=time.perf_counter() - t0)
        return row
    ndcg, rank = evaluate(model.coef_)
    result = model.result_
    row.update(ndcg=ndcg, mean_rank=rank, status=result.status, relative_gap=float(result.relative_gap),
               lam=float(model.lam_), seconds=time.perf_counter() - t0)
    if hasattr(model, "n_pairs_"):
        row.update(n_pairs=model.n_pairs_)
    if getattr(model, "eta_", None) is not None:
        row.update(eta_used=float(model.eta_))
        estimate = getattr(model, "propensity_estimate_", None)
        if estimate is not None:
            row.update(eta_se=float(estimate.eta_se))
    return row


def run_click_experiment(train: RankingData, test: RankingData, *, etas=CLICK_ETAS, n_sessions=CLICK_SESSIONS,
                         noise: float = 0.1, top_k: int = 10, lam: float = CLICK_LAM,
                         production_fraction: float = 0.05, estimator: str = "swap", swap_sessions: int | None = None,
                         models=DEFAULT_CLICK_MODELS, threshold=None, clip: float | None = None, repeats: int = 2,
                         solver: str = "clarabel", tol: float | None = None, random_state: int = 0,
                         dataset: str = "data") -> ClickExperimentResult:
    """Propensity SVM-Rank against the naive and full-information rankers on simulated clicks (WSDM 2017, section 6).

    For each ``η`` in ``etas``, each number of sessions ``n`` in ``n_sessions`` and each repeat,
    a click log of ``n`` sessions is simulated on ``train`` (:func:`cvxrank.clicks.make_clicks`,
    the production ranker showing the top ``top_k``, examination ``(1/k)^η``, click noise
    ``noise``) and every model of ``models`` is fitted on it
    (:class:`~cvxrank.estimators.ClickRankSVM`); each is scored by NDCG@10 of its scores on
    ``test``'s true grades (exponential gain, log2 discount, :func:`cvxrank.metrics.ndcg_score`)
    and by the mean rank of the relevant test documents (:func:`mean_relevant_rank`). Each model
    solves

    .. math::

        \\min_w \\frac{1}{\\sum_i c_i} \\sum_i c_i \\big[1 - \\langle w, d_i \\rangle\\big]_+ + \\lambda \\lVert w \\rVert^2

    with its own pairs and weights ``c_i`` (1 for the RankSVMs and ``naive``, ``1/p_i`` for the
    propensity models) and the one ``λ`` = ``lam``, certified by :func:`cvxrank.solve`.

    Parameters
    ----------
    train, test : RankingData
        Graded training and test splits with the same features (e.g. :func:`cvxrank.load_letor`
        with the same ``n_features``, or :func:`make_click_data`).
    etas : sequence of float >= 0, default (0.5, 1, 2)
        Severities of the position bias.
    n_sessions : sequence of int, default (1000, 4000, 16000)
        Sessions per simulated log (a fresh log for each).
    noise : float in [0, 1], default 0.1
        Click probability of an examined non-relevant document (``ε₋``).
    top_k : int, default 10
        Results shown per session.
    lam : float, default 3.0
        ``λ`` per unit of mean weighted hinge loss, shared by every model (:data:`CLICK_LAM`).
    production_fraction : float in (0, 1], default 0.05
        Share of the training queries (at least one, drawn with ``random_state``) the production
        ranker learns from with full information. The paper takes 1 % of Yahoo!'s ~20,000
        training queries; 5 % of the LightGBM sample's 201 queries is 10 queries.
    estimator : {"swap", "em"}, default "swap"
        How ``propensity_estimated`` estimates ``η``: from a swap-intervention log of the same
        production ranker (:func:`cvxrank.clicks.estimate_propensities_swap`) or by EM on that
        log (:func:`cvxrank.clicks.estimate_propensities_em`: EM needs documents shown at several
        positions, which a log of one fixed ranking does not have).
    swap_sessions : int, optional
        Sessions of the swap-intervention log; default the same ``n`` as the click log.
    models : sequence of str, default ("naive", "propensity_true", "propensity_estimated")
        Click models to fit, from :data:`CLICK_MODELS` (``production`` and
        ``full_information`` are always fitted).
    threshold : number, optional
        Grade from which a document is relevant (default
        :func:`cvxrank.clicks.relevance_threshold`: the top half of the grades, 2-4 of 0-4; the
        paper takes 3-4 on Yahoo!).
    clip : float >= 1, optional
        Clip the propensity weights of both propensity models at ``clip``.
    repeats : int, default 2
        Independent simulations per ``(η, n)``.
    solver : str, default "clarabel"
    tol : float, optional
        Certified relative gap for status ``"optimal"`` (default: the solver's own).
    random_state : int, default 0
        Seed of every draw: the production ranker's queries, and each log from
        ``(random_state, repeat, η, n)`` (so a cell's clicks do not depend on the other cells).
    dataset : str, default "data"
        A name for the report.

    Returns
    -------
    ClickExperimentResult

    Examples
    --------
    >>> train, test = make_click_data(n_queries=30, n_test=10, n_features=5)
    >>> res = run_click_experiment(train, test, etas=(1.0,), n_sessions=(300,), repeats=1)
    >>> sorted(set(res.frame["status"]))
    ['optimal']
    >>> res.table().columns.tolist()
    ['naive', 'propensity_true', 'propensity_estimated', 'production', 'full_information']
    """
    start = time.perf_counter()
    for name, value in (("train", train), ("test", test)):
        if not isinstance(value, RankingData):
            raise ValidationError(f"{name} must be RankingData (e.g. cvxrank.load_letor(path, n_features=...)), "
                                  f"got {type(value).__name__}")
    if train.n_features != test.n_features:
        raise ValidationError(f"train has {train.n_features} features and test {test.n_features}; load both with "
                              "the same n_features")
    etas = tuple(sorted(set(check_each("etas", etas, Interval(0, np.inf, closed="left")))))
    n_sessions = tuple(sorted(set(check_each("n_sessions", n_sessions, POSITIVE_INT))))
    if not etas or not n_sessions:
        raise ValidationError("etas and n_sessions need at least one value each")
    noise = check("noise", noise, Interval(0, 1))
    top_k = check("top_k", top_k, POSITIVE_INT)
    lam = check_lam(lam)
    production_fraction = check("production_fraction", production_fraction, Interval(0, 1, closed="right"))
    check("estimator", estimator, Options(("swap", "em")))
    if swap_sessions is not None:
        swap_sessions = check("swap_sessions", swap_sessions, POSITIVE_INT)
    if isinstance(models, str):
        models = (models,)
    models = tuple(models)
    for m in models:
        check("models", m, Options(tuple(m for m in CLICK_MODELS if m not in _FIXED)))
    if not models:
        raise ValidationError(f"models needs at least one click model of {CLICK_MODELS[2:]}")
    repeats = check("repeats", repeats, POSITIVE_INT)
    random_state = check("random_state", random_state, SEED)
    if threshold is None:  # the training grades decide, for the clicks and the test split alike
        threshold = relevance_threshold(train.y)
    relevant_test = relevant_documents(test, threshold)

    def evaluate(w):
        scores = test.X @ w
        return (float(ndcg_score(test.y, scores, test.qid, k=10)),
                mean_relevant_rank(test, scores, relevant_test))

    def ranksvm(data):
        n_pairs = RankingProblem(data).n_pairs  # counted, not formed
        if n_pairs == 0:
            raise ValidationError("the production ranker's queries give no pair; raise production_fraction")
        return RankSVM(lam=lam * n_pairs, solver=solver, tol=tol)

    rng = np.random.default_rng(random_state)
    n_prod = max(1, int(round(production_fraction * train.n_queries)))
    prod_ids = np.sort(rng.choice(train.query_ids, size=n_prod, replace=False))
    prod_data = train.select_queries(prod_ids)
    rows = []
    production = {}

    def fit_production():
        production["model"] = ranksvm(prod_data).fit(prod_data)
        return production["model"]

    rows.append(_fit_row("production", fit_production, evaluate, n_clicks=0))
    rows.append(_fit_row("full_information", lambda: ranksvm(train).fit(train), evaluate, n_clicks=0))
    if "model" not in production:
        raise ValidationError(f"the production ranker could not be fitted: {rows[0]['status']}")
    w_prod = production["model"].coef_
    t_fixed = time.perf_counter() - start

    common = {"lam": lam, "normalize": True, "solver": solver, "tol": tol}
    for repeat in range(repeats):
        for eta in etas:
            for n in n_sessions:
                seq = np.random.SeedSequence([random_state, repeat, int(round(eta * 1_000_000)), n])
                click_seed, swap_seed = seq.spawn(2)
                cell = {"eta": eta, "n_sessions": n, "repeat": repeat}
                log = make_clicks(train, ranker=w_prod, eta=eta, noise=noise, n_sessions=n, top_k=top_k,
                                  threshold=threshold, random_state=np.random.default_rng(click_seed))
                cell["n_clicks"] = log.n_clicks
                for m in models:
                    if m == "naive":
                        fit = (lambda: ClickRankSVM(propensities=0.0, **common).fit(log))
                    elif m == "skip_above":
                        fit = (lambda: ClickRankSVM(rule="skip_above", **common).fit(log))
                    elif m == "propensity_true":
                        fit = (lambda: ClickRankSVM(propensities=eta, clip=clip, **common).fit(log))
                    else:
                        def fit():
                            swap_log = make_clicks(train, ranker=w_prod, eta=eta, noise=noise,
                                                   n_sessions=swap_sessions or n, top_k=top_k, swap=True,
                                                   threshold=threshold, random_state=np.random.default_rng(swap_seed))
                            model = ClickRankSVM(propensities="estimate", estimator=estimator, clip=clip, **common)
                            return model.fit(log, propensity_log=swap_log, ranker=w_prod if estimator == "swap" else None)
                    rows.append(_fit_row(m, fit, evaluate, **cell))
    columns = ["model", "eta", "n_sessions", "repeat", "ndcg", "mean_rank", "eta_used", "eta_se", "n_clicks",
               "n_pairs", "lam", "status", "relative_gap", "seconds"]
    frame = pd.DataFrame(rows).reindex(columns=columns)
    # report order of the models (a plain integer key: pandas 2.0 warns when a Categorical is cast back to text)
    order = {m: i for i, m in enumerate(CLICK_MODELS)}
    frame = frame.assign(_order=frame["model"].map(order))
    frame = frame.sort_values(["_order", "eta", "n_sessions", "repeat"], kind="stable", na_position="first")
    frame = frame.drop(columns="_order").reset_index(drop=True)
    from cvxrank import __version__

    settings = {"dataset": dataset, "etas": list(etas), "n_sessions": list(n_sessions), "noise": noise, "top_k": top_k,
                "lam": lam, "production_fraction": production_fraction, "production_queries": int(n_prod),
                "estimator": estimator, "swap_sessions": swap_sessions, "models": list(models),
                "threshold": threshold, "clip": clip, "repeats": repeats, "solver": solver, "tol": tol,
                "random_state": random_state, "train": _summary(train), "test": _summary(test),
                "cvxrank_version": __version__}
    total = time.perf_counter() - start
    return ClickExperimentResult(frame=frame, settings=settings,
                                 times={"fixed": t_fixed, "clicks": total - t_fixed, "total": total})
