"""The benchmark commands run end to end on tiny inputs (the figures themselves come from full runs, not tests)."""

import json

from cvxrank.cli import main


def test_bench_path_writes_table_bound_and_json(tmp_path, capsys):
    out = tmp_path / "path.json"
    args = ["bench", "path", "--instance", "ranking", "--queries", "2", "--points", "3",
            "--configs", "lifted:clarabel,hinge:ecos", "--json", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "bound without warm starts" in text and "agree (relative objective difference <= 10 tol): True" in text
    doc = json.loads(out.read_text())
    assert [(r["formulation"], r["solver"]) for r in doc["rows"]] == [("lifted", "clarabel"), ("hinge", "ecos")]
    for r in doc["rows"]:
        assert r["statuses"] == ["optimal"] and r["bound"] >= 1.0
        fresh = r["fresh"]
        assert r["bound"] == r["fresh_s"] / (r["fresh_s"] - fresh["build"] - fresh["compile"])


def test_bench_formulations_headline_and_shapes_report(tmp_path, capsys):
    report = tmp_path / "choice.md"
    args = ["bench", "formulations", "--queries", "1", "--shapes", "3,12", "--shape-pairs", "150",
            "--features", "4", "--report", str(report)]
    assert main(args) == 0
    text = report.read_text()
    for run in ("| auto (lifted) | scale |", "| primal (dense D) | scale |", "| primal (dense D) | per_pair |",
                "| auto (lifted) | per_pair |"):
        assert run in text
    assert "faster than the faster dense primal" in text and "## The rule across query lengths" in text
    assert "rule picked the fastest formulation on" in text
