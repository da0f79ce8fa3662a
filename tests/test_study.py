"""Solver comparison studies: instances, profiles, the runner (timeouts, crashes, resume), summaries, report."""

import math
import os
import sys

import numpy as np
import pandas as pd
import pytest

from cvxrank.costs import pair_weights
from cvxrank.data import RankingData, save_letor
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.formulations import build
from cvxrank.objectives import hinge_objective
from cvxrank.pairs import make_pairs
from cvxrank.solvers import solve
from cvxrank.study import (
    COLUMNS,
    CostSetting,
    Instance,
    Study,
    StudyMismatchError,
    compare_tables,
    growth_exponents,
    load_results,
    make_instances,
    performance_profiles,
    run_study,
    shifted_geometric_mean,
    shifted_geometric_means,
    solver_options,
    success_rates,
    write_report,
)
from cvxrank.study._isolate import run_isolated
from cvxrank.study.profiles import PROFILES, TOLERANCE_OPTIONS, passes
from cvxrank.study.worker import Task


def tiny(seed=0, n_queries=4):
    return make_ranking(n_queries=n_queries, docs_per_query=(5, 8), n_features=3, random_state=seed)


def crashing_loader(size, seed):
    """A loader whose worker process dies (as a segfaulting solver would)."""
    os._exit(3)


def tiny_loader(size, seed):
    return tiny(seed, size)


# -- profiles and instances ----------------------------------------------------------------
def test_profiles_translate_tolerance_into_each_solvers_names():
    assert [PROFILES[p].tol for p in ("low", "mid", "high")] == [1e-3, 1e-6, 1e-9]
    assert solver_options("ecos", "high") == {"tol": 1e-9, "abstol": 1e-9, "reltol": 1e-9, "feastol": 1e-9}
    assert solver_options("osqp", "low") == {"tol": 1e-3, "eps_abs": 1e-3, "eps_rel": 1e-3}
    assert solver_options("scs", "mid") == {"tol": 1e-6, "eps_abs": 1e-6, "eps_rel": 1e-6}
    assert solver_options("clarabel", "mid") == {"tol": 1e-6, "tol_gap_abs": 1e-6, "tol_gap_rel": 1e-6,
                                                 "tol_feas": 1e-6}
    assert solver_options("some_native_solver", "mid") == {"tol": 1e-6}
    assert set(TOLERANCE_OPTIONS) >= {"clarabel", "ecos", "osqp", "scs"}
    assert passes("mid", status="optimal", relative_gap=1e-7)
    assert not passes("mid", status="optimal_inaccurate", relative_gap=1e-7)
    assert not passes("high", status="optimal", relative_gap=1e-7)
    with pytest.raises(ValidationError, match="low, mid, high"):
        solver_options("clarabel", "ultra")


def test_generated_instances_scale_with_size_and_split_queries():
    a, b = Instance.generated("ohsumed", 1, test_fraction=0.5), Instance.generated("ohsumed", 2)
    (ta, sa), (tb, sb) = a.load(), b.load()
    assert (ta.n_queries, sa.n_queries, tb.n_queries, sb) == (1, 1, 2, None)
    assert ta.n_features == 45 and set(ta.y.tolist()) == {0, 1, 2}
    assert not set(ta.qid.tolist()) & set(sa.qid.tolist())
    e, _ = Instance.generated("ecml", 3).load()
    assert e.n_documents == 39 and make_pairs(e).n_pairs == 32 * 9  # (10s, 2s, s) documents, 32 s^2 pairs
    assert [(i.name, i.size) for i in make_instances(["web", "ecml"], [1, 2])] == [
        ("web", 1), ("web", 2), ("ecml", 1), ("ecml", 2)]
    with pytest.raises(ValidationError, match="ohsumed, web, ecml, letor:PATH"):
        make_instances(["ohsumd"], [1])
    with pytest.raises(ValidationError, match="positive integer"):
        Instance.generated("web", 0)


