"""Reproducibility: same inputs and random_state give the same w bit for bit; models round-trip exactly."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import cvxrank as cr
from cvxrank.estimators import (
    CostSensitiveRankSVM,
    CsRgList,
    ListMLE,
    RankSVM,
    RankSVMIR,
    load_model,
    save_model,
)
from cvxrank.exceptions import InaccurateSolutionWarning
from cvxrank.experiments.cv import cross_validate, query_folds
from cvxrank.formulations import build
from cvxrank.pairs import make_pairs
from cvxrank.solvers import available_solvers, solve

DATA = cr.make_ranking(n_queries=8, docs_per_query=(5, 9), n_features=5, n_grades=3, noise=1.0, random_state=21)


def _bits(a) -> bytes:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes()


def test_tau_estimation_is_seeded():
    first = cr.estimate_tau(DATA, T=50, random_state=7)
    pd.testing.assert_frame_equal(first, cr.estimate_tau(DATA, T=50, random_state=7), check_exact=True)
    gen = cr.estimate_tau(DATA, T=50, random_state=np.random.default_rng(7))
    pd.testing.assert_frame_equal(first, gen, check_exact=True)  # an int seed and its Generator agree
    others = [cr.estimate_tau(DATA, T=50, random_state=s)["tau"].to_numpy() for s in range(8, 13)]
    assert any(not np.array_equal(first["tau"].to_numpy(), o) for o in others)  # the seed matters


def test_fold_splits_are_seeded():
    def ids(splits):
        return [(s.train.query_ids.tolist(), s.vali.query_ids.tolist(), s.test.query_ids.tolist()) for s in splits]

    assert ids(query_folds(DATA, 4, random_state=3)) == ids(query_folds(DATA, 4, random_state=3))
    assert ids(query_folds(DATA, 4, random_state=3)) != ids(query_folds(DATA, 4, random_state=4))


@pytest.mark.parametrize("solver, options", [("subgradient", {"max_iter": 400}), ("gd", {"max_iter": 400}),
                                             ("cutting_plane", {}), ("clarabel", {})])
def test_solver_steps_are_deterministic(solver, options):
    if solver not in available_solvers():
        pytest.skip(f"{solver} is not installed")
    pairs = make_pairs(DATA)
    weights = cr.pair_weights(pairs, tau={(2, 1): 1.0, (2, 0): 2.0, (1, 0): 0.5}, mu="balanced")
    runs = []
    for _ in range(2):
        form = build(pairs, weights=weights, lam=0.1, formulation="primal")  # a fresh problem each time
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)  # gd stops at max_iter: the same stop twice
            runs.append(solve(form, solver, **options))
    assert _bits(runs[0].w) == _bits(runs[1].w)
    assert runs[0].objective == runs[1].objective and runs[0].relative_gap == runs[1].relative_gap
    if runs[0].history is not None:
        pd.testing.assert_frame_equal(_untimed(runs[0].history), _untimed(runs[1].history), check_exact=True)


def _untimed(df):
    """A frame without its wall-clock columns (the only thing allowed to differ)."""
    return df.drop(columns=[c for c in df.columns if "time" in c or "seconds" in c])


ESTIMATORS = [
    lambda: RankSVM(lam=0.1, solver="clarabel"),
    lambda: CostSensitiveRankSVM(lam=0.1, tau="estimate", tau_swaps=30, random_state=5, solver="subgradient"),
    lambda: RankSVMIR(lam=0.1, tau="estimate", tau_swaps=30, random_state=5, solver="clarabel"),
    lambda: ListMLE(C=2.0),
    lambda: CsRgList(C=2.0, pcf=2.0),
]


@pytest.mark.parametrize("make", ESTIMATORS, ids=["RankSVM", "CostSensitiveRankSVM", "RankSVMIR", "ListMLE",
                                                  "CsRgList"])
def test_estimators_refit_and_round_trip_bit_for_bit(make, tmp_path):
    first, second = make().fit(DATA), make().fit(DATA)
    assert _bits(first.coef_) == _bits(second.coef_)
    if getattr(first, "tau_", None) is not None:
        assert first.tau_ == second.tau_

    path = tmp_path / "model.json"
    save_model(first, path)
    loaded = load_model(path)
    assert type(loaded) is type(first)
    assert _bits(loaded.coef_) == _bits(first.coef_)  # shortest repr of a float64 reads back exactly
    assert _bits(loaded.decision_function(DATA.X)) == _bits(first.decision_function(DATA.X))
    assert loaded.get_params() == first.get_params()
    assert getattr(loaded, "tau_", None) == getattr(first, "tau_", None)
    again = tmp_path / "again.json"
    save_model(loaded, again)
    assert again.read_bytes() == path.read_bytes()  # load-save is the identity on the file

    doc = json.loads(path.read_text())
    assert doc["cvxrank_version"] == cr.__version__
    solve_info = doc["solve"]
    assert solve_info["solver"] == first.solve_summary_["solver"]
    assert solve_info["status"] == first.result_.status
    assert solve_info["relative_gap"] == first.result_.relative_gap or (
        solve_info["relative_gap"] == first.solve_summary_["relative_gap"])
    assert solve_info["status"] in ("optimal", "optimal_inaccurate", "user_limit")


@pytest.mark.slow  # a second interpreter imports cvxrank and CVXPY
def test_same_seed_same_model_in_a_fresh_process():
    """The same fit in another interpreter gives the same bits (same machine, same libraries)."""
    code = ("import numpy as np, cvxrank as cr\n"
            "from cvxrank.estimators import RankSVMIR\n"
            "data = cr.make_ranking(n_queries=8, docs_per_query=(5, 9), n_features=5, n_grades=3, noise=1.0, "
            "random_state=21)\n"
            "m = RankSVMIR(lam=0.1, tau='estimate', tau_swaps=30, random_state=5, solver='clarabel').fit(data)\n"
            "print(m.coef_.tobytes().hex())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    here = RankSVMIR(lam=0.1, tau="estimate", tau_swaps=30, random_state=5, solver="clarabel").fit(DATA)
    assert out.stdout.strip() == here.coef_.tobytes().hex()


def test_cross_validation_is_seeded():
    def run():
        return cross_validate(DATA, ["ranksvm", "rsvm-ir-rank"], grids={"pairwise": {"lam": [0.1, 1.0]}},
                              params={"rsvm-ir-rank": {"tau_swaps": 20}}, random_state=2, progress=False)

    first, second = run(), run()
    pd.testing.assert_frame_equal(_untimed(first.per_query), _untimed(second.per_query), check_exact=True)
    pd.testing.assert_frame_equal(_untimed(first.selection), _untimed(second.selection), check_exact=True)
    assert len(first.per_query) == DATA.n_queries * 2  # every query tested once per method
