"""cvxrank compare: a small study from the command line, resume, refusals, bad names, unreachable scheduler."""

import socket

import pandas as pd
import pytest

from cvxrank.cli import main
from cvxrank.study import COLUMNS

BASE = ["compare", "--instances", "ecml", "--sizes", "2,4", "--formulations", "lifted,dual", "--solvers",
        "clarabel,subgradient", "--profiles", "low,mid", "--no-progress"]


@pytest.mark.slow  # 12 runs and their references, twice; the tests below run one-run studies
def test_compare_runs_a_study_writes_the_report_and_resumes(tmp_path, capsys):
    out = tmp_path / "study"
    assert main(BASE + ["--out", str(out), "--jobs", "2", "--timeout", "60"]) == 0
    text = capsys.readouterr().out
    assert "12 runs ran now; 0 were already in" in text and "success rate" in text
    df = pd.read_csv(out / "results.csv")
    assert tuple(df.columns) == COLUMNS and len(df) == 2 * (2 + 1) * 2
    assert (df["status"] == "optimal").all()
    assert sorted(df["pairs"].unique()) == [32 * 4, 32 * 16]  # ECML sizes s = 2, 4: 32 s^2 pairs
    report = (out / "report.md").read_text()
    assert "cvxrank compare --instances ecml --sizes 2,4" in report and "## Success rate" in report
    printed = text
    for stem in ("performance-profile-low", "scaling-ecml-mid"):  # each figure as PNG and PDF, listed as written
        for ext in ("png", "pdf"):
            assert (out / "figures" / f"{stem}.{ext}").is_file() and f"wrote {out / 'figures' / stem}.{ext}" in printed
    assert f"wrote {out / 'report.md'}" in printed
    # the same command again: nothing to run
    assert main(BASE + ["--out", str(out), "--no-report"]) == 0
    assert "0 runs ran now; 12 were already in" in capsys.readouterr().out
    # a second run one job at a time gives the same table, and the report says so
    other = tmp_path / "again"
    assert main(BASE + ["--out", str(other), "--compare-with", str(out)]) == 0
    assert "12 of 12 runs are the same, times and memory aside" in (other / "report.md").read_text()


@pytest.mark.parametrize("option, value, valid", [
    ("--solvers", "clarabel,gurobbi", "valid: clarabel, "),
    ("--formulations", "lifted,primall", "primal, lifted, dual, hinge, auto, native"),
    ("--profiles", "mid,extreme", "low, mid, high"),
])
def test_unknown_names_are_refused_before_anything_runs(tmp_path, capsys, option, value, valid):
    args = BASE + ["--out", str(tmp_path / "never")]
    args[args.index(option) + 1] = value
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "error: unknown" in err and valid in err and value.split(",")[1] in err
    assert not (tmp_path / "never").exists()


def test_another_study_in_the_same_folder_needs_overwrite(tmp_path, capsys):
    out = str(tmp_path / "s")
    small = ["compare", "--instances", "ecml", "--sizes", "2", "--formulations", "lifted", "--solvers", "clarabel",
             "--profiles", "low", "--no-progress", "--no-report", "--out", out]
    assert main(small) == 0
    other = [a if a != "low" else "mid" for a in small]
    assert main(other) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(other + ["--overwrite"]) == 0
    assert pd.read_csv(tmp_path / "s" / "results.csv")["profile"].tolist() == ["mid"]


