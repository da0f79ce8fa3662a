"""The pair-free oracles' two products with ``X``: ``s = X w`` and ``g = Xᵀ v``, in float64 arithmetic.

For a float64 or float32 CSR ``X`` with int32 column indices (scipy's own choice below 2³¹ stored entries) and the
compiled sweeps (:mod:`cvxrank.native.kernels`), both are one compiled pass over the stored entries
(``_sweep.matvec``, ``_sweep.rmatvec_rows``) with the same sums in the same order as scipy's ``X @ w`` and
``X.T @ v``: each row's sum from 0 in the order of its entries; each row's entries added to ``g`` in turn, rows in
order. A row where ``v`` is 0 is skipped, which adds only zeros for a finite ``X`` (the data's checks make it
finite). So the results are scipy's bit for bit; for float32 values, which are float64 numbers exactly, those of
``X.astype(np.float64)``. They take less time: on the 20,000 x 20,000 shape of
``cvxrank bench native --instances shapes`` (600,000 stored entries) ``X w`` took 0.24 ms against scipy's 0.29
and ``Xᵀ v`` 0.27 against 0.32; stored in float32, 0.24 and 0.30 ms against 0.56 and 0.71 for
:mod:`cvxrank._float64`'s blocks (medians in one process; docs/native-measurements.md). Every other ``X``
(dense, int64 indices, or no compiled sweeps) takes :func:`cvxrank._float64.matvec` and
:func:`cvxrank._float64.rmatvec`.

The floor pass of ``cvxrank bench native`` times these same functions: the products an oracle call makes and the
floor it is counted against are one code.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from cvxrank._float64 import matvec, rmatvec
from cvxrank.native.kernels import sweep

__all__ = ["Products", "products"]


class Products:
    """``matvec(w) = X w`` (shape ``(m,)``) and ``rmatvec(v) = Xᵀ v`` (shape ``(n,)``) of one ``X``, both float64
    (module docstring); ``compiled`` says whether they are the compiled passes. Built by :func:`products`."""

    def __init__(self, X, compiled: bool):
        self.X, self.compiled = X, bool(compiled)
        self._indptr = np.asarray(X.indptr, dtype=np.int64) if compiled else None

    def matvec(self, w) -> np.ndarray:
        """``X w``, ``w`` of shape ``(n,)``."""
        if not self.compiled:
            return matvec(self.X, w)
        X = self.X
        out = np.empty(X.shape[0])
        sweep().matvec(self._indptr, X.indices, X.data, _vector(w, X.shape[1], "w", "columns"), out)
        return out

    def rmatvec(self, v) -> np.ndarray:
        """``Xᵀ v``, ``v`` of shape ``(m,)`` (compiled: the rows where ``v`` is 0 are not read)."""
        if not self.compiled:
            return rmatvec(self.X, v)
        X = self.X
        out = np.empty(X.shape[1])
        sweep().rmatvec_rows(self._indptr, X.indices, X.data, _vector(v, X.shape[0], "v", "rows"), out)
        return out


def _vector(x, size: int, name: str, of: str) -> np.ndarray:
    """``x`` as a contiguous float64 vector of ``size`` entries (``X``'s ``of``), else an internal error."""
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    if x.shape != (size,):
        raise ValueError(f"internal error: {name} has {x.shape[0]} entries, X has {size} {of}")
    return x


def products(X, compiled: bool) -> Products:
    """The products of ``X`` (module docstring): the compiled passes when ``compiled`` and ``X`` is a float64 or
    float32 CSR matrix with contiguous int32 indices and values, else :mod:`cvxrank._float64`'s.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (m, n)
        As the oracle keeps it (:func:`cvxrank.native.oracle.stored_x`).
    compiled : bool
        Whether the compiled sweeps may run (:func:`cvxrank.native.kernels.check_kernel`).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from cvxrank.native.kernels import COMPILED
    >>> X = sp.random(50, 40, density=0.1, format="csr", random_state=0)
    >>> w, v = np.linspace(-1.0, 1.0, 40), np.linspace(0.0, 2.0, 50)
    >>> p = products(X, COMPILED)
    >>> bool(np.array_equal(p.matvec(w), X @ w)), bool(np.array_equal(p.rmatvec(v), X.T @ v))
    (True, True)
    """
    fits = (compiled and sp.issparse(X) and X.format == "csr" and X.dtype in (np.float64, np.float32)
            and X.indices.dtype == np.int32 and X.data.flags.c_contiguous and X.indices.flags.c_contiguous)
    return Products(X, fits)
