"""Summaries of a study table: success rates, shifted geometric means, performance profiles, growth.

A *method* is a (formulation, solver) pair; a *problem* is an (instance,
size, cost) triple. All summaries work per profile, on the table
:func:`cvxrank.study.run_study` returns (or :func:`cvxrank.study.load_results`
reads back).

* :func:`success_rates`: share of runs *found* (status optimal and the
  profile's checks, :func:`cvxrank.study.profiles.passes`), in percent.
* :func:`shifted_geometric_means`: qpbenchmark's runtime metric. Per method,
  the shifted geometric mean of its runtimes,
  ``sgm(t) = exp(mean(log(t_i + s))) - s`` with shift ``s = 10`` seconds, a
  run that was not found counting as the time limit; then divided by the
  smallest such mean of the profile, so the best method scores 1 and a
  method scoring 2 is twice as slow on this test set.
* :func:`performance_profiles`: Dolan and Moré (2002), "Benchmarking
  optimization software with performance profiles". For problem ``p`` and
  method ``m``, ``r_pm = t_pm / min_m' t_pm'`` (``∞`` when ``m`` did not find
  ``p``), and ``ρ_m(τ) = #{p : r_pm ≤ τ} / #problems``.
* :func:`growth_exponents`: least-squares slopes of ``log(time)`` and
  ``log(peak memory)`` against ``log(pairs)``, per instance family and method.

A found run whose time is 0, negative or missing is refused by the time summaries (a ratio to 0
would make every other method infinitely slower): study rows carry cvxrank's own timing where a
solver reports none (``solve_time_source``).

Rows of status ``"unsupported"`` (a solver or formulation that cannot state a cost setting's
variant) are left out of the success rates and the shifted geometric means, which judge a method
on the problems it can state; performance profiles keep them as not solved (``r_pm = ∞``), as
Dolan and Moré do for a solver that cannot handle a problem; :func:`status_counts` counts them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cvxrank._validation import POSITIVE, check
from cvxrank.exceptions import ValidationError
from cvxrank.study.definition import COLUMNS, KEY, size_text

__all__ = [
    "METHOD",
    "PROBLEM",
    "compare_tables",
    "growth_exponents",
    "performance_profiles",
    "shifted_geometric_mean",
    "shifted_geometric_means",
    "status_counts",
    "success_rates",
]

#: Columns naming a method and a problem.
METHOD = ("formulation", "solver")
PROBLEM = ("instance", "size", "cost")


def _check(df: pd.DataFrame, extra=()) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise ValidationError(f"expected a study table (DataFrame), got {type(df).__name__}")
    missing = [c for c in ("profile", "found", *METHOD, *PROBLEM, *extra) if c not in df.columns]
    if missing:
        raise ValidationError(f"the table lacks the study columns {missing}")
    return df


def _stated(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of runs the method could state (not ``"unsupported"``)."""
    return df[df["status"] != "unsupported"] if "status" in df.columns else df


