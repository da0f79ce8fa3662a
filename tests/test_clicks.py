"""Learning from clicks: the click-log format, pairs from clicks, propensities, the IPS risk.

Pairs are checked against pairs listed by hand from a log written out in the test; the
estimators against the simulator's known ``η`` within three of their own standard errors; the IPS
estimator's unbiasedness over many simulated logs against the full-information risk (and the
naive estimator's bias, so that the comparison could fail).
"""

import bz2
import gzip
import lzma
import re

import numpy as np
import pandas as pd
import pytest

import cvxrank as cr
from cvxrank._memory import MemoryBudgetError, set_memory_budget
from cvxrank.clicks import (
    ClickLog,
    click_pairs,
    click_problem,
    estimate_propensities_em,
    estimate_propensities_swap,
    ips_risk,
    make_clicks,
    naive_risk,
    position_propensity,
    read_clicks,
    session_ranks,
    true_risk,
    write_clicks,
)
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError

#: Six documents: rows 0-3 of query 1, rows 4-5 of query 2.
DOCS = RankingData(np.arange(12.0).reshape(6, 2) % 5, [0, 1, 2, 0, 1, 0], qid=[1, 1, 1, 1, 2, 2])

TINY = """\
# a tiny click log: <click> <position> sid: qid: doc: [p:]
0 1 sid:10 qid:1 doc:0 p:1.0
0 2 sid:10 qid:1 doc:1 p:0.5
1 3 sid:10 qid:1 doc:2 p:0.25   # clicked under two skipped results
0 4 sid:10 qid:1 doc:3 p:0.2

1 1 sid:11 qid:1 doc:2 p:1.0
1 2 sid:11 qid:1 doc:0 p:0.5
0 3 sid:11 qid:1 doc:1 p:0.25
0 1 sid:12 qid:2 doc:4 p:1.0    # a session without a click
0 2 sid:12 qid:2 doc:5 p:0.5
0 1 sid:13 qid:2 doc:5 p:1.0
1 2 sid:13 qid:2 doc:4 p:0.5
"""
#: The line of each impression of TINY (the comment line and the blank line are skipped).
TINY_LINES = [2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13]


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.clicks"
    path.write_text(TINY)
    return read_clicks(path, DOCS)


def triples(pairs, weights):
    return list(zip(pairs.better.tolist(), pairs.worse.tolist(), weights.tolist()))


# -- the format ----------------------------------------------------------------------------

def test_tiny_log_reads_as_written(tiny):
    assert tiny.n_impressions == 11 and tiny.n_sessions == 4 and tiny.n_clicks == 4
    assert tiny.session.tolist() == [10] * 4 + [11] * 3 + [12] * 2 + [13] * 2
    assert tiny.document.tolist() == [0, 1, 2, 3, 2, 0, 1, 4, 5, 5, 4]
    assert tiny.propensity.tolist() == [1.0, 0.5, 0.25, 0.2, 1.0, 0.5, 0.25, 1.0, 0.5, 1.0, 0.5]
    assert tiny.lines.tolist() == TINY_LINES
    assert tiny.n_sessions_without_clicks == 1
    summary = tiny.summary
    assert summary.loc[2, "n_sessions_without_clicks"] == 1 and summary.loc[1, "n_clicks"] == 3
    assert "sessions_without_clicks=1" in repr(tiny)


def test_write_read_round_trip(tiny, tmp_path):
    with_unknown = ClickLog(tiny.session, tiny.query, tiny.document, tiny.position, tiny.click,
                            np.where(tiny.position == 4, np.nan, tiny.propensity * 0.3), documents=DOCS)
    path = tmp_path / "out.clicks"
    write_clicks(with_unknown, path)
    back = read_clicks(path, DOCS)
    pd.testing.assert_frame_equal(back.to_frame(), with_unknown.to_frame())  # propensities bit for bit, NaN kept
    assert "p:" not in path.read_text().splitlines()[4]  # the unknown propensity (position 4) has no field


def test_from_frame_equals_the_text_form(tiny):
    df = pd.DataFrame({"s": tiny.session, "q": tiny.query, "d": tiny.document, "k": tiny.position,
                       "c": tiny.click.astype(bool), "p": tiny.propensity})
    log = ClickLog.from_frame(df, DOCS, session="s", query="q", document="d", position="k", click="c", propensity="p")
    pd.testing.assert_frame_equal(log.to_frame(), tiny.to_frame())
    assert triples(*click_pairs(log, "propensity")) == triples(*click_pairs(tiny, "propensity"))
    no_p = ClickLog.from_frame(tiny.to_frame().drop(columns="propensity"), DOCS)
    assert np.isnan(no_p.propensity).all() and not no_p.has_propensities


