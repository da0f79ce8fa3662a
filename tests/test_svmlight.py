"""Chunked reading (cvxrank._svmlight) gives exactly what scikit-learn's one-piece reader gives."""

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

import cvxrank as cr
from cvxrank import _svmlight
from cvxrank._svmlight import read_svmlight

LINES = [
    "# a comment line, then a blank one",
    "",
    "2 qid:1 1:0.5 3:1e-3 # a trailing comment",
    "1 qid:1 2:-1.25",
    "0 qid:1 1:1 2:2 3:3 4:4 5:5 6:6 7:7 8:8 9:9 10:10 11:11 12:12 13:13 14:14 15:15 16:16",
    "3 qid:7 7:0.125",
    "0 qid:7",
    "1 qid:-3 1:2.5 40:1",
    "2 qid:9 2:1 3:1\r",
]


def write(tmp_path, lines, name="d.letor"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def same(a, b):
    Xa, ya, qa = a
    Xb, yb, qb = b
    assert Xa.shape == Xb.shape
    assert (Xa != Xb).nnz == 0
    np.testing.assert_array_equal(ya, yb)
    np.testing.assert_array_equal(qa, qb)


@pytest.mark.parametrize("chunk_bytes", [1, 7, 16, 40, 64, 10_000])
def test_any_chunk_size_reads_every_line_once(tmp_path, chunk_bytes):
    path = write(tmp_path, LINES)
    reference = load_svmlight_file(str(path), query_id=True, zero_based=False)
    same(read_svmlight(path, chunk_bytes=chunk_bytes, n_jobs=1), reference)


def test_random_files_match_scikit_learn(tmp_path):
    rng = np.random.default_rng(0)
    for trial in range(5):
        lines = []
        for i in range(200):
            idx = np.sort(rng.choice(np.arange(1, 30), size=rng.integers(0, 6), replace=False))
            feats = " ".join(f"{j}:{rng.standard_normal():.17g}" for j in idx)
            lines.append(f"{rng.integers(0, 5)} qid:{i // 7} {feats}".rstrip())
            if rng.random() < 0.3:  # comment and blank lines anywhere (the reader checks its stop only after data)
                lines.append(rng.choice(["", "# comment", "   ", "#", "  # indented comment 1:2"]))
        path = write(tmp_path, lines, f"r{trial}.letor")
        reference = load_svmlight_file(str(path), query_id=True, zero_based=False)
        same(read_svmlight(path, chunk_bytes=int(rng.integers(50, 900)), n_jobs=1), reference)


@pytest.mark.slow  # two worker processes start and import the reader
def test_parallel_ranges_match(tmp_path, monkeypatch):
    lines = [f"{i % 3} qid:{i // 10} 1:{i} 2:{i * 0.5} {1 + i % 50}0:1" for i in range(2000)]
    path = write(tmp_path, lines)
    monkeypatch.setattr(_svmlight, "PARALLEL_BYTES", 0)
    reference = load_svmlight_file(str(path), query_id=True, zero_based=False)
    same(read_svmlight(path, chunk_bytes=4096, n_jobs=2), reference)


def test_a_line_without_qid_is_still_found(tmp_path, monkeypatch):
    # scikit-learn returns a short qid array; load_letor names the line.
    lines = [f"1 qid:{i // 4} 1:{i}" for i in range(300)] + ["0 1:1"] + [f"1 qid:99 1:{i}" for i in range(300)]
    path = write(tmp_path, lines)
    monkeypatch.setattr(_svmlight, "CHUNK_BYTES", 512)
    monkeypatch.setattr(read_svmlight, "__defaults__", None)
    with pytest.raises(cr.ValidationError, match=r"line 301: no 'qid:' field"):
        cr.load_letor(path)


def test_load_letor_reads_in_chunks_with_one_feature_count(tmp_path, monkeypatch):
    a = write(tmp_path, [f"{i % 3} qid:{i // 5} 1:{i} 3:1" for i in range(400)], "a.letor")
    b = write(tmp_path, [f"{i % 2} qid:{i // 5} 2:{i} 9:2" for i in range(300)], "b.letor")
    calls = []
    original = _svmlight._read_range

    def spy(path, offset, length):
        calls.append((offset, length))
        return original(path, offset, length)

    monkeypatch.setattr(_svmlight, "_read_range", spy)
    monkeypatch.setattr(_svmlight, "CHUNK_BYTES", 256)
    monkeypatch.setattr(read_svmlight, "__kwdefaults__", {"chunk_bytes": 256, "n_jobs": 1})
    train, test = cr.load_letor([a, b], dense=False)
    assert len(calls) > 20, "the files were read in byte ranges"
    assert train.n_features == test.n_features == 9
    ref = load_svmlight_file(str(a), query_id=True, zero_based=False, n_features=9)
    assert (train.X != ref[0]).nnz == 0
    np.testing.assert_array_equal(train.y, ref[1])
    with pytest.raises(cr.ValidationError, match=r"n_features.*3.*9 features"):
        cr.load_letor([a, b], n_features=3)


def dense_same(a, b, dtype=np.float64):
    """A dense read ``a`` against the CSR read ``b`` densified and cast as load_letor does it."""
    Xa, ya, qa = a
    Xb, yb, qb = b
    assert Xa.dtype == dtype and Xa.shape == Xb.shape
    np.testing.assert_array_equal(Xa, Xb.toarray().astype(dtype))
    np.testing.assert_array_equal(ya, yb)
    np.testing.assert_array_equal(qa, qb)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("chunk_bytes", [1, 7, 40, 10_000])
def test_the_dense_read_is_the_csr_read_densified(tmp_path, chunk_bytes, dtype):
    """Byte ranges of a plain file and whole-line pieces of a compressed stream, the pieces of different widths
    (the widest line is in the middle), comment and blank lines, a query id without features: the same values."""
    import gzip

    from cvxrank._svmlight import read_svmlight_dense

    path = write(tmp_path, LINES)
    reference = load_svmlight_file(str(path), query_id=True, zero_based=False)
    packed = tmp_path / "d.letor.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    n = reference[0].shape[0]
    for rows in (n, n - 3, n + 5, 0):  # exact, too few (X lengthened), too many (trimmed), unknown
        dense_same(read_svmlight_dense(path, dtype=dtype, chunk_bytes=chunk_bytes, rows=rows), reference, dtype)
        with gzip.open(packed, "rb") as fh:
            dense_same(read_svmlight_dense(fh, dtype=dtype, chunk_bytes=chunk_bytes, rows=rows), reference, dtype)
    with pytest.raises(ValueError, match="open a compressed file"):
        read_svmlight_dense(packed, rows=n)


def test_the_dense_read_checks_its_budget_before_each_block():
    import io

    from cvxrank._svmlight import read_svmlight_dense

    text = "\n".join(f"1 qid:{i} 1:1 2:2" for i in range(100)).encode() + b"\n"
    seen = []
    X, _, _ = read_svmlight_dense(io.BytesIO(text), chunk_bytes=64, check=seen.append, rows=100)
    assert seen == [X.nbytes] and X.shape == (100, 2)  # the rows known: X once, filled as the pieces come
    seen = []
    assert read_svmlight_dense(io.BytesIO(text), chunk_bytes=64, check=seen.append, rows=1)[0].shape == (100, 2)
    assert 1 < len(seen) < 10  # too few rows counted: X doubles as it fills, a few copies, not one per piece

    def refuse(nbytes):
        if nbytes > 100:
            raise MemoryError("budget")

    with pytest.raises(MemoryError, match="budget"):
        read_svmlight_dense(io.BytesIO(text), chunk_bytes=64, check=refuse, rows=100)


def test_load_letor_dense_reads_dense_with_one_feature_count_and_names_bad_lines(tmp_path):
    from cvxrank._memory import MemoryBudgetError, set_memory_budget

    a = write(tmp_path, [f"{i % 3} qid:{i // 5} 1:{i} 3:1" for i in range(400)], "a.letor")
    b = write(tmp_path, [f"{i % 2} qid:{i // 5} 2:{i} 9:2" for i in range(300)], "b.letor")
    for dtype in (np.float64, np.float32):
        dense = cr.load_letor([a, b], dense=True, dtype=dtype)
        sparse = cr.load_letor([a, b], dense=False, dtype=dtype)
        for d, s in zip(dense, sparse):
            assert isinstance(d.X, np.ndarray) and d.X.shape == (d.n_documents, 9) and d.X.dtype == dtype
            np.testing.assert_array_equal(d.X, s.X.toarray())
            np.testing.assert_array_equal(d.y, s.y)
            np.testing.assert_array_equal(d.qid, s.qid)
    bad = write(tmp_path, [f"1 qid:{i} 1:{i}" for i in range(50)] + ["1 qid:3 1:x"], "bad.letor")
    with pytest.raises(cr.ValidationError, match=r"bad.letor.*line 51"):
        cr.load_letor(bad, dense=True)
    wide = write(tmp_path, [f"1 qid:{i // 4} {1 + (i * 37) % 5000}:1" for i in range(400)], "wide.letor")
    try:  # 16 MB dense from 8 KB of text: the text's estimate passes, the dense blocks are refused as they grow
        set_memory_budget(2**20)
        with pytest.raises(MemoryBudgetError, match="wide.letor: a dense X"):
            cr.load_letor(wide, dense=True)
        assert cr.load_letor(wide, dense=False).n_features > 4000  # sparse, within the budget
    finally:
        set_memory_budget(None)
