"""The LETOR 3.0 / 4.0 and MSLR evaluation scripts' conventions, on cases computed by hand.

Query 1: grades [2, 0, 1], scores [0.5, 0.5, 0.9] (a tie, broken in file order by the scripts):
ranked grades 1, 2, 0; gains 1, 3, 0. Query 2: grades [1, 0], scores [0.1, 0.2]: ranked grades 0, 1.
The scripts' discount is 1/log2(max(j, 2)): positions 1 and 2 are both undiscounted.
"""

import numpy as np
import pytest

from cvxrank.evaluation import CONVENTIONS, evaluate_ranking, per_query_metrics
from cvxrank.exceptions import ValidationError
from cvxrank.metrics import ndcg_score, precision_at_k

Y = [2, 0, 1, 1, 0]
S = [0.5, 0.5, 0.9, 0.1, 0.2]
Q = [1, 1, 1, 2, 2]


def test_short_queries_score_zero_only_when_asked():
    # Query 2 has 2 documents: NDCG@3 over what it has is (1/log2 3) / 1 with the log2(1 + j) discount.
    per_q = ndcg_score(Y, S, Q, k=3, ties="stable", per_query=True)
    assert per_q[2] == pytest.approx(1 / np.log2(3), rel=1e-15)
    assert ndcg_score(Y, S, Q, k=3, ties="stable", short="zero", per_query=True)[2] == 0.0
    # k within every query: the option changes nothing
    assert ndcg_score(Y, S, Q, k=2, short="zero") == ndcg_score(Y, S, Q, k=2)
    with pytest.raises(ValueError, match="short"):
        ndcg_score(Y, S, Q, k=3, short="drop")


def test_letor_preset_by_hand():
    table = per_query_metrics(Y, S, Q, ks=(1, 2, 3), convention="letor")
    # NDCG@1: query 1 puts grade 1 (gain 1) where grade 2 (gain 3) belongs: 1/3; query 2: 0.
    assert table.loc[1, "ndcg@1"] == pytest.approx(1 / 3, rel=1e-15) and table.loc[2, "ndcg@1"] == 0.0
    # NDCG@2 and @3 of query 1: (1 + 3 [+ 0]) / (3 + 1 [+ 0]) = 1 (positions 1, 2 undiscounted).
    assert table.loc[1, "ndcg@2"] == pytest.approx(1.0, rel=1e-15)
    assert table.loc[1, "ndcg@3"] == pytest.approx(1.0, rel=1e-15)
    # Query 2: NDCG@2 = (0 + 1)/(1 + 0) = 1; NDCG@3 = 0 (fewer than 3 documents).
    assert table.loc[2, "ndcg@2"] == pytest.approx(1.0, rel=1e-15) and table.loc[2, "ndcg@3"] == 0.0
    # MAP (relevant: grade >= 1): query 1 (1/1 + 2/2)/2 = 1; query 2 (1/2)/1.
    assert table["map"].tolist() == pytest.approx([1.0, 0.5], rel=1e-15)
    # P@3, LETOR 4.0: the missing third position of query 2 counts as non-relevant: 1/3.
    assert table["p@3"].tolist() == pytest.approx([2 / 3, 1 / 3], rel=1e-15)
    assert evaluate_ranking(Y, S, Q, ks=(3,), convention="letor")["ndcg@3"] == pytest.approx(0.5, rel=1e-15)


def test_letor3_and_mslr_differ_where_their_scripts_do():
    letor3 = per_query_metrics(Y, S, Q, ks=(3,), convention="letor3")
    assert letor3["p@3"].tolist() == pytest.approx([2 / 3, 0.0], rel=1e-15)  # P@k undefined past the end: 0
    mslr = per_query_metrics(Y, S, Q, ks=(3,), convention="mslr")
    # relevant means grade >= 2: query 1 has it at rank 2 (AP 1/2), query 2 has none (0)
    assert mslr["map"].tolist() == pytest.approx([0.5, 0.0], rel=1e-15)
    assert mslr["p@3"].tolist() == pytest.approx([1 / 3, 0.0], rel=1e-15)
    assert mslr["ndcg@3"].tolist() == letor3["ndcg@3"].tolist()  # same gain table on grades 0-2
    assert CONVENTIONS["mslr"]["grades"] == (0, 1, 2, 3, 4)


def test_mslr_gain_table_on_grades_to_four():
    # Query: grades [4, 3] ranked 3, 4: DCG@2 = 7 + 15, ideal 15 + 7: NDCG@2 = 1; NDCG@1 = 7/15.
    table = per_query_metrics([4, 3], [0.1, 0.2], [1, 1], ks=(1, 2), convention="mslr")
    assert table.loc[1, "ndcg@1"] == pytest.approx(7 / 15, rel=1e-15) and table.loc[1, "ndcg@2"] == 1.0


def test_the_letor_scripts_refuse_grades_they_do_not_score():
    with pytest.raises(ValidationError, match="scores grades \\[0, 1, 2\\] only.*mslr"):
        per_query_metrics([3, 0], [1.0, 0.0], [1, 1], convention="letor")
    with pytest.raises(ValidationError, match="unknown convention"):
        per_query_metrics(Y, S, Q, convention="trec")


def test_default_convention_is_unchanged():
    ours = per_query_metrics(Y, S, Q, ks=(1, 3))
    assert ours["ndcg@3"].tolist() == ndcg_score(Y, S, Q, k=3, per_query=True).tolist()
    assert ours["p@3"].tolist() == precision_at_k(Y, S, Q, 3, per_query=True).tolist()
