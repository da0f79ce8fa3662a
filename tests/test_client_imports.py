"""The solvers' own path stays lean: a Dask client that runs the cutting planes (with their Newton phase) or the
truncated Newton over a remote oracle holds the data's numbers, not pandas (with pyarrow, about 90 MiB),
``scipy.optimize``, CVXPY, scikit-learn or matplotlib. Each check runs in a fresh interpreter, so modules
imported by other tests do not hide a regression."""

import subprocess
import sys

HEAVY = ("pandas", "scipy.optimize", "cvxpy", "sklearn", "matplotlib")

RUN = """
import sys
import numpy as np
from cvxrank.datasets import make_ranking
from cvxrank.native.cutting_plane import cutting_plane
from cvxrank.native.dask import DaskOracle
from cvxrank.native.dask_files import files_oracle, solve_files
from cvxrank.native.oracle import PairFreeOracle
from cvxrank.native.truncated_newton import truncated_newton
from cvxrank.native.variant_oracle import VariantOracle

{extra}
data = make_ranking(n_queries=6, n_features=4, random_state=0)
oracle = PairFreeOracle.from_data(data)
run = cutting_plane(oracle, 0.1, tol=1e-8)
assert run.relative_gap <= 1e-8, run.relative_gap
sq = truncated_newton(VariantOracle.from_data(data), 0.1, tol=1e-8)
assert sq.relative_gap <= 1e-8, sq.relative_gap
print("LOADED:" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def _loaded(extra=""):
    out = subprocess.run([sys.executable, "-c", RUN.format(extra=extra, heavy=HEAVY)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("LOADED:")][-1]
    return [m for m in line[len("LOADED:"):].split(",") if m]


def test_a_certified_native_solve_imports_no_heavy_library():
    assert _loaded() == []


def test_the_check_can_fail():
    assert _loaded("import pandas") == ["pandas"]
