"""Cross-validation runner, fold layouts and the sign test."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

import cvxrank as cr
from cvxrank.data import save_letor
from cvxrank.estimators import RankSVM
from cvxrank.evaluation import per_query_metrics
from cvxrank.exceptions import ValidationError
from cvxrank.experiments.cv import Split, cross_validate, holdout_split, letor_folds, query_folds
from cvxrank.experiments.significance import sign_test, sign_test_table


@pytest.fixture(scope="module")
def data():
    return cr.make_ranking(n_queries=10, docs_per_query=(5, 8), n_features=4, noise=2.0, random_state=4)


def test_query_folds_partition_the_queries(data):
    splits = query_folds(data, n_folds=5, random_state=1)
    assert len(splits) == 5
    tests = [set(s.test.query_ids.tolist()) for s in splits]
    assert set().union(*tests) == set(data.query_ids.tolist())
    assert all(not (a & b) for i, a in enumerate(tests) for b in tests[i + 1:])
    for s in splits:
        parts = [set(p.query_ids.tolist()) for p in (s.train, s.vali, s.test)]
        assert set().union(*parts) == set(data.query_ids.tolist()) and sum(map(len, parts)) == data.n_queries
    again = query_folds(data, n_folds=5, random_state=1)
    assert [s.test.query_ids.tolist() for s in again] == [s.test.query_ids.tolist() for s in splits]


def test_cross_validate_by_hand(data):
    splits = query_folds(data, n_folds=3, random_state=0)
    grid = {"pairwise": {"lam": [0.1, 10.0]}}
    result = cross_validate(splits, ["ranksvm", "rsvm-ir-qp"], grids=grid, progress=False, baseline="ranksvm")
    # Redo RankSVM's first fold by hand: choose lam on validation NDCG@10, then test.
    s = splits[0]
    vali = {}
    for lam in (0.1, 10.0):
        m = RankSVM(lam=lam).fit(s.train)
        vali[lam] = per_query_metrics(s.vali.y, m.predict(s.vali.X), s.vali.qid)["ndcg@10"].mean()
    best = max(vali, key=vali.get)
    m = RankSVM(lam=best).fit(s.train)
    expected = per_query_metrics(s.test.y, m.predict(s.test.X), s.test.qid)
    sel = result.selection.query("method == 'RankSVM' and fold == 'fold1'").iloc[0]
    assert sel["params"] == f"lam={best:g}" and sel["vali_ndcg@10"] == pytest.approx(vali[best])
    assert sel["status"] == "optimal" and sel["relative_gap"] <= 1e-6
    got = result.per_query.query("method == 'RankSVM' and fold == 'fold1'").set_index("qid")
    pd.testing.assert_frame_equal(got[expected.columns], expected, check_names=False, atol=1e-9)
    # The summary is the mean over folds of per-fold means.
    fold_means = result.per_query.groupby(["method", "fold"])["map"].mean()
    assert result.summary.loc["RSVM-IR-QP", "map"] == pytest.approx(fold_means["RSVM-IR-QP"].mean())
    assert list(result.summary.index) == ["RankSVM", "RSVM-IR-QP"]
    tests = result.sign_tests("ndcg@1", baseline="RankSVM")
    assert tests.iloc[0][["method", "versus"]].tolist() == ["RSVM-IR-QP", "RankSVM"]
    assert tests.iloc[0]["n"] == data.n_queries


def test_save_writes_every_table(data, tmp_path):
    result = cross_validate(data, ["ranksvm"], grids={"pairwise": {"lam": [1.0]}}, progress=False)
    out = tmp_path / "cv"
    written = result.save(out)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["results.csv", "per_query.csv", "selection.csv", "sign_tests.csv", "report.md"])
    assert len(written) == 5
    back = pd.read_csv(out / "results.csv", index_col=0)
    np.testing.assert_allclose(back.to_numpy(), result.summary.to_numpy())
    assert "| RankSVM |" in (out / "report.md").read_text()
    with pytest.raises(ValidationError, match="does not exist"):
        result.save(tmp_path / "no" / "such" / "dir")


def test_letor_folds_and_missing_files(data, tmp_path):
    splits = query_folds(data, n_folds=3, random_state=0)
    for i, s in enumerate(splits[:2]):
        (tmp_path / f"Fold{i + 1}").mkdir()
        for part in ("train", "vali", "test"):
            save_letor(getattr(s, part), tmp_path / f"Fold{i + 1}" / f"{part}.txt")
    read = letor_folds(tmp_path)
    assert [s.name for s in read] == ["Fold1", "Fold2"]
    np.testing.assert_allclose(read[1].test.X, splits[1].test.X)
    (tmp_path / "Fold2" / "vali.txt").unlink()
    with pytest.raises(ValidationError, match=r"missing fold files Fold2/vali.txt"):
        letor_folds(tmp_path)
    with pytest.raises(ValidationError, match="no Fold"):
        letor_folds(tmp_path / "Fold1")
    (tmp_path / "Fold1" / "test.txt").write_text("")
    (tmp_path / "Fold2" / "vali.txt").write_text("")
    with pytest.raises(ValidationError, match="empty"):
        letor_folds(tmp_path)


def test_holdout_split(data):
    train, test = data.select_queries(data.query_ids[:7]), data.select_queries(data.query_ids[7:])
    (split,) = holdout_split(train, test, vali_fraction=0.3, random_state=0)
    assert split.vali.n_queries == 2 and split.train.n_queries == 5 and split.test is test


@pytest.mark.parametrize("call, message", [
    (lambda d: query_folds(d, n_folds=2), "n_folds must be an integer >= 3"),
    (lambda d: query_folds(d, n_folds=11), "only 10 queries"),
    (lambda d: cross_validate(d, ["ranksvm", "bm25"]), "unknown method"),
    (lambda d: cross_validate(d, ["ranksvm"], select_by="ndcg@7"), "select_by must be one of"),
    (lambda d: cross_validate([], ["ranksvm"]), "non-empty list"),
    (lambda d: Split("s", d, None, d), "in both train and test"),
])
def test_bad_input(data, call, message):
    with pytest.raises(ValidationError, match=message):
        call(data)


def test_sign_test_against_binomial():
    rng = np.random.default_rng(0)
    a, b = rng.random(40), rng.random(40)
    b[:5] = a[:5]  # ties
    r = sign_test(a, b)
    wins, losses = int(np.sum(a > b)), int(np.sum(a < b))
    assert (r["wins"], r["losses"], r["ties"], r["n"]) == (wins, losses, 5, 40)
    assert r["p_value"] == pytest.approx(binomtest(wins, wins + losses, 0.5).pvalue)
    assert sign_test(a, a)["p_value"] == 1.0
    # Series align on query ids: only shared queries count.
    s = sign_test(pd.Series([1.0, 0.0, 0.5], index=[1, 2, 3]), pd.Series([0.0, 1.0], index=[3, 4]))
    assert (s["n"], s["wins"]) == (1, 1)
    with pytest.raises(ValidationError, match="equal-length"):
        sign_test([1.0], [1.0, 2.0])
    with pytest.raises(ValidationError, match="finite"):
        sign_test([np.nan], [1.0])


def test_sign_test_table_pairs():
    pq = pd.DataFrame({"method": ["A"] * 3 + ["B"] * 3 + ["C"] * 3, "qid": [1, 2, 3] * 3,
                       "ndcg@1": [1, 1, 1, 0, 0, 1, 0, 0, 0]})
    t = sign_test_table(pq)
    assert t[["method", "versus", "wins", "losses", "ties"]].values.tolist() == [
        ["A", "B", 2, 0, 1], ["A", "C", 3, 0, 0], ["B", "C", 1, 0, 2]]
    with pytest.raises(ValidationError, match="baseline"):
        sign_test_table(pq, baseline="Z")


def test_cv_command(tmp_path, capsys):
    from cvxrank.cli import main

    out = tmp_path / "cv"
    assert main(["cv", "--queries", "9", "--features", "3", "--n-folds", "3", "--methods", "ranksvm,listmle",
                 "--lams", "1", "--Cs", "1,10", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "| RankSVM |" in text and "| ListMLE |" in text and "sign tests" in text
    assert (out / "report.md").exists() and (out / "per_query.csv").exists()
    sel = pd.read_csv(out / "selection.csv")
    assert set(sel["params"][sel["method"] == "ListMLE"]) <= {"C=1", "C=10"}


@pytest.mark.parametrize("args, message", [
    (["cv", "--test", "x.letor"], "--test needs --train"),
    (["cv", "--methods", "ranksvm,foo"], "unknown method"),
    (["cv", "--methods", "listmle", "--baseline", "ranksvm"], "--baseline ranksvm is not among"),
    (["cv", "--lams", "1,a"], "--lams must be comma-separated numbers"),
    (["cv", "--folds", "/nonexistent"], "no such folder"),
])
def test_cv_command_bad_input(args, message, capsys):
    from cvxrank.cli import main

    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_edges_of_the_grid():
    from cvxrank.experiments.cv import CVResult, _edges

    grid = [{"C": c, "pcf": p} for c in (0.1, 1.0, 10.0) for p in (1.5, 2.0, 3.0)]
    assert _edges({"C": 10.0, "pcf": 1.5}, grid) == "C=10 (top); pcf=1.5 (bottom)"
    assert _edges({"C": 1.0, "pcf": 3.0}, grid) == "pcf=3 (top)"
    assert _edges({"C": 1.0, "pcf": 2.0}, grid) == ""
    assert _edges({"lam": 1.0}, [{"lam": 1.0}]) == ""  # a single value is no choice
    two = [{"lam": 0.1}, {"lam": 10.0}]  # with two values every choice is an edge: no warning
    assert _edges({"lam": 0.1}, two) == "" and _edges({"lam": 10.0}, two) == ""
    sel = pd.DataFrame({"method": ["A", "A", "A", "B"], "fold": ["f1", "f2", "f3", "f1"],
                        "params": ["lam=10", "lam=10", "lam=1", "lam=1"],
                        "at_edge": ["lam=10 (top)", "lam=10 (top)", "", ""]})
    per_query = pd.DataFrame({"method": ["A", "B"], "fold": ["f1", "f1"], "qid": [1, 1], "map": [0.5, 0.5]})
    result = CVResult(per_query, sel)
    assert result.edge_warnings() == ["A chose the edge of its grid: lam=10 (top) in 2 of 3 folds; the best value "
                                      "may lie outside the grid (widen it)"]
    assert result.chosen.to_dict() == {"A": "lam=10 (2/3 folds), lam=1 (1/3)", "B": "lam=1 (1/1 folds)"}


def test_cv_command_prints_choices_and_warns_at_the_edge(tmp_path, capsys):
    from cvxrank.cli import main

    out = tmp_path / "cv"
    assert main(["cv", "--queries", "9", "--features", "3", "--n-folds", "3", "--methods", "ranksvm",
                 "--lams", "0.1,10", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    sel = pd.read_csv(out / "selection.csv")
    assert "chosen" in text and f"{sel['params'].iloc[0]} (" in text
    # with two values every choice is at an edge of the grid: that says nothing, so no warning
    assert sel["at_edge"].isna().all()
    assert "edge of its grid" not in text and "edge of their grid" not in (out / "report.md").read_text()
    out3 = tmp_path / "cv3"
    assert main(["cv", "--queries", "9", "--features", "3", "--n-folds", "3", "--methods", "ranksvm",
                 "--lams", "0.1,1,10", "--out", str(out3), "--no-progress"]) == 0
    text = capsys.readouterr().out
    sel = pd.read_csv(out3 / "selection.csv")
    at_edge = sel["params"].isin(["lam=0.1", "lam=10"])
    assert (sel["at_edge"].notna() == at_edge).all()
    assert ("warning: RankSVM chose the edge of its grid: lam=" in text) == at_edge.any()
    assert ("edge of their grid" in (out3 / "report.md").read_text()) == at_edge.any()
