"""The documentation site builds offline in strict mode, with its executed content.

One build (module fixture) serves every test: every page, every API docstring, the CLI help, the
tutorial's code blocks (markdown-exec) and every example of the gallery (mkdocs-gallery) run at
build time. Where headless Chromium is installed, MathJax is run on the built pages too and every
equation must come out typeset, with no TeX error.

The build takes half a minute: the tests of the built site are slow (``python -m pytest -m slow``);
the fast suite checks what the build reads (pages, examples) without building.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
MATH_PAGES = ["tutorial", "formulations"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    # mkdocs and its plugins are test extras: a missing one fails here, never skips.
    out = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Formatting signatures requires" not in proc.stderr, "install ruff (a docs extra)"
    return out


def test_every_page_and_example_the_build_reads_is_there():
    """Fast: the nav's pages exist, and every example is in the gallery's teaching order and says what it
    teaches in its first lines (the build, in the slow tests, runs them)."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    targets = [target for entry in nav for target in entry.values()]
    assert targets and all((ROOT / "docs" / t).exists() or t == "gallery" for t in targets), targets
    order = re.search(r"ORDER = \[(.*?)\]", (ROOT / "docs" / "gallery_conf.py").read_text(), flags=re.S)
    assert sorted(re.findall(r'"(\w+)"', order.group(1))) == sorted(p.stem for p in EXAMPLES)
    for path in EXAMPLES:
        assert "Teaches:" in "\n".join(path.read_text().splitlines()[:15]), path.name


def test_every_test_the_reliability_page_names_exists():
    """Fast: docs/reliability.md says which test covers each class of bad input; each named test is there."""
    doc = (ROOT / "docs" / "reliability.md").read_text()
    names = set(re.findall(r"(?<![\w/])(test_[a-z0-9_]+)(?=[`\[\s,])", doc))
    source = "\n".join(p.read_text() for p in (ROOT / "tests").glob("*.py"))
    missing = sorted(n for n in names if f"def {n}(" not in source and not (ROOT / "tests" / f"{n}.py").exists())
    assert len(names) > 40 and not missing, missing


def heading_ids(markdown_text: str) -> set[str]:
    """The ids the docs build gives a page's headings (Python-Markdown's toc, as mkdocs.yml configures it)."""
    import markdown

    md = markdown.Markdown(extensions=["toc", "pymdownx.superfences"])
    md.convert(markdown_text)
    ids, todo = set(), list(md.toc_tokens)
    while todo:
        token = todo.pop()
        ids.add(token["id"])
        todo.extend(token["children"])
    return ids


def test_every_link_of_the_readme_reaches_its_file_and_heading():
    """Fast: each relative link of README.md names a file of the repository, and a `#heading` after a docs page is
    one of that page's headings (the strict build checks the links between the pages themselves)."""
    readme = (ROOT / "README.md").read_text()
    code_free = re.sub(r"```.*?```", "", readme, flags=re.S)
    links = re.findall(r"\]\(([^)\s]+)\)", code_free)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) > 10, local
    ids, broken = {}, []
    for link in local:
        path, _, anchor = link.partition("#")
        if path and not (ROOT / path).exists():
            broken.append(link)
        elif anchor:
            target = ROOT / (path or "README.md")
            if target not in ids:
                ids[target] = heading_ids(target.read_text())
            if anchor not in ids[target]:
                broken.append(link)
    assert not broken, broken


def page(site, name) -> str:
    return (site / name / "index.html").read_text()


def text_of(html: str) -> str:
    """The page's text as a reader sees it (tags dropped, entities decoded)."""
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


@pytest.mark.slow
def test_docs_build_strict(site):
    cli = page(site, "cli")
    assert "cvxrank fit --help" in cli and "cvxrank cv --help" in cli
    api = page(site, "api")
    assert "RankSVMIR" in api and "solve_newton" in api
    assert not (site / "hooks.py").exists(), "the build hook is not a page"
    assert not list(site.rglob("*.pickle")), "the gallery's caches are not published"