@pytest.mark.parametrize("codec", [gzip, bz2, lzma], ids=["gzip", "bzip2", "xz"])
def test_compressed_logs_read(tiny, tmp_path, codec):
    path = tmp_path / "tiny.clicks.z"  # recognised by the first bytes, not by the name
    path.write_bytes(codec.compress(TINY.encode()))
    pd.testing.assert_frame_equal(read_clicks(path, DOCS).to_frame(), tiny.to_frame())
    bad = TINY.replace("0 2 sid:12", "0 0 sid:12")
    path.write_bytes(codec.compress(bad.encode()))
    with pytest.raises(ValidationError, match=r"line 11: position 0 < 1"):
        read_clicks(path, DOCS)


def _with_line(lineno: int, text: str) -> str:
    lines = TINY.splitlines()
    lines[lineno - 1] = text
    return "\n".join(lines) + "\n"


BAD_LINES = {
    "position 0": (3, "0 0 sid:10 qid:1 doc:1", r"line 3: position 0 < 1"),
    "negative position": (3, "0 -2 sid:10 qid:1 doc:1", r"line 3: position -2 < 1"),
    "fractional position": (3, "0 1.5 sid:10 qid:1 doc:1", r"line 3: the position '1.5' is not an integer"),
    "click 2": (4, "2 3 sid:10 qid:1 doc:2", r"line 4: click must be 0 or 1, got 2"),
    "click yes": (4, "yes 3 sid:10 qid:1 doc:2", r"line 4: the click 'yes' is not an integer"),
    "negative propensity": (4, "1 3 sid:10 qid:1 doc:2 p:-0.25", r"line 4: propensity -0.25 is not in \(0, 1\]"),
    "zero propensity": (4, "1 3 sid:10 qid:1 doc:2 p:0", r"line 4: propensity 0.0 is not in \(0, 1\]"),
    "propensity above 1": (4, "1 3 sid:10 qid:1 doc:2 p:1.5", r"line 4: propensity 1.5 is not in \(0, 1\]"),
    "infinite propensity": (4, "1 3 sid:10 qid:1 doc:2 p:inf", r"line 4: propensity inf is not in \(0, 1\]"),
    "explicit NaN propensity": (4, "1 3 sid:10 qid:1 doc:2 p:nan", r"line 4: the propensity is NaN"),
    "propensity not a number": (4, "1 3 sid:10 qid:1 doc:2 p:high", r"line 4: the propensity 'high' is not a number"),
    "document shown twice": (5, "0 4 sid:10 qid:1 doc:0",
                             r"line 5: document 0 is shown twice in session 10 \(also at line 2\)"),
    "position shown twice": (5, "0 3 sid:10 qid:1 doc:3",
                             r"line 5: position 3 is shown twice in session 10 \(also at line 4\)"),
    "interleaved sessions": (9, "0 3 sid:10 qid:1 doc:1",
                             r"line 9: session 10 appears again after other sessions \(it started at line 2\)"),
    "session over two queries": (5, "0 4 sid:10 qid:2 doc:4", r"line 5: session 10 spans two queries \(1 and 2\)"),
    "document of another query": (5, "0 4 sid:10 qid:1 doc:5",
                                  r"line 5: document 5 belongs to query 2, not to its session's query 1"),
    "document out of range": (5, "0 4 sid:10 qid:1 doc:99", r"line 5: document 99 is not a row of the documents"),
    "negative document": (5, "0 4 sid:10 qid:1 doc:-1", r"line 5: document -1 is not a row"),
    "fields out of order": (5, "0 4 qid:1 sid:10 doc:3", r"line 5: the third field must be sid:<session>, got 'qid:1'"),
    "missing field": (5, "0 4 sid:10 qid:1", r"line 5: 4 fields"),
    "extra field": (5, "0 4 sid:10 qid:1 doc:3 p:0.2 x:1", r"line 5: unexpected field 'x:1'"),
    "sixth field not p": (5, "0 4 sid:10 qid:1 doc:3 q:0.2", r"line 5: the sixth field must be p:<propensity>"),
    "query not an integer": (5, "0 4 sid:10 qid:one doc:3", r"line 5: qid 'one' is not an integer"),
    "session beyond int64": (5, "0 4 sid:99999999999999999999 qid:1 doc:3", r"line 5: sid '9+' is out of the 64-bit"),
}