def test_letor_instance_takes_the_first_queries_and_the_next_as_test(tmp_path):
    data = tiny(1, n_queries=6)
    path = tmp_path / "train.txt"
    save_letor(data, path)
    train, test = Instance.letor(path, size=3, test_fraction=0.4).load()
    order = list(dict.fromkeys(data.qid.tolist()))
    assert sorted(set(train.qid.tolist())) == sorted(order[:3])
    assert sorted(set(test.qid.tolist())) == sorted(order[3:5])
    full, none = Instance.letor(path).load()
    assert full.n_documents == data.n_documents and none is None
    with pytest.raises(ValidationError, match="does not exist"):
        Instance.letor(tmp_path / "missing.txt")


def test_study_refuses_unknown_names_and_lists_the_valid_ones():
    inst = [Instance.from_data("t", tiny())]
    with pytest.raises(ValidationError, match="valid: .*clarabel"):
        Study(inst, ["lifted"], ["clarabell"])
    with pytest.raises(ValidationError, match="valid: primal, lifted, dual, hinge, auto, native"):
        Study(inst, ["lifed"], ["clarabel"])
    with pytest.raises(ValidationError, match="valid: low, mid, high"):
        Study(inst, ["lifted"], ["clarabel"], ["medium"])
    with pytest.raises(ValidationError, match="distinct names"):
        Study(inst, ["lifted"], ["clarabel"], costs=[CostSetting(1.0), CostSetting(1.0)])


def test_native_solvers_run_once_per_cell_and_the_hash_follows_the_definition():
    inst = [Instance.from_data("t", tiny())]
    s = Study(inst, ["primal", "dual"], ["clarabel", "subgradient"], ["low", "mid"])
    assert s.n_runs == (2 + 1) * 2
    assert [c[:2] for c in s.cells(inst[0])][-1] == ("native", "subgradient")
    same = Study([Instance.from_data("t", tiny())], ["primal", "dual"], ["clarabel", "subgradient"], ["low", "mid"])
    other = Study([Instance.from_data("t", tiny(seed=1))], ["primal", "dual"], ["clarabel", "subgradient"],
                  ["low", "mid"])
    assert s.hash == same.hash != other.hash


# -- running ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_study(tmp_path_factory):
    """Two tiny instances x 4 formulations x (clarabel, cutting_plane) x (low, mid), run with 2 jobs."""
    data, test = tiny(0, 5), tiny(0, 3)
    study = Study([Instance.from_data("tiny", data, test), Instance.from_loader("loaded", tiny_loader, 3)],
                  ["primal", "lifted", "dual", "hinge"], ["clarabel", "cutting_plane"], ["low", "mid"],
                  costs=[CostSetting(lam=0.5)], timeout=60)
    out = tmp_path_factory.mktemp("study")
    df = run_study(study, out, jobs=2, progress=False)
    return study, out, df, data, test


def test_study_rows_have_the_fixed_columns_and_agree_with_an_independent_solve(small_study):
    study, _out, df, data, _test = small_study
    assert tuple(df.columns) == COLUMNS and len(df) == study.n_runs == 2 * (4 + 1) * 2
    assert df.attrs["ran"] == study.n_runs and df.attrs["skipped"] == 0
    assert (df["status"] == "optimal").all() and df["found"].all()
    tiny_rows = df[df["instance"] == "tiny"]
    pairs = make_pairs(data)
    assert (tiny_rows["pairs"] == pairs.n_pairs).all() and (tiny_rows["features"] == 3).all()
    # reference: an independent Clarabel solve of the QP (14) with Theorem 1's C
    weights = pair_weights(pairs)
    ref = solve(build(pairs, weights=weights, lam=0.5, formulation="dual"), "clarabel", tol=1e-9)
    ref_obj = hinge_objective(pairs, ref.w, weights, 0.5)
    assert np.allclose(tiny_rows["reference_objective"], ref_obj, rtol=1e-8)
    # every row found its profile's accuracy, and the errors say so
    for profile, eps in (("low", 1e-3), ("mid", 1e-6)):
        rows = df[df["profile"] == profile]
        assert (rows["relative_gap"] <= eps).all() and (rows["objective_error"] <= eps).all()
    mid = df[df["profile"] == "mid"]
    assert (mid["w_error"] < 1e-2).all()
    assert np.allclose(df["duality_gap"], df["relative_gap"] * df["objective"])
    # held-out NDCG@10 where a test split exists, from the row's own w
    assert tiny_rows["ndcg10"].between(0, 1).all() and df[df["instance"] == "loaded"]["ndcg10"].isna().all()
    assert set(df.loc[df["solver"] == "cutting_plane", "formulation"]) == {"native"}
    assert (df["peak_memory"] >= 0).all() and (df["wall_time"] > 0).all()


