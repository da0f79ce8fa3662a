"""The outputs the docs print are what the code prints now.

The README's quick example and the variants page show code with its output, written by hand into
the Markdown. These tests run that code and compare every printed line with the docs: the same
words and statuses, the same number of lines, and every number equal to 6 significant digits,
except the ones a solver release may move without the docs being wrong (times, iterations,
certified gaps and distance bounds: they must be numbers there, and the status says whether they
certify). CI installs the lowest declared solver versions too, whose iterates differ in the last
digits.
"""

import contextlib
import io
import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "lightgbm_rank" / "train.letor"


def section(text: str, heading: str) -> str:
    """The Markdown between ``heading`` and the next heading of the same level."""
    level = heading.split(" ")[0]
    start = text.index(heading + "\n")
    nxt = re.search(rf"^{re.escape(level)} ", text[start + len(heading):], flags=re.M)
    return text[start:start + len(heading) + (nxt.start() if nxt else len(text))]


def blocks(markdown: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", markdown, flags=re.S | re.M)


NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
#: What precedes a number a solver release may move: times, work, certified gaps and distance bounds.
VOLATILE = re.compile(r"(time=|relative_gap=|distance_bound=|iterations=|gap |<= )$")


def assert_same_printout(shown: str, printed: str) -> None:
    """``printed`` is what the docs show: line for line the same text, numbers within 6 digits (module docstring)."""
    a, b = shown.strip().splitlines(), printed.strip().splitlines()
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        assert NUMBER.sub("#", x).rstrip() == NUMBER.sub("#", y).rstrip(), (x, y)
        for mx, my in zip(NUMBER.finditer(x), NUMBER.finditer(y)):
            if not VOLATILE.search(x[:mx.start()]):
                assert float(mx.group()) == pytest.approx(float(my.group()), rel=1e-6, abs=1e-12), (x, y)


def run_example(name: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(ROOT / "examples" / name), run_name="__main__")
    return out.getvalue()


def example_code(name: str) -> str:
    """An example's code: what follows its docstring."""
    return (ROOT / "examples" / name).read_text().split('"""', 2)[2].strip()


def test_readme_quick_example_shows_the_examples_code_and_output():
    quick = section((ROOT / "README.md").read_text(), "## Quick example")
    code, = blocks(quick, "python")
    assert code.strip() == example_code("quick_example.py"), "the README shows examples/quick_example.py"
    shown, = blocks(quick, "text")
    assert_same_printout(shown, run_example("quick_example.py"))


def test_variants_page_shows_what_the_explore_example_prints():
    text = (ROOT / "docs" / "variants.md").read_text()
    shown = next(b for b in blocks(text, "text") if "papers' problem" in b)
    assert_same_printout(shown, run_example("explore_a_formulation.py"))


def test_variants_page_code_prints_what_it_shows_and_its_refusal_reads_as_shown():
    import cvxrank as cr
    from cvxrank.exceptions import SolverNotAvailableError
    from cvxrank.solvers import get_spec
    from cvxrank.variants import Variant

    text = (ROOT / "docs" / "variants.md").read_text()
    namespace, out = {}, io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(blocks(text, "python")[0], namespace)  # the page's first example: a variant, two solvers
    assert_same_printout(blocks(text, "text")[0], out.getvalue())
    refusal = next(b for b in blocks(text, "text") if b.startswith(">>>"))
    call, message = refusal.split("\n", 1)
    data = namespace["data"]
    assert call.removeprefix(">>> ") == ('cr.solve(cr.RankingProblem(data, lam=0.1, variant=Variant(loss="squared_hinge", '
                                         'l1=0.1)), "truncated_newton")')
    with pytest.raises(SolverNotAvailableError) as info:
        cr.solve(cr.RankingProblem(data, lam=0.1, variant=Variant(loss="squared_hinge", l1=0.1)), "truncated_newton")
    # The page lists the solvers every install has (the base dependencies and the native ones); a machine
    # with more CVXPY solvers (HiGHS comes with recent CVXPY) names them too.
    shown, sep, listed = " ".join(message.split()).partition("solvers that can: ")
    said, _, named = f"SolverNotAvailableError: {info.value}".partition("solvers that can: ")
    assert sep and shown == said
    base = {"clarabel", "ecos", "osqp", "scs"} | {n for n in cr.available_solvers() if get_spec(n).kind == "native"}
    assert listed.split(", ") == [n for n in named.split(", ") if n in base]


@pytest.mark.skipif(not DATA.exists(), reason="the bundled LightGBM data (../shared/data) is absent")
def test_formulations_page_tau_table_is_measured():
    import cvxrank as cr

    text = section((ROOT / "docs" / "formulations.md").read_text(), "## Costs")
    rows = re.findall(r"^\| \((\d), (\d)\) \| (\d+) \| ([0-9.]+) \| ([0-9.]+) \|$", text, flags=re.M)
    assert len(rows) == 7
    data = cr.load_letor(DATA)
    both = cr.estimate_tau(data, T=None).set_index(["higher", "lower"])
    every = cr.estimate_tau(data, T=None, average="all_queries").set_index(["higher", "lower"])
    for a, b, n, tau_both, tau_all in rows:
        key = (int(a), int(b))
        assert int(n) == both.loc[key, "n_queries"]
        assert tau_both == f"{both.loc[key, 'tau']:.4f}" and tau_all == f"{every.loc[key, 'tau']:.4f}", key
    assert data.n_queries == 201 and "201 queries" in text
    shown = dict(re.findall(r"τ\((\d, \d)\) = ([0-9.]+)", text))  # the values the text quotes (all_queries)
    assert shown and all(f"{every.loc[tuple(map(int, k.split(', '))), 'tau']:.3f}" == v for k, v in shown.items())


def test_tutorial_prints_no_solver_internals_and_its_theorem1_rows_pass():
    text = (ROOT / "docs" / "tutorial.md").read_text()
    code = re.findall(r'^```python exec="on"[^\n]*\n(.*?)^```', text, flags=re.S | re.M)
    namespace, out = {}, io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in code:
            exec(block, namespace)
    printed = out.getvalue()
    for internal in ("Promote(", "quad_over_lin", "maximum(", "minimize ", "subject to"):
        assert internal not in printed, f"the tutorial prints CVXPY's expression tree ({internal})"
    table = namespace["table"]  # section 7: Theorem 1 rows on the toy problem
    assert (table["verdict"] == "pass").all() and table.attrs["verified"]
    assert "verified: True" in printed
    # section 5: the support summary the text reads (hand-checked: pair 0 at C, pairs 1-2 at 0, pair 3 inside)
    assert namespace["summary"]["table"].to_numpy().tolist() == [[0, 0, 2], [0, 1, 0], [1, 0, 0]]
