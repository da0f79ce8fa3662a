"""Memory guards: estimate before materialising pairs x features or reading a file; refuse above the budget."""

from __future__ import annotations

import warnings

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
from cvxrank.exceptions import CvxrankError, InaccurateSolutionWarning, ValidationError
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


# -- pairs are counted, never formed, before the budget refuses them ------------------------------------
LONG_QUERY_DOCUMENTS = 2000


@pytest.fixture
def long_query():
    """One query of 2,000 documents in three grades: 1,333,333 pairs, counted in microseconds from the
    grades, 200 MiB once formed; the pair-free solver needs 260 KB (its vectors of 3 features, 2,000 scores)."""
    n = LONG_QUERY_DOCUMENTS
    X = np.random.default_rng(0).normal(size=(n, 3))
    return cr.RankingData(X, np.arange(n) % 3, np.zeros(n, dtype=np.int64))


def traced_peak(fn):
    """``(peak bytes traced while fn() ran, the exception it raised or None)``; numpy's arrays are traced."""
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            fn()
            raised = None
        except MemoryBudgetError as exc:
            raised = exc
        return tracemalloc.get_traced_memory()[1], raised
    finally:
        tracemalloc.stop()


def one_pair_array(n_pairs) -> int:
    """The two index arrays (better, worse; int64) that any forming of ``n_pairs`` pairs holds at least."""
    return 2 * 8 * n_pairs


def _fit(solver, formulation="auto"):
    return lambda data: RankSVM(lam=0.1, solver=solver, formulation=formulation).fit(data)


def _solve(solver, formulation="auto"):
    return lambda data: solve(cr.RankingProblem(data, lam=0.1), solver, formulation=formulation)


def _build(formulation):
    return lambda data: build(cr.RankingProblem(data, lam=0.1), formulation=formulation)


def _verify(data):
    from cvxrank.theorem import verify_theorem1

    return verify_theorem1(data, lam=0.1, solvers=["clarabel"])


ENTRY_POINTS = {
    "fit clarabel": _fit("clarabel"), "fit subgradient": _fit("subgradient"), "fit gd": _fit("gd"),
    "fit clarabel primal": _fit("clarabel", "primal"), "fit clarabel hinge": _fit("clarabel", "hinge"),
    "solve clarabel": _solve("clarabel"), "solve subgradient": _solve("subgradient"), "solve gd": _solve("gd"),
    "solve clarabel dual": _solve("clarabel", "dual"),
    "build auto": _build("auto"), "build primal": _build("primal"), "build lifted": _build("lifted"),
    "build dual": _build("dual"), "build hinge": _build("hinge"),
    "build_primal": lambda data: cr.build_primal(cr.RankingProblem(data, lam=0.1)),
    "build_lifted_primal": lambda data: cr.build_lifted_primal(cr.RankingProblem(data, lam=0.1)),
    "build_dual": lambda data: cr.build_dual(cr.RankingProblem(data, lam=0.1)),
    "build_hinge": lambda data: cr.build_hinge(cr.RankingProblem(data, lam=0.1)),
    "make_pairs": make_pairs, "RankingProblem.pairs": lambda data: cr.RankingProblem(data).pairs,
    "verify_theorem1": _verify,
}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_a_long_query_is_refused_from_its_pair_count_before_any_pair_is_formed(long_query, entry):
    """Every path that forms pairs refuses from their count: its traced peak stays below the two index
    arrays any forming of the pairs holds (one query of 20,000 documents reached 3.46 GB this way)."""
    n_pairs = int(cr.pairs.count_pairs(long_query).sum())
    set_memory_budget("2MiB")
    peak, raised = traced_peak(lambda: ENTRY_POINTS[entry](long_query))
    assert raised is not None, f"{entry} was not refused"
    assert peak < one_pair_array(n_pairs), f"{entry} allocated {peak:,} bytes before refusing"
    message = str(raised)
    assert f"{n_pairs:,} pairs" in message and "2.0 MiB" in message
    if entry == "verify_theorem1":
        assert "fewer or shorter queries" in message
    else:
        assert "solver='cutting_plane'" in message


def test_the_formulation_is_chosen_from_counts(long_query):
    from cvxrank.formulations import choose_formulation

    for data in (cr.make_ranking(n_queries=5, n_features=6, random_state=0),
                 cr.make_ranking(n_queries=5, n_features=60, density=0.1, random_state=0)):
        problem = cr.RankingProblem(data, lam=0.1)
        assert choose_formulation(problem) == choose_formulation(make_pairs(data))
        assert not problem.has_pairs
    problem = cr.RankingProblem(long_query, lam=0.1)
    set_memory_budget("2MiB")
    assert choose_formulation(problem) == "primal"  # D: 3 entries a pair; the lift: 3 a pair, plus X
    assert not problem.has_pairs  # the rule read the pair count, not the pairs