def test_variants_are_a_study_axis(tmp_path):
    """Cost settings carry a variant: each solver states it or gives an 'unsupported' row; objectives are the
    variant's, recomputed here from pairs written out by hand."""
    from cvxrank.variants import Variant
    from tests.conftest import brute_force_pairs

    data = tiny(2, 4)
    squared = Variant(loss="squared_hinge", margin="grade_difference")
    costs = [CostSetting(lam=0.5), CostSetting(lam=0.5, variant=squared),
             CostSetting(lam=0.5, variant=Variant(lower=0.0))]
    study = Study([Instance.from_data("tiny", data)], ["lifted", "dual"],
                  ["clarabel", "cutting_plane", "truncated_newton"], ["mid"], costs=costs, timeout=60)
    assert costs[1].name == "lam=0.5 variant=loss=squared_hinge+margin=grade_difference"
    assert study.hash != Study([Instance.from_data("tiny", data)], ["lifted", "dual"],
                               ["clarabel", "cutting_plane", "truncated_newton"], ["mid"], costs=costs[:1]).hash
    df = run_study(study, tmp_path / "s", progress=False)
    names = [c.name for c in costs]
    status = {(names.index(r.cost), r.formulation, r.solver): r.status for r in df.itertuples()}
    assert status == {
        (0, "lifted", "clarabel"): "optimal", (0, "dual", "clarabel"): "optimal",
        (0, "native", "cutting_plane"): "optimal", (0, "native", "truncated_newton"): "unsupported",
        (1, "lifted", "clarabel"): "optimal", (1, "dual", "clarabel"): "optimal",
        (1, "native", "cutting_plane"): "unsupported", (1, "native", "truncated_newton"): "optimal",
        (2, "lifted", "clarabel"): "optimal", (2, "dual", "clarabel"): "unsupported",
        (2, "native", "cutting_plane"): "unsupported", (2, "native", "truncated_newton"): "unsupported"}
    D, c, m = brute_force_pairs(data, margin="grade_difference")
    for row in df[df["cost"] == costs[1].name].itertuples():
        if row.status == "optimal":  # within the two certified gaps of the reference (1e-9, high) and the run (1e-6)
            assert row.reference_objective * (1 - 1e-9) <= row.objective <= row.reference_objective * (1 + 2e-6)
    # the reference is the variant's optimum: no w does better on the independently written problem
    ref = df[df["cost"] == costs[1].name]["reference_objective"].iloc[0]
    w_any = np.zeros(3)
    assert ref <= float(c @ np.maximum(m - D @ w_any, 0) ** 2)
    assert success_rates(df).loc[("native", "truncated_newton"), "mid"] == 100.0  # unsupported rows left out


def test_resume_skips_finished_rows_and_repairs_a_torn_line(small_study):
    study, out, df, *_ = small_study
    again = run_study(study, out, progress=False)
    assert again.attrs["ran"] == 0 and again.attrs["skipped"] == study.n_runs
    assert compare_tables(df, again).empty
    # drop two finished rows and leave half a line, as a killed study would
    path = out / "results.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-2]) + lines[-1][:17])
    resumed = run_study(study, out, progress=False)
    assert resumed.attrs["ran"] == 2 and len(resumed) == study.n_runs
    assert compare_tables(df, resumed).empty


def test_results_of_another_definition_are_refused_unless_overwritten(small_study, tmp_path):
    study, out, *_ = small_study
    other = Study([Instance.from_data("tiny", tiny(2, 3))], ["lifted"], ["clarabel"], ["low"])
    with pytest.raises(StudyMismatchError, match="overwrite"):
        run_study(other, out, progress=False)
    assert len(load_results(out)) == study.n_runs  # untouched
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "results.csv").write_text((out / "results.csv").read_text())  # rows without a study.json
    with pytest.raises(StudyMismatchError, match="unknown definition"):
        run_study(other, copy, progress=False)
    df = run_study(other, copy, overwrite=True, progress=False)
    assert len(df) == 1 and df["found"].all()


