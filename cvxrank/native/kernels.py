"""The oracle's compiled sweeps: which path runs, and a check of the choice.

:class:`~cvxrank.native.oracle.PairFreeOracle` does its per-query work (the
boundaries of the violated ranges, the violated weight of every document from
counts per grade, the band of near-margin pairs of the Newton phase and its
scaled rows, and the re-sort from the previous order) either in numpy, a few dozen whole-array
operations per call, or in one compiled pass per query
(``cvxrank/native/_sweep.c``, built at install when a C compiler is present;
``setup.py`` makes it optional). The two paths give the same results bit for
bit: the boundaries are the same floating-point test, the sums are added in
the same order, and the insertion sort from the previous order is exact
(ties may sit in another order, as between two numpy sorts; the results do
not depend on it). ``tests/test_native_kernels.py`` checks this on every
kind of input.

:class:`~cvxrank.native.document_oracle.DocumentOracle` (preference groups, e.g. click logs) uses the same
module for the boundaries of its sorted groups and, for the smoothed hinge of its Newton phase, one pass per
group that also forms every per-member term (``smoothed_groups``); the sums over members stay in numpy, so its
two paths are equal bit for bit too (``tests/test_click_pairfree.py``).

Dual coordinate descent over explicit pairs (:mod:`cvxrank.native.pair_cd`, ``pair_cd=True``) has no numpy
path: a pass visits every pair one at a time, which only compiled code does at speed. Without the compiled module
the solve goes on without it.

The compiled sweeps pay where a call is cheap: on small data a numpy call's few
dozen whole-array operations cost several times the two matrix-vector products
it needs (``cvxrank bench native --instances floor --kernel compiled,numpy``
measures both; results in ``docs/native.md``, "Compiled sweeps").
"""

from __future__ import annotations

from cvxrank.exceptions import ValidationError

try:
    from cvxrank.native import _sweep
except ImportError:  # built without a C compiler: the numpy path
    _sweep = None

__all__ = ["COMPILED", "KERNELS", "check_kernel"]

#: Whether the compiled sweeps were built with this install.
COMPILED = _sweep is not None

#: The values of ``kernel=``: ``"auto"`` (compiled when built), ``"compiled"`` (an error if not built), ``"numpy"``.
KERNELS = ("auto", "compiled", "numpy")


def check_kernel(kernel: str) -> bool:
    """Whether ``kernel`` runs the compiled sweeps; a :class:`ValidationError` for an unknown value or for
    ``"compiled"`` when this install has no compiled module."""
    if kernel not in KERNELS:
        raise ValidationError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    if kernel == "compiled" and not COMPILED:
        raise ValidationError("kernel='compiled': this install has no compiled sweeps (cvxrank.native._sweep was not "
                              "built: reinstall with a C compiler present, e.g. gcc); use kernel='auto' or 'numpy'")
    return kernel != "numpy" and COMPILED


def sweep():
    """The compiled module (only when :data:`COMPILED`)."""
    return _sweep
