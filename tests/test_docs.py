"""The documentation site builds offline in strict mode (every page, every API docstring, the CLI help)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_strict(tmp_path):
    # mkdocs, mkdocs-material and mkdocstrings are test extras: a missing one fails here, never skips.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert "cvxrank fit --help" in cli and "cvxrank cv --help" in cli
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "RankSVMIR" in api and "solve_newton" in api
