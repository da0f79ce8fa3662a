"""``cvxrank simulate``: the ECML 2006 simulation from the command line."""

import json

import pytest

from cvxrank.cli import main
from cvxrank.cli.simulate import FIGURES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SMALL = ["--sizes", "60,12,6"]


def test_simulate_writes_json_and_three_figures(tmp_path, capsys):
    out_json = tmp_path / "sim.json"
    plots = tmp_path / "figures"  # created: its parent exists
    code = main(["simulate", *SMALL, "--seed", "2", "--json", str(out_json), "--plots", str(plots)])
    assert code == 0
    doc = json.loads(out_json.read_text())
    assert set(doc["w"]) == {"ranksvm", "cost_sensitive"}
    assert list(doc["ndcg"]["ranksvm"]) == ["1", "10", "20", "30", "40", "50", "60", "70", "80", "90", "100"]
    assert doc["tau"] == {"2-1": 1.0, "2-0": 1.0, "1-0": 0.1}
    assert doc["settings"]["random_state"] == 2 and doc["settings"]["sizes"] == [60, 12, 6]
    assert doc["status"]["ranksvm"]["status"] == doc["status"]["cost_sensitive"]["status"] == "optimal"
    assert sorted(p.name for p in plots.iterdir()) == sorted(FIGURES)
    assert len(FIGURES) == 6 and {n.rsplit(".", 1)[1] for n in FIGURES} == {"png", "pdf"}  # 3 figures, PNG and PDF
    for name in FIGURES:
        assert (plots / name).read_bytes().startswith(PNG_MAGIC if name.endswith(".png") else b"%PDF")
    out = capsys.readouterr().out
    assert "Ranking SVM (ours)" in out and "cost-sensitive (paper)" in out
    assert f"{doc['angles']['ranksvm']:.4f}" in out
    assert out.count("wrote ") == 1 + len(FIGURES) and all(f"wrote {plots / n}" in out for n in FIGURES)


def test_simulate_json_may_go_into_the_new_plots_folder(tmp_path):
    plots = tmp_path / "sim"
    assert main(["simulate", *SMALL, "--json", str(plots / "sim.json"), "--plots", str(plots)]) == 0
    assert sorted(p.name for p in plots.iterdir()) == sorted([*FIGURES, "sim.json"])


def test_simulate_options_reach_the_solver(tmp_path):
    out_json = tmp_path / "sim.json"
    code = main(["simulate", *SMALL, "--tau", "2-1=2,2-0=3,1-0=0.5", "--lam", "0.1", "--formulation", "primal",
                 "--json", str(out_json)])
    assert code == 0
    doc = json.loads(out_json.read_text())
    assert doc["tau"] == {"2-1": 2.0, "2-0": 3.0, "1-0": 0.5}
    assert doc["settings"]["lam"] == 0.1
    assert doc["status"]["cost_sensitive"]["formulation"] == "primal"


def test_simulate_estimated_tau(tmp_path):
    out_json = tmp_path / "sim.json"
    assert main(["simulate", *SMALL, "--tau", "estimate", "--json", str(out_json)]) == 0
    doc = json.loads(out_json.read_text())
    assert doc["settings"]["tau_source"] == "estimate"
    assert doc["tau"] == pytest.approx({"2-1": 2 / 3, "2-0": 1.0, "1-0": 0.01})


@pytest.mark.parametrize("args, message", [
    (["--plots", "{tmp}/no/such/dir"], "parent folder"),
    (["--plots", "{tmp}/file.txt"], "not a folder"),
    (["--json", "{tmp}/no/such/out.json"], "does not exist"),
    (["--tau", "2-1"], "HIGHER-LOWER=VALUE"),
    (["--tau", "2-1=1,2-0=1"], "no value for grade pairs"),
    (["--tau", "3-1=1,2-1=1,2-0=1,1-0=1"], "do not occur"),
    (["--tau", "1-2=1,2-0=1,1-0=1"], "wrong way"),
    (["--sizes", "10,10"], "three positive integers"),
    (["--sizes", "10,0,5"], "three positive integers"),
    (["--lam", "0"], "lam"),
    (["--solver", "nope"], "unknown solver"),
])
def test_simulate_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    (tmp_path / "file.txt").write_text("x")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(["simulate", *SMALL, *args]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("cvxrank simulate: error:") and "\n" not in err
    assert message in err
    assert "Ranking SVM (ours)" not in captured.out  # rejected before any solve
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


def test_simulate_is_listed_with_examples(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    out = capsys.readouterr().out
    assert "cvxrank simulate --seed 3 --json sim.json --plots figures/" in out
