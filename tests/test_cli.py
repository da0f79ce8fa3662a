import json
import os
import subprocess
import sys

import numpy as np
import pytest

from cvxrank.cli import main


def test_demo_prints_the_theorem_table_and_writes_the_report(tmp_path, capsys):
    out_dir = tmp_path / "demo"
    old_umask = os.umask(0o022)
    try:
        assert main(["demo", "--quick", "--out", str(out_dir)]) == 0  # the full run: tests/test_simulation.py (slow)
    finally:
        os.umask(old_umask)
    # the folder and everything in it follow the umask, not mkdtemp's 0700 / mkstemp's 0600
    modes = {p.relative_to(tmp_path).as_posix(): p.stat().st_mode & 0o777 for p in [out_dir, *out_dir.rglob("*")]}
    assert modes == {name: 0o755 if (tmp_path / name).is_dir() else 0o644 for name in modes}, modes
    files = sorted(p.name for p in out_dir.iterdir() if p.name != ".cvxrank-owner.json")  # the owner marker aside
    stems = ["cv_metrics", "fig2_simulation", "fig3_ndcg_at_n", "sigir_fig2_hinge"]
    assert files == sorted(["cv", "report.md", "results.json", *(f"{s}.{ext}" for s in stems for ext in ("png", "pdf"))])
    report = (out_dir / "report.md").read_text()
    for stem in stems:  # every figure as PNG (shown) and PDF (linked), each a real image file
        assert f"]({stem}.png)" in report and f"]({stem}.pdf)" in report
        assert (out_dir / f"{stem}.png").read_bytes().startswith(b"\x89PNG") and (out_dir / f"{stem}.png").stat().st_size > 1000
        assert (out_dir / f"{stem}.pdf").read_bytes().startswith(b"%PDF")
    out = capsys.readouterr().out
    printed = out.splitlines()[-1]
    assert "each as PNG and PDF: " in printed and all(f"{s}.png" in printed and f"{s}.pdf" in printed for s in stems)
    results = json.loads((out_dir / "results.json").read_text())
    sim = results["simulation"]
    # The paper's claim, measured: the cost-sensitive direction is nearer the first axis ...
    assert sim["angles"]["cost_sensitive"] < sim["angles"]["ranksvm"]
    # ... and its NDCG@N is at least Ranking SVM's at most N (at every N on the paper's sizes:
    # tests/test_simulation.py); here 9 of the 11 on the 4x smaller sample.
    at_least = [sim["ndcg"]["cost_sensitive"][n] >= sim["ndcg"]["ranksvm"][n] - 1e-12 for n in sim["ndcg"]["ranksvm"]]
    assert sum(at_least) > len(at_least) / 2
    assert set(results["cross_validation"]["summary"]) == {"RankSVM", "RSVM-IR-Rank", "RSVM-IR-Query", "RSVM-IR-QP",
                                                           "RSVM-IR-GD", "ListMLE", "cs-RgList"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".cvxrank")]  # no temporary folder left
    report = (out_dir / "report.md").read_text()
    # the simulation table once, with the methods' names, not internal keys; the differences paragraph and link
    assert report.count("w1 ") == 1 and "cost_sensitive (ours)" not in report and "ranksvm (ours)" not in report
    assert "Where this differs from the paper" in report and "docs/reproductions.md#where-it-differs" in report
    # every Theorem 1 row that did not pass is explained right below the table
    failed = [r for r in results["theorem1"]["rows"] if r["verdict"] != "pass"]
    for r in failed:
        assert f"- {r['solver']} on the {r['formulation']} form is not certified: " in report
    assert report.count("is not certified: ") == len(failed)
    assert (not failed) == ("Every row certified its tolerance and passed." in report)
    assert "Theorem 1 verified numerically" in out
    rows = _table(out)
    for form in ("primal", "lifted", "dual", "hinge"):
        assert rows[(form, "clarabel")] == ("optimal", "pass")
    assert rows[("pairfree", "cutting_plane")] == ("optimal", "pass")
    # Every row certifies within its work limit (iterations, oracle calls), so none depends on the clock:
    # the same rows pass on a quiet and on a busy machine.
    assert set(rows.values()) == {("optimal", "pass")}, rows
    assert not failed and "Every row certified its tolerance and passed." in report
    assert f"VERIFIED: {len(rows)} of {len(rows)} certified rows pass." in out
    assert "work limits: clarabel " in report and "; no time limit" in report


