"""Products with the feature matrix ``X`` in float64 arithmetic, whether ``X`` is stored in float64 or float32.

A :class:`~cvxrank.data.RankingData` may keep ``X`` in float32 (``dtype=np.float32``: half the
memory). Every float32 value is a float64 exactly, so the problem whose data are those float32
values is solved and certified in float64 as long as every product with ``X`` is computed on the
exactly-upcast values: the functions here upcast a block of rows at a time (``CHUNK_BYTES`` of
float64, reused) and multiply it in float64, so ``matvec(X, w)`` equals ``X.astype(np.float64) @ w``
up to float64 rounding (row for row the same dot products; :func:`rmatvec` adds the blocks' sums
in another order) without ever allocating a float64 copy of ``X``. numpy would upcast the whole
of ``X`` for ``X @ w`` with a float64 ``w``: a full-size temporary at every product.

With a float64 ``X`` (dense or CSR) they are the plain products, bit for bit.

The block is small enough to stay in a core's cache: the cast reads float32 from memory and the
product then reads the block from cache, so a product from float32 takes about what it takes in
float64 (timings and other block sizes: ``docs/native.md``, "X in float32").

This module imports nothing of the package's own.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["CHUNK_BYTES", "abs_matvec", "abs_max", "abs_rmatvec", "dense_rows", "matvec", "rmatvec"]

#: Bytes of float64 rows upcast at a time (about 480 rows of 136 features): the block stays in a core's cache.
CHUNK_BYTES = 512 * 2**10


def _blocks(X, chunk_bytes: int):
    """``(a, b, block)``: rows ``a:b`` of ``X`` as float64 (dense: a reused buffer; CSR: the block's
    values upcast, its indices sliced), about ``chunk_bytes`` of float64 values each."""
    m, n = X.shape
    if sp.issparse(X):
        per_row = max(1.0, X.nnz / max(m, 1))
        step = max(1, int(chunk_bytes // (8 * per_row)))
        for a in range(0, m, step):
            b = min(a + step, m)
            lo, hi = X.indptr[a], X.indptr[b]
            yield a, b, sp.csr_matrix((X.data[lo:hi].astype(np.float64), X.indices[lo:hi], X.indptr[a:b + 1] - lo),
                                      shape=(b - a, n))
        return
    step = max(1, int(chunk_bytes // (8 * max(n, 1))))
    buf = np.empty((min(step, m), n))
    for a in range(0, m, step):
        b = min(a + step, m)
        block = buf[:b - a]
        np.copyto(block, X[a:b])
        yield a, b, block


def matvec(X, w, *, chunk_bytes: int = CHUNK_BYTES) -> np.ndarray:
    """``X w`` in float64 arithmetic, as a 1-D float64 array.

    Parameters
    ----------
    X : ndarray or scipy.sparse CSR matrix of shape (m, n), float64 or float32
    w : array-like of shape (n,)
    chunk_bytes : int, default :data:`CHUNK_BYTES`
        Size of the float64 block of rows of a float32 ``X`` upcast at a time.

    Examples
    --------
    >>> X = np.array([[1.0, 2.0], [3.0, 0.1]], dtype=np.float32)
    >>> w = np.array([1.0, 1e-9])
    >>> bool(np.array_equal(matvec(X, w, chunk_bytes=8), X.astype(np.float64) @ w))
    True
    """
    w = np.asarray(w, dtype=np.float64).ravel()
    if X.dtype == np.float64:
        return np.asarray(X @ w, dtype=np.float64).ravel()
    out = np.empty(X.shape[0])
    for a, b, block in _blocks(X, chunk_bytes):
        if sp.issparse(block):
            out[a:b] = block @ w
        else:
            np.matmul(block, w, out=out[a:b])
    return out


def rmatvec(X, v, *, chunk_bytes: int = CHUNK_BYTES) -> np.ndarray:
    """``Xᵀ v`` in float64 arithmetic, as a 1-D float64 array (blocks of rows summed in turn); ``v`` has
    shape (m,), ``X`` and ``chunk_bytes`` are as for :func:`matvec`."""
    v = np.asarray(v, dtype=np.float64).ravel()
    if X.dtype == np.float64:
        return np.asarray(X.T @ v, dtype=np.float64).ravel()
    out = np.zeros(X.shape[1])
    part = np.empty(X.shape[1])
    for a, b, block in _blocks(X, chunk_bytes):
        if sp.issparse(block):
            out += block.T @ v[a:b]
        else:
            np.matmul(v[a:b], block, out=part)
            out += part
    return out


def _abs_blocks(X, chunk_bytes: int, rows=None):
    """``(a, b, |block|)`` for every block of rows, float64 (a copy of the block, never of ``X``); with ``rows``
    (row indices), blocks of ``X[rows]`` gathered a block at a time (``a:b`` then index ``rows``)."""
    if rows is not None:
        rows = np.asarray(rows, dtype=np.int64)
        n = X.shape[1]
        per_row = max(1.0, X.nnz / max(X.shape[0], 1)) if sp.issparse(X) else max(n, 1)
        step = max(1, int(chunk_bytes // (8 * per_row)))
        for a in range(0, rows.shape[0], step):
            b = min(a + step, rows.shape[0])
            if sp.issparse(X):
                block = X[rows[a:b]]
                block = sp.csr_matrix((np.abs(block.data).astype(np.float64), block.indices, block.indptr),
                                      shape=block.shape)
            else:
                block = np.take(X, rows[a:b], axis=0).astype(np.float64, copy=False)  # a fresh copy either way
                np.abs(block, out=block)
            yield a, b, block
        return
    if X.dtype == np.float64 and not sp.issparse(X):
        m, n = X.shape
        step = max(1, int(chunk_bytes // (8 * max(n, 1))))
        for a in range(0, m, step):
            b = min(a + step, m)
            yield a, b, np.abs(X[a:b])
        return
    for a, b, block in _blocks(X, chunk_bytes):
        if sp.issparse(block):  # its values are a fresh copy (_blocks upcasts with astype)
            np.abs(block.data, out=block.data)
        else:
            np.abs(block, out=block)
        yield a, b, block


def abs_matvec(X, v, *, rows=None, chunk_bytes: int = CHUNK_BYTES) -> np.ndarray:
    """``|X| |v|`` (entrywise absolute values), a 1-D float64 array, without an absolute copy of ``X``;
    ``rows`` (row indices): ``|X[rows]| |v|``, without a copy of ``X[rows]``.

    The magnitudes that bound the float64 rounding of ``X v`` (:mod:`cvxrank.rounding`): row ``a``
    is ``Σ_j |x_aj| |v_j|``.

    Examples
    --------
    >>> abs_matvec(np.array([[1.0, -2.0]]), [-3.0, 1.0]).tolist()
    [5.0]
    """
    v = np.abs(np.asarray(v, dtype=np.float64).ravel())
    out = np.empty(X.shape[0] if rows is None else len(rows))
    for a, b, block in _abs_blocks(X, chunk_bytes, rows):
        out[a:b] = block @ v
    return out


def abs_max(X, rows=None, *, chunk_bytes: int = CHUNK_BYTES) -> float:
    """``max |x|`` over the rows ``rows`` of ``X`` (all rows when None; 0 when there is no entry), a block of
    rows at a time, without a copy of ``X[rows]``.

    Examples
    --------
    >>> abs_max(np.array([[1.0, -5.0], [2.0, 3.0]]), rows=[1])
    3.0
    """
    largest = 0.0
    for _, _, block in _abs_blocks(X, chunk_bytes, rows):
        values = block.data if sp.issparse(block) else block
        if values.size:
            largest = max(largest, float(values.max()))
    return largest


def abs_rmatvec(X, c, *, rows=None, chunk_bytes: int = CHUNK_BYTES) -> np.ndarray:
    """``|X|ᵀ |c|``, a 1-D float64 array of shape (n,), without an absolute copy of ``X``; ``rows`` (row
    indices, ``c`` one entry per row given): ``|X[rows]|ᵀ |c|``, without a copy of ``X[rows]``."""
    c = np.abs(np.asarray(c, dtype=np.float64).ravel())
    out = np.zeros(X.shape[1])
    for a, b, block in _abs_blocks(X, chunk_bytes, rows):
        out += np.asarray(block.T @ c[a:b]).ravel()
    return out


def dense_rows(X, index) -> np.ndarray:
    """Rows ``index`` of ``X`` as a dense float64 array (``len(index) x n``), upcast before any arithmetic.

    Examples
    --------
    >>> X = np.array([[0.1, 1.0], [0.2, 2.0]], dtype=np.float32)
    >>> (dense_rows(X, [1]) - dense_rows(X, [0])).dtype
    dtype('float64')
    """
    index = np.asarray(index)
    if sp.issparse(X):
        return X[index].toarray().astype(np.float64, copy=False)
    # np.take rather than X[index]: a little faster for rows of a 2-D array (docs/native-measurements.md)
    return np.take(X, index, axis=0).astype(np.float64, copy=False)