@pytest.mark.slow
def test_cli_help_fits_the_page(site):
    # argparse wraps the help the docs show; hand-wrapped paragraphs and long output lines wrap
    # at the edge of the page (text blocks are pre-wrap), so nothing is cut off at 1280 px.
    blocks = [text_of(b) for b in re.findall(r"<pre.*?</pre>", page(site, "cli"), flags=re.S)]
    assert len(blocks) > 10 and all("--help" in b for b in blocks)
    assert 'class="language-text highlight"' in page(site, "cli")
    css = (site / "stylesheets" / "extra.css").read_text()
    assert re.search(r"\.language-text pre > code[^{]*\{[^}]*white-space: pre-wrap", css)
    assert "stylesheets/extra.css" in page(site, "cli")


@pytest.mark.slow
def test_tutorial_shows_what_its_code_printed(site):
    text = text_of(page(site, "tutorial"))
    # Hand-computed: x_0 - x_1 = (3, 1) - (2, 2) and x_3 - x_4 = (1, 3) - (0, 1).
    assert "pair 0: doc 0 over doc 1, grade pair k(i) = (2, 1), d_i = [ 1. -1.]" in text
    assert "pair 3: doc 3 over doc 4, grade pair k(i) = (1, 0), d_i = [1. 2.]" in text
    # tau mu by hand: query 1 has 3 pairs, query 2 one, so mu = (1, 1, 1, 3); the last pair is 0.5 * 3.
    assert "tau_k(i) mu_q(i) per pair: [1.  2.  0.5 1.5]" in text
    # C_i = tau mu / (2 lambda) with lambda = 2.
    assert "C_i: [0.25  0.5   0.125 0.375]" in text
    assert "same minimiser within the certified bounds: True" in text
    identity = re.findall(r"L\(w\) = ([0-9.]+)\s+2 lambda M\(w\) = ([0-9.]+)", text)
    assert len(identity) == 3 and all(abs(float(a) - float(b)) <= 1e-9 * float(a) for a, b in identity)
    assert "verdict" in text and "Traceback" not in text


@pytest.mark.slow
def test_gallery_runs_every_example(site):
    index = text_of((site / "gallery" / "index.html").read_text())
    for path in EXAMPLES:
        html = (site / "gallery" / path.stem / "index.html").read_text()
        text = text_of(html)
        assert "Teaches:" in text, f"{path.name} says what it teaches in its first lines"
        assert "Out:" in text, f"{path.name}: the gallery shows what it printed"
        assert "Traceback" not in text
        title = path.read_text().split('"""', 2)[1].strip().splitlines()[0].lstrip("# ")
        assert title in index
    quick = text_of(page(site, "gallery/quick_example"))
    assert "L = 2 lam M at one w: True" in quick and "same minimiser within the certified bounds: True" in quick
    by_hand = text_of(page(site, "gallery/theorem1_by_hand"))
    assert "C_i by hand equals theorem1_C: True" in by_hand
    for name in ["theorem1_by_hand", "cost_sensitive_simulation"]:
        images = re.findall(r'<img[^>]+src="\.\./images/([^"]+\.png)"', page(site, f"gallery/{name}"))
        assert images, f"{name} shows its figure"
        assert all((site / "gallery" / "images" / img).stat().st_size > 10_000 for img in images)


@pytest.mark.slow
def test_equations_are_marked_for_mathjax(site):
    assert (site / "javascripts" / "mathjax" / "tex-svg-full.js").stat().st_size > 1_000_000
    for name in MATH_PAGES:
        html = page(site, name)
        assert html.count('class="arithmatex"') >= 20, name
        assert "javascripts/mathjax/tex-svg-full.js" in html
    formulations = page(site, "formulations")
    for label in ["(14)", "(18)-(19)", "(9)/SIGIR", "(3)/He"]:
        assert label in formulations


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="headless Chromium is not installed")
def test_mathjax_typesets_every_equation(site, tmp_path):
    pages = MATH_PAGES + ["gallery/theorem1_by_hand", "gallery/pairwise_transform", "core", "solvers", "listwise"]
    for name in pages:
        html = page(site, name)
        expected = html.count('class="arithmatex"')
        dom = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=20000", "--dump-dom",
             (site / name / "index.html").as_uri()],
            capture_output=True, text=True, timeout=120).stdout
        typeset = dom.count("<mjx-container")
        assert typeset == expected, f"{name}: {typeset} of {expected} equations typeset"
        assert "data-mjx-error" not in dom and "<mjx-merror" not in dom, name