def _table(out: str) -> dict:
    """``{(formulation, solver): (status, verdict)}`` of the rows ``cvxrank verify`` printed."""
    rows = {}
    for line in out.splitlines():
        tokens = line.split()
        if len(tokens) >= 4 and tokens[0] in ("primal", "lifted", "dual", "hinge", "pairfree"):
            verdict = " ".join(tokens[3:5]) if tokens[3] in ("not", "time") else tokens[3]
            rows[(tokens[0], tokens[1])] = (tokens[2], verdict)
    return rows


def test_verify_writes_json(tmp_path, capsys):
    path = tmp_path / "v.json"
    code = main(["verify", "--tau", "2-1=2,2-0=3,1-0=1", "--mu", "balanced", "--lam", "0.05",
                 "--solvers", "clarabel,cutting_plane", "--json", str(path)])
    assert code == 0
    doc = json.loads(path.read_text())
    assert doc["meta"]["lam"] == 0.05
    assert doc["meta"]["time_limit"] is None and set(doc["meta"]["work_limits"]) == {"clarabel", "cutting_plane"}
    rows = doc["rows"]
    assert {(r["formulation"], r["solver"]) for r in rows} == {("primal", "clarabel"), ("dual", "clarabel"),
                                                              ("pairfree", "cutting_plane")}
    assert all(r["verdict"] == "pass" for r in rows)
    assert all(isinstance(r["work"], int) and r["work"] <= r["work_limit"] for r in rows)
    assert doc["meta"]["verified"] is True
    assert f"wrote {path}" in capsys.readouterr().out


def test_verify_defaults_certify_every_row_on_generated_data(capsys):
    from cvxrank.theorem import plan_rows

    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    rows = _table(out)
    assert len(rows) == len(plan_rows()) and set(rows.values()) == {("optimal", "pass")}, out
    assert f"VERIFIED: {len(rows)} of {len(rows)} certified rows pass." in out
    assert "; no time limit" in out and "time limit hit" not in out


def test_verify_judges_by_work_and_names_the_limit(capsys):
    """A work limit too small for ECOS: its rows are not certified, the same on any machine, and say so."""
    assert main(["verify", "--solvers", "clarabel,ecos", "--work-limit", "ecos=2"]) == 0
    out = capsys.readouterr().out
    rows = _table(out)
    assert rows[("primal", "ecos")][1] == rows[("hinge", "ecos")][1] == "not certified"
    assert rows[("primal", "clarabel")] == ("optimal", "pass")
    from cvxrank.solvers.registry import get_spec

    clarabel = get_spec("clarabel").work_limit
    assert f"work limits: clarabel {clarabel:,} iterations, ecos 2 iterations; no time limit" in out
    assert "within its work limit of 2 iterations" in out
    assert "VERIFIED: 2 of 2 certified rows pass, 2 not certified." in out


def test_verify_help_matches_the_registry(capsys):
    """The help states the default rows and the work limits; they are the code's (and the time limit is off)."""
    from cvxrank.cli.verify import EPILOG
    from cvxrank.solvers.registry import SOLVERS
    from cvxrank.theorem import DEFAULT_FORMULATIONS, DEFAULT_SOLVERS

    text = " ".join(EPILOG.split())
    n = {name: SOLVERS[name].work_limit for name in SOLVERS}
    assert n["clarabel"] == n["ecos"]
    assert (f"clarabel and ecos {n['clarabel']} iterations, scs {n['scs']:,}, osqp {n['osqp']:,}, "
            f"subgradient {n['subgradient']:,}, cutting_plane {n['cutting_plane']:,} oracle calls") in text
    assert DEFAULT_SOLVERS == ("clarabel", "ecos", "scs", "cutting_plane")
    assert DEFAULT_FORMULATIONS == {"clarabel": ("primal", "dual"), "ecos": ("primal", "hinge"),
                                    "scs": ("lifted", "dual"), "osqp": ("primal",)}
    assert ("clarabel on the primal QP (14) and the dual (18)-(19), ecos on the primal QP and the hinge problem (9), "
            "scs on the lifted QP and the dual, and the native cutting_plane solver on (9)") in text
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "opt-in safety net, off by default" in out and "--work-limit" in out


