"""Every example runs and says what the README says it says."""

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))
#: Examples that take more than a few seconds (cross-validation on the real data): run with -m slow.
SLOW = {"letor_cross_validation.py"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW else p
                                  for p in EXAMPLES], ids=lambda p: p.name)
def test_example_runs_and_saves_every_figure_it_draws(path, capsys, monkeypatch, tmp_path):
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(sys, "argv", [str(path)])
    monkeypatch.setenv("CVXRANK_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(1))
    plt.close("all")
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert out.strip(), f"{path.name} printed nothing"
    drawn = len(plt.get_fignums())
    plt.close("all")
    saved = sorted(p.name for p in (tmp_path / "figures").glob("*")) if drawn else []
    assert len([n for n in saved if n.endswith(".png")]) == drawn, (path.name, saved)
    assert len([n for n in saved if n.endswith(".pdf")]) == drawn, (path.name, saved)
    assert not shown, "plt.show() with a backend that cannot show windows (Agg)"


@pytest.mark.parametrize("name", ["theorem1_by_hand.py", "cost_sensitive_simulation.py"])
def test_figure_examples_show_only_with_an_interactive_backend(name, capsys, monkeypatch, tmp_path):
    import matplotlib.pyplot as plt

    import cvxrank.plots

    shown = []
    monkeypatch.setenv("CVXRANK_FIGURES", str(tmp_path))
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(1))
    monkeypatch.setattr(cvxrank.plots, "interactive_backend", lambda: True)
    runpy.run_path(str(EXAMPLES[0].with_name(name)), run_name="__main__")
    plt.close("all")
    assert shown == [1]
    stem = name.removesuffix(".py")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{stem}.pdf", f"{stem}.png"]
    assert f"figure saved: {stem}.png, {stem}.pdf in {tmp_path}" in capsys.readouterr().out


def test_quick_example_output_matches_readme(capsys):
    runpy.run_path(str(EXAMPLES[0].with_name("quick_example.py")), run_name="__main__")
    out = capsys.readouterr().out
    assert "L = 2 lam M at one w: True" in out
    assert "same minimiser within the certified bounds: True" in out
    assert "RankingProblem(n_documents=246, n_pairs=1050, n_features=5, lam=0.1" in out
    assert "NDCG@5: 0.9865" in out
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "NDCG@5: 0.9865" in readme and "n_pairs=1050" in readme
    assert (EXAMPLES[0].with_name("quick_example.py").read_text().split('"""')[2].strip().splitlines()[2]
            in readme), "the README shows the quick example's code"
