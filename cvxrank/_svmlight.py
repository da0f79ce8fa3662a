"""Read SVMlight/LETOR files in byte chunks, in linear time.

scikit-learn's :func:`~sklearn.datasets.load_svmlight_file` with ``query_id=True`` takes time
quadratic in the number of lines (it appends each query id with ``np.append``; timings:
``docs/reliability.md``, "Reading large LETOR files in linear time"). Its own ``offset``/``length``
arguments read one byte range of a file, every line whose first byte lies in the range; so the
file is read as consecutive ranges of ``chunk_bytes`` (each range small enough for the quadratic
term to vanish) and the pieces are stacked. With ``n_jobs > 1`` the ranges are read in parallel
(joblib processes). Compressed files (``.gz``, ``.bz2``) cannot be read by byte range and are read
in one piece. This module does no validation: :func:`cvxrank.data.load_letor` checks the text.

:func:`read_svmlight_dense` fills a dense ``X`` piece by piece, its rows counted beforehand: a peak
of about ``X``, where the CSR route holds the CSR matrix (16 bytes a value: twice the dense size of
a full row) and then the dense copy: three times. A compressed stream is read in pieces of whole
lines there.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

__all__ = ["read_svmlight", "read_svmlight_dense", "CHUNK_BYTES"]

#: Bytes per range: about 3,000 lines of 10 features or 200 of 136, where the quadratic term costs nothing.
CHUNK_BYTES = 256 * 2**10
#: Files at least this large are read by parallel processes when n_jobs allows.
PARALLEL_BYTES = 64 * 2**20
_COMPRESSED = (".gz", ".bz2")


#: scikit-learn needs a feature count to read a byte range; the largest index it accepts costs
#: nothing in a CSR matrix (columns are not allocated) and the true count is taken afterwards.
_ANY_WIDTH = 2**31 - 1


def _read_range(path: str, offset: int, length: int):
    from sklearn.datasets import load_svmlight_file

    X, y, q = load_svmlight_file(path, n_features=_ANY_WIDTH, query_id=True, zero_based=False,
                                 dtype=np.float64, offset=offset, length=length)
    # 32-bit column indices (they fit: at most _ANY_WIDTH) halve what the pieces hold until stacked.
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32, copy=False), X.indptr), shape=X.shape)
    return X, y, q


def _is_data(line: bytes) -> bool:
    return bool(line.split(b"#", 1)[0].split())


def _ranges(path: str, size: int, chunk_bytes: int) -> list[tuple[int, int]]:
    """``(offset, length)`` ranges that give every line to exactly one call of scikit-learn's reader.

    Its rules: a call at ``offset > 0`` seeks there and drops the rest of that line (through its
    newline); it then reads lines, and after each *data* line (not after a blank or comment line)
    stops once it has passed ``offset + length``. So a range ends on the newline of a data line and
    the next range starts on that newline: every line goes to one call, whatever the lengths of the
    lines and wherever the comments are.
    """
    cuts = []
    with open(path, "rb") as fh:
        for start in range(chunk_bytes, size, chunk_bytes):
            if cuts and cuts[-1] >= start:
                continue  # lines longer than a chunk: the cut is already past this start
            fh.seek(start - 1)
            fh.readline()  # the rest of the line holding byte start - 1 (just its newline if it ends there)
            while True:
                line = fh.readline()
                if not line.endswith(b"\n"):
                    break  # the end of the file: no cut
                if _is_data(line):
                    cuts.append(fh.tell() - 1)
                    break
    starts = [0] + cuts
    return [(o, (cuts[k] - o) if k < len(cuts) else -1) for k, o in enumerate(starts)]


def read_svmlight(path, *, chunk_bytes: int = CHUNK_BYTES, n_jobs: int | None = None):
    """``(X, y, qid)`` of one SVMlight file with ``qid:`` fields, as scikit-learn reads it.

    Parameters
    ----------
    path : str or path-like
    chunk_bytes : int, default 256 KiB
        Bytes per range read by one call of scikit-learn's reader.
    n_jobs : int, optional
        Processes for files of at least 64 MiB (default: one per core, at most 4); smaller
        files are read in this process.

    Returns
    -------
    X : scipy.sparse.csr_matrix
        ``n_documents x (largest feature index)``, 1-based indices of the file at columns 0, 1, ...
    y : ndarray of float64
    qid : ndarray of int64
        Fewer entries than ``y`` when a line has no ``qid:`` field (scikit-learn's behaviour).

    Raises
    ------
    ValueError, OverflowError
        As scikit-learn's reader, for text it cannot read.
    """
    if hasattr(path, "read"):  # an open file (decompressed text, a FIFO read into memory): one piece
        from sklearn.datasets import load_svmlight_file

        return load_svmlight_file(path, query_id=True, zero_based=False, dtype=np.float64)
    path = os.fspath(path)
    size = os.path.getsize(path)
    if path.endswith(_COMPRESSED) or size <= chunk_bytes:
        from sklearn.datasets import load_svmlight_file

        return load_svmlight_file(path, query_id=True, zero_based=False, dtype=np.float64)
    ranges = _ranges(path, size, int(chunk_bytes))
    if n_jobs is None:
        n_jobs = min(4, os.cpu_count() or 1)
    if n_jobs > 1 and size >= PARALLEL_BYTES:
        from joblib import Parallel, delayed

        parts = Parallel(n_jobs=n_jobs)(delayed(_read_range)(path, o, n) for o, n in ranges)
    else:
        parts = [_read_range(path, o, n) for o, n in ranges]
    parts = [p for p in parts if p[0].shape[0] or p[2].shape[0]]
    width = max((int(p[0].indices.max()) + 1 if p[0].nnz else 0) for p in parts)
    X = sp.vstack([sp.csr_matrix((p[0].data, p[0].indices, p[0].indptr), shape=(p[0].shape[0], width))
                   for p in parts], format="csr")
    y = np.concatenate([p[1] for p in parts])
    qid = np.concatenate([p[2] for p in parts]).astype(np.int64, copy=False)
    return X, y, qid


def _stream_pieces(fh, chunk_bytes: int):
    """Consecutive pieces of the text of ``fh`` (about ``chunk_bytes`` each), each ending on a newline (the last
    one where the text ends): every line in exactly one piece."""
    rest = b""
    while True:
        block = fh.read(chunk_bytes)
        if not block:
            if rest:
                yield rest
            return
        block = rest + block
        cut = block.rfind(b"\n")
        if cut < 0:
            rest = block
            continue
        yield block[:cut + 1]
        rest = block[cut + 1:]


def _read_piece(text: bytes):
    import io

    from sklearn.datasets import load_svmlight_file

    return load_svmlight_file(io.BytesIO(text), n_features=_ANY_WIDTH, query_id=True, zero_based=False,
                              dtype=np.float64)


def read_svmlight_dense(path, *, rows: int, dtype=np.float64, chunk_bytes: int = CHUNK_BYTES, check=None):
    """``(X, y, qid)`` of one SVMlight file as :func:`read_svmlight` gives them, but ``X`` dense in ``dtype``.

    ``X`` is allocated for ``rows`` documents (counted from the text beforehand, e.g. its ``qid:`` fields) at the
    first piece; each piece (a byte range of a plain file, whole lines of an open or compressed stream) is read by
    scikit-learn's reader and its block copied in at once (``toarray`` of the piece, cast to ``dtype``: the same
    values as ``read_svmlight(path)[0].toarray().astype(dtype)``, duplicate indices summed alike). A peak of
    ``X`` and one piece; ``X`` is copied again only where a later piece is wider than the ones before, or there are
    more documents than ``rows`` (then it doubles), or fewer (trimmed). Read in this process (no parallel pieces).

    Parameters
    ----------
    path : str, path-like or binary file object
        A plain file (read by byte ranges) or an open stream (read in pieces of whole lines).
    rows : int
        The number of documents expected.
    dtype : {numpy.float64, numpy.float32}
    chunk_bytes : int, default 256 KiB
    check : callable, optional
        ``check(nbytes)`` before ``X`` is allocated (or grown), with the bytes it will then hold beside the old
        copy; it raises to stop (a memory budget).

    Returns
    -------
    X : ndarray of shape (n_documents, largest feature index), ``dtype``
    y : ndarray of float64
    qid : ndarray of int64
        Fewer entries than ``y`` when a line has no ``qid:`` field (scikit-learn's behaviour).

    Raises
    ------
    ValueError, OverflowError
        As scikit-learn's reader, for text it cannot read.
    """
    if hasattr(path, "read"):
        pieces = (_read_piece(t) for t in _stream_pieces(path, int(chunk_bytes)))
    else:
        path = os.fspath(path)
        size = os.path.getsize(path)
        if path.endswith(_COMPRESSED):
            raise ValueError(f"{path}: open a compressed file and pass the stream")
        ranges = _ranges(path, size, int(chunk_bytes)) if size > chunk_bytes else [(0, -1)]
        pieces = (_read_range(path, o, n) for o, n in ranges)
    itemsize = np.dtype(dtype).itemsize
    X, ys, qs, row = None, [], [], 0
    for P, y, q in pieces:
        if P.shape[0] == 0 and q.shape[0] == 0:
            continue
        width = int(P.indices.max()) + 1 if P.nnz else 0
        have_rows, have_width = (0, 0) if X is None else X.shape
        if X is None or row + P.shape[0] > have_rows or width > have_width:
            need_rows = max(int(rows), row + P.shape[0], 2 * have_rows if row + P.shape[0] > have_rows > 0 else 0)
            need_width = max(width, have_width)
            if check is not None:
                check((need_rows * need_width + (0 if X is None else X.size)) * itemsize)
            grown = np.zeros((need_rows, need_width), dtype=dtype)
            if X is not None:
                grown[:row, :have_width] = X[:row]
            X = grown
        P = sp.csr_matrix((P.data, P.indices, P.indptr), shape=(P.shape[0], width))
        with np.errstate(over="ignore"):  # beyond float32's range: the caller names the value
            X[row:row + P.shape[0], :width] = P.toarray()
        row += P.shape[0]
        ys.append(y)
        qs.append(q)
    if X is None:
        X = np.zeros((0, 0), dtype=dtype)
    elif row < X.shape[0]:
        X = X[:row].copy()  # fewer documents than counted
    y = np.concatenate(ys) if ys else np.empty(0)
    qid = (np.concatenate(qs) if qs else np.empty(0)).astype(np.int64, copy=False)
    return X, y, qid