@pytest.mark.parametrize("case", list(BAD_LINES), ids=list(BAD_LINES))
def test_every_bad_input_names_its_line(tmp_path, case):
    lineno, text, message = BAD_LINES[case]
    path = tmp_path / "bad.clicks"
    path.write_text(_with_line(lineno, text))
    with pytest.raises(ValidationError, match=re.escape(str(path)) + ", " + message):
        read_clicks(path, DOCS)


def test_empty_and_comment_only_files_are_refused(tmp_path):
    path = tmp_path / "empty.clicks"
    path.write_text("")
    with pytest.raises(ValidationError, match="the file is empty"):
        read_clicks(path, DOCS)
    path.write_text("# nothing\n\n   \n")
    with pytest.raises(ValidationError, match="holds no impression"):
        read_clicks(path, DOCS)
    with pytest.raises(ValidationError, match="is a directory, not a click log"):
        read_clicks(tmp_path, DOCS)


def test_arrays_name_the_impression():
    with pytest.raises(ValidationError, match=r"impression 2: click must be 0 or 1, got 5"):
        ClickLog([1, 1, 1], [1, 1, 1], [0, 1, 2], [1, 2, 3], [0, 1, 5], documents=DOCS)
    with pytest.raises(ValidationError, match=r"impression 1: position 2.5 is not an integer"):
        ClickLog([1, 1], [1, 1], [0, 1], [1.0, 2.5], [0, 1], documents=DOCS)
    with pytest.raises(ValidationError, match=r"impression 0: propensity -1.0 is not in"):
        ClickLog([1, 1], [1, 1], [0, 1], [1, 2], [0, 1], [-1.0, np.nan], documents=DOCS)
    with pytest.raises(ValidationError, match="documents=RankingData"):
        ClickLog([1], [1], [0], [1], [0])


def test_reading_is_refused_above_the_memory_budget(tmp_path):
    path = tmp_path / "tiny.clicks"
    path.write_text(TINY)
    set_memory_budget("1KiB")
    try:
        with pytest.raises(MemoryBudgetError, match=r"reading the click log .* \(13 lines\)"):
            read_clicks(path, DOCS)
    finally:
        set_memory_budget(None)


# -- pairs --------------------------------------------------------------------------------

def test_skip_above_pairs_by_hand(tiny):
    # session 10: the click at 3 beats the skipped results at 1 and 2; session 11: both clicks sit
    # above every skipped result (no pair); session 12 has no click; session 13: 4 beats 5 above it
    expected = [(2, 0, 1.0), (2, 1, 1.0), (4, 5, 1.0)]
    assert triples(*click_pairs(tiny, "skip_above", merge=False)) == expected
    assert triples(*click_pairs(tiny, "skip_above")) == expected


def test_propensity_pairs_by_hand(tiny):
    # every click beats every other shown result of its session, weight 1/p of the click's position
    unmerged = [(2, 0, 4.0), (2, 1, 4.0), (2, 3, 4.0),   # session 10, click at p = 0.25
                (2, 0, 1.0), (2, 1, 1.0),                # session 11, click at the top (p = 1)
                (0, 2, 2.0), (0, 1, 2.0),                # session 11, click at p = 0.5
                (4, 5, 2.0)]                             # session 13
    assert triples(*click_pairs(tiny, "propensity", merge=False)) == unmerged
    merged = [(0, 1, 2.0), (0, 2, 2.0), (2, 0, 5.0), (2, 1, 5.0), (2, 3, 4.0), (4, 5, 2.0)]
    assert triples(*click_pairs(tiny, "propensity")) == merged
    clipped = [(0, 1, 2.0), (0, 2, 2.0), (2, 0, 4.0), (2, 1, 4.0), (2, 3, 3.0), (4, 5, 2.0)]
    assert triples(*click_pairs(tiny, "propensity", clip=3.0)) == clipped
    # propensities given as a function of the position or an array (position 1 first) replace the log's
    by_function = click_pairs(tiny, "propensity", propensities=lambda k: position_propensity(k, 1.0))
    by_array = click_pairs(tiny, "propensity", propensities=[1.0, 0.5, 1 / 3])
    assert triples(*by_function) == triples(*by_array)
    assert triples(*by_function) == [(0, 1, 2.0), (0, 2, 2.0), (2, 0, 4.0), (2, 1, 4.0), (2, 3, 3.0), (4, 5, 2.0)]