def test_verify_on_a_letor_file(tmp_path, capsys):
    f = tmp_path / "t.letor"
    f.write_text("2 qid:1 1:1.0 2:0.5\n1 qid:1 1:0.2 2:0.1\n0 qid:1 1:-1 2:0.3\n"
                 "1 qid:2 1:0.5 2:0.9\n0 qid:2 1:0.1 2:-0.4\n")
    assert main(["verify", "--data", str(f), "--solvers", "clarabel"]) == 0
    assert "4 pairs, 2 features" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["verify", "--tau", "2-3=1"], "ordered the wrong way"),
    (["verify", "--tau", "21"], "not HIGHER-LOWER=VALUE"),
    (["verify", "--mu", "heavy"], "mu must be"),
    (["verify", "--lam", "-1"], "lam must be positive"),
    (["verify", "--data", "/nonexistent/file.letor"], "no such file"),
    (["verify", "--solvers", "nope"], "solvers not available"),
    (["verify", "--work-limit", "ecos"], "is not SOLVER=N"),
    (["verify", "--work-limit", "ecos=-3"], "is not SOLVER=N"),
    (["verify", "--solvers", "clarabel", "--work-limit", "ecos=3"], "not run"),
    (["verify", "--time-limit", "0"], "--time-limit must be a positive finite number"),
    (["verify", "--json", "/nonexistent/dir/out.json", "--solvers", "clarabel"], "does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err


def test_malformed_file_names_the_line(tmp_path):
    f = tmp_path / "bad.letor"
    f.write_text("1 qid:1 1:0.5\n0 qid:1 1:abc\n")
    proc = subprocess.run([sys.executable, "-m", "cvxrank.cli", "verify", "--data", str(f)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "line 2" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_help_lists_commands_with_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "cvxrank verify --tau" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "demo" in capsys.readouterr().out


def test_json_keeps_every_float_as_it_is(tmp_path):
    """A certified gap of 3.9e-11 is stored as 3.9e-11, not rounded to 0 (pandas' to_json keeps 10 digits)."""
    import numpy as np
    import pandas as pd

    from cvxrank._io import frame_to_json, write_json

    df = pd.DataFrame({"relative_gap": [3.9e-11, 1 / 3, np.nan], "solver": ["a", "b", "c"]})
    df.attrs["lam"] = np.float64(0.1)
    write_json(tmp_path / "t.json", frame_to_json(df))
    doc = json.loads((tmp_path / "t.json").read_text())
    assert [r["relative_gap"] for r in doc["rows"]] == [3.9e-11, 1 / 3, None] and doc["meta"]["lam"] == 0.1


def test_evaluate_convention_reproduces_the_scripts(tmp_path, capsys):
    from cvxrank.data import RankingData, save_letor

    data_path, scores_path = tmp_path / "d.letor", tmp_path / "s.txt"
    save_letor(RankingData(np.eye(5), [2, 0, 1, 1, 0], [1, 1, 1, 2, 2]), data_path)
    scores_path.write_text("0.5\n0.5\n0.9\n0.1\n0.2\n")
    out = tmp_path / "m.json"
    assert main(["evaluate", str(data_path), "--scores", str(scores_path), "--k", "3",
                 "--convention", "letor", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["convention"] == "letor" and doc["metrics"]["ndcg@3"] == 0.5 and doc["metrics"]["map"] == 0.75
    assert "convention letor" in capsys.readouterr().out