@pytest.mark.timeout(300)  # a safety net: a hang fails instead of blocking the suite
def test_a_run_over_its_time_limit_becomes_a_timeout_row(tmp_path):
    # Fig. 3's fixed-step gradient descent never certifies 1e-9; without an iteration cap it runs on, so it
    # exceeds any limit. The only run under the short limit is that one: the reference has a generous limit
    # of its own, so nothing here depends on how fast the machine is.
    study = Study([Instance.from_data("t", tiny())], ["lifted"], ["gd"], ["high"], timeout=1.0,
                  reference_timeout=600, solver_options={"gd": {"max_iter": 10**9}},
                  reference=("clarabel", "lifted", "mid"))
    df = run_study(study, tmp_path, jobs=2, progress=False)
    row = df.set_index("solver").loc["gd"]
    assert row["status"] == "timeout" and not row["found"] and "1 s limit" in row["message"]


def test_crashing_and_failing_runs_become_error_rows(tmp_path):
    study = Study([Instance.from_loader("crash", crashing_loader, 2), Instance.from_data("t", tiny())],
                  ["lifted"], ["clarabel", "ecos"], ["low"], solver_options={"ecos": {"not_an_option": 1}})
    df = run_study(study, tmp_path, progress=False).set_index(["instance", "solver"])
    assert (df.loc["crash", "status"] == "error").all()
    assert df.loc["crash"]["message"].str.contains("exited with code 3").all()
    assert df.loc[("t", "clarabel"), "status"] == "optimal"
    assert df.loc[("t", "ecos"), "status"] == "error" and "not_an_option" in df.loc[("t", "ecos"), "message"]


@pytest.mark.slow  # two fresh interpreters import cvxrank and CVXPY (the fork server's children do not)
def test_run_isolated_in_a_plain_subprocess_reports_rows_and_signals(tmp_path):
    inst = Instance.from_data("t", tiny())
    task = Task("run", inst, "lifted", "clarabel", PROFILES["mid"], (CostSetting(1.0), CostSetting(0.1)), {})
    rows = run_isolated(task, timeout=60, isolation="subprocess")
    assert [r["status"] for r in rows] == ["optimal", "optimal"] and [r["lam"] for r in rows] == [1.0, 0.1]
    crash = Task("run", Instance.from_loader("c", crashing_loader, 1), "lifted", "clarabel", PROFILES["mid"],
                 (CostSetting(1.0),), {})
    assert "exited with code 3" in run_isolated(crash, timeout=60, isolation="subprocess")[0]["message"]


# -- summaries and report --------------------------------------------------------------------
def fake_table():
    """Two methods on three problems: a solves all in 1, 2, 4 s; b solves two in 2, 1 s and fails one."""
    rows = []
    for i, (ta, tb, fb) in enumerate([(1.0, 2.0, True), (2.0, 1.0, True), (4.0, 50.0, False)]):
        for solver, t, found in (("a", ta, True), ("b", tb, fb)):
            rows.append({"instance": "x", "size": i + 1, "cost": "c", "formulation": "lifted", "solver": solver,
                         "profile": "mid", "found": found, "status": "optimal" if found else "timeout",
                         "wall_time": t, "pairs": 100 * 2 ** i, "peak_memory": 3.0 * (100 * 2 ** i) ** 0.5})
    return pd.DataFrame(rows)


def test_shifted_geometric_mean_relative_to_the_best_counts_failures_at_the_limit():
    df = fake_table()
    assert shifted_geometric_mean([1.0, 2.0, 4.0], 10) == pytest.approx(np.cbrt(11 * 12 * 14) - 10)
    sgm = shifted_geometric_means(df, time_limit=60.0)
    a = np.cbrt(11 * 12 * 14) - 10
    b = np.cbrt(12 * 11 * 70) - 10  # the failure counts as the 60 s limit
    assert sgm.loc[("lifted", "a"), "mid"] == pytest.approx(1.0)
    assert sgm.loc[("lifted", "b"), "mid"] == pytest.approx(b / a)
    assert success_rates(df).loc[("lifted", "b"), "mid"] == pytest.approx(200 / 3)