def test_merging_keeps_the_objective(tiny):
    w = np.array([0.3, -0.7])
    merged = click_problem(tiny, "propensity", lam=0.2)
    separate = click_problem(tiny, "propensity", lam=0.2, merge=False)
    assert merged.n_pairs < separate.n_pairs
    assert merged.hinge_objective(w) == pytest.approx(separate.hinge_objective(w), rel=1e-13)
    assert np.allclose(merged.C, merged.weights / 0.4)  # Theorem 1: C_i = (1/p_i) / (2λ)


def test_pair_rule_errors_name_the_line(tiny):
    with pytest.raises(ValidationError, match="rule must be one of 'skip_above', 'propensity'"):
        click_pairs(tiny, "cascade")
    with pytest.raises(ValidationError, match="propensities= and clip= apply to rule='propensity'"):
        click_pairs(tiny, "skip_above", clip=5.0)
    with pytest.raises(ValidationError, match=r"clip must be a finite number >= 1"):
        click_pairs(tiny, "propensity", clip=0.5)
    with pytest.raises(ValidationError, match=r"tiny.clicks, line 4: position 3 has no propensity \(the array "
                                              r"covers positions 1..2\)"):
        click_pairs(tiny, "propensity", propensities=[1.0, 0.5])
    unknown = ClickLog(tiny.session, tiny.query, tiny.document, tiny.position, tiny.click, documents=DOCS,
                       lines=tiny.lines, origin="tiny.clicks")
    with pytest.raises(ValidationError, match=r"tiny.clicks, line 4: the propensity of this clicked impression is "
                                              "unknown"):
        click_pairs(unknown, "propensity")
    assert click_pairs(unknown, "skip_above")[0].n_pairs == 3  # the rule without propensities needs none
    no_click = ClickLog([1, 1], [2, 2], [4, 5], [1, 2], [0, 0], documents=DOCS)
    with pytest.raises(ValidationError, match=r"no preference pairs: none of the 1 sessions \(0 clicks, 1 sessions "
                                              r"without a click\)"):
        click_pairs(no_click, "skip_above")


def test_click_problem_solves_to_optimal():
    data = cr.make_ranking(n_queries=8, docs_per_query=(6, 12), n_features=3, random_state=4)
    log = make_clicks(data, eta=1.0, n_sessions=300, top_k=6, random_state=4)
    problem = click_problem(log, "propensity", lam=0.05, clip=10.0)
    assert problem.source == "preferences" and np.all(problem.weights >= 1.0) and problem.weights.max() > 1.0
    result = cr.solve(problem, "clarabel")
    assert result.status == "optimal"


# -- the simulator --------------------------------------------------------------------------

def test_simulator_is_seeded_and_follows_its_model():
    data = cr.make_ranking(n_queries=6, docs_per_query=(5, 9), n_features=3, random_state=2)
    a = make_clicks(data, eta=2.0, n_sessions=100, top_k=4, random_state=7)
    b = make_clicks(data, eta=2.0, n_sessions=100, top_k=4, random_state=7)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert np.array_equal(a.propensity, position_propensity(a.position, 2.0))
    assert a.position.max() == 4 and np.all(np.diff(a.session_start) <= 4)
    # without noise only relevant documents (the top half of the grades: 1 and 2 of 0..2) are clicked
    clean = make_clicks(data, noise=0.0, n_sessions=200, random_state=1)
    assert clean.n_clicks > 0 and np.all(data.y[clean.document[clean.click == 1]] >= 1)
    swapped = make_clicks(data, n_sessions=50, top_k=5, swap=True, random_state=0)
    assert np.all(np.diff(swapped.session_start) == 5)


# -- the estimators --------------------------------------------------------------------------

