"""Plots: the papers' figures and the general-purpose ranking plots (Agg, no display)."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from cvxrank.datasets import make_ecml_simulation
from cvxrank.exceptions import ValidationError
from cvxrank.experiments import PAPER_ECML, run_ecml_simulation
from cvxrank.plots import (
    interactive_backend,
    new_axes,
    plot_fold_metrics,
    plot_metric_table,
    plot_ndcg_at_n,
    plot_ndcg_curve,
    plot_simulation_data,
    plot_weighted_hinge,
    save_figure,
    save_figures,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def result():
    return run_ecml_simulation(sizes=(60, 12, 6), ns=(1, 10, 20, 50))


@pytest.fixture
def table():
    return pd.DataFrame({"NDCG@1": [0.5, 0.6, 0.55], "NDCG@10": [0.45, 0.5, 0.52], "MAP": [0.4, 0.45, 0.44]},
                        index=["RSVM", "RSVM-IR", "cs-RgList"])


def _line_direction(line):
    x, y = line.get_xdata(), line.get_ydata()
    d = np.array([x[1] - x[0], y[1] - y[0]])
    return d / np.linalg.norm(d)


# -- Fig. 2 (ECML): data and directions -----------------------------------------
def test_simulation_plot_has_three_grades_and_one_line_per_direction(result):
    ax = plot_simulation_data(result)
    assert len(ax.collections) == 3
    labels = [c.get_label() for c in ax.collections]
    assert labels == ["r1 (n=60)", "r2 (n=12)", "r3 (n=6)"]
    assert [len(c.get_offsets()) for c in ax.collections] == [60, 12, 6]
    assert len(ax.lines) == 2
    for line, method in zip(ax.lines, ("ranksvm", "cost_sensitive")):
        np.testing.assert_allclose(_line_direction(line), result.directions[method], atol=1e-12)
        assert f"{result.angles[method]:.1f}°" in line.get_label()
        # the line passes through the centre of the data
        np.testing.assert_allclose(np.mean(np.c_[line.get_xdata(), line.get_ydata()], axis=0),
                                   np.asarray(result.data.X).mean(axis=0), atol=1e-12)
    assert len(ax.texts) == 2  # one arrow per direction
    assert "Fig. 2" in ax.get_title()


def test_simulation_plot_can_show_the_papers_directions(result):
    ax = plot_simulation_data(result, show_paper=True)
    assert len(ax.lines) == 4
    paper = [line for line in ax.lines if line.get_label().startswith("paper")]
    assert [line.get_linestyle() for line in paper] == [":", ":"]
    w = np.asarray(PAPER_ECML["w"]["ranksvm"])
    np.testing.assert_allclose(_line_direction(paper[0]), w / np.linalg.norm(w))


def test_simulation_plot_of_plain_data_and_given_directions():
    data = make_ecml_simulation(sizes=(20, 5, 5))
    assert len(plot_simulation_data(data).lines) == 0
    ax = plot_simulation_data(data, {"mine": [1.0, 0.0]})
    assert ax.lines[0].get_label() == "mine: 0.0°"
    np.testing.assert_allclose(ax.lines[0].get_ydata(), np.asarray(data.X)[:, 1].mean())


@pytest.mark.parametrize("w, match", [
    ([1.0, 2.0], "mapping"),
    ({"a": [0.0, 0.0]}, "not all 0"),
    ({"a": [1.0, 2.0, 3.0]}, "2 finite numbers"),
])
def test_simulation_plot_rejects_bad_directions(w, match):
    with pytest.raises(ValidationError, match=match):
        plot_simulation_data(make_ecml_simulation(sizes=(5, 5, 5)), w)


def test_simulation_plot_needs_two_features():
    from cvxrank.datasets import make_ranking

    with pytest.raises(ValidationError, match="2 features"):
        plot_simulation_data(make_ranking(n_queries=2, n_features=3, random_state=0))
    with pytest.raises(ValidationError, match="SimulationResult or RankingData"):
        plot_simulation_data(np.zeros((3, 2)))


# -- Fig. 3 (ECML): NDCG@N ----------------------------------------------------
def test_ndcg_at_n_draws_both_methods_and_the_papers_statement(result):
    ax = plot_ndcg_at_n(result)
    labels = [line.get_label() for line in ax.lines]
    assert labels[:2] == ["Ranking SVM", "cost-sensitive"]
    assert labels[2].startswith("paper")
    for line, method in zip(ax.lines[:2], ("ranksvm", "cost_sensitive")):
        assert line.get_xdata().tolist() == [1, 10, 20, 50]
        np.testing.assert_allclose(line.get_ydata(), result.ndcg[method].to_numpy())
    assert ax.lines[2].get_xdata().tolist() == [1, 10, 20, 30, 40, 50, 60, 70, 80]
    assert set(ax.lines[2].get_ydata()) == {1.0}
    assert ax.get_xlabel() == "N" and ax.get_ylabel() == "NDCG@N"
    assert len(plot_ndcg_at_n(result, show_paper=False).lines) == 2


def test_ndcg_at_n_accepts_the_json_entry(result):
    ax = plot_ndcg_at_n(result.to_json()["ndcg"], show_paper=False)
    np.testing.assert_allclose(ax.lines[1].get_ydata(), result.ndcg["cost_sensitive"].to_numpy())
    with pytest.raises(ValidationError, match="SimulationResult"):
        plot_ndcg_at_n([1, 2, 3])


# -- Fig. 2 (SIGIR): weighted hinge losses --------------------------------------
def test_weighted_hinge_lines_have_the_given_slopes():
    slopes = (0.5, 1.0, 2.5)
    ax = plot_weighted_hinge(slopes, z_range=(-1.0, 3.0))
    assert len(ax.lines) == 3
    for line, slope in zip(ax.lines, slopes):
        z, loss = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        np.testing.assert_allclose(loss, slope * np.maximum(1 - z, 0))
        assert loss[z >= 1].max() == 0
        assert (loss[0] - loss[1]) / (z[1] - z[0]) == pytest.approx(slope)  # slope of the linear part
    solid = [line for line in ax.lines if line.get_linestyle() == "-"]
    assert [line.get_label() for line in solid] == ["τ·μ = 1 (Ranking SVM)"]
    assert ax.get_ylabel() == "loss"


def test_weighted_hinge_legend_writes_three_significant_digits():
    ax = plot_weighted_hinge((1.48661, 0.0123456, 25.0))
    assert [line.get_label() for line in ax.lines] == ["τ·μ = 1.49", "τ·μ = 0.0123", "τ·μ = 25"]


@pytest.mark.parametrize("kwargs, match", [
    ({"slopes": (1.0, -2.0)}, "positive"),
    ({"slopes": ()}, "non-empty"),
    ({"slopes": "ab"}, "positive numbers"),
    ({"z_range": (2.0, 3.0)}, "z = 1"),
])
def test_weighted_hinge_rejects_bad_input(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        plot_weighted_hinge(**kwargs)


# -- general-purpose plots -------------------------------------------------------
def test_metric_table_groups_bars_by_metric(table):
    ax = plot_metric_table(table)
    assert len(ax.patches) == 9
    assert [t.get_text() for t in ax.get_xticklabels()] == ["NDCG@1", "NDCG@10", "MAP"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["RSVM", "RSVM-IR", "cs-RgList"]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == sorted(table.to_numpy().ravel().round(6).tolist())


def test_metric_table_one_metric_and_a_method_column(table):
    ax = plot_metric_table(table.rename_axis("method").reset_index(), "MAP", title="MAP")
    assert [p.get_height() for p in ax.patches] == [0.4, 0.45, 0.44]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["RSVM", "RSVM-IR", "cs-RgList"]
    assert ax.get_ylabel() == "MAP" and ax.get_title() == "MAP"
    assert len(plot_metric_table(table, ["MAP", "NDCG@1"]).patches) == 6


@pytest.mark.parametrize("args, match", [
    ((pd.DataFrame(),), "empty"),
    (([1, 2],), "DataFrame"),
    ((pd.DataFrame({"a": [1.0]}), "b"), "unknown metric"),
    ((pd.DataFrame({"a": ["x"]}), "a"), "not numeric"),
    ((pd.DataFrame({"a": ["x"]}),), "no numeric column"),
])
def test_metric_table_rejects_bad_input(args, match):
    with pytest.raises(ValidationError, match=match):
        plot_metric_table(*args)


def test_ndcg_curve_from_a_dataframe_sorts_k():
    df = pd.DataFrame({"A": [0.7, 0.5, 0.6], "B": [0.4, 0.5, 0.6]}, index=[10, 1, 5])
    ax = plot_ndcg_curve(df, labels={"A": "method A"})
    assert [line.get_label() for line in ax.lines] == ["method A", "B"]
    assert ax.lines[0].get_xdata().tolist() == [1, 5, 10]
    assert ax.lines[0].get_ydata().tolist() == [0.5, 0.6, 0.7]


def _bar_ends(ax):
    """The x-extent of each ± bar of an Axes drawn by plot_fold_metrics (its LineCollections)."""
    return [(float(seg[:, 0].min()), float(seg[:, 0].max()))
            for c in ax.collections for seg in c.get_segments()]


def test_fold_metric_bars_stay_in_the_metrics_range():
    # A: folds 0.7, 1, 1, 1: mean 0.925, sd 0.15, so mean + sd = 1.075 lies past NDCG's maximum 1.
    # B: folds 0, 0.3: mean 0.15, sd 0.212, so mean - sd = -0.062 lies below its minimum 0.
    df = pd.DataFrame({"method": ["A"] * 4 + ["B"] * 2, "fold": [1, 2, 3, 4, 1, 2],
                       "ndcg@1": [0.7, 1.0, 1.0, 1.0, 0.0, 0.3]})
    ax = plot_fold_metrics(df).axes[0]
    (a_lo, a_hi), (b_lo, b_hi) = _bar_ends(ax)
    assert a_hi == 1.0 and a_lo == pytest.approx(0.925 - 0.15)
    assert b_lo == 0.0 and b_hi == pytest.approx(0.15 + np.std([0.0, 0.3], ddof=1))
    (a_lo, a_hi), (b_lo, b_hi) = _bar_ends(plot_fold_metrics(df, value_range=None).axes[0])
    assert a_hi == pytest.approx(1.075) and b_lo == pytest.approx(0.15 - np.std([0.0, 0.3], ddof=1))
    with pytest.raises(ValidationError, match="lo < hi"):
        plot_fold_metrics(df, value_range=(1.0, 0.0))


@pytest.mark.parametrize("bad", [{}, {"A": {}}, {"A": {"x": 1.0}}, [1, 2]])
def test_ndcg_curve_rejects_bad_input(bad):
    with pytest.raises(ValidationError):
        plot_ndcg_curve(bad)


def test_plots_draw_on_a_given_axes():
    ax = new_axes()
    fig = ax.figure
    assert plot_weighted_hinge(ax=ax) is ax
    assert plot_ndcg_curve({"A": {1: 0.5}}, ax=ax) is ax
    assert fig.axes == [ax]
    with pytest.raises(ValidationError, match="Axes"):
        plot_weighted_hinge(ax="not an axes")


# -- saving ----------------------------------------------------------------------
def test_save_figure_writes_png_atomically(tmp_path, monkeypatch):
    path = tmp_path / "hinge.png"
    path.write_bytes(b"old")
    renames = []
    real_replace = os.replace

    def spy(src, dst):
        renames.append((os.path.dirname(src), os.path.basename(src), dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    ax = plot_weighted_hinge()
    assert save_figure(ax, path) == str(path)  # an Axes saves its Figure
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert len(renames) == 1 and renames[0][0] == str(tmp_path) and renames[0][2] == str(path)
    assert renames[0][1].startswith(".cvxrank-")
    assert sorted(os.listdir(tmp_path)) == ["hinge.png"]
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's private 0600
    save_figure(ax.figure, tmp_path / "hinge.svg")
    assert (tmp_path / "hinge.svg").read_text().lstrip().startswith("<?xml")


def test_a_failed_save_keeps_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "fig.png"
    path.write_bytes(b"old")
    fig = plot_weighted_hinge().figure

    def broken(*args, **kwargs):
        with open(args[0], "wb") as fh:
            fh.write(b"partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        save_figure(fig, path)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["fig.png"]


@pytest.mark.parametrize("name, match", [("missing/fig.png", "does not exist"), ("fig.docx", "extension")])
def test_save_figure_rejects_bad_paths(tmp_path, name, match):
    with pytest.raises(ValidationError, match=match):
        save_figure(plot_weighted_hinge(), tmp_path / name)
    with pytest.raises(ValidationError, match="Figure or Axes"):
        save_figure("nope", tmp_path / "a.png")


def test_save_figures_writes_png_and_a_vector_file_into_a_new_folder(tmp_path):
    out = tmp_path / "figures"  # created: its parent exists
    fig = plot_weighted_hinge().figure
    paths = save_figures({"hinge": fig, "curve": plot_ndcg_curve({"A": {1: 0.5, 5: 0.6}})}, out)
    assert [os.path.basename(p) for p in paths] == ["hinge.png", "hinge.pdf", "curve.png", "curve.pdf"]
    assert (out / "hinge.png").read_bytes().startswith(PNG_MAGIC)
    assert (out / "hinge.pdf").read_bytes().startswith(b"%PDF-")
    assert sorted(os.listdir(out)) == ["curve.pdf", "curve.png", "hinge.pdf", "hinge.png"]
    first = (out / "hinge.pdf").read_bytes()
    save_figures({"hinge": fig}, out)  # no creation date: the same figure, the same bytes
    assert (out / "hinge.pdf").read_bytes() == first
    svg = save_figures({"hinge": fig}, out, formats=("png", "svg"))
    assert (out / "hinge.svg").read_text().lstrip().startswith("<?xml") and len(svg) == 2


def test_save_figures_default_folder_is_new_and_temporary():
    import tempfile

    a, b = save_figures({"h": plot_weighted_hinge()}), save_figures({"h": plot_weighted_hinge()})
    folders = {os.path.dirname(p) for p in a + b}
    assert len(folders) == 2  # a new folder each time: nothing on disk is overwritten
    for folder in folders:
        assert os.path.dirname(folder) == tempfile.gettempdir() and "cvxrank-figures-" in folder
        assert sorted(os.listdir(folder)) == ["h.pdf", "h.png"]
        shutil.rmtree(folder)


@pytest.mark.parametrize("figures, kwargs, match", [
    ({}, {}, "non-empty mapping"),
    ({"../h": None}, {}, "plain file stem"),
    ({"h.png": None}, {}, "plain file stem"),
    ({"h": None}, {"formats": ("png",)}, "vector format"),
    ({"h": None}, {"folder": "/nonexistent-parent/figures"}, "does not exist"),
])
def test_save_figures_rejects_bad_input(figures, kwargs, match):
    figures = {name: plot_weighted_hinge() for name in figures}
    with pytest.raises(ValidationError, match=match):
        save_figures(figures, **kwargs)


def test_interactive_backend_only_for_backends_that_show(monkeypatch):
    import matplotlib

    for backend, shows in [("agg", False), ("pdf", False), ("svg", False), ("TkAgg", True), ("QtAgg", True),
                           ("module://matplotlib_inline.backend_inline", True)]:
        monkeypatch.setattr(matplotlib, "get_backend", lambda backend=backend: backend)
        assert interactive_backend() is shows, backend


def test_matplotlib_is_lazy_and_pyplot_never_used():
    code = (
        "import sys, cvxrank, cvxrank.plots, cvxrank.experiments\n"
        "assert 'matplotlib' not in sys.modules, 'imported at import time'\n"
        "from cvxrank.plots import plot_weighted_hinge\n"
        "plot_weighted_hinge()\n"
        "assert 'matplotlib' in sys.modules\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot used'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=120)
