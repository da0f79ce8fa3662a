"""MkDocs hooks of the cvxrank site.

- ``<!-- cli-help -->`` in a page becomes the live ``--help`` of every command: the command line's
  help is the single source; the docs show it as the installed version prints it, wrapped to a
  width that fits the page at 1280 px.
- MathJax 3 (``tex-svg-full.js``: every TeX extension, SVG output, no web fonts) is served with the
  site from the ``sphinx-mathjax-offline`` package (a docs extra), so the equations render offline.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import os

MATHJAX = "javascripts/mathjax/tex-svg-full.js"
HELP_COLUMNS = "84"  # argparse wraps --help to this width: the code block fits the page at 1280 px


def _help(argv) -> str:
    from cvxrank.cli import build_parser

    buf = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
            build_parser().parse_args(argv)
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return buf.getvalue().rstrip()


def _mathjax_file() -> str:
    try:
        files = importlib.metadata.files("sphinx-mathjax-offline") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for f in files:
        if f.name == "tex-svg-full.js":
            return str(f.locate())
    raise RuntimeError("the docs render equations with MathJax from the sphinx-mathjax-offline package: "
                       "pip install -e '.[docs]'")


def _render() -> str:
    from cvxrank.bench import benchmarks
    from cvxrank.cli import commands

    parts = ["```text", "$ cvxrank --help", _help(["--help"]), "```", ""]
    for name in commands():
        parts += [f"## cvxrank {name}", "", "```text", f"$ cvxrank {name} --help", _help([name, "--help"]), "```", ""]
        if name == "bench":
            for bench in benchmarks():
                parts += [f"### cvxrank bench {bench}", "", "```text", f"$ cvxrank bench {bench} --help",
                          _help(["bench", bench, "--help"]), "```", ""]
    return "\n".join(parts)


def on_files(files, config):
    from mkdocs.structure.files import File

    files.append(File.generated(config, MATHJAX, abs_src_path=_mathjax_file()))
    return files


def on_page_markdown(markdown, page, config, files):
    if "<!-- cli-help -->" in markdown:
        return markdown.replace("<!-- cli-help -->", _render())
    return markdown
