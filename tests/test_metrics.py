"""Tests of cvxrank.metrics: hand-computed values, scikit-learn/scipy references, bad input."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import ndcg_score as sk_ndcg_score

from cvxrank._groups import pair_row_chunks, query_codes, within_query_pairs
from cvxrank.metrics import (
    kendall_tau,
    mean_average_precision,
    ndcg_score,
    pairwise_accuracy,
    precision_at_k,
)

L3 = math.log2(3)  # log2(1 + 2): discount of position 2 is 1/L3
L5 = math.log2(5)  # log2(1 + 4): discount of position 4 is 1/L5

# One query: grades (2, 0, 1), scores rank them as doc1, doc2, doc0 -> grades (0, 1, 2).
Y3 = [2, 0, 1]
S3 = [0.1, 0.9, 0.5]
Q3 = [7, 7, 7]


# --------------------------------------------------------------------------- #
# NDCG, hand-computed
# --------------------------------------------------------------------------- #
def test_ndcg_exponential_gain():
    # ranked gains 2^r - 1: (0, 1, 3); ideal (3, 1, 0); discounts 1, 1/log2(3), 1/2
    expected = (0 + 1 / L3 + 3 / 2) / (3 + 1 / L3 + 0)
    assert ndcg_score(Y3, S3, Q3) == pytest.approx(expected)
    assert ndcg_score(Y3, S3, Q3, gain="exponential") == pytest.approx(expected)


def test_ndcg_linear_gain():
    # ranked gains r: (0, 1, 2); ideal (2, 1, 0)
    expected = (0 + 1 / L3 + 2 / 2) / (2 + 1 / L3 + 0)
    assert ndcg_score(Y3, S3, Q3, gain="linear") == pytest.approx(expected)


def test_ndcg_cutoff():
    # k=2: ranked gains (0, 1), ideal (3, 1)
    expected = (0 + 1 / L3) / (3 + 1 / L3)
    assert ndcg_score(Y3, S3, Q3, k=2) == pytest.approx(expected)
    # k=1: top document has grade 0
    assert ndcg_score(Y3, S3, Q3, k=1) == 0.0


def test_ndcg_letor_discount():
    # discounts 1/log2(max(j, 2)): 1, 1, 1/log2(3)
    expected = (0 * 1 + 1 * 1 + 3 / L3) / (3 * 1 + 1 * 1 + 0)
    assert ndcg_score(Y3, S3, Q3, discount="letor") == pytest.approx(expected)


def test_ndcg_query_shorter_than_k():
    # query 7 as above; query 8 has 2 docs, grades (1, 0), ranked (0, 1): DCG = 1/log2(3), IDCG = 1
    y = Y3 + [1, 0]
    s = S3 + [0.0, 1.0]
    q = Q3 + [8, 8]
    v7 = (0 + 1 / L3 + 3 / 2) / (3 + 1 / L3)
    v8 = (1 / L3) / 1
    assert ndcg_score(y, s, q, k=5) == pytest.approx((v7 + v8) / 2)
    assert ndcg_score(y, s, q, k=5) == pytest.approx(ndcg_score(y, s, q))


def test_ndcg_noncontiguous_string_qids_and_per_query():
    # same two queries as above, interleaved, with string ids
    y = [2, 1, 0, 0, 1]
    s = [0.1, 0.0, 0.9, 1.0, 0.5]
    q = ["x", "y", "x", "y", "x"]
    vx = (0 + 1 / L3 + 3 / 2) / (3 + 1 / L3)
    vy = 1 / L3
    assert ndcg_score(y, s, q) == pytest.approx((vx + vy) / 2)
    per = ndcg_score(y, s, q, k=3, per_query=True)
    assert isinstance(per, pd.Series)
    assert per.name == "ndcg@3"
    assert per.index.tolist() == ["x", "y"]
    assert per.tolist() == pytest.approx([vx, vy])
    assert ndcg_score(y, s, q, per_query=True).name == "ndcg"


def test_ndcg_empty_modes():
    # query 1: perfect (1.0); query 2: grades (0, 1) ranked grade-0 first (1/log2(3));
    # query 3: no relevant document
    y = [1, 0, 0, 1, 0, 0]
    s = [2, 1, 2, 1, 2, 1]
    q = [1, 1, 2, 2, 3, 3]
    v1, v2 = 1.0, 1 / L3
    assert ndcg_score(y, s, q) == pytest.approx((v1 + v2 + 0) / 3)
    assert ndcg_score(y, s, q, empty="zero") == pytest.approx((v1 + v2 + 0) / 3)
    assert ndcg_score(y, s, q, empty="one") == pytest.approx((v1 + v2 + 1) / 3)
    assert ndcg_score(y, s, q, empty="skip") == pytest.approx((v1 + v2) / 2)
    per = ndcg_score(y, s, q, empty="skip", per_query=True)
    assert per.iloc[:2].tolist() == pytest.approx([v1, v2])
    assert np.isnan(per.iloc[2])


def test_ndcg_all_skipped_warns_nan():
    with pytest.warns(RuntimeWarning, match="every query was skipped"):
        value = ndcg_score([0, 0, 0], [1, 2, 3], [1, 1, 2], empty="skip")
    assert np.isnan(value)
    assert ndcg_score([0, 0, 0], [1, 2, 3], [1, 1, 2]) == 0.0
    assert ndcg_score([0, 0, 0], [1, 2, 3], [1, 1, 2], empty="one") == 1.0


def test_ndcg_ties_four_modes():
    # doc3 (grade 1, score 5) first, then docs 0-2 tied (grades 0, 2, 1, score 1).
    # linear gain; discounts 1, 1/log2(3), 1/2, 1/log2(5); ideal grades (2, 1, 1, 0).
    y = [0, 2, 1, 1]
    s = [1.0, 1.0, 1.0, 5.0]
    q = [0, 0, 0, 0]
    ideal = 2 + 1 / L3 + 1 / 2 + 0
    expected = {
        "stable": (1 + 0 / L3 + 2 / 2 + 1 / L5) / ideal,  # tie in input order: 0, 2, 1
        "optimistic": (1 + 2 / L3 + 1 / 2 + 0 / L5) / ideal,  # 2, 1, 0
        "pessimistic": (1 + 0 / L3 + 1 / 2 + 2 / L5) / ideal,  # 0, 1, 2
        "average": (1 + 1 / L3 + 1 / 2 + 1 / L5) / ideal,  # mean tied gain (0+2+1)/3 = 1
    }
    got = {t: ndcg_score(y, s, q, gain="linear", ties=t) for t in expected}
    assert got == pytest.approx(expected)
    assert len({round(v, 10) for v in got.values()}) == 4
    assert ndcg_score(y, s, q, gain="linear") == pytest.approx(expected["average"])
    # "average" does not depend on input order
    perm = [2, 3, 1, 0]
    assert ndcg_score(
        np.take(y, perm), np.take(s, perm), q, gain="linear"
    ) == pytest.approx(expected["average"])


# --------------------------------------------------------------------------- #
# NDCG against scikit-learn
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("k", [None, 1, 3, 5])
def test_ndcg_matches_sklearn(k):
    rng = np.random.default_rng(0)
    sizes = rng.integers(2, 15, size=25)
    qid = np.repeat(np.arange(25) * 3 + 100, sizes)
    y = rng.integers(0, 4, size=qid.size).astype(float)
    y[qid == 100] = 0  # one all-irrelevant query: scikit-learn scores it 0 -> empty="zero"
    s = np.round(rng.normal(size=qid.size), 1)  # rounding makes tied scores
    assert len(np.unique(s)) < s.size
    expected = np.mean(
        [
            sk_ndcg_score(y[qid == g][None, :], s[qid == g][None, :], k=k)
            for g in np.unique(qid)
        ]
    )
    perm = rng.permutation(qid.size)  # non-contiguous queries
    got = ndcg_score(
        y[perm], s[perm], qid[perm], k=k, gain="linear", discount="log2",
        empty="zero", ties="average",
    )
    assert got == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------- #
# MAP and P@k
# --------------------------------------------------------------------------- #
# query 1: ranked grades (0, 2, 1, 0, 1); query 2: ranked grades (0, 1); query 3: none relevant
Y_MAP = [0, 2, 1, 0, 1, 1, 0, 0, 0]
S_MAP = [0.9, 0.8, 0.7, 0.6, 0.5, 0.1, 0.2, 0.3, 0.4]
Q_MAP = [1, 1, 1, 1, 1, 2, 2, 3, 3]


def test_map_hand_computed():
    # threshold 1: query 1 relevant at ranks 2, 3, 5 -> (1/2 + 2/3 + 3/5) / 3; query 2 -> (1/2) / 1
    ap1 = (1 / 2 + 2 / 3 + 3 / 5) / 3
    ap2 = 1 / 2
    assert mean_average_precision(Y_MAP, S_MAP, Q_MAP) == pytest.approx((ap1 + ap2 + 0) / 3)
    assert mean_average_precision(Y_MAP, S_MAP, Q_MAP, empty="one") == pytest.approx(
        (ap1 + ap2 + 1) / 3
    )
    assert mean_average_precision(Y_MAP, S_MAP, Q_MAP, empty="skip") == pytest.approx(
        (ap1 + ap2) / 2
    )
    # threshold 2: only the grade-2 document of query 1 (rank 2) -> 1/2; others empty
    assert mean_average_precision(
        Y_MAP, S_MAP, Q_MAP, threshold=2, empty="skip"
    ) == pytest.approx(1 / 2)
    per = mean_average_precision(Y_MAP, S_MAP, Q_MAP, per_query=True)
    assert per.name == "average_precision"
    assert per.tolist() == pytest.approx([ap1, ap2, 0.0])


def test_map_ties():
    # tied scores, grades (0, 1): stable -> relevant at rank 2 (1/2); optimistic -> rank 1 (1)
    y, s, q = [0, 1], [0.5, 0.5], [1, 1]
    assert mean_average_precision(y, s, q) == pytest.approx(1 / 2)
    assert mean_average_precision(y, s, q, ties="optimistic") == pytest.approx(1.0)
    assert mean_average_precision(y, s, q, ties="pessimistic") == pytest.approx(1 / 2)
    assert mean_average_precision([1, 0], s, q, ties="pessimistic") == pytest.approx(1 / 2)


def test_precision_at_k_hand_computed():
    # k=3: query 1 top 3 grades (0, 2, 1) -> 2/3; query 2 has 2 docs, 1 relevant -> 1/3
    # (divided by k, TREC); query 3 -> 0
    assert precision_at_k(Y_MAP, S_MAP, Q_MAP, k=3) == pytest.approx((2 / 3 + 1 / 3 + 0) / 3)
    # k=1: tops are grades 0, 0, 0
    assert precision_at_k(Y_MAP, S_MAP, Q_MAP, k=1) == 0.0
    # threshold 2, k=2: only query 1 has a hit -> (1/2) / 3
    assert precision_at_k(Y_MAP, S_MAP, Q_MAP, k=2, threshold=2) == pytest.approx(1 / 6)
    per = precision_at_k(Y_MAP, S_MAP, Q_MAP, k=3, per_query=True)
    assert per.name == "precision@3"
    assert per.tolist() == pytest.approx([2 / 3, 1 / 3, 0.0])


def test_precision_at_k_ties():
    y, s, q = [0, 1, 1], [0.5, 0.5, 0.1], ["a", "a", "a"]
    assert precision_at_k(y, s, q, k=1) == 0.0  # stable: grade 0 first
    assert precision_at_k(y, s, q, k=1, ties="optimistic") == 1.0
    assert precision_at_k(y, s, q, k=1, ties="pessimistic") == 0.0


# --------------------------------------------------------------------------- #
# Kendall's tau and pairwise accuracy
# --------------------------------------------------------------------------- #
def test_kendall_tau_matches_scipy_without_ties():
    rng = np.random.default_rng(1)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic)
    qid = rng.integers(0, 5, size=40)
    expected = np.mean([kendalltau(x[qid == g], y[qid == g]).statistic for g in range(5)])
    assert kendall_tau(x, y, qid) == pytest.approx(expected)


def test_kendall_tau_with_ties_hand_computed():
    x = [1, 2, 2, 3]
    y = [1, 3, 2, 2]
    # pairs: (0,1) C, (0,2) C, (0,3) C, (1,2) tied in x, (1,3) D, (2,3) tied in y
    assert kendall_tau(x, y) == pytest.approx((3 - 1) / (3 + 1))
    assert kendall_tau(x, y) != pytest.approx(kendalltau(x, y).statistic)  # not tau-b


def test_kendall_tau_per_query_mean_and_nan():
    # query A: (1/3); query B: all pairs tied in x -> left out; query C: -1
    x = [1, 2, 3, 1, 1, 1, 2]
    y = [1, 3, 2, 0, 1, 2, 1]
    q = ["A", "A", "A", "B", "B", "C", "C"]
    assert kendall_tau(x, y, q) == pytest.approx((1 / 3 + -1) / 2)
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))
    assert np.isnan(kendall_tau([5.0], [1.0]))


def test_pairwise_accuracy_hand_computed():
    # query 1 (docs 0, 2, 4, 6): grades (2, 1, 0, 1), scores (0.3, 0.5, 0.1, 0.5)
    #   (2>1: 0.3<0.5 wrong), (2>0: right), (2>1: 0.3<0.5 wrong), (1>0: right),
    #   (1=1: no pair), (1>0: 0.5>0.1 right)
    # query 2 (docs 1, 3): grades (1, 0), scores tied -> 1/2
    y = [2, 1, 1, 0, 0, 5, 1]
    s = [0.3, 2.0, 0.5, 2.0, 0.1, 9.0, 0.5]
    q = [1, 2, 1, 2, 1, 3, 1]  # query 3 has one document: no pair
    assert pairwise_accuracy(y, s, q) == pytest.approx((0 + 1 + 0 + 1 + 1 + 0.5) / 6)
    assert np.isnan(pairwise_accuracy([1, 1], [0, 1], [1, 1]))


def test_within_query_pairs_matches_itertools():
    counts = [3, 1, 4, 2]
    offsets = np.concatenate(([0], np.cumsum(counts)))
    expected = [
        p
        for g in range(len(counts))
        for p in itertools.combinations(range(offsets[g], offsets[g + 1]), 2)
    ]
    i, j = within_query_pairs(counts)
    assert list(zip(i.tolist(), j.tolist())) == expected
    chunks = [within_query_pairs(counts, a, b) for a, b in pair_row_chunks(counts, max_pairs=2)]
    assert list(zip(*(np.concatenate(c).tolist() for c in zip(*chunks)))) == expected
    uniques, codes = query_codes(np.array(["b", "a", "b"]))
    assert uniques.tolist() == ["a", "b"] and codes.tolist() == [1, 0, 1]


# --------------------------------------------------------------------------- #
# bad input
# --------------------------------------------------------------------------- #
GOOD = dict(y_true=[1, 0, 2], y_score=[0.1, 0.2, 0.3], qid=[1, 1, 2])


def _ranking_metrics():
    return [
        lambda **kw: ndcg_score(**kw),
        lambda **kw: mean_average_precision(**kw),
        lambda **kw: precision_at_k(**kw, k=2),
        lambda **kw: pairwise_accuracy(**kw),
    ]


@pytest.mark.parametrize("metric", _ranking_metrics(), ids=["ndcg", "map", "p@k", "pairacc"])
@pytest.mark.parametrize(
    "change, message",
    [
        (dict(y_score=[0.1, 0.2]), "y_score has 2 values but y_true has 3"),
        (dict(qid=[1, 1]), "qid has 2 values but y_true has 3"),
        (dict(y_true=[1, np.nan, 2]), "y_true contains NaN or infinite values"),
        (dict(y_score=[0.1, np.inf, 0.3]), "y_score contains NaN or infinite values"),
        (dict(y_true=[], y_score=[], qid=[]), "y_true is empty"),
        (dict(y_true=[[1, 0, 2]]), "y_true must be 1-dimensional"),
        (dict(y_true=["a", "b", "c"]), "y_true must be numeric"),
        (dict(qid=[1.0, np.nan, 2.0]), "qid contains missing values"),
        (dict(qid=[1, "a", 2]), "qid values must be mutually comparable"),
        (dict(qid=None), "qid is required"),
    ],
)
def test_bad_input_raises(metric, change, message):
    with pytest.raises(ValueError, match=message):
        metric(**{**GOOD, **change})


@pytest.mark.parametrize("k", [0, -1, 2.5, 2.0, True, "3"])
def test_bad_k_raises(k):
    with pytest.raises(ValueError, match="k must be a positive integer or None"):
        ndcg_score(**GOOD, k=k)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        precision_at_k(**GOOD, k=k)


def test_precision_at_k_requires_k():
    with pytest.raises(ValueError, match="k must be a positive integer, got None"):
        precision_at_k(**GOOD, k=None)


@pytest.mark.parametrize(
    "func, option, value, valid",
    [
        (ndcg_score, "gain", "exp", "'exponential', 'linear'"),
        (ndcg_score, "discount", "log10", "'log2', 'letor'"),
        (ndcg_score, "empty", "nan", "'zero', 'one', 'skip'"),
        (ndcg_score, "ties", "random", "'average', 'stable', 'optimistic', 'pessimistic'"),
        (mean_average_precision, "empty", None, "'zero', 'one', 'skip'"),
        (mean_average_precision, "ties", "average", "'stable', 'optimistic', 'pessimistic'"),
        (precision_at_k, "ties", "Stable", "'stable', 'optimistic', 'pessimistic'"),
    ],
)
def test_unknown_option_lists_valid_ones(func, option, value, valid):
    kwargs = {**GOOD, option: value}
    if func is precision_at_k:
        kwargs["k"] = 1
    with pytest.raises(ValueError, match=f"unknown {option}=.*valid options are {valid}"):
        func(**kwargs)


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="negative grades"):
        ndcg_score([1, -1], [0, 1], [1, 1])
    with pytest.raises(ValueError, match="too large for gain='exponential'"):
        ndcg_score([2000, 1], [0, 1], [1, 1])
    assert ndcg_score([2000, 1], [1, 0], [1, 1], gain="linear") == 1.0
    with pytest.raises(ValueError, match="threshold must be finite"):
        mean_average_precision(**GOOD, threshold=np.nan)
    with pytest.raises(ValueError, match="threshold must be a real number"):
        precision_at_k(**GOOD, k=1, threshold="1")
    with pytest.raises(ValueError, match="y has 2 values but x has 3"):
        kendall_tau([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="qid has 2 values but x has 3"):
        kendall_tau([1, 2, 3], [1, 2, 3], [1, 1])
    with pytest.raises(ValueError, match="x is empty"):
        kendall_tau([], [])
    with pytest.raises(ValueError, match="y contains NaN"):
        kendall_tau([1, 2], [1, np.nan])