def test_performance_profiles_follow_dolan_more():
    prof = performance_profiles(fake_table()).set_index("solver")
    # ratios: a = (1, 2, 1), b = (2, 1, inf) over 3 problems
    assert prof.loc["a", ["tau", "fraction"]].values.tolist() == [[1.0, 2 / 3], [2.0, 1.0]]
    assert prof.loc["b", ["tau", "fraction"]].values.tolist() == [[1.0, 1 / 3], [2.0, 2 / 3]]


def test_growth_exponents_recover_a_power_law():
    df = fake_table()
    df.loc[df["solver"] == "a", "wall_time"] = 0.01 * df["pairs"] ** 1.5
    g = growth_exponents(df).set_index("solver")
    assert g.loc["a", "time_exponent"] == pytest.approx(1.5) and g.loc["a", "memory_exponent"] == pytest.approx(0.5)
    assert g.loc["a", "n_sizes"] == 3 and g.loc["b", "n_sizes"] == 2  # b's failure is left out
    # b: two sizes only, so no exponent is claimed (at least 3 sizes spanning 4x)
    assert np.isnan(g.loc["b", "time_exponent"]) and g.loc["a", "span"] == 4.0
    narrow = df[df["pairs"] < 400]  # 3 sizes needed: 100 and 200 are not enough
    assert growth_exponents(narrow)["time_exponent"].isna().all()


def test_findings_say_not_enough_sizes_instead_of_an_exponent():
    from cvxrank.study.report import findings

    df = fake_table()
    df = df[df["pairs"] < 400]
    lines = findings(df, success_rates(df), shifted_geometric_means(df, time_limit=60.0), growth_exponents(df))
    assert any("not enough sizes" in line for line in lines) and not any("grows as" in line for line in lines)


def test_compare_tables_ignores_times_and_reports_real_differences(small_study):
    df = small_study[2]
    slower = df.assign(wall_time=df["wall_time"] * 3, peak_memory=0.0)
    assert compare_tables(df, slower).empty
    changed = df.copy()
    changed.loc[0, "objective"] *= 1.01
    changed.loc[1, "status"] = "timeout"
    diff = compare_tables(df, changed)
    assert sorted(diff["column"]) == ["objective", "status"]
    assert compare_tables(df, df.iloc[1:])["column"].tolist() == ["row"]


def test_report_has_tables_versions_cpu_and_figures(small_study, tmp_path):
    study, _, df, *_ = small_study
    path = write_report(df, tmp_path / "r" / "report.md", time_limit=study.timeout, study=study, command="cvxrank x")
    text = path.read_text()
    for part in ("## Environment", "CPU:", "cvxpy", "## Success rate", "## Computation time", "## Growth",
                 "## Findings", "tol_gap_rel=1e-06", "cvxrank x"):
        assert part in text
    figures = sorted(p.name for p in (tmp_path / "r" / "figures").iterdir())
    assert "performance-profile-mid.png" in figures and "scaling-tiny-mid.png" not in figures  # one size only
    assert sorted(figures) == sorted(f"{n[:-4]}.{ext}" for n in figures if n.endswith(".png") for ext in ("png", "pdf"))
    for name in figures:
        assert f"figures/{name}" in text


def test_rows_of_user_data_keep_nan_free_keys(small_study):
    df = small_study[2]
    assert not df[["instance", "size", "cost", "formulation", "solver", "profile"]].isna().any().any()
    assert not any(isinstance(v, float) and math.isnan(v) for v in df["message"])


def test_instance_from_data_checks_its_input():
    with pytest.raises(ValidationError, match="RankingData"):
        Instance.from_data("x", np.eye(3))
    with pytest.raises(ValidationError, match="features"):
        Instance.from_data("x", tiny(), RankingData(np.eye(4), [0, 1, 0, 1], [1, 1, 2, 2]))