def test_the_named_way_out_fits_the_budget_that_refused(long_query):
    set_memory_budget("2MiB")
    with pytest.raises(MemoryBudgetError, match="solver='cutting_plane'"):
        RankSVM(lam=0.1, solver="clarabel").fit(long_query)
    model = RankSVM(lam=0.1, solver="cutting_plane").fit(long_query)
    assert model.result_.status == "optimal"
    problem = cr.RankingProblem(long_query, lam=0.1)  # "auto" counts the pairs and goes pair-free
    assert solve(problem).solver == "cutting_plane" and not problem.has_pairs
    assert RankSVM(lam=0.1).fit(long_query).result_.solver == "cutting_plane"


def test_explicit_pairs_above_the_budget_are_refused_before_their_copies():
    data = cr.RankingData(np.zeros((4, 2)), np.zeros(4), np.zeros(4, dtype=np.int64))
    n = 400_000
    better, worse = np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64)
    set_memory_budget("2MiB")
    peak, raised = traced_peak(lambda: cr.pairs.preference_pairs(data, better, worse))
    assert raised is not None and f"{n:,} pairs" in str(raised)
    assert peak < 8 * n  # not one copy of an index array


@pytest.mark.parametrize("argv", [["fit", "--solver", "clarabel"], ["fit", "--solver", "subgradient"],
                                  ["fit", "--solver", "gd"], ["verify"]])
def test_the_cli_refuses_a_long_query_in_one_line(long_query, tmp_path, monkeypatch, capsys, argv):
    """``CVXRANK_MEMORY_BUDGET=2MiB cvxrank fit long.letor --solver clarabel`` (and ``subgradient``,
    ``gd``, ``verify --data``): exit 2 with one line, before any pair is formed."""
    from cvxrank.cli import main

    path = tmp_path / "long.letor"
    cr.data.save_letor(long_query, path)
    n_pairs = int(cr.pairs.count_pairs(long_query).sum())
    command = ([argv[0], str(path), "--model", str(tmp_path / "m.json"), *argv[1:]] if argv[0] == "fit"
               else ["verify", "--data", str(path), "--solvers", "clarabel"])
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", "2MiB")
    capsys.readouterr()
    codes = []
    peak, _ = traced_peak(lambda: codes.append(main(command)))
    err = capsys.readouterr().err
    assert codes == [2] and len(err.strip().splitlines()) == 1, err
    assert f"{n_pairs:,} pairs" in err and "CVXRANK_MEMORY_BUDGET=2MiB" in err
    assert peak < one_pair_array(n_pairs)
    assert not (tmp_path / "m.json").exists()


# -- predict: the model file under the budget, and no padding to the model's width ----------------------
def _wide_model(tmp_path, width):
    """A fitted RankSVM of 5 features saved with ``width`` weights (the rest small numbers), and 32
    documents of 5 features: a test file whose highest index is far below the model's."""
    import json

    data = cr.make_ranking(n_queries=4, n_features=5, random_state=0)
    model = RankSVM(lam=0.1, solver="cutting_plane").fit(data)
    model.save(tmp_path / "small.json")
    doc = json.loads((tmp_path / "small.json").read_text())
    doc["coef"] = doc["coef"] + [1e-3 * (i % 7) for i in range(width - 5)]
    doc["n_features"] = width
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc))
    letor = tmp_path / "test.letor"
    cr.data.save_letor(data.subset(np.arange(32)), letor)
    return path, letor, data.subset(np.arange(32)), model.coef_


