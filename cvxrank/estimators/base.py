"""What every cvxrank ranker shares: input handling, scores, the scikit-learn contract.

A ranker learns a linear scoring function ``f(x) = <w, x>``; ``decision_function``
and ``predict`` both return the scores (higher ranks first) and ``score``
returns the mean NDCG@k over queries.

Query ids
---------
``fit(X, y, qid=...)`` takes the query id of every document; pairs (or lists)
are formed inside each query only. ``qid=None`` means one query holding every
document. A :class:`~cvxrank.data.RankingData` may be passed as ``X`` instead
(``y`` and ``qid`` must then be omitted).

In scikit-learn's model selection, ``qid`` travels by metadata routing::

    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold
    sklearn.set_config(enable_metadata_routing=True)
    ranker = RankSVM().set_fit_request(qid=True).set_score_request(qid=True)
    search = GridSearchCV(ranker, {"lam": [0.01, 0.1, 1]}, cv=GroupKFold(3))
    search.fit(X, y, qid=qid, groups=qid)     # folds never split a query
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.metrics import ndcg_score

__all__ = ["BaseRanker", "as_ranking_data", "resolve_lam"]


def as_ranking_data(X, y=None, qid=None, *, estimator=None) -> RankingData:
    """The :class:`RankingData` that ``fit(X, y, qid)`` describes (``qid=None``: one query).

    With ``estimator``, ``X`` and ``y`` first go through scikit-learn's
    ``validate_data`` (its messages for empty, complex or non-numeric input;
    records ``n_features_in_`` and ``feature_names_in_``).
    """
    if isinstance(X, RankingData):
        if y is not None or qid is not None:
            raise ValidationError("pass either a RankingData as X, or X, y and qid; not both")
        return X
    if estimator is not None:
        X, y = validate_data(estimator, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True,
                             ensure_min_samples=2)
    if y is None:
        raise ValidationError("a ranker needs the relevance grades y to fit (y=None given)")
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    if qid is None:
        qid = np.zeros(n, dtype=np.int64)
    return RankingData(X, y, qid)


def resolve_lam(lam, C) -> float:
    """``λ`` of the hinge form (9) from ``lam`` or the QP cost ``C`` (``λ = 1/(2C)``, (7)/ECML); default
    :data:`cvxrank.costs.DEFAULT_LAM` (0.5, that is ``C = 1``)."""
    from cvxrank.costs import DEFAULT_LAM, check_C, check_lam

    if lam is not None and C is not None:
        raise ValidationError("give lam or C, not both (they are the same knob: lam = 1/(2 C))")
    if C is not None:
        return 1.0 / (2.0 * check_C(C))
    return check_lam(DEFAULT_LAM if lam is None else lam)


class BaseRanker(BaseEstimator):
    """Scores, NDCG scoring and model-file support for the cvxrank rankers.

    Subclasses implement ``fit`` and set ``coef_`` (the weight vector ``w``),
    ``n_features_in_``, ``n_iter_`` and ``result_``.
    """

    def decision_function(self, X) -> np.ndarray:
        """Scores ``f(x) = <w, x>`` of the documents; sort each query by them, highest first.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_documents, n_features), or RankingData

        Returns
        -------
        ndarray of shape (n_documents,)
        """
        check_is_fitted(self, "coef_")
        if isinstance(X, RankingData):
            X = X.X
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        scores = X @ self.coef_
        return np.asarray(scores).ravel()

    def scores(self, X) -> np.ndarray:
        """Scores ``<w, x>`` of documents whose highest feature may be below the model's width.

        A test file's highest feature index may simply be lower than the training file's. The
        missing trailing features count as zeros without being materialised: the scores are
        ``X @ coef_[:X.shape[1]]``, in float64 arithmetic whether ``X`` is stored in float64 or
        float32, so ``X`` is never padded to the model's width (32 documents padded to a model of
        3,000,000 weights are 768 MB dense). With the full width they are
        :meth:`decision_function`'s scores.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_documents, k), k <= n_features_in_, or RankingData

        Returns
        -------
        ndarray of shape (n_documents,)

        Raises
        ------
        ValidationError
            When ``X`` has more features than the model, or values that are not finite numbers.
        cvxrank._memory.MemoryBudgetError
            When the scores (and a float64 block of rows of a float32 ``X``) would exceed the memory budget.

        Examples
        --------
        >>> import numpy as np
        >>> from cvxrank.estimators import RankSVM
        >>> model = RankSVM()
        >>> model.coef_, model.n_features_in_ = np.array([1.0, 2.0, 3.0]), 3
        >>> model.scores(np.array([[1.0, 1.0], [0.0, 2.0]])).tolist()
        [3.0, 4.0]
        """
        import scipy.sparse as sp
        from sklearn.utils import check_array

        from cvxrank._float64 import CHUNK_BYTES, matvec
        from cvxrank._memory import check_memory

        check_is_fitted(self, "coef_")
        if isinstance(X, RankingData):
            X = X.X
        try:
            X = check_array(X, accept_sparse="csr", dtype=(np.float64, np.float32))
        except ValueError as exc:
            raise ValidationError(f"cannot score X: {exc}") from None
        width = int(self.coef_.shape[0])
        if X.shape[1] > width:
            raise ValidationError(f"X has features up to {X.shape[1]:,}, but the model was fitted with {width:,}")
        check_memory(8 * X.shape[0] + (0 if X.dtype == np.float64 else CHUNK_BYTES),
                     f"scoring {X.shape[0]:,} documents", "score fewer documents at a time, or raise the budget")
        if sp.issparse(X):
            X = X.tocsr()
        return matvec(X, self.coef_[:X.shape[1]])

    def predict(self, X) -> np.ndarray:
        """The same scores as :meth:`decision_function` (a ranker predicts an order, not a label)."""
        return self.decision_function(X)

    def score(self, X, y=None, qid=None) -> float:
        """Mean NDCG@``score_k`` over queries (exponential gain, log2 discount; see :func:`cvxrank.metrics.ndcg_score`)."""
        data = as_ranking_data(X, y, qid)
        return float(ndcg_score(data.y, self.decision_function(data.X), data.qid, k=self.score_k))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.one_d_labels = True
        return tags

    # -- model files (see cvxrank.estimators.persistence) -------------------------------
    def save(self, path) -> None:
        """Write the fitted model to a JSON file (:func:`cvxrank.estimators.save_model`)."""
        from cvxrank.estimators.persistence import save_model

        save_model(self, path)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save`; it must be of this class (:func:`cvxrank.estimators.load_model`)."""
        from cvxrank.estimators.persistence import load_model

        model = load_model(path)
        if not isinstance(model, cls):
            raise ValidationError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}")
        return model