def test_growth_exponents_need_three_sizes_spanning_four_times():
    from cvxrank.study.report import findings
    from cvxrank.study.summary import NOT_ENOUGH

    df = fake_table()
    df.loc[df["solver"] == "a", "wall_time"] = 0.01 * df["pairs"] ** 1.5
    narrow = df.assign(pairs=df["pairs"].map({100: 100, 200: 150, 400: 300}))  # 3 sizes, 3x
    g = growth_exponents(narrow).set_index("solver")
    assert g.loc["a", "n_sizes"] == 3 and g.loc["a", "span"] == pytest.approx(3.0)
    assert np.isnan(g.loc["a", "time_exponent"]) and np.isnan(g.loc["a", "memory_exponent"])
    assert np.isnan(growth_exponents(df).set_index("solver").loc["b", "time_exponent"])  # 2 sizes
    lines = findings(narrow, success_rates(narrow), shifted_geometric_means(narrow, time_limit=60.0), g.reset_index())
    assert any(NOT_ENOUGH in line for line in lines) and not any("grows as" in line for line in lines)


# -- times a benchmark can trust ---------------------------------------------------------------
def test_a_solver_time_of_zero_is_timed_by_cvxrank_and_says_so(monkeypatch):
    """PIQP through CVXPY reports solve_time 0.0: the row gets cvxrank's own timing, and says whose it is."""
    import cvxrank.solvers as solvers_module
    from cvxrank.study.worker import execute

    real = solvers_module.solve_cvxpy

    def zero_time(*args, **kwargs):
        res = real(*args, **kwargs)
        res.solve_time = 0.0
        return res

    task = Task("run", Instance.from_data("t", tiny()), "lifted", "clarabel", PROFILES["mid"],
                (CostSetting(1.0), CostSetting(0.1)), {}, threads=0)
    sent = []
    execute(task, sent.append)
    honest = [p for kind, p in sent if kind == "row"]
    assert [r["solve_time_source"] for r in honest] == ["solver", "solver"]
    monkeypatch.setattr(solvers_module, "solve_cvxpy", zero_time)
    sent = []
    execute(task, sent.append)
    rows = [p for kind, p in sent if kind == "row"]
    assert [r["status"] for r in rows] == ["optimal", "optimal"]
    for row in rows:
        assert row["solve_time_source"] == "cvxrank" and 0 < row["solve_time"] <= row["wall_time"]
        assert 0 < row["certify_time"] <= row["wall_time"]


def test_summaries_refuse_a_found_run_timed_at_zero():
    df = fake_table().assign(solve_time=lambda d: d["wall_time"])
    df.loc[(df["solver"] == "b") & df["found"], "solve_time"] = 0.0  # a solver that reports 0 s
    with pytest.raises(ValidationError, match=r"solve_time of 0.*lifted"):
        shifted_geometric_means(df, time_limit=60.0, time="solve_time")
    with pytest.raises(ValidationError, match="b/lifted"):
        performance_profiles(df, time="solve_time")
    assert np.isfinite(shifted_geometric_means(df, time_limit=60.0).to_numpy()).all()  # wall_time is fine


def test_a_capped_study_run_has_the_status_the_solve_door_gives():
    """The study solves through cvxrank.solve: a run its cap stopped short of tol is user_limit in both."""
    import cvxrank as cr

    data = tiny(3, 5)
    study = Study([Instance.from_data("t", data)], ["lifted"], ["osqp", "clarabel"], ["high"], max_iter=3)
    df = pd.DataFrame([_rows(Task("run", study.instances[0], "lifted", s, PROFILES["high"], study.costs,
                                  study.run_options(s), threads=0))[0] for s in study.solvers]).set_index("solver")
    for solver in ("osqp", "clarabel"):
        with pytest.warns(cr.InaccurateSolutionWarning):
            door = cr.solve(cr.RankingProblem(data), solver, formulation="lifted", tol=1e-9,
                            **{k: v for k, v in solver_options(solver, "high").items() if k != "tol"},
                            **study.run_options(solver))
        assert df.loc[solver, "status"] == door.status == "user_limit"
        assert df.loc[solver, "iterations"] == df.loc[solver, "work_limit"] == 3
        assert df.loc[solver, "solver_status"] == door.solver_status


# -- no __main__ guard needed ------------------------------------------------------------------
def test_a_main_module_read_from_stdin_gets_workers_that_do_not_import_it(monkeypatch):
    import types

    from cvxrank.study._isolate import isolation_mode, main_reimportable

    stdin_main = types.ModuleType("__main__")
    stdin_main.__file__ = "<stdin>"  # what python - < script.py sets
    monkeypatch.setitem(sys.modules, "__main__", stdin_main)
    assert not main_reimportable() and isolation_mode("auto") == "subprocess"
    notebook_main = types.ModuleType("__main__")  # a notebook or python -c: no file to import
    monkeypatch.setitem(sys.modules, "__main__", notebook_main)
    assert main_reimportable()


