"""The benchmark commands run end to end on tiny inputs (the figures themselves come from full runs, not tests).

Each run solves several problems: slow (``python -m pytest -m slow``), but for one tiny ``bench path`` run and
the refusals. Timings are never compared with a number or with each other: only their own formulas hold."""

import json
import os

import numpy as np
import pytest

from cvxrank.cli import main


def test_bench_path_writes_table_bound_and_json_per_size(tmp_path, capsys):
    out, report = tmp_path / "path.json", tmp_path / "path.md"
    args = ["bench", "path", "--instance", "ranking", "--queries", "1,2", "--points", "3",
            "--configs", "lifted:clarabel,hinge:ecos", "--json", str(out), "--report", str(report)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "bound without warm starts" in text and "agree (relative objective difference <= 10 tol): True" in text
    doc = json.loads(out.read_text())
    assert [s["queries"] for s in doc["sizes"]] == [1, 2] and doc["sizes"][0]["pairs"] < doc["sizes"][1]["pairs"]
    assert [(r["queries"], r["formulation"], r["solver"]) for r in doc["rows"]] == [
        (1, "lifted", "clarabel"), (1, "hinge", "ecos"), (2, "lifted", "clarabel"), (2, "hinge", "ecos")]
    for size in doc["sizes"]:
        assert f"{size['queries']} queries, {size['documents']} documents, {size['pairs']} pairs" in report.read_text()
    for r in doc["rows"]:
        assert r["statuses"] == ["optimal"] and r["bound"] >= 1.0
        fresh = r["fresh"]
        assert r["bound"] == r["fresh_s"] / (r["fresh_s"] - fresh["build"] - fresh["compile"])


def test_bench_path_refuses_bad_sizes_in_one_line(capsys):
    assert main(["bench", "path", "--queries", "2,x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--queries must be positive integers" in err and "'2,x'" in err
    assert main(["bench", "path", "--queries", "0"]) == 2


@pytest.mark.parametrize("argv, message", [
    (["path", "--seed", "-1"], "--seed must be a non-negative integer < 4294967296, got -1"),
    (["path", "--lam-max", "inf"], "--lam-max must be positive and finite, got inf"),
    (["path", "--lam-min", "nan"], "--lam-min must be a number, got nan"),
    (["path", "--lam-min", "20"], "--lam-min (20) must be below --lam-max (10)"),
    (["path", "--points", "1"], "--points must be an integer >= 2, got 1"),
    (["path", "--tol", "1e-300"], "--tol must be a number in [1e-15, 1)"),
    (["path", "--configs", "lifted:cutting_plane"], "so its formulation is native (native:cutting_plane)"),
    (["path", "--configs", "native:clarabel"], "clarabel is a CVXPY solver; it needs a CVXPY formulation"),
    (["path", "--configs", "native:truncated_newton"], "truncated_newton does not solve the papers' problem"),
    (["path", "--configs", "lifted:nosuch"], "unknown solver 'nosuch'"),
    (["path", "--configs", "bogus:clarabel"], "unknown formulation 'bogus'"),
    (["path", "--configs", "lifted"], "is not FORMULATION:SOLVER"),
    (["formulations", "--timeout", "nan"], "--timeout must be a number in (0, 1e+09]"),
    (["formulations", "--timeout", "1e10"], "longer waits overflow the clock"),
    (["formulations", "--skip-headline", "--shapes", "0"], "--shapes must be an integer >= 3, got 0"),
    (["formulations", "--shape-pairs", "-1"], "--shape-pairs must be a positive integer, got -1"),
    (["formulations", "--features", "0"], "--features must be a positive integer, got 0"),
    (["formulations", "--queries", "0"], "--queries must be a positive integer, got 0"),
    (["formulations", "--lam", "0"], "--lam must be positive and finite"),
    (["formulations", "--seed", "-1"], "--seed must be a non-negative integer"),
    (["formulations", "--tol", "1"], "--tol must be a number in [1e-15, 1)"),
    (["native", "--C", "inf"], "--C must be positive and finite, got inf"),
    (["native", "--web-tol", "0"], "--web-tol must be a number in [1e-15, 1)"),
    (["native", "--floor-reference-tol", "nan"], "--floor-reference-tol must be a number in [1e-15, 1)"),
    (["native", "--web-time-limit", "nan"], "--web-time-limit must be a positive finite number, got nan"),
    (["native", "--web-queries", "-3"], "--web-queries must be a positive integer, got -3"),
    (["native", "--repeat", "0"], "--repeat must be a positive integer, got 0"),
    (["native", "--floor-repeat", "0"], "--floor-repeat must be a positive integer, got 0"),
    (["native", "--scaling-lengths", "0,5"], "--scaling-lengths must be a positive integer, got 0"),
    (["native", "--floor-lams", "inf"], "--floor-lams must be positive and finite, got inf"),
    (["native", "--floor-methods", "ocas"], "--floor-methods takes cutting_plane, planes_only"),
    (["native", "--kernel", "foo"], "--kernel must be one of auto, compiled, numpy"),
    (["native", "--seed", "-1"], "--seed must be a non-negative integer"),
    (["native", "--shapes-max-planes", "3"], "--shapes-max-planes must be at least 4, got 3"),
    (["native", "--shapes-start", "auto,middle"], "--shapes-start takes auto, regression, zero, each once, got 'auto,middle'"),
    (["native", "--shapes-start", "zero,zero"], "--shapes-start takes auto, regression, zero, each once, got 'zero,zero'"),
    (["native", "--shapes-threshold", "auto,maybe"], "--shapes-threshold takes auto, on, off, each once, got 'auto,maybe'"),
    (["native", "--shapes-threshold", "on", "--shapes-pair-cd", "off"], "--shapes-threshold on runs before pair_cd: not with --shapes-pair-cd off"),
    (["io", "--big-lines", "-1"], "--big-lines must be a positive integer, got -1"),
    (["path", "--report", "/no-such-folder-cvxrank/r.md"], "folder /no-such-folder-cvxrank does not exist"),
    (["formulations", "--json", "/no-such-folder-cvxrank/f.json"], "folder /no-such-folder-cvxrank does not exist"),
    (["native", "--json", "/no-such-folder-cvxrank/n.json"], "folder /no-such-folder-cvxrank does not exist"),
])
def test_bench_refuses_every_bad_option_in_one_line_before_running(argv, message, capsys):
    """Options the instances asked for do not read are checked too: a typo fails now, not in an hour."""
    assert main(["bench", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and message in captured.err and "Traceback" not in captured.err
    assert captured.out == ""


@pytest.mark.slow
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


@pytest.mark.slow
def test_bench_native_certificate_share_before_and_after(tmp_path, capsys):
    """The native solve keeps its own bound (no pairwise re-certification after it); both routes are
    certified. How the two times compare is the benchmark's finding on a machine, not asserted here."""
    out = tmp_path / "cert.json"
    assert main(["bench", "native", "--instances", "certificate", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "certificate share of a native solve" in text and "before: pairwise re-certification" in text
    before, after = json.loads(out.read_text())["rows"]
    assert before["route"].startswith("before") and after["route"].startswith("after: the method's own bound")
    assert after["relative_gap"] <= 1e-6 and before["pairs"] == after["pairs"]
    for r in (before, after):
        assert r["solve_s"] > 0 and r["certificate_s"] >= 0
        assert r["share"] == pytest.approx(r["certificate_s"] / (r["solve_s"] + r["certificate_s"]))


def test_bench_native_shapes_reports_the_bar_and_the_peak_over_x(tmp_path, capsys):
    """The shape suite's rows: the bar against this process's floor pass, and with --shapes-memory the peak of one
    more solve over X's bytes (here with the planes limited, which the rows record)."""
    out = tmp_path / "shapes.json"
    argv = ["bench", "native", "--instances", "shapes", "--shapes", "ties", "--shapes-lams", "5,500",
            "--shapes-repeat", "1", "--shapes-memory", "--shapes-max-planes", "8", "--json", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "peak/X" in text and "bar met on" in text and "against a floor pass of the X the solver keeps" in text
    # the machine, whose numpy sort makes much of the floor pass, goes with the figures
    from cvxrank.study.report import simd_extensions

    assert text.startswith("machine: ") and (", ".join(simd_extensions()) or "no SIMD") in text.splitlines()[0]
    env = json.loads(out.read_text())["environment"]
    assert env["simd"] == simd_extensions() and env["cores"] >= 1 and env["packages"]["numpy"] == np.__version__
    assert "the solver keeps X as" not in text  # (said only of a shape whose X the solver changes)
    rows = [r for r in json.loads(out.read_text())["rows"] if r.get("instance") == "shapes" and "lam" in r]
    assert [r["lam"] for r in rows] == [5.0, 500.0]
    for r in rows:
        assert r["status"] == "optimal" and r["relative_gap"] <= 1e-6 and r["max_planes"] == 8
        assert r["peak_over_x"] > 0 and r["floor_passes"] == pytest.approx(r["seconds"] / r["eval_seconds"])
        # the floor pass is timed before each round of solves, and its median is the row's
        assert len(r["eval_seconds_each"]) == 1 and r["eval_seconds"] == r["eval_seconds_each"][0] > 0
        assert r["bar"] == (r["seconds"] <= 100 * r["eval_seconds"] + 0.020)
        # a dense X is kept as given: its floor pass is the kept X's too
        assert r["kept_x_eval_seconds_each"] == r["eval_seconds_each"] and r["bar_kept_x"] == r["bar"]
        assert r["floor_passes_kept_x"] == pytest.approx(r["floor_passes"])


def test_bench_native_shapes_times_the_floor_pass_of_the_x_the_solver_keeps(tmp_path, capsys):
    """On the real sample (CSR, 32 % stored) the solver keeps a dense X without the columns that carry no pair
    information: the row reads the bar against a floor pass of each, both timed before every round of solves."""
    from cvxrank.bench.native import LETOR_SAMPLE

    if not os.path.exists(LETOR_SAMPLE):
        pytest.skip(f"{LETOR_SAMPLE} is absent")
    out = tmp_path / "shapes.json"
    argv = ["bench", "native", "--instances", "shapes", "--shapes", "letor", "--shapes-lams", "500",
            "--shapes-repeat", "2", "--json", str(out)]
    assert main(argv) == 0
    assert "the solver keeps X as a dense 3,005 x 200 float64 array (the data's: CSR 3,005 x 300" in capsys.readouterr().out
    (r,) = [r for r in json.loads(out.read_text())["rows"] if r.get("instance") == "shapes" and "lam" in r]
    assert r["status"] == "optimal" and len(r["kept_x_eval_seconds_each"]) == len(r["eval_seconds_each"]) == 2
    assert r["kept_x_eval_seconds_each"] != r["eval_seconds_each"]  # timed apart, on the other matrix
    assert r["kept_x_eval_seconds"] == float(np.median(r["kept_x_eval_seconds_each"])) > 0
    assert r["floor_passes_kept_x"] == pytest.approx(r["seconds"] / r["kept_x_eval_seconds"])
    assert r["bar_kept_x"] == (r["seconds"] <= 100 * r["kept_x_eval_seconds"] + 0.020)


def test_bench_native_shapes_records_pair_cd(tmp_path, capsys):
    """--shapes-pair-cd on solves with pair_cd=True and says so in every row (a dense shape: the solve goes on as
    without it, certified all the same)."""
    out = tmp_path / "shapes.json"
    argv = ["bench", "native", "--instances", "shapes", "--shapes", "ties", "--shapes-lams", "500",
            "--shapes-repeat", "1", "--shapes-pair-cd", "on", "--json", str(out)]
    assert main(argv) == 0
    rows = [r for r in json.loads(out.read_text())["rows"] if r.get("instance") == "shapes" and "lam" in r]
    assert rows and all(r["pair_cd"] == "on" and r["status"] == "optimal" for r in rows)
    assert all(r["bound"] in ("cutting-plane bound", "band dual bound") for r in rows)


def test_bench_native_shapes_compares_first_points(tmp_path, capsys):
    """--shapes-start with two first points: a row for each, both certified, saying which point each solve took."""
    out = tmp_path / "shapes.json"
    argv = ["bench", "native", "--instances", "shapes", "--shapes", "ties", "--shapes-lams", "500",
            "--shapes-repeat", "1", "--shapes-start", "regression,zero", "--json", str(out)]
    assert main(argv) == 0
    assert "start regression" in capsys.readouterr().out
    rows = [r for r in json.loads(out.read_text())["rows"] if r.get("instance") == "shapes" and "lam" in r]
    assert [(r["start"], r["started"]) for r in rows] == [("regression", "regression"), ("zero", "zero")]
    assert rows[0]["start_products"] > 0 and rows[0]["start_sweeps"] > 0
    assert rows[1]["start_products"] == rows[1]["start_sweeps"] == 0
    assert all(r["status"] == "optimal" and r["relative_gap"] <= 1e-6 for r in rows)


def test_bench_native_shapes_compares_threshold_settings(tmp_path, capsys):
    """--shapes-threshold with two settings: a row for each, both certified, saying which setting it ran."""
    out = tmp_path / "shapes.json"
    argv = ["bench", "native", "--instances", "shapes", "--shapes", "ties", "--shapes-lams", "500",
            "--shapes-repeat", "1", "--shapes-threshold", "auto,off", "--json", str(out)]
    assert main(argv) == 0
    assert "threshold off" in capsys.readouterr().out
    rows = [r for r in json.loads(out.read_text())["rows"] if r.get("instance") == "shapes" and "lam" in r]
    assert [r["threshold"] for r in rows] == ["auto", "off"]
    assert all(r["status"] == "optimal" and r["relative_gap"] <= 1e-6 for r in rows)


@pytest.mark.slow
def test_bench_native_squared_hinge_runs_three_methods_on_one_objective(tmp_path, capsys):
    out = tmp_path / "sq.json"
    assert main(["bench", "native", "--instances", "squared", "--squared-queries", "1", "--json", str(out)]) == 0
    assert "truncated_newton" in capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    assert [r["method"] for r in rows] == ["newton", "clarabel", "linearsvc"]
    # the same problem: every method's w scored by one objective, within the requested gap of the best bound
    assert all(r["relative_gap"] <= 1e-6 for r in rows[:2]) and rows[0]["status"] == "optimal"
    assert abs(rows[0]["objective"] - rows[1]["objective"]) <= 2e-6 * rows[1]["objective"]
    assert main(["bench", "native", "--instances", "squared", "--squared-queries", "0"]) == 2


@pytest.mark.slow
def test_bench_native_floor_counts_solves_in_floor_passes(tmp_path, capsys):
    out = tmp_path / "floor.json"
    args = ["bench", "native", "--instances", "floor", "--ohsumed-queries", "3", "--floor-lams", "5",
            "--floor-methods", "cutting_plane,planes_only", "--json", str(out)]
    assert main(args) == 0
    assert "one floor pass" in capsys.readouterr().out
    data = json.loads(out.read_text())
    rows, meta = data["rows"], data["meta"][0]
    assert [r["method"] for r in rows] == ["cutting_plane", "planes_only"]
    fp = meta["floor_pass_seconds"]
    assert fp > 0
    for r in rows:
        # the default and the planes alone both certify 1e-6, on the same problem
        assert r["status"] == "optimal" and r["relative_gap"] <= 1e-6
        assert r["floor_passes"] == pytest.approx(r["seconds"] / fp)
        # the median of 5 unsampled solves (the default on ohsumed-like data), as the floor pass is
        assert r["repeat"] == meta["repeat"] == 5 and r["seconds"] == sorted(r["seconds_each"])[2]
        reached = [r["at_gap"][k] for k in sorted(r["at_gap"], key=float, reverse=True)]
        assert all(g is not None for g in reached)
        assert [g["oracle_calls"] for g in reached] == sorted(g["oracle_calls"] for g in reached)
    # every objective lies above every lower bound, up to the float64 rounding of the two computed sums, which the
    # door adds to a certificate (cvxrank.rounding; here the finish closes the gap to a few ulps)
    from cvxrank.datasets import make_ohsumed_like
    from cvxrank.problem import RankingProblem
    from cvxrank.rounding import model_rounding, primal_rounding
    from cvxrank.solvers import solve

    problem = RankingProblem(make_ohsumed_like(n_queries=3, random_state=0), mu="balanced", lam=5.0)
    w = solve(problem, "cutting_plane", tol=1e-6).w
    allowance = 2 * problem.lam * (primal_rounding(problem, w) + model_rounding(problem, w))
    lo = max(r["lower_bound"] for r in rows)
    assert 0 < allowance < 1e-6 * lo
    assert all(r["objective"] >= lo - allowance for r in rows)
    # the solves' peak holds the data the process had after generating it
    assert meta["solves_peak_rss_bytes"] >= meta["rss_after_data_bytes"] > meta["x_bytes"]
    assert main(args[:-2] + ["--floor-methods", "ocas"]) == 2
    assert main(args[:-2] + ["--floor-repeat", "0"]) == 2
    assert "--floor-repeat must be a positive integer, got 0" in capsys.readouterr().err
    # LinearSVC has no bound of its own: a run without a certified reference before it is refused
    assert main(args[:-2] + ["--floor-methods", "linearsvc,cutting_plane"]) == 2
    assert "certifies nothing itself" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_native_floor_puts_linearsvc_and_clarabel_in_floor_passes(tmp_path, capsys):
    """The references run once each; their w is scored against the pair-free run's certified bound, and their
    time is entered at exactly the gaps that w reaches."""
    out = tmp_path / "floor_refs.json"
    args = ["bench", "native", "--instances", "floor", "--ohsumed-queries", "1", "--floor-lams", "5",
            "--floor-methods", "cutting_plane,linearsvc,clarabel", "--json", str(out)]
    assert main(args) == 0
    assert "an upper bound" in capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    assert [r["method"] for r in rows] == ["cutting_plane", "linearsvc", "clarabel"]
    for r in rows[1:]:
        lower = r["scored_against"]  # the pair-free certified bound, or Clarabel's own where better
        assert lower >= rows[0]["lower_bound"] and r["objective"] >= lower * (1 - 1e-12)
        assert r["relative_gap"] == pytest.approx((r["objective"] - lower) / r["objective"], abs=1e-15)
        for key, cell in r["at_gap"].items():
            assert (cell is not None) == (r["relative_gap"] <= float(key))
            if cell is not None:
                assert cell["floor_passes"] == pytest.approx(r["seconds"] / r["floor_pass_seconds"])


@pytest.mark.slow
def test_bench_native_floor_with_float32_x_reports_against_the_float64_size(tmp_path, capsys):
    out = tmp_path / "floor32.json"
    args = ["bench", "native", "--instances", "floor", "--ohsumed-queries", "3", "--floor-lams", "5",
            "--floor-methods", "cutting_plane", "--floor-dtype", "float32", "--json", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "as stored here in float32" in text and "x its own size" in text
    data = json.loads(out.read_text())
    row, meta = data["rows"][0], data["meta"][0]
    assert row["dtype"] == meta["x_dtype"] == "float32" and row["status"] == "optimal"
    assert meta["x_bytes"] == 2 * meta["x_stored_bytes"]  # ratios are to the float64 size of X
    assert row["memory_vs_X"] == pytest.approx(row["peak_bytes"] / meta["x_bytes"])
    with pytest.raises(SystemExit):  # argparse names the two choices
        main(args[:-2] + ["--floor-dtype", "float16"])


@pytest.mark.slow
def test_bench_dask_runs_a_separate_lean_client_and_agrees_with_the_local_solve(tmp_path, capsys):
    """A tiny instance end to end: the client is its own process and reports its whole peak RSS, and the distributed
    solve agrees with the local one within their certified bounds. (What the client imports is tested in
    tests/test_client_imports.py: distributed 2024.1 itself imports pandas when a client connects.)"""
    pytest.importorskip("distributed")
    out = tmp_path / "dask.json"
    args = ["bench", "dask", "--queries", "40", "--shards", "2", "--workers", "2", "--memory-limit", "1GB",
            "--folder", str(tmp_path / "shards"), "--json", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "client process peak" in text and "ok   agree within certified bounds" in text
    doc = json.loads(out.read_text())
    d = doc["dask"]
    assert set(d["heavy_modules"]) <= {"pandas"} and d["client_peak_rss"] >= d["client_rss_start"] > 0
    assert doc["checks"]["agree within certified bounds"] and d["status"] == "optimal"
    assert d["oracle_calls"] <= doc["local"]["oracle_calls"] + 2  # the same method; sums added in another order
