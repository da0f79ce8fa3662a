"""Memory guards: estimate before materialising pairs x features or reading a file; refuse above the budget."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import cvxrank as cr
from cvxrank import _memory
from cvxrank._memory import (
    CVXPY_COPIES,
    MemoryBudgetError,
    difference_matrix_bytes,
    formulation_bytes,
    get_memory_budget,
    letor_read_bytes,
    parse_size,
    set_memory_budget,
)
from cvxrank.certificate import reduced_dual
from cvxrank.estimators import RankSVM
from cvxrank.exceptions import CvxrankError, ValidationError
from cvxrank.formulations import build
from cvxrank.pairs import make_pairs
from cvxrank.solvers import solve


@pytest.fixture(autouse=True)
def _no_override(monkeypatch):
    monkeypatch.delenv("CVXRANK_MEMORY_BUDGET", raising=False)
    set_memory_budget(None)
    yield
    set_memory_budget(None)


@pytest.fixture
def pairs():
    data = cr.make_ranking(n_queries=5, docs_per_query=(8, 10), n_features=6, random_state=3)
    return make_pairs(data)


@pytest.fixture
def wide_pairs():
    """Pairs whose D is wide (200 features) and ten times longer than X, so that the lifted form needs
    less than D's copies: with a handful of features the per-pair part of a CVXPY problem (about 2 KB)
    dominates both, and with as many pairs as documents X's copies cost as much as D's."""
    data = cr.make_ranking(n_queries=3, docs_per_query=(30, 40), n_features=200, random_state=3)
    return make_pairs(data)


def test_parse_size(monkeypatch):
    assert parse_size("512MiB") == 512 * 2**20
    assert parse_size("2GB") == 2 * 10**9
    assert parse_size(" 1.5 gib ") == int(1.5 * 2**30)
    assert parse_size("1e9") == 10**9
    assert parse_size(4096) == 4096
    assert parse_size("off") == -1
    with monkeypatch.context() as m:  # a fixed machine: what is available moves between two reads
        m.setattr(_memory, "available_memory", lambda: 8 * 2**30)
        assert parse_size("50%") == 4 * 2**30 and parse_size("12.5%") == 2**30
    for bad in ("", "lots", "-1GB", "0", "12 parsecs", "150%", "0%", True, float("inf"), "nan"):
        with pytest.raises(ValidationError):
            parse_size(bad)


def test_budget_sources(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: 8 * 2**30)
    assert get_memory_budget() == (4 * 2**30, "half of the 8.0 GiB available; set CVXRANK_MEMORY_BUDGET to change it")
    monkeypatch.setattr(_memory, "available_memory", lambda: None)
    assert get_memory_budget()[0] == _memory.FALLBACK_BUDGET
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", "3MiB")
    assert get_memory_budget() == (3 * 2**20, "CVXRANK_MEMORY_BUDGET=3MiB")
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", "off")
    assert get_memory_budget()[0] is None
    set_memory_budget("1KiB")  # the Python setting wins over the environment
    assert get_memory_budget()[0] == 1024
    set_memory_budget(None)
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", "a lot")
    with pytest.raises(ValidationError, match="CVXRANK_MEMORY_BUDGET='a lot'"):
        get_memory_budget()


def test_estimates_match_the_materialised_matrix(pairs):
    dense = pairs.difference_matrix()
    assert difference_matrix_bytes(pairs) == dense.nbytes
    sparse_data = cr.make_ranking(n_queries=5, docs_per_query=(8, 10), n_features=30, density=0.2, random_state=3)
    sparse_pairs = make_pairs(sparse_data)
    D = sparse_pairs.difference_matrix()
    assert sp.issparse(D)
    actual = D.data.nbytes + D.indices.nbytes + D.indptr.nbytes
    estimate = difference_matrix_bytes(sparse_pairs)
    assert actual <= estimate <= 1.6 * actual  # an upper bound: nnz(D) <= nnz(x_b) + nnz(x_w) per pair


@pytest.mark.parametrize("formulation", ["primal", "dual", "hinge"])
def test_materialising_D_above_the_budget_is_refused(pairs, formulation):
    need = formulation_bytes(pairs)
    assert need > CVXPY_COPIES * difference_matrix_bytes(pairs)  # D's copies and the per-pair, per-feature parts
    set_memory_budget(need - 1)
    with pytest.raises(MemoryBudgetError) as info:
        build(pairs, weights=np.ones(pairs.n_pairs), lam=0.1, formulation=formulation)
    message = str(info.value)
    assert "formulation='lifted'" in message and "solver='cutting_plane'" in message
    assert f"{pairs.n_pairs:,} pairs x {pairs.n_features} features" in message
    assert isinstance(info.value, ValidationError) and isinstance(info.value, CvxrankError)
    set_memory_budget(need)  # exactly the estimate: allowed
    build(pairs, weights=np.ones(pairs.n_pairs), lam=0.1, formulation=formulation)


def test_the_named_alternatives_work_under_the_same_budget(wide_pairs):
    pairs = wide_pairs
    """What the message recommends (lifted, cutting_plane) solves within the budget that refused D."""
    set_memory_budget(None)
    reference = solve(build(pairs, C=1.0, formulation="primal"), "clarabel")
    set_memory_budget(CVXPY_COPIES * difference_matrix_bytes(pairs) // 2)
    with pytest.raises(MemoryBudgetError):
        build(pairs, C=1.0, formulation="primal")
    lifted = build(pairs, C=1.0, formulation="lifted")
    for solver in ("clarabel", "cutting_plane"):
        if solver not in cr.available_solvers():
            continue
        result = solve(lifted, solver)
        assert result.status == "optimal"
        np.testing.assert_allclose(result.w, reference.w, atol=1e-4 * np.linalg.norm(reference.w))


def test_estimators_hit_the_guard(wide_pairs):
    pairs = wide_pairs
    data = pairs.data
    set_memory_budget(CVXPY_COPIES * difference_matrix_bytes(pairs) // 2)
    with pytest.raises(MemoryBudgetError, match="lifted"):
        RankSVM(lam=0.1, formulation="primal", solver="clarabel").fit(data)
    model = RankSVM(lam=0.1, formulation="lifted", solver="clarabel").fit(data)
    assert model.result_.status == "optimal"


def test_certificate_skips_a_band_above_the_budget(pairs):
    C = np.full(pairs.n_pairs, 1.0)
    w = solve(build(pairs, C=C, formulation="primal"), "clarabel").w
    margins = pairs.margins(w)
    assert reduced_dual(pairs, C, margins, 10.0, max_band=10**6) is not None  # every pair in the band
    set_memory_budget(8 * pairs.n_features)  # room for one row of D_E only
    assert reduced_dual(pairs, C, margins, 10.0, max_band=10**6) is None
    cert = cr.solvers.certify(pairs, C, w)  # still a valid (possibly weaker) certificate
    assert cert.gap >= -1e-9 * abs(cert.primal) and np.all((cert.alpha >= 0) & (cert.alpha <= C))


def _letor(tmp_path, lines=200):
    data = cr.make_ranking(n_queries=lines // 10, docs_per_query=(10, 10), n_features=8, random_state=0)
    path = tmp_path / "d.letor"
    cr.data.save_letor(data, path)
    return path


def test_reading_a_file_above_the_budget_is_refused_before_reading(tmp_path, monkeypatch):
    path = _letor(tmp_path)
    tokens = path.read_bytes().count(b":") - path.read_bytes().count(b"qid:") + path.read_bytes().count(b"\n")
    assert letor_read_bytes(path) == _memory.LETOR_BYTES_PER_VALUE * tokens  # the whole file is the sample
    import sklearn.datasets

    def never(*args, **kwargs):
        raise AssertionError("the reader ran although the file does not fit")

    monkeypatch.setattr(sklearn.datasets, "load_svmlight_files", never)
    set_memory_budget(letor_read_bytes(path) - 1)
    with pytest.raises(MemoryBudgetError, match=r"reading .*d\.letor \(.* of text\) needs about"):
        cr.load_letor(path)
    set_memory_budget(None)  # the default: half of what is available; here the machine has "1 KiB" left
    monkeypatch.setattr(_memory, "available_memory", lambda: 1024)
    with pytest.raises(MemoryBudgetError, match="half of the 1.0 KiB available"):
        cr.load_letor(path)


def test_reading_within_the_budget_works(tmp_path):
    path = _letor(tmp_path)
    set_memory_budget(letor_read_bytes(path))
    assert cr.load_letor(path).n_documents == 200
    with pytest.raises(MemoryBudgetError, match="reading .*d.letor, .*d.letor"):  # files read together add up
        cr.load_letor([path, path])


def test_dense_conversion_is_guarded(tmp_path):
    path = tmp_path / "wide.letor"
    path.write_bytes(b"1 qid:1 50000:1\n0 qid:1 1:1\n")  # sparse: 2 values; dense: 800 KB
    set_memory_budget("100KiB")
    assert cr.load_letor(path).is_sparse
    with pytest.raises(MemoryBudgetError, match="dense=False"):
        cr.load_letor(path, dense=True)


def test_the_read_estimate_counts_the_whole_text(tmp_path):
    """Neither a long comment header (no values in its first MiB) nor compression (a small file on
    disk) hides the values: both are counted over the whole decompressed text."""
    import bz2
    import gzip

    path = _letor(tmp_path)
    text = path.read_bytes()
    header = tmp_path / "header.letor"
    header.write_bytes(b"# " + b"x" * 2**21 + b"\n" + text)  # 2 MiB of comment, then the data
    assert letor_read_bytes(header) == letor_read_bytes(path) + _memory.LETOR_BYTES_PER_VALUE  # + its newline
    for name, compress in (("d.letor.gz", gzip.compress), ("d.letor.bz2", bz2.compress)):
        packed = tmp_path / name
        packed.write_bytes(compress(text * 20))
        assert packed.stat().st_size < 20 * len(text) / 2  # the size on disk understates the text
        assert _memory.letor_values(packed) == (20 * (letor_read_bytes(path) // 32), 20 * len(text))
        set_memory_budget(letor_read_bytes(packed) - 1)
        with pytest.raises(MemoryBudgetError, match=rf"reading .*{name} \(.* of text\) needs about"):
            cr.load_letor(packed)