def shifted_geometric_mean(values, shift: float = 10.0) -> float:
    """``exp(mean(log(v + shift))) - shift`` of non-negative values.

    Examples
    --------
    >>> round(shifted_geometric_mean([1.0, 100.0], shift=10.0), 6)
    24.785054
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return float("nan")
    if np.any(v < 0) or not np.all(np.isfinite(v)):
        raise ValidationError("shifted geometric mean needs finite, non-negative values")
    check("shift", shift, POSITIVE)
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


def success_rates(df: pd.DataFrame, by=METHOD) -> pd.DataFrame:
    """Percent of runs found, rows ``by`` (default formulation, solver), one column per profile."""
    df = _stated(_check(df, by))
    table = df.groupby([*by, "profile"], sort=False)["found"].mean().mul(100.0).unstack("profile")
    return table[[p for p in pd.unique(df["profile"]) if p in table.columns]]


def status_counts(df: pd.DataFrame, by=METHOD) -> pd.DataFrame:
    """Number of rows of each status, per ``by`` (all profiles together)."""
    df = _check(df, by)
    return df.groupby([*by, "status"], sort=False).size().unstack("status", fill_value=0)


def _check_times(df: pd.DataFrame, time: str) -> None:
    """Refuse a found run whose ``time`` is 0, negative or missing: it would make every other method
    infinitely slower (a ratio to 0) instead of measuring anything."""
    t = pd.to_numeric(df[time], errors="coerce")
    bad = df[df["found"].astype(bool) & ~(t > 0)]
    if len(bad):
        methods = sorted({f"{r.solver}/{r.formulation}" for r in bad.itertuples()})
        raise ValidationError(
            f"{len(bad)} found run(s) have a {time} of 0, below 0 or missing ({', '.join(methods)}): no ratio or mean "
            f"of times can use them; a solver that reports 0 s (PIQP through CVXPY) is timed by cvxrank in "
            f"study tables since the solve_time_source column exists, so rerun the study, or compare wall_time")


def _runtimes(df: pd.DataFrame, time: str, time_limit: float) -> pd.Series:
    t = pd.to_numeric(df[time], errors="coerce")
    return t.where(df["found"].astype(bool) & t.notna(), time_limit).clip(upper=time_limit)


def shifted_geometric_means(df: pd.DataFrame, *, time_limit: float, shift: float = 10.0, time: str = "wall_time",
                            by=METHOD) -> pd.DataFrame:
    """qpbenchmark's runtime comparison: shifted geometric mean relative to the best, per profile.

    Parameters
    ----------
    df : DataFrame
        A study table.
    time_limit : float
        Seconds a run that was not found counts as (the study's time limit).
    shift : float, default 10
        Shift ``s`` in seconds.
    time : str, default "wall_time"
        The runtime column (``wall_time``: build, compile, solve and certificate; or
        ``solve_time``, the solver alone, see ``solve_time_source``).
    by : tuple of str
        What a method is.

    Returns
    -------
    DataFrame
        Rows ``by``, one column per profile; 1.0 is the best method of the profile.

    Raises
    ------
    ValidationError
        When a found run's time is 0, negative or missing (a ratio to it means nothing).
    """
    df = _stated(_check(df, (*by, time)))
    check("time_limit", time_limit, POSITIVE)
    _check_times(df, time)
    t = _runtimes(df, time, float(time_limit))
    means = t.groupby([df[c] for c in (*by, "profile")], sort=False).apply(
        lambda v: shifted_geometric_mean(v, shift)).unstack("profile")
    return (means / means.min(axis=0))[[p for p in pd.unique(df["profile"]) if p in means.columns]]


def performance_profiles(df: pd.DataFrame, *, time: str = "wall_time", by=METHOD) -> pd.DataFrame:
    """Dolan-Moré performance profiles, one step function per (profile, method).

    Returns
    -------
    DataFrame
        Columns ``profile``, the ``by`` columns, ``tau`` (a performance
        ratio where the profile steps) and ``fraction`` (``ρ(τ)``, the share
        of problems solved within ``τ`` times the best method's time). A
        method that solved nothing has a single row with ``tau = inf``,
        ``fraction = 0``.

    Raises
    ------
    ValidationError
        When a found run's time is 0, negative or missing (a ratio to it means nothing).
    """
    df = _check(df, (*by, time))
    _check_times(df, time)
    out = []
    for profile, sub in df.groupby("profile", sort=False):
        t = pd.to_numeric(sub[time], errors="coerce").where(sub["found"].astype(bool), np.inf)
        table = pd.DataFrame({"t": t.to_numpy()},
                             index=pd.MultiIndex.from_frame(sub[[*PROBLEM, *by]].astype(str))).groupby(
            level=list(range(len(PROBLEM) + len(by)))).min()["t"].unstack([*by])
        best = table.min(axis=1)
        ratios = table.div(best, axis=0).fillna(np.inf)  # inf / inf: no method found the problem
        n = len(ratios)
        for method in ratios.columns:
            r = np.sort(ratios[method].to_numpy())
            finite = r[np.isfinite(r)]
            key = dict(zip(by, method if isinstance(method, tuple) else (method,)))
            if finite.size == 0:
                out.append({"profile": profile, **key, "tau": np.inf, "fraction": 0.0})
                continue
            taus, counts = np.unique(finite, return_counts=True)
            for tau, frac in zip(taus, np.cumsum(counts) / n):
                out.append({"profile": profile, **key, "tau": float(tau), "fraction": float(frac)})
    return pd.DataFrame(out, columns=["profile", *by, "tau", "fraction"])


#: A growth exponent is fitted only over at least this many distinct sizes ...
MIN_SIZES = 3
#: ... spanning at least this ratio (largest / smallest size): two sub-second sizes close together
#: give exponents such as pairs^-0.85 that say nothing about growth.
MIN_SPAN = 4.0
#: What the report says instead of an exponent it does not fit.
NOT_ENOUGH = f"not enough sizes (a fit needs >= {MIN_SIZES} sizes spanning >= {MIN_SPAN:g}x)"


def _fit(x, y):
    """Slope and intercept of log y on log x, the number of distinct sizes and their span; NaN slope
    and intercept unless there are :data:`MIN_SIZES` sizes spanning :data:`MIN_SPAN`."""
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = x[ok], y[ok]
    n = int(np.unique(x).size)
    span = float(x.max() / x.min()) if n else np.nan
    if n < MIN_SIZES or span < MIN_SPAN:
        return np.nan, np.nan, n, span
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope), float(intercept), n, span


def growth_exponents(df: pd.DataFrame, *, size: str = "pairs", time: str = "wall_time", found_only: bool = True,
                     by=METHOD) -> pd.DataFrame:
    """Fitted exponents ``b`` of ``time ≈ a · size^b`` and ``memory ≈ a' · size^b'``.

    Least squares on ``log`` - ``log`` axes over the rows of each (instance,
    profile, method) group (found rows only, by default), with at least
    :data:`MIN_SIZES` distinct sizes spanning at least :data:`MIN_SPAN` (largest
    over smallest); other groups get NaN exponents. Memory is the ``peak_memory`` column (MiB above the
    worker's baseline); non-positive values are left out.

    Returns
    -------
    DataFrame
        Columns ``instance``, ``profile``, the ``by`` columns, ``n_sizes``,
        ``span`` (largest over smallest size of the time fit), ``time_exponent``, ``time_intercept``, ``memory_exponent``,
        ``memory_intercept`` (intercepts of the natural-log fit).
    """
    df = _check(df, (*by, time, size, "peak_memory"))
    if found_only:
        df = df[df["found"].astype(bool)]
    rows = []
    for key, sub in df.groupby(["instance", "profile", *by], sort=False):
        x = pd.to_numeric(sub[size], errors="coerce").to_numpy(dtype=float)
        bt, at, n, span = _fit(x, pd.to_numeric(sub[time], errors="coerce").to_numpy(dtype=float))
        bm, am, _, _ = _fit(x, pd.to_numeric(sub["peak_memory"], errors="coerce").to_numpy(dtype=float))
        rows.append({**dict(zip(["instance", "profile", *by], key)), "n_sizes": n, "span": span,
                     "time_exponent": bt,
                     "time_intercept": at, "memory_exponent": bm, "memory_intercept": am})
    numbers = {"n_sizes": int, "span": float, "time_exponent": float, "time_intercept": float,
               "memory_exponent": float, "memory_intercept": float}
    out = pd.DataFrame(rows, columns=["instance", "profile", *by, *numbers])
    return out.astype(numbers)  # numbers also with no row (a study whose runs all failed)


#: Columns that depend on the machine (its speed, load and BLAS), not on the computation.
TIMING = ("setup_time", "solve_time", "solve_time_source", "certify_time", "wall_time", "wall_time_min",
          "wall_time_max", "peak_memory", "blas_threads")
#: Columns compared exactly by :func:`compare_tables`; the other numeric ones with a tolerance.
EXACT = ("documents", "pairs", "features", "status", "found", "iterations", "resolved_formulation", "solver_status")


def compare_tables(a: pd.DataFrame, b: pd.DataFrame, *, rtol: float = 1e-6, atol: float = 1e-9) -> pd.DataFrame:
    """Where two study tables differ, times and memory aside.

    Rows are matched on the run key (instance, size, cost, formulation,
    solver, profile). Columns of :data:`EXACT` must be equal; the other
    numeric columns (objectives, errors, residuals, gaps, NDCG) equal within
    ``rtol``/``atol``; :data:`TIMING` columns and the message are ignored.

    Returns
    -------
    DataFrame
        One row per difference: the key, ``column``, ``a`` and ``b``
        (``column == "row"`` for a run present in only one table). Empty
        when the tables agree.
    """
    key = list(KEY)

    def keyed(df):
        text = {k: df[k].map(size_text) if k == "size" else df[k].astype(str) for k in key}
        return df.assign(**text).set_index(key)

    ka, kb = keyed(a), keyed(b)
    diffs = []
    for idx in ka.index.symmetric_difference(kb.index):
        diffs.append({**dict(zip(key, idx)), "column": "row", "a": idx in ka.index, "b": idx in kb.index})
    common = ka.index.intersection(kb.index)
    ka, kb = ka.loc[common], kb.loc[common]
    numeric = [c for c in COLUMNS if c not in (*KEY, *TIMING, *EXACT, "message") and c in ka.columns
               and pd.api.types.is_numeric_dtype(ka[c])]
    for col in EXACT:
        if col not in ka.columns:
            continue
        va, vb = ka[col], kb[col]
        same = (va == vb) | (va.isna() & vb.isna())
        diffs.extend({**dict(zip(key, i)), "column": col, "a": va[i], "b": vb[i]} for i in same.index[~same])
    for col in numeric:
        va = pd.to_numeric(ka[col], errors="coerce").to_numpy(dtype=float)
        vb = pd.to_numeric(kb[col], errors="coerce").to_numpy(dtype=float)
        same = np.isclose(va, vb, rtol=rtol, atol=atol, equal_nan=True)
        diffs.extend({**dict(zip(key, i)), "column": col, "a": x, "b": y}
                     for i, x, y, s in zip(common, va, vb, same) if not s)
    return pd.DataFrame(diffs, columns=[*key, "column", "a", "b"])
