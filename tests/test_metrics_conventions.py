"""NDCG with short="zero" and gain tables, and the letor / mslr presets of cvxrank.evaluation:
hand-computed cases, and a line-by-line port of the scripts' Perl as reference."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from cvxrank.evaluation import CONVENTIONS, evaluate_ranking, per_query_metrics
from cvxrank.exceptions import ValidationError
from cvxrank.metrics import ndcg_score

L3 = 1.0 / math.log2(3)

# qid 1: grades 0, 2, 1 with a score tie between the first two (file order keeps 0 first);
# qid 2: one document of grade 1; qid 3: no relevant document.
Y = [0, 2, 1, 1, 0, 0]
S = [0.5, 0.5, 0.1, 0.3, 0.2, 0.1]
Q = [1, 1, 1, 2, 3, 3]


def test_short_zero_scores_short_queries_zero_default_unchanged():
    y, s, q = [2, 1, 1, 0], [0.9, 0.8, 0.3, 0.1], [1, 1, 2, 2]
    # k=3: query 1 has 2 documents and query 2 has 2: both are short
    assert ndcg_score(y, s, q, k=3, short="zero") == 0.0
    assert ndcg_score(y, s, q, k=3) == pytest.approx(1.0)  # default: NDCG over the documents it has
    assert ndcg_score(y, s, q, k=3) == ndcg_score(y, s, q, k=3, short="cut")
    # k=2: no query is short, so the conventions agree
    assert ndcg_score(y, s, q, k=2, short="zero") == ndcg_score(y, s, q, k=2)
    # short="zero" is counted in the mean even with empty="skip"
    per = ndcg_score([2, 1, 0], [1, 2, 3], [1, 1, 2], k=2, short="zero", empty="skip", per_query=True)
    assert per.tolist() == [pytest.approx((1 + 3 * L3) / (3 + L3), abs=1e-15), 0.0]  # ranked grades 1, 2


def test_gain_table_and_missing_grade():
    # ranked grades 1, 2 with table {0:0, 1:1, 2:3}: DCG = 1 + 3/log2(3), ideal 3 + 1/log2(3)
    value = ndcg_score([1, 2], [2.0, 1.0], [1, 1], gain={0: 0, 1: 1, 2: 3})
    assert value == pytest.approx((1 + 3 * L3) / (3 + L3), abs=1e-15)
    with pytest.raises(ValueError, match="grades 3 are not in the gain table"):
        ndcg_score([3, 0], [1.0, 0.0], [1, 1], gain={0: 0, 1: 1, 2: 3})
    with pytest.raises(ValueError, match="short"):
        ndcg_score([1, 0], [1.0, 0.0], [1, 1], short="drop")


def test_letor_preset_hand_computed():
    t = per_query_metrics(Y, S, Q, ks=(1, 2, 3), convention="letor")
    # qid 1 ranked (file order in the tie): grades 0, 2, 1 -> gains 0, 3, 1; discounts 1, 1, 1/log2(3)
    assert t.loc[1, "ndcg@1"] == 0.0
    assert t.loc[1, "ndcg@2"] == pytest.approx(3 / 4, abs=1e-15)
    assert t.loc[1, "ndcg@3"] == pytest.approx((3 + L3) / 4, abs=1e-15)
    assert t.loc[1, "map"] == pytest.approx((1 / 2 + 2 / 3) / 2, abs=1e-15)
    assert t.loc[1, "p@3"] == pytest.approx(2 / 3, abs=1e-15)
    # qid 2 has one document: NDCG@1 = 1, NDCG@2 and @3 = 0 (short); P@3 = 1/3
    assert t.loc[2, ["ndcg@1", "ndcg@2", "ndcg@3"]].tolist() == [1.0, 0.0, 0.0]
    assert t.loc[2, "p@3"] == pytest.approx(1 / 3, abs=1e-15)
    # qid 3: nothing relevant
    assert t.loc[3].tolist() == [0.0] * 7
    # the cvxrank default differs on both points: tie averaged, short query cut
    d = per_query_metrics(Y, S, Q, ks=(1, 2), convention="cvxrank")
    assert d.loc[1, "ndcg@1"] == pytest.approx((0 + 3) / 2 / 3, abs=1e-15)
    assert d.loc[2, "ndcg@2"] == 1.0


def test_mslr_preset_hand_computed():
    y, s, q = [1, 4, 3, 2, 0], [5.0, 4.0, 3.0, 2.0, 1.0], [7] * 5
    t = per_query_metrics(y, s, q, ks=(4, 10), convention="mslr")
    dcg = 1 + 15 + 7 * L3 + 3 / 2
    ideal = 15 + 7 + 3 * L3 + 1 / 2
    assert t.loc[7, "ndcg@4"] == pytest.approx(dcg / ideal, abs=1e-15)
    assert t.loc[7, "ndcg@10"] == 0.0  # 5 documents < 10
    # relevant means grade >= 2: ranked relevance 0, 1, 1, 1, 0
    assert t.loc[7, "map"] == pytest.approx((1 / 2 + 2 / 3 + 3 / 4) / 3, abs=1e-15)
    assert t.loc[7, "p@4"] == pytest.approx(3 / 4, abs=1e-15)
    assert t.loc[7, "p@10"] == pytest.approx(3 / 10, abs=1e-15)


def test_presets_refuse_what_they_cannot_reproduce():
    with pytest.raises(ValidationError, match="relevant"):
        per_query_metrics(Y, S, Q, convention="mslr", relevant=1)
    with pytest.raises(ValidationError, match="unknown convention"):
        per_query_metrics(Y, S, Q, convention="trec")
    with pytest.raises(ValidationError, match="use convention 'mslr'"):
        per_query_metrics([3, 0], [1.0, 0.0], [1, 1], convention="letor")


# --- a port of Eval-Score-4.0.pl (LETOR 4.0) and its MSLR edition, loop by loop -------------------
def perl_eval(y, s, q, gain, rel, top=10):
    """Per query (sorted by qid): NDCG@1..top, P@1..top, MAP as the Perl scripts compute them."""
    out = {}
    for qid in sorted(set(q)):
        idx = [i for i in range(len(q)) if q[i] == qid]  # line order
        idx = sorted(idx, key=lambda i: -s[i])  # Perl's sort is stable: ties stay in line order
        rates = [y[i] for i in idx]

        def dcg(rs):
            d = [gain[rs[0]]]
            for pos in range(1, top):
                r = rs[pos] if pos < len(rs) else 0
                d.append(d[-1] + (gain[r] if pos < 2 else gain[r] * math.log(2.0) / math.log(pos + 1.0)))
            return d

        d, best = dcg(rates), dcg(sorted(rates, key=lambda r: -gain[r]))
        ndcg = [(d[p] / best[p] if best[p] != 0 else 0.0) if p < len(rates) else 0.0 for p in range(top)]
        hits, prec = 0, []
        for pos in range(top):
            hits += rel[rates[pos] if pos < len(rates) else 0]
            prec.append(hits / (pos + 1))
        n_rel, ap = 0, 0.0
        for pos, r in enumerate(rates):
            if rel[r]:
                n_rel += 1
                ap += n_rel / (pos + 1)
        out[qid] = (ndcg, prec, ap / n_rel if n_rel else 0.0)
    return out


@pytest.mark.parametrize("convention", ["letor", "mslr"])
def test_presets_match_the_scripts_port(convention):
    rng = np.random.default_rng(3)
    top = 5 if convention == "letor" else 4
    n = 200
    q = rng.integers(0, 40, n).tolist()
    y = rng.integers(0, top - 2 if convention == "letor" else 5, n).tolist()
    s = rng.integers(0, 4, n).astype(float).tolist()  # many ties
    preset = CONVENTIONS[convention]
    gain = preset["ndcg"]["gain"]
    rel = {g: int(g >= preset["relevant"]) for g in gain}
    ref = perl_eval(y, s, q, gain, rel)
    ks = tuple(range(1, 11))
    t = per_query_metrics(y, s, q, ks=ks, convention=convention)
    for qid, (ndcg, prec, ap) in ref.items():
        for k in ks:
            assert abs(t.loc[qid, f"ndcg@{k}"] - ndcg[k - 1]) <= 1e-15
            assert abs(t.loc[qid, f"p@{k}"] - prec[k - 1]) <= 1e-15
        assert abs(t.loc[qid, "map"] - ap) <= 1e-15
    means = evaluate_ranking(y, s, q, ks=(10,), convention=convention)
    assert abs(means["ndcg@10"] - np.mean([r[0][9] for r in ref.values()])) <= 1e-15
    # the port is sensitive to the conventions: the cvxrank default gives other numbers here
    assert not np.allclose(per_query_metrics(y, s, q, ks=ks)["ndcg@10"].to_numpy(),
                           t["ndcg@10"].to_numpy())


@pytest.mark.slow  # the CLI in two subprocesses; tests/test_cli.py checks --convention in-process
def test_cli_convention(tmp_path):
    data = tmp_path / "d.letor"
    data.write_text("".join(f"{g} qid:{qq} 1:{v}\n" for g, qq, v in zip(Y, Q, S)))
    scores = tmp_path / "s.txt"
    scores.write_text("".join(f"{v}\n" for v in S))
    env = dict(os.environ)
    run = [sys.executable, "-m", "cvxrank.cli", "evaluate", str(data), "--scores", str(scores), "--k", "1,2"]
    out = subprocess.run(run + ["--convention", "letor", "--json", str(tmp_path / "m.json")],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    import json

    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["convention"] == "letor" and metrics["relevant"] == 1
    assert metrics["metrics"]["ndcg@2"] == pytest.approx((3 / 4 + 0 + 0) / 3, abs=1e-15)
    bad = subprocess.run(run + ["--convention", "mslr", "--relevant", "1"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "cannot be combined" in bad.stderr
