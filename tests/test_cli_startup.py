"""``cvxrank --version`` and ``--help`` stay quick: building the parser loads neither CVXPY, SciPy, pandas
nor matplotlib. Each check runs in a fresh interpreter, so modules imported by other
tests do not hide a regression."""

import os
import subprocess
import sys

import pytest

HEAVY = ("cvxpy", "scipy", "scipy.stats", "matplotlib", "pandas", "sklearn")

CHECK = """
import sys
from cvxrank.cli import build_parser
parser = build_parser()
for argv in {argvs!r}:
    try:
        parser.parse_args(argv)
    except SystemExit:
        pass
print("LOADED:" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def loaded_after(argvs):
    code = CHECK.format(argvs=argvs, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy(),
                         check=True).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("LOADED:")][-1]
    return [m for m in line[len("LOADED:"):].split(",") if m]


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["bench", "--help"], ["bench", "path", "--help"],
                                  ["fit", "--help"], ["compare", "--help"], ["simulate", "--help"],
                                  ["clicks", "--help"]])
def test_parser_loads_no_heavy_module(argv):
    assert loaded_after([argv]) == []


def test_check_can_fail():
    # the probe sees a heavy module when one is loaded: the test above could be false
    code = CHECK.format(argvs=[], heavy=HEAVY).replace("import sys\n", "import sys\nimport pandas\n", 1)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "LOADED:pandas" in out


def test_version_prints():
    out = subprocess.run([sys.executable, "-m", "cvxrank.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("cvxrank ")


def test_lazy_package_exports_every_public_name():
    import cvxrank

    for name in cvxrank.__all__:
        assert getattr(cvxrank, name) is not None
    with pytest.raises(AttributeError):
        cvxrank.no_such_name  # noqa: B018


def _help(argv):
    out = subprocess.run([sys.executable, "-m", "cvxrank.cli", *argv, "--help"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    return " ".join(out.stdout.split())


def test_help_texts_state_defaults_and_no_withdrawn_target():
    fit = _help(["fit"])
    assert "default estimate for cs-ranksvm" in fit and "default balanced" in fit and "default 3" in fit
    assert ">= 3x" not in _help(["bench"]) and ">= 3x" not in _help(["bench", "path"])
