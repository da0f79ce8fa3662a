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