def test_a_loader_defined_in_main_travels_by_value():
    import pickle

    pytest.importorskip("cloudpickle")
    namespace = {"__name__": "__main__"}
    exec("from cvxrank.datasets import make_ranking\n"  # noqa: S102 - a function as a notebook cell defines it
         "def cell_loader(size, seed):\n"
         "    return make_ranking(n_queries=size, docs_per_query=(4, 6), n_features=3, random_state=seed)\n",
         namespace)
    inst = Instance.from_loader("cell", namespace["cell_loader"], 2)
    train, _ = pickle.loads(pickle.dumps(inst)).load()  # a worker cannot import __main__.cell_loader
    assert train.n_queries == 2


STDIN_STUDY = """
from cvxrank.datasets import make_ranking
from cvxrank.study import Instance, Study, run_study

def loader(size, seed):
    return make_ranking(n_queries=size, docs_per_query=(4, 6), n_features=3, random_state=seed)

study = Study([Instance.from_data("d", loader(3, 0)), Instance.from_loader("l", loader, 3)], ["lifted"],
              ["clarabel"], ["mid"])
df = run_study(study, {out!r}, progress=False)
print("STATUSES", ",".join(df["status"]))
"""


@pytest.mark.slow  # fresh interpreters, and workers that import cvxrank anew
@pytest.mark.parametrize("how", ["stdin", "-c"])
def test_a_study_runs_from_stdin_or_python_c_without_a_main_guard(tmp_path, how):
    import subprocess

    code = STDIN_STUDY.format(out=str(tmp_path / "out"))
    argv, stdin = ([sys.executable, "-"], code) if how == "stdin" else ([sys.executable, "-c", code], None)
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("STATUSES")][-1]
    assert line.split()[1].split(",") == ["optimal", "optimal"], proc.stdout


def _rows(task):
    """The rows of a task run in this process (the worker's own code, without its process)."""
    from cvxrank.study.worker import execute

    sent = []
    execute(task, sent.append)
    return [payload for kind, payload in sent if kind == "row"]


def test_one_tau_table_serves_instances_with_different_grades():
    """Entries for grade pairs an instance lacks are left out for it; a grade pair it has must have a value."""
    three = tiny(4, 4)
    two = RankingData(three.X, np.minimum(three.y, 1), three.qid)  # grades 0 and 1 only
    assert set(make_pairs(two).types) == {(1, 0)} and len(make_pairs(three).types) > 1
    tau = {tuple(t): 1.0 + i for i, t in enumerate(make_pairs(three).types)}
    tau[(1, 0)] = 2.0
    costs = (CostSetting(0.5, tau=tau), CostSetting(0.5, tau={(1, 0): 2.0}, name="partial"))

    def run(data):
        return _rows(Task("run", Instance.from_data("x", data), "lifted", "clarabel", PROFILES["mid"], costs, {},
                          threads=0))

    (two_full, two_partial), (three_full, three_partial) = run(two), run(three)
    assert two_full["status"] == two_partial["status"] == three_full["status"] == "optimal"
    # the two-grade instance solved the problem of its own entry: the same as a table of that entry alone
    assert two_full["objective"] == pytest.approx(two_partial["objective"], rel=1e-12)
    # the instance with three grades has grade pairs the partial table lacks: refused, saying which
    assert three_partial["status"] == "error" and "tau has no value for grade pairs" in three_partial["message"]


