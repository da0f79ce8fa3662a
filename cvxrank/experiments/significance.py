"""The sign test between two rankers on per-query scores (Table 2 of Cao et al., SIGIR 2006).

For every query both methods scored, count the queries where method ``a`` is
better (wins), worse (losses) or equal (ties). Under the null hypothesis that
neither is better, wins among the ``wins + losses`` untied queries follow
``Binomial(wins + losses, 1/2)``; ties carry no information and are dropped
(the usual convention). The p-value is scipy's exact binomial test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from cvxrank.exceptions import ValidationError

__all__ = ["sign_test", "sign_test_table"]


def sign_test(a, b, *, alternative: str = "two-sided", tol: float = 1e-12) -> dict:
    """Sign test of per-query scores ``a`` against ``b``.

    Parameters
    ----------
    a, b : pandas.Series indexed by query id, or equal-length arrays
        Per-query values of the same metric (e.g. NDCG@1). Series are aligned
        on their index; only queries present in both count.
    alternative : {"two-sided", "greater", "less"}
        "greater": ``a`` is better than ``b``.
    tol : float
        Differences within ``tol`` count as ties.

    Returns
    -------
    dict with ``wins``, ``losses``, ``ties``, ``n`` (queries compared), ``p_value``.

    Examples
    --------
    >>> r = sign_test([1.0, 0.5, 0.7, 0.9, 0.3], [0.2, 0.5, 0.1, 0.4, 0.1])
    >>> r["wins"], r["losses"], r["ties"], round(r["p_value"], 4)
    (4, 0, 1, 0.125)
    """
    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        a, b = a.align(b, join="inner")
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValidationError(f"sign_test needs two equal-length 1-d score lists, got shapes {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValidationError("sign_test: no query is scored by both methods")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValidationError("sign_test: scores must be finite")
    d = a - b
    wins, losses = int(np.sum(d > tol)), int(np.sum(d < -tol))
    ties = int(a.size - wins - losses)
    p = 1.0 if wins + losses == 0 else float(binomtest(wins, wins + losses, 0.5, alternative=alternative).pvalue)
    return {"wins": wins, "losses": losses, "ties": ties, "n": int(a.size), "p_value": p}


def sign_test_table(per_query: pd.DataFrame, metric: str = "ndcg@1", *, baseline: str | None = None) -> pd.DataFrame:
    """Sign tests between methods on one metric.

    Parameters
    ----------
    per_query : DataFrame
        Long format with columns ``method``, ``qid`` (plus ``fold``, which is
        folded into the query key) and ``metric``.
    metric : str, default "ndcg@1"
    baseline : str, optional
        Compare every method with this one; default: every ordered pair.

    Returns
    -------
    DataFrame with columns method, versus, wins, losses, ties, n, p_value.
    """
    if metric not in per_query.columns:
        raise ValidationError(f"no column {metric!r} in the per-query table; have {list(per_query.columns)}")
    keys = ["fold", "qid"] if "fold" in per_query.columns else ["qid"]
    wide = per_query.pivot_table(index=keys, columns="method", values=metric, aggfunc="first")
    methods = list(dict.fromkeys(per_query["method"]))
    if baseline is not None and baseline not in methods:
        raise ValidationError(f"baseline {baseline!r} is not one of the methods {methods}")
    pairs = [(m, baseline) for m in methods if m != baseline] if baseline else \
        [(m, o) for i, m in enumerate(methods) for o in methods[i + 1:]]
    rows = []
    for m, o in pairs:
        both = wide[[m, o]].dropna()
        rows.append({"method": m, "versus": o, **sign_test(both[m].to_numpy(), both[o].to_numpy())})
    return pd.DataFrame(rows, columns=["method", "versus", "wins", "losses", "ties", "n", "p_value"])