@pytest.mark.timeout(300)  # a safety net: a hang fails instead of blocking the suite
def test_an_unreachable_scheduler_is_an_error_within_its_connect_timeout(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(BASE + ["--out", str(tmp_path / "x"), "--scheduler", f"tcp://127.0.0.1:{port}",
                       "--connect-timeout", "0.5"]) == 2
    # the connection was given up at the limit, not retried on (the message states the limit that ended it)
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler" in err and "within 0.5 s" in err


def test_max_iter_caps_every_solver_under_its_own_option_name(tmp_path, capsys):
    """--max-iter ends runs by iteration count (deterministic), not by the clock; it is part of the study."""
    out = str(tmp_path / "capped")
    args = ["compare", "--instances", "ecml", "--sizes", "2", "--formulations", "lifted", "--solvers",
            "osqp,clarabel", "--profiles", "high", "--no-progress", "--no-report", "--out", out]
    assert main(args + ["--max-iter", "2"]) == 0
    df = pd.read_csv(tmp_path / "capped" / "results.csv").set_index("solver")
    assert (df["iterations"] <= 2).all()
    assert (df["status"] == "user_limit").all() and not df["found"].any()
    # the reference is not capped: it is certified, so the errors against it are finite
    assert df["objective_error"].notna().all() and (df["reference_objective"] > 0).all()
    # a different cap is a different study
    assert main(args + ["--max-iter", "3"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(args + ["--max-iter", "0", "--overwrite"]) == 2
    assert "--max-iter must be a positive integer" in capsys.readouterr().err


def test_reports_show_no_machine_paths(tmp_path):
    """The command line quoted in a committed report holds no absolute path of the machine."""
    from cvxrank.cli.compare import shown_path

    assert shown_path(str(tmp_path / "study" / "local")) == "local"
    assert shown_path("relative/out") == "relative/out"


def test_defaults_are_quick_and_reports_hold_no_machine_paths(tmp_path):
    import argparse

    from cvxrank.cli import compare

    parser = argparse.ArgumentParser()
    compare.add_arguments(parser)
    args = parser.parse_args(["--out", "/tmp/somewhere/study", "--solvers", "clarabel,osqp",
                              "--compare-with", str(tmp_path / "other")])
    study = compare.study_from_args(args)
    assert [i.size for i in study.instances] == [5, 10, 20] and study.instances[0].name.startswith("ecml")
    # the solver registry's quick cap for OSQP, the work limit of cvxrank.solve for Clarabel
    assert study.run_options("osqp") == {"max_iter": 4000} and study.run_options("clarabel") == {"max_iter": 100}
    line = compare.command_line(args)
    assert "/tmp" not in line and str(tmp_path) not in line and "--out study" in line
    capped = parser.parse_args(["--out", "x", "--solvers", "osqp", "--max-iter", "50"])
    assert compare.study_from_args(capped).max_iter == 50 and compare.study_from_args(capped).run_options("osqp") == {
        "max_iter": 50}


def test_the_command_line_and_the_api_define_the_same_study():
    """Defaults live in one place: compare with its defaults is Study() with its defaults (same hash, same caps)."""
    import argparse

    from cvxrank.cli import compare
    from cvxrank.study import Study, make_instances

    parser = argparse.ArgumentParser()
    compare.add_arguments(parser)
    cli = compare.study_from_args(parser.parse_args(["--out", "x"]))
    api = Study(make_instances(["ecml"], [5, 10, 20]))
    assert cli.definition() == api.definition() and cli.hash == api.hash
    assert cli.run_options("osqp") == api.run_options("osqp") == {"max_iter": 4000}
    for flag in ("formulations", "profiles", "timeout", "reference"):
        assert getattr(cli, flag) == getattr(api, flag), flag


def test_variants_axis_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "v"
    args = ["compare", "--instances", "ecml", "--sizes", "2", "--formulations", "lifted", "--solvers",
            "clarabel,truncated_newton", "--profiles", "mid", "--variants", "papers,squared_hinge+l1=0.1",
            "--no-progress", "--out", str(out)]
    assert main(args) == 0
    df = pd.read_csv(out / "results.csv")
    assert sorted(df["cost"]) == ["lam=0.5", "lam=0.5", "lam=0.5 variant=loss=squared_hinge+l1=0.1",
                                  "lam=0.5 variant=loss=squared_hinge+l1=0.1"]
    # the pair-free Newton method takes neither the hinge nor an l1 term: two unsupported rows, saying why
    tn = df[df["solver"] == "truncated_newton"]
    assert (tn["status"] == "unsupported").all() and tn["message"].str.contains("does not solve").all()
    assert (df[df["solver"] == "clarabel"]["status"] == "optimal").all()
    assert "--variants papers,squared_hinge+l1=0.1" in (out / "report.md").read_text()
    for bad in ("squared", "l1=x", "papers,papers"):
        changed = [bad if a == "papers,squared_hinge+l1=0.1" else a for a in args[:-1]]
        assert main(changed + [str(tmp_path / "never")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("cvxrank compare: error:"), err
    assert not (tmp_path / "never").exists()


def test_repeats_must_be_a_positive_integer(tmp_path, capsys):
    assert main(BASE + ["--out", str(tmp_path / "never"), "--repeats", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--repeats must be a positive integer" in err[0]
    assert not (tmp_path / "never").exists()


def test_the_command_line_and_the_api_give_the_same_table(tmp_path, capsys):
    """One small study through ``cvxrank compare`` and through ``run_study(Study(...))``: the same rows,
    times and memory aside (status, found flag, objectives, gaps, iterations)."""
    from cvxrank.study import Study, compare_tables, load_results, make_instances, run_study

    cli = tmp_path / "cli"
    assert main(["compare", "--instances", "ecml", "--sizes", "2", "--formulations", "lifted", "--solvers",
                 "clarabel,osqp", "--profiles", "mid", "--no-progress", "--no-report", "--out", str(cli)]) == 0
    capsys.readouterr()
    api = tmp_path / "api"
    study = Study(make_instances(["ecml"], [2]), formulations=("lifted",), solvers=("clarabel", "osqp"),
                  profiles=("mid",))
    run_study(study, api, progress=False)
    a, b = load_results(cli), load_results(api)
    assert len(a) == len(b) > 0
    assert compare_tables(a, b).empty
