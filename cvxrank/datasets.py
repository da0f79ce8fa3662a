"""Seeded generators of graded ranking data, for tests, examples and demos."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError

__all__ = ["make_ranking", "make_ecml_simulation", "ECML_MEANS", "ECML_SIZES"]


def make_ranking(n_queries: int = 10, docs_per_query=(8, 16), n_features: int = 5, n_grades: int = 3, *,
                 noise: float = 0.5, density: float = 1.0, random_state=0) -> RankingData:
    """Random graded queries from a noisy linear relevance model.

    Each document ``x ~ N(0, I)`` gets the latent score ``<w_true, x> + noise·ε``
    with ``w_true ~ N(0, I)``; grades ``0 .. n_grades-1`` cut the latent
    scores of each query at its own quantiles, so every query of three or more
    documents has several grades.

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
    random_state : int or numpy Generator, default 0

    Examples
    --------
    >>> make_ranking(n_queries=3, docs_per_query=4, n_features=2, random_state=1)
    RankingData(n_documents=12, n_features=2, n_queries=3, grades=[0, 1, 2])
    """
    for name, v in (("n_queries", n_queries), ("n_features", n_features), ("n_grades", n_grades)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValidationError(f"{name} must be a positive integer, got {v!r}")
    if n_grades < 2:
        raise ValidationError("n_grades must be at least 2 for there to be pairs")
    if not 0 < density <= 1:
        raise ValidationError(f"density must be in (0, 1], got {density!r}")
    rng = np.random.default_rng(random_state)
    lo, hi = (docs_per_query, docs_per_query) if np.isscalar(docs_per_query) else docs_per_query
    if lo < 2 or hi < lo:
        raise ValidationError(f"docs_per_query must be >= 2 (and lo <= hi), got {docs_per_query!r}")
    sizes = rng.integers(lo, hi + 1, size=n_queries)
    qid = np.repeat(np.arange(1, n_queries + 1), sizes)
    m = int(sizes.sum())
    X = rng.standard_normal((m, n_features))
    if density < 1:
        X *= rng.random((m, n_features)) < density
    w_true = rng.standard_normal(n_features)
    latent = X @ w_true + noise * rng.standard_normal(m)
    y = np.empty(m, dtype=np.int64)
    start = 0
    for size in sizes:
        block = latent[start:start + size]
        ranks = np.argsort(np.argsort(block, kind="stable"), kind="stable")
        y[start:start + size] = (ranks * n_grades) // size
        start += size
    return RankingData(sp.csr_matrix(X) if density < 1 else X, y, qid)


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
    if len(sizes) != 3 or any(not isinstance(n, (int, np.integer)) or n < 1 for n in sizes):
        raise ValidationError(f"sizes must be three positive integers, got {sizes!r}")
    rng = np.random.default_rng(random_state)
    X = np.vstack([rng.standard_normal((n, 2)) + np.asarray(m) for m, n in zip(ECML_MEANS, sizes)])
    y = np.repeat(np.arange(3), sizes)
    return RankingData(X, y, np.ones(X.shape[0], dtype=np.int64))