# -- what a report tells a reader ----------------------------------------------------------------
def test_report_states_how_the_runs_ran_and_what_each_number_is(small_study, tmp_path):
    study, _, df, *_ = small_study
    text = write_report(df, tmp_path / "report.md", time_limit=study.timeout, study=study).read_text()
    assert "- Runs: 2 at a time on this machine" in text and "each run once (no repeats" in text
    assert "threads per run as the workers measured them (threadpoolctl, `blas_threads` column): 1" in text
    runs = text[text.index("## All runs"):]
    header = runs.splitlines()[4]
    for col in ("| status | solver_status |", "| solve_time | certify_time |", "| work_limit |"):
        assert col in header
    # cvxrank's tol is stated apart from the solver options
    options = text[text.index("Solver options of each profile"):text.index("cvxrank's `tol` is no solver option")]
    assert "tol_gap_rel=1e-06" in options and "| tol=" not in options and ", tol=" not in options
    # the reference's certified accuracy next to the objective errors
    accuracy = text[text.index("## Accuracy"):text.index("## Growth")]
    assert "| reference_gap |" in accuracy and "| below_ref |" in accuracy
    assert (df["reference_gap"] > 0).all() and (df["reference_gap"] <= 1e-9).all()  # certified at profile high
    assert "the time limit is a safety net" in text


def test_cpu_model_says_more_than_a_bare_model_name(monkeypatch):
    from cvxrank.study import report

    monkeypatch.setattr(report, "_cpuinfo", lambda: {"model name": "AMD EPYC", "vendor_id": "AuthenticAMD",
                                                     "cpu family": "26", "model": "2", "stepping": "1",
                                                     "cpu mhz": "2596.1", "flags": "fpu avx2 hypervisor"})
    monkeypatch.setattr(report, "_l3_cache", lambda: "32768K")
    assert report.cpu_model() == ("AMD EPYC (AuthenticAMD cpu family 26, model 2, stepping 1; 2596 MHz; L3 32 MiB; "
                                  "virtual machine)")


def test_simd_extensions_are_those_numpy_found_and_did_not_switch_off():
    """The list follows numpy's own record: a process that switches off what numpy found here reports none of it."""
    import subprocess

    from cvxrank.study import report

    found = report.simd_extensions()
    assert all(isinstance(name, str) for name in found) and report.environment()["simd"] == found
    if not found:
        pytest.skip("numpy dispatches to no SIMD extension beyond its baseline on this machine")
    code = "from cvxrank.study.report import simd_extensions; print(','.join(simd_extensions()))"
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(found)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    if len(found) > 1:  # the widest switched off: the others stay
        env["NPY_DISABLE_CPU_FEATURES"] = found[-1]
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip().split(",") == found[:-1]


def test_every_curve_of_a_performance_profile_has_its_own_legend_entry():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cvxrank.solvers.registry import SOLVERS
    from cvxrank.study.plots import method_style, plot_performance_profile

    # no two solvers of the registry share a colour, so no two methods share a look
    colours = [method_style("lifted", s)["color"] for s in SOLVERS]
    assert len(set(map(str, colours))) == len(colours)
    methods = [(f, s) for s in ("clarabel", "ecos", "osqp", "scs", "piqp", "proxqp")
               for f in ("primal", "lifted", "dual", "hinge")]
    prof = pd.DataFrame([{"profile": "mid", "formulation": f, "solver": s, "tau": 1.0 + i / 10, "fraction": 1.0}
                         for i, (f, s) in enumerate(methods)])
    fig, ax = plt.subplots()
    plot_performance_profile(prof, ax, profile="mid")
    legend = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert sorted(labels) == sorted(f"{s}/{f}" for f, s in methods)
    looks = {(str(h.get_color()), str(h.get_linestyle()), h.get_marker()) for h in legend.legend_handles}
    assert len(looks) == len(methods)  # every entry identifies one curve
    plt.close(fig)


def test_repeated_runs_give_median_times_and_their_spread(tmp_path):
    study = Study([Instance.from_data("t", tiny())], ["lifted"], ["clarabel"], ["low"], repeats=3)
    assert study.hash != Study([Instance.from_data("t", tiny())], ["lifted"], ["clarabel"], ["low"]).hash
    df = run_study(study, tmp_path / "s", progress=False, jobs=2)
    row = df.iloc[0]
    assert len(df) == 1 and row["repeats"] == 3 and row["status"] == "optimal" and row["message"] == ""
    assert 0 < row["wall_time_min"] <= row["wall_time"] <= row["wall_time_max"]
    text = write_report(df, tmp_path / "report.md", time_limit=study.timeout, study=study).read_text()
    assert "each run 3 times, each time in a fresh process" in text and "| wall_time_min | wall_time_max |" in text
