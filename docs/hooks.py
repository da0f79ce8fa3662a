"""MkDocs hook: replace ``<!-- cli-help -->`` in a page with the live ``--help`` of every command.

The command line's help is the single source; the docs show it as the installed version prints it.
"""

from __future__ import annotations

import contextlib
import io
import os


def _help(argv) -> str:
    from cvxrank.cli import build_parser

    buf = io.StringIO()
    os.environ.setdefault("COLUMNS", "100")
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        build_parser().parse_args(argv)
    return buf.getvalue().rstrip()


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


def on_page_markdown(markdown, page, config, files):
    if "<!-- cli-help -->" in markdown:
        return markdown.replace("<!-- cli-help -->", _render())
    return markdown