ETA_DATA = cr.make_ranking(n_queries=30, docs_per_query=12, n_features=4, random_state=1)


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_swap_interventions_recover_eta(eta):
    log = make_clicks(ETA_DATA, eta=eta, n_sessions=5000, top_k=8, swap=True, random_state=11)
    est = estimate_propensities_swap(log)
    # the estimate is within three of its own (delta-method) standard errors, and that error is small
    assert abs(est.eta - eta) <= 3 * est.eta_se, est
    assert est.eta_se < 0.1
    assert est.theta[0] == 1.0 and est.counts["sessions"].sum() == 5000
    k = np.arange(2, 9)
    inside = np.abs(est.theta[1:] - k ** -eta) <= 3 * est.theta_se[1:]
    assert inside.mean() >= 0.7  # per-position ratios, each within 3 SE of k^-η (7 positions, most of them)


@pytest.mark.parametrize("eta", [0.5, 1.0, 2.0])
def test_em_recovers_eta(eta):
    log = make_clicks(ETA_DATA, eta=eta, n_sessions=5000, top_k=8, swap=True, random_state=12)
    est = estimate_propensities_em(log)
    assert est.converged and est.n_iter < 10_000
    assert abs(est.eta - eta) <= 3 * est.eta_se, est
    assert est.eta_se < 0.1


def test_estimators_refuse_logs_without_information():
    log = make_clicks(ETA_DATA, n_sessions=300, top_k=5, random_state=0)  # a fixed ranking
    with pytest.raises(ValidationError, match="position bias is not identifiable from this log"):
        estimate_propensities_em(log)
    with pytest.raises(ValidationError, match="no position k >= 2 has a click after a swap"):
        estimate_propensities_swap(log)
    other_ranker = np.array([0.0, 1.0, 0.0, 0.0])
    swapped = make_clicks(ETA_DATA, n_sessions=300, top_k=5, swap=True, random_state=0)
    with pytest.raises(ValidationError, match="does not show the production ranker's top result|not a swap"):
        estimate_propensities_swap(swapped, ranker=other_ranker)


# -- the IPS risk ---------------------------------------------------------------------------

@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_ips_risk_is_unbiased_and_the_naive_one_is_not(noise):
    data = cr.make_ranking(n_queries=20, docs_per_query=(6, 12), n_features=4, random_state=3)
    scores = data.X @ np.random.default_rng(0).standard_normal(4)
    ips, naive = [], []
    for seed in range(200):  # the same sessions' true risk is known: compare per log, then average
        log = make_clicks(data, eta=1.0, noise=noise, n_sessions=200, top_k=10, random_state=seed)
        truth = true_risk(log, scores, noise=noise)
        ips.append(ips_risk(log, scores) - truth)
        naive.append(naive_risk(log, scores) - truth)
    for errors, unbiased in ((np.array(ips), True), (np.array(naive), False)):
        se = errors.std(ddof=1) / np.sqrt(errors.size)
        assert se > 0
        assert (abs(errors.mean()) <= 3 * se) == unbiased, (errors.mean(), se)


def test_session_ranks_and_risks_by_hand(tiny):
    scores = np.array([0.0, 3.0, 1.0, 2.0, 0.0, 5.0])
    # session 10 shows rows 0,1,2,3 -> ranks by score 4,1,3,2; session 11 rows 2,0,1 -> 2,3,1
    assert session_ranks(tiny, scores).tolist() == [4, 1, 3, 2, 2, 3, 1, 2, 1, 1, 2]
    # clicks: row 2 in s10 (rank 3, p .25), rows 2 and 0 in s11 (ranks 2 and 3, p 1 and .5), row 4 in s13 (rank 2, p .5)
    assert ips_risk(tiny, scores) == pytest.approx((3 / 0.25 + 2 / 1.0 + 3 / 0.5 + 2 / 0.5) / 4)
    assert naive_risk(tiny, scores) == pytest.approx((3 + 2 + 3 + 2) / 4)
    # relevant (grade >= 1: rows 1, 2, 4): s10 rows 1,2 -> 1+3; s11 rows 2,1 -> 2+1; s12 row 4 -> 2; s13 row 4 -> 2
    assert true_risk(tiny, scores) == pytest.approx((4 + 3 + 2 + 2) / 4)


# -- the docs page ----------------------------------------------------------------------------

def test_the_clicks_page_prints_what_it_shows():
    """docs/clicks.md's example prints the lines the page shows (numbers as printed, 3-4 digits)."""
    import contextlib
    import io
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "clicks.md").read_text()
    code = re.findall(r"^```python\n(.*?)^```", page, flags=re.S | re.M)[0]
    shown = re.findall(r"^```text\n(.*?)^```", page, flags=re.S | re.M)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/clicks.md", "exec"), {})
    assert out.getvalue() == shown