def test_a_model_file_above_the_budget_is_refused_before_it_is_parsed(tmp_path, monkeypatch, capsys):
    import json

    from cvxrank.cli import main
    from cvxrank.estimators import load_model, persistence

    path, letor, _, _ = _wide_model(tmp_path, 50_000)
    size = path.stat().st_size
    need = _memory.model_read_bytes(size, path.read_bytes().count(b",") + 1)
    assert need >= 2 * size + 8 * 50_000  # at least the bytes, their text and the weight vector
    parse = json.loads

    def never(*args, **kwargs):
        raise AssertionError("the model file was parsed although it does not fit")

    monkeypatch.setattr(json, "loads", never)
    set_memory_budget(need - 1)
    with pytest.raises(MemoryBudgetError, match=r"reading the model file .*wide\.json .* needs about"):
        load_model(path)
    with monkeypatch.context() as m:
        m.setattr(persistence, "read_input", never)  # below its bytes and their text: refused unread
        set_memory_budget(2 * size - 1)
        with pytest.raises(MemoryBudgetError, match=f"{size:,} bytes"):
            load_model(path)
    set_memory_budget(None)
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", str(need - 1))  # cvxrank predict: one line, exit 2
    capsys.readouterr()
    assert main(["predict", str(path), str(letor)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "memory budget" in err and "wide.json" in err, err
    monkeypatch.setattr(json, "loads", parse)
    monkeypatch.setenv("CVXRANK_MEMORY_BUDGET", str(need))  # exactly the estimate: read
    assert load_model(path).n_features_in_ == 50_000


def test_scores_never_pad_x_to_the_models_width(tmp_path):
    """32 documents of 5 features under a model of 200,000 weights: scored as if the missing features
    were zeros, with a traced peak far below X padded to the model's width (51 MB)."""
    from cvxrank.estimators import load_model

    width = 200_000
    path, _, docs, coef5 = _wide_model(tmp_path, width)
    model = load_model(path)
    expected = docs.X @ coef5
    peak, raised = traced_peak(lambda: model.scores(docs.X))
    assert raised is None and peak < 8 * 32 * width / 100
    np.testing.assert_allclose(model.scores(docs.X), expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(model.scores(sp.csr_matrix(docs.X)), expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(model.scores(docs.X.astype(np.float32)),
                               docs.X.astype(np.float32).astype(np.float64) @ coef5, rtol=1e-12, atol=0)
    padded = sp.hstack([sp.csr_matrix(docs.X), sp.csr_matrix((32, width - 5))], format="csr")
    np.testing.assert_allclose(model.scores(padded), model.decision_function(padded), rtol=1e-12, atol=0)
    with pytest.raises(ValidationError, match="features up to 200,001, but the model was fitted with 200,000"):
        model.scores(sp.csr_matrix((2, width + 1)))
    set_memory_budget(8 * 32 - 1)  # not even the 32 scores
    with pytest.raises(MemoryBudgetError, match="scoring 32 documents"):
        model.scores(docs.X)


def test_predict_does_not_pad_x_to_the_models_width(tmp_path, capsys):
    """``cvxrank predict`` of 32 documents of 5 features with a model of 50,000 weights: its traced peak
    stays below reading the model plus a quarter of X padded densely to the model's width (13 MB;
    3,000,000 weights took 1.03 GB)."""
    from cvxrank.cli.predict import predict_file
    from cvxrank.estimators import load_model

    width = 50_000
    path, letor, docs, coef5 = _wide_model(tmp_path, width)
    reading, _ = traced_peak(lambda: load_model(path))
    out = []
    peak, _ = traced_peak(lambda: out.append(predict_file(str(path), str(letor))))
    np.testing.assert_allclose(out[0][2], docs.X @ coef5, rtol=1e-12, atol=0)
    assert peak < reading + 8 * 32 * width / 4


def test_the_messages_name_the_registrys_pair_free_solvers():
    """The problem names the pair-free solver of its variant without importing the solvers (a layer
    above it): the same solvers the registry marks pair-free and accepting the variant."""
    from cvxrank.solvers.registry import SOLVERS
    from cvxrank.variants import Variant

    data = cr.make_ranking(n_queries=3, n_features=4, random_state=0)
    for variant in (Variant(), Variant(loss="squared_hinge"), Variant(margin="grade_difference"), Variant(l1=0.1),
                    Variant(lower=0.0), Variant(loss="squared_hinge", upper=1.0)):
        problem = cr.RankingProblem(data, lam=0.1, variant=variant)
        registry = [s.name for s in SOLVERS.values() if s.pairfree and s.accepts(variant)]
        assert problem._pairfree_solvers() == registry, variant


def test_gd_fits_where_a_cvxpy_formulation_would_not():
    """``RankSVM(solver="gd")`` steps on the problem itself (pairs and ``X``), never on a compiled CVXPY
    hinge form: under a budget the hinge form exceeds (D and its compiled copies), it still fits."""
    data = cr.make_ranking(n_queries=20, docs_per_query=30, n_features=200, random_state=0)
    set_memory_budget(8 * 2**20)
    with pytest.raises(MemoryBudgetError):
        build(cr.RankingProblem(data, lam=0.1), formulation="hinge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        model = RankSVM(lam=0.1, solver="gd", max_iter=50).fit(data)
    assert model.result_.solver == "gd" and np.isfinite(model.coef_).all()
