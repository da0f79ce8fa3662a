"""Seeded generators of graded ranking data, for tests, examples and demos."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from cvxrank._memory import check_generated
from cvxrank._validation import POSITIVE_INT, Interval, check
from cvxrank.data import RankingData, _feature_dtype
from cvxrank.exceptions import ValidationError

__all__ = [
    "ECML_MEANS",
    "ECML_SIZES",
    "OHSUMED_PROPORTIONS",
    "WEB_PROPORTIONS",
    "make_ecml_simulation",
    "make_ohsumed_like",
    "make_ranking",
    "make_web_like",
]


def make_ranking(n_queries: int = 10, docs_per_query=(8, 16), n_features: int = 5, n_grades: int = 3, *,
                 noise: float = 0.5, density: float = 1.0, proportions=None, random_state=0,
                 dtype=np.float64) -> RankingData:
    """Random graded queries from a noisy linear relevance model.

    Each document ``x ~ N(0, I)`` gets the latent score ``<w_true, x> + noise·ε``
    with ``w_true ~ N(0, I)``; grades ``0 .. n_grades-1`` cut the latent
    scores of each query at its own quantiles (equal shares, or
    ``proportions``), so every query of three or more documents has several
    grades.

    Parameters
    ----------
    n_queries : int, default 10
    docs_per_query : int or (int, int), default (8, 16)
        Documents per query, fixed or drawn uniformly from ``[lo, hi]``.
    n_features : int, default 5
    n_grades : int, default 3
    noise : float, default 0.5
        Scale of the Gaussian noise on the latent score (0: separable).
    density : float, default 1.0
        Fraction of non-zero features; below 1 returns sparse ``X``.
    proportions : sequence of float, optional
        Share of each grade, lowest first, in every query (normalised to sum
        to 1); ``n_grades`` is then ``len(proportions)``. Default: equal shares.
    random_state : int or numpy Generator, default 0
    dtype : {numpy.float64, numpy.float32}, default numpy.float64
        Storage of ``X`` (:class:`~cvxrank.data.RankingData`). The data are
        drawn in float64 and then rounded, so float32 gives the same grades and
        queries as float64 with each feature rounded to the nearest float32;
        the float64 draw is freed before the data are returned.

    Raises
    ------
    ValidationError
        For invalid sizes; :class:`~cvxrank.MemoryBudgetError` when the expected data would not fit
        the memory budget (:func:`cvxrank._memory.generated_bytes`), before anything is drawn.

    Examples
    --------
    >>> make_ranking(n_queries=3, docs_per_query=4, n_features=2, random_state=1)
    RankingData(n_documents=12, n_features=2, n_queries=3, grades=[0, 1, 2])
    """
    for name, v in (("n_queries", n_queries), ("n_features", n_features), ("n_grades", n_grades)):
        check(name, v, POSITIVE_INT)
    if proportions is not None:
        shares = np.asarray(proportions, dtype=float)
        if shares.ndim != 1 or shares.size < 2 or not np.all(np.isfinite(shares)) or np.any(shares <= 0):
            raise ValidationError(f"proportions must be two or more positive numbers, got {proportions!r}")
        n_grades = shares.size
    if n_grades < 2:
        raise ValidationError("n_grades must be at least 2 for there to be pairs")
    check("density", density, Interval(0, 1, closed="right"))
    dtype = _feature_dtype(dtype)
    rng = np.random.default_rng(random_state)
    lo, hi = (docs_per_query, docs_per_query) if np.isscalar(docs_per_query) else docs_per_query
    if lo < 2 or hi < lo:
        raise ValidationError(f"docs_per_query must be >= 2 (and lo <= hi), got {docs_per_query!r}")
    check_generated(n_queries * (lo + hi) / 2, n_features, f"{n_queries:,} queries", density)
    sizes = rng.integers(lo, hi + 1, size=n_queries)
    qid = np.repeat(np.arange(1, n_queries + 1), sizes)
    m = int(sizes.sum())
    X = rng.standard_normal((m, n_features))
    if density < 1:
        X *= rng.random((m, n_features)) < density
    w_true = rng.standard_normal(n_features)
    latent = X @ w_true + noise * rng.standard_normal(m)
    # rank of each document inside its query (queries are contiguous blocks), then grade cuts
    order = np.lexsort((latent, qid))
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    ranks = np.empty(m, dtype=np.int64)
    ranks[order] = np.arange(m) - starts
    frac = ranks / np.repeat(sizes, sizes)
    if proportions is None:
        y = (ranks * n_grades) // np.repeat(sizes, sizes)
    else:
        cuts = np.cumsum(shares / shares.sum())[:-1]
        y = np.searchsorted(cuts, frac, side="right").astype(np.int64)
    X = sp.csr_matrix(X) if density < 1 else X
    if dtype != X.dtype:
        X = X.astype(dtype)  # the float64 draw is freed here, before RankingData's finiteness check
    return RankingData(X, y, qid, dtype=dtype)


#: Grade shares of OHSUMED (not / possibly / definitely relevant), about 70/16/14 %.
OHSUMED_PROPORTIONS = (0.70, 0.16, 0.14)
#: Grade shares 0-4 of a web collection such as MSLR-WEB (most documents irrelevant).
WEB_PROPORTIONS = (0.52, 0.32, 0.13, 0.02, 0.01)


def make_ohsumed_like(n_queries: int = 106, docs_per_query=(100, 205), n_features: int = 45, *,
                      noise: float = 1.0, random_state=0, dtype=np.float64) -> RankingData:
    """A generated collection shaped like OHSUMED (LETOR 3.0).

    106 queries of about 152 documents (16,000 in all), 3 grades in the
    OHSUMED proportions 70/16/14 % and 45 features, which gives about 600,000
    within-query pairs. Relevance follows :func:`make_ranking`'s linear model
    with the noise scaled to the signal (``noise`` times ``‖w_true‖``), so the
    data are far from separable, like real relevance judgements. ``dtype``
    as for :func:`make_ranking` (float32: the same data, features rounded).

    Examples
    --------
    >>> d = make_ohsumed_like(n_queries=4, random_state=0)
    >>> d.n_features, sorted(set(d.y.tolist()))
    (45, [0, 1, 2])
    """
    return make_ranking(n_queries, docs_per_query, n_features, noise=noise * np.sqrt(n_features),
                        proportions=OHSUMED_PROPORTIONS, random_state=random_state, dtype=dtype)


def make_web_like(n_queries: int = 10_000, docs_per_query=(50, 150), n_features: int = 136, *,
                  noise: float = 1.0, random_state=0, dtype=np.float64) -> RankingData:
    """A generated collection shaped like a web search data set (MSLR-WEB).

    By default 10,000 queries of about 100 documents (a million in all), 5
    grades in :data:`WEB_PROPORTIONS` and 136 dense features: about 33 million
    within-query pairs, far more than can be materialised as pair differences.
    Noise is scaled as in :func:`make_ohsumed_like`. ``dtype=np.float32``
    keeps ``X`` in float32 (0.54 GB instead of 1.09 GB by default; the same
    data with each feature rounded, see :func:`make_ranking`).

    Examples
    --------
    >>> d = make_web_like(n_queries=3, random_state=0)
    >>> d.n_features, sorted(set(d.y.tolist()))
    (136, [0, 1, 2, 3, 4])
    """
    return make_ranking(n_queries, docs_per_query, n_features, noise=noise * np.sqrt(n_features),
                        proportions=WEB_PROPORTIONS, random_state=random_state, dtype=dtype)


#: Section 4.1 of Xu et al. (ECML 2006): Gaussian centres and sizes of r1, r2, r3.
ECML_MEANS = ((0.0, -0.5), (0.0, 2.0), (2.0, 2.5))
ECML_SIZES = (1000, 200, 100)


def make_ecml_simulation(*, sizes=ECML_SIZES, random_state=0) -> RankingData:
    """The simulation data of section 4.1 of Xu et al. (ECML 2006).

    Three grades ``r1 < r2 < r3`` (stored as 0, 1, 2) drawn from ``N(m_k, I)``
    in two dimensions with ``m_1 = (0, -0.5)``, ``m_2 = (0, 2)``,
    ``m_3 = (2, 2.5)`` and ``n = 1000, 200, 100`` documents, all in one query.

    Examples
    --------
    >>> make_ecml_simulation(random_state=0)
    RankingData(n_documents=1300, n_features=2, n_queries=1, grades=[0, 1, 2])
    """
    if len(sizes) != 3 or not all(POSITIVE_INT.admits(n) for n in sizes):
        raise ValidationError(f"sizes must be three positive integers, got {sizes!r}")
    check_generated(sum(int(n) for n in sizes), 2, f"the ECML simulation of sizes {tuple(int(n) for n in sizes)}")
    rng = np.random.default_rng(random_state)
    X = np.vstack([rng.standard_normal((n, 2)) + np.asarray(m) for m, n in zip(ECML_MEANS, sizes)])
    y = np.repeat(np.arange(3), sizes)
    return RankingData(X, y, np.ones(X.shape[0], dtype=np.int64))
